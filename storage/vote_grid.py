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
    items `storage.consensus.iter_panel_verdicts` yields, in its order).

    Args:
        db: this thread's connection.
        run_id: the run.
        critics: the columns, in this order (calls of other critics are left out).
        confidence: also read each verdict's stated confidence.
    """
    names = list(critics)
    picks = []
    for _ in names:
        # Per critic: its call id (absent: NULL), its label and score when the call succeeded,
        # and whether it failed.
        picks.append("max(CASE WHEN k.critic = ? THEN k.id END)")
        picks.append("max(CASE WHEN k.critic = ? AND k.failure IS NULL THEN k.label END)")
        picks.append("max(CASE WHEN k.critic = ? AND k.failure IS NULL THEN k.score END)")
        if confidence:
            picks.append("max(CASE WHEN k.critic = ? AND k.failure IS NULL THEN k.confidence END)")
    width = 4 if confidence else 3
    params: list[Any] = [name for name in names for _ in range(width)]
    cursor = db.conn.execute(
        f"SELECT c.item_id, {', '.join(picks) or 'NULL'} FROM consensus c"
        " LEFT JOIN calls k ON k.run_id = c.run_id AND k.item_id = c.item_id"
        " WHERE c.run_id = ? GROUP BY c.position, c.item_id ORDER BY c.position, c.item_id",
        [*params, run_id])
    index: dict[tuple[str | None, float | None], int] = {}
    items: list[npt.NDArray[Any]] = []
    codes: list[npt.NDArray[np.int32]] = []
    order: list[npt.NDArray[np.int64]] = []
    conf: list[npt.NDArray[np.float64]] = []
    while True:
        rows = cursor.fetchmany(_CHUNK)
        if not rows:
            break
        columns = list(zip(*rows))
        items.append(np.array(columns[0], dtype=object))
        block = np.empty((len(rows), len(names)), dtype=np.int32)
        ids = np.zeros((len(rows), len(names)), dtype=np.int64)
        sure = np.full((len(rows), len(names)), np.nan)
        for col in range(len(names)):
            base = 1 + col * width
            call_ids, labels, scores = columns[base], columns[base + 1], columns[base + 2]
            keys = [index.setdefault((label, score), len(index))
                    if label is not None or score is not None else FAILED
                    for label, score in zip(labels, scores)]
            cell = np.array(keys, dtype=np.int32)
            present = np.array([i is not None for i in call_ids], dtype=bool)
            cell[~present] = ABSENT
            block[:, col] = cell
            ids[present, col] = np.array([i for i in call_ids if i is not None], dtype=np.int64)
            if confidence:
                sure[:, col] = np.array([np.nan if c is None else c for c in columns[base + 3]],
                                        dtype=np.float64)
        codes.append(block)
        order.append(ids)
        conf.append(sure)
        del rows, columns
    n = len(names)
    return VoteGrid(
        items=np.concatenate(items) if items else np.zeros(0, dtype=object),
        critics=names,
        codes=np.concatenate(codes) if codes else np.zeros((0, n), dtype=np.int32),
        values=list(index),
        order=np.concatenate(order) if order else np.zeros((0, n), dtype=np.int64),
        confidence=(np.concatenate(conf) if conf else np.zeros((0, n))) if confidence else None,
    )
