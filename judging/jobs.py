"""Background runs shared by the app and the CLI: start, watch, cancel, resume, re-run failures.

A `JobRegistry` is plain Python (a dict behind a lock); the app keeps one per process (via
`st.cache_resource`), the CLI makes its own. Each job runs on its own thread and:

1. opens its own database connection (a connection belongs to its thread);
2. loads the run's snapshot (panel YAML + dataset) and marks the run `running`;
3. judges every item through `run_panel` with a `CallCacheStore`: a pair that already has a
   successful call anywhere in the database (same cache key: vendor, base URL, model, messages,
   parameters) is served from it and sends no request. That is how resume and re-run-failures
   send only the pairs without a successful verdict, even after a crash;
4. hands every verdict to a writer thread that stores them in batches inside transactions
   (every `batch_size` verdicts or `flush_interval_s`); WAL keeps readers unblocked. For
   single-tier panels with a per-item strategy an item's decision is stored as soon as its
   last verdict arrives, so Review fills up while the run goes on;
5. writes the final consensus and per-item alpha of every fully judged item, then marks the run
   done / cancelled / failed. Nothing raises out of the worker: a crash marks the run failed
   with the error's message. The writer also beats a heartbeat (see `mark_interrupted_runs`).

The database is the truth: the registry dies with the process. `mark_interrupted_runs` at
start-up turns runs still marked `running` (and owned by no live job) into `interrupted`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from judging.errors import JuryboxError
from judging.ledger import Ledger
from judging.panel import Panel
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict

log = logging.getLogger(__name__)

JobKind = Literal["start", "resume", "rerun_failures", "rejudge"]
KeyLookup = Callable[[str], "str | None"]

# Statuses a run may be (re)started from, per kind of job.
_STARTABLE: dict[str, tuple[str, ...]] = {
    "start": ("pending",),
    "resume": ("pending", "cancelled", "interrupted", "failed"),
    "rerun_failures": ("pending", "done", "cancelled", "interrupted", "failed"),
    "rejudge": ("pending", "done", "cancelled", "interrupted", "failed"),
}


class JobConflict(JuryboxError):
    """A job cannot start: the run is busy, finished, or in a state that does not allow it."""


@dataclass(frozen=True, slots=True)
class CriticProgress:
    """One critic's share of a job: calls finished and how many of them failed."""

    done: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class JobProgress:
    """A consistent snapshot of a job (safe to keep; it never changes).

    Attributes:
        run_id: the run.
        kind: "start", "resume", "rerun_failures" or "rejudge".
        status: "starting", "running", "cancelling", then the run's final status: "done",
            "cancelled" or "failed".
        total: calls planned for this job (items x critics; an upper bound for cascades).
        written: verdicts stored in the database so far.
        items_total / items_done: items in the job / items with a panel verdict.
        per_critic: critic name -> `CriticProgress`.
        calls_per_s: requests actually sent per second (cache hits excluded).
        ledger: this job's totals (`judging.ledger.Ledger`): calls done, failed, from cache,
            saved by a cascade, sent, HTTP attempts, tokens, cost. The properties read it.
        eta_s: seconds left at the current pace; None when unknown.
        elapsed_s: seconds since the job started.
        error: why the job failed, or a note (e.g. a critic that was stopped); None otherwise.
    """

    run_id: int
    kind: str
    status: str
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

    @property
    def done(self) -> int:
        """Calls finished (cache hits and failures included)."""
        return self.ledger.calls

    @property
    def failed(self) -> int:
        """Calls that gave no verdict (cancelled ones included)."""
        return self.ledger.failed

    @property
    def cached(self) -> int:
        """Calls served from stored successes (no request sent, nothing paid)."""
        return self.ledger.cache_hits

    @property
    def calls_saved(self) -> int:
        return self.ledger.calls_saved

    @property
    def tokens_in(self) -> int:
        return self.ledger.tokens_in

    @property
    def tokens_out(self) -> int:
        return self.ledger.tokens_out

    @property
    def cost_usd(self) -> float:
        return self.ledger.cost_usd

    @property
    def cost_unknown(self) -> int:
        return self.ledger.unpriced_calls

    @property
    def fraction(self) -> float:
        """Share of the planned calls finished, 0..1 (for `st.progress`)."""
        if not self.total:
            return 1.0 if self.status in ("done", "cancelled", "failed") else 0.0
        return min(1.0, (self.done + self.calls_saved) / self.total)

    @property
    def finished(self) -> bool:
        return self.status in ("done", "cancelled", "failed")


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
        self._progress = JobProgress(run_id=run_id, kind=kind, status="starting")
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
                data["status"] = "cancelling"
                self._progress = JobProgress(**data)

    @property
    def alive(self) -> bool:
        """True until the worker has finished (and written its final status)."""
        return not self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job finishes (or `timeout` seconds). Returns True when finished."""
        return self._done.wait(timeout)


class JobRegistry:
    """The jobs of this process, by run id (one database per registry).

    Args:
        batch_size: verdicts per write transaction at most.
        flush_interval_s: the longest a received verdict waits before it is written (group
            commit: every verdict that arrives meanwhile shares the transaction). Short,
            because a verdict received but not written when the process dies is paid again:
            20 ms keeps that to what arrives in 20 ms, while at 1,000 calls/s a commit still
            carries about 20 verdicts (a WAL commit without fsync costs well under 1 ms).
    """

    def __init__(self, *, batch_size: int = 200, flush_interval_s: float = 0.02) -> None:
        self._jobs: dict[int, Job] = {}
        self._lock = threading.Lock()
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s

    # -- queries ---------------------------------------------------------------------------

    def get(self, run_id: int) -> Job | None:
        """The latest job of a run in this process, finished or not; None if there is none."""
        with self._lock:
            return self._jobs.get(int(run_id))

    def live_run_ids(self) -> set[int]:
        """Runs with a job still working in this process."""
        with self._lock:
            return {run_id for run_id, job in self._jobs.items() if job.alive}

    def cancel(self, run_id: int) -> bool:
        """Cancel the run's live job. Returns False when no job of this process is running it."""
        job = self.get(run_id)
        if job is None or not job.alive:
            return False
        job.cancel()
        return True

    def mark_interrupted_runs(self, db_path: Any) -> list[int]:
        """At start-up: runs marked running in the database but owned by no live job of this
        registry become interrupted. Returns their ids."""
        from storage.db import open_db

        db = open_db(db_path)
        try:
            return mark_interrupted_runs(db, self.live_run_ids())
        finally:
            db.close()

    # -- starting jobs ---------------------------------------------------------------------

    def start_run(
        self, db_path: Any, run_id: int, *, concurrency: int = 64, key_lookup: KeyLookup | None = None
    ) -> Job:
        """Start a pending run in the background.

        Args:
            db_path: the database file (the worker opens its own connection to it).
            run_id: a run created by `create_run` / `prepare_run`.
            concurrency: calls in flight at once.
            key_lookup: key variable name -> key (default: the environment). Keys stay in memory.

        Returns:
            The `Job`; poll `job.progress()`.

        Raises:
            NotFoundError: no such run.
            JobConflict: the run is not pending, or a job is already running it.
        """
        return self._launch(db_path, run_id, "start", concurrency=concurrency, key_lookup=key_lookup)

    def resume(
        self, db_path: Any, run_id: int, *, concurrency: int = 64, key_lookup: KeyLookup | None = None
    ) -> Job:
        """Resume a cancelled, interrupted or failed run: only item x critic pairs without a
        successful verdict are sent (stored successes are cache hits).

        Raises:
            NotFoundError: no such run.
            JobConflict: the run is done or running.
        """
        return self._launch(db_path, run_id, "resume", concurrency=concurrency, key_lookup=key_lookup)

    def rerun_failures(
        self, db_path: Any, run_id: int, *, concurrency: int = 64, key_lookup: KeyLookup | None = None
    ) -> Job:
        """Send again only the pairs whose stored outcome is a failure (and any never sent).

        Raises:
            NotFoundError: no such run.
            JobConflict: the run is running.
        """
        return self._launch(
            db_path, run_id, "rerun_failures", concurrency=concurrency, key_lookup=key_lookup
        )

    def rejudge_item(
        self, db_path: Any, run_id: int, item_id: str, *, key_lookup: KeyLookup | None = None
    ) -> Job:
        """Judge one item afresh with every critic (no cache), replacing its stored verdicts.

        Raises:
            NotFoundError: no such run or item.
            JobConflict: the run is running.
        """
        return self._launch(
            db_path, run_id, "rejudge", concurrency=8, key_lookup=key_lookup, item_id=item_id
        )

    def _launch(
        self,
        db_path: Any,
        run_id: int,
        kind: JobKind,
        *,
        concurrency: int,
        key_lookup: KeyLookup | None,
        item_id: str | None = None,
    ) -> Job:
        from storage.datasets import get_item
        from storage.db import open_db
        from storage.runs import claim_run, get_run

        run_id = int(run_id)
        db = open_db(db_path)
        try:
            run = get_run(db, run_id)  # NotFoundError for an unknown id
            if item_id is not None:
                get_item(db, run["dataset_id"], item_id)
        finally:
            db.close()
        with self._lock:
            current = self._jobs.get(run_id)
            if current is not None and current.alive:
                raise JobConflict(f"Run {run_id} is already being worked on ({current.kind}).")
            status = run["status"]
            if status == "running":
                raise JobConflict(
                    f"Run {run_id} is marked running by another process; if that process died, "
                    "restart so it shows as interrupted, then resume it."
                )
            if status not in _STARTABLE[kind]:
                verb = {"start": "started", "resume": "resumed",
                        "rerun_failures": "re-run", "rejudge": "re-judged"}[kind]
                hint = ""
                if status in _STARTABLE["resume"] and status != "pending":
                    hint = " Resume it instead."
                elif status == "done":
                    hint = " Re-run its failures or re-judge items instead."
                raise JobConflict(f"Run {run_id} is {status}: it cannot be {verb}.{hint}")
            job = Job(run_id, kind)
            # The database decides who runs it: another process (the CLI next to the app, or a
            # second app) may be claiming the same run at this very moment.
            db = open_db(db_path)
            try:
                claimed = claim_run(db, run_id, _STARTABLE[kind], job.token)
                if not claimed:
                    now_status = get_run(db, run_id)["status"]
            finally:
                db.close()
            if not claimed:
                raise JobConflict(
                    f"Run {run_id} is {now_status}: another process started working on it a "
                    "moment ago, so this one did not (a run has one owner, and nothing is paid "
                    "twice). Follow its progress on the Run page or with `jurybox runs`."
                )
            self._jobs[run_id] = job
        worker = _Worker(
            job,
            db_path,
            concurrency=concurrency,
            key_lookup=key_lookup,
            item_id=item_id,
            previous=(run["status"], run["error"]) if kind == "rejudge" else None,
            batch_size=self.batch_size,
            flush_interval_s=self.flush_interval_s,
        )
        job.thread = threading.Thread(
            target=worker.run, name=f"jurybox-run-{run_id}-{kind}", daemon=True
        )
        job.thread.start()
        return job


def mark_interrupted_runs(db: Any, live_run_ids: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Turn runs still marked `running` whose job is not alive into `interrupted`.

    Call when the app or CLI starts (with the registry's live ids, if any).

    Args:
        db: a connection from `storage.open_db`.
        live_run_ids: runs a live job of this process owns (left alone).

    Returns:
        The ids of the runs marked interrupted.
    """
    from storage.runs import mark_interrupted

    return mark_interrupted(db, live_run_ids)


def prepare_run(db: Any, *, dataset_id: int, panel: Panel, name: str | None = None) -> int:
    """Save the panel version and create a pending run of it over a dataset.

    Args:
        db: a connection from `storage.open_db`.
        dataset_id: a saved dataset.
        panel: the panel to snapshot (its YAML and content hash are stored).
        name: an optional run name.

    Returns:
        The new run id (start it with `JobRegistry.start_run`).

    Raises:
        PlaceholderError: a critic's prompt uses a field the dataset does not have.
        NotFoundError: no such dataset.
        ConfigError: the panel holds something that looks like an API key.
    """
    from judging.panel_files import dump_panel, panel_hash
    from judging.vendors import get_preset
    from storage.datasets import get_dataset
    from storage.panels import save_panel
    from storage.runs import create_run

    dataset = get_dataset(db, dataset_id)
    for critic in panel.critics:
        critic.check_fields(list(dataset["fields"]))
    version = panel_hash(panel)
    save_panel(db, panel_hash=version, name=panel.name, yaml_text=dump_panel(panel))
    simulated = all(_is_simulated(get_preset, c.vendor) for c in panel.critics)
    return create_run(
        db,
        dataset_id=dataset_id,
        panel_hash=version,
        critics=[c.name for c in panel.critics],
        simulated=simulated,
        name=name,
    )


def _is_simulated(get_preset: Callable[[str], Any], vendor: str) -> bool:
    try:
        return bool(get_preset(vendor).simulated)
    except JuryboxError:
        return False


# ---------------------------------------------------------------------------------------------
# The worker


class _Writer:
    """Collects verdicts from the call threads; a dedicated thread writes them in batches."""

    def __init__(
        self,
        db_path: Any,
        run_id: int,
        *,
        already_ok: set[tuple[str, str]],
        replace_success: bool,
        batch_size: int,
        flush_interval_s: float,
        owner: str | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.db_path = db_path
        self.run_id = run_id
        self.owner = owner
        self.on_lost = on_lost
        self.already_ok = already_ok
        self.replace_success = replace_success
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self._pending: list[Verdict] = []
        self._decided: list[PanelVerdict] = []
        # This job's share of the run ledger not yet stored (taken with each batch).
        self._ledger = Ledger()
        self._first_at: float | None = None
        self._cond = threading.Condition()
        self._closing = False
        self._ledger_taken: Ledger | None = None
        self.written = 0
        self.error: BaseException | None = None
        self.decisions_error: Exception | None = None
        self._thread = threading.Thread(target=self._loop, name=f"jurybox-writer-{run_id}", daemon=True)
        self._thread.start()

    def add(self, verdict: Verdict, item: Item) -> None:
        """`on_verdict` callback: called from call threads, so it only queues."""
        if self.error is not None:
            raise RuntimeError(f"storing verdicts failed: {self.error}")
        if verdict.cached and (str(item.id), verdict.critic) in self.already_ok:
            return  # this run already holds that success: nothing new, nothing paid
        with self._cond:
            # Counted even when not stored: a call cancelled between retries was paid for.
            self._ledger.add(verdict)
            if verdict.failure == FailureKind.CANCELLED:
                return  # not stored: the pair stays open for a resume
            if not self._pending and not self._decided:
                self._first_at = time.monotonic()
            self._pending.append(verdict)
            if len(self._pending) >= self.batch_size:
                self._cond.notify()

    def saved_by_cascade(self, calls: int) -> None:
        """Record calls a cascade did not need (the run learns it at the end of the job)."""
        with self._cond:
            self._ledger.calls_saved += calls

    def decided(self, panel_verdict: PanelVerdict) -> None:
        """Queue an item's provisional decision (after its verdicts were queued by `add`)."""
        with self._cond:
            if not self._pending and not self._decided:
                self._first_at = time.monotonic()
            self._decided.append(panel_verdict)

    def _take(self) -> tuple[list[Verdict], list[PanelVerdict]]:
        """The next batch: verdicts and decisions swapped out together, so a decision is never
        written before the verdicts it was made from. Empty on an idle tick or at the end."""
        waited = False
        with self._cond:
            while True:
                queued = len(self._pending) + len(self._decided)
                if queued and (
                    len(self._pending) >= self.batch_size
                    or self._closing
                    or time.monotonic() - (self._first_at or 0) >= self.flush_interval_s
                ):
                    batch, self._pending = self._pending, []
                    decided, self._decided = self._decided, []
                    self._ledger_taken, self._ledger = self._ledger, Ledger()
                    return batch, decided
                if self._closing or waited:
                    # The end, or an idle tick that lets the loop send a heartbeat; a ledger
                    # share without verdicts to store (cancelled calls) is written then.
                    self._ledger_taken, self._ledger = self._ledger, Ledger()
                    return [], []
                waited = True
                timeout = (
                    self.flush_interval_s
                    if not queued
                    else max(0.0, self.flush_interval_s - (time.monotonic() - (self._first_at or 0)))
                )
                self._cond.wait(timeout)

    def _loop(self) -> None:
        from storage.calls import write_verdicts
        from storage.consensus import write_consensus
        from storage.db import open_db
        from storage.runs import add_to_ledger, heartbeat, refresh_run_totals

        db = open_db(self.db_path, migrate=False)
        last_totals = last_beat = time.monotonic()
        try:
            while True:
                batch, decided = self._take()
                if time.monotonic() - last_beat >= 1.0:
                    if not heartbeat(db, self.run_id, self.owner) and self.on_lost is not None:
                        # Another job took the run over (this one was silent past its lease):
                        # stop sending, so no call is paid twice.
                        self.on_lost()
                        self.on_lost = None
                    last_beat = time.monotonic()
                ledger, self._ledger_taken = self._ledger_taken, None
                if ledger is not None and not ledger.empty:
                    add_to_ledger(db, self.run_id, ledger.as_dict())
                if not batch and not decided:
                    if self._closing:
                        break
                    continue
                if batch:
                    write_verdicts(
                        db, self.run_id, batch, replace_success=self.replace_success,
                        refresh_totals=False,
                    )
                    self.written += len(batch)
                if decided and self.decisions_error is None:
                    try:
                        write_consensus(db, self.run_id, decided)
                    except Exception as error:  # noqa: BLE001 - reported by close()
                        # Decisions can be recomputed from verdicts; verdicts are paid for.
                        # So the verdicts still arriving keep being stored; the job fails at
                        # the end with this error, and a resume decides again.
                        self.decisions_error = error
                if time.monotonic() - last_totals > 2.0:
                    refresh_run_totals(db, self.run_id)
                    last_totals = time.monotonic()
            refresh_run_totals(db, self.run_id)
        except BaseException as error:  # noqa: BLE001 - reported through add() and close()
            self.error = error
        finally:
            db.close()

    def close(self) -> None:
        """Write what is left and stop; re-raises a write error."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        if self.error is not None:
            raise self.error
        if self.decisions_error is not None:
            raise self.decisions_error


class _Worker:
    def __init__(
        self,
        job: Job,
        db_path: Any,
        *,
        concurrency: int,
        key_lookup: KeyLookup | None,
        item_id: str | None,
        batch_size: int,
        flush_interval_s: float,
        previous: tuple[str, str | None] | None = None,
    ) -> None:
        self.job = job
        self.db_path = db_path
        self.concurrency = concurrency
        self.key_lookup = key_lookup
        self.item_id = item_id
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self.writer: _Writer | None = None
        # Re-judging one item must not change what the run as a whole is (a cancelled run
        # stays cancelled): the run gets this status (read before the claim) back at the end.
        self.previous = previous

    def run(self) -> None:
        job = self.job
        db = None
        final_status = "failed"
        message: str | None = None
        try:
            from storage.db import open_db

            db = open_db(self.db_path)
            final_status, message = self._run(db)
        except BaseException as error:
            log.exception("run %s failed", job.run_id)
            final_status = "failed"
            message = _describe(error)
        finally:
            try:
                if db is None:
                    from storage.db import open_db

                    db = open_db(self.db_path)
                from storage.runs import set_run_status

                if self.previous is not None:
                    status, error = self.previous
                    set_run_status(db, job.run_id, status,
                                   error=message if final_status == "failed" else error,
                                   owner=job.token)
                else:
                    set_run_status(db, job.run_id, final_status, error=message, owner=job.token)
            except BaseException:
                log.exception("could not record the final status of run %s", job.run_id)
            finally:
                if db is not None:
                    db.close()
                job._update(status=final_status, error=message,
                            written=self.writer.written if self.writer else 0)
                job._done.set()

    def _run(self, db: Any) -> tuple[str, str | None]:
        from judging.panel_files import load_panel
        from judging.runner import RunProgress, run_panel
        from storage.calls import CallCacheStore, delete_item_calls, successful_pairs
        from storage.datasets import get_item, load_items
        from storage.runs import get_run, refresh_run_totals

        job = self.job
        run = get_run(db, job.run_id)  # already claimed (running) by `_launch`
        panel = load_panel(run["panel_yaml"])
        if self.item_id is not None:
            items = [get_item(db, run["dataset_id"], self.item_id)]
        else:
            items = load_items(db, run["dataset_id"])
        rejudge = job.kind == "rejudge"
        already_ok = set() if rejudge else successful_pairs(db, job.run_id)
        n_critics = len(panel.critics)
        job._update(status="running", total=len(items) * n_critics, items_total=len(items))

        def on_progress(p: RunProgress) -> None:
            rate = p.ledger.sent_calls / p.elapsed_s if p.elapsed_s > 0 else 0.0
            remaining = max(0, p.total - p.done - p.calls_saved)
            eta = remaining / rate if rate > 0 else (0.0 if remaining == 0 else None)
            job._update(
                status="cancelling" if job.cancel_event.is_set() else "running",
                total=p.total, items_total=p.items_total, items_done=p.items_done,
                per_critic={
                    name: CriticProgress(p.critic_done.get(name, 0), p.critic_failed.get(name, 0))
                    for name in p.critic_done
                },
                calls_per_s=rate, ledger=p.ledger, eta_s=eta,
                written=self.writer.written if self.writer else 0,
            )

        cache = None if rejudge else CallCacheStore(self.db_path)
        self.writer = _Writer(
            self.db_path, job.run_id, already_ok=already_ok, replace_success=rejudge,
            batch_size=self.batch_size, flush_interval_s=self.flush_interval_s,
            owner=job.token, on_lost=job.cancel,
        )
        on_verdict = _LiveVotes(panel, self.writer).add if _votes_live(panel) else self.writer.add
        try:
            try:
                result = run_panel(
                    panel, items, concurrency=self.concurrency, on_progress=on_progress,
                    on_verdict=on_verdict, cancel=job.cancel_event, cache=cache,
                    key_lookup=self.key_lookup,
                )
                self.writer.saved_by_cascade(result.progress.calls_saved)
            finally:
                self.writer.close()  # store everything received, even when the run raised
        finally:
            if cache is not None:
                cache.close()
        if rejudge:
            # Only now that the new verdicts are safely stored: drop outcomes of critics that
            # were not called this time (e.g. a later cascade tier no longer needed).
            called = {v.critic for pv in result.verdicts for v in pv.verdicts
                      if v.failure != FailureKind.CANCELLED}
            for old in _stale_critics(db, job.run_id, self.item_id or "", called):
                delete_item_calls(db, job.run_id, self.item_id or "", critic=old)
            refresh_run_totals(db, job.run_id)
        complete = [
            pv for pv in result.verdicts
            if not any(v.failure == FailureKind.CANCELLED for v in pv.verdicts)
        ]
        _store_consensus(db, job.run_id, panel, complete, whole_run=self.item_id is None)
        stopped = "; ".join(f"{name}: {reason}" for name, reason in result.stopped_critics.items())
        if job.cancel_event.is_set() and len(complete) < len(result.verdicts):
            return "cancelled", None
        return "done", (f"Critics stopped during the run: {stopped}" if stopped else None)


def _votes_live(panel: Panel) -> bool:
    """Whether an item can be decided as soon as its last verdict arrives (so Review fills up
    while the run goes on): not for cascades (the runner decides which tier runs next) nor for
    dataset-level strategies (they need every item)."""
    from judging.voting import DATASET_STRATEGIES

    return (
        len({c.tier for c in panel.critics}) == 1
        and panel.voting.strategy not in DATASET_STRATEGIES
    )


class _LiveVotes:
    """`on_verdict` wrapper: passes verdicts to the writer and, once an item has every critic's
    verdict, queues its provisional decision. The run's final decisions overwrite these."""

    def __init__(self, panel: Panel, writer: _Writer) -> None:
        self.panel = panel
        self.writer = writer
        self.names = [c.name for c in panel.critics]
        self.weights = {c.name: c.weight for c in panel.critics}
        self._open: dict[str, dict[str, Verdict]] = {}
        self._lock = threading.Lock()

    def add(self, verdict: Verdict, item: Item) -> None:
        self.writer.add(verdict, item)
        if verdict.failure == FailureKind.CANCELLED:
            return
        with self._lock:
            got = self._open.setdefault(str(item.id), {})
            got[verdict.critic] = verdict
            if len(got) < len(self.names):
                return
            del self._open[str(item.id)]
        from judging.voting import vote

        verdicts = [got[name] for name in self.names if name in got]
        try:
            outcome = vote(verdicts, self.weights, self.panel.voting, self.panel.scale)
        except JuryboxError:
            return  # the runner meets the same problem and the run reports it
        self.writer.decided(
            PanelVerdict(item_id=str(item.id), outcome=outcome, verdicts=verdicts,
                         strategy=self.panel.voting.strategy)
        )


def _stale_critics(db: Any, run_id: int, item_id: str, called: set[str]) -> list[str]:
    rows = db.execute(
        "SELECT critic FROM calls WHERE run_id = ? AND item_id = ?", [run_id, item_id]
    ).fetchall()
    return [r[0] for r in rows if r[0] not in called]


def _store_consensus(
    db: Any, run_id: int, panel: Panel, verdicts: list[PanelVerdict], *, whole_run: bool
) -> None:
    from storage.consensus import set_item_alpha, write_consensus
    from storage.review import ratings_frame

    write_consensus(db, run_id, verdicts)
    # Per-item alpha uses the dataset's expected disagreement, so it is recomputed over every
    # stored item of the run, not just the ones this job judged.
    try:
        alphas = _item_alphas(panel, ratings_frame(db, run_id))
    except Exception:
        log.exception("per-item alpha for run %s could not be computed", run_id)
        return
    if alphas:
        set_item_alpha(db, run_id, alphas)


def _item_alphas(panel: Panel, ratings: Any) -> dict[str, float | None]:
    from judging.agreement import per_item_alpha

    if ratings.empty:
        return {}
    critics = [c.name for c in panel.critics]
    valid = ratings[ratings["failure"].isna()].copy()
    if panel.scale.is_numeric:
        valid["value"] = valid["score"]
    else:
        valid["value"] = valid["label"]
    item_ids = list(dict.fromkeys(ratings["item_id"]))
    table = valid.pivot(index="item_id", columns="critic", values="value")  # one row per pair
    table = table.reindex(index=item_ids, columns=critics)
    rows = [[None if _missing(v) else v for v in row] for row in table.itertuples(index=False)]
    order = None if panel.scale.is_numeric else list(panel.scale.labels)
    level = panel.scale.level
    alphas = per_item_alpha(rows, level, order=order)
    return {
        item_id: (None if math.isnan(a) else float(a)) for item_id, a in zip(item_ids, alphas)
    }


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _describe(error: BaseException) -> str:
    """A sentence for the runs table. JuryboxError messages are written for users already."""
    if isinstance(error, JuryboxError):
        return str(error)
    return f"The run stopped on an unexpected error: {type(error).__name__}: {error}"
