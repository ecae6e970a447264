"""A run's audit sample: the items drawn at random for a blind review, with their design.

Why a table of its own: the estimate of the panel's accuracy (`judging.analysis.audit_stats`) may only
use items chosen at random, never the ones a human looked at because the critics disagreed.
An item is in the audit by being drawn here; its human label is its first blind label
(`storage.reviewing.overrides`, `blind`). Overrides of items outside the sample, and non-blind ones, never
reach the estimate.

Strata are the panel's agreement levels (samples drawn by "agreement") or its confidence in its
label (by "confidence": the posterior kept per item in `item_confidence`, see
`storage.results.item_confidence`); each sampled item records its sample's design
(`judging.analysis.audit_design`). Their cut points belong to the domain
(`judging.analysis.audit_design.design_cuts`) and arrive here as parameters, bound like any
value, so the SQL below and the Python there put an item in the same stratum.

Each draw is sealed into the run's verifiable record as it is added (`storage.reviewing.record_chain`,
chain version 3): an audit row edited, deleted or inserted behind the app's back is named by
`jurybox verify`. The label-next queue's `queue_rank` is not sealed: it is an order to work in,
rewritten after every label.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlite_utils

from storage.db import NotFoundError, StorageError, now
from storage.reviewing.record_chain import seal_audit_items, sealing

# The stratum code of consensus row `c` by agreement (0 unanimous, 1 majority, 2 contested; no
# agreement at all, when no critic gave a valid verdict, is contested).
_BY_AGREEMENT = ("CASE WHEN c.agreement >= :unanimous THEN 0 WHEN c.agreement > :majority THEN 1"
                 " ELSE 2 END")
# By the posterior that the consensus is right (`item_confidence`: 0 sure, 1 likely, 2 doubtful;
# an item without a row, having no consensus label, is doubtful). One key lookup per item.
_BY_CONFIDENCE = ("coalesce((SELECT CASE WHEN q.confidence >= :sure THEN 0 WHEN q.confidence"
                  " >= :likely THEN 1 ELSE 2 END FROM item_confidence q WHERE q.run_id = c.run_id"
                  " AND q.item_id = c.item_id), 2)")

# The label-next sort of the Review table (`storage.reviewing.review_queue.SORTS["label_next"]`): the queue's
# items by rank, then every other item.
QUEUE_RANK_SQL = ("coalesce((SELECT a.queue_rank FROM audit_items a WHERE a.run_id = c.run_id"
                  " AND a.item_id = c.item_id), 9000000000000000)")


def _cuts(cuts: Mapping[str, float]) -> dict[str, float]:
    """The cut points as bound parameters: `unanimous` and `majority` (strata by agreement), or
    `sure` and `likely` (strata by confidence)."""
    keys = ("sure", "likely") if "sure" in cuts else ("unanimous", "majority")
    try:
        return {key: float(cuts[key]) for key in keys}
    except KeyError as missing:
        raise StorageError(f"The strata need the cut point {missing}.") from None


def _stratum(cuts: Mapping[str, float]) -> str:
    """The SQL of consensus row `c`'s stratum code under these cut points (`_cuts`)."""
    return _BY_CONFIDENCE if "sure" in cuts else _BY_AGREEMENT


def _check_run(db: sqlite_utils.Database, run_id: int) -> None:
    if db.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is None:
        raise NotFoundError(f"There is no run with id {run_id}.")


def audit_population(db: sqlite_utils.Database, run_id: int,
                     cuts: Mapping[str, float]) -> dict[str, Any]:
    """What is known of every item of the run, per stratum code.

    Returns:
        {"sizes": {code: items}, "panel": {(code, label): items the panel gave it},
        "critics": {(critic, code): items where the critic gave a valid label}}.
        An item without a consensus label is in "sizes" only.

    Raises:
        NotFoundError: no such run.
    """
    _check_run(db, run_id)
    params: dict[str, Any] = {"run": run_id, **_cuts(cuts)}
    sizes: dict[int, int] = {}
    panel: dict[tuple[int, str], int] = {}
    for code, label, n in db.execute(
        f"SELECT {_stratum(cuts)}, c.consensus, count(*) FROM consensus c WHERE c.run_id = :run"
        " GROUP BY 1, 2", params,
    ):
        sizes[int(code)] = sizes.get(int(code), 0) + int(n)
        if label is not None:
            panel[(int(code), str(label))] = int(n)
    critics = {
        (str(critic), int(code)): int(n)
        for critic, code, n in db.execute(
            f"SELECT k.critic, {_stratum(cuts)}, count(*) FROM calls k JOIN consensus c"
            " ON c.run_id = k.run_id AND c.item_id = k.item_id WHERE k.run_id = :run"
            " AND k.failure IS NULL AND k.label IS NOT NULL GROUP BY 1, 2", params)
    }
    return {"sizes": sizes, "panel": panel, "critics": critics}


def stratum_sizes(db: sqlite_utils.Database, run_id: int,
                  cuts: Mapping[str, float]) -> dict[int, int]:
    """Items of the run per stratum code (one pass over its consensus rows, no calls)."""
    _check_run(db, run_id)
    return {int(code): int(n) for code, n in db.execute(
        f"SELECT {_stratum(cuts)}, count(*) FROM consensus c WHERE c.run_id = :run GROUP BY 1",
        {"run": run_id, **_cuts(cuts)})}


def unsampled_items(db: sqlite_utils.Database, run_id: int,
                    cuts: Mapping[str, float]) -> list[tuple[str, int]]:
    """(item_id, stratum code) of every item of the run not yet in its audit sample, in file
    order: the candidates of a draw."""
    _check_run(db, run_id)
    return [
        (str(item_id), int(code))
        for item_id, code in db.execute(
            f"SELECT c.item_id, {_stratum(cuts)} FROM consensus c WHERE c.run_id = :run AND NOT EXISTS"
            " (SELECT 1 FROM audit_items a WHERE a.run_id = c.run_id AND a.item_id = c.item_id)"
            " ORDER BY c.position", {"run": run_id, **_cuts(cuts)})
    ]


def add_audit_items(db: sqlite_utils.Database, run_id: int, rows: Sequence[Mapping[str, Any]],
                    *, source: str, design: str) -> int:
    """Append items to the run's audit sample, in the order given (their `draw_order` follows
    the sample's last), in one transaction.

    Args:
        rows: one mapping per item: item_id, stratum (its name), stratum_size, weight.
        source: "draw" (an audit sample drawn at once) or "next" (drawn by the label-next queue).
        design: the sample's design, "agreement" or "confidence" (the strata the rows name).

    Returns:
        How many were added.

    Raises:
        NotFoundError: no such run.
        StorageError: an unknown source or design, an item already in the sample, or a design
            other than the one the run's sample was drawn with.
    """
    if source not in ("draw", "next"):
        raise StorageError(f"An audit item comes from a draw or the label-next queue, not {source!r}.")
    if design not in ("agreement", "confidence"):
        raise StorageError(f"An audit sample is drawn by agreement or confidence, not {design!r}.")
    _check_run(db, run_id)
    stamp = now()
    # The draws and their place in the run's record (`storage.reviewing.record_chain`): both or neither.
    with sealing(db):
        kept = sample_design(db, run_id)
        if kept is not None and kept != design:
            raise StorageError(f"This run's audit sample was drawn by {kept}: its items are "
                               f"weighted by those strata, so it cannot grow by {design}.")
        start = int(db.execute("SELECT coalesce(max(draw_order), -1) + 1 FROM audit_items"
                               " WHERE run_id = ?", [run_id]).fetchone()[0])
        try:
            db.conn.executemany(
                "INSERT INTO audit_items (run_id, item_id, stratum, stratum_size, weight, source,"
                " draw_order, created_at, design) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, str(r["item_id"]), str(r["stratum"]), int(r["stratum_size"]),
                  float(r["weight"]), source, start + n, stamp, design)
                 for n, r in enumerate(rows)],
            )
        except sqlite3.IntegrityError:
            raise StorageError("An item is already in the audit sample: draw again to add "
                               "others.") from None
        seal_audit_items(db, run_id, (str(r["item_id"]) for r in rows))
    return len(rows)


def sample_design(db: sqlite_utils.Database, run_id: int) -> str | None:
    """The design the run's audit sample was drawn with ("agreement" or "confidence"), None when
    nothing is drawn yet (its first item's: a sample has one)."""
    row = db.execute("SELECT design FROM audit_items WHERE run_id = ? ORDER BY draw_order"
                     " LIMIT 1", [run_id]).fetchone()
    return None if row is None else str(row[0])


def confidence_sums(db: sqlite_utils.Database, run_id: int,
                    cuts: Mapping[str, float]) -> dict[int, float]:
    """Stratum code -> the sum over its items of the posterior that the consensus is right
    (`item_confidence`; an item without one counts 0): with the strata's sizes, each
    stratum's mean posterior, the prediction the "confidence" design's queue is planned from."""
    _check_run(db, run_id)
    return {int(code): float(total) for code, total in db.execute(
        f"SELECT {_stratum(cuts)}, sum(coalesce((SELECT q.confidence FROM item_confidence q"
        " WHERE q.run_id = c.run_id AND q.item_id = c.item_id), 0.0)) FROM consensus c"
        " WHERE c.run_id = :run GROUP BY 1", {"run": run_id, **_cuts(cuts)})}


def audit_items(db: sqlite_utils.Database, run_id: int,
                cuts: Mapping[str, float]) -> list[dict[str, Any]]:
    """The run's audit sample in draw order, each item with what the estimate needs.

    Returns:
        One dict per item: item_id, stratum (the name it was drawn from), stratum_size, weight,
        source, draw_order, queue_rank, created_at, design; `code`: its stratum code now (from its
        current agreement); `panel`: the panel's label (None: no consensus label); `human`: its
        first blind label (None: not labelled blind yet) and `human_id`, that override's id.
    """
    _check_run(db, run_id)
    rows = db.execute(
        "SELECT a.item_id, a.stratum, a.stratum_size, a.weight, a.source, a.draw_order,"
        f" a.queue_rank, a.created_at, a.design, {_stratum(cuts)}, c.consensus, o.label, o.id"
        " FROM audit_items a LEFT JOIN consensus c ON c.run_id = a.run_id AND c.item_id = a.item_id"
        " LEFT JOIN (SELECT item_id, min(id) AS id FROM overrides WHERE run_id = :run AND blind = 1"
        " GROUP BY item_id) f ON f.item_id = a.item_id LEFT JOIN overrides o ON o.id = f.id"
        " WHERE a.run_id = :run ORDER BY a.draw_order", {"run": run_id, **_cuts(cuts)},
    ).fetchall()
    keys = ("item_id", "stratum", "stratum_size", "weight", "source", "draw_order", "queue_rank",
            "created_at", "design", "code", "panel", "human", "human_id")
    return [dict(zip(keys, row)) for row in rows]


def critic_labels(db: sqlite_utils.Database, run_id: int,
                  item_ids: Iterable[str]) -> dict[str, dict[str, str | None]]:
    """item_id -> {critic: its valid label, or None where its call failed} for these items."""
    ids = [str(i) for i in item_ids]
    out: dict[str, dict[str, str | None]] = {i: {} for i in ids}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for item_id, critic, label in db.execute(
            "SELECT item_id, critic, CASE WHEN failure IS NULL THEN label END FROM calls"
            f" WHERE run_id = ? AND item_id IN ({marks})", [run_id, *chunk]):
            out[str(item_id)][str(critic)] = label
    return out


def set_queue(db: sqlite_utils.Database, run_id: int, ranks: Mapping[str, int]) -> None:
    """Replace the run's label-next queue: `ranks` maps audit items to their place (0 first);
    every other audit item leaves the queue. One transaction."""
    with db.atomic():
        db.execute("UPDATE audit_items SET queue_rank = NULL WHERE run_id = ?"
                   " AND queue_rank IS NOT NULL", [run_id])
        db.conn.executemany(
            "UPDATE audit_items SET queue_rank = ? WHERE run_id = ? AND item_id = ?",
            [(int(rank), run_id, str(item_id)) for item_id, rank in ranks.items()],
        )


def queue_ranks(db: sqlite_utils.Database, run_id: int) -> dict[str, int]:
    """item_id -> its place in the run's label-next queue (0 first)."""
    return {str(item_id): int(rank) for item_id, rank in db.execute(
        "SELECT item_id, queue_rank FROM audit_items WHERE run_id = ? AND queue_rank IS NOT NULL"
        " ORDER BY queue_rank", [run_id])}


def audit_stamp(db: sqlite_utils.Database, run_id: int) -> tuple[int, int]:
    """(items in the audit sample, the last draw_order): changes with every item drawn; a cache
    key with `storage.reviewing.overrides.overrides_stamp` for what is computed from the audit."""
    count, last = db.execute(
        "SELECT count(*), coalesce(max(draw_order), -1) FROM audit_items WHERE run_id = ?",
        [run_id]).fetchone()
    return int(count), int(last)


def contest_reviews(db: sqlite_utils.Database, run_id: int) -> int:
    """How many items of the run a human reviewed outside its audit sample (left out of the
    estimate: they were chosen, not drawn)."""
    return int(db.execute(
        "SELECT count(DISTINCT o.item_id) FROM overrides o WHERE o.run_id = ? AND NOT EXISTS"
        " (SELECT 1 FROM audit_items a WHERE a.run_id = o.run_id AND a.item_id = o.item_id)",
        [run_id]).fetchone()[0])
