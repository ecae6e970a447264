"""XLSX: the first worksheet, streamed from the zip through expat, one cell at a time.

Not openpyxl's reader, for three reasons seen on hostile files (issue 9): it loads the whole
shared-string table before the first row (a 154 KB workbook held a 150 MB string and took
1 GB), it cannot tell a formula without a saved result from an empty cell (both read as None:
a silent change), and damaged sheet XML escapes it as a bare parser exception. Here every
text is counted while it streams and refused at the limit before it is held; a formula cell
without a result is refused with what to do; damaged XML is a sentence naming the part, line
and column. What expat itself would hold whole is refused before it is fed: a tag longer than
1 MB, nesting deeper than 256, comments and processing instructions, a DOCTYPE (entities).

Values follow openpyxl (whose date helpers are used): numbers are int or float, cells formatted
as dates become ISO 8601 text, booleans are bool, error cells keep their text ("#N/A").
"""

from __future__ import annotations

import io
import lzma
import math
import posixpath
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any
from xml.parsers import expat

from judging.errors import DataError
from storage.datasets.import_limits import CELL_OVERHEAD, Budget, human_size
from storage.datasets.readers.table import (
    Record,
    Table,
    clean_header,
    first_line,
    plain,
    row_values,
    short,
)

_CHUNK = 1 << 16
# A workbook's zip directory lists a few dozen parts; 4 MB lists tens of thousands. Reading a
# larger one would itself be the bomb (zipfile keeps an object per entry).
_MAX_DIRECTORY = 4 * 1024**2
# workbook.xml, its relationships and styles.xml are read whole; real ones are kilobytes.
_MAX_SMALL_PART = 32 * 1024**2
# The longest tag (from "<" to ">") a part may have. Tags are short; expat holds a whole tag
# in memory, so an endless attribute would otherwise be held whole.
_MAX_TAG = 1024**2
# Workbook XML nests about 6 deep; expat keeps every open element, so an endless nesting
# (a few hundred KB zipped) would otherwise take gigabytes.
_MAX_NESTING = 256
# XML is verbose, but a sheet decoding to the import limit needs no more than 4 times it.
_XML_PER_DECODED_BYTE = 4
_EXCEL_ROWS, _EXCEL_COLUMNS = 1_048_576, 16_384

# What reading a zip member raises when the member is damaged, encrypted or oddly compressed.
_ZIP_ERRORS = (
    zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError,
    NotImplementedError, RuntimeError, KeyError, struct.error,
)


class _Stop(Exception):
    """The preview has its rows: stop parsing."""


def _unreadable(name: str, detail: str) -> DataError:
    return DataError(
        f"{name} could not be read as an Excel workbook ({detail}). Open it in Excel or "
        "LibreOffice and save it as .xlsx (not .xls, not password-protected)."
    )


def _damaged(name: str, detail: str) -> DataError:
    return DataError(
        f"{name}: the workbook is damaged ({detail}). Open it in Excel or LibreOffice and save "
        "it again, or export the sheet as CSV."
    )


def read_xlsx(raw: bytes, name: str, budget: Budget, limit: int | None) -> Table:
    """The first worksheet; its first non-empty row is the header."""
    _check_directory(raw, name)
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except _ZIP_ERRORS as exc:
        raise _unreadable(name, first_line(exc)) from None
    with archive:
        book = _Book(archive, name)
        sheet = _Sheet(name, budget, book, limit)
        if book.shared_strings:
            strings = _SharedStrings(budget, name)
            book.parse(book.shared_strings, strings, budget, "shared strings")
            strings.flush()
            sheet.shared = strings.strings
        try:
            book.parse(book.sheet, sheet, budget, "worksheet")
        except _Stop:
            pass
    if sheet.header is None:
        raise DataError(
            f"{name}: the first worksheet ({book.sheet_title!r}) is empty. Put the column names "
            "in its first row and the items below."
        )
    return Table([c for c in sheet.header if c is not None], sheet.records, None)


def _check_directory(raw: bytes, name: str) -> None:
    """Refuse a zip whose directory is far larger than any workbook's, before zipfile reads it."""
    end = raw.rfind(b"PK\x05\x06", max(0, len(raw) - 65_557))
    if end < 0 or end + 22 > len(raw):
        return  # not a zip: zipfile says so
    entries, size = struct.unpack_from("<HL", raw, end + 10)
    if (entries == 0xFFFF or size == 0xFFFFFFFF) and end >= 20:  # ZIP64: the real counts
        locator = raw[end - 20 : end]
        if locator[:4] == b"PK\x06\x07":
            (offset,) = struct.unpack_from("<Q", locator, 8)
            if offset + 56 <= len(raw) and raw[offset : offset + 4] == b"PK\x06\x06":
                entries, size = struct.unpack_from("<QQ", raw, offset + 32)
    if size > _MAX_DIRECTORY:
        raise _unreadable(
            name, f"its zip directory lists {entries:,} parts in {human_size(size)}, far more "
            "than a workbook holds"
        )


class _Book:
    """Where the first worksheet, the shared strings and the styles are, and the date rules."""

    def __init__(self, archive: zipfile.ZipFile, name: str) -> None:
        self.archive = archive
        self.name = name
        self.names = {n.lower(): n for n in archive.namelist()}
        root = {a.get("Type", ""): a.get("Target", "")
                for _, tag, a in self._small("_rels/.rels", {"Relationship"})}
        workbook = next(
            (self._resolve("", t) for kind, t in root.items() if kind.endswith("/officeDocument")),
            "xl/workbook.xml",
        )
        folder = posixpath.dirname(workbook)
        rels_path = posixpath.join(folder, "_rels", posixpath.basename(workbook) + ".rels")
        rels = {a.get("Id", ""): (a.get("Type", ""), self._resolve(folder, a.get("Target", "")))
                for _, tag, a in self._small(rels_path, {"Relationship"})}
        sheets: list[tuple[str, str]] = []
        self.date1904 = False
        for parent, tag, attrs in self._small(workbook, {"workbookPr", "sheet"}):
            if tag == "workbookPr":
                self.date1904 = attrs.get("date1904", "").lower() in ("1", "true")
            elif tag == "sheet" and parent == "sheets":
                sheets.append((attrs.get("name", ""), attrs.get("id", "")))
        worksheets = [(title, rels[rid][1]) for title, rid in sheets
                      if rid in rels and rels[rid][0].endswith("/worksheet")]
        if not worksheets:
            raise DataError(f"{name} has no worksheets: there is nothing to import.")
        self.sheet_title, self.sheet = worksheets[0]
        by_kind = {kind.rpartition("/")[2]: target for kind, target in rels.values()}
        self.shared_strings = by_kind.get("sharedStrings")
        self.dates, self.durations = self._date_styles(by_kind.get("styles"))

    def _resolve(self, folder: str, target: str) -> str:
        path = target[1:] if target.startswith("/") else posixpath.join(folder, target)
        return posixpath.normpath(path)

    def _info(self, path: str) -> zipfile.ZipInfo:
        actual = self.names.get(path.lower())  # part names are case-insensitive
        if actual is None:
            raise _damaged(self.name, f"its part {path!r} is missing")
        return self.archive.getinfo(actual)

    def _stream(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        try:
            with self.archive.open(info) as part:
                while chunk := part.read(_CHUNK):
                    yield chunk
        except _ZIP_ERRORS as exc:
            raise _damaged(self.name, f"its part {info.filename!r}: {first_line(exc)}") from None

    def parse(self, path: str, handler: Any, budget: Budget | None, what: str) -> None:
        """Stream one part through expat into `handler` (start, end, data methods)."""
        info = self._info(path)
        if budget is None:
            if info.file_size > _MAX_SMALL_PART:
                raise _damaged(self.name, f"its part {path!r} unzips to "
                               f"{human_size(info.file_size)}, far more than workbooks have")
        elif info.file_size > _XML_PER_DECODED_BYTE * budget.limits.max_decoded_bytes:
            raise DataError(
                f"{self.name}: its {what} ({path}) unzips to {human_size(info.file_size)} of "
                "XML, far more than the import limit of "
                f"{human_size(budget.limits.max_decoded_bytes)} allows. Split the workbook, or "
                "export the sheet as CSV."
            )
        # UTF-8 whatever the XML declaration says (a UTF-16 part still reads by its
        # byte-order mark): expat would otherwise look the declared name up among Python's
        # codecs, where "rot13" or "zlib" are not text encodings and "WTF-8" is none at all.
        parser = expat.ParserCreate("utf-8", namespace_separator="}")
        parser.StartDoctypeDeclHandler = self._no_doctype
        parser.StartElementHandler = handler.start
        parser.EndElementHandler = handler.end
        parser.CharacterDataHandler = handler.data
        tag = -1  # bytes of the tag still open at the end of the last chunk, -1: none open
        offset, tail = 0, b""
        try:
            for chunk in self._stream(info):
                opened, closed = chunk.rfind(b"<"), chunk.rfind(b">")
                if opened > closed:
                    tag = len(chunk) - opened
                elif closed >= 0:
                    tag = -1
                elif tag >= 0:
                    tag += len(chunk)
                if tag > _MAX_TAG:
                    raise _damaged(self.name, f"{path!r} has a tag longer than 1 MB")
                self._no_comments(tail + chunk, offset - len(tail), path)
                tail, offset = chunk[-3:], offset + len(chunk)
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
        except expat.ExpatError as exc:
            detail = expat.ErrorString(exc.code)
            raise _damaged(
                self.name, f"{path!r} is not well-formed XML: {detail} at line {exc.lineno}, "
                f"column {exc.offset + 1}"
            ) from None

    def _no_comments(self, window: bytes, start: int, path: str) -> None:
        """Refuse XML comments and processing instructions (but the XML declaration at the
        start): workbooks never hold them, and expat holds each one whole in memory, so an
        endless one (a few hundred KB zipped) would take as much memory as it unzips to."""
        for marker in (b"<!--", b"<?"):
            at = window.find(marker)
            while at >= 0:
                if marker == b"<!--" or start + at > 3:  # 3: after a byte-order mark
                    raise _damaged(
                        self.name, f"{path!r} holds an XML comment or processing instruction, "
                        "which workbooks never do"
                    )
                at = window.find(marker, at + 1)

    def _no_doctype(self, *_: Any) -> None:
        # Workbooks never declare a DOCTYPE; one can define entities that expand without bound.
        raise _damaged(self.name, "its XML declares a DOCTYPE, which workbooks never do")

    def _small(self, path: str, tags: set[str]) -> list[tuple[str, str, dict[str, str]]]:
        """The elements of a small part named in `tags`, as (parent, tag, attributes), names
        without namespaces."""
        collector = _Elements(tags, self.name, path)
        self.parse(path, collector, None, path)
        return collector.elements

    def _date_styles(self, path: str | None) -> tuple[set[int], set[int]]:
        """The style ids whose number format shows a date (and those showing a duration)."""
        from openpyxl.styles.numbers import BUILTIN_FORMATS, is_date_format, is_timedelta_format

        if path is None:
            return set(), set()
        custom: dict[int, str] = {}
        formats: list[int] = []
        try:
            for parent, tag, attrs in self._small(path, {"numFmt", "xf"}):
                if tag == "numFmt":
                    custom[int(attrs.get("numFmtId", "0"))] = attrs.get("formatCode", "")
                elif tag == "xf" and parent == "cellXfs":
                    formats.append(int(attrs.get("numFmtId", "0")))
        except ValueError as exc:
            raise _damaged(self.name, f"its styles: {first_line(exc)}") from None
        dates: set[int] = set()
        durations: set[int] = set()
        for style, format_id in enumerate(formats):
            code = custom.get(format_id) or BUILTIN_FORMATS.get(format_id)
            if is_date_format(code):
                dates.add(style)
            if is_timedelta_format(code):
                durations.add(style)
        return dates, durations


_LOCAL_NAMES: dict[str, str] = {}


def _nested_too_deep(name: str) -> DataError:
    return _damaged(name, f"its XML nests more than {_MAX_NESTING} elements deep")


def _local(name: str) -> str:
    """'{namespace}row' -> 'row' (expat joins them with "}"); cached: it runs per element."""
    local = _LOCAL_NAMES.get(name)
    if local is None:
        local = name.rpartition("}")[2]
        if len(_LOCAL_NAMES) < 1000:  # a file of a million made-up names must not fill it
            _LOCAL_NAMES[name] = local
    return local


class _Elements:
    """expat handler collecting (parent, tag, attributes) of the elements named in `tags`."""

    # Excel allows 64,000 cell formats; more kept elements than this is not a workbook.
    most = 100_000

    def __init__(self, tags: set[str], name: str, path: str) -> None:
        self.tags = tags
        self.name = name
        self.path = path
        self.elements: list[tuple[str, str, dict[str, str]]] = []
        self.stack: list[str] = [""]
        self.depth = 0

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise _nested_too_deep(self.name)
        tag = _local(name)
        if tag in self.tags:
            if len(self.elements) >= self.most:
                raise _damaged(self.name, f"{self.path!r} has more than {self.most:,} <{tag}>")
            attributes = {_local(k): v for k, v in attrs.items()}
            self.elements.append((self.stack[-1], tag, attributes))
        self.stack.append(tag)

    def end(self, name: str) -> None:
        self.depth -= 1
        self.stack.pop()

    def data(self, text: str) -> None:
        pass


class _TooLong:
    """A shared string past the cell limit: not kept, refused if a cell uses it."""


_TOO_LONG = _TooLong()


class _SharedStrings:
    """expat handler for sharedStrings.xml: each <si>'s text (phonetic runs left out)."""

    def __init__(self, budget: Budget, name: str) -> None:
        self.budget = budget
        self.name = name
        self.depth = 0
        self.strings: list[str | _TooLong] = []
        self.parts: list[str] | None = None
        self.chars = 0
        self.in_text = False
        self.phonetic = 0
        # Strings and their size not yet counted in the budget: counted 1,000 at a time.
        self.pending = self.unflushed = 0

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise _nested_too_deep(self.name)
        tag = _local(name)
        if tag == "si":
            self.parts, self.chars = [], 0
        elif tag == "rPh":
            self.phonetic += 1
        elif tag == "t" and self.phonetic == 0 and self.parts is not None:
            self.in_text = True

    def end(self, name: str) -> None:
        self.depth -= 1
        tag = _local(name)
        if tag == "t":
            self.in_text = False
        elif tag == "rPh":
            self.phonetic -= 1
        elif tag == "si" and self.parts is not None:
            if self.chars > self.budget.limits.max_cell_chars:
                self.strings.append(_TOO_LONG)
            else:
                text = "".join(self.parts)
                self.strings.append(text)
                self.pending += len(text) if text.isascii() else len(text.encode("utf-8"))
            self.parts = None
            self.unflushed += 1
            if self.unflushed == 1000:
                self.flush()

    def flush(self) -> None:
        """Count the strings read since the last flush against the budget."""
        if self.unflushed:
            # `text` adds one string's overhead itself.
            overhead = (self.unflushed - 1) * CELL_OVERHEAD
            self.budget.text(self.pending + overhead, f"shared string {len(self.strings):,}")
        self.pending = self.unflushed = 0

    def data(self, text: str) -> None:
        if self.in_text and self.parts is not None:
            self.chars += len(text)
            if self.chars <= self.budget.limits.max_cell_chars:
                self.parts.append(text)
            elif self.parts:
                self.parts.clear()  # past the limit: never held


def _column_index(ref: str) -> int | None:
    """'C5' -> 3; None for a malformed reference."""
    index = 0
    for position, char in enumerate(ref):
        if "A" <= char <= "Z":
            index = index * 26 + ord(char) - 64
        elif char.isdigit() and position:
            return index if ref[position:].isdigit() and index <= _EXCEL_COLUMNS else None
        else:
            return None
    return None


def _letter(column: int) -> str:
    letters = ""
    while column:
        column, rest = divmod(column - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


class _Sheet:
    """expat handler for a worksheet: builds the header and the records, row by row."""

    def __init__(self, name: str, budget: Budget, book: _Book, limit: int | None) -> None:
        from openpyxl.utils.datetime import MAC_EPOCH, WINDOWS_EPOCH

        self.name = name
        self.budget = budget
        self.book = book
        self.depth = 0
        self.limit = limit
        self.epoch = MAC_EPOCH if book.date1904 else WINDOWS_EPOCH
        self.shared: list[str | _TooLong] = []
        self.header: list[str | None] | None = None
        self.records: list[Record] = []
        self.row = 0
        self.cells: dict[int, Any] | None = None  # the open row's values by column
        self.column = 0
        self.in_cell = False
        self.kind = "n"
        self.style = 0
        self.text: list[str] | None = None
        self.chars = 0
        self.has_value = False
        self.formula: list[str] | None = None
        self.collect: str | None = None
        self.in_inline = False
        self.phonetic = 0

    # -- where, for messages

    @property
    def column_letter(self) -> str:
        return _letter(self.column)

    def _at(self) -> str:
        header = self.header
        named = ""
        if header is not None and self.column <= len(header) and header[self.column - 1]:
            named = f" ({header[self.column - 1]!r})"
        return f"row {self.row}, column {_letter(self.column)}{named}"

    # -- expat handlers

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise _nested_too_deep(self.name)
        tag = _local(name)
        if not self.in_cell:
            if tag == "c" and self.cells is not None:
                self._open_cell(attrs)
            elif tag == "row":
                self._open_row(attrs.get("r"))
            return
        if tag == "v":
            self.has_value, self.text, self.chars, self.collect = True, [], 0, "v"
        elif tag == "f":
            self.formula, self.collect = [], "f"
        elif tag == "is":
            self.in_inline, self.text, self.chars = True, [], 0
        elif tag == "rPh":
            self.phonetic += 1
        elif tag == "t" and self.in_inline and self.phonetic == 0:
            self.collect = "t"

    def data(self, text: str) -> None:
        if self.collect is None:
            return
        if self.collect == "f":
            if self.formula is not None and sum(map(len, self.formula)) < 200:
                self.formula.append(text)  # only to quote it in a message
            return
        self.chars += len(text)
        if self.chars > self.budget.limits.max_cell_chars:
            raise self.budget.long_cell_error(self._at(), None, None)
        if self.text is not None:
            self.text.append(text)

    def end(self, name: str) -> None:
        self.depth -= 1
        tag = _local(name)
        if tag in ("v", "t", "f"):
            self.collect = None
        elif tag == "rPh":
            self.phonetic -= 1
        elif tag == "is":
            self.in_inline = False
        elif tag == "c" and self.in_cell:
            self.in_cell = False
            value = self._value()
            if value is not None and self.cells is not None:
                if self.column in self.cells:
                    raise _damaged(self.name, f"{self._at()} appears twice")
                if self.column > self.budget.limits.max_columns:
                    self.budget.columns(
                        self.column, f"(row {self.row} has a value in column {self.column_letter})"
                    )
                # Counted as soon as it is read: a row of 16,384 long cells is never held.
                self.budget.cell(value, self._at(), None)
                self.cells[self.column] = value
        elif tag == "row" and self.cells is not None:
            cells, self.cells = self.cells, None
            self._close_row(cells)

    # -- rows and cells

    def _open_row(self, number: str | None) -> None:
        try:
            self.row = int(number) if number is not None else self.row + 1
        except ValueError:
            raise _damaged(self.name, f"a row is numbered {short(number)}") from None
        if not 1 <= self.row <= _EXCEL_ROWS:
            raise _damaged(self.name, f"a row is numbered {self.row:,}")
        self.cells = {}
        self.column = 0

    def _open_cell(self, attrs: dict[str, str]) -> None:
        ref = attrs.get("r")
        column = _column_index(ref) if ref else self.column + 1
        if column is None or column > _EXCEL_COLUMNS:
            raise _damaged(self.name, f"row {self.row} has a cell at {short(ref)}")
        self.column = column
        self.kind = attrs.get("t", "n")
        try:
            self.style = int(attrs.get("s", "0"))
        except ValueError:
            raise _damaged(self.name, f"{self._at()} has the style {short(attrs['s'])}") from None
        self.in_cell = True
        self.text, self.chars, self.has_value, self.formula = None, 0, False, None
        self.collect, self.in_inline, self.phonetic = None, False, 0

    def _value(self) -> Any:
        text = "".join(self.text) if self.text is not None else None
        kind = self.kind
        if self.formula is not None and (not self.has_value or (not text and kind != "str")):
            formula = "".join(self.formula)
            formula = formula if len(formula) <= 60 else formula[:57] + "..."
            raise DataError(
                f"{self.name}, {self._at()}: the cell holds a formula (={formula}) "
                "but no saved result, so its value is unknown (it would import as empty). "
                "Open the file in Excel or LibreOffice and save it, which stores the results, "
                "or export the sheet as CSV."
            )
        if kind == "inlineStr":
            return text
        if not text:
            return None  # as openpyxl: an empty <v/> is no value
        if kind == "n":
            return self._number(text)
        if kind == "s":
            return self._shared(text)
        if kind in ("str", "e"):
            return text
        if kind == "b":
            if text not in ("0", "1"):
                raise _damaged(self.name, f"{self._at()} holds the boolean {short(text)}")
            return text == "1"
        if kind == "d":
            from openpyxl.utils.datetime import from_ISO8601

            try:
                return plain(from_ISO8601(text))
            except ValueError:
                raise _damaged(self.name, f"{self._at()} holds the date {short(text)}") from None
        raise _damaged(self.name, f"{self._at()} has the unknown cell type {short(kind)}")

    def _number(self, text: str) -> Any:
        try:
            number: int | float = (
                float(text) if "." in text or "e" in text or "E" in text else int(text)
            )
        except ValueError:
            if text.lstrip("-").isdigit():
                raise DataError(
                    f"{self.name}, {self._at()}: the number has {len(text):,} digits, more than "
                    "Python reads as a number (4,300). Format the cell as text to keep it."
                ) from None
            raise _damaged(self.name, f"{self._at()} holds the number {short(text)}") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise DataError(
                f"{self.name}, {self._at()}: the number {short(text)} is not finite. Format "
                "the cell as text to keep it as it is, or fix the number."
            )
        if self.style in self.book.dates:
            from openpyxl.utils.datetime import from_excel

            try:
                moment = from_excel(number, self.epoch, timedelta=self.style in self.book.durations)
            except (OverflowError, ValueError):
                raise DataError(
                    f"{self.name}, {self._at()}: the cell is formatted as a date but its number "
                    f"({short(text)}) is not a date. Format it as a number, or fix the date."
                ) from None
            return plain(moment)
        return number

    def _shared(self, text: str) -> str:
        try:
            value = self.shared[int(text)]
        except (ValueError, IndexError):
            raise _damaged(
                self.name, f"{self._at()} refers to shared string {short(text)}, which is missing"
            ) from None
        if isinstance(value, _TooLong):
            raise self.budget.long_cell_error(self._at(), None, None)
        return value

    def _close_row(self, cells: dict[int, Any]) -> None:
        if not cells:
            return
        values = [cells.get(i) for i in range(1, max(cells) + 1)]
        if all(v is None or v == "" for v in values):
            return
        if self.header is None:
            names = ["" if v is None else str(v) for v in values]
            self.header = clean_header(
                names, name=self.name, where=f"in the header (row {self.row})", budget=self.budget
            )
            return
        values += [None] * (len(self.header) - len(values))  # short rows are just empty cells
        where = f"row {self.row}"
        self.budget.row(where)  # its values were counted cell by cell
        self.records.append(Record(where, row_values(self.header, values, self.name, where)))
        if self.limit is not None and len(self.records) >= self.limit:
            raise _Stop
