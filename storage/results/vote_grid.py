"""A run's stored votes as integer arrays (items x critics), for re-voting a whole run.

Why arrays and not `Verdict` objects: calibration votes every stored verdict again, twice, and
at 1,000,000 items x 3 critics three million `Verdict` objects took about 3 GB and 75 s. Here
each cell is a small integer: the index of the cell's stored (label, score) pair in `values`,
or `FAILED` / `ABSENT`; the critics' call ids say in which order an item's verdicts were
stored (the order a vote sees them in). Rows are read from SQLite a chunk at a time and
encoded at once, so no Python object per rating is ever held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import sqlite_utils

FAILED = -1
"""A stored call that failed (or gave neither label nor score): the vote counts it as failed."""
ABSENT = -2
"""No stored call of this critic on the item (a cascade tier not asked, say)."""

_CHUNK = 50_000


@dataclass(frozen=True)
class VoteGrid:
    """A run's stored votes, one row per item with a consensus row, in file order.

    Attributes:
        items: item ids, in row order (an object array).
        critics: the columns' critic names.
        codes: (items, critics) int32: an index into `values`, `FAILED` or `ABSENT`.
        values: the distinct stored (label, score) pairs of the valid verdicts.
        order: (items, critics) int64 call ids (0 where absent): an item's verdicts in
            ascending id are in the order they were stored.
        confidence: (items, critics) float64 stated confidences (NaN: none), only when asked.
    """

    items: npt.NDArray[Any]
    critics: list[str]
    codes: npt.NDArray[np.int32]
    values: list[tuple[str | None, float | None]]
    order: npt.NDArray[np.int64]
    confidence: npt.NDArray[np.float64] | None = None


def vote_grid(db: sqlite_utils.Database, run_id: int, critics: Sequence[str], *,
              confidence: bool = False) -> VoteGrid:
    """The stored votes of `critics` on every item of the run that has a consensus row (the
    items `storage.results.consensus.iter_panel_verdicts` yields, in its order).

    Args:
        db: this thread's connection.
        run_id: the run.
        critics: the columns, in this order (calls of other critics are left out).
        confidence: also read each verdict's stated confidence.
    """
    names = list(critics)
    picks = []
    for _ in names:
        # Per critic: its call id (0: absent), its label and score when the call succeeded.
        picks.append("coalesce(max(CASE WHEN k.critic = ? THEN k.id END), 0)")
        picks.append("max(CASE WHEN k.critic = ? AND k.failure IS NULL THEN k.label END)")
        picks.append("max(CASE WHEN k.critic = ? AND k.failure IS NULL THEN k.score END)")
        if confidence:
            picks.append("max(CASE WHEN k.critic = ? AND k.failure IS NULL THEN k.confidence END)")
    width = 4 if confidence else 3
    params: list[Any] = [name for name in names for _ in range(width)]
    # Grouped in the order of the consensus position index (position, then rowid: the index's
    # own order), so SQLite hands the rows over sorted, without a temporary B-tree; items that
    # share a position (only items outside the dataset, at 0) are put in item order below.
    cursor = db.conn.execute(
        f"SELECT c.item_id, c.position, {', '.join(picks) or 'NULL'} FROM consensus c"
        " LEFT JOIN calls k ON k.run_id = c.run_id AND k.item_id = c.item_id"
        " WHERE c.run_id = ? GROUP BY c.position, c.rowid ORDER BY c.position, c.rowid",
        [*params, run_id])
    index: dict[tuple[str | None, float | None], int] = {}
    items: list[npt.NDArray[Any]] = []
    positions: list[npt.NDArray[np.int64]] = []
    codes: list[npt.NDArray[np.int32]] = []
    order: list[npt.NDArray[np.int64]] = []
    conf: list[npt.NDArray[np.float64]] = []
    while True:
        rows = cursor.fetchmany(_CHUNK)
        if not rows:
            break
        table = np.array(rows, dtype=object).reshape(len(rows), 2 + width * len(names))
        del rows
        items.append(table[:, 0])
        positions.append(table[:, 1].astype(np.int64))
        block = np.empty((len(table), len(names)), dtype=np.int32)
        ids = np.empty((len(table), len(names)), dtype=np.int64)
        sure = np.full((len(table), len(names)), np.nan)
        for col in range(len(names)):
            base = 2 + col * width
            ids[:, col] = table[:, base].astype(np.int64)
            block[:, col] = _encode(table[:, base + 1], table[:, base + 2], index)
            if confidence:
                sure[:, col] = pd.to_numeric(pd.Series(table[:, base + 3]),
                                             errors="coerce").to_numpy(dtype=np.float64)
        block[ids == 0] = ABSENT
        codes.append(block)
        order.append(ids)
        conf.append(sure)
    n = len(names)
    grid = VoteGrid(
        items=np.concatenate(items) if items else np.zeros(0, dtype=object),
        critics=names,
        codes=np.concatenate(codes) if codes else np.zeros((0, n), dtype=np.int32),
        values=list(index),
        order=np.concatenate(order) if order else np.zeros((0, n), dtype=np.int64),
        confidence=(np.concatenate(conf) if conf else np.zeros((0, n))) if confidence else None,
    )
    where = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
    if len(where) and (np.diff(where) == 0).any():
        # `iter_panel_verdicts` orders by (position, item_id).
        resort = np.lexsort((grid.items.astype(str), where))
        grid = VoteGrid(grid.items[resort], names, grid.codes[resort], grid.values,
                        grid.order[resort],
                        None if grid.confidence is None else grid.confidence[resort])
    return grid


def _encode(labels: npt.NDArray[Any], scores: npt.NDArray[Any],
            index: dict[tuple[str | None, float | None], int]) -> npt.NDArray[np.int32]:
    """Each cell's (label, score) pair as its index in `index` (new pairs added), FAILED where
    both are missing. Factorised by pandas (a hash table in C), then a few pairs mapped."""
    out = np.full(len(labels), FAILED, dtype=np.int32)
    scored = ~np.asarray(pd.isna(scores), dtype=bool)
    plain = ~scored
    local, uniques = pd.factorize(labels[plain])
    mapping = np.array([index.setdefault((label, None), len(index)) for label in uniques]
                       + [FAILED], dtype=np.int32)
    out[plain] = mapping[local]  # -1 (no label) takes the trailing FAILED
    for row in np.flatnonzero(scored).tolist():  # a score on a label scale: rare, one by one
        label = labels[row]
        out[row] = index.setdefault((label, float(scores[row])), len(index))
    return out
