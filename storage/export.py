"""Export a run's final labels: CSV (safe to open in a spreadsheet), JSONL, Parquet.

One row per item: item_id, final_label, consensus, agreement, disagreement, failed, gold,
overridden, override_label, override_note, reviewer, overridden_at, then for each critic
`<critic>: label` and `<critic>: confidence`. No API key can appear: the rows come from labels,
notes and numbers only, never from raw requests.
"""

from __future__ import annotations

import io
import json
import math
import os
import pathlib
from typing import IO, Any, Literal

import pandas as pd
import sqlite_utils

from storage.db import StorageError
from storage.overrides import final_labels
from storage.review import _run_meta

EXPORT_SCHEMA_VERSION = 1
FORMATS = ("csv", "jsonl", "parquet")
ExportFormat = Literal["csv", "jsonl", "parquet"]

# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value: Any) -> Any:
    """Prefix a text cell that a spreadsheet would treat as a formula with a single quote."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def export_frame(db: sqlite_utils.Database, run_id: int) -> pd.DataFrame:
    """The export as a DataFrame (unescaped), in item order.

    Raises:
        NotFoundError: no such run.
    """
    dataset_id, critics = _run_meta(db, run_id)
    frame = final_labels(db, run_id)
    extra = pd.read_sql_query(
        "SELECT c.item_id, c.agreement, c.disagreement, c.failed, i.gold FROM consensus c"
        " LEFT JOIN items i ON i.dataset_id = ? AND i.item_id = c.item_id WHERE c.run_id = ?",
        db.conn,
        params=[dataset_id, run_id],
    )
    extra["disagreement"] = extra["disagreement"].astype(bool)
    frame = frame.merge(extra, on="item_id", how="left")
    calls = pd.read_sql_query(
        "SELECT item_id, critic, coalesce(label, CAST(score AS TEXT)) AS label, confidence, failure"
        " FROM calls WHERE run_id = ?",
        db.conn,
        params=[run_id],
    )
    for critic in critics:
        mine = calls[calls["critic"] == critic].set_index("item_id")
        label = mine["label"].where(mine["failure"].isna(), "failed: " + mine["failure"].astype(str))
        frame[f"{critic}: label"] = frame["item_id"].map(label)
        frame[f"{critic}: confidence"] = frame["item_id"].map(mine["confidence"])
    ordered = [
        "item_id", "final_label", "consensus", "agreement", "disagreement", "failed", "gold",
        "overridden", "override_label", "override_note", "reviewer", "overridden_at",
    ]
    return frame[ordered + [c for c in frame.columns if c not in ordered]]


def _json_safe(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


def _write(frame: pd.DataFrame, fmt: str, sink: IO[bytes]) -> None:
    if fmt == "csv":
        safe = frame.map(escape_cell)
        safe.columns = [escape_cell(str(c)) for c in frame.columns]
        text = safe.to_csv(index=False, lineterminator="\n")
        sink.write(text.encode("utf-8"))
    elif fmt == "jsonl":
        columns = list(frame.columns)
        for values in frame.itertuples(index=False, name=None):
            record = {c: _json_safe(v) for c, v in zip(columns, values)}
            sink.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[b"jurybox_export_version"] = str(EXPORT_SCHEMA_VERSION).encode()
        pq.write_table(table.replace_schema_metadata(meta), sink)
    else:
        raise StorageError(f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")


def export_run(
    db: sqlite_utils.Database,
    run_id: int,
    fmt: str,
    out: str | os.PathLike[str] | IO[bytes],
) -> int:
    """Write a run's final labels to a file (or a binary file object).

    Args:
        db: this thread's connection.
        run_id: the run.
        fmt: "csv" (cells starting with = + - @ tab or CR get a leading single quote), "jsonl"
            or "parquet" (schema metadata `jurybox_export_version`).
        out: a path, or a binary file object (e.g. `io.BytesIO` for a download button).

    Returns:
        The number of rows written.

    Raises:
        StorageError: unknown format.
        NotFoundError: no such run.
    """
    fmt = fmt.lower().lstrip(".")
    if fmt not in FORMATS:
        raise StorageError(f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    frame = export_frame(db, run_id)
    if isinstance(out, (str, os.PathLike)):
        path = pathlib.Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as sink:
            _write(frame, fmt, sink)
    else:
        _write(frame, fmt, out)
    return len(frame)


def export_bytes(db: sqlite_utils.Database, run_id: int, fmt: str) -> bytes:
    """The export as bytes (for `st.download_button`). Same rules as `export_run`."""
    buffer = io.BytesIO()
    export_run(db, run_id, fmt, buffer)
    return buffer.getvalue()
