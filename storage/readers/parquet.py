"""Parquet: any flat (or nested) table, read in small batches and measured before it is
turned into Python values.

A Parquet file says in its footer how many rows it has and how large its pages are once
decompressed, so a row bomb (3 million rows in 3.8 MB) or a page bomb is refused from the
footer alone. What the footer cannot say, the batches measure: string columns are read as
dictionaries (a dictionary-encoded column stays its small dictionary plus indices), and every
batch's decoded size and longest value are computed in Arrow before any Python string exists.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from judging.errors import DataError
from storage.import_limits import Budget, human_size, variable_for
from storage.readers.table import Record, Table, check_named, check_unique, first_line
from storage.readers.table import keep_record, plain_dict

if TYPE_CHECKING:
    import pyarrow as pa

# pandas stores a non-default index as "__index_level_N__" columns: not data.
_PANDAS_INDEX = re.compile(r"__index_level_\d+__")
# Rows per batch. A batch is measured before it is decoded, so its size is bounded by the
# budget left, not by this; larger batches only make the per-batch cost negligible.
_BATCH_ROWS = 4096


def _refuse(name: str, exc: BaseException) -> DataError:
    return DataError(
        f"{name} could not be read as a Parquet file ({first_line(exc)}). Check that it is "
        "a complete Parquet file (not renamed from another format) and export it again."
    )


def read_parquet(raw: bytes, name: str, budget: Budget, limit: int | None) -> Table:
    """Every column except a pandas index; nested values become lists and dicts."""
    # pyarrow takes a second to import: only Parquet files pay for it.
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(
            pa.BufferReader(raw),
            # The footer is bounded too: a 100 MB "string" in the metadata is not a dataset.
            thrift_string_size_limit=16 * 1024**2,
            thrift_container_size_limit=1_000_000,
        )
        schema = parquet.schema_arrow
        names = [n for n in schema.names if not _PANDAS_INDEX.fullmatch(n)]
        if not names:
            raise DataError(f"{name} has no columns: there is nothing to import.")
        budget.columns(len(names), "in its schema")
        for column in names:
            check_named(column, name, "in the schema")
        check_unique(names, name, "in the Parquet schema")
        _check_footer(parquet, schema, names, name, budget)
        dictionaries = _dictionary_columns(parquet, schema, names)
    except (pa.ArrowException, OSError, ValueError, MemoryError) as exc:
        # ValueError includes UnicodeDecodeError: a damaged footer's names are not UTF-8.
        if "too deeply nested" in str(exc):
            raise DataError(
                f"{name}: its columns nest too deeply to read (more than 100 levels). Flatten "
                "the nested columns and write the file again."
            ) from None
        raise _refuse(name, exc) from None
    records: list[Record] = []
    try:
        # Re-opened with dictionary-encoded text columns read as dictionaries: a dictionary of
        # one large value referenced by every row stays one value until it is measured.
        parquet = pq.ParquetFile(pa.BufferReader(raw), read_dictionary=dictionaries or None)
        batches = parquet.iter_batches(batch_size=_BATCH_ROWS, columns=names, use_threads=False)
        for batch in batches:
            _measure(batch, len(records), name, budget)
            # Measured: now expand the dictionaries in Arrow (fast), then make Python values.
            batch = pa.RecordBatch.from_arrays(
                [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c
                 for c in batch.columns],
                names=batch.schema.names,
            )
            try:
                rows = batch.to_pylist()
            except (ValueError, OverflowError) as exc:
                first, last = len(records) + 1, len(records) + batch.num_rows
                raise DataError(
                    f"{name}, rows {first:,} to {last:,}: a value cannot be represented in "
                    f"Python ({first_line(exc)}); dates must fall in the years 1 to 9999. Fix "
                    "the value, or store the column as text."
                ) from None
            for row in rows:
                where = f"row {len(records) + 1}"
                records.append(keep_record(budget, where, plain_dict(row)))
                if limit is not None and len(records) >= limit:
                    return Table(names, records, None)
    except (pa.ArrowException, OSError, ValueError, MemoryError) as exc:
        raise _refuse(name, exc) from None
    return Table(names, records, None)


def _dictionary_columns(parquet: Any, schema: pa.Schema, names: list[str]) -> list[str]:
    """The text columns stored dictionary-encoded somewhere in the file. Reading the others as
    dictionaries would only cost a copy: their decoded size is bounded by the footer check."""
    metadata = parquet.metadata
    encoded: set[str] = set()
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for leaf in range(row_group.num_columns):
            chunk = row_group.column(leaf)
            if chunk.has_dictionary_page:
                encoded.add(chunk.path_in_schema)
    return [n for n in names if n in encoded and _is_text(schema.field(n).type)]


def _is_text(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or pa.types.is_binary(kind) or pa.types.is_large_binary(kind))


def _depth(kind: pa.DataType) -> int:
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
    parquet: Any, schema: pa.Schema, names: list[str], name: str, budget: Budget
) -> None:
    """Refuse from the footer alone what the footer already shows is too much."""
    limits = budget.limits
    metadata = parquet.metadata
    if metadata.num_rows > limits.max_rows:
        raise DataError(
            f"{name} has {metadata.num_rows:,} rows, more than the limit of "
            f"{limits.max_rows:,}: it was refused before reading them. Split it into smaller "
            f"files, or ask the operator to raise {variable_for('max_rows')}."
        )
    for column in names:
        if _depth(schema.field(column).type) + 1 > limits.max_depth:
            raise DataError(
                f"{name}: column {column!r} nests more than {limits.max_depth} levels deep (the "
                f"limit). Flatten it, or ask the operator to raise {variable_for('max_depth')}."
            )
    # Every value is stored at least once in a page, so the pages' decompressed size is a
    # floor on what the file decodes to; leaf values (list elements too) cost a cell each.
    unpacked = leaves = 0
    # The most bytes one value within the cell limit can take in a chunk: 4 bytes a character
    # in UTF-8, stored at most 4 times (dictionary page, data page, a page's min and max
    # statistics), plus headers. A chunk holding more per value has a value past the limit.
    longest_possible = 16 * limits.max_cell_chars + 1024
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for leaf in range(row_group.num_columns):
            chunk = row_group.column(leaf)
            unpacked += chunk.total_uncompressed_size
            leaves += chunk.num_values
            if chunk.total_uncompressed_size > max(chunk.num_values, 1) * longest_possible:
                raise DataError(
                    f"{name}, row group {group + 1}, column {chunk.path_in_schema!r}: its "
                    f"{chunk.num_values:,} value(s) take {human_size(chunk.total_uncompressed_size)}"
                    f", so at least one is longer than the limit of {limits.max_cell_chars:,} "
                    f"characters for one value. Shorten or split that text, or ask the operator "
                    f"to raise {variable_for('max_cell_chars')}."
                )
    if unpacked > limits.max_decoded_bytes or leaves * 8 > limits.max_decoded_bytes:
        raise DataError(
            f"{name} decompresses to {human_size(max(unpacked, leaves * 8))} "
            f"({leaves:,} values), more than the limit of "
            f"{human_size(limits.max_decoded_bytes)} for one import: it was refused before "
            f"decompressing it. Split it into smaller files, or ask the operator to raise "
            f"{variable_for('max_decoded_bytes')}."
        )


def _measure(batch: pa.RecordBatch, before: int, name: str, budget: Budget) -> None:
    """Refuse a batch whose values are too long or too large, before they become Python."""
    import pyarrow.compute as pc

    limits = budget.limits
    total = 0
    for column, array in zip(batch.schema.names, batch.columns):
        lengths = _text_lengths(array)
        if lengths is None:
            total += array.nbytes
            continue
        # Characters <= bytes: a column whose longest value in bytes is within the limit needs
        # no closer look; otherwise count characters to be exact.
        longest = pc.max(lengths).as_py() or 0
        if longest > limits.max_cell_chars:
            chars = _char_lengths(array) if _is_string(array) else lengths
            over = pc.greater(chars, limits.max_cell_chars)
            index = pc.index(over, True).as_py()
            if index >= 0:
                where = f"row {before + index + 1:,}"
                raise budget.long_cell_error(where, column, pc.max(chars).as_py())
        total += pc.sum(lengths).as_py() or 0
    if budget.decoded + total > limits.max_decoded_bytes:
        raise DataError(
            f"{name} decodes to more than {human_size(limits.max_decoded_bytes)} (the limit "
            f"for one import; reached by rows {before + 1:,} to {before + batch.num_rows:,}). "
            f"Split the file into smaller ones, or ask the operator to raise "
            f"{variable_for('max_decoded_bytes')}."
        )


def _is_string(array: pa.Array) -> bool:
    import pyarrow as pa

    kind = array.type.value_type if pa.types.is_dictionary(array.type) else array.type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _char_lengths(array: pa.Array) -> pa.Array:
    """Characters in each value of a string column (dictionary or not)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(array.type):
        return pc.take(pc.utf8_length(array.dictionary), array.indices)
    return pc.utf8_length(array)


def _text_lengths(array: pa.Array) -> pa.Array | None:
    """Byte length of each value of a string or binary column (a dictionary column's values
    looked up through its indices), or None for other columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(array.type):
        if not _is_text(array.type.value_type):
            return None
        return pc.take(pc.binary_length(array.dictionary), array.indices)
    if _is_text(array.type):
        return pc.binary_length(array)
    return None
