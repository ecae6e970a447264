"""Hostile dataset files: the matrix of `tests/hostile_imports.py` under pytest.

Each file is generated in the test. Each must give a correct import (its exact values, also
after saving and reading back) or a DataError whose sentence names the file, where, and what
to do: no traceback, no silent change, nothing half-written, and for every bomb a bounded peak
of memory (tracemalloc plus Arrow's own allocations). For the figures, run
`.venv/bin/python -m tests.hostile_imports`.
"""

from __future__ import annotations

import io
import json
import pathlib
import random
import zipfile

import pytest
import sqlite_utils

from judging.errors import DataError
from judging.verdicts import Item
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from tests.fixtures_import import write_dataset_file
from tests.fixtures_storage import make_parsed
from tests.hostile_imports import CASES, MEMORY_BOUND, Accept, Case, Refuse, run_case


def test_the_matrix_covers_enough_ground() -> None:
    assert len(CASES) >= 50
    assert len({case.id for case in CASES}) == len(CASES)
    assert sum(isinstance(case.expect, Accept) for case in CASES) >= 15
    assert sum(isinstance(case.expect, Refuse) for case in CASES) >= 50
    assert sum(case.bomb for case in CASES) >= 10
    formats = {case.filename.rsplit(".", 1)[-1] for case in CASES}
    assert {"csv", "tsv", "jsonl", "json", "xlsx", "parquet"} <= formats


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_file(case: Case, db: sqlite_utils.Database) -> None:
    outcome = run_case(case, db)
    assert outcome.kind != "traceback", outcome.message
    assert not outcome.problems, outcome.problems
    if case.bomb:
        assert outcome.peak < MEMORY_BOUND


def test_a_parquet_file_too_big_for_the_childs_memory_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page that needs more memory than the child may use (a 256 MB value needs about
    1.5 GB against 1.1 GB) is refused before the server reads it: shown with a small cap."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from storage.datasets.readers import parquet as reader

    monkeypatch.setattr(reader, "_child_memory", lambda max_decoded_bytes: 8 * 1024**2)
    buffer = io.BytesIO()
    pq.write_table(pa.table({"text": ["x" * 10 * 1024**2] + ["s"] * 100}), buffer)
    with pytest.raises(DataError) as info:
        read_dataset(buffer.getvalue(), filename="big.parquet")
    message = str(info.value)
    assert message.startswith("big.parquet needs more than 8.0 MB of memory to read even one row")
    assert "refused before the server read it" in message and "Shorten" in message


def test_a_failure_while_saving_leaves_no_partial_dataset(db: sqlite_utils.Database) -> None:
    parsed = make_parsed(3000)
    # Item 2500 cannot be written (SQLite text cannot hold a lone surrogate, which is why the
    # importer refuses them): the insert fails after 2,500 rows went in.
    parsed.items[2500] = Item(id="bad", fields={"text": "\ud800"})
    with pytest.raises(UnicodeEncodeError):
        save_dataset(db, parsed)
    assert db.execute("SELECT count(*) FROM datasets").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM items").fetchone()[0] == 0


def _mutate(data: bytes, rng: random.Random) -> bytes:
    """A few random byte edits: flips, cuts, insertions, copies of other parts of the file."""
    out = bytearray(data)
    for _ in range(rng.choice([1, 2, 4, 16])):
        at = rng.randrange(len(out))
        edit = rng.random()
        if edit < 0.4:
            out[at] = rng.randrange(256)
        elif edit < 0.6:
            del out[at:at + rng.randrange(1, 64)]
        elif edit < 0.8:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        else:
            source = rng.randrange(len(out))
            out[at:at] = out[source:source + rng.randrange(1, 200)]
    return bytes(out)


def _mutate_parts(data: bytes, rng: random.Random) -> bytes:
    """The same edits inside a workbook's XML parts, re-zipped (so they reach the parser)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename.endswith(".xml") and rng.random() < 0.5:
                content = _mutate(content, rng)
            archive.writestr(info.filename, content)
    return buffer.getvalue()


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl", "json", "parquet", "xlsx"])
def test_damaged_files_give_sentences_never_tracebacks(tmp_path: pathlib.Path, ext: str) -> None:
    """Randomly damaged copies of a good file (seeded: the same every run) import or give a
    DataError, and whatever imports can be stored as it is (no NaN, infinity or surrogate)."""
    rows = [{"id": f"a{i}", "text": f'ü {i} "q", x', "n": i, "f": i / 3, "b": i % 2 == 0}
            for i in range(20)]
    good = write_dataset_file(tmp_path / f"good.{ext}", rows).read_bytes()
    rng = random.Random(f"jurybox-{ext}")
    for _ in range(10 if ext == "parquet" else 30):  # each Parquet read starts a child: slower
        damaged = _mutate_parts(good, rng) if ext == "xlsx" and rng.random() < 0.7 else _mutate(good, rng)
        try:
            parsed = read_dataset(damaged, filename=f"damaged.{ext}")
        except DataError as error:
            assert f"damaged.{ext}" in str(error)
            continue
        for item in parsed.items:
            json.dumps(item.fields, allow_nan=False).encode("utf-8")
