"""Per-item panel decisions: consensus, agreement, disagreement flag, failures, per-item alpha."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import sqlite_utils

from judging.verdicts import PanelVerdict, VoteOutcome
from storage.calls import load_verdicts
from storage.db import dumps, loads


def _consensus_text(pv: PanelVerdict) -> tuple[str | None, float | None]:
    value = pv.outcome.consensus
    if value is None:
        return None, None
    if isinstance(value, str):
        return value, None
    # A score panel: the label column holds the recommendation band when thresholds give one,
    # else the score as text, so that filters and exports have one label column either way.
    number = float(value)
    return (pv.outcome.recommendation or f"{number:g}"), number


def write_consensus(db: sqlite_utils.Database, run_id: int, panel_verdicts: Iterable[PanelVerdict]) -> int:
    """Store (replace) the panel decision of each item, in one transaction.

    Returns:
        How many items were written.
    """
    rows = []
    for pv in panel_verdicts:
        label, score = _consensus_text(pv)
        o = pv.outcome
        rows.append(
            (
                run_id, str(pv.item_id), run_id, str(pv.item_id), label, score, o.agreement,
                int(bool(o.disagreement)), int(o.failed), dumps(dict(o.counts)), pv.tier,
                pv.settled_by, pv.strategy, o.recommendation, o.spread, int(bool(o.tie)), o.note,
                dumps(o.marks) if o.marks else None,
            )
        )
    if not rows:
        return 0
    with db.atomic():
        db.conn.executemany(
            """
            INSERT INTO consensus (run_id, item_id, position, consensus, score, agreement,
                disagreement, failed, counts, tier, settled_by, strategy, recommendation, spread,
                tie, note, marks)
            VALUES (?, ?, coalesce((SELECT i.position FROM items i JOIN runs r
                                    ON r.dataset_id = i.dataset_id
                                    WHERE r.id = ? AND i.item_id = ?), 0),
                    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (run_id, item_id) DO UPDATE SET
                consensus = excluded.consensus, score = excluded.score,
                agreement = excluded.agreement, disagreement = excluded.disagreement,
                failed = excluded.failed, counts = excluded.counts, tier = excluded.tier,
                settled_by = excluded.settled_by, strategy = excluded.strategy,
                recommendation = excluded.recommendation, spread = excluded.spread,
                tie = excluded.tie, note = excluded.note, marks = excluded.marks
            """,
            rows,
        )
    return len(rows)


def set_item_alpha(db: sqlite_utils.Database, run_id: int, alphas: Mapping[str, float | None]) -> int:
    """Store the per-item alpha (`1 - D_o(u) / D_e(dataset)`) of each item; None = undefined.

    Returns:
        How many consensus rows were updated.
    """
    rows = [
        (None if a is None or (isinstance(a, float) and math.isnan(a)) else float(a), run_id, str(i))
        for i, a in alphas.items()
    ]
    with db.atomic():
        cursor = db.conn.executemany(
            "UPDATE consensus SET item_alpha = ? WHERE run_id = ? AND item_id = ?", rows
        )
    return cursor.rowcount


def load_consensus(db: sqlite_utils.Database, run_id: int) -> list[dict[str, Any]]:
    """Every stored decision of the run, in item order (counts and a rubric's marks decoded)."""
    out = []
    for row in db.query(
        "SELECT * FROM consensus WHERE run_id = ? ORDER BY position, item_id", [run_id]
    ):
        row["counts"] = loads(row["counts"]) or {}
        row["marks"] = loads(row.get("marks")) or {}
        row["disagreement"] = bool(row["disagreement"])
        row["tie"] = bool(row["tie"])
        out.append(row)
    return out


def consensus_summary(db: sqlite_utils.Database, run_id: int) -> dict[str, Any]:
    """Counts for a run's summary: items decided, per consensus label, disagreements, failures."""
    by_label = {
        (label if label is not None else "(none)"): n
        for label, n in db.execute(
            "SELECT consensus, count(*) FROM consensus WHERE run_id = ? GROUP BY consensus"
            " ORDER BY count(*) DESC",
            [run_id],
        )
    }
    row = db.execute(
        "SELECT count(*), coalesce(sum(disagreement), 0), count(*) FILTER (WHERE failed > 0)"
        " FROM consensus WHERE run_id = ?",
        [run_id],
    ).fetchone()
    return {"items": row[0], "by_label": by_label, "disagreements": row[1], "with_failures": row[2]}


def load_panel_verdicts(db: sqlite_utils.Database, run_id: int) -> list[PanelVerdict]:
    """The run's stored decisions rebuilt as `PanelVerdict`s (with every stored verdict), in item
    order; items without a stored decision (a cancelled run) are left out."""
    by_item: dict[str, list[Any]] = {}
    for verdict in load_verdicts(db, run_id):
        by_item.setdefault(verdict.item_id, []).append(verdict)
    out = []
    for row in load_consensus(db, run_id):
        value: str | float | None = row["score"] if row["score"] is not None else row["consensus"]
        outcome = VoteOutcome(
            consensus=value, agreement=row["agreement"], disagreement=row["disagreement"],
            counts=row["counts"], failed=row["failed"], recommendation=row["recommendation"],
            spread=row["spread"], tie=row["tie"], note=row["note"],
        )
        out.append(PanelVerdict(
            item_id=row["item_id"], outcome=outcome, verdicts=by_item.get(row["item_id"], []),
            strategy=row["strategy"] or "", tier=row["tier"], settled_by=row["settled_by"],
        ))
    return out


def tie_count(db: sqlite_utils.Database, run_id: int) -> int:
    """How many items of a run had a tied vote that the tie rule decided."""
    return int(db.execute(
        "SELECT count(*) FROM consensus WHERE run_id = ? AND tie", [run_id]).fetchone()[0])
