"""Read a dataset file into `Item`s, or refuse it with a sentence the analyst can act on.

This module only reads and validates: it never touches the database (the caller writes a
`ParsedDataset` in one transaction) and never imports streamlit. The readers, one per format,
live in `storage.readers`; the limits they enforce in `storage.import_limits`.

Formats, chosen by the file name's extension (case-insensitive):

    .csv            comma-separated, first line is the header
    .tsv            tab-separated, first line is the header
    .jsonl .ndjson  one JSON object per line
    .json           one JSON array of objects
    .parquet        any flat Parquet file
    .xlsx           the first worksheet; its first non-empty row is the header

Text formats are read as UTF-8 (with or without a byte-order mark), UTF-16/UTF-32 with a
byte-order mark, or Windows-1252 when the bytes are clearly Western European text. Anything
else is refused, never decoded with replacement characters.

Imports are bounded by what they decode, not by file size alone (`ImportLimits`): rows,
columns, characters in one value and the total decoded size are counted while the file
streams, and the file is refused at the first one past a limit.

Values are kept as read: every CSV/TSV cell is a string ("NA", "null", "007" stay text), other
formats keep their JSON-compatible types; missing values and NaN become None; dates become ISO
8601 strings, so every field is JSON-serialisable. Where keeping a value exactly is impossible
(an XLSX formula without a saved result, a JSON key repeated in one object), the file is
refused rather than changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judging.errors import DataError
from judging.verdicts import Item
from storage.import_limits import LIMIT_VARIABLES, Budget, ImportLimits, human_size, variable_for
from storage.readers import Record, plain, read_table

if TYPE_CHECKING:  # pandas is only needed for the preview; importing it is slow
    import pandas as pd

__all__ = [
    "LIMIT_VARIABLES",
    "SUPPORTED_EXTENSIONS",
    "SUPPORTED_FORMATS",
    "ImportLimits",
    "ParsedDataset",
    "preview_dataset",
    "read_dataset",
    "suggest_columns",
]

#: Extension (without the dot, lower case) -> format name. Usable as `st.file_uploader(type=...)`.
SUPPORTED_EXTENSIONS: dict[str, str] = {
    "csv": "csv",
    "tsv": "tsv",
    "jsonl": "jsonl",
    "ndjson": "jsonl",
    "json": "json",
    "parquet": "parquet",
    "xlsx": "xlsx",
}
#: The format names `ParsedDataset.format` can take.
SUPPORTED_FORMATS: tuple[str, ...] = ("csv", "tsv", "jsonl", "json", "parquet", "xlsx")

Source = str | os.PathLike[str] | bytes | bytearray | memoryview

# How many offending rows an error message quotes before saying "and N more".
_SHOW = 5


@dataclass(frozen=True, slots=True)
class ParsedDataset:
    """A dataset file read and validated, ready to be stored.

    Attributes:
        items: one `Item` per data row, in file order. `Item.fields` holds the `fields` columns.
        columns: every column as read, in file order (header order; first-seen key order for
            JSON).
        fields: the columns usable as prompt {placeholders}.
        id_column: the column the ids came from, or None when ids were generated
            ("row-000001", "row-000002", ... by position among the data rows).
        gold_column: the column the gold labels came from, or None.
        format: one of `SUPPORTED_FORMATS`.
        content_hash: sha256 hex digest of the raw file bytes; the same file gives the same hash.
        filename: the file name the format was taken from (no directory).
        n_rows: number of items.
        encoding: the text encoding used ("utf-8", "utf-8-sig", "utf-16", "utf-32", "cp1252"),
            or None for binary formats (Parquet, XLSX).
    """

    items: list[Item] = field(repr=False)
    columns: list[str]
    fields: list[str]
    id_column: str | None
    gold_column: str | None
    format: str
    content_hash: str
    filename: str
    n_rows: int
    encoding: str | None = None


# --------------------------------------------------------------------------------------------
# Public API


def read_dataset(
    source: Source,
    *,
    filename: str | None = None,
    id_column: str | None = None,
    gold_column: str | None = None,
    fields: list[str] | None = None,
    limits: ImportLimits | None = None,
) -> ParsedDataset:
    """Read and validate a whole dataset file.

    Args:
        source: a path (str or PathLike) or the file's raw bytes. A str is always a path.
        filename: the name whose extension gives the format. Required with bytes; with a path
            it defaults to the path's name.
        id_column: the column holding unique item ids. None: ids are generated from the row
            position ("row-000001", ...), which is stable when the same file is imported again.
        gold_column: the column holding gold labels, or None. Empty cells give no gold label.
        fields: the columns items carry as prompt fields; default: every column except the id
            and gold columns.
        limits: what one import may hold (file size, rows, columns, characters per value,
            decoded size, JSON depth); default `ImportLimits.from_env()`.

    Returns:
        The items, the columns, the mapping and the file's content hash.

    Raises:
        DataError: the file cannot be used as it is (unsupported format, over a limit, empty,
            header only, ragged rows, bad JSON, a repeated JSON key, undecodable text, an
            unreadable or damaged XLSX/Parquet, a formula without a saved result, mapped
            columns missing, empty or duplicate ids). The message names the file, the row or
            line and the column where one applies, and says what to do.
        ConfigError: a `JURYBOX_MAX_*` variable is not a whole number above 0.
    """
    limits = ImportLimits.from_env() if limits is None else limits
    raw, name = _load(source, filename, limits.max_file_bytes)
    fmt = _format_of(name)
    table = read_table(raw, fmt, name, Budget(limits, name), limit=None)
    if not table.columns:
        raise DataError(
            f"{name} has rows but no columns (every object is empty): there is nothing to "
            "judge. Check that you chose the right file."
        )
    if not table.records:
        cols = ", ".join(table.columns)
        raise DataError(
            f"{name} has a header (columns: {cols}) but no data rows. "
            "Add at least one row below the header and upload again."
        )

    id_column = _clean_name(id_column)
    gold_column = _clean_name(gold_column)
    if id_column is not None and id_column == gold_column:
        raise DataError(
            f"{name}: column {id_column!r} is mapped as both the id and the gold label: "
            "choose a different column for one of them."
        )
    chosen = _dedupe([_clean_name(f) or "" for f in fields]) if fields is not None else None
    _check_mapped(table.columns, id_column, gold_column, chosen, name)
    if chosen is None:
        chosen = [c for c in table.columns if c not in (id_column, gold_column)]

    ids = _item_ids(table.records, id_column, name)
    items = [
        Item(
            id=item_id,
            fields={c: rec.values.get(c) for c in chosen},
            gold=_label_text(rec.values.get(gold_column)) if gold_column else None,
        )
        for item_id, rec in zip(ids, table.records, strict=True)
    ]
    return ParsedDataset(
        items=items,
        columns=list(table.columns),
        fields=chosen,
        id_column=id_column,
        gold_column=gold_column,
        format=fmt,
        content_hash=hashlib.sha256(raw).hexdigest(),
        filename=name,
        n_rows=len(items),
        encoding=table.encoding,
    )


def preview_dataset(
    source: Source,
    *,
    filename: str | None = None,
    n: int = 20,
    limits: ImportLimits | None = None,
) -> tuple[pd.DataFrame, str]:
    """Read the first rows of a dataset file for the upload preview and the column mapping.

    Cheaper than `read_dataset`: it stops after `n` rows and does not check ids. The rows it
    shows are parsed exactly as `read_dataset` would, so a ragged line or bad JSON among them
    is still reported, and so is what the file shows is over a limit before its first rows
    (a Parquet file's row count, an XLSX's shared strings).

    Args:
        source: a path (str or PathLike) or the file's raw bytes.
        filename: the name whose extension gives the format (required with bytes).
        n: how many data rows to return.
        limits: as in `read_dataset`.

    Returns:
        (a DataFrame with every column and at most `n` rows, the format name).

    Raises:
        DataError: as `read_dataset`, except for mapping and id problems.
        ConfigError: as `read_dataset`.
    """
    import pandas as pd

    limits = ImportLimits.from_env() if limits is None else limits
    raw, name = _load(source, filename, limits.max_file_bytes)
    fmt = _format_of(name)
    table = read_table(raw, fmt, name, Budget(limits, name), limit=max(n, 1))
    rows = [[rec.values.get(c) for c in table.columns] for rec in table.records[:n]]
    return pd.DataFrame(rows, columns=table.columns, dtype=object), fmt


# Column names that usually hold the id / gold label, in order of preference.
_ID_NAMES = ("id", "item_id", "itemid", "uid", "uuid", "_id", "key", "example_id")
_GOLD_NAMES = ("gold", "gold_label", "label", "answer", "target", "expected", "ground_truth")


def suggest_columns(columns: Sequence[str]) -> dict[str, str | None]:
    """Guess the id and gold columns from their names, to pre-fill a mapping form.

    Args:
        columns: the dataset's columns.

    Returns:
        {"id": column or None, "gold": column or None}; matching ignores case.
    """
    lower = {c.lower(): c for c in reversed(list(columns))}  # first column wins on a tie

    def pick(names: Iterable[str]) -> str | None:
        return next((lower[n] for n in names if n in lower), None)

    return {"id": pick(_ID_NAMES), "gold": pick(_GOLD_NAMES)}


# --------------------------------------------------------------------------------------------
# Loading and format dispatch


def _load(source: Source, filename: str | None, max_bytes: int) -> tuple[bytes, str]:
    """Return (raw bytes, file name), refusing a too-large file before reading it whole."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not filename:
            raise DataError(
                "Cannot tell the file's format without its name: pass filename=... "
                "(for example 'items.csv')."
            )
        _check_size(len(source), max_bytes, Path(filename).name)
        return bytes(source), Path(filename).name
    path = Path(source)
    name = Path(filename).name if filename else path.name
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DataError(f"No file at {str(path)!r}: check the path.") from None
    except OSError as exc:
        raise DataError(f"Cannot open {str(path)!r}: {exc.strerror}.") from None
    _check_size(size, max_bytes, name)
    _format_of(name)  # refuse an unsupported format before reading the bytes
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"Cannot read {str(path)!r}: {exc.strerror}.") from None
    _check_size(len(raw), max_bytes, name)  # the file may have grown since stat()
    return raw, name


def _check_size(size: int, max_bytes: int, name: str) -> None:
    if size > max_bytes:
        raise DataError(
            f"{name} is {human_size(size)}, above the import limit of {human_size(max_bytes)}. "
            f"Split it into smaller files, or ask the operator to raise "
            f"{variable_for('max_file_bytes')}."
        )


def _format_of(name: str) -> str:
    ext = Path(name).suffix.lower().lstrip(".")
    if ext in SUPPORTED_EXTENSIONS:
        return SUPPORTED_EXTENSIONS[ext]
    supported = ", ".join("." + e for e in SUPPORTED_EXTENSIONS)
    shown = f"'.{ext}'" if ext else "no extension"
    hint = " Save the workbook as .xlsx." if ext in ("xls", "xlsm", "ods", "numbers") else ""
    raise DataError(
        f"{name} has {shown}, which Jurybox cannot import. Supported formats: {supported}.{hint}"
    )


# --------------------------------------------------------------------------------------------
# Mapping and ids


def _check_mapped(
    columns: list[str],
    id_column: str | None,
    gold_column: str | None,
    fields: list[str] | None,
    name: str,
) -> None:
    wanted: list[tuple[str, str]] = []
    if id_column is not None:
        wanted.append(("id column", id_column))
    if gold_column is not None:
        wanted.append(("gold column", gold_column))
    wanted += [("field", f) for f in fields or []]
    present = set(columns)
    missing = [(role, col) for role, col in wanted if col not in present]
    if not missing:
        return
    lower = {c.lower(): c for c in columns}
    parts = []
    for role, col in missing:
        near = lower.get(col.lower())
        parts.append(f"{role} {col!r}" + (f" (did you mean {near!r}?)" if near else ""))
    raise DataError(
        f"{name} has no {'; no '.join(parts)}. Its columns are: {', '.join(columns)}. "
        "Choose columns from that list."
    )


def _item_ids(records: list[Record], id_column: str | None, name: str) -> list[str]:
    if id_column is None:
        # By position, not by a hash of the row: identical rows would get identical hashes (a
        # duplicate-id error on a file with no id column), and the same bytes always give the
        # same positions, so re-importing the same file gives the same ids.
        return [f"row-{n:06d}" for n in range(1, len(records) + 1)]
    ids: list[str] = []
    empty: list[str] = []
    first_seen: dict[str, str] = {}
    repeats: list[tuple[str, str, str]] = []
    for rec in records:
        item_id = _label_text(rec.values.get(id_column))
        if item_id is None:
            empty.append(rec.where)
            item_id = ""
        elif item_id in first_seen:
            repeats.append((item_id, first_seen[item_id], rec.where))
        else:
            first_seen[item_id] = rec.where
        ids.append(item_id)
    if empty:
        more = f" and {len(empty) - _SHOW} more" if len(empty) > _SHOW else ""
        raise DataError(
            f"{name}: the id column {id_column!r} is empty at {', '.join(empty[:_SHOW])}{more} "
            f"({len(empty)} row{'s' if len(empty) != 1 else ''} in all). Every item needs an id: "
            "fill them in, or import without an id column to number the rows."
        )
    if repeats:
        shown = "; ".join(f"{i!r} at {a} and {b}" for i, a, b in repeats[:_SHOW])
        distinct = len({i for i, _, _ in repeats})
        more = f"; and {len(repeats) - _SHOW} more" if len(repeats) > _SHOW else ""
        raise DataError(
            f"{name}: the id column {id_column!r} has duplicate ids: {shown}{more} "
            f"({len(repeats)} repeated row{'s' if len(repeats) != 1 else ''}, {distinct} "
            f"distinct id{'s' if distinct != 1 else ''}). Ids must be unique: fix them, or "
            "import without an id column to number the rows."
        )
    return ids


# --------------------------------------------------------------------------------------------
# Value helpers


def _label_text(value: Any) -> str | None:
    """An id or gold label as text: None, NaN and blank -> None; 3.0 -> "3"; True -> "true"."""
    if type(value) is str:  # the common case, first
        return value.strip() or None
    value = plain(value)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # Excel and pandas store integers as floats
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    text = str(value).strip()
    return text or None


def _clean_name(value: str | None) -> str | None:
    if value is None:
        return None
    return value.strip() or None


def _dedupe(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))

