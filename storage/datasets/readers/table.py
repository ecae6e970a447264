"""What every reader returns (`Table`), and the header, row and value rules they share."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judging.errors import DataError
from storage.datasets.import_limits import Budget


@dataclass(slots=True)
class Record:
    """One data row and where it came from ("line 7", "row 3", "element 2"), for messages."""

    where: str
    values: dict[str, Any]


@dataclass(slots=True)
class Table:
    """A file read: its columns in file order, its rows (at most the reader's `limit`), and
    the text encoding used (None for binary formats)."""

    columns: list[str]
    records: list[Record]
    encoding: str | None


def empty_file(name: str) -> DataError:
    """The error for a file with nothing in it."""
    return DataError(
        f"{name} is empty: there is nothing to import. Check that you chose the right file: "
        "it needs a header and at least one row."
    )


def keep_record(budget: Budget, where: str, values: dict[str, Any]) -> Record:
    """Count a data row and its values against the import's limits, then keep it."""
    budget.record(where, values)
    return Record(where, values)


# --------------------------------------------------------------------------------------------
# Headers and rows


def clean_header(cells: Sequence[str], *, name: str, where: str, budget: Budget) -> list[str | None]:
    """Strip names (" text" would not match the placeholder {text}); None marks an unnamed
    column, which is dropped as long as it holds no value (spreadsheets leave such columns)."""
    header: list[str | None] = [c.strip() or None for c in cells]
    # Unnamed columns do not count: spreadsheets leave hundreds of empty ones at the right.
    budget.columns(sum(c is not None for c in header), where)
    for position, column in enumerate(header, start=1):
        if column is not None and len(column) > budget.limits.max_cell_chars:
            raise budget.long_cell_error(f"{where}, column {position}", None, len(column))
    check_unique([c for c in header if c is not None], name, where)
    return header


def check_unique(names: list[str], name: str, where: str) -> None:
    """Refuse repeated column names: the second would silently replace the first."""
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


def check_named(column: str, name: str, where: str) -> None:
    """Refuse a blank column name (typed formats: JSON keys, Parquet fields)."""
    if not column.strip():
        raise DataError(
            f"{name}, {where}: a column has a blank name ({column!r}), which no prompt "
            "{placeholder} can use. Give it a name, or remove it."
        )


def row_values(
    header: list[str | None], cells: Sequence[Any], name: str, where: str
) -> dict[str, Any]:
    """A row's values by column name. A value under an unnamed column, or right of the last
    column, is an error: dropping it would change the data without a word."""
    values: dict[str, Any] = {}
    for position, (column, cell) in enumerate(zip(header, cells), start=1):
        if column is None:
            if cell is not None and cell != "":
                raise DataError(
                    f"{name}, {where}: column {position} has a value ({short(cell)}) but no "
                    "name in the header. Give the column a name, or delete it."
                )
            continue
        values[column] = cell
    if len(cells) > len(header):  # only XLSX gets here: CSV rows are checked for length
        extra = [c for c in cells[len(header):] if c is not None and c != ""]
        if extra:
            raise DataError(
                f"{name}, {where}: a value ({short(extra[0])}) lies right of the last named "
                "column. Give that column a name in the header row, or delete the value."
            )
    return values


# --------------------------------------------------------------------------------------------
# Values


def plain(value: Any) -> Any:
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
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
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
        return plain(tolist())
    return str(value)


_ALREADY_PLAIN = frozenset({str, int, bool, type(None)})


def plain_dict(values: dict[str, Any]) -> dict[str, Any]:
    """`plain` over a row's values."""
    # Most values are already plain; skipping the call for them halves the time of a big file.
    return {k: v if type(v) in _ALREADY_PLAIN else plain(v) for k, v in values.items()}


def json_kind(value: Any) -> str:
    """'an object', 'an array', "a string ('x')", 'a number (3)': for messages."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return f"a string ({short(value)})"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"a number ({short(value)})"


def short(value: Any, width: int = 40) -> str:
    """repr(value), cut to `width` characters: data quoted in a message stays short."""
    if isinstance(value, str) and len(value) > width:
        value = value[:width]  # never repr a megabyte just to cut it
    if isinstance(value, int) and value.bit_length() > 4 * width:
        return f"a number of about {int(value.bit_length() * 0.30103):,} digits"
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def first_line(exc: BaseException) -> str:
    """An exception's first line, for 'could not be read (...)' messages."""
    lines = str(exc).strip().splitlines()
    if not lines:
        return type(exc).__name__
    return lines[0] if len(lines[0]) <= 200 else lines[0][:197] + "..."
