"""A run's figures kept in its database: bytes per (run, kind), with the stamp of the verdicts
they were computed from (migration 0026). What the bytes mean is the caller's: storage keeps
and hands back, and a stale stamp reads as nothing."""

from __future__ import annotations

import sqlite_utils

from storage.db import now


def save_figures(db: sqlite_utils.Database, run_id: int, kind: str, stamp: str,
                 payload: bytes) -> None:
    """Keep `payload` as the run's `kind` figures for the verdicts' state `stamp` (replacing
    any earlier ones), in one transaction."""
    with db.atomic():
        db.execute(
            "INSERT INTO run_figures (run_id, kind, stamp, payload, created_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id, kind) DO UPDATE SET"
            " stamp = excluded.stamp, payload = excluded.payload, created_at = excluded.created_at",
            [run_id, kind, stamp, payload, now()])


def load_figures(db: sqlite_utils.Database, run_id: int, kind: str, stamp: str) -> bytes | None:
    """The run's `kind` figures when they were computed for `stamp`, else None."""
    row = db.execute("SELECT payload FROM run_figures WHERE run_id = ? AND kind = ? AND stamp = ?",
                     [run_id, kind, stamp]).fetchone()
    return None if row is None else bytes(row[0])


def has_figures(db: sqlite_utils.Database, run_id: int, kind: str, stamp: str) -> bool:
    """Whether the run's `kind` figures are kept for `stamp` (without reading them)."""
    return db.execute("SELECT 1 FROM run_figures WHERE run_id = ? AND kind = ? AND stamp = ?",
                      [run_id, kind, stamp]).fetchone() is not None
