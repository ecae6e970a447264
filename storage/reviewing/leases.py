"""Who has which item of a run open on Review right now (a lease that expires), and the shared
queue that hands each reviewer the next item nobody has decided or holds.

Two reviewers walking one list would otherwise be handed the same "next item" and decide it
twice. The item a reviewer opens is reserved for them for `LEASE_SECONDS` (renewed each time
they act on it, freed when they save, move on, or the time runs out: a closed tab frees its item
by itself). A reviewer holds at most one lease per run: opening an item lets go of the last one.

The next item is chosen and leased in one write transaction (`claim_next`): chosen first and
leased afterwards, two reviewers moving at once were handed the same free item, and an item a
teammate had just decided (its lease freed by the save) was handed on to be decided again.

Times are `storage.db.now()` text (UTC ISO with microseconds), which sorts as time, so expiry is
a string comparison inside SQLite.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass

import sqlite_utils

from storage.db import StorageError, now, write_transaction
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import NO_FILTER, list_order

# Long enough to read an item and its critics, short enough that an abandoned tab does not
# keep an item from the team for long.
LEASE_SECONDS = 600


@dataclass(frozen=True)
class Lease:
    """An item reserved for `reviewer` until `expires_at` (UTC ISO text)."""

    item_id: str
    reviewer: str
    expires_at: str

    @property
    def until(self) -> str:
        """"18:42 UTC": when it ends, for a sentence."""
        return f"{self.expires_at[11:16]} UTC"


def _later(stamp: str, seconds: float) -> str:
    moment = _dt.datetime.fromisoformat(stamp) + _dt.timedelta(seconds=seconds)
    return moment.isoformat(timespec="microseconds")


def _reviewer(name: str) -> str:
    reviewer = (name or "").strip()
    if not reviewer:
        raise StorageError("Name the reviewer first: a reserved item says who is reviewing it.")
    return reviewer


def take_lease(
    db: sqlite_utils.Database, run_id: int, item_id: str, reviewer: str, *,
    seconds: float = LEASE_SECONDS, at: str | None = None,
) -> Lease:
    """Reserve `item_id` for `reviewer` (or renew their lease), unless someone else holds a
    lease on it that has not expired. Any other item the reviewer held in the run is freed.

    Args:
        at: the present moment (`storage.db.now()` text; tests pass their own).

    Returns:
        The item's lease after the attempt: the reviewer's own, or the other reviewer's that
        stands (compare `lease.reviewer`).

    Raises:
        StorageError: no reviewer named.
    """
    reviewer = _reviewer(reviewer)
    stamp = at or now()
    expires = _later(stamp, seconds)
    with db.atomic():
        db.execute("DELETE FROM review_leases WHERE run_id = ? AND reviewer = ? AND item_id != ?",
                   [run_id, reviewer, item_id])
        # The upsert takes the row over only when it is ours or has expired: one statement,
        # so two reviewers opening the item at once cannot both win.
        db.execute(
            "INSERT INTO review_leases (run_id, item_id, reviewer, taken_at, expires_at)"
            " VALUES (:run, :item, :me, :now, :until)"
            " ON CONFLICT (run_id, item_id) DO UPDATE SET reviewer = :me, expires_at = :until,"
            " taken_at = CASE WHEN review_leases.reviewer = :me THEN review_leases.taken_at"
            " ELSE :now END"
            " WHERE review_leases.reviewer = :me OR review_leases.expires_at <= :now",
            {"run": run_id, "item": item_id, "me": reviewer, "now": stamp, "until": expires},
        )
        row = db.execute("SELECT reviewer, expires_at FROM review_leases WHERE run_id = ?"
                         " AND item_id = ?", [run_id, item_id]).fetchone()
    return Lease(item_id, str(row[0]), str(row[1]))


def release_lease(db: sqlite_utils.Database, run_id: int, reviewer: str) -> int:
    """Free whatever `reviewer` holds in the run (after a save, or on leaving). Returns the
    leases freed."""
    with db.atomic():
        return db.execute("DELETE FROM review_leases WHERE run_id = ? AND reviewer = ?",
                          [run_id, (reviewer or "").strip()]).rowcount


def held_by_others(
    db: sqlite_utils.Database, run_id: int, item_ids: Iterable[str], reviewer: str, *,
    at: str | None = None,
) -> dict[str, Lease]:
    """item id -> its lease, for those of `item_ids` that another reviewer holds now."""
    wanted = [str(i) for i in item_ids]
    if not wanted:
        return {}
    stamp = at or now()
    held: dict[str, Lease] = {}
    for start in range(0, len(wanted), 500):  # SQLite's parameter limit
        chunk = wanted[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for item_id, holder, expires in db.execute(
            "SELECT item_id, reviewer, expires_at FROM review_leases WHERE run_id = ?"
            f" AND reviewer != ? AND expires_at > ? AND item_id IN ({marks})",
            [run_id, (reviewer or "").strip(), stamp, *chunk],
        ):
            held[str(item_id)] = Lease(str(item_id), str(holder), str(expires))
    return held



def claim_next(
    db: sqlite_utils.Database, run_id: int, reviewer: str, filters: ReviewFilter = NO_FILTER,
    *, sort: str = "contested", after: str | None = None, undecided: bool = True,
    seconds: float = LEASE_SECONDS, at: str | None = None,
) -> str | None:
    """Hand `reviewer` the next item of the list as filtered and sorted, leased to them: the
    shared queue of a team walking one list.

    In one write transaction: the reviewer's lease in the run is freed, and the first item
    after `after` in the list's order that nobody else holds (and, with `undecided`, that
    nobody has decided) is found and leased to them. Two reviewers claiming at once get two
    different items, and an item a teammate has decided is never handed on. The walk ends at
    the list's end, as a reviewer's pass does: an item passed over (held then, or skipped)
    is found again from the top of the list (`after` None) or with "Overridden: not yet".

    "Decided" is the run's final-decision rule: the item has an override (any reviewer's,
    blind or not). On a list of the items assigned to a reviewer (`filters.assigned_to`), where
    an item assigned to two is meant to be labelled by both, it is that reviewer's own override.
    A list of decided items (`filters.overridden` True, a revision pass) asked for them: it is
    walked as with `undecided` False.

    Args:
        filters, sort: the list, as `storage.reviewing.review_queue.review_table` takes them.
        after: the item the reviewer leaves (its place in the list under `sort`, whether or not
            the filters still keep it); None: from the top of the list.
        undecided: False: decided items are handed too (only those others hold are passed
            over): walking the list to look.
        at: the present moment (`storage.db.now()` text; tests pass their own).

    Returns:
        The item now leased to `reviewer`, or None when the list has no such item (the
        reviewer then holds nothing in the run).

    Raises:
        StorageError: no reviewer named, an unknown sort or a malformed filter.
        NotFoundError: no such run.
    """
    me = _reviewer(reviewer)
    stamp = at or now()
    order = list_order(db, run_id, filters, sort=sort)
    params = {**order.params, "claim_me": me, "claim_now": stamp,
              "claim_until": _later(stamp, seconds), "claim_after": after}
    free = (" AND NOT EXISTS (SELECT 1 FROM review_leases l WHERE l.run_id = c.run_id"
            " AND l.item_id = c.item_id AND l.reviewer != :claim_me"
            " AND l.expires_at > :claim_now)")
    if undecided and filters.overridden is not True:
        # On an assignment list "decided" is the assignee's own label (each labels the overlap).
        by = ""
        if filters.assigned_to is not None:
            by = " AND d.reviewer = :claim_by"
            params["claim_by"] = str(filters.assigned_to)
        # A probe of the overrides index per row walked, not the latest-override join the
        # "Overridden: not yet" filter builds over the whole run.
        free += (" AND NOT EXISTS (SELECT 1 FROM overrides d WHERE d.run_id = c.run_id"
                 f" AND d.item_id = c.item_id{by})")
    with write_transaction(db):
        db.execute("DELETE FROM review_leases WHERE run_id = ? AND reviewer = ?", [run_id, me])
        if after is not None:
            free += " AND c.item_id != :claim_after"
            # Where `after` sits in the unfiltered list: a save may just have taken it out of
            # the filtered one ("Overridden: not yet").
            every = list_order(db, run_id, sort=sort)
            keys = db.execute(f"SELECT {every.keys}" + every.source + " AND c.item_id = :item",
                              {**every.params, "item": str(after)}).fetchone()
            if keys is not None:
                marks = ", ".join(f":claim_key{n}" for n in range(len(keys)))
                params.update({f"claim_key{n}": value for n, value in enumerate(keys)})
                free += f" AND ({order.keys}) > ({marks})"
        rows = db.execute(
            "INSERT INTO review_leases (run_id, item_id, reviewer, taken_at, expires_at)"
            " SELECT c.run_id, c.item_id, :claim_me, :claim_now, :claim_until" + order.source
            + free + " ORDER BY " + order.order_by + " LIMIT 1"
            # Only an expired lease can be in the way (a live one of another was passed
            # over, the reviewer's own was freed above): take its row over.
            " ON CONFLICT (run_id, item_id) DO UPDATE SET reviewer = excluded.reviewer,"
            " taken_at = excluded.taken_at, expires_at = excluded.expires_at"
            " RETURNING item_id",
            params,
        ).fetchall()  # all: a RETURNING statement is finished before the commit
    return str(rows[0][0]) if rows else None
