"""The schema: named migrations, WAL, foreign keys on every connection, no key ever stored."""

from __future__ import annotations

import pathlib
import sqlite3
import threading

import pytest

from judging.verdicts import Verdict
from storage.db import _switch_to_wal, default_db_path, open_db
from storage.migrations import MIGRATION_SET, applied_migrations, migrations
from storage.results.calls import write_verdicts
from tests.fixtures_storage import assert_secret_stored_nowhere, seed_run

TABLES = {"datasets", "items", "panels", "runs", "calls", "consensus", "overrides"}


def test_migrations_are_recorded_by_name(db):
    assert applied_migrations(db) == [m.name for m in migrations._migrations]
    rows = list(db.query("SELECT migration_set, name FROM _sqlite_migrations"))
    assert rows and all(r["migration_set"] == MIGRATION_SET for r in rows)
    assert TABLES <= set(db.table_names())
    assert migrations.pending(db) == []


def test_reopening_applies_nothing_twice(db_path):
    for _ in range(3):
        db = open_db(db_path)
        assert len(list(db.query("SELECT * FROM _sqlite_migrations"))) == len(migrations._migrations)
        db.close()


def test_two_threads_opening_a_fresh_file_both_succeed(tmp_path):
    path = tmp_path / "fresh.db"
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            open_db(path).close()
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    db = open_db(path)
    assert migrations.pending(db) == []


def test_processes_opening_a_fresh_file_at_once_all_succeed(tmp_path):
    """Six processes (the app, CLI commands) open one new file at the same moment: one
    migrates under BEGIN IMMEDIATE, the others wait on the busy timeout — no retry loop."""
    import subprocess
    import sys

    path = tmp_path / "fresh.db"
    root = pathlib.Path(__file__).resolve().parent.parent
    go = tmp_path / "go"
    script = (
        "import pathlib, sys, time\n"
        "from storage.db import open_db\n"
        "while not pathlib.Path(sys.argv[2]).exists(): time.sleep(0.001)\n"
        "open_db(sys.argv[1]).close()\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), str(go)], cwd=root,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    go.touch()
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    db = open_db(path)
    assert migrations.pending(db) == []
    assert len(applied_migrations(db)) == len(migrations._migrations)


def test_wal_and_foreign_keys_on_every_connection(db_path):
    db = open_db(db_path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    seen: list[int] = []

    def other_thread() -> None:
        mine = open_db(db_path)
        seen.append(mine.execute("PRAGMA foreign_keys").fetchone()[0])
        mine.close()

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert seen == [1]


def test_an_orphan_call_is_refused(db):
    with pytest.raises(sqlite3.IntegrityError):
        write_verdicts(db, 999, [Verdict(critic="a", item_id="x", label="KEEP")])
    assert db.execute("SELECT count(*) FROM calls").fetchone()[0] == 0


def test_unknown_run_status_is_refused_by_the_schema(db):
    run = seed_run(db, 3)
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("UPDATE runs SET status = 'exploded' WHERE id = ?", [run.run_id])


def test_default_db_path_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("JURYBOX_DB", raising=False)
    assert default_db_path().name == "jurybox.db"
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"


PLANTED_KEY = "sk-test-PLANTED-0123456789abcdefghij"


def test_a_planted_key_never_reaches_the_database_file(db_path):
    db = open_db(db_path)
    run = seed_run(db, 5)
    # The call layer strips the key; if a header ever slipped through, storage scrubs it too.
    leaky = Verdict(
        critic="alpha", item_id=run.items[0].id, label="KEEP",
        raw_request={"url": "http://x/v1/chat/completions",
                     "headers": {"Authorization": f"Bearer {PLANTED_KEY}", "api-key": PLANTED_KEY},
                     "body": {"model": "m", "messages": [], "api_key": PLANTED_KEY}},
    )
    write_verdicts(db, run.run_id, [leaky], replace_success=True)
    stored = db.execute(
        "SELECT raw_request FROM calls WHERE run_id = ? AND item_id = ? AND critic = 'alpha'",
        [run.run_id, run.items[0].id],
    ).fetchone()[0]
    assert "***" in stored
    db.close()
    assert_secret_stored_nowhere(db_path, PLANTED_KEY)


def test_a_later_migration_upgrades_an_older_database(tmp_path):
    """A file made by an older Jurybox (before 0003) keeps its calls and its cache works."""
    import sqlite_utils

    from storage.db import connect
    from storage.results.calls import CallCacheStore

    path = tmp_path / "old.db"
    old = sqlite_utils.Database(connect(path))
    migrations.apply(old, stop_before="0003_cache_key_hash_index")
    old.execute("INSERT INTO datasets (name, content_hash, n_items, created_at)"
                " VALUES ('d', 'h', 1, 'then')")
    old.execute("INSERT INTO panels VALUES ('p', 'p', 'name: p', 'then')")
    old.execute("INSERT INTO runs (dataset_id, panel_hash, created_at) VALUES (1, 'p', 'then')")
    old.execute("INSERT INTO calls (run_id, item_id, critic, label, cache_key, created_at)"
                " VALUES (1, 'x', 'a', 'KEEP', 'old-key', 'then')")
    old.close()

    db = open_db(path)
    # Every later migration ran, in the order a new database gets them.
    assert applied_migrations(db) == applied_migrations(open_db(tmp_path / "new.db"))
    assert applied_migrations(db)[2:4] == ["0003_cache_key_hash_index",
                                          "0004_two_level_cache_index"]
    assert db.execute("SELECT cache_hash IS NOT NULL FROM calls").fetchone()[0] == 1
    cache = CallCacheStore(path)
    hit = cache.get("old-key")
    cache.close()
    assert hit is not None and hit.label == "KEEP"


def test_the_ledger_of_an_older_run_is_rebuilt_without_paying_for_cache_hits(tmp_path):
    """Runs made before the ledger get one from their calls: a cached row is a cache hit (its
    tokens and cost belong to the call that first made it), an unpriced success is unpriced."""
    import sqlite_utils

    from storage.db import connect
    from storage.results.runs import get_run

    path = tmp_path / "old.db"
    old = sqlite_utils.Database(connect(path))
    migrations.apply(old, stop_before="0005_run_ledger")
    old.execute("INSERT INTO datasets (name, content_hash, n_items, created_at)"
                " VALUES ('d', 'h', 3, 'then')")
    old.execute("INSERT INTO panels VALUES ('p', 'p', 'name: p', 'then')")
    old.execute("INSERT INTO runs (dataset_id, panel_hash, created_at, critics)"
                " VALUES (1, 'p', 'then', '[\"a\"]')")
    rows = [  # item, attempts, tokens in, tokens out, cost, cached, failure
        ("x", 2, 100, 10, 0.002, 0, None),
        ("y", 1, 100, 10, 0.001, 1, None),  # from the cache: not paid again
        ("z", 1, 50, 5, None, 0, None),  # no price
        ("w", 3, None, None, None, 0, "error"),  # three 500s: sent, not billed
    ]
    for item, attempts, tin, tout, cost, cached, failure in rows:
        old.execute(
            "INSERT INTO calls (run_id, item_id, critic, label, attempts, tokens_in, tokens_out,"
            " cost_usd, cached, failure, created_at) VALUES (1, ?, 'a', 'KEEP', ?, ?, ?, ?, ?, ?,"
            " 'then')", [item, attempts, tin, tout, cost, cached, failure])
    old.close()

    ledger = get_run(open_db(path), 1)["ledger"]
    assert ledger == {
        "calls": 4, "failed": 1, "cancelled": 0, "cache_hits": 1, "sent_calls": 3,
        "http_attempts": 6, "calls_saved": 0, "tokens_in": 150, "tokens_out": 15,
        "cost_usd": 0.002, "unpriced_calls": 1,
    }


class _SwitchingElsewhere:
    """A database whose switch to WAL is refused at once ("locked") while another opener is
    switching it, which then shows the file in WAL mode (SQLite's busy handler is not asked)."""

    def __init__(self, error: str, switched_after: int) -> None:
        self.error, self.switched_after, self.tries, self.looks = error, switched_after, 0, 0

    def enable_wal(self) -> None:
        self.tries += 1
        raise sqlite3.OperationalError(self.error)

    @property
    def journal_mode(self) -> str:
        self.looks += 1
        return "wal" if self.looks >= self.switched_after else "delete"


def test_a_switch_to_wal_refused_at_once_waits_for_the_other_opener() -> None:
    db = _SwitchingElsewhere("database is locked", switched_after=3)
    _switch_to_wal(db)  # type: ignore[arg-type]
    assert (db.tries, db.looks) == (3, 3)  # looked again until the other opener was done
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        _switch_to_wal(_SwitchingElsewhere("disk I/O error", switched_after=1))  # type: ignore[arg-type]
