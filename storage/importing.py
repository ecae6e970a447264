"""Read a dataset file into `Item`s, or refuse it with a sentence the analyst can act on.

This module only reads and validates: it never touches the database (the caller writes a
`ParsedDataset` in one transaction) and never imports streamlit.

Formats, chosen by the file name's extension (case-insensitive):

    .csv            comma-separated, first line is the header
    .tsv            tab-separated, first line is the header
    .jsonl .ndjson  one JSON object per line
    .json           one JSON array of objects
    .parquet        any flat Parquet file
    .xlsx           the first worksheet; its first non-empty row is the header

Text formats are read as UTF-8 (with or without a byte-order mark), UTF-16/UTF-32 with a
byte-order mark, or Windows-1252 when the bytes are clearly Western European text (see
`_decode`). Anything else is refused, never decoded with replacement characters.

Values are kept as read: every CSV/TSV cell is a string ("NA", "null", "007" stay text), other
formats keep their JSON-compatible types; missing values and NaN become None; dates become ISO
8601 strings, so every field is JSON-serialisable.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import hashlib
import io
import json
import math
import os
import re
import sys
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judging.errors import DataError
from judging.verdicts import Item

if TYPE_CHECKING:  # pandas is only needed for the preview; importing it is slow
    import pandas as pd

__all__ = [
    "DEFAULT_MAX_BYTES",
    "SUPPORTED_EXTENSIONS",
    "SUPPORTED_FORMATS",
    "ParsedDataset",
    "preview_dataset",
    "read_dataset",
    "suggest_columns",
]

DEFAULT_MAX_BYTES = 200 * 1024**2

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


@dataclass(slots=True)
class _Record:
    """One data row and where it came from ("line 7", "row 3", "element 2"), for messages."""

    where: str
    values: dict[str, Any]


@dataclass(slots=True)
class _Table:
    columns: list[str]
    records: list[_Record]
    encoding: str | None


# --------------------------------------------------------------------------------------------
# Public API


def read_dataset(
    source: Source,
    *,
    filename: str | None = None,
    id_column: str | None = None,
    gold_column: str | None = None,
    fields: list[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
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
        max_bytes: files larger than this are refused before they are parsed.

    Returns:
        The items, the columns, the mapping and the file's content hash.

    Raises:
        DataError: the file cannot be used as it is (unsupported format, too large, empty,
            header only, ragged rows, bad JSON, undecodable text, unreadable XLSX/Parquet,
            mapped columns missing, empty or duplicate ids). The message names the row or
            column and says what to do.
    """
    raw, name = _load(source, filename, max_bytes)
    fmt = _format_of(name)
    table = _parse(raw, fmt, name, limit=None)
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
            f"Column {id_column!r} is mapped as both the id and the gold label: "
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
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[pd.DataFrame, str]:
    """Read the first rows of a dataset file for the upload preview and the column mapping.

    Cheaper than `read_dataset`: it stops after `n` rows (except for a JSON array, which must
    be parsed whole) and does not check ids. The rows it shows are parsed exactly as
    `read_dataset` would, so a ragged line or bad JSON among them is still reported.

    Args:
        source: a path (str or PathLike) or the file's raw bytes.
        filename: the name whose extension gives the format (required with bytes).
        n: how many data rows to return.
        max_bytes: files larger than this are refused before they are parsed.

    Returns:
        (a DataFrame with every column and at most `n` rows, the format name).

    Raises:
        DataError: as `read_dataset`, except for mapping and id problems.
    """
    import pandas as pd

    raw, name = _load(source, filename, max_bytes)
    fmt = _format_of(name)
    table = _parse(raw, fmt, name, limit=max(n, 0))
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
        size = len(source)
        _check_size(size, max_bytes, filename)
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
            f"{name} is {_human_size(size)}, above the import limit of "
            f"{_human_size(max_bytes)}. Split it into smaller files, or raise the limit."
        )


def _human_size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"


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


def _parse(raw: bytes, fmt: str, name: str, *, limit: int | None) -> _Table:
    if not raw.strip():
        raise DataError(f"{name} is empty: there is nothing to import.")
    if fmt in ("csv", "tsv", "jsonl", "json"):
        text, encoding = _decode(raw, name)
        if not text.strip():
            raise DataError(f"{name} is empty: there is nothing to import.")
        if fmt == "csv":
            return _read_delimited(text, ",", name, encoding, limit)
        if fmt == "tsv":
            return _read_delimited(text, "\t", name, encoding, limit)
        if fmt == "jsonl":
            return _read_jsonl(text, name, encoding, limit)
        return _read_json(text, name, encoding)
    if fmt == "parquet":
        return _read_parquet(raw, name, limit)
    return _read_xlsx(raw, name, limit)


# --------------------------------------------------------------------------------------------
# Text decoding

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 first: its little-endian BOM starts with UTF-16's.
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)

# Windows-1252 is accepted only when the text it gives looks like Western European text. Bytes
# of other encodings (Shift-JIS, GBK, Windows-1251, ...) also decode as Windows-1252, into
# mojibake; these three signs catch them:
#  - four or more non-ASCII characters in a row: Western words put accents between ASCII
#    letters ("Müller", "não"), while CJK and Cyrillic text is made only of high bytes;
_CP1252_LONG_RUN = re.compile(r"[^\x00-\x7f]{4,}")
#  - a word of two or more letters with no ASCII letter at all ("да" reads as "äà");
_CP1252_ALIEN_WORD = re.compile(r"(?<!\w)[^\x00-\x7f\W\d_]{2,}(?!\w)")
#  - characters Western text almost never uses but Shift-JIS lead bytes produce constantly
#    (0x82, 0x83, 0x86-0x89, 0x8B, 0x98, 0x9B).
_CP1252_UNLIKELY = re.compile("[\u201a\u0192\u2020\u2021\u02c6\u2030\u2039\u02dc\u203a]")


def _decode(raw: bytes, name: str) -> tuple[str, str]:
    """Decode a text file without ever substituting characters.

    Returns:
        (text without BOM, the encoding used).

    Raises:
        DataError: the bytes are neither UTF-8/16/32 nor clearly Windows-1252.
    """
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{name} starts with a {encoding.upper()} byte-order mark but byte "
                    f"{exc.start} is not valid {encoding.upper()}. Save it as UTF-8 and upload "
                    "again."
                ) from None
            return text.lstrip("\ufeff"), encoding
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        cp1252 = _as_cp1252(raw)
        if cp1252 is not None:
            return cp1252, "cp1252"
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(
            f"{name} is not UTF-8: byte 0x{raw[exc.start]:02X} on line {line} cannot be "
            "decoded, and the file is not recognisably Windows-1252 either. Save it as "
            "UTF-8 (in Excel: 'CSV UTF-8') and upload again."
        ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise DataError(
            f"{name} contains NUL bytes (first on line {line}): it is probably UTF-16 "
            "without a byte-order mark, or not a text file. Save it as UTF-8 and upload again."
        )
    return text, "utf-8"


def _as_cp1252(raw: bytes) -> str | None:
    try:
        text = raw.decode("cp1252")  # strict: 0x81, 0x8D, 0x8F, 0x90, 0x9D are undefined
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    for sign in (_CP1252_LONG_RUN, _CP1252_ALIEN_WORD, _CP1252_UNLIKELY):
        if sign.search(text):
            return None
    return text


# --------------------------------------------------------------------------------------------
# Readers. Each returns every column and the records (at most `limit` when given).


def _read_delimited(
    text: str, delimiter: str, name: str, encoding: str, limit: int | None
) -> _Table:
    """CSV/TSV with the csv module, not pandas: pandas pads short rows with NaN and (with
    on_bad_lines) drops long ones, both silently, and cannot say which line was wrong."""
    # A long text cell (a document to judge) easily passes the csv module's default 128 KB
    # field limit. Raising the process-wide ceiling only ever lets more through; a file was
    # already checked against max_bytes, so no field can be larger than that.
    if csv.field_size_limit() < sys.maxsize // 2:
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    kind = "TSV" if delimiter == "\t" else "CSV"
    # strict=True: an unclosed quote or text after a closing quote is an error, not a row that
    # silently swallows the rest of the file.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header: list[str | None] | None = None
    records: list[_Record] = []
    start = 1  # the line the current record starts on
    try:
        for row in reader:
            here = start
            start = reader.line_num + 1
            if not any(row):
                continue  # blank lines and ",,," rows (spreadsheet leftovers) hold no item
            if header is None:
                header = _clean_header(row, name=name, where=f"in the header (line {here})")
                all_named = None not in header
                continue
            if len(row) != len(header):
                raise DataError(
                    f"{name}, line {here}: expected {len(header)} fields (as in the header) "
                    f"but found {len(row)}. Check that line for a missing or extra "
                    f"{'tab' if delimiter == chr(9) else 'comma'} or an unquoted "
                    f"{'tab' if delimiter == chr(9) else 'comma'} inside a value."
                )
            where = f"line {here}"
            values = dict(zip(header, row)) if all_named else _row_values(header, row, name, where)
            records.append(_Record(where, values))  # type: ignore[arg-type]
            if limit is not None and len(records) >= limit:
                break
    except csv.Error as exc:
        detail = str(exc)
        if "unexpected end of data" in detail:
            raise DataError(
                f"{name}, line {start}: a quoted value opened on or after this line is never "
                "closed, so the rest of the file would be read as one value. Close the quote "
                '(write a quote inside a value as "").'
            ) from None
        raise DataError(
            f"{name}, line {reader.line_num}: the {kind} is malformed ({detail}). "
            'Quote values that contain quotes and write a quote inside a value as "".'
        ) from None
    if header is None:
        raise DataError(f"{name} is empty: there is nothing to import.")
    return _Table([c for c in header if c is not None], records, encoding)


def _read_jsonl(text: str, name: str, encoding: str, limit: int | None) -> _Table:
    columns: dict[str, None] = {}
    records: list[_Record] = []
    # split("\n"), not splitlines(): JSON strings may hold U+2028 or \x85 unescaped, which
    # splitlines() would cut a record at.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            hint = ""
            if number == 1 and line.strip() in ("[", "{"):
                hint = " The file looks like one JSON document: name it .json instead."
            raise DataError(
                f"{name}, line {number}: invalid JSON ({exc.msg} at column {exc.colno}). "
                f"Each line must be one complete JSON object.{hint}"
            ) from None
        if not isinstance(value, dict):
            raise DataError(
                f"{name}, line {number}: expected a JSON object like {{\"text\": ...}} but "
                f"found {_json_kind(value)}. Each line must be one JSON object."
            )
        for key in value:
            columns.setdefault(key, None)
        records.append(_Record(f"line {number}", _plain_dict(value)))
        if limit is not None and len(records) >= limit:
            break
    if not records:
        raise DataError(f"{name} is empty: there is nothing to import.")
    return _Table(list(columns), records, encoding)


def _read_json(text: str, name: str, encoding: str) -> _Table:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = ""
        if exc.msg == "Extra data":
            hint = " If it has one object per line, name it .jsonl instead."
        raise DataError(
            f"{name}: invalid JSON on line {exc.lineno}, column {exc.colno} ({exc.msg}).{hint}"
        ) from None
    if not isinstance(value, list):
        hint = ""
        if isinstance(value, dict):
            lists = [k for k, v in value.items() if isinstance(v, list)]
            if lists:
                hint = f" The object holds a list under {lists[0]!r}: upload that list alone."
        raise DataError(
            f"{name} holds {_json_kind(value)}, but Jurybox expects an array of objects, "
            f'like [{{"id": "a", "text": "..."}}, ...].{hint}'
        )
    if not value:
        raise DataError(f"{name} holds an empty array: there are no rows to import.")
    columns: dict[str, None] = {}
    records: list[_Record] = []
    for number, element in enumerate(value, start=1):
        if not isinstance(element, dict):
            raise DataError(
                f"{name}: element {number} of the array is {_json_kind(element)}, not an "
                "object. Every element must be an object of column: value pairs."
            )
        for key in element:
            columns.setdefault(key, None)
        records.append(_Record(f"element {number}", _plain_dict(element)))
    return _Table(list(columns), records, encoding)


_PANDAS_INDEX = re.compile(r"__index_level_\d+__")


def _read_parquet(raw: bytes, name: str, limit: int | None) -> _Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(pa.BufferReader(raw))
        # pandas stores a non-default index as "__index_level_N__" columns: not data.
        names = [n for n in parquet.schema_arrow.names if not _PANDAS_INDEX.fullmatch(n)]
        _check_unique(names, name, "in the Parquet schema")
        records: list[_Record] = []
        number = 0
        for batch in parquet.iter_batches(batch_size=limit or 65536, columns=names):
            for row in batch.to_pylist():
                number += 1
                records.append(_Record(f"row {number}", _plain_dict(row)))
                if limit is not None and len(records) >= limit:
                    break
            if limit is not None and len(records) >= limit:
                break
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DataError(
            f"{name} could not be read as a Parquet file ({_first_line(exc)}). Check that it is "
            "a complete Parquet file (not renamed from another format) and export it again."
        ) from None
    if not names:
        raise DataError(f"{name} has no columns: there is nothing to import.")
    return _Table(names, records, None)


def _read_xlsx(raw: bytes, name: str, limit: int | None) -> _Table:
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        # read_only streams rows; data_only gives the values Excel last calculated, not formulas.
        workbook = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except (zipfile.BadZipFile, InvalidFileException, KeyError, OSError, ValueError) as exc:
        raise DataError(
            f"{name} could not be read as an Excel workbook ({_first_line(exc)}). Open it in "
            "Excel or LibreOffice and save it as .xlsx (not .xls, not password-protected)."
        ) from None
    try:
        if not workbook.worksheets:
            raise DataError(f"{name} has no worksheets: there is nothing to import.")
        sheet = workbook.worksheets[0]
        header: list[str | None] | None = None
        records: list[_Record] = []
        for number, row in enumerate(sheet.iter_rows(min_row=1, values_only=True), start=1):
            cells = [_plain(v) for v in row]
            if all(c is None or c == "" for c in cells):
                continue
            if header is None:
                names = ["" if c is None else str(c) for c in cells]
                header = _clean_header(names, name=name, where=f"in the header (row {number})")
                continue
            cells += [None] * (len(header) - len(cells))  # short rows are just empty cells
            where = f"row {number}"
            records.append(_Record(where, _row_values(header, cells, name, where)))
            if limit is not None and len(records) >= limit:
                break
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise DataError(
            f"{name} could not be read as an Excel workbook ({_first_line(exc)}). Open it in "
            "Excel or LibreOffice and save it as .xlsx again."
        ) from None
    finally:
        workbook.close()
    if header is None:
        raise DataError(
            f"{name}: the first worksheet ({sheet.title!r}) is empty. Put the column names in "
            "its first row and the items below."
        )
    return _Table([c for c in header if c is not None], records, None)


# --------------------------------------------------------------------------------------------
# Header and row helpers


def _clean_header(cells: Sequence[str], *, name: str, where: str) -> list[str | None]:
    """Strip names (" text" would not match the placeholder {text}); None marks an unnamed
    column, which is dropped as long as it holds no value (spreadsheets leave such columns)."""
    header: list[str | None] = [c.strip() or None for c in cells]
    _check_unique([c for c in header if c is not None], name, where)
    return header


def _check_unique(names: list[str], name: str, where: str) -> None:
    counts: dict[str, int] = {}
    for column in names:
        counts[column] = counts.get(column, 0) + 1
    repeated = [column for column, count in counts.items() if count > 1]
    if repeated:
        shown = ", ".join(repr(c) for c in repeated)
        raise DataError(
            f"{name}: column name {shown} appears more than once {where}. Column names must "
            "be unique: rename the repeated column."
        )


def _row_values(
    header: list[str | None], cells: Sequence[Any], name: str, where: str
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for position, (column, cell) in enumerate(zip(header, cells), start=1):
        if column is None:
            if cell is not None and cell != "":
                raise DataError(
                    f"{name}, {where}: column {position} has a value ({_short(cell)}) but no "
                    "name in the header. Give the column a name, or delete it."
                )
            continue
        values[column] = cell
    if len(cells) > len(header):  # only XLSX gets here: CSV rows are checked for length
        extra = [c for c in cells[len(header):] if c is not None and c != ""]
        if extra:
            raise DataError(
                f"{name}, {where}: a value ({_short(extra[0])}) lies right of the last named "
                "column. Give that column a name in the header row, or delete the value."
            )
    return values


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


def _item_ids(records: list[_Record], id_column: str | None, name: str) -> list[str]:
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


def _plain(value: Any) -> Any:
    """A JSON-serialisable Python value: NaN -> None, numpy scalars -> Python, dates -> ISO."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing markers, by name so
        return None  # that reading a CSV never has to import pandas
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)  # a float would lose digits a decimal column exists to keep
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value).hex()
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays -> Python values
    if callable(tolist):
        return _plain(tolist())
    return str(value)


def _plain_dict(values: dict[str, Any]) -> dict[str, Any]:
    # Most values are already plain; skipping the call for them halves the time of a big file.
    return {k: v if type(v) in _ALREADY_PLAIN else _plain(v) for k, v in values.items()}


_ALREADY_PLAIN = frozenset({str, int, bool, type(None)})


def _label_text(value: Any) -> str | None:
    """An id or gold label as text: None, NaN and blank -> None; 3.0 -> "3"; True -> "true"."""
    if type(value) is str:  # the common case, first
        return value.strip() or None
    value = _plain(value)
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


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return f"a string ({_short(value)})"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"a number ({value})"


def _short(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
