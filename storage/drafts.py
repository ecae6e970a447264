"""Unsaved panel drafts: the Panel page's editor content, kept per owner until it is saved.

Why in the database: a Streamlit session ends with a reload or a URL typed in the address bar,
and with it the draft in `st.session_state` (an hour's edits gone without a word). One row per
owner: the signed-in email in team mode, "" for the one user of a local app. The draft is the
editor's JSON as it is, valid or not (a half-edited panel is worth keeping too).
"""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils

from storage.db import now


def save_draft(db: sqlite_utils.Database, owner: str, draft: dict[str, Any]) -> str:
    """Keep `owner`'s draft (replacing the one before); returns the time stored (UTC ISO)."""
    stamp = now()
    db.execute(  # one statement: the connection commits it (autocommit, see storage.db)
        "INSERT INTO panel_drafts (owner, draft, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (owner) DO UPDATE SET draft = excluded.draft, "
        "updated_at = excluded.updated_at",
        [owner, json.dumps(draft, ensure_ascii=False, sort_keys=True), stamp],
    )
    return stamp


def load_draft(db: sqlite_utils.Database, owner: str) -> tuple[dict[str, Any], str] | None:
    """`owner`'s kept draft and when it was stored, or None. A row that is not a JSON object
    (written by hand, cut short) counts as no draft."""
    rows = list(db.query("SELECT draft, updated_at FROM panel_drafts WHERE owner = ?", [owner]))
    if not rows:
        return None
    try:
        draft = json.loads(rows[0]["draft"])
    except ValueError:
        return None
    return (draft, rows[0]["updated_at"]) if isinstance(draft, dict) else None


def discard_draft(db: sqlite_utils.Database, owner: str) -> None:
    """Forget `owner`'s draft (saved, or thrown away)."""
    db.execute("DELETE FROM panel_drafts WHERE owner = ?", [owner])
