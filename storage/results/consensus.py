"""Per-item panel decisions: consensus, agreement, disagreement flag, failures, per-item alpha."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import sqlite_utils

from judging.verdicts import PanelVerdict, TierVerdict, VoteOutcome
from storage.db import dumps, loads
from storage.results.calls import load_verdicts_of, load_votes_of
from storage.results.jury_decisions import decision_text, jury_outcomes_of, write_jury_decisions


def _consensus_text(pv: PanelVerdict) -> tuple[str | None, float | None]:
    # A score panel: the label column holds the recommendation band when thresholds give one,
    # else the score as text, so that filters and exports have one label column either way.
    return decision_text(pv.outcome)


def write_consensus(db: sqlite_utils.Database, run_id: int, panel_verdicts: Iterable[PanelVerdict]) -> int:
    """Store (replace) the panel decision of each item, and for a panel of juries each jury's
    (`storage.results.jury_decisions`), in one transaction.

    Returns:
        How many items were written.
    """
    rows = []
    panel_verdicts = list(panel_verdicts)
    for pv in panel_verdicts:
        label, score = _consensus_text(pv)
        o = pv.outcome
        rows.append(
            (
                run_id, str(pv.item_id), run_id, str(pv.item_id), label, score, o.agreement,
                int(bool(o.disagreement)), int(o.failed), dumps(dict(o.counts)), pv.tier,
                pv.settled_by, pv.strategy, o.recommendation, o.spread, int(bool(o.tie)), o.note,
                dumps(o.marks) if o.marks else None,
                dumps(o.label_probs) if o.label_probs else None, o.expected_score,
                o.expected_spread,
                dumps([t.as_dict() for t in pv.tiers]) if pv.tiers else None,
            )
        )
    if not rows:
        return 0
    with db.atomic():
        db.conn.executemany(
            """
            INSERT INTO consensus (run_id, item_id, position, consensus, score, agreement,
                disagreement, failed, counts, tier, settled_by, strategy, recommendation, spread,
                tie, note, marks, label_probs, expected_score, expected_spread, tiers)
            VALUES (?, ?, coalesce((SELECT i.position FROM items i JOIN runs r
                                    ON r.dataset_id = i.dataset_id
                                    WHERE r.id = ? AND i.item_id = ?), 0),
                    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (run_id, item_id) DO UPDATE SET
                consensus = excluded.consensus, score = excluded.score,
                agreement = excluded.agreement, disagreement = excluded.disagreement,
                failed = excluded.failed, counts = excluded.counts, tier = excluded.tier,
                settled_by = excluded.settled_by, strategy = excluded.strategy,
                recommendation = excluded.recommendation, spread = excluded.spread,
                tie = excluded.tie, note = excluded.note, marks = excluded.marks,
                label_probs = excluded.label_probs, expected_score = excluded.expected_score,
                expected_spread = excluded.expected_spread,
                tiers = excluded.tiers
            """,
            rows,
        )
        write_jury_decisions(db, run_id, panel_verdicts)
    return len(rows)


def tier_verdicts(stored: str | None) -> list[TierVerdict]:
    """A decision's stored cascade sub-verdicts (the `tiers` column), oldest tier first."""
    return [TierVerdict.from_dict(entry) for entry in loads(stored) or []
            if isinstance(entry, dict)]


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
        row["label_probs"] = loads(row.get("label_probs")) or {}
        row["tiers"] = tier_verdicts(row.get("tiers"))
        row["disagreement"] = bool(row["disagreement"])
        row["tie"] = bool(row["tie"])
        out.append(row)
    return out


def consensus_values(db: sqlite_utils.Database, run_id: int, *, numeric: bool) -> dict[str, Any]:
    """item_id -> the run's decision (its score on a numeric scale, else its label), for the
    items that have one. One narrow query: the agreement report needs only this, and decoding
    every row as `load_consensus` does takes most of its time at a million items."""
    column = "score" if numeric else "consensus"
    return dict(db.execute(
        f"SELECT item_id, {column} FROM consensus WHERE run_id = ? AND {column} IS NOT NULL",
        [run_id],
    ).fetchall())


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
    order; items without a stored decision (a cancelled run) are left out. A whole run in
    memory: to go through a large one, use `iter_panel_verdicts`."""
    return list(iter_panel_verdicts(db, run_id))


def iter_panel_verdicts(
    db: sqlite_utils.Database, run_id: int, *, chunk_size: int = 1000, evidence: bool = True
) -> Iterator[PanelVerdict]:
    """`load_panel_verdicts` a chunk of items at a time: each chunk is two short queries (keyset
    on the item's position), so a large run is never held, nor one read kept open. Without
    `evidence`, the verdicts hold only what a vote reads (`storage.results.calls.load_votes_of`)."""
    load = load_verdicts_of if evidence else load_votes_of
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, not {chunk_size}")
    after: tuple[int, str] = (-(2**62), "")
    while True:
        rows = list(db.query(
            "SELECT * FROM consensus WHERE run_id = ? AND (position, item_id) > (?, ?)"
            " ORDER BY position, item_id LIMIT ?", [run_id, after[0], after[1], chunk_size]))
        if not rows:
            return
        ids = [row["item_id"] for row in rows]
        by_item: dict[str, list[Any]] = {}
        for verdict in load(db, run_id, ids):
            by_item.setdefault(verdict.item_id, []).append(verdict)
        juries = jury_outcomes_of(db, run_id, ids)
        for row in rows:
            value: str | float | None = (
                row["score"] if row["score"] is not None else row["consensus"])
            outcome = VoteOutcome(
                consensus=value, agreement=row["agreement"],
                disagreement=bool(row["disagreement"]), counts=loads(row["counts"]) or {},
                failed=row["failed"], recommendation=row["recommendation"],
                spread=row["spread"], tie=bool(row["tie"]), note=row["note"],
                label_probs=loads(row["label_probs"]) or {},
                expected_score=row["expected_score"], expected_spread=row["expected_spread"],
                juries=juries.get(row["item_id"], {}),
            )
            yield PanelVerdict(
                item_id=row["item_id"], outcome=outcome, verdicts=by_item.get(row["item_id"], []),
                strategy=row["strategy"] or "", tier=row["tier"], settled_by=row["settled_by"],
                tiers=tier_verdicts(row.get("tiers")),
            )
        if len(rows) < chunk_size:
            return
        after = (rows[-1]["position"], rows[-1]["item_id"])


def decision_counts(db: sqlite_utils.Database, run_id: int) -> list[tuple[Any, ...]]:
    """A run's stored decisions, counted by SQLite for its summary.

    Returns:
        Rows (consensus label, score, the item's gold label, items, disagreements): one per
        distinct combination.
    """
    return [tuple(row) for row in db.execute(
        "SELECT c.consensus, c.score, i.gold, count(*), coalesce(sum(c.disagreement), 0)"
        " FROM consensus c JOIN runs r ON r.id = c.run_id"
        " LEFT JOIN items i ON i.dataset_id = r.dataset_id AND i.item_id = c.item_id"
        " WHERE c.run_id = ? GROUP BY c.consensus, c.score, i.gold", [run_id])]


def decided_call_counts(db: sqlite_utils.Database, run_id: int) -> list[tuple[Any, ...]]:
    """The stored calls of a run's decided items, counted by SQLite for its summary.

    Returns:
        Rows (critic, failure, label, score, the item's gold label, calls, HTTP attempts of
        the calls not answered from the cache, cached calls, calls without a price, any
        simulated): one per distinct combination. A call "without a price" was sent
        (attempts > 0), has no cost, and either succeeded or reported tokens
        (`judging.engine.ledger.Ledger` decides the same for a verdict in memory).
    """
    return [tuple(row) for row in db.execute(
        "SELECT k.critic, k.failure, k.label, k.score, i.gold, count(*),"
        " coalesce(sum(k.attempts) FILTER (WHERE NOT k.cached), 0),"
        " count(*) FILTER (WHERE k.cached),"
        " count(*) FILTER (WHERE k.attempts > 0 AND k.cost_usd IS NULL AND (k.failure IS NULL"
        "   OR coalesce(k.tokens_in, 0) > 0 OR coalesce(k.tokens_out, 0) > 0)),"
        " coalesce(max(k.simulated), 0)"
        " FROM calls k JOIN consensus c ON c.run_id = k.run_id AND c.item_id = k.item_id"
        " JOIN runs r ON r.id = k.run_id"
        " LEFT JOIN items i ON i.dataset_id = r.dataset_id AND i.item_id = k.item_id"
        " WHERE k.run_id = ? GROUP BY k.critic, k.failure, k.label, k.score, i.gold",
        [run_id])]


def run_gold_labels(db: sqlite_utils.Database, run_id: int) -> list[str]:
    """The distinct gold labels of a run's dataset (to tell whether they are on its scale)."""
    return [row[0] for row in db.execute(
        "SELECT DISTINCT i.gold FROM items i JOIN runs r ON r.dataset_id = i.dataset_id"
        " WHERE r.id = ? AND i.gold IS NOT NULL ORDER BY 1", [run_id])]


def tie_count(db: sqlite_utils.Database, run_id: int) -> int:
    """How many items of a run had a tied vote that the tie rule decided."""
    return int(db.execute(
        "SELECT count(*) FROM consensus WHERE run_id = ? AND tie", [run_id]).fetchone()[0])


# -- ratings for per-item alpha, a chunk of items at a time -------------------------------------
#
# Per-item alpha needs the dataset's expected disagreement (from aggregates over every rating)
# and then each item's own ratings: read here in chunks of items, so a run of a million items
# never becomes one table in memory. A rating is the label (the score on numeric scales) of a
# call without a failure; the column is chosen from this allow-list, never from input.
_RATING_COLUMN = {False: "label", True: "score"}


def rating_aggregates(
    db: sqlite_utils.Database, run_id: int, critics: list[str], *, numeric: bool
) -> tuple[list[Any], dict[Any, int], int]:
    """What the dataset-wide half of per-item alpha needs, counted by SQLite.

    Args:
        critics: the panel's critics (ratings of any other name are left out).
        numeric: rate by score (numeric scales) rather than by label.

    Returns:
        (every distinct valid rating, sorted; rating -> its count over items with two or more
        valid ratings; how many items have two or more valid ratings).
    """
    column = _RATING_COLUMN[numeric]
    valid = (
        f"WITH v AS (SELECT item_id, {column} AS value FROM calls WHERE run_id = ?"
        f" AND failure IS NULL AND {column} IS NOT NULL"
        " AND critic IN (SELECT value FROM json_each(?))),"
        " p AS (SELECT item_id FROM v GROUP BY item_id HAVING count(*) >= 2) "
    )
    params = [run_id, dumps(list(critics))]
    present = [r[0] for r in db.execute(valid + "SELECT DISTINCT value FROM v ORDER BY 1", params)]
    counts = {
        value: int(n)
        for value, n in db.execute(
            valid + "SELECT value, count(*) FROM v WHERE item_id IN (SELECT item_id FROM p)"
            " GROUP BY value", params)
    }
    n_pairable = int(db.execute(valid + "SELECT count(*) FROM p", params).fetchone()[0])
    return present, counts, n_pairable


def rating_chunks(
    db: sqlite_utils.Database,
    run_id: int,
    critics: list[str],
    *,
    numeric: bool,
    chunk_size: int = 5000,
) -> Iterator[tuple[list[str], list[list[Any]]]]:
    """The run's ratings, a chunk of items at a time, in item order.

    Each chunk is (item ids, one row per item: the rating of each critic in `critics` order,
    None where it failed or is missing). Items without any stored call are left out. Every
    chunk is its own short query (keyset on the item position), so no read stays open while
    the caller writes.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, not {chunk_size}")
    column = _RATING_COLUMN[numeric]
    dataset_row = db.execute("SELECT dataset_id FROM runs WHERE id = ?", [run_id]).fetchone()
    if dataset_row is None:
        return
    dataset_id = dataset_row[0]
    place = {name: n for n, name in enumerate(critics)}
    after = -1
    while True:
        last = db.execute(
            "SELECT max(position) FROM (SELECT position FROM items WHERE dataset_id = ?"
            " AND position > ? ORDER BY position LIMIT ?)", [dataset_id, after, chunk_size],
        ).fetchone()[0]
        if last is None:
            return
        ids: list[str] = []
        rows: list[list[Any]] = []
        current = None
        for item_id, critic, value in db.execute(
            f"SELECT k.item_id, k.critic, CASE WHEN k.failure IS NULL THEN k.{column} END"
            " FROM items i JOIN calls k ON k.run_id = ? AND k.item_id = i.item_id"
            " WHERE i.dataset_id = ? AND i.position > ? AND i.position <= ?"
            " ORDER BY i.position, k.critic", [run_id, dataset_id, after, last],
        ).fetchall():
            if item_id != current:
                current = item_id
                ids.append(item_id)
                rows.append([None] * len(critics))
            at = place.get(critic)
            if at is not None:
                rows[-1][at] = value
        if ids:
            yield ids, rows
        after = last
