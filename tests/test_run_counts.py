"""A run's counts agree wherever they are shown: a cancelled call is "not sent", never "failed";
a resumed run's live line and its stored line say the same; a job that lost its run to another
process says what became of the run and leaves the run's outcome counts to the new owner."""

from __future__ import annotations

import re
import time
from typing import Any

from judging.engine.ledger import Ledger
from judging.engine.panel_runner import RunProgress
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.summary import ProgressBar
from judging.verdicts import FailureKind, Verdict
from pages.ui.run.progress import critic_rows, progress_text, run_summary_line
from storage.datasets.dataset_store import save_dataset
from storage.results.runs import claim_run, get_run, set_run_status
from tests.fixtures_storage import make_parsed, tiny_panel


def _new_run(db: Any, simulator: Any, n_items: int) -> int:
    dataset_id = save_dataset(db, make_parsed(n_items)).id
    return prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(simulator.base_url))


def _wait_until(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _stored_rows(db: Any, run_id: int) -> int:
    return int(db.execute("SELECT count(*) FROM calls WHERE run_id = ?", [run_id]).fetchone()[0])


def test_a_call_cancelled_before_it_was_sent_is_not_sent_never_failed() -> None:
    never_sent = Verdict(critic="a", item_id="1", failure=FailureKind.CANCELLED, attempts=0)
    refused = Verdict(critic="a", item_id="2", failure=FailureKind.REFUSAL, attempts=1)
    ledger = Ledger().add_all([never_sent, refused, Verdict(critic="a", item_id="3", label="x",
                                                            attempts=1)])
    assert (ledger.calls, ledger.failed, ledger.cancelled, ledger.sent_calls) == (2, 1, 1, 2)


def test_the_cli_bar_says_not_sent_for_cancelled_calls() -> None:
    progress = RunProgress(total=10, items_total=5, ledger=Ledger(calls=4, failed=1, cancelled=6))
    line = ProgressBar.render(progress)
    assert "4/10 verdicts, 1 failed, 6 not sent" in line


def test_cancel_counts_calls_never_sent_as_not_sent_and_shows_no_time_left(
    db: Any, db_path: str, simulator_factory: Any
) -> None:
    sim = simulator_factory(latency_ms=40)  # the default profile never fails a call
    run_id = _new_run(db, sim, 120)
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=4)
    _wait_until(lambda: job.progress().done >= 20)
    assert registry.cancel(run_id)
    cancelling = job.progress()
    assert cancelling.status == "cancelling"
    assert " left" not in progress_text(cancelling)  # no time left once cancelled
    assert all(row["time left"] in ("stopped", "done") for row in critic_rows(cancelling))
    assert job.wait(30)
    final = job.progress()
    assert final.status == "cancelled"
    stored = _stored_rows(db, run_id)
    # Every call stored succeeded; the ones a cancel stopped were never sent: none "failed".
    assert final.failed == 0 and final.cancelled > 0
    assert all(c.failed == 0 for c in final.per_critic.values())
    assert final.done == stored == sum(c.done for c in final.per_critic.values())
    text = progress_text(final)
    assert "failed" not in text and f"{final.cancelled:,} not sent" in text
    assert f"{stored:,} / 360 verdicts" in text
    assert " left" not in text
    ledger = get_run(db, run_id)["ledger"]
    assert (ledger["calls"], ledger["failed"], ledger["cancelled"]) == (stored, 0, final.cancelled)
    assert ledger["sent_calls"] == sim.stats()["total"]


def _figures(line: str) -> dict[str, int]:
    """"N calls sent", "N from cache", "N / M verdicts" of a status line."""
    out = {}
    for name, pattern in (("sent", r"([\d,]+) calls sent"), ("cache", r"([\d,]+) from cache"),
                          ("done", r"([\d,]+) / [\d,]+ verdicts")):
        found = re.search(pattern, line)
        out[name] = int(found.group(1).replace(",", "")) if found else 0
    return out


def test_after_resume_the_live_line_and_the_stored_line_agree(
    db: Any, db_path: str, simulator_factory: Any
) -> None:
    sim = simulator_factory(latency_ms=30)
    run_id = _new_run(db, sim, 60)
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=4)
    _wait_until(lambda: job.progress().done >= 30)
    registry.cancel(run_id)
    assert job.wait(30)
    job = registry.resume(db_path, run_id, concurrency=8)
    assert job.wait(60) and job.progress().status == "done"
    run = get_run(db, run_id)
    live = progress_text(job.progress(), Ledger.from_mapping(run["ledger"]))
    stored = run_summary_line(run)
    # One run, one set of figures: what was sent, what came from the cache, calls done.
    assert _figures(live) == _figures(stored), (live, stored)
    assert _figures(stored)["done"] == 180
    assert _figures(stored)["sent"] == sim.stats()["total"]


def test_a_job_that_lost_its_run_says_what_became_of_it_and_adds_no_outcomes(
    db: Any, db_path: str, simulator_factory: Any
) -> None:
    sim = simulator_factory(latency_ms=150)
    run_id = _new_run(db, sim, 40)
    job = JobRegistry().start_run(db_path, run_id, concurrency=2)
    _wait_until(lambda: job.progress().done >= 2)
    # Another process takes the run over (as after a lapsed lease) and finishes it.
    assert claim_run(db, run_id, (), "another-process", take_over_after_s=0.0)
    set_run_status(db, run_id, "done", owner="another-process")
    assert job.wait(30)
    final = job.progress()
    assert final.status == "done", final  # not "cancelled": the run was finished
    assert final.error and "took this run over" in final.error
    run = get_run(db, run_id)
    assert run["status"] == "done"
    ledger = run["ledger"]
    # The calls the ousted job stopped are not the run's (what it paid for is still counted).
    assert ledger.get("cancelled", 0) == 0 and ledger.get("failed", 0) == 0
    assert ledger["sent_calls"] == sim.stats()["total"]


def test_a_job_that_lost_its_run_to_a_working_owner_is_interrupted_not_cancelled(
    db: Any, db_path: str, simulator_factory: Any
) -> None:
    sim = simulator_factory(latency_ms=150)
    run_id = _new_run(db, sim, 40)
    job = JobRegistry().start_run(db_path, run_id, concurrency=2)
    _wait_until(lambda: job.progress().done >= 2)
    assert claim_run(db, run_id, (), "another-process", take_over_after_s=0.0)
    assert job.wait(30)
    final = job.progress()
    assert final.status == "interrupted" and "is running it now" in (final.error or "")
    assert get_run(db, run_id)["status"] == "running"  # the new owner's, left alone
