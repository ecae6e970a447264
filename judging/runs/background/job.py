"""One background job on one run: its handle (`Job`) and the snapshots of its progress.

Plain data and a thread-safe handle: the registry creates jobs, the worker updates them, the
app and the CLI read `progress()` from any thread.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from judging.engine.ledger import Ledger, LedgerTotals
from judging.engine.panel_runner import RunProgress
from judging.run_status import RunStatus

JobKind = Literal["start", "resume", "rerun_failures", "rejudge"]
KeyLookup = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class CriticProgress:
    """One critic's share of a job: calls finished, how many of them failed, and the
    parameters a vendor refused and the run dropped or renamed for it (one sentence each)."""

    done: int = 0
    failed: int = 0
    adjusted: tuple[str, ...] = ()


def _not_started() -> RunProgress:
    return RunProgress(total=0, items_total=0)


@dataclass(frozen=True, slots=True)
class JobProgress(LedgerTotals):
    """A consistent snapshot of a job (safe to keep; it never changes): the engine's latest
    `RunProgress` of the run and what only the job knows (its status, what it wrote).

    The figures of the run (calls, items, per critic, pace, time left) are the engine's, read
    through `run`: one progress type, one pace rule (`RunProgress.calls_per_second`).

    Attributes:
        run_id: the run.
        kind: "start", "resume", "rerun_failures" or "rejudge".
        status: a `RunStatus`: starting, running, cancelling, then the run's final status
            (done, cancelled, interrupted or failed; `finished` says which are final).
        run: the engine's latest snapshot (a copy it handed over; nobody changes it): calls
            planned and finished, items, per critic counts, the ledger, the run's wall time.
        written: verdicts stored in the database so far.
        elapsed_s: seconds since the job started (setup and vendor batch waits included).
        error: why the job failed, or a note (e.g. a critic that was stopped); None otherwise.
        vendor: while the run waits for its vendor batches, what each open one is doing
            ("batch_abc (careful) in_progress: 120 of 300 answered"); None otherwise.
    """

    run_id: int
    kind: str
    status: RunStatus
    run: RunProgress = field(default_factory=_not_started)
    written: int = 0
    elapsed_s: float = 0.0
    error: str | None = None
    vendor: str | None = None

    @property
    def ledger(self) -> Ledger:
        """This job's totals (`judging.engine.ledger.Ledger`); the `LedgerTotals` read it."""
        return self.run.ledger

    @property
    def total(self) -> int:
        """Calls planned for this job (items x critics; an upper bound for cascades)."""
        return self.run.total

    @property
    def items_total(self) -> int:
        return self.run.items_total

    @property
    def items_done(self) -> int:
        """Items with a panel verdict."""
        return self.run.items_done

    @property
    def per_critic(self) -> dict[str, CriticProgress]:
        """Critic name -> its calls finished and failed, and its adjusted parameters."""
        return {name: CriticProgress(done, self.run.critic_failed.get(name, 0),
                                     tuple(self.run.critic_adjusted.get(name, ())))
                for name, done in self.run.critic_done.items()}

    @property
    def calls_per_s(self) -> float:
        """Requests actually sent per second (`RunProgress.calls_per_second`)."""
        return self.run.calls_per_second

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current pace; None when unknown."""
        return self.run.eta_s

    @property
    def fraction(self) -> float:
        """Share of the planned calls finished, 0..1 (for `st.progress`)."""
        if not self.total:
            return 1.0 if self.finished else 0.0
        return min(1.0, (self.done + self.calls_saved) / self.total)

    @property
    def finished(self) -> bool:
        """True once the job has written its final status (`RunStatus.finished`)."""
        return RunStatus(self.status).finished


class Job:
    """One background job on one run. Read `progress()` from any thread; `cancel()` to stop."""

    def __init__(self, run_id: int, kind: JobKind) -> None:
        self.run_id = run_id
        self.kind = kind
        self.cancel_event = threading.Event()
        # This job's claim on its run (`storage.results.runs.claim_run`): heartbeats and the final
        # status only land while the run is still its own.
        self.token = uuid.uuid4().hex
        self.thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._progress = JobProgress(run_id=run_id, kind=kind, status=RunStatus.STARTING)
        self._started = time.perf_counter()
        self._done = threading.Event()

    def progress(self) -> JobProgress:
        """The latest snapshot (thread-safe)."""
        with self._lock:
            return self._progress

    def _update(self, **changes: Any) -> None:
        with self._lock:
            data = {name: getattr(self._progress, name) for name in JobProgress.__slots__}
            data.update(changes)
            data["elapsed_s"] = time.perf_counter() - self._started
            self._progress = JobProgress(**data)

    def cancel(self) -> None:
        """Stop sending new calls; calls in flight finish and are kept; status becomes cancelled."""
        self.cancel_event.set()
        with self._lock:
            if not self._progress.finished:
                data = {name: getattr(self._progress, name) for name in JobProgress.__slots__}
                data["status"] = RunStatus.CANCELLING
                self._progress = JobProgress(**data)

    @property
    def alive(self) -> bool:
        """True until the worker has finished (and written its final status)."""
        return not self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job finishes (or `timeout` seconds). Returns True when finished."""
        return self._done.wait(timeout)
