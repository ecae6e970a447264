"""Crash safety: a run in a subprocess is killed with SIGKILL midway; after a restart the run
shows as interrupted, resume completes it without paying again for any stored success, and the
database is intact."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import httpx

from judging.runs.background.jobs import JobRegistry, mark_interrupted_runs, prepare_run
from storage.datasets.dataset_store import save_dataset
from storage.db import open_db
from storage.results.runs import get_run
from tests.fixtures_storage import assert_secret_stored_nowhere, make_parsed, tiny_panel

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLANTED_KEY = "sk-ant-PLANTED-crash-test-key-5555aaaa"
N_ITEMS = 300
CONCURRENCY = 16

CHILD = textwrap.dedent(
    """
    import os, sys
    from judging.runs.background.jobs import JobRegistry
    registry = JobRegistry()
    job = registry.start_run(sys.argv[1], int(sys.argv[2]), concurrency=int(sys.argv[3]),
                             key_lookup=lambda name: os.environ.get(name))
    print("started", flush=True)
    job.wait()
    print("finished", job.progress().status, flush=True)
    """
)


def _ok_calls(db_path: str, run_id: int) -> int:
    db = open_db(db_path)
    try:
        return db.execute(
            "SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NULL", [run_id]
        ).fetchone()[0]
    finally:
        db.close()


def test_kill_9_midway_then_resume(db_path, simulator_factory):
    sim = simulator_factory(latency_ms=50)
    db = open_db(db_path)
    dataset_id = save_dataset(db, make_parsed(N_ITEMS)).id
    panel = tiny_panel(sim.base_url)
    for critic in panel.critics:
        critic.api_key_env = "JURYBOX_CRASH_KEY"
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel)
    db.close()
    total_pairs = N_ITEMS * 3

    env = {**os.environ, "PYTHONPATH": str(ROOT), "JURYBOX_CRASH_KEY": PLANTED_KEY}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, db_path, str(run_id), str(CONCURRENCY)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while _ok_calls(db_path, run_id) < total_pairs // 4:
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL

    # Let the server finish the replies that were in flight to the dead process.
    deadline = time.monotonic() + 10
    while sim.stats()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.01)
    stats_at_kill = httpx.get(f"{sim.root_url}/stats").json()

    # "Restart": a fresh process would do exactly this at start-up.
    db = open_db(db_path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert get_run(db, run_id)["status"] == "running"
    assert mark_interrupted_runs(db, JobRegistry().live_run_ids()) == [run_id]
    assert get_run(db, run_id)["status"] == "interrupted"
    stored = _ok_calls(db_path, run_id)
    assert total_pairs // 4 <= stored < total_pairs, "the kill did not land midway"
    # Replies the server made that the dead process never stored: what was in flight plus the
    # verdicts waiting for the next group commit (20 ms worth, about 6 here). The bound leaves
    # room for a loaded machine delaying the writer; the old 0.25 s batches lost about 96.
    lost = stats_at_kill["successes"] - stored
    print(f"stored {stored}, served {stats_at_kill['successes']}, lost {lost}")
    assert 0 <= lost <= 3 * CONCURRENCY, lost

    httpx.post(f"{sim.root_url}/stats/reset")
    job = JobRegistry().resume(db_path, run_id, concurrency=CONCURRENCY,
                               key_lookup=lambda name: PLANTED_KEY)
    assert job.wait(120)
    assert job.progress().status == "done", job.progress().error
    stats = httpx.get(f"{sim.root_url}/stats").json()
    # Nothing stored before the kill was requested again: the resume asked for exactly the
    # missing pairs, once each.
    assert stats["duplicate_successes"] == 0
    assert stats["successes"] == total_pairs - stored
    assert job.progress().cached == stored

    run = get_run(db, run_id)
    assert run["status"] == "done" and run["ok_calls"] == total_pairs
    assert db.execute("SELECT count(*) FROM calls WHERE run_id = ?", [run_id]).fetchone()[0] == total_pairs
    assert db.execute("SELECT count(*) FROM consensus WHERE run_id = ?", [run_id]).fetchone()[0] == N_ITEMS
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    db.close()
    assert_secret_stored_nowhere(db_path, PLANTED_KEY)
