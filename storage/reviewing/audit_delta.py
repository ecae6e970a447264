"""What changed in a run's audit since it was last read: the reads of the live audit
(`judging.runs.stored.audit_live`), each bounded by what is new rather than by the run.

Why apart from `storage.reviewing.audit`: those reads give the whole sample (or the whole run) and are
what the full recompute uses; these take a cursor (the last override id, the last draw order)
and return only what came after it, so a label costs a few rows whatever the run's size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlite_utils

from storage.reviewing.audit import _cuts, _stratum


def overrides_after(db: sqlite_utils.Database, run_id: int,
                    after_id: int) -> list[tuple[int, str, str, bool]]:
    """(id, item_id, label, blind) of the run's overrides with an id above `after_id`, in id
    order (a range of the table's rowid: only the new rows are read)."""
    return [(int(i), str(item), str(label), bool(blind)) for i, item, label, blind in db.execute(
        "SELECT id, item_id, label, blind FROM overrides WHERE id > ? AND run_id = ?"
        " ORDER BY id", [after_id, run_id])]


def last_override_id(db: sqlite_utils.Database) -> int:
    """The largest override id (0: none): where a live audit's reading of overrides starts."""
    return int(db.execute("SELECT coalesce(max(id), 0) FROM overrides").fetchone()[0])


def reviewed_items(db: sqlite_utils.Database, run_id: int, up_to_id: int) -> list[str]:
    """Every item of the run with an override of id up to `up_to_id`: read once when a live
    audit starts (it grows with the reviews, never with the run)."""
    return [str(item) for (item,) in db.execute(
        "SELECT DISTINCT item_id FROM overrides WHERE run_id = ? AND id <= ?",
        [run_id, up_to_id])]


def audit_items_after(db: sqlite_utils.Database, run_id: int, cuts: Mapping[str, float],
                      after_order: int) -> list[dict[str, Any]]:
    """The run's audit items with a draw order above `after_order`, in draw order: item_id,
    draw_order, queue_rank, `code` (its stratum code now) and `panel` (the panel's label)."""
    rows = db.execute(
        f"SELECT a.item_id, a.draw_order, a.queue_rank, {_stratum(cuts)}, c.consensus"
        " FROM audit_items a LEFT JOIN consensus c ON c.run_id = a.run_id AND c.item_id = a.item_id"
        " WHERE a.run_id = :run AND a.draw_order > :after ORDER BY a.draw_order",
        {"run": run_id, "after": after_order, **_cuts(cuts)}).fetchall()
    keys = ("item_id", "draw_order", "queue_rank", "code", "panel")
    return [dict(zip(keys, row)) for row in rows]


def first_blind_labels(db: sqlite_utils.Database, run_id: int,
                       item_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """item_id -> (id, label) of its first blind override, for those of `item_ids` that have
    one (by the overrides' item index: a few rows per item)."""
    out: dict[str, tuple[int, str]] = {}
    for start in range(0, len(item_ids), 500):
        chunk = [str(i) for i in item_ids[start : start + 500]]
        marks = ", ".join("?" for _ in chunk)
        for item, first in db.execute(
                f"SELECT item_id, min(id) FROM overrides WHERE run_id = ? AND item_id IN ({marks})"
                " AND blind = 1 GROUP BY item_id", [run_id, *chunk]):
            label = db.execute("SELECT label FROM overrides WHERE id = ?", [first]).fetchone()[0]
            out[str(item)] = (int(first), str(label))
    return out


def positions_of(db: sqlite_utils.Database, run_id: int, item_ids: Sequence[str]) -> list[int]:
    """The file positions of these items of the run (by the consensus key: one row each)."""
    out: list[int] = []
    for start in range(0, len(item_ids), 500):
        chunk = [str(i) for i in item_ids[start : start + 500]]
        marks = ", ".join("?" for _ in chunk)
        out.extend(int(p) for (p,) in db.execute(
            f"SELECT position FROM consensus WHERE run_id = ? AND item_id IN ({marks})",
            [run_id, *chunk]))
    return out


def stratum_by_position(db: sqlite_utils.Database, run_id: int,
                        cuts: Mapping[str, float]) -> tuple[list[int], list[int]]:
    """(positions, stratum codes) of every item of the run in file order: read once per state
    of the run's verdicts, so that fresh draws of the label-next queue need no further pass."""
    rows = db.execute(
        f"SELECT c.position, {_stratum(cuts)} FROM consensus c WHERE c.run_id = :run"
        " ORDER BY c.position", {"run": run_id, **_cuts(cuts)}).fetchall()
    return [int(p) for p, _ in rows], [int(h) for _, h in rows]


def items_at(db: sqlite_utils.Database, run_id: int, positions: Sequence[int]) -> dict[int, str]:
    """position -> item_id for these positions of the run (its position index, one row each)."""
    out: dict[int, str] = {}
    for start in range(0, len(positions), 500):
        chunk = [int(p) for p in positions[start : start + 500]]
        marks = ", ".join("?" for _ in chunk)
        out.update({int(p): str(i) for p, i in db.execute(
            f"SELECT position, item_id FROM consensus WHERE run_id = ? AND position IN ({marks})",
            [run_id, *chunk])})
    return out


def update_queue(db: sqlite_utils.Database, run_id: int, ranks: Mapping[str, int],
                 cleared: Sequence[str]) -> None:
    """Set the queue ranks of these audit items and clear those of `cleared`, in one
    transaction (the items whose place did not change are not touched)."""
    with db.atomic():
        db.conn.executemany(
            "UPDATE audit_items SET queue_rank = NULL WHERE run_id = ? AND item_id = ?",
            [(run_id, str(item)) for item in cleared])
        db.conn.executemany(
            "UPDATE audit_items SET queue_rank = ? WHERE run_id = ? AND item_id = ?",
            [(int(rank), run_id, str(item)) for item, rank in ranks.items()])
