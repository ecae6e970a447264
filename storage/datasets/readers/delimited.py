"""CSV and TSV: the first non-blank line is the header; every cell stays text."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from judging.errors import DataError
from storage.datasets.import_limits import Budget
from storage.datasets.readers.table import (
    Record,
    Table,
    clean_header,
    empty_file,
    keep_record,
    row_values,
)
from storage.datasets.readers.text_reader import text_lines


def _raise_field_limit(max_cell_chars: int) -> None:
    """Let the csv module read values up to the cell limit (its default stops at 128 KB).

    The limit is process-wide, so it is only ever raised, never lowered under another import
    that is reading at the same time; each import still checks its own limit on every value.
    The csv module stops a value at this limit while reading it, so a 150 MB quoted value
    spread over many lines is refused without being held.
    """
    if csv.field_size_limit() < max_cell_chars + 1:
        csv.field_size_limit(max_cell_chars + 1)


def read_delimited(
    raw: bytes, delimiter: str, name: str, encoding: str, budget: Budget, limit: int | None
) -> Table:
    """Read CSV (`delimiter` ",") or TSV ("\\t") with the csv module, not pandas: pandas pads
    short rows with NaN and (with on_bad_lines) drops long ones, both silently, and cannot say
    which line was wrong."""
    columns: list[str] = []
    records = []
    for record in delimited_records(raw, delimiter, name, encoding, budget, columns):
        records.append(record)
        if limit is not None and len(records) >= limit:
            break
    return Table(columns, records, encoding)


def delimited_records(
    raw: bytes, delimiter: str, name: str, encoding: str, budget: Budget, columns: list[str]
) -> Iterator[Record]:
    """`read_delimited` one record at a time: `columns` is filled with the named columns once
    the header is read (before the first record)."""
    _raise_field_limit(budget.limits.max_cell_chars)
    kind = "TSV" if delimiter == "\t" else "CSV"
    separator = "tab" if delimiter == "\t" else "comma"
    lines: Iterator[str] = text_lines(raw, encoding, name, budget, newline="")
    # strict=True: an unclosed quote or text after a closing quote is an error, not a row that
    # silently swallows the rest of the file.
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    header: list[str | None] | None = None
    all_named = True
    start = 1  # the line the current record starts on
    try:
        for row in reader:
            here = start
            start = reader.line_num + 1
            if not any(row):
                continue  # blank lines and ",,," rows (spreadsheet leftovers) hold no item
            if header is None:
                header = clean_header(
                    row, name=name, where=f"in the header (line {here})", budget=budget
                )
                all_named = None not in header
                columns[:] = [c for c in header if c is not None]
                continue
            if len(row) != len(header):
                raise DataError(
                    f"{name}, line {here}: expected {len(header)} fields (as in the header) "
                    f"but found {len(row)}. Check that line for a missing or extra "
                    f"{separator} or an unquoted {separator} inside a value."
                )
            where = f"line {here}"
            values = dict(zip(header, row)) if all_named else row_values(header, row, name, where)
            yield keep_record(budget, where, values)  # type: ignore[arg-type]
    except csv.Error as exc:
        detail = str(exc)
        if "unexpected end of data" in detail:
            raise DataError(
                f"{name}, line {start}: a quoted value opened on or after this line is never "
                "closed, so the rest of the file would be read as one value. Close the quote "
                '(write a quote inside a value as "").'
            ) from None
        if "field larger than field limit" in detail:
            raise budget.long_cell_error(f"line {start}", None, None) from None
        if "NUL" in detail:
            raise DataError(
                f"{name}, line {reader.line_num}: the line holds a NUL character, which text "
                "files do not contain. Save the file again as UTF-8 text, without NULs."
            ) from None
        raise DataError(
            f"{name}, line {reader.line_num}: the {kind} is malformed ({detail}). "
            'Quote values that contain quotes and write a quote inside a value as "".'
        ) from None
    if header is None:
        raise empty_file(name)
