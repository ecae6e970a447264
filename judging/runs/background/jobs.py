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
   with the error's message, and so does a critic that gave no verdict at all (every call it
   made failed), naming it and its first failure (`stop_reason` 'no_verdict'). The writer
   also beats a heartbeat (see `mark_interrupted_runs`).

The database is the truth: the registry dies with the process. `mark_interrupted_runs` at
start-up turns runs still marked `running` (and owned by no live job) into `interrupted`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from judging.engine.budget import BudgetCap
from judging.errors import ConfigError, JobConflict, JuryboxError
from judging.panel.panel_files import dump_panel, load_panel, panel_hash
from judging.panel.panel_model import Panel
from judging.panel.vendors import PanelSources, get_preset
from judging.run_status import STORED_STATUSES, RunStatus
from judging.runs.background.job import Job, JobKind, KeyLookup
from judging.runs.background.worker import Worker
from judging.verdicts import PLUGIN_KINDS
from storage.datasets.dataset_store import get_dataset, get_item
from storage.db import open_db
from storage.panels import save_panel
from storage.results.runs import claim_run, create_run, get_run, mark_interrupted, set_run_budget

# Statuses a run may be (re)started from, per kind of job.
_RESUMABLE = tuple(s for s in STORED_STATUSES if s.resumable)
_STARTABLE: dict[str, tuple[RunStatus, ...]] = {
    "start": (RunStatus.PENDING,),
    "resume": _RESUMABLE,
    "rerun_failures": (*_RESUMABLE, RunStatus.DONE),
    "rejudge": (*_RESUMABLE, RunStatus.DONE),
}


class JobRegistry:
    """The jobs of this process, by run id (one database per registry).

    Args:
        batch_size: verdicts per write transaction at most.
        flush_interval_s: the longest a received verdict waits before it is written (group
            commit: every verdict that arrives meanwhile shares the transaction). Short,
            because a verdict received but not written when the process dies is paid again:
            20 ms keeps that to what arrives in 20 ms, while at 1,000 calls/s a commit still
            carries about 20 verdicts (a WAL commit without fsync costs well under 1 ms).
        python_critics: whether runs import and call the functions `kind: python` critics
            name (the CLI: True). The web app's registry says False: its runs never import
            code named in a panel, and those critics' calls fail with a sentence.
    """

    def __init__(self, *, batch_size: int = 200, flush_interval_s: float = 0.02,
                 python_critics: bool = True) -> None:
        self._jobs: dict[int, Job] = {}
        self._lock = threading.Lock()
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self.python_critics = python_critics

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
        db = open_db(db_path)
        try:
            return mark_interrupted_runs(db, self.live_run_ids())
        finally:
            db.close()

    # -- starting jobs ---------------------------------------------------------------------

    def start_run(
        self, db_path: Any, run_id: int, *, concurrency: int = 64,
        key_lookup: KeyLookup | None = None, detach: bool = False,
        poll_interval_s: float | None = None,
    ) -> Job:
        """Start a pending run in the background.

        Args:
            db_path: the database file (the worker opens its own connection to it).
            run_id: a run created by `create_run` / `prepare_run`.
            concurrency: calls in flight at once.
            key_lookup: key variable name -> key (default: the environment). Keys stay in memory.
            detach: with batch critics (`mode: batch`), end the job once the vendor has the
                batches (the run is left interrupted, "submitted to vendor"); a resume collects.
            poll_interval_s: how often to ask the vendor about the batches (default: every
                30 s, a quarter second for a server on this machine).

        Returns:
            The `Job`; poll `job.progress()`.

        Raises:
            NotFoundError: no such run.
            JobConflict: the run is not pending, or a job is already running it.
        """
        return self._launch(db_path, run_id, "start", concurrency=concurrency,
                            key_lookup=key_lookup, detach=detach, poll_interval_s=poll_interval_s)

    def resume(
        self, db_path: Any, run_id: int, *, concurrency: int = 64,
        key_lookup: KeyLookup | None = None, budget: BudgetCap | None = None,
        detach: bool = False, poll_interval_s: float | None = None,
    ) -> Job:
        """Resume a cancelled, interrupted or failed run: only item x critic pairs without a
        successful verdict are sent (stored successes are cache hits).

        Args:
            budget: a new cap for the run (e.g. higher, after "budget reached"); None keeps its
                cap.
            detach / poll_interval_s: as for `start_run`. A run waiting for its vendor batches
                is polled again by its resume.

        Raises:
            NotFoundError: no such run.
            JobConflict: the run is done or running.
            ConfigError: a dollar cap on a panel with unpriced real critics.
        """
        if budget is not None:
            db = open_db(db_path)
            try:
                check_budget(load_panel(get_run(db, int(run_id))["panel_yaml"]), budget)
                set_run_budget(db, int(run_id), usd=budget.usd, tokens=budget.tokens)
            finally:
                db.close()
        return self._launch(db_path, run_id, "resume", concurrency=concurrency,
                            key_lookup=key_lookup, detach=detach, poll_interval_s=poll_interval_s)

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
        detach: bool = False,
        poll_interval_s: float | None = None,
    ) -> Job:
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
            status = RunStatus(run["status"])
            if status is RunStatus.RUNNING:
                raise JobConflict(
                    f"Run {run_id} is marked running by another process; if that process died, "
                    "restart so it shows as interrupted, then resume it."
                )
            if status not in _STARTABLE[kind]:
                verb = {"start": "started", "resume": "resumed",
                        "rerun_failures": "re-run", "rejudge": "re-judged"}[kind]
                hint = ""
                if status.resumable and status is not RunStatus.PENDING:
                    hint = " Resume it instead."
                elif status is RunStatus.DONE:
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
        worker = Worker(
            job,
            db_path,
            concurrency=concurrency,
            key_lookup=key_lookup,
            item_id=item_id,
            previous=(run["status"], run["error"]) if kind == "rejudge" else None,
            batch_size=self.batch_size,
            flush_interval_s=self.flush_interval_s,
            detach=detach,
            poll_interval_s=poll_interval_s,
            python_critics=self.python_critics,
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
    return mark_interrupted(db, live_run_ids)


def check_budget(panel: Panel, budget: BudgetCap) -> None:
    """A dollar cap cannot count a call without a price: with no token cap beside it, a panel
    with unpriced critics on real vendors is refused, naming them.

    Raises:
        ConfigError: the sentence, with what to do.
    """
    if budget.tokens is not None or budget.usd is None:
        return
    unpriced = [c.name for c in panel.critics if c.kind not in PLUGIN_KINDS
                and (c.price_in_per_mtok is None or c.price_out_per_mtok is None)
                and not _is_simulated(get_preset, c.vendor)]
    if unpriced:
        raise ConfigError(
            f"A dollar cap cannot count the calls of {', '.join(unpriced)}: "
            f"{'it has' if len(unpriced) == 1 else 'they have'} no price. Set price_in_per_mtok "
            "and price_out_per_mtok on the critic, or add a token cap (unpriced calls count "
            "against it)."
        )


def prepare_run(
    db: Any, *, dataset_id: int, panel: Panel, name: str | None = None,
    budget: BudgetCap | None = None,
) -> int:
    """Save the panel version and create a pending run of it over a dataset.

    Args:
        db: a connection from `storage.open_db`.
        dataset_id: a saved dataset.
        panel: the panel to snapshot (its YAML and content hash are stored).
        name: an optional run name.
        budget: the run's cap in dollars and/or tokens (`judging.engine.budget`), or None.

    Returns:
        The new run id (start it with `JobRegistry.start_run`).

    Raises:
        PlaceholderError: a critic's prompt uses a field the dataset does not have.
        ConfigError: a pairwise setting names a field the dataset does not have.
        NotFoundError: no such dataset.
        ConfigError: the panel holds something that looks like an API key, or a dollar cap
            cannot count its critics (`check_budget`).
    """
    if budget is not None:
        check_budget(panel, budget)
    dataset = get_dataset(db, dataset_id)
    panel.check_fields(list(dataset["fields"]))
    version = panel_hash(panel)
    save_panel(db, panel_hash=version, name=panel.name, yaml_text=dump_panel(panel))
    run_id = create_run(
        db,
        dataset_id=dataset_id,
        panel_hash=version,
        critics=[c.name for c in panel.critics],
        # Simulated when a critic calls the simulator (a rule or python check calls nothing).
        simulated=PanelSources.of(panel.critics).calls_simulator,
        name=name,
    )
    if budget is not None:
        set_run_budget(db, run_id, usd=budget.usd, tokens=budget.tokens)
    return run_id


def _is_simulated(get_preset: Callable[[str], Any], vendor: str) -> bool:
    try:
        return bool(get_preset(vendor).simulated)
    except JuryboxError:
        return False
