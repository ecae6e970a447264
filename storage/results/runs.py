"""Runs: a snapshot of a panel version and a dataset, with a status and running totals.

Statuses (`judging.run_status.RunStatus`, which holds the one rule of which are finished):
pending (created, never started) -> running -> done | cancelled | failed; a run found `running`
when no live job owns it (the process died) becomes `interrupted`. Cancelled, interrupted and
failed runs can be resumed (back to running). `stop_reason` says why a run stopped short when
its status alone does not: 'budget' (cancelled by its cap), 'vendor_batch' (interrupted,
waiting for the vendor), 'no_verdict' (failed: a critic gave no verdict at all).
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from judging.run_status import STORED_STATUSES, RunStatus
from storage.db import NotFoundError, StorageError, dumps, loads, now


def _stored_status(status: str) -> RunStatus:
    """`status` as a `RunStatus` a run row may hold, else StorageError."""
    if status not in STORED_STATUSES:
        names = ", ".join(str(s) for s in STORED_STATUSES)
        raise StorageError(f"Unknown run status {str(status)!r}; expected one of {names}.")
    return RunStatus(status)


def create_run(
    db: sqlite_utils.Database,
    *,
    dataset_id: int,
    panel_hash: str,
    critics: list[str],
    simulated: bool = False,
    name: str | None = None,
) -> int:
    """Create a pending run of a saved panel version over a saved dataset.

    Args:
        dataset_id: the dataset (`save_dataset`).
        panel_hash: the panel version (`save_panel`); the run keeps pointing at that exact YAML.
        critics: the critic names, in panel order (they become the review table's columns).
        simulated: True when a critic calls the simulated vendor (`judging.panel.vendors.
            PanelSources.calls_simulator`; the UI labels the run).
        name: an optional label for lists.

    Returns:
        The new run id.

    Raises:
        NotFoundError: the dataset or the panel is not in the database.
    """
    ds = db.execute("SELECT n_items FROM datasets WHERE id = ?", [dataset_id]).fetchone()
    if ds is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    if db.execute("SELECT 1 FROM panels WHERE hash = ?", [panel_hash]).fetchone() is None:
        raise NotFoundError(f"There is no saved panel with hash {panel_hash!r}: save it first.")
    n_items = int(ds[0])
    cursor = db.execute(
        "INSERT INTO runs (name, dataset_id, panel_hash, status, created_at, n_items, critics,"
        " total_calls, simulated) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
        [name, dataset_id, panel_hash, now(), n_items, dumps(list(critics)),
         n_items * len(critics), int(simulated)],
    )
    return int(cursor.lastrowid or 0)


_RUN_SELECT = (
    "SELECT r.*, d.name AS dataset_name, p.name AS panel_name FROM runs r "
    "JOIN datasets d ON d.id = r.dataset_id JOIN panels p ON p.hash = r.panel_hash"
)


# Columns of the first schema that the run ledger replaced; dropped from run dicts so nothing
# reads a second, stale copy of what a run paid.
_SUPERSEDED = ("tokens_in", "tokens_out", "cost_usd")


def _run_dict(row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    row["critics"] = loads(row["critics"]) or []
    row["simulated"] = bool(row["simulated"])
    row["ledger"] = loads(row.get("ledger")) or {}
    for column in _SUPERSEDED:
        row.pop(column, None)
    return row


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A stored run as read once: its row typed (`read_run`). The panel it runs is kept as
    the YAML snapshot; `judging.runs.stored.stored_run.StoredRun` parses it once beside this."""

    id: int
    name: str | None
    dataset_id: int
    dataset_name: str
    panel_hash: str
    panel_name: str
    panel_yaml: str
    status: RunStatus
    created_at: str
    started_at: str | None
    finished_at: str | None
    n_items: int
    critics: tuple[str, ...]
    total_calls: int
    ok_calls: int
    failed_calls: int
    cached_calls: int
    simulated: bool
    error: str | None
    stop_reason: str | None
    budget_usd: float | None
    budget_tokens: int | None
    ledger: dict[str, Any]


def read_run(db: sqlite_utils.Database, run_id: int) -> RunRecord:
    """One run, typed.

    Raises:
        NotFoundError: no run has this id.
    """
    row = get_run(db, run_id)
    return RunRecord(
        id=int(row["id"]), name=row["name"], dataset_id=int(row["dataset_id"]),
        dataset_name=str(row["dataset_name"]), panel_hash=str(row["panel_hash"]),
        panel_name=str(row["panel_name"]), panel_yaml=str(row["panel_yaml"]),
        status=RunStatus(row["status"]), created_at=str(row["created_at"]),
        started_at=row["started_at"], finished_at=row["finished_at"],
        n_items=int(row["n_items"]), critics=tuple(row["critics"]),
        total_calls=int(row["total_calls"] or 0), ok_calls=int(row["ok_calls"] or 0),
        failed_calls=int(row["failed_calls"] or 0), cached_calls=int(row["cached_calls"] or 0),
        simulated=bool(row["simulated"]), error=row["error"], stop_reason=row["stop_reason"],
        budget_usd=row["budget_usd"], budget_tokens=row["budget_tokens"],
        ledger=dict(row["ledger"]))


def list_runs(db: sqlite_utils.Database, *, dataset_id: int | None = None) -> list[dict[str, Any]]:
    """Runs, newest first, with status and counts.

    Each row: id, name, dataset_id, dataset_name, panel_hash, panel_name, status, created_at,
    started_at, finished_at, n_items, critics (list), total_calls, ok_calls, failed_calls,
    cached_calls (stored rows of each kind), ledger (dict: the run's `judging.engine.ledger.Ledger`
    totals — what it sent and paid), simulated, error.
    """
    if dataset_id is None:
        rows = db.query(_RUN_SELECT + " ORDER BY r.id DESC")
    else:
        rows = db.query(_RUN_SELECT + " WHERE r.dataset_id = ? ORDER BY r.id DESC", [dataset_id])
    return [_run_dict(row) for row in rows]


def get_run(db: sqlite_utils.Database, run_id: int) -> dict[str, Any]:
    """One run (as in `list_runs`) plus `panel_yaml`, the snapshot it runs.

    Raises:
        NotFoundError: no run has this id.
    """
    rows = list(
        db.query(
            "SELECT r.*, d.name AS dataset_name, p.name AS panel_name, p.yaml AS panel_yaml "
            "FROM runs r JOIN datasets d ON d.id = r.dataset_id "
            "JOIN panels p ON p.hash = r.panel_hash WHERE r.id = ?",
            [run_id],
        )
    )
    if not rows:
        raise NotFoundError(f"There is no run with id {run_id}.")
    return _run_dict(rows[0])


def set_run_status(
    db: sqlite_utils.Database, run_id: int, status: str, *, error: str | None = None,
    owner: str | None = None,
) -> None:
    """Move a run to `status`; `running` stamps started_at and records this process as the
    owner (see `mark_interrupted`), a terminal status stamps finished_at.

    Args:
        owner: the claiming job's token (`claim_run`): the change only lands while that job
            still owns the run, so a job that lost its run cannot overwrite the new owner's
            status. Jobs pass it; other callers (tests, tools) may not.

    Raises:
        StorageError: not a known status.
        NotFoundError: no run has this id.
    """
    known = _stored_status(status)
    stamp = now()
    if known is RunStatus.RUNNING:
        sql = ("UPDATE runs SET status = ?, error = ?, started_at = coalesce(started_at, ?),"
               " finished_at = NULL, owner_pid = ?, owner_host = ?, heartbeat_at = ? WHERE id = ?")
        params: list[Any] = [str(known), error, stamp, os.getpid(), socket.gethostname(), stamp,
                             run_id]
    elif known.finished:
        sql = "UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE id = ?"
        params = [str(known), error, stamp, run_id]
    else:
        sql = "UPDATE runs SET status = ?, error = ? WHERE id = ?"
        params = [str(known), error, run_id]
    if owner is not None:
        sql = sql.replace(" WHERE id = ?", " WHERE id = ? AND owner_token = ?")
        params.append(owner)
    if db.execute(sql, params).rowcount == 0:
        if owner is not None and db.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone():
            return  # another job owns the run now: its status is its own to set
        raise NotFoundError(f"There is no run with id {run_id}.")


def refresh_run_totals(db: sqlite_utils.Database, run_id: int) -> None:
    """Recount a run's stored calls of each kind (part of the caller's transaction if any).

    These count rows (what the run holds now); what it sent and paid is its ledger
    (`add_to_ledger`), which a re-run or a re-judged item never takes back.

    The count reads every call of the run (about 1 s at 3,000,000 calls), so outside a
    transaction it runs as a plain read and only the short UPDATE takes the write lock: an
    override saved meanwhile waits milliseconds, not the length of the scan.
    """
    ok, failed, cached = db.execute(
        "SELECT count(*) FILTER (WHERE failure IS NULL), count(*) FILTER (WHERE failure IS NOT"
        " NULL), count(*) FILTER (WHERE cached) FROM calls WHERE run_id = ?",
        [run_id],
    ).fetchone()
    db.execute(
        "UPDATE runs SET ok_calls = ?, failed_calls = ?, cached_calls = ? WHERE id = ?",
        [ok, failed, cached, run_id],
    )


def add_to_ledger(db: sqlite_utils.Database, run_id: int, delta: dict[str, int | float]) -> None:
    """Add a job's share (`Ledger.as_dict()` of what it counted since the last call) to the
    run's stored ledger, in one statement (atomic with the caller's transaction, if any).

    Raises:
        NotFoundError: no run has this id.
        StorageError: a value that is not a number.
    """
    if not delta:
        return
    for name, value in delta.items():
        if not name.isidentifier():
            raise StorageError(f"Ledger field {name!r} is not a valid name.")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise StorageError(f"Ledger field {name!r} must be a number, not {value!r}.")
    # json_set over each key: ledger[key] = coalesce(ledger[key], 0) + delta[key]; keys are
    # bound as JSON paths, never spliced into the SQL text.
    expr = "coalesce(ledger, '{}')"
    params: list[Any] = []
    for name, value in delta.items():
        path = "$." + name
        expr = f"json_set({expr}, ?, coalesce(json_extract(coalesce(ledger, '{{}}'), ?), 0) + ?)"
        params += [path, path, value]
    if db.execute(f"UPDATE runs SET ledger = {expr} WHERE id = ?", [*params, run_id]).rowcount == 0:
        raise NotFoundError(f"There is no run with id {run_id}.")


def claim_run(
    db: sqlite_utils.Database,
    run_id: int,
    from_statuses: Iterable[str],
    owner: str,
    *,
    take_over_after_s: float = 30.0,
) -> bool:
    """Make `owner` the one job working on a run: True when it got it, False when another did.

    One conditional UPDATE decides (its row count), so two processes resuming the same run at
    the same moment can never both run it — the second sees False. A run can be claimed from
    `from_statuses`, or from `running` when its lease has lapsed (no heartbeat for
    `take_over_after_s` seconds: its owner died without anyone marking it interrupted).

    Args:
        owner: a token unique to the claiming job (its heartbeats and final status carry it).

    Raises:
        StorageError: an unknown status in `from_statuses`.
    """
    statuses = [str(_stored_status(s)) for s in from_statuses]
    stamp = now()
    cutoff = (_dt.datetime.now(_dt.UTC) - _dt.timedelta(seconds=take_over_after_s)).isoformat(
        timespec="microseconds"
    )
    marks = ", ".join("?" for _ in statuses) or "NULL"
    cursor = db.execute(
        "UPDATE runs SET status = 'running', error = NULL, started_at = coalesce(started_at, ?),"
        " finished_at = NULL, owner_pid = ?, owner_host = ?, owner_token = ?, heartbeat_at = ?"
        f" WHERE id = ? AND (status IN ({marks})"
        " OR (status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < ?)))",
        [stamp, os.getpid(), socket.gethostname(), owner, stamp, run_id, *statuses, cutoff],
    )
    return cursor.rowcount == 1


def heartbeat(db: sqlite_utils.Database, run_id: int, owner: str | None = None) -> bool:
    """Record that the job working on a run is alive (its writer calls this every second).

    Returns False when `owner` no longer holds the run (another job took it over after this one
    went silent for too long): the caller should stop sending calls.
    """
    if owner is None:
        return db.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", [now(), run_id]).rowcount == 1
    cursor = db.execute(
        "UPDATE runs SET heartbeat_at = ? WHERE id = ? AND owner_token = ? AND status = 'running'",
        [now(), run_id, owner],
    )
    return cursor.rowcount == 1


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def mark_interrupted(
    db: sqlite_utils.Database, live_run_ids: Iterable[int] = (), *, stale_after_s: float = 30.0
) -> list[int]:
    """Turn `running` runs that nobody is working on any more into `interrupted`.

    Call at app or CLI start. A running run is left alone when a live job of the caller owns it
    (`live_run_ids`), or when another process on this machine that is still alive owns it and
    its heartbeat is fresh (e.g. `jurybox judge` running next to the app). It is interrupted
    when its owner process is gone, or when no heartbeat came for `stale_after_s` seconds.

    Returns:
        The ids changed.
    """
    live = {int(x) for x in live_run_ids}
    host = socket.gethostname()
    cutoff = (_dt.datetime.now(_dt.UTC) - _dt.timedelta(seconds=stale_after_s)).isoformat(
        timespec="microseconds"
    )
    changed = []
    for run_id, pid, owner_host, beat in db.execute(
        "SELECT id, owner_pid, owner_host, heartbeat_at FROM runs WHERE status = 'running'"
    ).fetchall():
        if run_id in live:
            continue
        stale = beat is None or beat < cutoff
        elsewhere = pid is not None and owner_host == host and pid != os.getpid()
        if elsewhere and not stale and _pid_alive(int(pid)):
            continue  # another process on this machine is working on it
        if owner_host not in (None, host) and not stale:
            continue  # another machine sharing the file; trust its heartbeat
        if pid == os.getpid() and owner_host == host and not stale:
            continue  # a job of this process that the caller's registry does not know
        changed.append(int(run_id))
    with db.atomic():
        for run_id in changed:
            db.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = ?, error = coalesce(error, ?)"
                " WHERE id = ? AND status = 'running'",
                [now(), "The process running it stopped before it finished; resume it.", run_id],
            )
    return changed


def set_run_budget(
    db: sqlite_utils.Database, run_id: int, *, usd: float | None, tokens: int | None
) -> None:
    """Set (or, with both None, remove) a run's budget cap, and forget why it last stopped.

    Raises:
        NotFoundError: no such run.
    """
    cursor = db.execute(
        "UPDATE runs SET budget_usd = ?, budget_tokens = ?, stop_reason = NULL WHERE id = ?",
        [usd, tokens, run_id],
    )
    if cursor.rowcount == 0:
        raise NotFoundError(f"There is no run with id {run_id}.")


def set_stop_reason(db: sqlite_utils.Database, run_id: int, reason: str | None) -> None:
    """Record why a run stopped short (e.g. 'budget'); None clears it."""
    db.execute("UPDATE runs SET stop_reason = ? WHERE id = ?", [reason, run_id])


# Why a run stopped short, as `runs.stop_reason` records it (None: it did not).
STOP_NO_VERDICT = "no_verdict"  # failed: a critic gave no verdict at all (`critics_without_verdict`)


def critics_without_verdict(db: sqlite_utils.Database, run_id: int) -> dict[str, tuple[int, str]]:
    """The critics of a run that failed on every item they were asked about: no stored
    verdict at all, and at least one failure. Cancelled calls were never sent and an
    inconsistent pairwise answer is an answer, so neither counts as a failure here.

    Returns:
        Critic name -> (its failed calls, the first failure's message), in the order of their
        first failures.
    """
    rows = db.execute(
        "SELECT critic, count(*) FILTER (WHERE failure IS NOT NULL"
        "   AND failure NOT IN ('cancelled', 'inconsistent')) AS failed,"
        " min(id) FILTER (WHERE failure IS NOT NULL"
        "   AND failure NOT IN ('cancelled', 'inconsistent')) AS first"
        " FROM calls WHERE run_id = ? GROUP BY critic"
        " HAVING count(*) FILTER (WHERE failure IS NULL) = 0 AND failed > 0 ORDER BY first",
        [run_id],
    ).fetchall()
    out: dict[str, tuple[int, str]] = {}
    for critic, failed, first in rows:
        message = db.execute("SELECT message FROM calls WHERE id = ?", [first]).fetchone()[0]
        out[str(critic)] = (int(failed), str(message or "no message"))
    return out
