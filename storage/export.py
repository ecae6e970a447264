"""Export a run's final labels: CSV (safe to open in a spreadsheet), JSONL, Parquet.

One row per item: item_id, final_label, consensus, tie, consensus_note, agreement,
disagreement, failed, gold, overridden, override_label, override_note, reviewer, overridden_at,
then for each critic `<critic>: label` (its label or score; empty when the call failed),
`<critic>: confidence` and `<critic>: failure` (the failure kind: error, parse_fail, refusal,
truncated; empty on success). `ExportOptions` adds, for curation, the item's fields
(`field: <name>`), each critic's reasoning (`<critic>: reasoning`) and every override of the
item, oldest first (`override_history`). A rubric run adds, per criterion, each critic's mark
(`<criterion>: <critic>`), the panel's (`<criterion>: consensus`) and the final one, a
reviewer's else the panel's (`<criterion>: final`), and `final_score`. `override_history_bytes`
gives the run's whole override history as JSONL, one decision per line.

No API key can appear: the rows come from items, labels, reasons, notes and numbers, never from
raw requests (keys are scrubbed from reasons when calls are stored).
"""

from __future__ import annotations

import io
import json
import math
import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, Literal

import pandas as pd
import sqlite_utils

from storage.criteria import critic_marks, final_marks
from storage.db import StorageError, loads
from storage.decisions import DecisionRule, final_decisions
from storage.review import _run_meta

# 2: a failed call's kind moved from `<critic>: label` ("failed: truncated") to its own
# `<critic>: failure` column; tie and consensus_note columns; optional curation columns.
EXPORT_SCHEMA_VERSION = 2
FORMATS = ("csv", "jsonl", "parquet")
ExportFormat = Literal["csv", "jsonl", "parquet"]

# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
HISTORY_COLUMN = "override_history"
FIELD_PREFIX = "field: "


@dataclass(frozen=True)
class ExportOptions:
    """What to add to the export besides the labels.

    Attributes:
        fields: the item's fields, one `field: <name>` column each (the candidate class, its
            parent, ... as imported).
        reasoning: each critic's reasoning, `<critic>: reasoning`.
        history: every override of the item, oldest first, as `override_history` (a list of
            {label, note, reviewer, at, blind} in JSONL; the same list as JSON text in CSV and
            Parquet; `blind`: given in a blind first pass, before the critics were shown).
    """

    fields: bool = False
    reasoning: bool = False
    history: bool = False
    # A rubric run: the score of a set of marks (criterion -> mark), for the `final_score`
    # column (the marks with reviewers' criterion marks applied). Storage cannot score a rubric
    # itself: `judging.runs.export.export_options` fills this in.
    score_marks: Callable[[dict[str, str | None]], float | None] | None = None
    # The run's final-decision rule (`storage.decisions`; `judging.runs.export.export_options`
    # fills it in): a rubric's rescored marks and a score's band give final_label and
    # final_score, as on every page.
    rule: DecisionRule | None = None


def escape_cell(value: Any) -> Any:
    """Prefix a text cell that a spreadsheet would treat as a formula with a single quote."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _consensus_extra(db: sqlite_utils.Database, run_id: int, dataset_id: int) -> pd.DataFrame:
    extra = pd.read_sql_query(
        "SELECT c.item_id, c.tie, c.note AS consensus_note, c.agreement, c.disagreement,"
        " c.failed, i.gold FROM consensus c"
        " LEFT JOIN items i ON i.dataset_id = ? AND i.item_id = c.item_id WHERE c.run_id = ?",
        db.conn,
        params=[dataset_id, run_id],
    )
    extra["tie"] = extra["tie"].astype(bool)
    extra["disagreement"] = extra["disagreement"].astype(bool)
    return extra


def _critic_columns(
    db: sqlite_utils.Database, run_id: int, critics: list[str], item_ids: pd.Series, reasoning: bool
) -> dict[str, pd.Series]:
    calls = pd.read_sql_query(
        "SELECT item_id, critic, coalesce(label, CAST(score AS TEXT)) AS label, confidence,"
        " failure, reasoning FROM calls WHERE run_id = ?",
        db.conn,
        params=[run_id],
    )
    columns: dict[str, pd.Series] = {}
    for critic in critics:
        mine = calls[calls["critic"] == critic].set_index("item_id")
        failed = mine["failure"].notna()
        # A failure is not a label: the label cell stays empty and the kind has its own column.
        columns[f"{critic}: label"] = item_ids.map(mine["label"].where(~failed))
        columns[f"{critic}: confidence"] = item_ids.map(mine["confidence"].where(~failed))
        columns[f"{critic}: failure"] = item_ids.map(mine["failure"])
        if reasoning:
            columns[f"{critic}: reasoning"] = item_ids.map(mine["reasoning"])
    return columns


def _field_columns(
    db: sqlite_utils.Database, dataset_id: int, item_ids: pd.Series
) -> dict[str, pd.Series]:
    rows = db.execute(
        "SELECT item_id, fields FROM items WHERE dataset_id = ? ORDER BY position", [dataset_id]
    ).fetchall()
    by_item = {item_id: loads(fields) or {} for item_id, fields in rows}
    names: list[str] = []
    for fields in by_item.values():  # every field any item has, in first-seen order
        names += [str(n) for n in fields if str(n) not in names]
    return {
        FIELD_PREFIX + name: item_ids.map(lambda i, n=name: by_item.get(i, {}).get(n))
        for name in names
    }


def _history_column(db: sqlite_utils.Database, run_id: int, item_ids: pd.Series) -> pd.Series:
    history: dict[str, list[dict[str, Any]]] = {}
    for item_id, label, note, reviewer, at, blind in db.execute(
        "SELECT item_id, label, note, reviewer, created_at, blind FROM overrides WHERE run_id = ?"
        " ORDER BY id",
        [run_id],
    ).fetchall():
        history.setdefault(item_id, []).append(
            {"label": label, "note": note, "reviewer": reviewer, "at": at, "blind": bool(blind)}
        )
    return item_ids.map(lambda i: history.get(i, []))


def export_frame(
    db: sqlite_utils.Database, run_id: int, options: ExportOptions | None = None
) -> pd.DataFrame:
    """The export as a DataFrame (unescaped), in item order.

    Args:
        db: this thread's connection.
        run_id: the run.
        options: extra columns for curation (default: none).

    Raises:
        NotFoundError: no such run.
    """
    options = options or ExportOptions()
    dataset_id, critics = _run_meta(db, run_id)
    decisions = final_decisions(db, run_id, options.rule)
    frame = decisions[[
        "item_id", "final_label", "consensus", "overridden", "override_label", "override_note",
        "reviewer", "overridden_at"]].merge(
        _consensus_extra(db, run_id, dataset_id), on="item_id", how="left"
    )
    ordered = [
        "item_id", "final_label", "consensus", "tie", "consensus_note", "agreement",
        "disagreement", "failed", "gold", "overridden", "override_label", "override_note",
        "reviewer", "overridden_at",
    ]
    extra: dict[str, pd.Series] = {}
    if options.history:
        extra[HISTORY_COLUMN] = _history_column(db, run_id, frame["item_id"])
    if options.fields:
        extra.update(_field_columns(db, dataset_id, frame["item_id"]))
    extra.update(_critic_columns(db, run_id, critics, frame["item_id"], options.reasoning))
    extra.update(_criterion_columns(db, run_id, critics, frame["item_id"], options.score_marks))
    if options.rule is not None and options.rule.rubric:  # the rule's score: a later override
        # of the item's score wins over the marks, as final_label says
        scores = dict(zip(decisions["item_id"], decisions["final_score"], strict=True))
        extra["final_score"] = frame["item_id"].map(scores)
    # One concat, not a column at a time: a wide panel would fragment the frame.
    return pd.concat([frame[ordered], pd.DataFrame(extra, index=frame.index)], axis=1)


def _criterion_columns(
    db: sqlite_utils.Database, run_id: int, critics: list[str], item_ids: pd.Series,
    score_marks: Callable[[dict[str, str | None]], float | None] | None,
) -> dict[str, pd.Series]:
    """A rubric run's marks: `<criterion>: <critic>` for each critic, `<criterion>: consensus`
    (the panel's vote) and `<criterion>: final` (a reviewer's mark, else the vote); then
    `final_score`, the score of the final marks. Nothing for other runs."""
    marks = critic_marks(db, run_id)
    if not marks:
        return {}
    final = final_marks(db, run_id)
    voted = {item: {c: v.get("mark") for c, v in (loads(m) or {}).items()} for item, m in
             db.execute("SELECT item_id, marks FROM consensus WHERE run_id = ?", [run_id])}
    criteria = list(dict.fromkeys(criterion for _, _, criterion, _ in marks))
    by_critic: dict[tuple[str, str, str], str | None] = {
        (item, critic, criterion): mark for item, critic, criterion, mark in marks}
    columns: dict[str, pd.Series] = {}
    for criterion in criteria:
        for critic in critics:
            columns[f"{criterion}: {critic}"] = item_ids.map(
                lambda item, c=critic, k=criterion: by_critic.get((item, c, k)))
        columns[f"{criterion}: consensus"] = item_ids.map(
            lambda item, k=criterion: voted.get(item, {}).get(k))
        columns[f"{criterion}: final"] = item_ids.map(
            lambda item, k=criterion: final.get(item, {}).get(k))
    if score_marks is not None:
        columns["final_score"] = item_ids.map(
            lambda item: score_marks(final[item]) if item in final else None)
    return columns


def _json_safe(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


def _as_json_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Lists and dicts (the override history, a split's children) as JSON text: CSV cells and
    Parquet strings hold text."""
    nested = [c for c in frame.columns if frame[c].dtype == object
              and frame[c].map(lambda v: isinstance(v, (list, dict))).any()]
    if not nested:
        return frame
    frame = frame.copy()
    for column in nested:
        frame[column] = frame[column].map(
            lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v)
    return frame


def _write(frame: pd.DataFrame, fmt: str, sink: IO[bytes]) -> None:
    if fmt == "csv":
        safe = _as_json_text(frame).map(escape_cell)
        safe.columns = [escape_cell(str(c)) for c in frame.columns]
        text = safe.to_csv(index=False, lineterminator="\n")
        sink.write(text.encode("utf-8"))
    elif fmt == "jsonl":
        columns = list(frame.columns)
        for values in frame.itertuples(index=False, name=None):
            record = {c: _json_safe(v) for c, v in zip(columns, values, strict=True)}
            sink.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    elif fmt == "parquet":
        import pyarrow as pa  # heavy: only when a Parquet file is asked for
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(_as_json_text(frame), preserve_index=False)
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
    options: ExportOptions | None = None,
) -> int:
    """Write a run's final labels to a file (or a binary file object).

    Args:
        db: this thread's connection.
        run_id: the run.
        fmt: "csv" (cells starting with = + - @ tab or CR get a leading single quote), "jsonl"
            or "parquet" (schema metadata `jurybox_export_version`).
        out: a path, or a binary file object (e.g. `io.BytesIO` for a download button).
        options: extra columns for curation (see `ExportOptions`).

    Returns:
        The number of rows written.

    Raises:
        StorageError: unknown format.
        NotFoundError: no such run.
    """
    fmt = fmt.lower().lstrip(".")
    if fmt not in FORMATS:
        raise StorageError(f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    frame = export_frame(db, run_id, options)
    if isinstance(out, (str, os.PathLike)):
        path = pathlib.Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as sink:
            _write(frame, fmt, sink)
    else:
        _write(frame, fmt, out)
    return len(frame)


def export_bytes(
    db: sqlite_utils.Database, run_id: int, fmt: str, options: ExportOptions | None = None
) -> bytes:
    """The export as bytes (for `st.download_button`). Same rules as `export_run`."""
    buffer = io.BytesIO()
    export_run(db, run_id, fmt, buffer, options)
    return buffer.getvalue()


def rows_csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    """Rows (dicts with the same keys) as CSV with the export's rules: lists and dicts as JSON
    text, cells a spreadsheet would run as formulas escaped."""
    buffer = io.BytesIO()
    _write(pd.DataFrame(rows), "csv", buffer)
    return buffer.getvalue()


def override_history_bytes(db: sqlite_utils.Database, run_id: int) -> bytes:
    """Every override of the run as JSONL, in the order they were made: one line per decision
    with override_id, item_id, label, note, reviewer, at and blind (given in a blind first
    pass, before the critics were shown).

    Raises:
        NotFoundError: no such run.
    """
    _run_meta(db, run_id)  # a missing run is an error, not an empty file
    lines = [
        json.dumps({"override_id": oid, "item_id": item_id, "label": label, "note": note,
                    "reviewer": reviewer, "at": at, "blind": bool(blind)},
                   ensure_ascii=False) + "\n"
        for oid, item_id, label, note, reviewer, at, blind in db.execute(
            "SELECT id, item_id, label, note, reviewer, created_at, blind FROM overrides"
            " WHERE run_id = ? ORDER BY id",
            [run_id],
        ).fetchall()
    ]
    return "".join(lines).encode("utf-8")
