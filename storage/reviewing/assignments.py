"""Who reviews which items of a run, each reviewer's own labels, and their progress.

An assignment is written once per run (clear it to make another); it never touches overrides.
A reviewer's own label for an item is their first blind label if they gave one (unanchored by
the critics), else their latest override; a lead's adjudication is not a reviewer's label.
"""

from __future__ import annotations

import datetime as _dt
import json
import statistics
from collections.abc import Mapping
from typing import Any

import sqlite_utils

from storage.db import NotFoundError, StorageError, now


def _check_run(db: sqlite_utils.Database, run_id: int) -> None:
    if db.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is None:
        raise NotFoundError(f"There is no run with id {run_id}.")


def save_assignment(db: sqlite_utils.Database, run_id: int, plan: Mapping[str, list[str]]) -> int:
    """Record which reviewers review which items (item id -> reviewers), in one transaction.

    Returns:
        How many (item, reviewer) pairs were written.

    Raises:
        NotFoundError: no such run.
        StorageError: the run already has an assignment (clear it first), or an item is not
            one of the run's.
    """
    _check_run(db, run_id)
    if db.execute("SELECT 1 FROM assignments WHERE run_id = ? LIMIT 1", [run_id]).fetchone():
        raise StorageError(f"Run {run_id} already has an assignment: clear it first to make "
                           "another (the labels given so far stay).")
    known = {row[0] for row in db.execute(
        "SELECT item_id FROM consensus WHERE run_id = ?", [run_id])}
    unknown = [item for item in plan if item not in known]
    if unknown:
        raise StorageError(f"Run {run_id} has no item {unknown[0]!r} to assign.")
    stamp = now()
    rows = [(run_id, item, reviewer, stamp) for item, names in plan.items() for reviewer in names]
    with db.atomic():
        db.conn.executemany(
            "INSERT INTO assignments (run_id, item_id, reviewer, created_at) VALUES (?, ?, ?, ?)",
            rows,
        )
    return len(rows)


def clear_assignment(db: sqlite_utils.Database, run_id: int) -> int:
    """Remove the run's assignment (its labels stay). Returns the pairs removed."""
    with db.atomic():
        return db.execute("DELETE FROM assignments WHERE run_id = ?", [run_id]).rowcount


def assignment(db: sqlite_utils.Database, run_id: int) -> dict[str, list[str]]:
    """item id -> its reviewers, for the run's assigned items."""
    plan: dict[str, list[str]] = {}
    for item_id, reviewer in db.execute(
        "SELECT item_id, reviewer FROM assignments WHERE run_id = ? ORDER BY rowid", [run_id]
    ):
        plan.setdefault(item_id, []).append(reviewer)
    return plan


def assigned_count(db: sqlite_utils.Database, run_id: int, reviewer: str) -> int:
    """How many of the run's items are assigned to `reviewer`."""
    return int(db.execute("SELECT count(*) FROM assignments WHERE run_id = ? AND reviewer = ?",
                          [run_id, reviewer.strip()]).fetchone()[0])


# Each reviewer's own override of each item (see the module's doc), with `{columns}` of it.
_OWN_OVERRIDES = """
    SELECT o.item_id, o.reviewer, {columns} FROM overrides o JOIN (
        SELECT item_id, reviewer,
               coalesce(min(CASE WHEN blind = 1 THEN id END), max(id)) AS id
        FROM overrides WHERE run_id = ? AND adjudication = 0 GROUP BY item_id, reviewer
    ) own ON own.id = o.id
"""


def reviewer_labels(db: sqlite_utils.Database, run_id: int) -> dict[str, dict[str, str]]:
    """item id -> {reviewer: their own label} (see the module's doc), for every labelled item."""
    labels: dict[str, dict[str, str]] = {}
    for item_id, reviewer, label in db.execute(_OWN_OVERRIDES.format(columns="o.label"),
                                               [run_id]):
        labels.setdefault(item_id, {})[reviewer] = label
    return labels


def reviewer_decisions(db: sqlite_utils.Database, run_id: int) -> dict[str, dict[str, str]]:
    """item id -> {reviewer: their own decision in words}: the label, with a split's new
    classes ("SPLIT into Road; Trail", in sorted order) and a merge's target ("MERGE into
    Shoes"). Two reviewers who split a class into different classes disagree although their
    labels are the same: a conflict for a lead, where comparing labels saw none and the
    later decision silently won."""
    decisions: dict[str, dict[str, str]] = {}
    sql = _OWN_OVERRIDES.format(columns="o.label, o.children, o.merge_into")
    for item_id, reviewer, label, children, merge_into in db.execute(sql, [run_id]):
        text = str(label)
        new_classes = sorted(json.loads(children)) if children else []
        if new_classes:
            text += " into " + "; ".join(str(c) for c in new_classes)
        elif merge_into:
            text += f" into {merge_into}"
        decisions.setdefault(item_id, {})[reviewer] = text
    return decisions


def adjudicated_items(db: sqlite_utils.Database, run_id: int) -> set[str]:
    """Items a lead has adjudicated."""
    return {row[0] for row in db.execute(
        "SELECT DISTINCT item_id FROM overrides WHERE run_id = ? AND adjudication = 1", [run_id])}


def reviewer_progress(db: sqlite_utils.Database, run_id: int) -> list[dict[str, Any]]:
    """Per assigned reviewer: items assigned, labelled (by them), and left, by name."""
    return list(db.query(
        """
        SELECT a.reviewer, count(*) AS assigned,
               sum(EXISTS (SELECT 1 FROM overrides o WHERE o.run_id = a.run_id
                           AND o.item_id = a.item_id AND o.reviewer = a.reviewer
                           AND o.adjudication = 0)) AS labelled
        FROM assignments a WHERE a.run_id = ? GROUP BY a.reviewer ORDER BY a.reviewer
        """,
        [run_id],
    ))


# A gap between two labels longer than this is a break, not time spent on the second item.
PACE_BREAK_SECONDS = 15 * 60


def reviewer_pace(db: sqlite_utils.Database, run_id: int) -> list[dict[str, Any]]:
    """Per reviewer of the run (by name): labels given, labels per hour and median seconds per
    item, over their own labels (blind or not; a lead's adjudications left out).

    The time an item took is the gap since the reviewer's previous label in the run (the
    review loop opens the next item on a save). Gaps over `PACE_BREAK_SECONDS` are breaks: they
    count neither as time spent nor as an item timed. Labels per hour is timed items over
    the time spent. None where nothing could be timed (a single label, or only breaks).
    """
    stamps: dict[str, list[_dt.datetime]] = {}
    for reviewer, created in db.execute(
        "SELECT reviewer, created_at FROM overrides WHERE run_id = ? AND adjudication = 0"
        " ORDER BY reviewer, created_at", [run_id]
    ):
        stamps.setdefault(str(reviewer), []).append(_dt.datetime.fromisoformat(created))
    pace = []
    for reviewer, times in stamps.items():
        gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
        timed = [g for g in gaps if g <= PACE_BREAK_SECONDS]
        spent = sum(timed)
        pace.append({
            "reviewer": reviewer,
            "labels": len(times),
            "labels_per_hour": len(timed) / spent * 3600 if timed and spent > 0 else None,
            "median_seconds": statistics.median(timed) if timed else None,
        })
    return pace
