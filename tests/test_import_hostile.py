"""Hostile dataset files: the matrix of `tests/hostile_imports.py` under pytest.

Each file is generated in the test. Each must give a correct import (its exact values, also
after saving and reading back) or a DataError whose sentence names the file, where, and what
to do: no traceback, no silent change, nothing half-written, and for every bomb a bounded peak
of memory (tracemalloc plus Arrow's own allocations). For the figures, run
`.venv/bin/python -m tests.hostile_imports`.
"""

from __future__ import annotations

import pytest
import sqlite_utils

from judging.verdicts import Item
from storage.datasets import save_dataset
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


def test_a_failure_while_saving_leaves_no_partial_dataset(db: sqlite_utils.Database) -> None:
    parsed = make_parsed(3000)
    # Item 2500 cannot be written (SQLite text cannot hold a lone surrogate, which is why the
    # importer refuses them): the insert fails after 2,500 rows went in.
    parsed.items[2500] = Item(id="bad", fields={"text": "\ud800"})
    with pytest.raises(UnicodeEncodeError):
        save_dataset(db, parsed)
    assert db.execute("SELECT count(*) FROM datasets").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM items").fetchone()[0] == 0
