"""Dataset import: every format round trip, encodings, and the bad-input matrix."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from judging.errors import DataError
from storage.datasets.importing import (
    SUPPORTED_EXTENSIONS,
    SUPPORTED_FORMATS,
    ImportLimits,
    ParsedDataset,
    preview_dataset,
    read_dataset,
    suggest_columns,
)
from tests.fixtures_import import write_dataset_file

ROWS: list[dict[str, Any]] = [
    {"id": "a1", "text": 'Commas, "quotes"\nand a newline', "gold": "yes", "score": 1},
    {"id": "a2", "text": "Ünïcödé — 日本語 ✓", "gold": "no", "score": 2},
    {"id": "a3", "text": "no gold here", "gold": None, "score": 3},
]
FORMATS = ["csv", "tsv", "jsonl", "ndjson", "json", "parquet", "xlsx"]


def _error(source: Any, **kwargs: Any) -> str:
    with pytest.raises(DataError) as info:
        read_dataset(source, **kwargs)
    return str(info.value)


# ---------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("ext", FORMATS)
def test_every_format_round_trips(tmp_path: Path, ext: str) -> None:
    path = write_dataset_file(tmp_path / f"items.{ext.upper()}", ROWS)  # extension case ignored
    data = read_dataset(path, id_column="id", gold_column="gold")

    assert isinstance(data, ParsedDataset)
    assert data.format == SUPPORTED_EXTENSIONS[ext]
    assert data.filename == f"items.{ext.upper()}"
    assert data.columns == ["id", "text", "gold", "score"]
    assert data.fields == ["text", "score"]
    assert data.n_rows == 3
    assert [i.id for i in data.items] == ["a1", "a2", "a3"]
    assert [i.gold for i in data.items] == ["yes", "no", None]
    assert [i.fields["text"] for i in data.items] == [r["text"] for r in ROWS]
    # CSV/TSV cells stay text; typed formats keep their numbers.
    expected_scores = ["1", "2", "3"] if ext in ("csv", "tsv") else [1, 2, 3]
    assert [i.fields["score"] for i in data.items] == expected_scores
    assert data.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    json.dumps([i.fields for i in data.items])  # fields must be JSON-serialisable


@pytest.mark.parametrize("ext", FORMATS)
def test_bytes_and_path_give_the_same_dataset(tmp_path: Path, ext: str) -> None:
    path = write_dataset_file(tmp_path / f"items.{ext}", ROWS)
    from_path = read_dataset(path, id_column="id")
    from_bytes = read_dataset(path.read_bytes(), filename=f"items.{ext}", id_column="id")
    assert from_bytes == from_path


def test_same_bytes_same_hash_and_one_byte_changes_it(tmp_path: Path) -> None:
    raw = b"id,text\n1,a\n2,b\n"
    first = read_dataset(raw, filename="a.csv")
    again = read_dataset(raw, filename="renamed.csv")
    changed = read_dataset(raw.replace(b"b", b"c"), filename="a.csv")
    assert first.content_hash == again.content_hash == hashlib.sha256(raw).hexdigest()
    assert changed.content_hash != first.content_hash


def test_csv_keeps_text_as_text() -> None:
    raw = b'id,text,gold\n007,NA,null\n008,,""\n009,  spaced  ,  yes  \n'
    data = read_dataset(raw, filename="a.csv", id_column="id", gold_column="gold")
    assert [i.id for i in data.items] == ["007", "008", "009"]  # leading zeros kept
    assert [i.fields["text"] for i in data.items] == ["NA", "", "  spaced  "]
    # "null" is a label like any other; an empty gold cell means no gold label.
    assert [i.gold for i in data.items] == ["null", None, "yes"]


def test_generated_ids_are_by_position_and_stable() -> None:
    raw = b"text\nsame\nsame\nother\n"  # identical rows must still get distinct ids
    first = read_dataset(raw, filename="a.csv")
    again = read_dataset(raw, filename="a.csv")
    assert first.id_column is None
    assert [i.id for i in first.items] == ["row-000001", "row-000002", "row-000003"]
    assert [i.id for i in again.items] == [i.id for i in first.items]


def test_fields_mapping_selects_columns() -> None:
    raw = b"id,question,answer,gold,notes\n1,q,a,yes,n\n"
    data = read_dataset(
        raw, filename="a.csv", id_column="id", gold_column="gold", fields=["answer", "question"]
    )
    assert data.fields == ["answer", "question"]
    assert data.items[0].fields == {"answer": "a", "question": "q"}
    assert data.columns == ["id", "question", "answer", "gold", "notes"]


def test_header_names_are_stripped_and_blank_rows_skipped() -> None:
    raw = b"\n id , text \r\n1,a\r\n\r\n,\r\n2,b\r\n"
    data = read_dataset(raw, filename="a.csv", id_column="id")
    assert data.columns == ["id", "text"]
    assert [(i.id, i.fields["text"]) for i in data.items] == [("1", "a"), ("2", "b")]


def test_unnamed_empty_columns_are_dropped() -> None:
    data = read_dataset(b"id,text,,\n1,a,,\n2,b,,\n", filename="a.csv", id_column="id")
    assert data.columns == ["id", "text"]


def test_long_csv_field_is_read_whole() -> None:
    big = "x" * 300_000  # above the csv module's default 128 KB field limit
    data = read_dataset(f"id,text\n1,{big}\n".encode(), filename="a.csv")
    assert data.items[0].fields["text"] == big


def test_multiline_values_keep_line_numbers_right() -> None:
    raw = b'id,text\n1,"two\nlines"\n2,b,extra\n'
    assert "line 4" in _error(raw, filename="a.csv")


def test_typed_values_become_plain_python(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame(
        {
            "id": [1.0, 2.0],  # float ids, as pandas makes them: "1", not "1.0"
            "when": pd.to_datetime(["2024-01-02 00:00:00", "2024-03-04 05:06:07"]),
            "maybe": [1.5, float("nan")],
            "count": pd.array([1, None], dtype="Int64"),
            "flag": [True, False],
        }
    )
    frame.to_parquet(tmp_path / "t.parquet")
    data = read_dataset(tmp_path / "t.parquet", id_column="id", gold_column="flag")
    assert [i.id for i in data.items] == ["1", "2"]
    assert [i.gold for i in data.items] == ["true", "false"]
    first, second = (i.fields for i in data.items)
    assert first == {"when": "2024-01-02T00:00:00", "maybe": 1.5, "count": 1}
    assert second == {"when": "2024-03-04T05:06:07", "maybe": None, "count": None}
    for value in (*first.values(), *second.values()):
        assert value is None or type(value) in (str, int, float)


def test_numpy_scalars_and_nan_become_python_values() -> None:
    import numpy as np
    import pandas as pd

    from storage.datasets.readers import plain

    values = plain({"i": np.int64(3), "f": np.float32(0.5), "nan": np.float64("nan"),
                     "b": np.bool_(True), "a": np.array([1, 2]), "na": pd.NA, "nat": pd.NaT})
    assert values == {"i": 3, "f": 0.5, "nan": None, "b": True, "a": [1, 2], "na": None,
                      "nat": None}
    assert [type(v) for v in values.values()][:5] == [int, float, type(None), bool, list]


def test_xlsx_header_may_start_below_and_right(tmp_path: Path) -> None:
    import datetime as dt

    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet["B3"], sheet["C3"] = "id", "when"
    sheet["B4"], sheet["C4"] = 7, dt.datetime(2024, 5, 6, 7, 8)
    workbook.save(tmp_path / "w.xlsx")
    data = read_dataset(tmp_path / "w.xlsx", id_column="id")
    assert data.columns == ["id", "when"]
    assert data.items[0].id == "7"
    assert data.items[0].fields == {"when": "2024-05-06T07:08:00"}


def test_json_nested_values_and_missing_keys() -> None:
    raw = b'{"id": "a", "meta": {"k": [1, 2]}}\n\n{"id": "b", "text": "t"}\n'
    data = read_dataset(raw, filename="a.jsonl", id_column="id")
    assert data.columns == ["id", "meta", "text"]
    assert data.items[0].fields == {"meta": {"k": [1, 2]}, "text": None}
    assert data.items[1].fields == {"meta": None, "text": "t"}


def test_jsonl_lines_split_only_on_newlines() -> None:
    # JSON allows U+2028 and NEL unescaped inside strings; they do not end a JSONL record.
    raw = '{"id": "a", "text": "one\u2028two\x85three"}\r\n{"id": "b", "text": "x"}'.encode()
    data = read_dataset(raw, filename="a.jsonl", id_column="id")
    assert [i.fields["text"] for i in data.items] == ["one\u2028two\x85three", "x"]


# ----------------------------------------------------------------------------------- encodings

TEXT = "id,text\n1,café naïve\n2,“quoted” – 5€\n"


@pytest.mark.parametrize(
    ("raw", "encoding"),
    [
        (TEXT.encode("utf-8"), "utf-8"),
        (TEXT.encode("utf-8-sig"), "utf-8-sig"),
        (TEXT.encode("utf-16"), "utf-16"),  # with BOM, native order
        (b"\xfe\xff" + TEXT.encode("utf-16-be"), "utf-16"),
        (b"\xff\xfe" + TEXT.encode("utf-16-le"), "utf-16"),
        (TEXT.encode("utf-32"), "utf-32"),
    ],
    ids=["utf8", "utf8-bom", "utf16", "utf16-be", "utf16-le", "utf32"],
)
def test_unicode_encodings_are_read(raw: bytes, encoding: str) -> None:
    data = read_dataset(raw, filename="a.csv", id_column="id")
    assert data.encoding == encoding
    assert data.columns == ["id", "text"]  # no BOM left on the first column name
    assert [i.fields["text"] for i in data.items] == ["café naïve", "“quoted” – 5€"]


def test_western_single_byte_text_is_detected_as_cp1252() -> None:
    # Latin-1 and Windows-1252 agree on these bytes; the curly quotes and € are 1252 only.
    latin1 = read_dataset("id,text\n1,café naïve Müller\n".encode("latin-1"), filename="a.csv")
    cp1252 = read_dataset(TEXT.encode("cp1252"), filename="a.csv")
    assert latin1.encoding == cp1252.encoding == "cp1252"
    assert latin1.items[0].fields["text"] == "café naïve Müller"
    assert cp1252.items[1].fields["text"] == "“quoted” – 5€"


WESTERN = [
    "Où est la façade ? Ça va, à bientôt.",
    "Die Straße, die Größe, übel und schön.",
    "El año pasado, ¿sí o no? ¡Olé!",
    "Não, então é só isso.",
    "Ærøskøbing på Ærø, Åland, Øresund.",
    "«Guillemets», 10 °C, ½ cup, © 2024, 3 × 4 ÷ 2, naïve café… — fin",
]


@pytest.mark.parametrize("sentence", WESTERN)
def test_western_languages_are_not_mistaken_for_other_encodings(sentence: str) -> None:
    raw = f"id,text\n1,\"{sentence}\"\n".encode("cp1252")
    data = read_dataset(raw, filename="a.csv")
    assert data.encoding == "cp1252"
    assert data.items[0].fields["text"] == sentence


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("id,text\n1,日本語のテキスト\n2,東京\n", "shift_jis"),
        ("id,text\n1,中文文本\n2,北京\n", "gbk"),
        ("id,text\n1,Привет мир\n", "cp1251"),
        # Each of these is caught by one sign alone (see storage.datasets.importing._as_cp1252):
        ("id,label\n1,да\n2,нет\n", "cp1251"),  # "äà": a word with no ASCII letter
        ("id,text\n1,北京\n", "gbk"),  # "±±¾©": four non-ASCII characters in a row
        ("id,text\n1,ソ\n", "shift_jis"),  # "ƒ\\": a character Western text hardly uses
    ],
    ids=["shift-jis", "gbk", "cp1251", "cp1251-short-words", "gbk-long-run", "sjis-unlikely"],
)
def test_other_encodings_are_rejected_not_mangled(text: str, encoding: str) -> None:
    message = _error(text.encode(encoding), filename="a.csv")
    assert "is not UTF-8" in message and "line 2" in message
    assert "Save it as UTF-8" in message


def test_utf16_without_bom_is_rejected() -> None:
    message = _error("id,text\n1,a\n".encode("utf-16-le"), filename="a.csv")
    assert "NUL bytes" in message and "UTF-16" in message


# --------------------------------------------------------------------------- bad-input matrix


def _xlsx_bytes(rows: list[list[Any]]) -> bytes:
    import io

    import openpyxl

    workbook = openpyxl.Workbook()
    for row in rows:
        workbook.active.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _parquet_bytes(columns: dict[str, list[Any]]) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


BAD: list[tuple[str, str, Any, dict[str, Any], list[str]]] = [
    # (case id, file name, content, read_dataset kwargs, substrings the message must hold)
    ("empty", "a.csv", b"", {}, ["a.csv is empty"]),
    ("whitespace-only", "a.csv", b" \n\r\n", {}, ["a.csv is empty"]),
    ("empty-jsonl", "a.jsonl", b"\n\n", {}, ["a.jsonl is empty"]),
    ("header-only-csv", "a.csv", b"id,text\n", {}, ["header (columns: id, text)", "no data rows"]),
    ("header-only-tsv", "a.tsv", b"id\ttext\n\n", {}, ["no data rows"]),
    ("header-only-xlsx", "a.xlsx", _xlsx_bytes([["id", "text"]]), {}, ["no data rows"]),
    ("header-only-parquet", "a.parquet", _parquet_bytes({"id": [], "text": []}), {},
     ["no data rows"]),
    ("empty-json-array", "a.json", b"[]", {}, ["empty array"]),
    ("empty-xlsx", "a.xlsx", _xlsx_bytes([]), {}, ["worksheet", "is empty"]),
    ("ragged-long", "a.csv", b"id,text\n1,a\n2,b,c\n", {},
     ["line 3", "expected 2 fields", "found 3"]),
    ("ragged-short", "a.tsv", b"id\ttext\tgold\n1\ta\tx\n2\tb\n", {},
     ["line 3", "expected 3 fields", "found 2", "tab"]),
    ("unclosed-quote", "a.csv", b'id,text\n1,"never closed\n2,b\n', {},
     ["line 2", "never closed"]),
    ("text-after-quote", "a.csv", b'id,text\n1,"a"b\n', {}, ["line 2", "malformed"]),
    ("duplicate-column", "a.csv", b"id,text,text\n1,a,b\n", {},
     ["'text' appears more than once", "line 1"]),
    ("unnamed-column-with-value", "a.csv", b"id,text,\n1,a,\n2,b,oops\n", {},
     ["line 3", "column 3", "'oops'", "no name"]),
    ("xlsx-value-beyond-header", "a.xlsx", _xlsx_bytes([["id", "text"], [1, "a", "stray"]]), {},
     ["row 2", "'stray'"]),
    ("jsonl-invalid-line", "a.jsonl", b'{"id": 1}\n{"id": 2,}\n', {},
     ["line 2", "invalid JSON"]),
    ("jsonl-not-object", "a.jsonl", b'{"id": 1}\n[1, 2]\n', {}, ["line 2", "an array"]),
    ("jsonl-is-json-array", "a.jsonl", b'[\n  {"id": 1}\n]\n', {}, ["line 1", "name it .json"]),
    ("json-invalid", "a.json", b'[{"id": 1},\n {"id": }]', {}, ["line 2", "invalid JSON"]),
    ("json-object", "a.json", b'{"rows": [{"id": 1}]}', {},
     ["holds an object", "array of objects", "'rows'"]),
    ("json-array-of-scalars", "a.json", b'[{"id": 1}, 2]', {}, ["element 2", "a number"]),
    ("json-lines-named-json", "a.json", b'{"id": 1}\n{"id": 2}\n', {}, ["name it .jsonl"]),
    ("xlsx-unreadable", "a.xlsx", b"PK\x03\x04 not really a zip", {},
     ["could not be read as an Excel workbook"]),
    ("xlsx-is-csv", "a.xlsx", b"id,text\n1,a\n", {}, ["could not be read as an Excel workbook"]),
    ("parquet-unreadable", "a.parquet", b"PAR1 truncated garbage PAR1", {},
     ["could not be read as a Parquet file"]),
    ("unsupported-ext", "a.txt", b"id,text\n1,a\n", {},
     ["'.txt'", "cannot import", ".csv", ".jsonl", ".xlsx"]),
    ("xls", "a.xls", b"\xd0\xcf\x11\xe0", {}, ["'.xls'", "save the workbook as .xlsx"]),
    ("no-extension", "data", b"id\n1\n", {}, ["no extension", "Supported formats"]),
    ("too-large", "a.csv", b"id,text\n" + b"1,a\n" * 100, {"limits": ImportLimits(max_file_bytes=100)},
     ["408 bytes", "limit of 100 bytes"]),
    ("missing-id-column", "a.csv", b"ID,text\n1,a\n", {"id_column": "id"},
     ["id column 'id'", "did you mean 'ID'", "columns are: ID, text"]),
    ("missing-gold-and-field", "a.csv", b"id,text\n1,a\n",
     {"gold_column": "label", "fields": ["text", "body"]},
     ["gold column 'label'", "field 'body'", "columns are: id, text"]),
    ("id-is-gold", "a.csv", b"id,text\n1,a\n", {"id_column": "id", "gold_column": "id"},
     ["both the id and the gold label"]),
    ("empty-ids", "a.csv", b"id,text\n1,a\n,b\n  ,c\n", {"id_column": "id"},
     ["'id' is empty at line 3, line 4", "2 rows"]),
    ("duplicate-ids", "a.csv", b"id,text\n1,a\n2,b\n1,c\n2,d\n1,e\n", {"id_column": "id"},
     ["'1' at line 2 and line 4", "'2' at line 3 and line 5", "3 repeated rows", "2 distinct"]),
    ("duplicate-ids-jsonl", "a.jsonl", b'{"id": 5}\n{"id": 5.0}\n', {"id_column": "id"},
     ["'5' at line 1 and line 2"]),
]


@pytest.mark.parametrize(
    ("name", "raw", "kwargs", "expected"),
    [case[1:] for case in BAD],
    ids=[case[0] for case in BAD],
)
def test_bad_input_is_refused_with_a_message_naming_the_problem(
    name: str, raw: bytes, kwargs: dict[str, Any], expected: list[str]
) -> None:
    message = _error(raw, filename=name, **kwargs)
    for part in expected:
        assert part.lower() in message.lower(), f"{part!r} not in {message!r}"


def test_many_duplicates_are_summarised() -> None:
    raw = b"id\n" + b"".join(b"%d\n%d\n" % (n, n) for n in range(40))
    message = _error(raw, filename="a.csv", id_column="id")
    assert "and 35 more" in message and "40 repeated rows, 40 distinct ids" in message
    assert message.count(" at line ") == 5  # shows a few, not all forty


def test_size_limit_is_checked_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.xlsx"
    path.write_bytes(b"not a workbook at all" * 100)  # would fail to parse if it got that far
    message = _error(path, limits=ImportLimits(max_file_bytes=1024))
    assert "2.1 KB" in message and "limit of 1.0 KB" in message


def test_default_limit_is_200_mb_and_reported_in_mb() -> None:
    class Huge(bytes):
        def __len__(self) -> int:  # size check happens on len(), before any parsing
            return 250 * 1024**2

    message = _error(Huge(b"x"), filename="a.csv")
    assert "250.0 MB" in message and "limit of 200.0 MB" in message


def test_bytes_need_a_filename() -> None:
    assert "filename" in _error(b"id\n1\n")


def test_missing_path_is_a_data_error(tmp_path: Path) -> None:
    assert "No file at" in _error(tmp_path / "nope.csv")


# ------------------------------------------------------------------------ preview and helpers


def test_preview_returns_first_rows_without_checking_ids() -> None:
    raw = b"id,text\n1,a\n1,b\n1,c\n"  # duplicate ids: read_dataset would refuse them
    frame, fmt = preview_dataset(raw, filename="a.csv", n=2)
    assert fmt == "csv"
    assert list(frame.columns) == ["id", "text"]
    assert frame.values.tolist() == [["1", "a"], ["1", "b"]]


@pytest.mark.parametrize("ext", FORMATS)
def test_preview_every_format(tmp_path: Path, ext: str) -> None:
    frame, fmt = preview_dataset(write_dataset_file(tmp_path / f"p.{ext}", ROWS), n=2)
    assert fmt == SUPPORTED_EXTENSIONS[ext]
    assert list(frame.columns) == ["id", "text", "gold", "score"]
    assert frame["id"].tolist() == ["a1", "a2"]


def test_preview_stops_before_a_later_bad_line() -> None:
    raw = b"id,text\n1,a\n2,b\n3,c,oops\n"
    frame, _ = preview_dataset(raw, filename="a.csv", n=2)
    assert len(frame) == 2
    with pytest.raises(DataError, match="line 4"):
        preview_dataset(raw, filename="a.csv", n=5)


def test_supported_formats_cover_every_extension() -> None:
    assert set(SUPPORTED_EXTENSIONS.values()) == set(SUPPORTED_FORMATS)


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (["ID", "text", "Label"], {"id": "ID", "gold": "Label"}),
        (["item_id", "gold", "label"], {"id": "item_id", "gold": "gold"}),
        (["text"], {"id": None, "gold": None}),
    ],
)
def test_suggest_columns(columns: list[str], expected: dict[str, str | None]) -> None:
    assert suggest_columns(columns) == expected


def test_write_dataset_fixture(write_dataset: Any) -> None:
    path = write_dataset(ROWS, name="fixture.jsonl")
    assert read_dataset(path, id_column="id").n_rows == 3


# ------------------------------------------------------------- XLSX: the same values as openpyxl


@pytest.mark.parametrize("mac_epoch", [False, True], ids=["1900", "1904"])
def test_xlsx_values_match_openpyxl(tmp_path: Path, mac_epoch: bool) -> None:
    """The streaming reader gives what openpyxl's own reader gives (the reader it replaced)."""
    import datetime as dt

    import openpyxl
    from openpyxl.utils.datetime import CALENDAR_MAC_1904

    from storage.datasets.readers import plain

    rows = [
        ["id", "when", "day", "clock", "flag", "ratio", "big", "text"],
        [1, dt.datetime(2024, 2, 29, 13, 45, 30), dt.date(1904, 1, 2), dt.time(6, 30),
         True, 0.1, 2**62, "  spaced  "],
        [-2, dt.datetime(1900, 3, 1), dt.date(2099, 12, 31), dt.time(0, 0, 1),
         False, -1.5e-10, 10**15, "naïve\nnewline ✓"],
        [3.25, None, None, None, None, None, None, ""],
    ]
    book = openpyxl.Workbook()
    if mac_epoch:
        book.epoch = CALENDAR_MAC_1904
    for row in rows:
        book.active.append(row)
    path = tmp_path / "typed.xlsx"
    book.save(path)

    reference = openpyxl.load_workbook(path, read_only=True, data_only=True)
    expected = [[plain(v) for v in row] for row in reference.active.iter_rows(values_only=True)]
    reference.close()
    data = read_dataset(path)
    assert data.columns == expected[0]
    got = [[item.fields[c] for c in data.columns] for item in data.items]
    assert got == expected[1:]
