"""Who has which item of a run open on Review right now: a lease that expires.

Two reviewers walking one list would otherwise be handed the same "next item" and decide it
twice. The item a reviewer opens is reserved for them for `LEASE_SECONDS` (renewed each time
they act on it, freed when they save, move on, or the time runs out: a closed tab frees its item
by itself). A reviewer holds at most one lease per run: opening an item lets go of the last one.

Times are `storage.db.now()` text (UTC ISO with microseconds), which sorts as time, so expiry is
a string comparison inside SQLite.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass

import sqlite_utils

from storage.db import StorageError, now

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
    reviewer = (reviewer or "").strip()
    if not reviewer:
        raise StorageError("Name the reviewer first: a reserved item says who is reviewing it.")
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
