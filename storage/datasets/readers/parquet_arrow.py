"""The Arrow half of reading a Parquet file: it imports nothing but pyarrow and the standard
library, so that it can also run alone, as a script, in a child process.

Why a child process: pyarrow's footer accessors (`FileMetaData.row_group(i)`,
`RowGroupMetaData.column(i)`) call C++ that throws on a damaged footer, through bindings that
cannot catch it, so the process aborts ("terminate called after throwing an instance of
'parquet::ParquetException'"; found by fuzzing, pyarrow 26). In the app that process is the
shared server. And what a file decodes to is only known by decoding it: one dictionary value
of 900 KB referenced by 200,000 rows is 180 GB, and reading one row of a page holding a 100 MB
value makes Arrow allocate about 600 MB. So `storage.datasets.readers.parquet` first runs `probe` here
in a child process whose memory is capped: it reads the footer, finds a batch size whose
batches fit in that memory (quartering it until they do), and decodes every batch once in
Arrow, measuring each, exactly as the import will. A file past a limit (too large decoded, a
value too long) is refused from what the child found, before the server reads any of it;
otherwise the server reads a file a child survived, in batches the child proved to fit, and
never touches the footer accessors itself.

    python parquet_arrow.py '{"max_decoded_bytes": ..., "max_cell_chars": ..., ...}' < FILE

prints one JSON object, see `probe` (and "grew": how far the child's resident memory rose).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# pandas stores a non-default index as "__index_level_N__" columns: not data.
PANDAS_INDEX = re.compile(r"__index_level_\d+__")
# Rows per batch to start with: about 8 MB of decompressed data (from the footer's average),
# at most 4,096 rows. The child halves it while a batch does not fit in its memory.
BATCH_BYTES = 8 * 1024**2
BATCH_ROWS = 4096
# The footer is bounded too: a 100 MB "string" in the metadata is not a dataset.
FOOTER_LIMITS = {"thrift_string_size_limit": 16 * 1024**2, "thrift_container_size_limit": 1_000_000}


def open_file(raw: bytes) -> Any:
    """A `pyarrow.parquet.ParquetFile` over the bytes, with the footer limits."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.ParquetFile(pa.BufferReader(raw), **FOOTER_LIMITS)


def data_columns(parquet: Any) -> list[str]:
    """Every top-level column but a pandas index."""
    return [n for n in parquet.schema_arrow.names if not PANDAS_INDEX.fullmatch(n)]


def footer(parquet: Any) -> dict[str, Any]:
    """What the footer says: rows, and per column chunk (row group, column path, decompressed
    bytes, values, whether it has a dictionary page). May abort the process on a damaged
    footer: call it in a child process only (`probe`)."""
    metadata = parquet.metadata
    chunks = []
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for leaf in range(row_group.num_columns):
            chunk = row_group.column(leaf)
            chunks.append([group, chunk.path_in_schema, chunk.total_uncompressed_size,
                           chunk.num_values, chunk.has_dictionary_page])
    return {"num_rows": metadata.num_rows, "chunks": chunks}


def longest_possible(max_cell_chars: int) -> int:
    """The most bytes one value within the cell limit can take in a column chunk: 4 bytes a
    character in UTF-8, stored at most 4 times (dictionary page, data page, a page's min and
    max statistics), plus headers. A chunk holding more per value has a value past the limit."""
    return 16 * max_cell_chars + 1024


def oversized_chunk(facts: dict[str, Any], max_cell_chars: int) -> list[Any] | None:
    """The first column chunk whose bytes prove a value longer than the cell limit, or None."""
    most = longest_possible(max_cell_chars)
    for chunk in facts["chunks"]:
        if chunk[2] > max(chunk[3], 1) * most:
            return chunk
    return None


def is_text(kind: Any) -> bool:
    """A string or binary type (the ones that can be read as dictionaries)."""
    import pyarrow as pa

    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or pa.types.is_binary(kind) or pa.types.is_large_binary(kind))


@dataclass(frozen=True)
class Measure:
    """A batch's decoded size in bytes (text and binary values counted once per row, other
    columns by their Arrow buffers), and its first over-long value if any."""

    size: int
    long_row: int | None = None  # index in the batch
    long_column: str | None = None
    long_chars: int | None = None


def measure(batch: Any, max_cell_chars: int) -> Measure:
    """Measure a batch in Arrow, before its dictionaries are expanded or it becomes Python."""
    import pyarrow.compute as pc

    total = 0
    for column, array in zip(batch.schema.names, batch.columns):
        lengths = _byte_lengths(array)
        if lengths is None:
            total += array.nbytes
            continue
        # Characters <= bytes: a column whose longest value in bytes is within the limit needs
        # no closer look; otherwise count characters to be exact.
        longest = pc.max(lengths).as_py() or 0
        if longest > max_cell_chars:
            chars = _char_lengths(array) if _is_string(array) else lengths
            index = pc.index(pc.greater(chars, max_cell_chars), True).as_py()
            if index >= 0:
                return Measure(total, index, column, pc.max(chars).as_py())
        total += pc.sum(lengths).as_py() or 0
    return Measure(total)


def decode(batch: Any) -> Any:
    """The batch with its dictionaries expanded (in Arrow: fast), ready for `to_pylist`."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in batch.columns],
        names=batch.schema.names,
    )


def batch_rows(facts: dict[str, Any]) -> int:
    """Rows per batch for this file (see `BATCH_BYTES`)."""
    unpacked = sum(chunk[2] for chunk in facts["chunks"])
    per_row = unpacked / max(facts["num_rows"], 1)
    return max(1, min(BATCH_ROWS, int(BATCH_BYTES / max(per_row, 1))))


def batches(parquet: Any, names: list[str], rows: int) -> Iterator[Any]:
    """The file's batches of `rows` rows, as read (a column the file's Arrow schema declares
    as dictionary-encoded, such as a pandas categorical, arrives as a dictionary)."""
    return parquet.iter_batches(batch_size=rows, columns=names, use_threads=False)


def _is_string(array: Any) -> bool:
    import pyarrow as pa

    kind = array.type.value_type if pa.types.is_dictionary(array.type) else array.type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _char_lengths(array: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(array.type):
        return pc.take(pc.utf8_length(array.dictionary), array.indices)
    return pc.utf8_length(array)


def _byte_lengths(array: Any) -> Any:
    """Byte length of each value of a text column (a dictionary column's values looked up
    through its indices), or None for other columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(array.type):
        if not is_text(array.type.value_type):
            return None
        return pc.take(pc.binary_length(array.dictionary), array.indices)
    if is_text(array.type):
        return pc.binary_length(array)
    return None


# ------------------------------------------------------------------------------ the child


def probe(raw: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """Do every Arrow step of the import (stopping where the import would), in this process.

    Args:
        options: max_decoded_bytes, max_cell_chars, max_rows, max_columns, and limit (the
            rows wanted, or None for all); `main` also reads memory (see there).

    Returns:
        {"error": what Arrow raised} when the footer cannot be read; else {"footer": what
        `footer` says, "rows": the batch size to read with, "decoded": the bytes measured,
        "over": True if that passed max_decoded_bytes, "long": [row, column, characters] of
        the first value past max_cell_chars}, with "error" too if Arrow raised an
        error after the footer (the import meets it at the same step and says what it
        means), and "memory": True if even one row at a time did not fit in the memory.
    """
    import pyarrow as pa

    try:
        parquet = open_file(raw)
        names = data_columns(parquet)
        facts = footer(parquet)
    except (pa.ArrowException, OSError, ValueError, MemoryError) as exc:
        return {"error": _first_line(exc)}
    result: dict[str, Any] = {"footer": facts, "rows": batch_rows(facts)}
    unpacked = sum(chunk[2] for chunk in facts["chunks"])
    leaves = sum(chunk[3] for chunk in facts["chunks"])
    if (facts["num_rows"] > options["max_rows"]
            or max(unpacked, 8 * leaves) > options["max_decoded_bytes"]
            or len(names) > options["max_columns"]
            or oversized_chunk(facts, options["max_cell_chars"]) is not None):
        return result  # the import refuses it from the footer: nothing to try
    while True:
        try:
            result.update(_decode_all(raw, names, result["rows"], options))
            return result
        except MemoryError as exc:  # ArrowMemoryError too: past the memory this child may use
            if result["rows"] == 1:
                return {**result, "error": _first_line(exc), "memory": True}
            result["rows"] = max(1, result["rows"] // 4)
        except (pa.ArrowException, OSError, ValueError, OverflowError) as exc:
            return {**result, "error": _first_line(exc)}


def _decode_all(raw: bytes, names: list[str], rows: int, options: dict[str, Any]) -> dict[str, Any]:
    """Read and measure every batch as the import will (stopping where it would)."""
    wanted = options["limit"]
    seen = decoded = 0
    for batch in batches(open_file(raw), names, rows):
        size = measure(batch, options["max_cell_chars"])
        decoded += size.size
        if size.long_row is not None:  # the import refuses this value without reading it
            return {"decoded": decoded, "over": False,
                    "long": [seen + size.long_row, size.long_column, size.long_chars]}
        if decoded > options["max_decoded_bytes"]:
            return {"decoded": decoded, "over": True}
        decode(batch)
        seen += batch.num_rows
        if wanted is not None and seen >= wanted:
            break
    return {"decoded": decoded, "over": False}


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:200]


def _status(key: str) -> int:
    """A /proc/self/status figure in bytes (0 where there is no /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _cap_memory(allowed: int) -> None:
    """Let this process allocate at most `allowed` more bytes of data, so that a file whose
    pages need more (one huge value hidden among small ones: Arrow takes about six times the
    value to read its page) fails here with a MemoryError instead of taking the machine's
    memory. Arrow uses the system allocator here (see `main`), which the limit applies to."""
    try:
        import resource

        used = _status("VmData")
        if used:
            resource.setrlimit(resource.RLIMIT_DATA, (used + allowed, used + allowed))
    except (ImportError, ValueError, OSError):  # not Linux: run without the cap
        pass


def main() -> None:
    # Before pyarrow loads: its own allocator reserves memory the data limit would count.
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    options = json.loads(sys.argv[1])
    raw = sys.stdin.buffer.read()
    import pyarrow.compute  # noqa: F401 - loaded before measuring: not the file's cost
    import pyarrow.parquet  # noqa: F401

    start = _status("VmHWM")
    _cap_memory(options["memory"])
    result = probe(raw, options)
    result["grew"] = max(0, _status("VmHWM") - start)
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main()
