"""One reader per file format, each turning a file's bytes into a `Table` or a `DataError`.

Every reader counts what it decodes against the import's `Budget` while it reads, and stops
at the first row, column or value past a limit (see `storage.import_limits`). `read_table`
picks the reader; `storage.importing` is the public API on top.
"""

from __future__ import annotations

from storage.import_limits import Budget
from storage.readers.delimited import read_delimited
from storage.readers.jsonfiles import read_json, read_jsonl
from storage.readers.parquet import read_parquet
from storage.readers.table import Record, Table, empty_file, plain
from storage.readers.text import detect_encoding
from storage.readers.xlsx import read_xlsx

__all__ = ["Record", "Table", "plain", "read_table"]


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
