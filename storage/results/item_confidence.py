"""Each item's posterior that its consensus label is right, kept per run (migration 0030).

Why kept: the audit's "confidence" strata (`judging.analysis.audit_design`) put every item in
a stratum by this posterior, and the draws, the stratum sizes and the live audit read the
stratum in SQL (`storage.reviewing.audit`), as they read the agreement. The posterior is a Dawid-Skene fit
over the whole run's verdicts (`judging.analysis.audit_strata`), so it is computed once per state
of the verdicts (`judging.runs.stored.kept_figures.consensus_confidence`) and read here; the rows carry
no stamp of their own: the run's `consensus_confidence` figures name the state they are for.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlite_utils


def confidence_inputs(db: sqlite_utils.Database, run_id: int, critics: Sequence[str]
                      ) -> tuple[list[str], list[tuple[str | None, ...]], list[str | None]]:
    """What the posterior is fitted on, one entry per item of the run with a decision: (item
    ids, each item's critics' valid labels in the order of `critics` (None: the call failed or
    was not made), its consensus label (None: none)). No human label is read."""
    picks = "".join(
        ", max(CASE WHEN k.critic = ? AND k.failure IS NULL THEN k.label END)" for _ in critics)
    rows = db.conn.execute(
        f"SELECT c.item_id, c.consensus{picks} FROM consensus c LEFT JOIN calls k"
        " ON k.run_id = c.run_id AND k.item_id = c.item_id WHERE c.run_id = ?"
        " GROUP BY c.item_id", [*critics, run_id]).fetchall()
    ids = [str(row[0]) for row in rows]
    consensus = [None if row[1] is None else str(row[1]) for row in rows]
    votes = [tuple(None if v is None else str(v) for v in row[2:]) for row in rows]
    return ids, votes, consensus


def save_confidence(db: sqlite_utils.Database, run_id: int, item_ids: Sequence[str],
                    confidence: Sequence[float]) -> None:
    """Replace the run's posteriors with these (an item whose value is NaN, having no consensus
    label, gets no row), in one transaction (nested in the caller's when there is one)."""
    with db.atomic():
        db.execute("DELETE FROM item_confidence WHERE run_id = ?", [run_id])
        db.conn.executemany(
            "INSERT INTO item_confidence (run_id, item_id, confidence) VALUES (?, ?, ?)",
            ((run_id, str(item), float(q)) for item, q in zip(item_ids, confidence, strict=True)
             if q == q))  # NaN != NaN


def confidence_of(db: sqlite_utils.Database, run_id: int) -> dict[str, float]:
    """item_id -> its kept posterior (items without a consensus label are absent)."""
    return {str(item): float(q) for item, q in db.execute(
        "SELECT item_id, confidence FROM item_confidence WHERE run_id = ?", [run_id])}
