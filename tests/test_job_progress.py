"""One progress type: a job's progress is the engine's `RunProgress` plus what only the job
knows, with one pace rule (requests actually sent per second of the run's wall time)."""

from __future__ import annotations

import io

from judging.engine.ledger import Ledger
from judging.engine.panel_runner import RunProgress
from judging.run_status import RunStatus
from judging.runs.background.job import CriticProgress, JobProgress
from judging.runs.commands.summary import ProgressBar


def _run() -> RunProgress:
    # 30 calls finished, 10 of them from the cache: 20 requests sent in 4 s.
    return RunProgress(total=60, items_total=20, items_done=10,
                       critic_done={"a": 20, "b": 10}, critic_failed={"b": 2},
                       ledger=Ledger(calls=30, failed=2, cache_hits=10, sent_calls=20),
                       elapsed_s=4.0)


def test_one_pace_rule_cache_hits_excluded() -> None:
    run = _run()
    assert run.calls_per_second == 5.0  # 20 sent / 4 s, not 30 finished / 4 s
    assert run.eta_s == 6.0  # 30 calls left at 5 a second
    job = JobProgress(run_id=1, kind="start", status=RunStatus.RUNNING, run=run, elapsed_s=9.0)
    assert job.calls_per_s == run.calls_per_second and job.eta_s == run.eta_s


def test_a_job_reads_its_runs_figures() -> None:
    job = JobProgress(run_id=1, kind="resume", status=RunStatus.RUNNING, run=_run(), written=25)
    assert (job.total, job.items_total, job.items_done, job.done, job.failed, job.cached) == (
        60, 20, 10, 30, 2, 10)
    assert job.per_critic == {"a": CriticProgress(20, 0), "b": CriticProgress(10, 2)}
    assert job.fraction == 0.5


def test_before_the_first_reply_the_time_left_is_unknown() -> None:
    job = JobProgress(run_id=1, kind="start", status=RunStatus.STARTING)
    assert (job.total, job.done, job.calls_per_s, job.per_critic) == (0, 0, 0.0, {})
    planned = JobProgress(run_id=1, kind="start", status=RunStatus.RUNNING,
                          run=RunProgress(total=60, items_total=20))
    assert planned.eta_s is None and planned.fraction == 0.0


def test_the_cli_bar_draws_a_job_without_converting_it() -> None:
    job = JobProgress(run_id=1, kind="start", status=RunStatus.RUNNING, run=_run(), elapsed_s=9.0)
    assert ProgressBar.render(job) == ProgressBar.render(_run()).replace("  4.0 s", "  9.0 s")
    stream = io.StringIO()
    ProgressBar(20, stream=stream).update(job)
    assert "10/20 items, 30/60 verdicts, 2 failed" in stream.getvalue()
