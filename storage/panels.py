"""Saved panels: YAML text keyed by its content hash (a panel version is immutable)."""

from __future__ import annotations

from typing import Any

import sqlite_utils

from storage.db import NotFoundError, now


def save_panel(db: sqlite_utils.Database, *, panel_hash: str, name: str, yaml_text: str) -> str:
    """Save a panel version; saving the same hash again is a no-op.

    Args:
        panel_hash: `judging.panel.panel_files.panel_hash(panel)`, the version's identity.
        name: the panel's name, for lists.
        yaml_text: `judging.panel.panel_files.dump_panel(panel)`; it never holds a key (critics name
            the variable that holds theirs).

    Returns:
        The hash.
    """
    db.execute(
        "INSERT OR IGNORE INTO panels (hash, name, yaml, created_at) VALUES (?, ?, ?, ?)",
        [panel_hash, name, yaml_text, now()],
    )
    return panel_hash


def get_panel(db: sqlite_utils.Database, panel_hash: str) -> dict[str, Any]:
    """A saved panel: hash, name, yaml, created_at.

    Raises:
        NotFoundError: no panel has this hash.
    """
    rows = list(db.query("SELECT * FROM panels WHERE hash = ?", [panel_hash]))
    if not rows:
        raise NotFoundError(f"There is no saved panel with hash {panel_hash!r}.")
    return rows[0]


def list_panels(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Saved panels, newest first: hash, name, yaml, created_at, n_runs."""
    return list(
        db.query(
            "SELECT p.*, (SELECT count(*) FROM runs r WHERE r.panel_hash = p.hash) AS n_runs "
            "FROM panels p ORDER BY p.created_at DESC"
        )
    )
