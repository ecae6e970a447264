"""Database faults read as sentences, never tracebacks, and never harm the data: a damaged file,
a read-only file (which can still be read), a --db in a missing folder, a full disk, a lock."""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile

import pytest

from storage.db import DatabaseFault, open_db
from storage.faults import database_fault
from storage.results.runs import get_run

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Every subcommand that opens the database, with what it needs (RUN is replaced by a run id).
COMMANDS = [
    ["runs"],
    ["stats", "RUN"],
    ["export", "RUN", "--out", "OUT.csv"],
    ["resume", "RUN"],
    ["resume", "RUN", "--failures"],
    ["judge", "--data", "DATA", "--panel", "PANEL"],
]
READS = {"runs", "stats", "export"}


def _cli(args: list[str], cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("JURYBOX_DB", None)
    return subprocess.run([sys.executable, "-m", "judging.runs.commands.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fill(command: list[str], db: pathlib.Path, run_id: int, tmp: pathlib.Path) -> list[str]:
    from judging.demo import demo_dataset_path, demo_panel_path

    values = {"RUN": str(run_id), "OUT.csv": str(tmp / "out" / "x.csv"),
              "DATA": str(demo_dataset_path()), "PANEL": str(demo_panel_path())}
    return [*[values.get(part, part) for part in command], "--db", str(db), *(
        ["--quiet", "--limit", "2"] if command[0] == "judge" else [])]


def _assert_sentence(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("jurybox: error:")]
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture(scope="module")
def finished_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, int]:
    from tests.fixtures_app import make_demo_db

    path = tmp_path_factory.mktemp("faults") / "demo.db"
    return path, make_demo_db(path)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_damaged_file_is_named_and_left_as_it_was(command: list[str], tmp_path: pathlib.Path,
                                                    finished_db) -> None:
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"this is not SQLite " * 500)
    before = _digest(damaged)
    (tmp_path / "out").mkdir()
    result = _cli(_fill(command, damaged, 1, tmp_path), tmp_path)
    _assert_sentence(result, "damaged", str(damaged))
    assert _digest(damaged) == before


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_missing_folder_is_an_error_not_a_new_database(command: list[str],
                                                         tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "no-such-folder" / "runs.db"
    (tmp_path / "out").mkdir()
    result = _cli(_fill(command, missing, 1, tmp_path), tmp_path)
    _assert_sentence(result, "does not exist")
    assert not missing.parent.exists()


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                    reason="root ignores file modes and setpriv is missing")
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_read_only_database_can_be_read_but_not_written(command: list[str],
                                                          tmp_path: pathlib.Path,
                                                          finished_db) -> None:
    source, run_id = finished_db
    # pytest's own folders are private to root: work in one that another user can reach.
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="jurybox-ro-"))
    os.chmod(tmp_path, 0o755)
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "demo.db"
    shutil.copy(source, db)
    (tmp_path / "out").mkdir()
    os.chmod(db, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH
             | stat.S_IXOTH)
    os.chmod(tmp_path / "out", 0o777)
    before = _digest(db)
    args = _fill(command, db, run_id, tmp_path)
    if os.geteuid() == 0:  # as root every file is writable: run as nobody
        args_prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
        env.pop("JURYBOX_DB", None)
        result = subprocess.run([*args_prefix, sys.executable, "-m", "judging.runs.commands.cli", *args],
                                cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=120)
    else:
        result = _cli(args, tmp_path)
    try:
        if command[0] in READS:
            assert result.returncode == 0, result.stderr
            assert "Traceback" not in result.stderr
        else:
            _assert_sentence(result, "read-only")
        assert _digest(db) == before
    finally:
        os.chmod(folder, 0o755)
        os.chmod(db, 0o644)
        shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_full_disk_mid_write_is_a_sentence_and_keeps_what_was_saved(finished_db,
                                                                       tmp_path: pathlib.Path) -> None:
    from storage.reviewing.overrides import add_override

    source, run_id = finished_db
    path = tmp_path / "full.db"
    shutil.copy(source, path)
    db = open_db(path)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")  # the "disk" holds not one page more
    with pytest.raises(sqlite3.OperationalError) as caught:
        for n in range(5000):
            add_override(db, run_id, "TX-0001", "KEEP", "x" * 2000 + str(n), "ana")
    fault = database_fault(caught.value, path)
    assert isinstance(fault, DatabaseFault)
    assert "disk is full" in str(fault) and "free some space" in str(fault)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert get_run(db, run_id)["status"] == "done"


@pytest.mark.parametrize(
    ("message", "words"),
    [("database is locked", "locked by another program"),
     ("attempt to write a readonly database", "read-only"),
     ("file is not a database", "damaged"),
     ("database disk image is malformed", "damaged"),
     ("unable to open database file", "cannot be opened")],
)
def test_each_sqlite_fault_has_its_sentence(message: str, words: str) -> None:
    fault = database_fault(sqlite3.OperationalError(message), "/data/jurybox.db")
    assert words in str(fault) and "/data/jurybox.db" in str(fault)


def test_the_app_names_a_damaged_database_instead_of_a_generic_error(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.fixtures_app import _clear_streamlit_caches
    from tests.test_app_smoke import open_page

    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"not a database at all " * 300)
    before = _digest(damaged)
    monkeypatch.setenv("JURYBOX_DB", str(damaged))
    _clear_streamlit_caches()
    for page in ("home", "review", "run"):
        at = open_page(page)
        assert not at.exception, [e.value for e in at.exception]
        assert any("damaged" in e.value and str(damaged) in e.value for e in at.error), \
            [e.value for e in at.error]
    assert _digest(damaged) == before
