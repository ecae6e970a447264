"""The batches a run handed to a vendor, and their result lines until the run reads them.

A batch row is written as soon as the vendor accepts the batch (before anything else can go
wrong), so a crash, a closed app or `jurybox judge --no-wait` never loses track of one: the
next job on the run polls it. Result lines wait in `batch_results`, keyed by the call's cache
key, for the run's calls to read them (`BatchResultStore`), then are deleted.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from typing import Any

import sqlite_utils

from storage.db import DbPath, connect, dumps, now

OPEN = "submitted"


def record_batch(db: sqlite_utils.Database, run_id: int, *, critic: str, api: str,
                 base_url: str, batch_id: str, requests: int) -> int:
    """Remember a batch the vendor accepted; returns its row id."""
    with db.conn:
        cursor = db.conn.execute(
            "INSERT INTO vendor_batches (run_id, critic, api, base_url, batch_id, requests,"
            " submitted_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [run_id, critic, api, base_url, batch_id, requests, now()])
    return int(cursor.lastrowid or 0)


REFUSED_PREFIX = "refused:"  # the batch id of a submission the vendor refused (it gave none)


def record_refusal(db: sqlite_utils.Database, run_id: int, *, critic: str, api: str,
                   base_url: str, requests: int, reason: str) -> int:
    """Remember that the vendor refused a critic's batch submission (no batch exists at the
    vendor): a failed row with the reason, so the run's calls of that critic can say why
    they have no result, and a resume tries again."""
    stamp = now()
    with db.conn:
        cursor = db.conn.execute(
            "INSERT INTO vendor_batches (run_id, critic, api, base_url, batch_id, requests,"
            " submitted_at, state, vendor_status, error, checked_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 'failed', 'refused', ?, ?)",
            [run_id, critic, api, base_url, f"{REFUSED_PREFIX}{stamp}", requests, stamp,
             reason, stamp])
    return int(cursor.lastrowid or 0)


def refusals(db_path: DbPath, run_id: int) -> dict[str, str]:
    """Critic -> why the vendor refused its latest batch submission of the run, for critics
    whose latest submission was refused (an accepted one after it clears it)."""
    conn = connect(db_path)
    try:
        rows = conn.execute(
            "SELECT critic, batch_id, error FROM vendor_batches WHERE run_id = ? ORDER BY id",
            [run_id]).fetchall()
    finally:
        conn.close()
    latest: dict[str, str] = {}
    for critic, batch_id, error in rows:
        if str(batch_id).startswith(REFUSED_PREFIX):
            latest[critic] = str(error or "the vendor refused the batch")
        else:
            latest.pop(critic, None)
    return latest


def run_batches(db: sqlite_utils.Database, run_id: int, *,
                open_only: bool = False) -> list[dict[str, Any]]:
    """The run's batches, oldest first (only those still at the vendor with `open_only`)."""
    where = " AND state = 'submitted'" if open_only else ""
    return list(db.query(
        f"SELECT * FROM vendor_batches WHERE run_id = ?{where} ORDER BY id", [run_id]))


def update_batch(db: sqlite_utils.Database, row_id: int, *, vendor_status: str,
                 succeeded: int = 0, errored: int = 0, state: str | None = None,
                 error: str | None = None) -> None:
    """Record what the vendor last said of a batch (and its new state, if it changed)."""
    stamp = now()
    with db.conn:
        db.conn.execute(
            "UPDATE vendor_batches SET vendor_status = ?, succeeded = ?, errored = ?,"
            " state = coalesce(?, state), error = coalesce(?, error), checked_at = ?,"
            " collected_at = CASE WHEN ? = 'collected' THEN ? ELSE collected_at END"
            " WHERE id = ?",
            [vendor_status, succeeded, errored, state, error, stamp, state, stamp, row_id])


def store_results(db: sqlite_utils.Database, run_id: int, api: str,
                  results: Iterable[tuple[str, str]], *, chunk: int = 5_000) -> int:
    """Keep result lines, (custom_id, line) as the vendor wrote it, for the run to read (a
    line seen again replaces the first). Streamed: a chunk at a time is held."""
    sql = ("INSERT OR REPLACE INTO batch_results (run_id, custom_id, api, line)"
           " VALUES (?, ?, ?, ?)")
    stored = 0
    rows: list[tuple[Any, ...]] = []
    for custom_id, line in results:
        rows.append((run_id, custom_id, api, line))
        if len(rows) >= chunk:
            with db.conn:
                db.conn.executemany(sql, rows)
            stored, rows = stored + len(rows), []
    if rows:
        with db.conn:
            db.conn.executemany(sql, rows)
        stored += len(rows)
    return stored


def result_keys(
    db: sqlite_utils.Database, run_id: int, among: Iterable[str] | None = None
) -> set[str]:
    """The cache keys that have a result waiting to be read (only those `among` the given
    keys, when given: one query for a page of calls instead of the whole run's keys)."""
    if among is None:
        return {row[0] for row in db.execute(
            "SELECT custom_id FROM batch_results WHERE run_id = ?", [run_id]).fetchall()}
    return {row[0] for row in db.execute(
        "SELECT custom_id FROM batch_results WHERE run_id = ?"
        " AND custom_id IN (SELECT value FROM json_each(?))",
        [run_id, dumps(list(among))]).fetchall()}


def clear_results(db: sqlite_utils.Database, run_id: int) -> None:
    """Forget the run's result lines (once its calls hold them)."""
    with db.conn:
        db.conn.execute("DELETE FROM batch_results WHERE run_id = ?", [run_id])


class BatchResultStore:
    """The run's waiting result lines by cache key (`judging.runs.background.batch_phase` reads them for
    `CallRunner`'s `batch_answers`).

    Each worker thread gets its own connection (a sqlite3 connection must not be shared).
    """

    def __init__(self, db_path: DbPath, run_id: int) -> None:
        self.db_path = db_path
        self.run_id = run_id
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.db_path, check_same_thread=False)  # closed from the owner
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def line(self, custom_id: str) -> tuple[str, str] | None:
        """(api, line) of the result for this cache key, or None."""
        row = self._conn().execute(
            "SELECT api, line FROM batch_results WHERE run_id = ? AND custom_id = ?",
            [self.run_id, custom_id]).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            try:
                conn.close()
            except sqlite3.Error:
                pass
