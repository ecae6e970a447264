"""A matrix of hostile dataset files, generated here, and what importing each one must give.

Every case is either a correct import, stated value by value, or a `DataError` whose sentence
names the file (and the line, row or column where one applies) and says what to do. Anything
else counts against the importer: a traceback (any other exception), a silent change (a file
imported with values other than the ones stated, or imported when it must be refused), an
unclear error. Bombs (a small file that decodes to far more) are also measured: the peak of
Python allocations (tracemalloc) plus Arrow's own allocations.

    .venv/bin/python -m tests.hostile_imports         # the figures, one line per case and a total
    .venv/bin/python -m tests.hostile_imports --rss   # also each bomb's peak resident memory,
                                                      # imported alone in a fresh process

`tests/test_import_hostile.py` runs the same cases under pytest.
"""

from __future__ import annotations

import functools
import io
import json
import time
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from judging.errors import DataError
from storage.datasets.importing import ImportLimits, ParsedDataset, read_dataset
from tests.fixtures_import import sheet_rows, styles_xml, xlsx_bytes

MB = 1024**2
MEMORY_BOUND = 200 * MB  # the most one bomb may make the import allocate (and a Parquet child)

# Phrases that tell the reader what to do; every refusal must hold one.
ACTIONS = (
    "save", "split", "remove", "rename", "fix", "open", "put", "write", "give", "check",
    "export", "add", "choose", "close", "ask the operator", "shorten", "flatten", "format",
    "keep", "quote", "delete", "break", "separate", "name it", "upload", "fill",
)


@dataclass(frozen=True)
class Accept:
    """The file imports with exactly these columns and rows (every column is a field)."""

    columns: list[str]
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class Refuse:
    """The file is refused; the sentence holds each of these (case-insensitive)."""

    says: tuple[str, ...]


@dataclass(frozen=True)
class Case:
    id: str
    filename: str
    make: Callable[[], bytes]
    expect: Accept | Refuse
    limits: ImportLimits | None = None
    bomb: bool = False  # measure memory


@dataclass
class Outcome:
    case: Case
    kind: str  # "import", "error" or "traceback"
    message: str = ""
    parsed: ParsedDataset | None = None
    python_peak: int = 0
    arrow_peak: int = 0
    child_peak: int = 0  # Parquet: how far the resident memory of the reader's child rose
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def peak(self) -> int:
        """The server's peak: Python allocations plus Arrow's (the Parquet child's apart)."""
        return self.python_peak + self.arrow_peak


# --------------------------------------------------------------------------------- builders


def _once(make: Callable[[], bytes]) -> Callable[[], bytes]:
    return functools.cache(make)


def text(content: str, encoding: str = "utf-8") -> Callable[[], bytes]:
    return lambda: content.encode(encoding)


def raw(content: bytes) -> Callable[[], bytes]:
    return lambda: content


def jsonl(*lines: str) -> Callable[[], bytes]:
    return lambda: "".join(line + "\n" for line in lines).encode()


def parquet(build: Callable[[], Any], **write: Any) -> Callable[[], bytes]:
    def make() -> bytes:
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(build(), buffer, **write)
        return buffer.getvalue()

    return _once(make)


def workbook(rows: list[list[Any]]) -> Callable[[], bytes]:
    """An .xlsx written by openpyxl (inline strings; formulas without saved results)."""

    def make() -> bytes:
        import openpyxl

        book = openpyxl.Workbook()
        for row in rows:
            book.active.append(row)
        buffer = io.BytesIO()
        book.save(buffer)
        return buffer.getvalue()

    return _once(make)


def inline(ref: str, value: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{value}</t></is></c>'


def num(ref: str, value: str, style: int | None = None) -> str:
    s = f' s="{style}"' if style is not None else ""
    return f'<c r="{ref}"{s}><v>{value}</v></c>'


HEADER = [inline("A1", "id"), inline("B1", "text")]
MAIN = b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'


def repeat_writer(head: bytes, body: bytes, times: int, tail: bytes) -> Callable[[Any], None]:
    """A zip member writer: head, then `body` `times` times, then tail (streamed)."""

    def write(member: Any) -> None:
        member.write(head)
        for _ in range(times):
            member.write(body)
        member.write(tail)

    return write


def _xlsx_shared_bomb() -> bytes:
    # 150 MB in one shared string, about 150 KB zipped: the 154 KB workbook of the issue.
    shared = repeat_writer(b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/'
                           b'main"><si><t>', b"x" * MB, 150, b"</t></si></sst>")
    return xlsx_bytes(sheet_rows(HEADER, [num("A2", "1"), '<c r="B2" t="s"><v>0</v></c>']),
                      shared=shared)


def _xlsx_inline_bomb() -> bytes:
    head = MAIN + b"<sheetData>" + sheet_rows(HEADER) + b'<row r="2"><c r="A2" t="inlineStr"><is><t>'
    return xlsx_bytes(repeat_writer(head, b"y" * MB, 150, b"</t></is></c></row></sheetData>"
                                    b"</worksheet>"))


def _xlsx_attribute_bomb() -> bytes:
    head = MAIN + b'<sheetData><row r="1"><c r="A1" t="'
    return xlsx_bytes(repeat_writer(head, b"z" * MB, 50, b'"/></row></sheetData></worksheet>'))


def _xlsx_markup_bomb(opening: bytes, closing: bytes) -> Callable[[], bytes]:
    # 150 MB in one comment or processing instruction, with ">" all through it (so it is no
    # long tag): expat would hold all of it.
    def make() -> bytes:
        head = MAIN + b"<sheetData>" + sheet_rows(HEADER) + opening
        return xlsx_bytes(repeat_writer(head, b"a>" * (MB // 2), 150,
                                        closing + b"</sheetData></worksheet>"))

    return _once(make)


def _xlsx_nesting_bomb() -> bytes:
    # 50 million open elements: 150 MB of XML, a few hundred KB zipped.
    return xlsx_bytes(repeat_writer(MAIN + b"<sheetData>", b"<x>" * (MB // 3), 150,
                                    b"</sheetData></worksheet>"))


def _xlsx_many_shared_strings() -> bytes:
    # 300,000 empty shared strings: 5 MB of XML, tiny zipped; each costs a slot in memory.
    shared = repeat_writer(b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/'
                           b'main">', b"<si><t></t></si>" * 1000, 300, b"</sst>")
    return xlsx_bytes(sheet_rows(HEADER, [num("A2", "1"), '<c r="B2" t="s"><v>0</v></c>']),
                      shared=shared)


def _xlsx_empty_rows() -> bytes:
    # 100,000 formatted but empty rows before the data: every row is skipped, none held.
    rows = b"".join(b'<row r="%d" ht="15"/>' % n for n in range(3, 100_003))
    data = sheet_rows(HEADER) + rows + b'<row r="100003">' + num("A100003", "7").encode() + \
        inline("B100003", "last").encode() + b"</row>"
    return xlsx_bytes(data)


def _zip_directory_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for n in range(40_000):
            archive.writestr(f"xl/media/{'p' * 100}{n:06d}.bin", b"")
    return buffer.getvalue()


def _truncated(make: Callable[[], bytes]) -> Callable[[], bytes]:
    return lambda: make()[: len(make()) // 2]


def _parquet_rows_bomb() -> Any:
    import pyarrow as pa

    n = 3_000_000
    return pa.table({"id": pa.array(range(n)), "text": pa.array(["same"] * n)})


def _parquet_dictionary_bomb() -> Any:
    import pyarrow as pa

    # One 900 KB value referenced by 200,000 rows: 180 GB once expanded, 1 MB on disk.
    indices = pa.array([0] * 200_000, pa.int32())
    return pa.table({"text": pa.DictionaryArray.from_arrays(indices, pa.array(["w" * 900_000]))})


def _parquet_dictionary_bomb_plain() -> Any:
    import pyarrow as pa

    # Written from a dictionary (never expanded here), without Arrow's schema: read back, the
    # column is plain strings, every row holding the value.
    indices = pa.array([0] * 20_000, pa.int32())
    return pa.table({"text": pa.DictionaryArray.from_arrays(indices, pa.array(["w" * 900_000]))})


def _parquet_long_cell() -> Any:
    import pyarrow as pa

    return pa.table({"text": pa.array(["x" * (50 * MB), "short"])})


def _parquet_nested() -> Any:
    import pyarrow as pa

    return pa.table({
        "id": [1, 2],
        "tags": pa.array([["a", "b"], []], pa.list_(pa.string())),
        "meta": pa.array([{"k": 1, "v": "x"}, None], pa.struct([("k", pa.int64()), ("v", pa.string())])),
    })


def _parquet_deep(levels: int) -> Callable[[], Any]:
    def build() -> Any:
        import pyarrow as pa

        kind: Any = pa.int64()
        value: Any = 1
        for _ in range(levels):
            kind, value = pa.list_(kind), [value]
        return pa.table({"deep": pa.array([value], kind)})

    return build


def _parquet_typed() -> Any:
    import decimal

    import pyarrow as pa

    return pa.table({
        "price": pa.array([decimal.Decimal("12345678901234567890.12")], pa.decimal128(38, 2)),
        "ratio": pa.array([float("nan")]),
        "raw": pa.array([b"\xff\x00"], pa.binary()),
        "text": pa.array(["\x00 NUL inside"]),
    })


def _parquet_far_future() -> Any:
    import pyarrow as pa

    return pa.table({"when": pa.array([300_000_000_000], pa.timestamp("s"))})


def _parquet_columns(n: int, names: Callable[[int], str] = lambda i: f"c{i}") -> Any:
    def build() -> Any:
        import pyarrow as pa

        return pa.table({names(i): [i] for i in range(n)})

    return build


def _parquet_duplicate_names() -> Any:
    import pyarrow as pa

    return pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])


# A Parquet file (found by fuzzing: one byte changed in a pandas-written file) whose footer
# makes pyarrow 26 abort the whole process from `RowGroupMetaData.column(1)`: "terminate
# called after throwing an instance of 'parquet::ParquetException'". zlib, then base64.
_ABORTING_PARQUET = (
    "eNqtV0tsG1UUfeNf7DRu49Bxx5AiY1qrSGnxN4mLSzN24x+J27iKfxSiGY8/k3jGrj2O7USVWCFUsUAVC8QCsaiQaMuv"
    "VKyADUJCCDaVkFhWCNggoW7YsOK+N7bzcVIlEqOc92buve+ee95PzhU25aZ19Dta+qZmgQ7SaAKhH6jjGoQQ59IbkBvg"
    "AXgBPr1B59dQp9A0fMwAZsEQ0FKMzu0yjSA3wAPwAnwAP2AaMAOYNY2YIuDdF0HPjBZzembVLkAjepYOTkFJ47SBNkxO"
    "ozMaLsBoOJfFAhGTVVxikNKb7G+xNwNnPv7+/U3Xj/G738z+9fNLCBTdNtI/DRTd0s2ZIVyxf/e13WV3XHdM2Tu0Bblf"
    "hlQe3Hhx48ONHzfTuJnBzSxuAmYLOmq5g9yWu7YJyz3AJ4BPAZ8BPgd8AbgP+NI2EXoAOQ/R2D2BfkXDks2k5H4AY96h"
    "4GAT8UhLvzmYiMcUQmYKUWYj0gC0AB1ADzAARgBGgAkwCjgCGAOYAUcBxwDjAAtgAvAU4DiABlgBJwAMwAZ4GvCM2Ric"
    "ROpzstfvVskY+x7G2HtBVnRmD+uB9b67W++yntL9clE/Ylz+46LpBHpsHh/75+LdOxSF/jUzOjRnGtdp5kwunR4amAAG"
    "xDMgmgGx4yDWDmIZEMqAUAaEMiCSAZEMiGTQJOAk4FmAHeLtEP8cvDvMzCnH3DJ5np8blt33DAS+gWUPWw8iG9HHaQYn"
    "R2pyimIoPIukJwlGT6kJIDlN62xVP2IMzUKlKHH0KKLHTmsYjSicRgt4ueDzPKNTih2lb9CBn5IRPYr7EvDhnkfWoG3S"
    "ds2JJukxmx8Zxm04Ca2xBq0f6ay3tc77Gqdx58m1TcESIVqDSx6HLmj9kLIZbE4UBJrtiQg9SfWnyXpL53zP4LynPciR"
    "GGZ4YNjBoOsxUDJJ/5Xe+kjr/N3k/HbkcHtxiOiF7SyjfZZSn+VvrfOh2fnBkcMt/ZNZkO20AQEJT0jy1tedbx8LDq2+"
    "DQJJjq3B1oc2a9BptP52DBgYQ52TBa7JvKvfdIiyUOysFGrVliQ3Heftr742ZXeonyvEV9xlJZ+bDpmTivDmEAVYCEdJ"
    "LFaFlZ02lWRF6daJscavFgsKdsgtqd4d2JtKAxulosIJnMKBSW5Vqzem7FsceG8Ms/St/x+PPEwi78Egysq0b5hgYH4S"
    "RWmYorQHRala4/Yk2eZ4Eg0/TMPvQcPXatVhjr51NwHeA5yiNES+pZBdsXkD74pGkVNqDfzpqIp8g2t0cZJ6l2s0am2c"
    "Z73YaIo1GVs90+dc59yOG1ulbHN6z7mxDzFjbCp1OXNeva+YX0dfJE/5EsuyS6z6vMKyPjZUZiMsW2bDZWILhXb427if"
    "H/gX22H1u5+F+OO4D5EeB4XXcBfCnsQSxIdm4lK1lY+mfVlPcp2PpRVeXhQviyE+e7Vdjks9WzVQ56VUtRhNb8RXa+WM"
    "29WMhxOrvKfj5jN+1eZtirwUUfJX49Pgq+fDcRwjcZl0Mx8JtHIZdxXHAd9aXITccqgCOSsFd8BVzIZ6voDISelVQR3b"
    "EjLudjG9zS8nXQWR+JR8NlXJRyOuHOaL+t18tBNYCGM9/gqfWQYNrCiALmG/OmTQE1sSF8KsWIhGYA4iG1lvyl+IqmN5"
    "T+J6PpN0kVolyJ8N+bf7C95UV/W5q0I0spaDenBeXk43+RjMT2zHfLTU2Hw9n+msZT1bNfKqnnYu44ccyZIQq7b7c8jL"
    "S57kfnMB6yZcyrkOUYO0Xw35/WuQ+GigssUzPA95qbOeyw7qPNC65MT99kZ83/XISYF1ft+5SKzznjYZy2fSrlwmVRGi"
    "83gfQ2ynWUqT/VoRYqkul0m4hd4+LnrVfVyQ0hAf6BJbN9GEmG4um/Cr+yTkh/cu7y2Q/IKU7hY81XVYN5ifeDcp+toL"
    "q/Ni6eqOPe3JZxMbXCbQIjlWF1uLV32duOxSDzI+irFeLBzTED6vSewJL+M2S17755tl01fgesCfSzlysiNbh5wdvEbj"
    "OPM8vkmKg/hFEhTdMz6H64BBObUe/JTDa3g8TsRWiKVA6t0aSV55El9mL5F7pcCGB261Mk+fP7W0Jz9JEiPnj3xv4PgO"
    "Ga3W02YXe+L7g0IRtYjcrnoINZdZIvlD/fuPPBcuIMZe5xrXW0XlbKFeP0subHvvQrarV7XtGvwg3P6HkqMIXYF/I/8D"
    "YY9vXQ=="
)


def _aborting_parquet() -> bytes:
    import base64
    import zlib

    return zlib.decompress(base64.b64decode(_ABORTING_PARQUET))


def _deep(opening: str, closing: str, levels: int, inner: str = "1") -> str:
    return opening * levels + inner + closing * levels


# ----------------------------------------------------------------------------------- cases

CELL_MAX = ImportLimits().max_cell_chars
LINE_MAX = ImportLimits().max_line_chars
ACTION_SAVE = ("save it as utf-8",)

CASES: list[Case] = [
    # ---- text encodings, BOMs, NULs
    Case("csv-utf8-bom", "bom.csv", text("id,text\n1,café\n", "utf-8-sig"),
         Accept(["id", "text"], [{"id": "1", "text": "café"}])),
    Case("csv-two-boms", "boms.csv", raw(b"\xef\xbb\xbf\xef\xbb\xbfid,text\n1,a\n"),
         Accept(["id", "text"], [{"id": "1", "text": "a"}])),
    Case("csv-utf16-bom", "wide.csv", text("id,text\n1,日本\n", "utf-16"),
         Accept(["id", "text"], [{"id": "1", "text": "日本"}])),
    Case("csv-utf32-bom", "wider.csv", text("id,text\n1,ü\n", "utf-32"),
         Accept(["id", "text"], [{"id": "1", "text": "ü"}])),
    Case("csv-cp1252", "legacy.csv", text("id,text\n1,“Müller” – 5€\n", "cp1252"),
         Accept(["id", "text"], [{"id": "1", "text": "“Müller” – 5€"}])),
    Case("csv-shift-jis", "sjis.csv", text("id,text\n1,日本語のテキスト\n", "shift_jis"),
         Refuse(("sjis.csv is not UTF-8", "line 2", *ACTION_SAVE))),
    Case("csv-utf8-encoded-surrogate", "wtf8.csv", raw(b"id,text\n1,caf\xed\xa0\x80\n"),
         Refuse(("wtf8.csv is not UTF-8", "line 2", *ACTION_SAVE))),
    Case("csv-utf16-without-bom", "nobom.csv", text("id,text\n1,a\n", "utf-16-le"),
         Refuse(("nobom.csv contains NUL bytes", "line 1", "UTF-16"))),
    Case("csv-nul-byte", "nul.csv", raw(b"id,text\n1,a\x00b\n"),
         Refuse(("nul.csv contains NUL bytes", "line 2"))),
    Case("csv-bad-utf16-after-bom", "broken16.csv", raw(b"\xff\xfei\x00d\x00\x00\xd8\n\x00"),
         Refuse(("broken16.csv starts with a UTF-16 byte-order mark", "byte", *ACTION_SAVE))),
    Case("csv-binary-garbage", "noise.csv", raw(bytes(range(256)) * 4),
         Refuse(("noise.csv is not UTF-8", "byte 0x80 on line 2", *ACTION_SAVE))),
    # ---- empty and almost empty
    Case("csv-empty", "empty.csv", raw(b""), Refuse(("empty.csv is empty",))),
    Case("csv-blank-lines", "blank.csv", raw(b"\r\n \n\t\n"), Refuse(("blank.csv is empty",))),
    Case("csv-header-only", "head.csv", raw(b"id,text\n"),
         Refuse(("head.csv has a header", "no data rows", "add at least one row"))),
    Case("jsonl-empty-lines", "empty.jsonl", raw(b"\n\n\n"), Refuse(("empty.jsonl is empty",))),
    Case("json-empty-array", "empty.json", raw(b" [ ] "), Refuse(("empty.json holds an empty array",))),
    Case("xlsx-header-only", "head.xlsx", workbook([["id", "text"]]),
         Refuse(("head.xlsx has a header", "no data rows"))),
    Case("parquet-header-only", "head.parquet",
         parquet(lambda: __import__("pyarrow").table({"id": [], "text": []})),
         Refuse(("head.parquet has a header", "no data rows"))),
    # ---- CSV structure
    Case("csv-ragged-long-row", "ragged.csv", raw(b"id,text\n1,a\n2,b,c\n"),
         Refuse(("ragged.csv, line 3", "expected 2 fields", "found 3", "check that line"))),
    Case("csv-ragged-short-row", "short.tsv", raw(b"id\ttext\tgold\n1\ta\n"),
         Refuse(("short.tsv, line 2", "found 2", "tab"))),
    Case("csv-unclosed-quote", "quote.csv", raw(b'id,text\n1,"never closed\n2,b\n'),
         Refuse(("quote.csv, line 2", "never closed", "close the quote"))),
    Case("csv-text-after-quote", "after.csv", raw(b'id,text\n1,"a"b\n'),
         Refuse(("after.csv, line 2", "malformed", "quote values"))),
    Case("csv-duplicate-columns", "dupcol.csv", raw(b"id,text,text\n1,a,b\n"),
         Refuse(("dupcol.csv", "'text' appears more than once", "line 1", "rename"))),
    Case("csv-blank-column-name-with-value", "noname.csv", raw(b"id,,text\n1,x,a\n"),
         Refuse(("noname.csv, line 2", "column 2 has a value", "no name", "give the column"))),
    Case("csv-blank-column-names-empty", "spare.csv", raw(b"id,text,,\n1,a,,\n"),
         Accept(["id", "text"], [{"id": "1", "text": "a"}])),
    Case("csv-too-many-columns", "wide.csv",
         text(",".join(f"c{i}" for i in range(600)) + "\n" + ",".join("1" * 600) + "\n"),
         Refuse(("wide.csv has 600 columns", "line 1", "limit of 500", "JURYBOX_MAX_COLUMNS"))),
    Case("csv-thousand-empty-columns", "trailing.csv", text("id,text" + "," * 1000 + "\n1,a" + "," * 1000 + "\n"),
         Accept(["id", "text"], [{"id": "1", "text": "a"}])),
    Case("csv-mixed-line-endings", "endings.csv", raw(b"id,text\r\n1,a\r2,b\n3,c"),
         Accept(["id", "text"], [{"id": "1", "text": "a"}, {"id": "2", "text": "b"},
                                 {"id": "3", "text": "c"}])),
    Case("csv-quoted-newlines-and-formulas", "cells.csv",
         raw(b'id,text\n1,"two\r\nlines, one ""quote"""\n2,=HYPERLINK("http://x")\n3,+1\n4, 007 \n'),
         Accept(["id", "text"], [{"id": "1", "text": 'two\r\nlines, one "quote"'},
                                 {"id": "2", "text": '=HYPERLINK("http://x")'},
                                 {"id": "3", "text": "+1"}, {"id": "4", "text": " 007 "}])),
    Case("csv-cell-at-the-limit", "limit.csv", _once(lambda: b"id,text\n1," + b"a" * CELL_MAX + b"\n"),
         Accept(["id", "text"], [{"id": "1", "text": "a" * CELL_MAX}])),
    Case("csv-cell-over-the-limit", "over.csv",
         _once(lambda: b"id,text\n1," + b"a" * (CELL_MAX + 1) + b"\n"),
         Refuse(("over.csv, line 2", "column 'text'", "1,000,001 characters", "shorten")),
         bomb=True),
    Case("csv-huge-line", "line.csv", _once(lambda: b"id,text\n1," + b"b" * (LINE_MAX + 10) + b"\n"),
         Refuse(("line.csv, line 2", "longer than 4,000,000 characters", "break")), bomb=True),
    Case("csv-huge-quoted-multiline-cell", "multi.csv",
         _once(lambda: b'id,text\n1,"' + (b"c" * 999 + b"\n") * 3000 + b'"\n'),
         Refuse(("multi.csv, line 2", "longer than the limit of 1,000,000", "shorten")), bomb=True),
    Case("csv-rows-over-limit", "many.csv", text("id\n" + "".join(f"{i}\n" for i in range(101))),
         Refuse(("many.csv has more than 100 data rows", "line 102", "JURYBOX_MAX_ROWS")),
         limits=ImportLimits(max_rows=100)),
    Case("csv-decoded-over-limit", "heavy.csv", text("id,text\n" + "1,xxxxxxxxxx\n" * 2000),
         Refuse(("heavy.csv decodes to more than 100.0 KB", "line", "JURYBOX_MAX_DECODED_MB")),
         limits=ImportLimits(max_decoded_bytes=100 * 1024)),
    # ---- JSON Lines
    Case("jsonl-deeply-nested", "deep.jsonl", text('{"a": ' + _deep("[", "]", 100_000) + "}\n"),
         Refuse(("deep.jsonl, line 1", "nested too deeply", "flatten")), bomb=True),
    Case("jsonl-nested-past-limit", "nest.jsonl", text('{"a": ' + _deep("[", "]", 100) + "}\n"),
         Refuse(("nest.jsonl, line 1", "more than 64 levels", "JURYBOX_MAX_JSON_DEPTH"))),
    Case("jsonl-nested-at-limit", "nest63.jsonl", text('{"a": ' + _deep("[", "]", 63) + "}\n"),
         Accept(["a"], [{"a": json.loads(_deep("[", "]", 63))}])),
    Case("jsonl-huge-integer", "digits.jsonl", text('{"id": 1}\n{"id": ' + "9" * 5000 + "}\n"),
         Refuse(("digits.jsonl, line 2", "4,300", "in quotes"))),
    Case("jsonl-lone-surrogate", "half.jsonl", text('{"id": 1, "text": "bad \\ud800 half"}\n'),
         Refuse(("half.jsonl, line 1", "column 'text'", "lone surrogate", "fix the escape"))),
    Case("jsonl-lone-surrogate-key", "halfkey.jsonl", text('{"id": 1, "\\udfff": 2}\n'),
         Refuse(("halfkey.jsonl, line 1", "lone surrogate"))),
    Case("jsonl-surrogate-pair", "pair.jsonl", text('{"id": 1, "text": "\\ud83d\\ude00"}\n'),
         Accept(["id", "text"], [{"id": 1, "text": "😀"}])),
    Case("jsonl-duplicate-key", "dupkey.jsonl", text('{"id": 1, "text": "a"}\n{"id": 2, "text": "b", "text": "c"}\n'),
         Refuse(("dupkey.jsonl, line 2", "'text' appears twice", "remove or rename"))),
    Case("jsonl-nested-duplicate-key", "dupdeep.jsonl", text('{"id": 1, "meta": {"k": 1, "k": 2}}\n'),
         Refuse(("dupdeep.jsonl, line 1", "'k' appears twice"))),
    Case("jsonl-infinity", "inf.jsonl", text('{"id": 1, "score": Infinity}\n'),
         Refuse(("inf.jsonl, line 1", "'Infinity' is not a finite number", "in quotes"))),
    Case("jsonl-overflowing-float", "big.jsonl", text('{"id": 1, "score": 1e999}\n'),
         Refuse(("big.jsonl, line 1", "'1e999' is not a finite number"))),
    Case("jsonl-nan-is-missing", "nan.jsonl", text('{"id": 1, "score": NaN}\n'),
         Accept(["id", "score"], [{"id": 1, "score": None}])),
    Case("jsonl-blank-key", "blank.jsonl", text('{"id": 1, " ": "x"}\n'),
         Refuse(("blank.jsonl, line 1", "blank name", "give it a name"))),
    Case("jsonl-mixed-types", "mixed.jsonl",
         jsonl('{"id": "a", "v": 1}', '{"id": "b", "v": "1"}', '{"id": "c", "v": [1, {"x": null}]}',
               '{"id": "d", "v": null, "extra": true}', '{"id": "e", "v": 1.5}'),
         Accept(["id", "v", "extra"], [
             {"id": "a", "v": 1, "extra": None}, {"id": "b", "v": "1", "extra": None},
             {"id": "c", "v": [1, {"x": None}], "extra": None},
             {"id": "d", "v": None, "extra": True}, {"id": "e", "v": 1.5, "extra": None}])),
    Case("jsonl-not-an-object", "scalar.jsonl", jsonl('{"id": 1}', '"just text"'),
         Refuse(("scalar.jsonl, line 2", "a string", "each line must be one json object"))),
    Case("jsonl-garbage-line", "garbage.jsonl", jsonl('{"id": 1}', '{"id": 2} trailing'),
         Refuse(("garbage.jsonl, line 2", "invalid JSON", "each line must be"))),
    Case("jsonl-crlf-and-separators", "crlf.jsonl",
         raw('{"id": 1, "text": "a\u2028b\x85c"}\r\n{"id": 2, "text": "d"}\r\n'.encode()),
         Accept(["id", "text"], [{"id": 1, "text": "a\u2028b\x85c"}, {"id": 2, "text": "d"}])),
    Case("jsonl-long-string", "long.jsonl", _once(lambda: b'{"text": "' + b"q" * 2_000_000 + b'"}\n'),
         Refuse(("long.jsonl, line 1", "column 'text'", "2,000,000 characters", "shorten")),
         bomb=True),
    Case("jsonl-too-many-keys", "keys.jsonl",
         text(json.dumps({f"k{i}": i for i in range(300)}) + "\n"
              + json.dumps({f"j{i}": i for i in range(300)}) + "\n"),
         Refuse(("keys.jsonl has 501 columns", "by line 2", "limit of 500"))),
    Case("jsonl-empty-objects", "hollow.jsonl", jsonl("{}", "{}"),
         Refuse(("hollow.jsonl has rows but no columns", "check that you chose"))),
    Case("jsonl-utf16-bom", "wide.jsonl", text('{"id": 1, "text": "ü"}\n', "utf-16"),
         Accept(["id", "text"], [{"id": 1, "text": "ü"}])),
    # ---- JSON (one array)
    Case("json-deeply-nested", "deep.json", text("[" + '{"a": ' + _deep("[", "]", 100_000) + "}]"),
         Refuse(("deep.json, element 1", "nested too deeply", "flatten")), bomb=True),
    Case("json-huge-integer", "digits.json", text('[{"id": ' + "1" * 5000 + "}]"),
         Refuse(("digits.json, element 1", "4,300", "in quotes"))),
    Case("json-duplicate-key", "dupkey.json", text('[\n{"id": 1},\n{"id": 2, "id": 3}\n]'),
         Refuse(("dupkey.json, element 2 (line 3)", "'id' appears twice"))),
    Case("json-trailing-comma", "comma.json", text('[\n{"id": 1},\n]'),
         Refuse(("comma.json", "invalid JSON on line 3, column 1", "fix the json"))),
    Case("json-never-closed", "open.json", text('[{"id": 1},\n{"id": 2}'),
         Refuse(("open.json", "invalid JSON on line 2", "never closed", "close the array"))),
    Case("json-extra-after-array", "extra.json", text('[{"id": 1}]\n[{"id": 2}]'),
         Refuse(("extra.json", "line 2, column 1", "extra data", "remove what follows"))),
    Case("json-wrapped-in-object", "wrapped.json", text('{"rows": [{"id": 1}]}'),
         Refuse(("wrapped.json holds an object", "'rows'", "upload that list alone"))),
    Case("json-lines-named-json", "lines.json", jsonl('{"id": 1}', '{"id": 2}'),
         Refuse(("lines.json", "line 2", "name it .jsonl"))),
    Case("json-huge-element", "huge.json",
         _once(lambda: b'[{"a": "' + b"x" * 900_000 + b'", "b": "' + b"x" * 900_000 + b'", "c": "'
               + b"x" * 900_000 + b'", "d": "' + b"x" * 900_000 + b'", "e": "' + b"x" * 900_000
               + b'"}]'),
         Refuse(("huge.json, element 1 (line 1)", "longer than 4,000,000 characters")), bomb=True),
    Case("json-bom-and-mixed", "mixed.json",
         text('\ufeff[{"id": "a", "n": 1}, {"id": "b", "n": -0.5, "deep": {"x": [true]}}]'),
         Accept(["id", "n", "deep"], [{"id": "a", "n": 1, "deep": None},
                                      {"id": "b", "n": -0.5, "deep": {"x": [True]}}])),
    # ---- XLSX
    Case("xlsx-150mb-shared-string", "bomb.xlsx", _once(_xlsx_shared_bomb),
         Refuse(("bomb.xlsx, row 2, column B ('text')", "longer than the limit of 1,000,000",
                 "shorten")), bomb=True),
    Case("xlsx-150mb-inline-string", "inline.xlsx", _once(_xlsx_inline_bomb),
         Refuse(("inline.xlsx, row 2, column A ('id')", "longer than the limit")), bomb=True),
    Case("xlsx-endless-attribute", "attr.xlsx", _once(_xlsx_attribute_bomb),
         Refuse(("attr.xlsx: the workbook is damaged", "tag longer than 1 MB", "save it again")),
         bomb=True),
    Case("xlsx-150mb-comment", "comment.xlsx", _xlsx_markup_bomb(b"<!--", b"-->"),
         Refuse(("comment.xlsx: the workbook is damaged", "xml comment or processing instruction",
                 "save it again")), bomb=True),
    Case("xlsx-150mb-processing-instruction", "pi.xlsx", _xlsx_markup_bomb(b"<?x ", b"?>"),
         Refuse(("pi.xlsx: the workbook is damaged", "processing instruction")), bomb=True),
    Case("xlsx-endless-nesting", "nest.xlsx", _once(_xlsx_nesting_bomb),
         Refuse(("nest.xlsx: the workbook is damaged", "nests more than 256 elements deep")),
         bomb=True),
    Case("xlsx-cdata-and-entities", "cdata.xlsx",
         lambda: xlsx_bytes(sheet_rows(HEADER, [num("A2", "1"), '<c r="B2" t="inlineStr"><is><t>'
                                               '<![CDATA[a<b & c]]> &amp; &#x1F600;</t></is></c>'])),
         Accept(["id", "text"], [{"id": 1, "text": "a<b & c & 😀"}])),
    Case("xlsx-bom-and-declaration", "bom.xlsx",
         lambda: xlsx_bytes(b"", extra={"xl/worksheets/sheet1.xml": b'\xef\xbb\xbf<?xml version="1.0"'
                                        b' encoding="UTF-8"?>\r\n' + MAIN + b"<sheetData>"
                                        + sheet_rows(HEADER, [num("A2", "5")])
                                        + b"</sheetData></worksheet>"}),
         Accept(["id", "text"], [{"id": 5, "text": None}])),
    Case("xlsx-made-up-encoding", "wtf.xlsx",
         lambda: xlsx_bytes(b"", extra={"xl/worksheets/sheet1.xml": b'<?xml version="1.0" encoding='
                                        b'"WTF-8"?>' + MAIN + b"<sheetData>"
                                        + sheet_rows(HEADER, [num("A2", "5")])
                                        + b"</sheetData></worksheet>"}),
         Accept(["id", "text"], [{"id": 5, "text": None}])),
    Case("xlsx-300k-empty-shared-strings", "sst.xlsx", _once(_xlsx_many_shared_strings),
         Refuse(("sst.xlsx decodes to more than 8.0 MB", "shared string", "JURYBOX_MAX_DECODED_MB")),
         limits=ImportLimits(max_decoded_bytes=8 * MB), bomb=True),
    Case("xlsx-100k-empty-rows", "rows.xlsx", _once(_xlsx_empty_rows),
         Accept(["id", "text"], [{"id": 7, "text": "last"}]), bomb=True),
    Case("xlsx-zip-directory-bomb", "dir.xlsx", _once(_zip_directory_bomb),
         Refuse(("dir.xlsx could not be read as an Excel workbook", "40,000 parts", "save it as .xlsx")),
         bomb=True),
    Case("xlsx-malformed-sheet-xml", "broken.xlsx",
         lambda: xlsx_bytes(sheet_rows(HEADER) + b'<row r="2"><c r="A2"><v>1</v></row>'),
         Refuse(("broken.xlsx: the workbook is damaged", "not well-formed XML", "mismatched tag",
                 "line 2, column 231", "save it again"))),
    Case("xlsx-doctype-entities", "laughs.xlsx",
         lambda: xlsx_bytes(b"", extra={"xl/worksheets/sheet1.xml":
                                        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa">'
                                        b'<!ENTITY b "&a;&a;&a;&a;">]>' + MAIN
                                        + b"<sheetData/></worksheet>"}),
         Refuse(("laughs.xlsx: the workbook is damaged", "DOCTYPE"))),
    Case("xlsx-truncated", "cut.xlsx", _truncated(workbook([["id"], [1]])),
         Refuse(("cut.xlsx could not be read as an Excel workbook", "save it as .xlsx"))),
    Case("xlsx-not-a-zip", "fake.xlsx", raw(b"id,text\n1,a\n"),
         Refuse(("fake.xlsx could not be read as an Excel workbook",))),
    Case("xlsx-password-protected", "secret.xlsx", raw(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600),
         Refuse(("secret.xlsx could not be read", "not password-protected"))),
    Case("xlsx-formula-without-result", "formula.xlsx", workbook([["id", "total"], [1, "=1+1"]]),
         Refuse(("formula.xlsx, row 2, column B ('total')", "formula (=1+1)", "no saved result",
                 "open the file in excel or libreoffice and save it", "export the sheet as csv"))),
    Case("xlsx-formula-with-result", "cached.xlsx",
         lambda: xlsx_bytes(sheet_rows(HEADER, [num("A2", "1"), '<c r="B2" t="str"><f>"a"&amp;"b"'
                                                '</f><v>ab</v></c>'])),
         Accept(["id", "text"], [{"id": 1, "text": "ab"}])),
    Case("xlsx-excel-like-values", "excel.xlsx",
         lambda: xlsx_bytes(
             sheet_rows(['<c r="A1" t="s"><v>0</v></c>', '<c r="B1" t="s"><v>1</v></c>',
                         '<c r="C1" t="s"><v>2</v></c>', '<c r="D1" t="s"><v>3</v></c>'],
                        [num("A2", "1"), '<c r="B2" t="s"><v>4</v></c>', num("C2", "45292.5", 1),
                         '<c r="D2" t="b"><v>1</v></c>'],
                        [num("A3", "2.5"), '<c r="B3" t="e"><v>#N/A</v></c>', num("C3", "0.25", 2),
                         '<c r="D3" t="b"><v>0</v></c>']),
             shared=b"<si><t>id</t></si><si><t>text</t></si><si><t>when</t></si><si><t>ok</t></si>"
                    b'<si><r><t>rich </t></r><r><t xml:space="preserve">text </t></r>'
                    b"<rPh><t>PHONETIC</t></rPh></si>",
             styles=styles_xml(0, 22, 164, custom={164: "h:mm"})),
         Accept(["id", "text", "when", "ok"], [
             {"id": 1, "text": "rich text ", "when": "2024-01-01T12:00:00", "ok": True},
             {"id": 2.5, "text": "#N/A", "when": "06:00:00", "ok": False}])),
    Case("xlsx-missing-sheet-part", "lost.xlsx",
         lambda: xlsx_bytes(b"", extra={"xl/_rels/workbook.xml.rels":
                                        b'<Relationships xmlns="http://schemas.openxmlformats.org/'
                                        b'package/2006/relationships"><Relationship Id="rId1" '
                                        b'Type="http://x/worksheet" Target="worksheets/gone.xml"/>'
                                        b"</Relationships>"}),
         Refuse(("lost.xlsx: the workbook is damaged", "'xl/worksheets/gone.xml' is missing"))),
    Case("xlsx-shared-string-missing", "index.xlsx",
         lambda: xlsx_bytes(sheet_rows(HEADER, [num("A2", "1"), '<c r="B2" t="s"><v>9</v></c>']),
                            shared=b"<si><t>only</t></si>"),
         Refuse(("index.xlsx: the workbook is damaged", "row 2, column B", "shared string '9'"))),
    Case("xlsx-value-in-column-xfd", "far.xlsx",
         lambda: xlsx_bytes(sheet_rows(HEADER, [num("A2", "1"), num("XFD2", "5")])),
         Refuse(("far.xlsx has 16,384 columns", "row 2 has a value in column XFD", "limit of 500"))),
    Case("xlsx-huge-integer", "digits.xlsx",
         lambda: xlsx_bytes(sheet_rows(HEADER, [num("A2", "9" * 5000)])),
         Refuse(("digits.xlsx, row 2, column A ('id')", "5,000 digits", "format the cell as text"))),
    Case("xlsx-date-out-of-range", "date.xlsx",
         lambda: xlsx_bytes(sheet_rows(HEADER, [num("A2", "1e10", 1)]), styles=styles_xml(0, 14)),
         Refuse(("date.xlsx, row 2, column A ('id')", "formatted as a date", "not a date"))),
    Case("xlsx-cell-twice", "twice.xlsx",
         lambda: xlsx_bytes(sheet_rows(HEADER, [num("A2", "1"), num("A2", "2")])),
         Refuse(("twice.xlsx: the workbook is damaged", "row 2, column A", "appears twice"))),
    Case("xlsx-duplicate-header", "dup.xlsx", workbook([["id", "id"], [1, 2]]),
         Refuse(("dup.xlsx", "'id' appears more than once", "row 1"))),
    Case("xlsx-rows-over-limit", "many.xlsx", workbook([["id"], *[[i] for i in range(11)]]),
         Refuse(("many.xlsx has more than 10 data rows", "row 12")), limits=ImportLimits(max_rows=10)),
    # ---- Parquet
    Case("parquet-3m-rows", "rows.parquet", parquet(_parquet_rows_bomb, compression="zstd"),
         Refuse(("rows.parquet has 3,000,000 rows", "limit of 500,000", "refused before reading",
                 "JURYBOX_MAX_ROWS")), bomb=True),
    Case("parquet-dictionary-bomb", "dict.parquet", parquet(_parquet_dictionary_bomb, compression="zstd"),
         Refuse(("dict.parquet decodes to more than 256.0 MB", "before the server read it", "split")),
         bomb=True),
    Case("parquet-dictionary-bomb-plain-strings", "dict2.parquet",
         # The same 900 KB value in 20,000 rows of a plain string column: the writer stores it
         # once in a dictionary page; read back, every row holds it (18 GB).
         parquet(_parquet_dictionary_bomb_plain, compression="zstd", store_schema=False),
         Refuse(("dict2.parquet decodes to more than 16.0 MB", "before the server read it")),
         limits=ImportLimits(max_decoded_bytes=16 * MB), bomb=True),
    Case("parquet-over-decoded-limit", "heavy.parquet",
         parquet(lambda: __import__("pyarrow").table({"text": [f"{i:0300d}" for i in range(100_000)]}),
                 compression="zstd"),
         Refuse(("heavy.parquet decompresses to 29.", "limit of 20.0 MB", "refused before",
                 "JURYBOX_MAX_DECODED_MB")), limits=ImportLimits(max_decoded_bytes=20 * MB), bomb=True),
    Case("parquet-50mb-cell-default-limits", "cell2.parquet", parquet(_parquet_long_cell, compression="zstd"),
         Refuse(("cell2.parquet, row group 1, column 'text'", "2 value(s) take 50.0 MB",
                 "longer than the limit of 1,000,000", "shorten")), bomb=True),
    Case("parquet-3mb-cell-among-small", "cell3.parquet",
         parquet(lambda: __import__("pyarrow").table({"text": ["x" * 3 * MB] + ["s"] * 1000})),
         Refuse(("cell3.parquet, row 1, column 'text'", "3,145,728 characters", "shorten")),
         bomb=True),
    Case("parquet-20mb-value-among-small", "hidden20.parquet",
         parquet(lambda: __import__("pyarrow").table({"text": ["x" * 20 * MB] + ["s"] * 100}),
                 compression="zstd"),
         Refuse(("hidden20.parquet, row 1, column 'text'", "20,971,520 characters")), bomb=True),
    Case("parquet-truncated", "cut.parquet", _truncated(parquet(_parquet_nested)),
         Refuse(("cut.parquet could not be read as a Parquet file", "export it again"))),
    Case("parquet-not-parquet", "fake.parquet", raw(b"PAR1 this is not parquet PAR1"),
         Refuse(("fake.parquet could not be read as a Parquet file",))),
    Case("parquet-too-many-columns", "wide.parquet", parquet(_parquet_columns(600)),
         Refuse(("wide.parquet has 600 columns", "in its schema", "limit of 500"))),
    Case("parquet-blank-column-name", "blank.parquet", parquet(_parquet_columns(2, lambda i: " " * i)),
         Refuse(("blank.parquet, in the schema", "blank name", "give it a name"))),
    Case("parquet-duplicate-column-names", "dup.parquet", parquet(_parquet_duplicate_names),
         Refuse(("dup.parquet", "'a' appears more than once", "rename"))),
    Case("parquet-nested-70-levels", "deep.parquet", parquet(_parquet_deep(70)),
         Refuse(("deep.parquet: its columns nest too deeply", "flatten"))),
    Case("parquet-nested-past-limit", "deep20.parquet", parquet(_parquet_deep(20)),
         Refuse(("deep20.parquet: column 'deep' nests more than 16 levels", "flatten")),
         limits=ImportLimits(max_depth=16)),
    Case("parquet-year-11476", "future.parquet", parquet(_parquet_far_future),
         Refuse(("future.parquet, rows 1 to 1", "years 1 to 9999", "store the column as text"))),
    Case("parquet-footer-that-aborts-pyarrow", "abort.parquet", _aborting_parquet,
         Refuse(("abort.parquet could not be read as a Parquet file", "export it again"))),
    Case("parquet-nested-values", "nested.parquet", parquet(_parquet_nested),
         Accept(["id", "tags", "meta"], [{"id": 1, "tags": ["a", "b"], "meta": {"k": 1, "v": "x"}},
                                         {"id": 2, "tags": [], "meta": None}])),
    Case("parquet-typed-values", "typed.parquet", parquet(_parquet_typed),
         Accept(["price", "ratio", "raw", "text"], [
             {"price": "12345678901234567890.12", "ratio": None, "raw": "ff00",
              "text": "\x00 NUL inside"}])),
    # ---- names and sizes
    Case("unsupported-extension", "notes.txt", raw(b"id\n1\n"),
         Refuse(("notes.txt has '.txt'", "supported formats"))),
    Case("legacy-xls", "old.xls", raw(b"\xd0\xcf\x11\xe0"), Refuse(("old.xls", "save the workbook as .xlsx"))),
    Case("file-over-size-limit", "big.csv", text("id\n" + "1\n" * 600),
         Refuse(("big.csv is 1.2 KB", "limit of 1.0 KB", "JURYBOX_MAX_FILE_MB")),
         limits=ImportLimits(max_file_bytes=1024)),
]


# ---------------------------------------------------------------------------------- running


_POOLS: list[Any] = []


@contextmanager
def _arrow_peak() -> Iterator[Callable[[], int]]:
    """Arrow's allocations (invisible to tracemalloc), through a pool of their own."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        yield lambda: 0
        return
    original = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(original)
    _POOLS.append(pool)  # never freed: a buffer Arrow keeps (a cache) may still point to it
    pa.set_memory_pool(pool)
    try:
        yield pool.max_memory
    finally:
        pa.set_memory_pool(original)


def run_case(case: Case, db: Any = None, *, measure: bool | None = None) -> Outcome:
    """Import one hostile file and judge the result against the case's expectation.

    With `db` (an open, empty database), the import goes on as the Datasets page does it: an
    accepted file is saved and read back (it must come back exactly as stated), and after a
    refused one the database must hold no dataset and no item.
    """
    content = case.make()
    measure = case.bomb if measure is None else measure
    outcome = Outcome(case, "import")
    started = time.perf_counter()
    with _arrow_peak() as arrow_peak:
        if measure:
            tracemalloc.start()
        try:
            outcome.parsed = read_dataset(content, filename=case.filename, limits=case.limits)
        except DataError as exc:
            outcome.kind, outcome.message = "error", str(exc)
        except BaseException as exc:  # noqa: BLE001 - counting tracebacks is the point
            outcome.kind, outcome.message = "traceback", f"{type(exc).__name__}: {exc}"[:500]
        finally:
            if measure:
                outcome.python_peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                outcome.arrow_peak = arrow_peak()
    outcome.seconds = time.perf_counter() - started
    if measure and case.filename.endswith(".parquet"):
        outcome.child_peak = _child_growth(content, case.limits or ImportLimits())
    outcome.problems = _judge(outcome)
    if db is not None and outcome.kind != "traceback":
        outcome.problems += _stored(outcome, db)
    return outcome


def _child_growth(content: bytes, limits: ImportLimits) -> int:
    """Run the Parquet reader's child alone, as the import does, and return how far its
    resident memory rose (the import's own run does not report it)."""
    import subprocess
    import sys

    from storage.datasets.readers import parquet_arrow
    from storage.datasets.readers.parquet import _child_memory

    options = {"max_decoded_bytes": limits.max_decoded_bytes, "max_rows": limits.max_rows,
               "max_columns": limits.max_columns, "max_cell_chars": limits.max_cell_chars,
               "limit": None, "memory": _child_memory(limits.max_decoded_bytes)}
    child = subprocess.run([sys.executable, parquet_arrow.__file__, json.dumps(options)],
                           input=content, capture_output=True, check=False)
    return int(json.loads(child.stdout).get("grew", 0)) if child.returncode == 0 else 0


def _stored(outcome: Outcome, db: Any) -> list[str]:
    from storage.datasets.dataset_store import load_items, save_dataset

    if outcome.parsed is not None:
        try:
            saved = save_dataset(db, outcome.parsed, name=outcome.case.id)
        except BaseException as exc:  # noqa: BLE001 - a traceback at the save counts too
            return [f"traceback while saving: {type(exc).__name__}: {exc}"[:500]]
        back = [item.fields for item in load_items(db, saved.id)]
        if back != [item.fields for item in outcome.parsed.items]:
            return [f"silent change in storage: read back {_short(back)}"]
        return []
    counts = [db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
              for table in ("datasets", "items")]
    return [f"half-written: {counts} datasets and items after a refusal"] if any(counts) else []


def _judge(outcome: Outcome) -> list[str]:
    case, expect = outcome.case, outcome.case.expect
    if outcome.kind == "traceback":
        return [f"traceback: {outcome.message}"]
    problems = []
    if isinstance(expect, Refuse):
        if outcome.kind == "import":
            return ["silent change: imported a file that must be refused"]
        message = outcome.message
        missing = [part for part in (case.filename, *expect.says) if part.lower() not in message.lower()]
        if missing:
            problems.append(f"unclear error: {missing} not in {message!r}")
        if not any(action in message.lower() for action in ACTIONS):
            problems.append(f"unclear error: says nothing to do: {message!r}")
    else:
        if outcome.kind == "error":
            return [f"refused a good file: {outcome.message}"]
        parsed = outcome.parsed
        assert parsed is not None
        rows = [item.fields for item in parsed.items]
        if parsed.columns != expect.columns or rows != expect.rows:
            problems.append(f"silent change: got {parsed.columns} {_short(rows)}")
    if case.bomb and outcome.peak > MEMORY_BOUND:
        problems.append(f"memory: peak {outcome.peak / MB:.0f} MB")
    if case.bomb and outcome.child_peak > MEMORY_BOUND:
        problems.append(f"memory: the Parquet child's peak {outcome.child_peak / MB:.0f} MB")
    return problems


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:297] + "..."


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    """The matrix figures."""
    bombs = [o for o in outcomes if o.case.bomb]
    worst = max(bombs, key=lambda o: o.peak) if bombs else None
    return {
        "files": len(outcomes),
        "clean_errors": sum(o.kind == "error" and not o.problems for o in outcomes),
        "correct_imports": sum(o.kind == "import" and not o.problems for o in outcomes),
        "tracebacks": sum(o.kind == "traceback" for o in outcomes),
        "silent_changes": sum(any(p.startswith("silent change") for p in o.problems)
                              for o in outcomes),
        "half_written": sum(any(p.startswith("half-written") for p in o.problems)
                            for o in outcomes),
        "other_problems": sum(bool(o.problems) and o.kind != "traceback" and not any(
            p.startswith(("silent change", "half-written")) for p in o.problems)
            for o in outcomes),
        "bombs": len(bombs),
        "worst_bomb": worst.case.id if worst else None,
        "worst_bomb_peak_mb": round(worst.peak / MB, 1) if worst else None,
        "worst_parquet_child_peak_mb": round(max((o.child_peak for o in bombs), default=0) / MB, 1),
    }


def _resident() -> tuple[int, int]:
    """(resident, peak resident) bytes of this process, from /proc (Linux)."""
    fields = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


def rss_peak(case: Case) -> int | None:
    """How far the resident memory of a fresh process rises while it imports the case's file
    (None where Linux's /proc/self/clear_refs cannot reset the peak). Unlike tracemalloc, this
    sees every allocation: zlib, expat, Arrow."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/{case.filename}"
        with open(path, "wb") as handle:
            handle.write(case.make())
        child = subprocess.run(
            [sys.executable, "-m", "tests.hostile_imports", "--rss-child", case.id, path],
            capture_output=True, text=True, check=False,
        )
    lines = child.stdout.strip().splitlines()
    return int(lines[-1]) if child.returncode == 0 and lines and lines[-1].isdigit() else None


def _rss_child(case_id: str, path: str) -> None:
    case = next(c for c in CASES if c.id == case_id)
    with open(path, "rb") as handle:
        content = handle.read()  # read before the peak is reset: the file is not the import
    read_dataset(b"id\n1\n", filename="warm.csv")  # load the readers' modules first
    if case.filename.endswith(".parquet"):
        import pyarrow.parquet  # noqa: F401 - imported lazily by the reader: not its memory
    if case.filename.endswith(".xlsx"):
        import openpyxl.styles.numbers  # noqa: F401
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")  # reset the peak resident size to the current one
    except OSError:
        return
    before, _ = _resident()
    try:
        read_dataset(content, filename=case.filename, limits=case.limits)
    except DataError:
        pass
    _, peak = _resident()
    print(peak - before)


def main() -> None:
    import sys
    import tempfile

    from storage.db import open_db

    if sys.argv[1:2] == ["--rss-child"]:
        _rss_child(sys.argv[2], sys.argv[3])
        return
    with_rss = "--rss" in sys.argv[1:]
    outcomes = []
    rss: dict[str, int | None] = {}
    for case in CASES:
        with tempfile.TemporaryDirectory() as folder:
            db = open_db(f"{folder}/hostile.db")
            try:
                outcome = run_case(case, db)
            finally:
                db.close()
        outcomes.append(outcome)
        peak = f" peak {outcome.peak / MB:6.1f} MB" if case.bomb else ""
        if outcome.child_peak:
            peak += f" (child {outcome.child_peak / MB:.1f} MB)"
        if case.bomb and with_rss:
            rss[case.id] = rss_peak(case)
            grown = rss[case.id]
            peak += f", resident +{grown / MB:6.1f} MB" if grown is not None else ", resident ?"
        verdict = "; ".join(outcome.problems) or "ok"
        print(f"{case.id:40s} {outcome.kind:9s} {outcome.seconds:6.2f} s{peak}  {verdict}")
    figures = summary(outcomes)
    if rss and any(v is not None for v in rss.values()):
        worst = max((k for k in rss if rss[k] is not None), key=lambda k: rss[k] or 0)
        figures["worst_bomb_resident"] = worst
        figures["worst_bomb_resident_mb"] = round((rss[worst] or 0) / MB, 1)
    print("hostile imports:", json.dumps(figures))


if __name__ == "__main__":
    main()
