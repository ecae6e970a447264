"""App-wide handles: this script run's database, the process-wide job registry, API key lookup.

Why not cache the database in `st.cache_resource`: a `sqlite_utils.Database` belongs to the
thread that opened it, and Streamlit runs each script run on its own thread. So every script
thread opens its own connection (kept in a thread-local, dropped when the thread ends), while
the job registry — plain Python, thread-safe, owning the workers — is one per process and per
database file.
"""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Callable
from typing import Any

import sqlite_utils
import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from judging.panel.vendors import PRESETS
from judging.runs.background.jobs import JobRegistry
from storage.db import DatabaseFault, default_db_path, open_db

_local = threading.local()

# Secrets are read from this table only: root-level secrets are copied into the process
# environment by Streamlit, which would widen where a key can leak.
SECRETS_TABLE = "jurybox"


def db_path() -> pathlib.Path:
    """The database this app uses (`$JURYBOX_DB`, else ./jurybox.db), absolute."""
    return default_db_path().resolve()


def db() -> sqlite_utils.Database:
    """The database connection of the current script thread, opened (and migrated) on first use."""
    path = str(db_path())
    handles: dict[str, sqlite_utils.Database] = getattr(_local, "handles", None) or {}
    if path not in handles:
        try:
            handles[path] = open_db(path)
        except DatabaseFault as fault:
            # A damaged, read-only or unreachable database: the page says which and what to
            # do, instead of Streamlit's generic error.
            st.error(str(fault), icon=":material/database:")
            st.stop()
        _local.handles = handles
        # The registry's first use marks runs left "running" by a dead process as interrupted:
        # make sure that happens before this script reads any run.
        _registry_for(path)
    return handles[path]


@st.cache_resource(show_spinner=False)
def _registry_for(path: str) -> JobRegistry:
    # The web app never imports the code a python critic names (`judging.panel.python_critics`).
    registry = JobRegistry(python_critics=False)
    # First use in this process: a run still marked running was owned by a process that died.
    registry.mark_interrupted_runs(path)
    return registry


def registry() -> JobRegistry:
    """The process-wide job registry of this database (one per process and database file).

    Shared by every browser session, so a run started in one tab shows its progress in another
    and keeps going when the tab is closed.
    """
    return _registry_for(str(db_path()))


def _secrets_table() -> dict[str, str]:
    try:
        table = st.secrets.get(SECRETS_TABLE)
    except (StreamlitSecretNotFoundError, FileNotFoundError):  # no secrets file: none set
        return {}
    if table is None or not hasattr(table, "items"):
        return {}
    return {str(name): str(value) for name, value in table.items() if value}


def key_lookup(variable: str) -> str | None:
    """The value of an API key variable: the environment, else `st.secrets["jurybox"]`.

    Keys are never typed into the UI and never stored by Jurybox: this is the only reader.
    """
    return os.environ.get(variable) or _secrets_table().get(variable)


def worker_key_lookup() -> Callable[[str], str | None]:
    """A key lookup for background workers, made on the script thread.

    Workers must not touch `st` (no script context there), so the `[jurybox]` secrets are read
    now and kept in this closure, in memory only, next to the environment.
    """
    secrets = _secrets_table()

    def lookup(variable: str) -> str | None:
        return os.environ.get(variable) or secrets.get(variable)

    return lookup


def vendor_key_status() -> list[dict[str, Any]]:
    """For each vendor preset: its key variable and whether it is set. Never the value.

    Returns:
        Rows with `vendor`, `title`, `variable` (None when the vendor needs no key) and `status`.
    """
    rows = []
    for preset in PRESETS.values():
        if preset.key_env is None:
            status = "simulated, no key" if preset.simulated else "no key needed"
        else:
            status = "set" if key_lookup(preset.key_env) else "not set"
        rows.append(
            {"vendor": preset.name, "title": preset.title, "variable": preset.key_env, "status": status}
        )
    return rows


def any_real_key() -> bool:
    """True when at least one hosted vendor's key variable is set."""
    return any(row["status"] == "set" for row in vendor_key_status())
