"""Background runs against the simulator over real HTTP: start, cancel, resume, re-run failures,
re-judge one item, crash of the worker, interrupted runs."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

import judging.runs.background.worker
import judging.runs.background.writer
from judging.errors import JobConflict
from judging.runs.background.jobs import JobRegistry, mark_interrupted_runs, prepare_run
from judging.runs.stored.evidence import fill_requests
from storage.datasets.dataset_store import save_dataset
from storage.db import NotFoundError
from storage.results.runs import get_run, set_run_status
from storage.reviewing.review_queue import item_detail, review_table
from tests.fixtures_storage import assert_secret_stored_nowhere, make_parsed, tiny_panel

PLANTED_KEY = "sk-proj-PLANTED-KEY-for-jobs-test-000111222"


def _new_run(db, simulator, n_items=30, **panel_kwargs):
    dataset_id = save_dataset(db, make_parsed(n_items)).id
    panel = tiny_panel(simulator.base_url, **panel_kwargs)
    return prepare_run(db, dataset_id=dataset_id, panel=panel)


def _count(db, sql, *params):
    return db.execute(sql, list(params)).fetchone()[0]


def test_a_run_completes_and_stores_everything(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=2)
    run_id = _new_run(db, sim, 40)
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=16)
    assert job.wait(60)
    progress = job.progress()
    assert progress.status == "done" and progress.error is None
    assert progress.total == progress.done == 120 and progress.written == 120
    assert progress.fraction == 1.0
    assert set(progress.per_critic) == {"critic_0", "critic_1", "critic_2"}
    assert all(p.done == 40 for p in progress.per_critic.values())
    run = get_run(db, run_id)
    assert run["status"] == "done" and run["finished_at"] and run["started_at"]
    assert run["ok_calls"] == 120 and run["simulated"]
    assert _count(db, "SELECT count(*) FROM calls WHERE run_id = ?", run_id) == 120
    assert _count(db, "SELECT count(*) FROM consensus WHERE run_id = ?", run_id) == 40
    assert _count(db, "SELECT count(*) FROM consensus WHERE run_id = ? AND item_alpha IS NOT NULL",
                  run_id) > 0
    assert sim.stats()["successes"] == 120
    # The request is left to the run's template (issue 13): rebuilt whole on demand.
    detail = fill_requests(db, run_id, item_detail(db, run_id, "item-000003"))
    assert detail["verdicts"][0]["raw_response"] and detail["verdicts"][0]["raw_request"]["body"]
    assert detail["verdicts"][0]["request_rebuilt"] == 1


def test_review_fills_up_while_the_run_goes_on(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=30)
    run_id = _new_run(db, sim, 60)
    job = JobRegistry().start_run(db_path, run_id, concurrency=3)
    seen_while_running = 0
    while job.alive:
        _, total = review_table(db, run_id, limit=5)
        if job.alive and 0 < total < 60:
            seen_while_running = max(seen_while_running, total)
        time.sleep(0.05)
    assert seen_while_running > 0  # decided items were reviewable before the run ended
    assert job.progress().status == "done"
    assert review_table(db, run_id)[1] == 60


def test_cancel_then_resume_sends_only_what_is_missing(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=40)
    run_id = _new_run(db, sim, 120)
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=4)
    deadline = time.monotonic() + 30
    while job.progress().done < 40 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert registry.cancel(run_id)
    assert job.wait(30)
    assert job.progress().status == "cancelled"
    assert get_run(db, run_id)["status"] == "cancelled"
    stored = _count(db, "SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NULL", run_id)
    assert 40 <= stored < 360
    # Only fully judged items get a consensus; the rest wait for the resume.
    decided = _count(db, "SELECT count(*) FROM consensus WHERE run_id = ?", run_id)
    complete = _count(db, "SELECT count(*) FROM (SELECT item_id FROM calls WHERE run_id = ?"
                      " GROUP BY item_id HAVING count(*) = 3)", run_id)
    assert decided == complete < 120
    served_before = sim.stats()["successes"]
    assert served_before == stored  # in-flight calls finished and were kept

    job = registry.resume(db_path, run_id, concurrency=16)
    assert job.wait(60)
    assert job.progress().status == "done"
    assert job.progress().cached == stored  # stored successes came from the database
    stats = sim.stats()
    assert stats["duplicate_successes"] == 0
    assert stats["successes"] == 360
    assert _count(db, "SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NULL", run_id) == 360
    assert _count(db, "SELECT count(*) FROM consensus WHERE run_id = ?", run_id) == 120


def test_rerun_failures_sends_only_the_failed_pairs(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=1, profiles={"m-c": {"rate_malformed": 0.4}})
    run_id = _new_run(db, sim, 50)
    registry = JobRegistry()
    assert registry.start_run(db_path, run_id).wait(60)
    failed = _count(db, "SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NOT NULL", run_id)
    assert failed > 0
    assert _count(db, "SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NOT NULL"
                  " AND critic != 'critic_2'", run_id) == 0
    requests_before = sim.stats()["total"]
    job = registry.rerun_failures(db_path, run_id)
    assert job.wait(60) and job.progress().status == "done"
    assert sim.stats()["total"] - requests_before == failed  # parse failures are not retried
    assert sim.stats()["duplicate_successes"] == 0
    assert _count(db, "SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NOT NULL",
                  run_id) < failed
    assert get_run(db, run_id)["failed_calls"] < failed


def test_rejudge_one_item_replaces_its_verdicts(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=1)
    run_id = _new_run(db, sim, 10)
    registry = JobRegistry()
    assert registry.start_run(db_path, run_id).wait(60)
    before = {v["critic"]: v["created_at"] for v in item_detail(db, run_id, "item-000004")["verdicts"]}
    requests_before = sim.stats()["total"]
    job = registry.rejudge_item(db_path, run_id, "item-000004")
    assert job.wait(60) and job.progress().status == "done"
    assert sim.stats()["total"] - requests_before == 3  # that item's three critics, no cache
    after = {v["critic"]: v["created_at"] for v in item_detail(db, run_id, "item-000004")["verdicts"]}
    assert set(after) == set(before) and all(after[c] > before[c] for c in before)
    assert _count(db, "SELECT count(*) FROM calls WHERE run_id = ?", run_id) == 30
    assert get_run(db, run_id)["status"] == "done"


def test_rejudging_an_item_leaves_the_run_status_alone(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=1)
    run_id = _new_run(db, sim, 4)
    registry = JobRegistry()
    job = registry.rejudge_item(db_path, run_id, "item-000002")  # the run never started
    assert job.wait(60) and job.progress().status == "done"
    run = get_run(db, run_id)
    assert run["status"] == "pending" and run["ok_calls"] == 3
    assert registry.start_run(db_path, run_id).wait(60)  # still startable, and starts
    assert get_run(db, run_id)["status"] == "done"


def test_conflicts_are_refused_with_a_reason(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=30)
    run_id = _new_run(db, sim, 40)
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=2)
    with pytest.raises(JobConflict, match="already being worked on"):
        registry.resume(db_path, run_id)
    job.cancel()
    job.wait(30)
    with pytest.raises(JobConflict, match="is cancelled: it cannot be started. Resume it"):
        registry.start_run(db_path, run_id)
    assert registry.resume(db_path, run_id).wait(60)
    with pytest.raises(JobConflict, match="is done: it cannot be resumed. Re-run its failures"):
        registry.resume(db_path, run_id)
    with pytest.raises(NotFoundError):
        registry.start_run(db_path, 999)
    with pytest.raises(NotFoundError):
        registry.rejudge_item(db_path, run_id, "no-such-item")


def test_a_crash_inside_the_worker_marks_the_run_failed(db, db_path, simulator_factory, monkeypatch):
    sim = simulator_factory(latency_ms=1)
    run_id = _new_run(db, sim, 5)

    def broken(*args, **kwargs):
        raise RuntimeError("consensus table on fire (injected)")

    # The one place a job writes decisions: the writer thread, as the runner makes them.
    monkeypatch.setattr(judging.runs.background.writer, "write_consensus", broken)
    job = JobRegistry().start_run(db_path, run_id)
    assert job.wait(60)
    assert job.progress().status == "failed"
    run = get_run(db, run_id)
    assert run["status"] == "failed" and "on fire" in run["error"]
    # The verdicts were stored before the failure: a resume pays nothing again.
    assert _count(db, "SELECT count(*) FROM calls WHERE run_id = ?", run_id) == 15
    monkeypatch.undo()
    served = sim.stats()["total"]
    assert JobRegistry().resume(db_path, run_id).wait(60)
    assert sim.stats()["total"] == served
    assert get_run(db, run_id)["status"] == "done"


def test_running_rows_without_a_live_job_become_interrupted(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=1)
    orphan = _new_run(db, sim, 3)
    set_run_status(db, orphan, "running")
    # Owned by this very process with a fresh heartbeat: some job here may still run it.
    assert mark_interrupted_runs(db) == []
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    db.execute("UPDATE runs SET owner_pid = ? WHERE id = ?", [int(dead.stdout), orphan])
    assert mark_interrupted_runs(db) == [orphan]  # its process is gone
    run = get_run(db, orphan)
    assert run["status"] == "interrupted" and "resume" in run["error"]
    registry = JobRegistry()
    assert registry.resume(db_path, orphan).wait(60)
    assert get_run(db, orphan)["status"] == "done"


def test_another_live_process_keeps_its_run_until_its_heartbeat_stops(db, simulator_factory):
    sim = simulator_factory(latency_ms=1)
    run_id = _new_run(db, sim, 3)
    set_run_status(db, run_id, "running")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        db.execute("UPDATE runs SET owner_pid = ? WHERE id = ?", [other.pid, run_id])
        assert mark_interrupted_runs(db) == []
        assert get_run(db, run_id)["status"] == "running"
        db.execute("UPDATE runs SET heartbeat_at = '2000-01-01T00:00:00+00:00' WHERE id = ?",
                   [run_id])
        assert mark_interrupted_runs(db) == [run_id]  # alive but silent: hung, or pid reused
    finally:
        other.kill()
        other.wait()


def test_a_live_job_is_not_marked_interrupted(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=50)
    run_id = _new_run(db, sim, 40)
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=2)
    deadline = time.monotonic() + 10
    while get_run(db, run_id)["status"] != "running" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert registry.mark_interrupted_runs(db_path) == []
    assert get_run(db, run_id)["status"] == "running"
    job.cancel()
    job.wait(30)


def test_the_key_is_used_but_never_stored(db, db_path, simulator_factory):
    sim = simulator_factory(latency_ms=1)
    dataset_id = save_dataset(db, make_parsed(8)).id
    panel = tiny_panel(sim.base_url)
    for critic in panel.critics:
        critic.api_key_env = "JURYBOX_TEST_SIM_KEY"
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel)
    looked_up: list[str] = []

    def key_lookup(name: str) -> str | None:
        looked_up.append(name)
        return PLANTED_KEY

    job = JobRegistry().start_run(db_path, run_id, key_lookup=key_lookup)
    assert job.wait(60) and job.progress().status == "done"
    assert "JURYBOX_TEST_SIM_KEY" in looked_up
    _, total = review_table(db, run_id, limit=None)
    assert total == 8
    assert_secret_stored_nowhere(db_path, PLANTED_KEY)


def test_the_writer_stores_verdicts_queued_just_before_it_closes(db, db_path, simulator_factory):
    """The writer decides "nothing left, stop" under its lock: verdicts that arrive between an
    idle tick and the close are still written (they were once all lost under load)."""
    import threading as _threading

    from judging.runs.background.writer import Writer
    from judging.verdicts import Verdict
    from storage.datasets.dataset_store import load_items
    from storage.results.runs import get_run

    sim = simulator_factory(latency_ms=1)
    run_id = _new_run(db, sim, 5)
    items = load_items(db, get_run(db, run_id)["dataset_id"])
    idle = _threading.Event()

    class SlowAfterIdle(Writer):
        def _take(self):  # the writer thread is descheduled right after an idle tick
            taken = super()._take()
            if not taken[0] and not taken[1] and not idle.is_set():
                idle.set()
                time.sleep(0.2)
            return taken

    writer = SlowAfterIdle(db_path, run_id, already_ok=set(), replace_success=False,
                           batch_size=200, flush_interval_s=0.01)
    assert idle.wait(10)
    for item in items:  # arrive during the pause, then the job closes at once
        writer.add(Verdict(critic="critic_0", item_id=item.id, label="KEEP", attempts=1), item)
    writer.close()
    assert writer.written == len(items)
    assert _count(db, "SELECT count(*) FROM calls WHERE run_id = ?", run_id) == len(items)
