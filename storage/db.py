"""Opening the Jurybox database: one SQLite file in WAL mode, migrated on open.

Threading rule: a `sqlite_utils.Database` (and its `sqlite3.Connection`) belongs to the thread
that opened it. Every thread that touches the database calls `open_db(path)` itself — the pages'
script thread, each job worker, each `CallCacheStore` thread. WAL lets readers carry on while the
one writer commits, and `timeout=30` makes a second writer wait for the lock instead of failing.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import json.encoder as _json_encoder
import os
import pathlib
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import sqlite_utils

# The error types live in the one error tree (a leaf module); re-exported here for callers.
from judging.errors import DatabaseFault as DatabaseFault
from judging.errors import NotFoundError as NotFoundError
from judging.errors import StorageError as StorageError
from storage.faults import DbPath, check_folder, database_fault
from storage.migrations import migrate as apply_migrations
from storage.migrations import migrations

BUSY_SECONDS = 30.0  # how long an opener waits for another one's lock (the busy timeout)
DEFAULT_DB_NAME = "jurybox.db"
DB_ENV_VAR = "JURYBOX_DB"


def default_db_path() -> pathlib.Path:
    """The database the app and the CLI use when none is given.

    Returns:
        `$JURYBOX_DB` when set, else `./jurybox.db` in the current directory.
    """
    return pathlib.Path(os.environ.get(DB_ENV_VAR) or DEFAULT_DB_NAME)


def connect(path: DbPath, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A raw connection with Jurybox's pragmas; prefer `open_db`.

    `check_same_thread=False` is only for a connection that is handed between threads under a
    lock the caller holds (the cache store does not do that: it keeps one per thread).
    """
    conn = sqlite3.connect(str(path), timeout=BUSY_SECONDS, check_same_thread=check_same_thread)
    # Off by default in SQLite: without it an orphan row (a call of a deleted run) is accepted.
    conn.execute("PRAGMA foreign_keys=ON")
    # NORMAL is durable across a process crash in WAL mode (only an OS crash can lose the last
    # commits) and makes each batch commit much cheaper than FULL.
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=30000")
    # Checkpoint every ~40 MB of WAL rather than 4 MB: each checkpoint syncs the file, and on a
    # busy disk those syncs, not SQL, dominated writing a run's verdicts (measured: 100k
    # verdicts 4-10 s wall at 1000 pages, about 3 s at 20000, for the same CPU time).
    conn.execute("PRAGMA wal_autocheckpoint=10000")
    return conn


def open_db(
    path: DbPath, *, migrate: bool = True, check_same_thread: bool = True, readonly: bool = False
) -> sqlite_utils.Database:
    """Open (creating if needed) the database at `path`, in WAL mode, migrated to the latest schema.

    Args:
        path: the database file. `":memory:"` is accepted for quick experiments, but jobs need a
            file because every worker opens its own connection. Its folder must exist.
        migrate: apply pending migrations (on by default; every opener does it, migrations
            that are already recorded are skipped).
        check_same_thread: passed to `sqlite3.connect`; leave True unless you know why.
        readonly: open an existing file for reading only (no migration, no WAL switch): what
            the read-only commands use, so a read-only file can still be listed and exported.

    Returns:
        A `sqlite_utils.Database` for use on the calling thread only.

    Raises:
        DatabaseFault: the folder is missing, or the file is damaged, read-only (for a write),
            full or locked — with a sentence saying what to do.
    """
    check_folder(path)
    if readonly:
        return _open_readonly(path, check_same_thread=check_same_thread)
    try:
        return _open(path, migrate=migrate, check_same_thread=check_same_thread)
    except sqlite3.Error as error:
        raise database_fault(error, path) from error


def _open_readonly(path: DbPath, *, check_same_thread: bool) -> sqlite_utils.Database:
    if not pathlib.Path(path).is_file():
        raise DatabaseFault(f"There is no database {str(path)!r}. Check the path (--db or "
                            "JURYBOX_DB).")
    try:
        uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=check_same_thread)
        conn.execute("PRAGMA busy_timeout=30000")
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            # A WAL file in a folder we may not write: SQLite cannot create the shared-memory
            # file it reads through. `immutable=1` reads the file as it is, without it; safe
            # here because this user cannot write it (another writer could still, so a
            # read-only open is for listing and exporting, not for watching a live run).
            conn.close()
            conn = sqlite3.connect(uri + "&immutable=1", uri=True,
                                   check_same_thread=check_same_thread)
        db = sqlite_utils.Database(conn)
        if migrations.pending(db):
            conn.close()
            raise DatabaseFault(
                f"The database {str(path)!r} was made by an older Jurybox and must be upgraded, "
                "which needs write access: open it once where it is writable."
            )
        return db
    except sqlite3.Error as error:
        raise database_fault(error, path) from error


def _open(path: DbPath, *, migrate: bool, check_same_thread: bool) -> sqlite_utils.Database:
    conn = connect(path, check_same_thread=check_same_thread)
    db = sqlite_utils.Database(conn)
    try:
        if str(path) != ":memory:" and db.journal_mode != "wal":
            _switch_to_wal(db)
        if migrate:
            apply_migrations(db)
    except BaseException:
        conn.close()
        raise
    return db


def _switch_to_wal(db: sqlite_utils.Database) -> None:
    """Put a new file in WAL mode (it stays so: the mode is stored in the file).

    Switching takes the file's exclusive lock, and the busy timeout waits for another opener's
    lock, except in one case: while another connection is switching the same fresh file at
    that instant (creating its WAL index), SQLite answers "database is locked" at once,
    without waiting (seen: 1 in 300 fresh files opened by four threads at once, on a loaded
    machine). That opener has done the switch then, or will in a moment: look again, briefly,
    until the file is in WAL mode or the busy timeout has passed.
    """
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            db.enable_wal()
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(0.01)
        try:
            if db.journal_mode == "wal":
                return  # the other opener switched it
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise


def now() -> str:
    """UTC timestamp as ISO text with microseconds; sorts as time."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


# One encoder for every column: `json.dumps` with options builds a new encoder per call, which
# was a visible share of writing 100,000 verdicts.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False)


# `JSONEncoder.encode` builds a fresh C encoder on every call; building it once saves about
# a quarter of the time per raw request (measured 4.0 against 5.2 us). Same output: the C
# encoder is what `encode` uses underneath. Falls back where the C accelerator is missing.
_C_MAKE_ENCODER = getattr(_json_encoder, "c_make_encoder", None)  # private, maybe absent
_C_ENCODE = (
    None
    if _C_MAKE_ENCODER is None
    else _C_MAKE_ENCODER(
        None, str, _json_encoder.encode_basestring, None, ": ", ", ", False, False, True
    )
)


def dumps(value: Any) -> str | None:
    """JSON text for a column, None stays NULL."""
    if value is None:
        return None
    if _C_ENCODE is not None and isinstance(value, (dict, list)):
        return "".join(_C_ENCODE(value, 0))
    return _ENCODER.encode(value)


def loads(text: str | None) -> Any:
    """Inverse of `dumps`."""
    if text is None:
        return None
    return json.loads(text)


@contextlib.contextmanager
def write_transaction(db: sqlite_utils.Database) -> Iterator[None]:
    """A transaction that holds the write lock from its first statement (BEGIN IMMEDIATE,
    waiting up to the busy timeout for another writer); inside a caller's transaction, a
    savepoint of it.

    Why: a deferred transaction whose first statement reads pins a snapshot, and if another
    writer commits before its first write SQLite cannot upgrade it and fails at once instead of
    waiting. Writers that read what they then write (the highest call id, a chain's head, who
    holds which item) take the lock first.
    """
    if db.conn.in_transaction:
        with db.atomic():
            yield
        return
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")
