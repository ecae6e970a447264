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
from judging.run_status import RunStatus

JobKind = Literal["start", "resume", "rerun_failures", "rejudge"]
KeyLookup = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class CriticProgress:
    """One critic's share of a job: calls finished and how many of them failed."""

    done: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class JobProgress(LedgerTotals):
    """A consistent snapshot of a job (safe to keep; it never changes).

    Attributes:
        run_id: the run.
        kind: "start", "resume", "rerun_failures" or "rejudge".
        status: a `RunStatus`: starting, running, cancelling, then the run's final status
            (done, cancelled, interrupted or failed; `finished` says which are final).
        total: calls planned for this job (items x critics; an upper bound for cascades).
        written: verdicts stored in the database so far.
        items_total / items_done: items in the job / items with a panel verdict.
        per_critic: critic name -> `CriticProgress`.
        calls_per_s: requests actually sent per second (cache hits excluded).
        ledger: this job's totals (`judging.engine.ledger.Ledger`): calls done, failed, from cache,
            saved by a cascade, sent, HTTP attempts, tokens, cost. The properties read it.
        eta_s: seconds left at the current pace; None when unknown.
        elapsed_s: seconds since the job started.
        error: why the job failed, or a note (e.g. a critic that was stopped); None otherwise.
        vendor: while the run waits for its vendor batches, what each open one is doing
            ("batch_abc (careful) in_progress: 120 of 300 answered"); None otherwise.
    """

    run_id: int
    kind: str
    status: RunStatus
    total: int = 0
    written: int = 0
    items_total: int = 0
    items_done: int = 0
    per_critic: dict[str, CriticProgress] = field(default_factory=dict)
    calls_per_s: float = 0.0
    ledger: Ledger = field(default_factory=Ledger)
    eta_s: float | None = None
    elapsed_s: float = 0.0
    error: str | None = None
    vendor: str | None = None
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
        # This job's claim on its run (`storage.runs.claim_run`): heartbeats and the final
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
