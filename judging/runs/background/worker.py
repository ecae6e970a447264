"""The worker thread of a job: loads the run's snapshot, judges its items through
`run_panel` with the stored-success cache, and records the outcome and the run's final status.
Nothing raises out of it: a crash marks the run failed with a sentence.

Memory stays flat in the dataset's size: items are read from SQLite a page at a time
(`DatasetItems`), the runner keeps no verdict once an item is decided (`keep_verdicts=False`),
each decision goes to the writer as it is made (the one place decisions are stored), and
per-item alpha is computed a chunk of items at a time against the run's expected disagreement.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from typing import Any

from judging.agreement import dataset_disagreement, per_item_alpha_in
from judging.engine.budget import BudgetCap, BudgetGuard
from judging.engine.calls import CallRunner
from judging.engine.calls.template import request_template
from judging.engine.ledger import Ledger
from judging.engine.panel_runner import RunProgress, run_panel
from judging.engine.plugin_critics import Replayed
from judging.errors import JuryboxError
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.run_status import RunStatus
from judging.runs.background.batch_phase import (
    Clients,
    StoredAnswers,
    batch_critics,
    poll_interval_s,
    submit_missing,
    wait_for_batches,
)
from judging.runs.background.job import Job, KeyLookup
from judging.runs.background.job_modes import job_mode
from judging.runs.background.writer import Writer
from judging.runs.stored.kept_figures import precompute_figures
from judging.verdicts import FailureKind, Item, PanelVerdict
from storage.datasets.dataset_store import DatasetItems, get_item
from storage.datasets.imported import load_imported_verdicts
from storage.db import open_db
from storage.results.calls import (
    CallCacheStore,
    successful_pairs_of,
)
from storage.results.consensus import rating_aggregates, rating_chunks, set_item_alpha
from storage.results.runs import (
    STOP_NO_VERDICT,
    get_run,
    heartbeat,
    set_run_status,
    set_stop_reason,
)
from storage.results.vendor_batches import BatchResultStore, clear_results, run_batches

log = logging.getLogger(__name__)

# Items read from the database per query while a run feeds them to the calls, and items per
# chunk of the per-item alpha pass. Module constants so that tests can force tiny chunks.
ITEM_PAGE_SIZE = 2000
ALPHA_CHUNK_SIZE = 5000


def _replayed(db: Any, dataset_id: int, panel: Panel) -> Replayed | None:
    """The verdicts the panel's imported critics replay, read once for the run (None: the
    panel has no imported critic)."""
    judges = {c.judge or c.name for c in panel.critics if c.kind == "imported"}
    if not judges:
        return None
    return Replayed(load_imported_verdicts(db, dataset_id, judges), panel.pairwise)


class Worker:
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
        detach: bool = False,
        poll_interval_s: float | None = None,
        python_critics: bool = True,
    ) -> None:
        self.job = job
        self.python_critics = python_critics  # see `JobRegistry`
        self.db_path = db_path
        self.concurrency = concurrency
        self.key_lookup = key_lookup
        self.item_id = item_id
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self.writer: Writer | None = None
        # Re-judging one item must not change what the run as a whole is (a cancelled run
        # stays cancelled): the run gets this status (read before the claim) back at the end.
        self.previous = previous
        # Batch critics: leave once the batches are submitted (the CLI's --no-wait), and how
        # often to poll them (None: `batch_phase.poll_interval_s`).
        self.detach = detach
        self.poll_interval_s = poll_interval_s
        self.awaited_batches: set[str] = set()  # the vendor batches this job waited for

    def run(self) -> None:
        job = self.job
        db = None
        final_status = RunStatus.FAILED
        message: str | None = None
        try:
            db = open_db(self.db_path)
            final_status, message = self._run(db)
        except BaseException as error:
            log.exception("run %s failed", job.run_id)
            final_status = RunStatus.FAILED
            message = _describe(error)
        finally:
            try:
                if db is None:
                    db = open_db(self.db_path)
                taken = _taken_over(db, job)
                if taken is not None:
                    # Another process claimed the run while this job was silent: its status is
                    # the run's, not "cancelled; resume it" (the run may well be done).
                    final_status, message = taken
                elif self.previous is not None:
                    status, earlier_error = self.previous
                    set_run_status(db, job.run_id, status,
                                   error=(message if final_status is RunStatus.FAILED
                                          else earlier_error),
                                   owner=job.token)
                else:
                    set_run_status(db, job.run_id, final_status, error=message, owner=job.token)
            except BaseException:
                log.exception("could not record the final status of run %s", job.run_id)
            try:
                if final_status == "done" and db is not None:
                    # The figures the Agreement page and the audit read, computed once now
                    # rather than on the page's first load (`judging.runs.stored.kept_figures`); a
                    # failure here costs the page that load, never the run.
                    precompute_figures(db, job.run_id)
            except Exception:
                log.exception("could not keep the figures of run %s", job.run_id)
            finally:
                if db is not None:
                    db.close()
                job._update(status=final_status, error=message,
                            written=self.writer.written if self.writer else 0)
                job._done.set()

    def _run(self, db: Any) -> tuple[RunStatus, str | None]:
        job = self.job
        run = get_run(db, job.run_id)  # already claimed (running) by `_launch`
        panel = load_panel(run["panel_yaml"])
        mode = job_mode(job.kind, self.item_id)
        # The run's stored successes, for the items in flight only: loaded with each page of
        # items, forgotten as each item is decided (a resumed million-item run never holds
        # all of them).
        already_ok = _StoredSuccesses(db, job.run_id, [c.name for c in panel.critics])
        items: list[Item] | DatasetItems
        if self.item_id is not None:
            items = [get_item(db, run["dataset_id"], self.item_id)]
        else:
            items = DatasetItems(db, run["dataset_id"], page_size=ITEM_PAGE_SIZE,
                                 on_page=mode.on_page(already_ok.load))
        mode.begin(db, job.run_id)
        n_critics = len(panel.critics)
        job._update(status=RunStatus.RUNNING,
                    run=RunProgress(total=len(items) * n_critics, items_total=len(items)))

        def on_progress(p: RunProgress) -> None:
            job._update(
                status=(RunStatus.CANCELLING if job.cancel_event.is_set()
                        else RunStatus.RUNNING),
                run=p,
                written=self.writer.written if self.writer else 0,
            )

        cache = mode.cache(self.db_path)
        # Batch critics first hand their requests to the vendor and wait for the results.
        answers = None
        if batch_critics(panel) and mode.uses_vendor_batches:
            # Its own view of the items: the vendor phase reads them all, the successes of
            # none of them are wanted there.
            waited = self._wait_for_vendor(
                db, panel, DatasetItems(db, run["dataset_id"], page_size=ITEM_PAGE_SIZE),
                cache)
            if waited is not None:
                if cache is not None:
                    cache.close()
                return waited
            answers = StoredAnswers(BatchResultStore(self.db_path, job.run_id))
        self.writer = Writer(
            self.db_path, job.run_id, already_ok=already_ok, replace_success=mode.replace_success,
            batch_size=self.batch_size, flush_interval_s=self.flush_interval_s,
            owner=job.token, on_lost=job.cancel,
            # A batch critic's request went in a batch line: kept whole, as the vendor got it.
            templates={c.name: request_template(c, panel.scale) for c in panel.critics
                       if c.mode != "batch"} if not panel.rubric.active else {},
        )
        decided = _Decided(self.writer, already_ok)
        budget = _budget_of(run)
        runner = CallRunner(key_lookup=self.key_lookup, cache=cache,
                            max_connections=self.concurrency, batch_answers=answers,
                            python_critics=self.python_critics,
                            imported=_replayed(db, int(run["dataset_id"]), panel))
        try:
            try:
                result = run_panel(
                    panel, items, concurrency=self.concurrency, on_progress=on_progress,
                    on_verdict=self.writer.add, on_item=decided, cancel=job.cancel_event,
                    runner=runner, budget=budget,
                    keep_verdicts=mode.keep_verdicts,
                )
                self.writer.saved_by_cascade(result.progress.ledger)
            finally:
                self.writer.close()  # store everything received, even when the run raised
        finally:
            runner.close()
            if cache is not None:
                cache.close()
            if answers is not None:
                answers.close()
        mode.after(db, job.run_id, result)
        unfinished = len(items) - decided.complete  # cancelled part way, or never started
        if answers is not None and not unfinished:
            clear_results(db, job.run_id)  # every line is in the run's calls now
        # Per-item alpha uses the dataset's expected disagreement, so it is recomputed over
        # every stored item of the run, not just the ones this job judged.
        store_item_alphas(db, job.run_id, panel)
        stops = ([(name, reason) for name, reason in result.stopped_critics.items()]
                 + [(row["critic"], f"the vendor's batch {row['batch_id']} failed: {row['error']}")
                    for row in run_batches(db, job.run_id)
                    if row["state"] == "failed" and row["batch_id"] in self.awaited_batches])
        stopped = "; ".join(f"{name}: {reason}" for name, reason in stops)
        if budget is not None and budget.reached and unfinished:
            # Stopped by its cap: resumable like a cancelled run, and says why.
            set_stop_reason(db, job.run_id, "budget")
            return RunStatus.CANCELLED, budget.summary()
        if job.cancel_event.is_set() and unfinished:
            return RunStatus.CANCELLED, None
        # A critic that gave no verdict on any item is a panel that did not run as built,
        # whatever the other critics did: every vote, agreement figure and review of the run is
        # short of that critic, and "done" with exit 0 let that pass unnoticed (a bad key, an
        # unknown model, a template the vendor cannot take). So the run ends failed, naming the
        # critic and its first failure; the other critics' verdicts stay stored and reviewable,
        # and a resume sends only the failed calls (a re-judged item is not judged by it).
        silent = mode.silent_critics(db, job.run_id)
        if silent:
            set_stop_reason(db, job.run_id, STOP_NO_VERDICT)
            return RunStatus.FAILED, no_verdict_sentence(
                silent, n_critics=n_critics, stopped_elsewhere=[
                    f"{name}: {reason}" for name, reason in stops
                    if name not in silent or reason not in silent[name][1]])
        # One note per parameter, each a clause of its own ("; "), never run together.
        adjusted = "; ".join(f"{name}: {note}"
                             for name, notes in result.adjusted_critics.items()
                             for note in notes)
        notes = [text for text in (
            f"Critics stopped during the run: {stopped}" if stopped else "",
            f"Parameters the vendors refused, dropped or renamed for the run: {adjusted}"
            if adjusted else "") if text]
        return RunStatus.DONE, (" ".join(notes) if notes else None)


    def _wait_for_vendor(self, db: Any, panel: Panel, items: Sequence[Item],
                         cache: CallCacheStore | None) -> tuple[RunStatus, str | None] | None:
        """Submit what the batch critics lack and wait for the vendor. Returns the job's
        final status when it ends here (detached, cancelled, lease lost), else None."""
        job = self.job
        clients = Clients(self.key_lookup)
        try:
            submit_missing(db, job.run_id, panel, items, clients, cache)
            open_ids = [row["batch_id"] for row in run_batches(db, job.run_id, open_only=True)]
            self.awaited_batches = set(open_ids)
            if open_ids and self.detach:
                set_stop_reason(db, job.run_id, "vendor_batch")
                return RunStatus.INTERRUPTED, (
                    f"Submitted to the vendor: {', '.join(open_ids)}. Results come within 24 h; "
                    f"`jurybox resume {job.run_id}` (or Resume on the Run page) collects them.")
            finished = wait_for_batches(
                db, job.run_id, panel, clients, cancel=job.cancel_event,
                interval_s=self.poll_interval_s or poll_interval_s(panel),
                on_wait=lambda lines: job._update(
                    vendor="submitted to vendor: " + "; ".join(lines)),
                beat=lambda: heartbeat(db, job.run_id, job.token),
            )
        finally:
            clients.close()
        job._update(vendor=None)
        if not finished:
            return RunStatus.CANCELLED, (
                "Cancelled while the vendor ran its batches; they were asked to stop. Resume "
                "the run to collect what they finished.")
        return None


def _taken_over(db: Any, job: Job) -> tuple[RunStatus, str] | None:
    """When another job owns the run now (it claimed the run after this one's lease lapsed):
    the status this job ends with and why, else None. The run's own status stands: "done" when
    the new owner finished it, "interrupted" (this job's part is over) while it still works."""
    run = get_run(db, job.run_id)
    if run.get("owner_token") in (None, job.token):
        return None
    where = f"process {run.get('owner_pid')} on {run.get('owner_host')}"
    status = RunStatus(run["status"])
    if status is RunStatus.RUNNING:
        return RunStatus.INTERRUPTED, (
            f"Another job ({where}) took this run over while this one was not answering, and "
            f"is running it now: follow it on the Run page or with `jurybox runs`.")
    return status, (
        f"Another job ({where}) took this run over while this one was not answering; the run "
        f"is {status} now.")


def _budget_of(run: dict[str, Any]) -> BudgetGuard | None:
    """The run's cap, with what it has spent so far (its ledger: a resumed run continues)."""
    if run.get("budget_usd") is None and run.get("budget_tokens") is None:
        return None
    spent = Ledger.from_mapping(run["ledger"])
    return BudgetGuard(BudgetCap(usd=run["budget_usd"], tokens=run["budget_tokens"]),
                       spent_usd=spent.cost_usd, spent_tokens=spent.tokens_in + spent.tokens_out)


class _StoredSuccesses:
    """The (item, critic) pairs of the run that already have a stored success, for the items
    in flight: what the writer checks a cached verdict against (`Writer.already_ok`)."""

    def __init__(self, db: Any, run_id: int, critics: list[str]) -> None:
        self.db = db
        self.run_id = run_id
        self.critics = critics
        self._pairs: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def load(self, page: list[Item]) -> None:
        """`DatasetItems.on_page`: on the feeding thread, which owns `db`."""
        found = successful_pairs_of(self.db, self.run_id, [item.id for item in page])
        with self._lock:
            self._pairs |= found

    def forget(self, panel_verdict: PanelVerdict) -> None:
        item_id = str(panel_verdict.item_id)
        with self._lock:  # every critic's, called this time or not (a cascade's later tier)
            for critic in self.critics:
                self._pairs.discard((item_id, critic))

    def __contains__(self, pair: object) -> bool:
        with self._lock:
            return pair in self._pairs


class _Decided:
    """`on_item` of the run: hands each fully judged item's decision to the writer (which
    stores it after the verdicts it was made from) and counts them. An item cancelled part way
    is not decided: a resume decides it. Either way its stored successes are forgotten."""

    def __init__(self, writer: Writer, stored: _StoredSuccesses) -> None:
        self.writer = writer
        self.stored = stored
        self.complete = 0
        self._lock = threading.Lock()

    def __call__(self, panel_verdict: PanelVerdict) -> None:
        self.stored.forget(panel_verdict)  # every verdict of the item has reached the writer
        if any(v.failure == FailureKind.CANCELLED for v in panel_verdict.verdicts):
            return
        self.writer.decided(panel_verdict)
        with self._lock:
            self.complete += 1


def store_item_alphas(db: Any, run_id: int, panel: Panel, *, chunk_size: int | None = None) -> None:
    """Store every item's alpha against the run's expected disagreement, a chunk of items at
    a time (`ALPHA_CHUNK_SIZE`): the dataset-wide part comes from SQL aggregates first. A
    failure is logged, not raised: the figures can be computed again, the verdicts stay."""
    critics = [c.name for c in panel.critics]
    numeric = panel.scale.is_numeric
    try:
        present, counts, n_pairable = rating_aggregates(db, run_id, critics, numeric=numeric)
        dataset = dataset_disagreement(
            present, counts, n_pairable, panel.scale.level,
            order=None if numeric else list(panel.scale.labels),
        )
        for ids, rows in rating_chunks(db, run_id, critics, numeric=numeric,
                                       chunk_size=chunk_size or ALPHA_CHUNK_SIZE):
            alphas = per_item_alpha_in(rows, dataset)
            set_item_alpha(db, run_id, {
                item_id: (None if math.isnan(a) else float(a))
                for item_id, a in zip(ids, alphas, strict=True)
            })
    except Exception:
        log.exception("per-item alpha for run %s could not be computed", run_id)


def no_verdict_sentence(silent: dict[str, tuple[int, str]], *, n_critics: int,
                        stopped_elsewhere: Sequence[str] = ()) -> str:
    """Why a run failed when critics gave no verdict at all (`critics_without_verdict`)."""
    parts = [f"critic {name!r} gave no verdict: all {failed:,} of its calls failed (the first: "
             f"{message.rstrip('.')})" for name, (failed, message) in silent.items()]
    kept = ("The other critics' verdicts are kept and can be reviewed; "
            if len(silent) < n_critics else "")
    text = ("; ".join(parts) + f". {kept}fix the cause and resume the run (only the failed "
            "calls are sent again).")
    text = text.replace(". fix", ". Fix")
    text = text[0].upper() + text[1:]
    if stopped_elsewhere:
        text += f" Critics stopped during the run: {'; '.join(stopped_elsewhere)}."
    return text


def _describe(error: BaseException) -> str:
    """A sentence for the runs table. JuryboxError messages are written for users already."""
    if isinstance(error, JuryboxError):
        return str(error)
    return f"The run stopped on an unexpected error: {type(error).__name__}: {error}"
