"""Reading a run's logprob scores back: each call's expected score and spread, each decision's
pooled distribution, for the export and the statistics (`judging.analysis.expected_stats`).

They are written with the calls and decisions (migration 0026); a run whose critics asked for
no logprobs has none, and every reader here then returns nothing, so its export keeps the shape
it always had.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import sqlite_utils

from storage.db import loads

# Export columns: the pooled figures, then per critic `<critic>: <name>`.
POOLED_COLUMNS = ("expected_score", "expected_spread", "consensus_probability")
CRITIC_COLUMNS = ("expected_score", "expected_spread")


def has_label_probs(db: sqlite_utils.Database, run_id: int) -> bool:
    """Whether any call of the run carries label probabilities."""
    return db.execute(
        "SELECT 1 FROM calls WHERE run_id = ? AND label_probs IS NOT NULL LIMIT 1", [run_id]
    ).fetchone() is not None


def expected_columns(db: sqlite_utils.Database, run_id: int, critics: list[str],
                     item_ids: pd.Series) -> dict[str, pd.Series]:
    """The export's logprob columns, in item order: `expected_score` and `expected_spread` (the
    panel's pooled ones), `consensus_probability` (the pooled probability of the consensus
    label), then `<critic>: expected_score` and `<critic>: expected_spread`. Empty cells where
    a figure does not exist (a critic without logprobs, a failed call, unordered labels); no
    columns at all for a run without label probabilities."""
    if not has_label_probs(db, run_id):
        return {}
    pooled: dict[str, tuple[Any, Any, Any]] = {}
    for item_id, consensus, probs, expected, spread in db.execute(
        "SELECT item_id, consensus, label_probs, expected_score, expected_spread"
        " FROM consensus WHERE run_id = ?", [run_id]):
        distribution = loads(probs) or {}
        pooled[item_id] = (expected, spread, distribution.get(consensus)
                           if consensus is not None and distribution else None)
    columns: dict[str, pd.Series] = {
        name: pd.Series([pooled.get(i, (None, None, None))[n] for i in item_ids],
                        index=item_ids.index, dtype="float64")
        for n, name in enumerate(POOLED_COLUMNS)
    }
    per_call: dict[tuple[str, str], tuple[Any, Any]] = {
        (critic, item_id): (expected, spread) for critic, item_id, expected, spread in db.execute(
            "SELECT critic, item_id, expected_score, expected_spread FROM calls"
            " WHERE run_id = ? AND failure IS NULL", [run_id])}
    for critic in critics:
        for n, name in enumerate(CRITIC_COLUMNS):
            columns[f"{critic}: {name}"] = pd.Series(
                [per_call.get((critic, i), (None, None))[n] for i in item_ids],
                index=item_ids.index, dtype="float64")
    return columns


def expected_score_rows(db: sqlite_utils.Database, run_id: int, critics: list[str]
                        ) -> tuple[list[str], list[list[float | None]]]:
    """Units x critics expected scores of the run's decided items (None where a critic has
    none), for an interval-level alpha.

    Returns:
        (item ids, one row per item with one value per critic in `critics` order).
    """
    by_item: dict[str, dict[str, float]] = {}
    for item_id, critic, expected in db.execute(
        "SELECT k.item_id, k.critic, k.expected_score FROM calls k JOIN consensus c"
        " ON c.run_id = k.run_id AND c.item_id = k.item_id"
        " WHERE k.run_id = ? AND k.failure IS NULL AND k.expected_score IS NOT NULL"
        " ORDER BY c.position, k.item_id", [run_id]):
        by_item.setdefault(item_id, {})[critic] = expected
    items = list(by_item)
    return items, [[by_item[i].get(c) for c in critics] for i in items]


def pooled_against_humans(db: sqlite_utils.Database, run_id: int
                          ) -> list[tuple[str, dict[str, float], str]]:
    """(item id, pooled label distribution, human label) for each decided item with a pooled
    distribution and a human label: the latest override, else the dataset's gold label."""
    rows = db.execute(
        "SELECT c.item_id, c.label_probs, coalesce((SELECT o.label FROM overrides o"
        " WHERE o.run_id = c.run_id AND o.item_id = c.item_id ORDER BY o.id DESC LIMIT 1),"
        " i.gold) FROM consensus c JOIN runs r ON r.id = c.run_id"
        " LEFT JOIN items i ON i.dataset_id = r.dataset_id AND i.item_id = c.item_id"
        " WHERE c.run_id = ? AND c.label_probs IS NOT NULL ORDER BY c.position, c.item_id",
        [run_id])
    return [(item_id, loads(probs) or {}, str(human))
            for item_id, probs, human in rows if human is not None]
