"""Human overrides: append-only history; the latest one is the item's final label.

An override saved in a blind first pass (`blind`), before its reviewer saw any critic's label
or reason, is the item's human label for judge-versus-human agreement: a label given after
reading every critic is anchored by them. Revisions after the reveal are ordinary overrides.

The table refuses UPDATE and DELETE (triggers), so a decision cannot be lost by a later edit;
"latest" is the highest id, which two concurrent writers cannot tie on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd
import sqlite_utils

from storage.db import NotFoundError, StorageError, now

_LATEST = (
    "SELECT o.* FROM overrides o JOIN (SELECT item_id, max(id) AS id FROM overrides"
    " WHERE run_id = :run GROUP BY item_id) m ON m.id = o.id"
)


def check_item(db: sqlite_utils.Database, run_id: int, item_id: str) -> None:
    """Raise `NotFoundError` unless the run exists and its dataset holds the item."""
    row = db.execute(
        "SELECT EXISTS (SELECT 1 FROM items i JOIN runs r ON r.dataset_id = i.dataset_id"
        " WHERE r.id = ? AND i.item_id = ?), EXISTS (SELECT 1 FROM runs WHERE id = ?)",
        [run_id, item_id, run_id],
    ).fetchone()
    if not row[1]:
        raise NotFoundError(f"There is no run with id {run_id}.")
    if not row[0]:
        raise NotFoundError(f"Run {run_id} has no item {item_id!r}.")


def _clean(label: str, reviewer: str) -> tuple[str, str]:
    label = (label or "").strip()
    reviewer = (reviewer or "").strip()
    if not label:
        raise StorageError("An override needs a label.")
    if not reviewer:
        raise StorageError("An override needs the reviewer's name, so the history says who decided.")
    return label, reviewer


def add_override(
    db: sqlite_utils.Database, run_id: int, item_id: str, label: str, note: str, reviewer: str,
    *, blind: bool = False, children: list[str] | None = None, merge_into: str | None = None,
    adjudication: bool = False,
) -> int:
    """Record a reviewer's label for an item (a new row; earlier ones stay in the history).

    The caller checks that `label` is on the panel's scale and that a curation decision's
    `children` (the new classes of a split) and `merge_into` fit it (storage knows neither).
    `blind`: given before the reviewer saw the critics (see the module's doc).
    `adjudication`: a lead's decision between reviewers who disagreed (`storage.assignments`).

    Returns:
        The override's id.

    Raises:
        StorageError: empty label or reviewer.
        NotFoundError: the run, or the item in the run's dataset, does not exist.
    """
    label, reviewer = _clean(label, reviewer)
    check_item(db, run_id, item_id)
    cursor = db.execute(
        "INSERT INTO overrides (run_id, item_id, label, note, reviewer, created_at, blind,"
        " children, merge_into, adjudication) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [run_id, item_id, label, (note or "").strip(), reviewer, now(), int(blind),
         json.dumps(children, ensure_ascii=False) if children else None, merge_into or None,
         int(adjudication)],
    )
    return int(cursor.lastrowid or 0)


def override_history(db: sqlite_utils.Database, run_id: int, item_id: str) -> list[dict[str, Any]]:
    """Every override of an item, oldest first: id, label, note, reviewer, created_at, blind,
    children (a list: the new classes of a split) and merge_into."""
    rows = db.query(
        "SELECT id, label, note, reviewer, created_at, blind, children, merge_into"
        " FROM overrides WHERE run_id = ? AND item_id = ? ORDER BY id",
        [run_id, item_id],
    )
    return [{**row, "blind": bool(row["blind"]), "children": json.loads(row["children"] or "[]")}
            for row in rows]


def blind_label(
    db: sqlite_utils.Database, run_id: int, item_id: str, reviewer: str
) -> dict[str, Any] | None:
    """The reviewer's blind label for the item (their first, if several), or None."""
    row = db.execute(
        "SELECT id, label, note, created_at FROM overrides WHERE run_id = ? AND item_id = ?"
        " AND reviewer = ? AND blind = 1 ORDER BY id LIMIT 1",
        [run_id, item_id, (reviewer or "").strip()],
    ).fetchone()
    if row is None:
        return None
    return dict(zip(("id", "label", "note", "created_at"), row))


def latest_overrides(db: sqlite_utils.Database, run_id: int) -> dict[str, dict[str, Any]]:
    """item_id -> its latest override (id, label, note, reviewer, created_at, blind, children
    as a list, merge_into)."""
    return {
        row["item_id"]: {**row, "blind": bool(row["blind"]),
                         "children": json.loads(row["children"] or "[]")}
        for row in db.query(_LATEST, {"run": run_id})
    }


def overrides_stamp(db: sqlite_utils.Database, run_id: int) -> tuple[int, int]:
    """(how many overrides the run holds, the newest one's id): overrides are append-only, so
    this pair changes with every decision recorded on the run (a label, a note, a blind
    label), and only then. A cache key for what is computed from the run's reviews."""
    count, newest = db.execute(
        "SELECT count(*), coalesce(max(id), 0) FROM overrides WHERE run_id = ?", [run_id]
    ).fetchone()
    return int(count), int(newest)


def human_labels(db: sqlite_utils.Database, run_id: int) -> dict[str, str]:
    """item_id -> the human label that judge-versus-human agreement uses: the item's first
    blind label where it has one (not anchored by the critics), else its latest override."""
    labels = {item_id: row["label"] for item_id, row in latest_overrides(db, run_id).items()}
    labels.update(blind_labels(db, run_id))
    return labels


def blind_labels(db: sqlite_utils.Database, run_id: int) -> dict[str, str]:
    """item_id -> its first blind label, for the items that have one."""
    return {
        item_id: label
        for item_id, label in db.execute(
            "SELECT o.item_id, o.label FROM overrides o JOIN (SELECT item_id, min(id) AS id"
            " FROM overrides WHERE run_id = ? AND blind = 1 GROUP BY item_id) f ON f.id = o.id",
            [run_id],
        )
    }


def final_labels(db: sqlite_utils.Database, run_id: int) -> pd.DataFrame:
    """The final label of every item of the run: its latest override, else the consensus.

    Returns:
        A DataFrame in item order with columns item_id, final_label, consensus, overridden
        (bool), override_label, override_note, reviewer, overridden_at.
    """
    frame = pd.read_sql_query(
        """
        SELECT c.item_id, coalesce(o.label, c.consensus) AS final_label, c.consensus,
               o.id IS NOT NULL AS overridden, o.label AS override_label,
               o.note AS override_note, o.reviewer, o.created_at AS overridden_at
        FROM consensus c
        LEFT JOIN (""" + _LATEST + """) o ON o.item_id = c.item_id
        WHERE c.run_id = :run
        ORDER BY c.position, c.item_id
        """,
        db.conn,
        params={"run": run_id},
    )
    frame["overridden"] = frame["overridden"].astype(bool)
    return frame


def accept_consensus(
    db: sqlite_utils.Database,
    run_id: int,
    item_ids: Iterable[str],
    reviewer: str,
    note: str = "accepted the consensus",
) -> int:
    """Record the consensus as the reviewer's label for each item, in one transaction.

    Items without a consensus label (the vote abstained) are skipped.

    Returns:
        How many overrides were added.

    Raises:
        StorageError: empty reviewer.
    """
    _, reviewer = _clean("consensus", reviewer)
    ids = [str(i) for i in item_ids]
    stamp = now()
    added = 0
    with db.atomic():
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            cursor = db.execute(
                "INSERT INTO overrides (run_id, item_id, label, note, reviewer, created_at)"
                " SELECT run_id, item_id, consensus, ?, ?, ? FROM consensus"
                f" WHERE run_id = ? AND consensus IS NOT NULL AND item_id IN ({marks})"
                " ORDER BY position",
                [(note or "").strip(), reviewer, stamp, run_id, *chunk],
            )
            added += cursor.rowcount
    return added
