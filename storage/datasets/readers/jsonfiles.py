"""JSON Lines (one object per line) and JSON (one array of objects), read a record at a time.

Python's json module is lenient where a silent change would follow, so it is told not to be:
a key repeated in one object (it would keep the last value), numbers that overflow to
infinity, `Infinity` literals, and lone surrogates ("\\ud800", which no encoding can store)
are refused. `NaN` is read as a missing value, like NaN in every other format. Nesting is
bounded (`ImportLimits.max_depth`), and nesting past Python's own limit is a sentence, not a
RecursionError.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from judging.errors import DataError
from storage.datasets.import_limits import Budget, variable_for
from storage.datasets.readers.table import (
    Record,
    Table,
    check_named,
    empty_file,
    json_kind,
    keep_record,
    short,
)
from storage.datasets.readers.text_reader import text_lines


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _NotFinite(Exception):
    def __init__(self, text: str) -> None:
        self.text = text


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotFinite(text)
    return value


def _constant(text: str) -> None:
    if text == "NaN":
        return None  # missing, as NaN is in every other format
    raise _NotFinite(text)


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_object, parse_float=_finite_float, parse_constant=_constant
)


@contextmanager
def _sentences(name: str, where: str) -> Iterator[None]:
    """Turn what the json module raises for hostile input (other than syntax errors) into a
    sentence naming the file and the line."""
    try:
        yield
    except _DuplicateKey as exc:
        raise DataError(
            f"{name}, {where}: the key {short(exc.key)} appears twice in one object. JSON "
            "readers keep only the last value, which would change the data without a word: "
            "remove or rename one of the two."
        ) from None
    except _NotFinite as exc:
        raise DataError(
            f"{name}, {where}: the number {short(exc.text)} is not a finite number (it would "
            "be read as infinity). Write it as a string, in quotes, to keep it as it is."
        ) from None
    except RecursionError:
        raise DataError(
            f"{name}, {where}: the JSON is nested too deeply to read (hundreds of levels). "
            "Flatten the nested values."
        ) from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise
        # The one other ValueError the json module raises: Python refuses to convert
        # integers of more than 4,300 digits (a guard against slow conversions).
        raise DataError(
            f"{name}, {where}: a number has more digits than Python reads as a number "
            f"(4,300). Write it as a string, in quotes, to keep it as it is."
        ) from None


def _depth(value: Any) -> int:
    """How deeply a value nests (an object of scalars is 1), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def _record(
    value: dict[str, Any], name: str, where: str, columns: dict[str, None], budget: Budget
) -> Record:
    nested = any(type(v) in (dict, list) for v in value.values())  # the common case: flat
    if nested and _depth(value) > budget.limits.max_depth:
        raise DataError(
            f"{name}, {where}: a value is nested more than {budget.limits.max_depth} levels "
            f"deep (the limit). Flatten it, or ask the operator to raise "
            f"{variable_for('max_depth')}."
        )
    for key in value:
        if key not in columns:
            check_named(key, name, where)
            budget.cell(key, f"{where}, the name {short(key)}", None)  # a lone surrogate?
            columns[key] = None
            budget.columns(len(columns), f"by {where}")
    return keep_record(budget, where, value)


# --------------------------------------------------------------------------------------------
# JSON Lines


def read_jsonl(raw: bytes, name: str, encoding: str, budget: Budget, limit: int | None) -> Table:
    """One JSON object per line; blank lines are skipped. Columns in first-seen key order."""
    columns: dict[str, None] = {}
    records: list[Record] = []
    for record in jsonl_records(raw, name, encoding, budget, columns):
        records.append(record)
        if limit is not None and len(records) >= limit:
            break
    return Table(list(columns), records, encoding)


def jsonl_records(
    raw: bytes, name: str, encoding: str, budget: Budget, columns: dict[str, None]
) -> Iterator[Record]:
    """`read_jsonl` one record at a time; `columns` gathers the keys in first-seen order as the
    records are read (all of them only once the last one is)."""
    found = False
    # Split on "\n" only: JSON strings may hold U+2028 or \x85 unescaped, and a bare \r is
    # whitespace between tokens; neither ends a record.
    for number, line in enumerate(text_lines(raw, encoding, name, budget, newline="\n"), 1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            with _sentences(name, where):
                value = _DECODER.decode(line)
        except json.JSONDecodeError as exc:
            hint = ""
            if number == 1 and line.strip() in ("[", "{"):
                hint = " The file looks like one JSON document: name it .json instead."
            raise DataError(
                f"{name}, line {number}: invalid JSON ({exc.msg} at column {exc.colno}). "
                f"Fix that line: each line must be one complete JSON object.{hint}"
            ) from None
        if not isinstance(value, dict):
            raise DataError(
                f"{name}, line {number}: expected a JSON object like {{\"text\": ...}} but "
                f"found {json_kind(value)}. Fix that line: each line must be one JSON object."
            )
        found = True
        yield _record(value, name, where, columns, budget)
    if not found:
        raise empty_file(name)


# --------------------------------------------------------------------------------------------
# JSON (one array)

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_CHUNK = 1 << 16


class _TooLong(Exception):
    pass


class _Scanner:
    """A text stream read into a sliding buffer, one JSON value at a time: an array of a
    million objects is never parsed (or held) as one Python list."""

    def __init__(self, stream: io.TextIOBase, cap: int) -> None:
        self.stream = stream
        self.cap = cap
        self.buf = ""
        self.pos = 0
        self.eof = False
        # Line numbers are counted forward from a mark, so numbering every element of a big
        # array costs one pass over the text.
        self.mark = 0
        self.mark_line = 1  # the line buf[mark] is on

    def _fill(self) -> bool:
        if self.eof:
            return False
        if self.pos:  # drop what was consumed, keeping count of its lines
            self.line_at(self.pos)
            self.buf = self.buf[self.pos:]
            self.mark -= self.pos
            self.pos = 0
        chunk = self.stream.read(max(_CHUNK, len(self.buf)))  # doubling: linear overall
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def peek(self) -> str | None:
        """The next character after whitespace, or None at the end of the file."""
        while True:
            self.pos = _WHITESPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return None

    def line_at(self, pos: int) -> int:
        """The line of a position in the buffer."""
        if pos >= self.mark:
            self.mark_line += self.buf.count("\n", self.mark, pos)
            self.mark = pos
            return self.mark_line
        return self.mark_line - self.buf.count("\n", pos, self.mark)

    def where(self, pos: int | None = None) -> tuple[int, int]:
        """(line, column) of a position in the buffer (default: the current one), for an
        error message (the column costs a scan back to the line's start)."""
        pos = self.pos if pos is None else pos
        return self.line_at(pos), pos - self.buf.rfind("\n", 0, pos)

    def value(self) -> Any:
        """Decode the value at the current position, reading more of the file as needed.

        Raises:
            json.JSONDecodeError: invalid JSON (positions are in `self.buf`).
            _TooLong: the value is longer than `cap` characters.
        """
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # Cut off by the end of the buffer, not invalid: read on and decode again.
                cut = exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated string")
                if self.eof or not cut:
                    raise
            else:
                number_cut = type(value) in (int, float) and end == len(self.buf)
                if self.eof or not number_cut:
                    self.pos = end
                    return value
            if len(self.buf) - self.pos > self.cap:
                raise _TooLong
            self._fill()


def read_json(raw: bytes, name: str, encoding: str, budget: Budget, limit: int | None) -> Table:
    """One JSON array of objects; columns in first-seen key order."""
    stream = io.TextIOWrapper(io.BytesIO(raw), encoding=encoding, newline="\n")
    scan = _Scanner(stream, budget.limits.max_line_chars)
    first = scan.peek()
    if first == "\ufeff":  # a second byte-order mark
        scan.pos += 1
        first = scan.peek()
    if first is None:
        raise empty_file(name)

    def invalid(exc: json.JSONDecodeError, hint: str = "") -> DataError:
        line, column = scan.where(exc.pos)
        return DataError(
            f"{name}: invalid JSON on line {line}, column {column} ({exc.msg}). Fix the JSON "
            f"there (an editor or a JSON validator shows the problem).{hint}"
        )

    if first != "[":
        _refuse_non_array(scan, name, invalid)
    scan.pos += 1
    columns: dict[str, None] = {}
    records: list[Record] = []
    number = 0
    while True:
        if scan.peek() == "]" and number == 0:
            scan.pos += 1
            break
        number += 1
        line = scan.line_at(scan.pos)
        where = f"element {number} (line {line})"
        try:
            with _sentences(name, where):
                element = scan.value()
        except json.JSONDecodeError as exc:
            raise invalid(exc) from None
        except _TooLong:
            raise DataError(
                f"{name}, {where}: the element is longer than {scan.cap:,} characters (four "
                "times the limit for one value), so it was not read. Shorten its values, or "
                f"ask the operator to raise {variable_for('max_cell_chars')}."
            ) from None
        if not isinstance(element, dict):
            raise DataError(
                f"{name}: element {number} of the array (line {line}) is {json_kind(element)}, "
                "not an object. Every element must be an object of column: value pairs."
            )
        records.append(_record(element, name, where, columns, budget))
        if limit is not None and len(records) >= limit:
            return Table(list(columns), records, encoding)  # a preview reads no further
        after = scan.peek()
        if after == ",":
            scan.pos += 1
            continue
        if after == "]":
            scan.pos += 1
            break
        line, column = scan.where()
        problem = "the array is never closed" if after is None else "expected ',' or ']'"
        raise DataError(
            f"{name}: invalid JSON on line {line}, column {column} ({problem} after element "
            f"{number}). Separate elements with commas and close the array with ']'."
        )
    if scan.peek() is not None:
        line, column = scan.where()
        raise DataError(
            f"{name}: invalid JSON on line {line}, column {column} (Extra data after the "
            "array). A .json file holds one array: remove what follows it."
        )
    if not records:
        raise DataError(
            f"{name} holds an empty array: there are no rows to import. Put one object per "
            "row in the array."
        )
    return Table(list(columns), records, encoding)


def _refuse_non_array(scan: _Scanner, name: str, invalid: Any) -> None:
    """Explain what the file holds instead of an array, with a hint where one helps."""
    try:
        with _sentences(name, "line 1"):
            value = scan.value()
    except json.JSONDecodeError as exc:
        raise invalid(exc) from None
    except _TooLong:
        raise DataError(
            f"{name} does not hold an array, but Jurybox expects an array of objects, like "
            '[{"id": "a", "text": "..."}, ...].'
        ) from None
    if isinstance(value, dict) and scan.peek() is not None:
        line, column = scan.where()
        raise DataError(
            f"{name}: invalid JSON on line {line}, column {column} (Extra data). If it has "
            "one object per line, name it .jsonl instead."
        )
    hint = ""
    if isinstance(value, dict):
        lists = [k for k, v in value.items() if isinstance(v, list)]
        if lists:
            hint = f" The object holds a list under {short(lists[0])}: upload that list alone."
    raise DataError(
        f"{name} holds {json_kind(value)}, but Jurybox expects an array of objects, "
        f'like [{{"id": "a", "text": "..."}}, ...].{hint}'
    )
