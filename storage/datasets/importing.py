"""Read a dataset file into `Item`s, or refuse it with a sentence the analyst can act on.

This module only reads and validates: it never touches the database (the caller writes a
`ParsedDataset` in one transaction) and never imports streamlit. The readers, one per format,
live in `storage.datasets.readers`; the limits they enforce in `storage.datasets.import_limits`.

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

`read_dataset(..., stream=True)` keeps no row: CSV, TSV and JSONL are read a record at a time
(Parquet a batch at a time), once to validate (ids are checked against a temporary SQLite
table, not a set in memory) and again, record by record, whenever the items are iterated
(`StreamedItems`), so a million-row file is saved without ever being a list. The file's bytes
are still held (once), and XLSX and .json arrays are still parsed whole (their readers need
the whole document).

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
import itertools
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from judging.errors import DataError
from judging.verdicts import Item
from storage.datasets.import_limits import LIMIT_VARIABLES, Budget, ImportLimits, human_size, variable_for
from storage.datasets.readers import Record, encoding_of, iter_records, plain, read_table

if TYPE_CHECKING:  # pandas is only needed for the preview; importing it is slow
    import pandas as pd

__all__ = [
    "LIMIT_VARIABLES",
    "SUPPORTED_EXTENSIONS",
    "SUPPORTED_FORMATS",
    "ImportLimits",
    "ParsedDataset",
    "StreamedItems",
    "dataset_columns",
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
            A list, or with `read_dataset(stream=True)` a `StreamedItems` that reads them
            again from the file's bytes each time it is iterated.
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

    items: Sequence[Item] = field(repr=False)
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
    stream: bool = False,
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
        stream: keep no row in memory: validate the file a record at a time (the same checks,
            the same messages) and give `items` as a `StreamedItems` that reads the records
            again as they are iterated. For large files (`jurybox judge`).

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
    if stream:
        return _read_streamed(raw, fmt, name, limits, id_column, gold_column, fields)
    table = read_table(raw, fmt, name, Budget(limits, name), limit=None)
    id_column, gold_column, chosen = _check_table(
        table.columns, len(table.records), name, id_column, gold_column, fields)
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


def _check_table(
    columns: list[str],
    n_rows: int,
    name: str,
    id_column: str | None,
    gold_column: str | None,
    fields: list[str] | None,
) -> tuple[str | None, str | None, list[str]]:
    """The checks on a file read whole (or streamed to its end): columns, rows, mapping.

    Returns:
        (id column, gold column, the fields items carry), cleaned.
    """
    if not columns:
        raise DataError(
            f"{name} has rows but no columns (every object is empty): there is nothing to "
            "judge. Check that you chose the right file."
        )
    if not n_rows:
        cols = ", ".join(columns)
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
    _check_mapped(columns, id_column, gold_column, chosen, name)
    if chosen is None:
        chosen = [c for c in columns if c not in (id_column, gold_column)]
    return id_column, gold_column, chosen


# Ids checked per query against the temporary table of ids seen (a streamed import).
ID_CHUNK = 5000


def _read_streamed(
    raw: bytes,
    fmt: str,
    name: str,
    limits: ImportLimits,
    id_column: str | None,
    gold_column: str | None,
    fields: list[str] | None,
) -> ParsedDataset:
    """`read_dataset(stream=True)`: one validating pass over the records, keeping none."""
    columns: list[str] = []
    n_rows = 0
    wanted_id = _clean_name(id_column)
    with _IdCheck(name, wanted_id) as ids:
        for record in iter_records(raw, fmt, name, Budget(limits, name), columns):
            n_rows += 1
            if wanted_id is not None:
                ids.add(_label_text(record.values.get(wanted_id)), record.where)
        id_column, gold_column, chosen = _check_table(
            columns, n_rows, name, id_column, gold_column, fields)
        ids.check()
    items = StreamedItems(raw, fmt, name, limits, chosen, id_column, gold_column, n_rows)
    return ParsedDataset(
        items=items,
        columns=list(columns),
        fields=chosen,
        id_column=id_column,
        gold_column=gold_column,
        format=fmt,
        content_hash=hashlib.sha256(raw).hexdigest(),
        filename=name,
        n_rows=n_rows,
        encoding=encoding_of(raw, fmt, name),
    )


class _IdCheck:
    """Empty and repeated ids of a dataset file, the one check of them (a streamed import and
    a file read whole both go through it), found with a temporary SQLite table of the ids seen
    (on disk, private to this import, deleted on close) instead of a set in memory, so a file
    of any length is checked in bounded memory."""

    def __init__(self, name: str, id_column: str | None) -> None:
        self.name = name
        self.id_column = id_column
        self.empty: list[str] = []  # the first few places, for the message
        self.n_empty = 0
        self.repeats: list[tuple[str, str, str]] = []
        self.n_repeats = 0
        self.pending: list[tuple[str, str]] = []
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> _IdCheck:
        if self.id_column is not None:
            self.conn = sqlite3.connect("")  # "": a temporary database on disk
            self.conn.execute("CREATE TABLE seen (item_id TEXT PRIMARY KEY, at TEXT NOT NULL)")
            self.conn.execute("CREATE TABLE repeated (item_id TEXT PRIMARY KEY)")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.conn is not None:
            self.conn.close()

    def add(self, item_id: str | None, where: str) -> None:
        if item_id is None:
            self.n_empty += 1
            if len(self.empty) <= _SHOW:
                self.empty.append(where)
            item_id = ""  # an empty id is also an id that can repeat
        self.pending.append((item_id, where))
        if len(self.pending) >= ID_CHUNK:
            self._flush()

    def _flush(self) -> None:
        chunk, self.pending = self.pending, []
        if self.conn is None or not chunk:
            return
        first_seen = dict(self.conn.execute(
            "SELECT item_id, at FROM seen WHERE item_id IN (SELECT value FROM json_each(?))",
            [json.dumps(sorted({item_id for item_id, _ in chunk}))]))
        new = []
        repeated = []
        for item_id, where in chunk:
            if not item_id:  # counted as empty, never as a repeat
                continue
            earlier = first_seen.get(item_id)
            if earlier is None:
                first_seen[item_id] = where
                new.append((item_id, where))
                continue
            self.n_repeats += 1
            repeated.append((item_id,))
            if len(self.repeats) <= _SHOW:
                self.repeats.append((item_id, earlier, where))
        self.conn.executemany("INSERT INTO seen VALUES (?, ?)", new)
        self.conn.executemany("INSERT OR IGNORE INTO repeated VALUES (?)", repeated)

    def check(self) -> None:
        """Raise the error for the empty and repeated ids seen, if any."""
        self._flush()
        if self.id_column is None:
            return
        distinct = 0
        if self.n_repeats and self.conn is not None:
            distinct = int(self.conn.execute("SELECT count(*) FROM repeated").fetchone()[0])
        _raise_id_problems(self.name, self.id_column, self.empty, self.n_empty,
                           self.repeats, self.n_repeats, distinct)


class StreamedItems(Sequence[Item]):
    """A dataset file's items, read again from its bytes each time they are iterated (a record
    at a time for CSV, TSV and JSONL): `read_dataset(stream=True)` validated them first, so
    iterating raises nothing new. `len()` is the row count; `items[0]` reads the first item;
    `items[:n]` is the first n, streamed too."""

    def __init__(
        self,
        raw: bytes,
        fmt: str,
        name: str,
        limits: ImportLimits,
        fields: list[str],
        id_column: str | None,
        gold_column: str | None,
        n_rows: int,
    ) -> None:
        self._raw = raw
        self._fmt = fmt
        self._name = name
        self._limits = limits
        self._fields = list(fields)
        self._id_column = id_column
        self._gold_column = gold_column
        self._n = n_rows

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Item]:
        records = iter_records(self._raw, self._fmt, self._name, Budget(self._limits, self._name),
                               [])
        for number, record in enumerate(itertools.islice(records, self._n), start=1):
            values = record.values
            item_id = (f"row-{number:06d}" if self._id_column is None
                       else _label_text(values.get(self._id_column)) or "")
            yield Item(
                id=item_id,
                fields={c: values.get(c) for c in self._fields},
                gold=_label_text(values.get(self._gold_column)) if self._gold_column else None,
            )

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> StreamedItems: ...

    def __getitem__(self, index: int | slice) -> Item | StreamedItems:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._n)
            if start != 0 or step != 1:
                raise TypeError("StreamedItems only takes a leading slice (items[:n])")
            head = StreamedItems(self._raw, self._fmt, self._name, self._limits, self._fields,
                                 self._id_column, self._gold_column, stop)
            return head
        position = index + self._n if index < 0 else index
        if not 0 <= position < self._n:
            raise IndexError(f"item index {index} out of range for {self._n} items")
        return next(itertools.islice(iter(self), position, None))


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


def dataset_columns(
    source: Source, *, filename: str | None = None, limits: ImportLimits | None = None
) -> list[str]:
    """A dataset file's columns, keeping no row: a CSV's or TSV's header alone; the keys of
    every record of a JSONL file (in first-seen order), read a record at a time; the others
    read whole.

    Raises:
        DataError, ConfigError: as `read_dataset`.
    """
    limits = ImportLimits.from_env() if limits is None else limits
    raw, name = _load(source, filename, limits.max_file_bytes)
    fmt = _format_of(name)
    columns: list[str] = []
    records = iter_records(raw, fmt, name, Budget(limits, name), columns)
    if fmt in ("csv", "tsv"):
        next(records, None)  # the header is read before the first record
    else:
        for _ in records:
            pass
    return columns


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
    """The items' ids, in file order, checked by `_IdCheck` (the one check of ids, streamed
    or not)."""
    if id_column is None:
        # By position, not by a hash of the row: identical rows would get identical hashes (a
        # duplicate-id error on a file with no id column), and the same bytes always give the
        # same positions, so re-importing the same file gives the same ids.
        return [f"row-{n:06d}" for n in range(1, len(records) + 1)]
    ids: list[str] = []
    with _IdCheck(name, id_column) as check:
        for rec in records:
            item_id = _label_text(rec.values.get(id_column))
            check.add(item_id, rec.where)
            ids.append("" if item_id is None else item_id)
        check.check()
    return ids


def _raise_id_problems(
    name: str,
    id_column: str,
    empty: list[str],
    n_empty: int,
    repeats: list[tuple[str, str, str]],
    n_repeats: int,
    distinct: int,
) -> None:
    """The error for empty or repeated ids, naming the first few (`_SHOW`) of each."""
    if n_empty:
        more = f" and {n_empty - _SHOW} more" if n_empty > _SHOW else ""
        raise DataError(
            f"{name}: the id column {id_column!r} is empty at {', '.join(empty[:_SHOW])}{more} "
            f"({n_empty} row{'s' if n_empty != 1 else ''} in all). Every item needs an id: "
            "fill them in, or import without an id column to number the rows."
        )
    if n_repeats:
        shown = "; ".join(f"{i!r} at {a} and {b}" for i, a, b in repeats[:_SHOW])
        more = f"; and {n_repeats - _SHOW} more" if n_repeats > _SHOW else ""
        raise DataError(
            f"{name}: the id column {id_column!r} has duplicate ids: {shown}{more} "
            f"({n_repeats} repeated row{'s' if n_repeats != 1 else ''}, {distinct} "
            f"distinct id{'s' if distinct != 1 else ''}). Ids must be unique: fix them, or "
            "import without an id column to number the rows."
        )


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

