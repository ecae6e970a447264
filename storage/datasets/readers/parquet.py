"""Parquet: any flat (or nested) table, read in batches that are measured before they become
Python values.

A Parquet file says in its footer how many rows it has and how large its column chunks are
once decompressed, so a row bomb (3 million rows in 3.8 MB) or a chunk bomb is refused from
the footer alone. What the footer cannot say, decoding finds out: a child process with capped
memory decodes every batch once and measures it (see `storage.datasets.readers.parquet_arrow`, which
also explains why the footer is only ever read there), so a file that decodes past the limit
is refused before the server holds any of it, and the server reads in batches the child
proved small. Each batch is measured again before it becomes Python values.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judging.errors import DataError
from storage.datasets.import_limits import Budget, human_size, variable_for
from storage.datasets.readers import parquet_arrow as arrow
from storage.datasets.readers.table import (
    Record,
    Table,
    check_named,
    check_unique,
    first_line,
    keep_record,
    plain_dict,
)

# How long the child may take to read the footer and decode the file once (a 200 MB file
# takes seconds); past this the machine is too busy to import it now.
_PROBE_SECONDS = 600


def _child_memory(max_decoded_bytes: int) -> int:
    """What the child may allocate beyond the file. Arrow reads a page whole and takes about
    four times its size to decode it, and writers put large values in large pages (pyarrow
    checks its 1 MB page size only every 1,024 values): a file of 1,000 values of 100 KB has
    100 MB pages. A page is at most the decompressed file, itself at most the decoded limit."""
    return 128 * 1024**2 + 4 * max_decoded_bytes


def _refuse(name: str, detail: str) -> DataError:
    return DataError(
        f"{name} could not be read as a Parquet file ({detail}). Check that it is a complete "
        "Parquet file (not renamed from another format) and export it again."
    )


def read_parquet(raw: bytes, name: str, budget: Budget, limit: int | None) -> Table:
    """Every column except a pandas index; nested values become lists and dicts."""
    columns: list[str] = []
    records = list(parquet_records(raw, name, budget, columns, limit=limit))
    return Table(columns, records, None)


def parquet_records(raw: bytes, name: str, budget: Budget, columns: list[str], *,
                    limit: int | None = None) -> Iterator[Record]:
    """`read_parquet`'s records, decoded a batch at a time: a large file is never held as
    Python values. The child's probe and the footer checks come before the first record;
    `columns` is filled with the file's columns then."""
    # pyarrow takes a second to import: only Parquet files pay for it.
    import pyarrow as pa

    probed = _probe(raw, name, budget, limit)
    facts = probed["footer"]
    try:
        parquet = arrow.open_file(raw)
        schema = parquet.schema_arrow
        names = arrow.data_columns(parquet)
    except (pa.ArrowException, OSError, ValueError, MemoryError) as exc:
        raise _refuse(name, first_line(exc)) from None
    if not names:
        raise DataError(f"{name} has no columns: there is nothing to import.")
    budget.columns(len(names), "in its schema")
    for column in names:
        check_named(column, name, "in the schema")
    check_unique(names, name, "in the Parquet schema")
    _check_footer(facts, schema, names, name, budget)
    if probed.get("memory"):
        raise DataError(
            f"{name} needs more than {human_size(_child_memory(budget.limits.max_decoded_bytes))} "
            "of memory to read even one row (a value far longer than the limit for one value, "
            "or very large pages), so it was refused before the server read it. Shorten the "
            "long values, or write the file again with smaller pages."
        )
    if probed.get("long"):
        row, column, chars = probed["long"]
        raise budget.long_cell_error(f"row {row + 1:,}", column, chars)
    if probed.get("over"):
        raise DataError(
            f"{name} decodes to more than {human_size(budget.limits.max_decoded_bytes)} (the "
            "limit for one import), found out before the server read it. Split it into smaller "
            f"files, or ask the operator to raise {variable_for('max_decoded_bytes')}."
        )

    columns[:] = names
    read = 0
    try:
        for batch in arrow.batches(parquet, names, probed["rows"]):
            _check_batch(batch, read, name, budget)
            try:
                rows = arrow.decode(batch).to_pylist()
            except (ValueError, OverflowError) as exc:
                first, last = read + 1, read + batch.num_rows
                raise DataError(
                    f"{name}, rows {first:,} to {last:,}: a value cannot be represented in "
                    f"Python ({first_line(exc)}); dates must fall in the years 1 to 9999. Fix "
                    "the value, or store the column as text."
                ) from None
            for row in rows:
                read += 1
                yield keep_record(budget, f"row {read}", plain_dict(row))
                if limit is not None and read >= limit:
                    return
    except (pa.ArrowException, OSError, ValueError, MemoryError) as exc:
        raise _refuse(name, first_line(exc)) from None


def _probe(raw: bytes, name: str, budget: Budget, limit: int | None) -> dict[str, Any]:
    """Read the footer and decode the file once in a child process; return what it found
    (see `parquet_arrow.probe`)."""
    limits = budget.limits
    options = {"max_decoded_bytes": limits.max_decoded_bytes, "max_rows": limits.max_rows,
               "max_columns": limits.max_columns, "max_cell_chars": limits.max_cell_chars,
               "limit": limit, "memory": _child_memory(limits.max_decoded_bytes)}
    try:
        child = subprocess.run(
            [sys.executable, str(Path(arrow.__file__)), json.dumps(options)],
            input=raw, capture_output=True, timeout=_PROBE_SECONDS, check=False,
        )
    except subprocess.TimeoutExpired:
        raise DataError(
            f"{name} took more than {_PROBE_SECONDS // 60} minutes to read, so it was not "
            "imported. Try again when the server is less busy, or split the file."
        ) from None
    if child.returncode != 0:
        how = (f"signal {signal.Signals(-child.returncode).name}" if child.returncode < 0
               else f"exit code {child.returncode}")
        raise _refuse(name, f"the Parquet reader crashed on it: {how}")
    try:
        result: dict[str, Any] = json.loads(child.stdout)
    except ValueError:
        raise _refuse(name, "the Parquet reader gave no answer") from None
    if "footer" not in result:
        if "too deeply nested" in result["error"]:
            raise DataError(
                f"{name}: its columns nest too deeply to read (more than 100 levels). Flatten "
                "the nested columns and write the file again."
            )
        raise _refuse(name, result["error"])
    return result


def _depth(kind: Any) -> int:
    """How deeply a column type nests (a scalar is 0, a list of scalars 1)."""
    deepest = 0
    stack = [(kind, 0)]
    while stack:
        current, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((current.field(i).type, depth + 1) for i in range(current.num_fields))
        value_type = getattr(current, "value_type", None)  # dictionary columns
        if value_type is not None and current.num_fields == 0:
            stack.append((value_type, depth))
    return deepest


def _check_footer(
    facts: dict[str, Any], schema: Any, names: list[str], name: str, budget: Budget
) -> None:
    """Refuse from the footer alone what the footer already shows is too much."""
    limits = budget.limits
    if facts["num_rows"] > limits.max_rows:
        raise DataError(
            f"{name} has {facts['num_rows']:,} rows, more than the limit of "
            f"{limits.max_rows:,}: it was refused before reading them. Split it into smaller "
            f"files, or ask the operator to raise {variable_for('max_rows')}."
        )
    for column in names:
        if _depth(schema.field(column).type) + 1 > limits.max_depth:
            raise DataError(
                f"{name}: column {column!r} nests more than {limits.max_depth} levels deep (the "
                f"limit). Flatten it, or ask the operator to raise {variable_for('max_depth')}."
            )
    oversized = arrow.oversized_chunk(facts, limits.max_cell_chars)
    if oversized is not None:
        group, path, size, values, _ = oversized
        raise DataError(
            f"{name}, row group {group + 1}, column {path!r}: its {values:,} value(s) take "
            f"{human_size(size)}, so at least one is longer than the limit of "
            f"{limits.max_cell_chars:,} characters for one value. Shorten or split that text, "
            f"or ask the operator to raise {variable_for('max_cell_chars')}."
        )
    # Every value is stored at least once in a page, so the chunks' decompressed size is a
    # floor on what the file decodes to; leaf values (list elements too) cost a cell each.
    unpacked = sum(chunk[2] for chunk in facts["chunks"])
    leaves = sum(chunk[3] for chunk in facts["chunks"])
    if max(unpacked, leaves * 8) > limits.max_decoded_bytes:
        raise DataError(
            f"{name} decompresses to {human_size(max(unpacked, leaves * 8))} "
            f"({leaves:,} values), more than the limit of "
            f"{human_size(limits.max_decoded_bytes)} for one import: it was refused before "
            f"decompressing it. Split it into smaller files, or ask the operator to raise "
            f"{variable_for('max_decoded_bytes')}."
        )


def _check_batch(batch: Any, before: int, name: str, budget: Budget) -> None:
    """Refuse a batch whose values are too long or too large, before they become Python."""
    measured = arrow.measure(batch, budget.limits.max_cell_chars)
    if measured.long_row is not None:
        where = f"row {before + measured.long_row + 1:,}"
        raise budget.long_cell_error(where, measured.long_column, measured.long_chars)
    if budget.decoded + measured.size > budget.limits.max_decoded_bytes:
        raise DataError(
            f"{name} decodes to more than {human_size(budget.limits.max_decoded_bytes)} (the "
            f"limit for one import; reached by rows {before + 1:,} to "
            f"{before + batch.num_rows:,}). Split the file into smaller ones, or ask the "
            f"operator to raise {variable_for('max_decoded_bytes')}."
        )
