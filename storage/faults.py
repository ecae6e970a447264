"""SQLite's failures as sentences: a damaged, read-only, full or locked database, or a folder
that does not exist, is the user's environment, not a bug — say what is wrong and what to do.

`database_fault(error, path)` turns a `sqlite3.Error` into a `DatabaseFault` (a `StorageError`);
the CLI's entry point and the pages' error boundary both use it, so the same fault reads the
same everywhere. Nothing here retries or repairs: the file is left exactly as it was.
"""

from __future__ import annotations

import os
import pathlib
import sqlite3

from judging.errors import DatabaseFault

# What the database driver raises: code outside storage catches this, never sqlite3 by name,
# so the driver stays storage's business.
DRIVER_ERRORS: tuple[type[sqlite3.Error], ...] = (sqlite3.Error,)

DbPath = str | os.PathLike[str]


def _where(path: DbPath | None) -> str:
    return f"the database {str(path)!r}" if path is not None else "the database"


def database_fault(error: sqlite3.Error, path: DbPath | None = None) -> DatabaseFault:
    """The sentence for a SQLite failure, naming the file and what to do about it."""
    text = str(error).lower()
    where = _where(path)
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return DatabaseFault(
            f"{where} is damaged or is not a Jurybox database (SQLite: {error}). Nothing was "
            "changed. Restore it from a backup, or point --db / JURYBOX_DB at another file."
        )
    if "readonly" in text or "read-only" in text:
        return DatabaseFault(
            f"{where} is read-only, so this cannot be saved (SQLite: {error}). Reading still "
            "works (`jurybox runs`, `stats`, `export`); to write, give this user write access "
            "to the file and its folder, or copy it somewhere writable."
        )
    if "disk is full" in text or "disk i/o" in text or "no space" in text:
        return DatabaseFault(
            f"{where} could not be written: the disk is full or failing (SQLite: {error}). "
            "What was already saved is intact; free some space and try again (a run resumes "
            "where it stopped)."
        )
    if "locked" in text or "busy" in text:
        return DatabaseFault(
            f"{where} is locked by another program that is writing to it (SQLite: {error}). "
            "Wait for it to finish and try again."
        )
    if "unable to open" in text:
        return DatabaseFault(
            f"{where} cannot be opened (SQLite: {error}). Check that its folder exists and "
            "that you may read and write there."
        )
    return DatabaseFault(f"{where} reported an error (SQLite: {error}).")


def check_folder(path: DbPath) -> None:
    """Refuse a database path whose folder does not exist (rather than silently creating the
    folder and an empty database: a typo in --db would look like "all my runs are gone").

    Raises:
        DatabaseFault: the folder is missing, or is not a folder.
    """
    if str(path) == ":memory:":
        return
    folder = pathlib.Path(path).expanduser().resolve().parent
    if not folder.is_dir():
        raise DatabaseFault(
            f"The folder {str(folder)!r} of the database {str(path)!r} does not exist. Check "
            "the path (--db or JURYBOX_DB), or create the folder first."
        )


def is_read_only(path: DbPath) -> bool:
    """True when the database file exists but this process may not write it."""
    p = pathlib.Path(path)
    return p.exists() and not os.access(p, os.W_OK)
