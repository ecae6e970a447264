"""Rubric runs: each critic's marks per criterion, the panel's vote per criterion, and a
reviewer's mark for one criterion (append-only, kept apart from item overrides: a criterion's
mark is not the item's label).

The marks themselves are written with the calls (`calls.marks`) and the consensus
(`consensus.marks`); this module reads them back in the shapes the statistics, Review and the
export need, and records reviewers' criterion marks.
"""

from __future__ import annotations

from typing import Any

import sqlite_utils

from storage.db import StorageError, loads, now
from storage.reviewing.overrides import check_item
from storage.reviewing.record_chain import seal_criterion_overrides, sealing


def add_criterion_override(db: sqlite_utils.Database, run_id: int, item_id: str,
                           criterion: str, mark: str, note: str, reviewer: str) -> int:
    """Record a reviewer's mark for one criterion of an item (a new row; the history stays).

    The caller checks that the criterion is the rubric's and the mark one of MET, UNMET and
    CANNOT_ASSESS (storage knows neither).

    Raises:
        StorageError: an empty criterion, mark or reviewer.
        NotFoundError: the run, or the item in its dataset, does not exist.
    """
    criterion, mark, reviewer = (criterion or "").strip(), (mark or "").strip(), \
        (reviewer or "").strip()
    if not criterion or not mark:
        raise StorageError("A criterion's mark needs the criterion and the mark.")
    if not reviewer:
        raise StorageError("A mark needs the reviewer's name, so the history says who decided.")
    check_item(db, run_id, item_id)
    with sealing(db):  # the mark and its place in the run's record (`storage.reviewing.record_chain`)
        cursor = db.execute(
            "INSERT INTO criterion_overrides (run_id, item_id, criterion, mark, note, reviewer,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [run_id, item_id, criterion, mark, (note or "").strip(), reviewer, now()],
        )
        mark_id = int(cursor.lastrowid or 0)
        seal_criterion_overrides(db, run_id, [mark_id])
    return mark_id


def criterion_override_history(db: sqlite_utils.Database, run_id: int,
                               item_id: str) -> list[dict[str, Any]]:
    """Every reviewer mark of an item's criteria, oldest first."""
    return list(db.query(
        "SELECT id, criterion, mark, note, reviewer, created_at FROM criterion_overrides"
        " WHERE run_id = ? AND item_id = ? ORDER BY id", [run_id, item_id]))


def final_marks(db: sqlite_utils.Database, run_id: int) -> dict[str, dict[str, str | None]]:
    """Each item's final mark per criterion: a reviewer's latest, else the panel's vote.
    item id -> criterion -> mark (None where the vote abstained)."""
    final: dict[str, dict[str, str | None]] = {}
    for item_id, marks in db.execute(
        "SELECT item_id, marks FROM consensus WHERE run_id = ? AND marks IS NOT NULL", [run_id]
    ):
        final[item_id] = {c: v.get("mark") for c, v in (loads(marks) or {}).items()}
    for item_id, criterion, mark in db.execute(
        "SELECT item_id, criterion, mark FROM criterion_overrides WHERE run_id = ? ORDER BY id",
        [run_id],
    ):
        final.setdefault(item_id, {})[criterion] = mark
    return final


def critic_marks(db: sqlite_utils.Database, run_id: int) -> list[tuple[str, str, str, str | None]]:
    """Every critic's mark of every criterion: (item id, critic, criterion, mark); a failed
    critic's row has no marks and gives none."""
    rows = []
    for item_id, critic, marks in db.execute(
        "SELECT item_id, critic, marks FROM calls WHERE run_id = ? AND marks IS NOT NULL"
        " AND failure IS NULL ORDER BY id", [run_id]
    ):
        for criterion, entry in (loads(marks) or {}).items():
            rows.append((item_id, critic, criterion, entry.get("mark")))
    return rows


def disputed_filter_sql(criterion: str | None) -> tuple[str, dict[str, Any]]:
    """The review filter "criteria in dispute" (of one criterion, when given) as SQL over the
    consensus row `c`."""
    params: dict[str, Any] = {}
    sql = ("EXISTS (SELECT 1 FROM json_each(c.marks) j"
           " WHERE json_extract(j.value, '$.disputed')")
    if criterion is not None:
        sql += " AND j.key = :disputed_criterion"
        params["disputed_criterion"] = criterion
    return sql + ")", params
