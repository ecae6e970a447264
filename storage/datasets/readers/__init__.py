"""One reader per file format, each turning a file's bytes into a `Table` or a `DataError`.

Every reader counts what it decodes against the import's `Budget` while it reads, and stops
at the first row, column or value past a limit (see `storage.datasets.import_limits`). `read_table`
picks the reader; `storage.datasets.importing` is the public API on top.
"""

from __future__ import annotations

from collections.abc import Iterator

from storage.datasets.import_limits import Budget
from storage.datasets.readers.delimited import delimited_records, read_delimited
from storage.datasets.readers.jsonfiles import jsonl_records, read_json, read_jsonl
from storage.datasets.readers.parquet import parquet_records, read_parquet
from storage.datasets.readers.table import Record, Table, empty_file, plain
from storage.datasets.readers.text_reader import detect_encoding
from storage.datasets.readers.xlsx import read_xlsx

__all__ = ["STREAMED_FORMATS", "Record", "Table", "iter_records", "plain", "read_table"]

#: The formats `iter_records` reads a record at a time (Parquet a batch at a time); the others
#: are read whole first (an XLSX workbook is read as one; a .json array is one document).
STREAMED_FORMATS = ("csv", "tsv", "jsonl", "parquet")


def read_table(raw: bytes, fmt: str, name: str, budget: Budget, *, limit: int | None) -> Table:
    """Read `raw` as format `fmt` (a `SUPPORTED_FORMATS` name), at most `limit` rows if given.

    Raises:
        DataError: the file cannot be used as it is; the message names the row or column.
    """
    if not raw or raw.isspace():  # isspace() stops at the first other byte; strip() copies
        raise empty_file(name)
    if fmt == "parquet":
        return read_parquet(raw, name, budget, limit)
    if fmt == "xlsx":
        return read_xlsx(raw, name, budget, limit)
    encoding = detect_encoding(raw, name)
    if fmt == "csv":
        return read_delimited(raw, ",", name, encoding, budget, limit)
    if fmt == "tsv":
        return read_delimited(raw, "\t", name, encoding, budget, limit)
    if fmt == "jsonl":
        return read_jsonl(raw, name, encoding, budget, limit)
    return read_json(raw, name, encoding, budget, limit)


def iter_records(
    raw: bytes, fmt: str, name: str, budget: Budget, columns: list[str]
) -> Iterator[Record]:
    """The records of `raw`, one at a time for `STREAMED_FORMATS` (else read whole, then
    handed out one by one). `columns` is filled as the reader learns them: a CSV's from its
    header, a JSONL file's as keys first appear, so all of them only once the last record is
    read.

    Raises:
        DataError: as `read_table`, when the record at fault is reached.
    """
    if fmt not in STREAMED_FORMATS:
        table = read_table(raw, fmt, name, budget, limit=None)
        columns[:] = table.columns
        yield from table.records
        return
    if fmt == "parquet":
        yield from parquet_records(raw, name, budget, columns)
        return
    if not raw or raw.isspace():
        raise empty_file(name)
    encoding = detect_encoding(raw, name)
    if fmt == "jsonl":
        seen: dict[str, None] = {}
        for record in jsonl_records(raw, name, encoding, budget, seen):
            if len(seen) != len(columns):
                columns[:] = list(seen)
            yield record
        columns[:] = list(seen)
        return
    yield from delimited_records(raw, "," if fmt == "csv" else "\t", name, encoding, budget,
                                 columns)


def encoding_of(raw: bytes, fmt: str, name: str) -> str | None:
    """The text encoding `iter_records` reads `raw` in (None for binary formats)."""
    if fmt in ("parquet", "xlsx") or not raw or raw.isspace():
        return None
    return detect_encoding(raw, name)
