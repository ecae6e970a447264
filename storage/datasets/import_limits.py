"""How much one dataset import may decode, and the running count that enforces it.

A file's size says little about what it decodes to: a 154 KB XLSX can hold a 150 MB cell and
a 3.8 MB Parquet file three million rows. So every reader counts what it decodes as it goes
(`Budget`) and stops at the first row, column or cell past a limit (`ImportLimits`), before
the rest is materialised.

The defaults suit a shared server (one import takes at most a few hundred MB); an operator
changes them with environment variables, read on every import (`ImportLimits.from_env`):

    JURYBOX_MAX_FILE_MB     200        file size, checked before anything is read
    JURYBOX_MAX_DECODED_MB  256        decoded size (see `Budget.cell`)
    JURYBOX_MAX_ROWS        500000     data rows
    JURYBOX_MAX_COLUMNS     500        columns
    JURYBOX_MAX_CELL_CHARS  1000000    characters in one value (about 250k tokens)
    JURYBOX_MAX_JSON_DEPTH  64         nesting of JSON values (objects in lists in objects...)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from judging.errors import ConfigError, DataError

__all__ = ["LIMIT_VARIABLES", "Budget", "ImportLimits", "human_size", "variable_for"]

_MB = 1024**2

#: ImportLimits field -> (environment variable, unit the variable is given in, in bytes or 1).
LIMIT_VARIABLES: dict[str, tuple[str, int]] = {
    "max_file_bytes": ("JURYBOX_MAX_FILE_MB", _MB),
    "max_decoded_bytes": ("JURYBOX_MAX_DECODED_MB", _MB),
    "max_rows": ("JURYBOX_MAX_ROWS", 1),
    "max_columns": ("JURYBOX_MAX_COLUMNS", 1),
    "max_cell_chars": ("JURYBOX_MAX_CELL_CHARS", 1),
    "max_depth": ("JURYBOX_MAX_JSON_DEPTH", 1),
}

# What one value costs beyond its text: a Python object header and its slot in the row. Counting
# it makes a million empty cells cost what they cost in memory (about 64 MB), not nothing.
CELL_OVERHEAD = 64
# A row's own cost (its dict and Item), for the same reason.
ROW_OVERHEAD = 256


@dataclass(frozen=True, slots=True)
class ImportLimits:
    """The most one dataset import may hold. Every limit is a positive whole number.

    Attributes:
        max_file_bytes: the file's size, checked before it is read.
        max_decoded_bytes: the decoded size: every value counts its text in UTF-8 bytes (a
            number or a boolean 8) plus 64 bytes, every row 256 bytes; an XLSX's shared-string
            table counts too. This bounds the memory an import takes.
        max_rows: data rows (the header is not a row).
        max_columns: named columns (spreadsheets leave unnamed, empty ones at the right).
        max_cell_chars: characters in one value; a nested JSON value counts all the text inside
            it. One line of a text file (or one JSON record) may hold at most four times this.
        max_depth: how deeply JSON values may nest (`{"a": [1]}` is depth 2).
    """

    max_file_bytes: int = 200 * _MB
    max_decoded_bytes: int = 256 * _MB
    max_rows: int = 500_000
    max_columns: int = 500
    max_cell_chars: int = 1_000_000
    max_depth: int = 64

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if type(value) is not int or value < 1:
                raise ConfigError(
                    f"Import limit {spec.name} must be a whole number above 0, not {value!r}."
                )

    @property
    def max_line_chars(self) -> int:
        """The longest line (or JSON record) a text file may have: four cells' worth."""
        return 4 * self.max_cell_chars

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ImportLimits:
        """The limits set by `JURYBOX_MAX_*` environment variables, defaults for the rest.

        Raises:
            ConfigError: a variable is set to something other than a whole number above 0.
        """
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, (variable, unit) in LIMIT_VARIABLES.items():
            text = environ.get(variable, "").strip().replace("_", "")
            if not text:
                continue
            if not text.isdigit() or int(text) < 1:
                raise ConfigError(
                    f"{variable} must be a whole number above 0, not {environ[variable]!r}: "
                    "fix or unset it and restart Jurybox."
                )
            values[name] = int(text) * unit
        return cls(**values)


def variable_for(field_name: str) -> str:
    """The environment variable that sets a limit, for messages."""
    return LIMIT_VARIABLES[field_name][0]


def human_size(n: int) -> str:
    """512 -> '512 bytes', 2_300_000 -> '2.2 MB'."""
    if n < 1024:
        return f"{n} bytes"
    size = n / 1024
    for unit in ("KB", "MB", "GB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


class Budget:
    """The running count of one import against its limits.

    Readers call `row` for every data row and `cell` for every value they keep (`text` for
    text held outside rows, such as an XLSX's shared strings), and refuse the file at the first
    value past a limit: the message names the file, the row and the column.
    """

    __slots__ = ("limits", "name", "rows", "decoded")

    def __init__(self, limits: ImportLimits, name: str) -> None:
        self.limits = limits
        self.name = name
        self.rows = 0
        self.decoded = 0

    def row(self, where: str) -> None:
        """Count one data row found at `where` ("line 7", "row 3"), its values counted apart."""
        self.rows += 1
        if self.rows > self.limits.max_rows:
            raise DataError(
                f"{self.name} has more than {self.limits.max_rows:,} data rows, the limit "
                f"({where} is row {self.rows:,}). Split the file into smaller ones, or ask the "
                f"operator to raise {variable_for('max_rows')}."
            )
        self._add(ROW_OVERHEAD, where)

    def record(self, where: str, values: dict[str, Any]) -> None:
        """Count one data row and its values (`cell` for each, with a fast path for text)."""
        self.row(where)
        longest = self.limits.max_cell_chars
        size = 0
        for column, value in values.items():
            if type(value) is str and value.isascii():  # isascii() is O(1) in CPython
                if len(value) > longest:
                    raise self.long_cell_error(where, column, len(value))
                size += len(value) + CELL_OVERHEAD
            else:
                self.cell(value, where, column)
        self._add(size, where)

    def columns(self, count: int, where: str) -> None:
        """Check a column count (the header's, or the columns seen so far)."""
        if count > self.limits.max_columns:
            raise DataError(
                f"{self.name} has {count:,} columns {where}, more than the limit of "
                f"{self.limits.max_columns:,}. Keep only the columns the critics need, or ask "
                f"the operator to raise {variable_for('max_columns')}."
            )

    def cell(self, value: Any, where: str, column: str | None) -> None:
        """Count one value; refuse it if it is too long or the import has decoded too much.

        `value` is a plain value (str, int, float, bool, None, or lists and dicts of them).
        """
        if type(value) is str:
            chars = len(value)
            size = chars if value.isascii() else _utf8_size(value, self.name, where, column)
        elif value is None or type(value) in (int, float, bool):
            chars, size = 0, 8
        else:
            chars, size = nested_size(value, self.name, where, column)
        if chars > self.limits.max_cell_chars:
            raise self.long_cell_error(where, column, chars)
        self._add(size + CELL_OVERHEAD, where, column)

    def text(self, size: int, where: str) -> None:
        """Count `size` bytes of text held outside rows (an XLSX's shared strings)."""
        self._add(size + CELL_OVERHEAD, where)

    def long_cell_error(self, where: str, column: str | None, chars: int | None) -> DataError:
        """The error for a value longer than `max_cell_chars` (`chars` None: not counted to
        the end, because reading stopped at the limit)."""
        at = f", column {column!r}" if column is not None else ""
        limit = f"{self.limits.max_cell_chars:,}"
        what = (
            f"the value has {chars:,} characters, more than the limit of {limit}"
            if chars is not None
            else f"a value is longer than the limit of {limit} characters"
        )
        return DataError(
            f"{self.name}, {where}{at}: {what} for one value. Shorten or split that text, or "
            f"ask the operator to raise {variable_for('max_cell_chars')}."
        )

    def _add(self, size: int, where: str, column: str | None = None) -> None:
        self.decoded += size
        if self.decoded > self.limits.max_decoded_bytes:
            at = f", column {column!r}" if column is not None else ""
            raise DataError(
                f"{self.name} decodes to more than {human_size(self.limits.max_decoded_bytes)} "
                f"(the limit for one import; reached at {where}{at}). Split the file into "
                f"smaller ones, or ask the operator to raise {variable_for('max_decoded_bytes')}."
            )


def _utf8_size(text: str, name: str, where: str, column: str | None) -> int:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        # Only JSON can produce these ("\ud800" escapes): no text encoding can store them.
        code = ord(text[exc.start])
        at = f", column {column!r}" if column is not None else ""
        raise DataError(
            f"{name}, {where}{at}: the text holds a lone surrogate "
            f"(\\u{code:04x}), half of a character that cannot be stored. Fix the escape (a "
            "character outside the basic plane needs both halves, like \\ud83d\\ude00) or "
            "remove it."
        ) from None


def nested_size(value: Any, name: str, where: str, column: str | None) -> tuple[int, int]:
    """(characters, UTF-8 bytes) of the text in a nested value; scalars count 8 bytes.

    Iterative, so depth never costs stack; depth itself is checked by the JSON reader.
    """
    chars = size = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            chars += len(item)
            size += len(item) if item.isascii() else _utf8_size(item, name, where, column)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            size += 8
    return chars, size
