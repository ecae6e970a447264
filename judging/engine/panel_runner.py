"""Running a panel over items: a pool of worker threads over item x critic calls.

`run_panel` is what `Panel.judge` and `Panel.judge_many` use. Design notes:

- One `CallRunner` (one transport, retries, cache) is shared by all workers; `concurrency`
  threads pull calls from one queue, so at most `concurrency` requests are in flight and no
  thread busy-waits.
- Items are read lazily and fed into the call queue through a bounded window (at most
  `concurrency * 4` items, `_WINDOW_PER_THREAD`, started and not finished), so a run over a
  million items holds only what is in flight; calls are queued item by item, so items
  complete roughly in input order (the storage layer can write them in batches as they come).
- `keep_verdicts=False` keeps no `PanelVerdict` once it is handed to `on_item` (the storage
  path writes them as they come); dataset-level strategies still keep every item's verdicts,
  because they re-vote the whole dataset at the end.
- When the last call of an item's tier returns, the worker that returned it votes and, for a
  cascade, either settles the item or queues the next tier's calls.
- Vendor limits come from the panel (`Panel.limits`, preset defaults filled in): one
  `VendorLimiter` per run, handed to every call, so the CLI, the app's jobs and notebooks all
  get them from the panel file alone. A `CallRunner` you pass keeps its own `vendor_limits` /
  `requests_per_minute` as well: a request waits for both, so the stricter limit wins.
  `Panel.judge` with the shared default runner shares one limiter per set of limits across
  calls, so a notebook loop of `judge()` calls is paced as one run would be.
- Nothing raises out of a call. Exceptions raised by YOUR callbacks (`on_verdict`,
  `on_progress`) stop the run (no new requests) and are re-raised by `run_panel` once the
  workers have stopped, so a storage failure is never silently lost.
"""

from __future__ import annotations

import dataclasses
import functools
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any

from judging.engine.budget import BudgetGuard
from judging.engine.calls import (
    CallCache,
    CallRunner,
    CriticGate,
    VendorLimiter,
    default_runner,
)
from judging.engine.calls.cache import ItemAnswers
from judging.engine.cascade_savings import saved_call_usd
from judging.engine.chains import judge_with, sample_offsets
from judging.engine.context_guard import guard
from judging.engine.ledger import Ledger, LedgerTotals, is_cancelled
from judging.errors import ConfigError
from judging.panel.cascade import decide, rejected
from judging.panel.cascade_policy import (
    apply_policy,
    cancelled_sub_verdict,
    legacy_sub_verdict,
    stopped_outcome,
    sub_verdict,
)
from judging.panel.cascade_tiers import Tier, plan_cascade
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.panel.vendors import KeyLookup
from judging.verdicts import FailureKind, Item, PanelVerdict, TierVerdict, Verdict, VoteOutcome
from judging.voting.logprobs import attach_probabilities
from judging.voting.strategies import DATASET_STRATEGIES, VotingConfig

OnVerdict = Callable[[Verdict, Item], None]
OnProgress = Callable[["RunProgress"], None]
OnItem = Callable[[PanelVerdict], None]

# Items started and not yet finished, per call thread: enough queued calls to keep every thread
# busy (an item is one call per critic), few enough that memory does not grow with the dataset.
_WINDOW_PER_THREAD = 4
# How often a feeder waiting for room in the window looks at cancel (seconds).
_FEED_POLL_S = 0.05


@dataclass(slots=True)
class RunProgress(LedgerTotals):
    """A snapshot of a run, handed to `on_progress` (a copy: safe to keep).

    Attributes:
        total: calls planned (items x critics; for cascades an upper bound that `calls_saved`
            eats into as items settle early).
        items_total / items_done: items in the run / items with a panel verdict.
        critic_done / critic_failed: per critic name.
        critic_adjusted: per critic name, one sentence per parameter a vendor refused and the
            run dropped or renamed so far (`CriticGate.adjustments`); critics without any are
            left out. Shown on the critic's row of the Run page while the run goes.
        ledger: the run's totals (`judging.engine.ledger.Ledger`): calls finished, failed, cached,
            cancelled, saved by a cascade, sent, HTTP attempts, tokens and cost. The properties
            below read it; nothing else counts them.
        elapsed_s: seconds since the run started.
    """

    total: int
    items_total: int
    items_done: int = 0
    critic_done: dict[str, int] = field(default_factory=dict)
    critic_failed: dict[str, int] = field(default_factory=dict)
    ledger: Ledger = field(default_factory=Ledger)
    elapsed_s: float = 0.0
    critic_adjusted: dict[str, list[str]] = field(default_factory=dict)

    @property
    def calls_per_second(self) -> float:
        """Requests actually sent per second of the run's wall time: cache hits and calls a
        cascade settled early cost no time, so they would flatter the pace. The one pace rule
        (a job's progress reads it too)."""
        return self.ledger.sent_calls / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current pace: 0 when nothing is left, None while unknown."""
        remaining = max(0, self.total - self.done - self.calls_saved)
        rate = self.calls_per_second
        return remaining / rate if rate > 0 else (0.0 if remaining == 0 else None)

    @property
    def fraction(self) -> float:
        """Share of the planned work finished (settled-early calls count as finished)."""
        return min(1.0, (self.done + self.calls_saved) / self.total) if self.total else 1.0

    def copy(self) -> RunProgress:
        return dataclasses.replace(
            self, critic_done=dict(self.critic_done), critic_failed=dict(self.critic_failed),
            ledger=self.ledger.copy(),
            critic_adjusted={name: list(notes) for name, notes in self.critic_adjusted.items()},
        )


@dataclass(slots=True)
class RunResult:
    """Everything a run produced: panel verdicts in input order (empty when the run was asked
    not to keep them: `keep_verdicts=False`), the final progress, and the critics that were
    stopped (name -> reason), and the parameters a vendor refused and the run dropped or
    renamed (critic name -> one sentence per parameter)."""

    verdicts: list[PanelVerdict]
    progress: RunProgress
    stopped_critics: dict[str, str]
    adjusted_critics: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class _ItemState:
    index: int
    item: Item
    tier_pos: int = 0
    pending: int = 0
    verdicts: dict[int, Verdict] = field(default_factory=dict)
    subs: list[TierVerdict] = field(default_factory=list)  # each tier's sub-verdict so far


class _Run:
    def __init__(
        self,
        panel: Panel,
        items: Iterable[Item | dict[str, Any]],
        n_items: int,
        *,
        concurrency: int,
        runner: CallRunner,
        limiter: VendorLimiter,
        on_progress: OnProgress | None,
        on_verdict: OnVerdict | None,
        cancel: threading.Event | None,
        progress_interval_s: float,
        single_item: bool,
        budget: BudgetGuard | None = None,
        keep_verdicts: bool = True,
        on_item: OnItem | None = None,
    ) -> None:
        self.panel = panel
        self.budget = budget
        self.items = items
        self.n_items = n_items
        self.on_item = on_item
        self.critics = list(panel.critics)
        self.scale = panel.scale
        self.tiers: list[Tier] = plan_cascade(self.critics, panel.cascade.tiers,
                                              panel.scale.labels)
        self.cascaded = len(self.tiers) > 1
        self.runner = runner
        self.limiter = limiter
        self.on_progress = on_progress
        self.on_verdict = on_verdict
        self.cancel = cancel
        self.stop = threading.Event()  # set when a callback failed: no new requests
        # Per run: a key fixed after this run works on the next.
        self.gate = CriticGate(repeated_errors=panel.stop_after_repeated_errors)
        self.interval = progress_interval_s
        self.concurrency = concurrency
        self.by_name = {critic.name: critic for critic in self.critics}
        self.first_sample = sample_offsets(self.critics)
        # Without a cache the run keeps each item's answers while it is judged, so a request
        # identical to one made for the item (a self-verify critic's first step beside a
        # single critic with its settings) is sent once, as with a cache.
        self.answers = ItemAnswers() if runner.cache is None else None
        # Every call of the run, a compound critic's steps included, goes out this way.
        self.send = functools.partial(
            runner.call, cancel=cancel, gate=self.gate, limiter=limiter, budget=budget,
            answers=self.answers,
        )

        strategy = panel.voting.strategy
        self.dataset_strategy = DATASET_STRATEGIES.get(strategy)
        self.item_config: VotingConfig = panel.voting
        self.fallback_note: str | None = None
        if self.dataset_strategy is not None:
            # A dataset-level strategy needs every item: vote per item by plurality meanwhile
            # (cascades settle on that), then re-vote the whole dataset at the end.
            self.item_config = panel.voting.model_copy(update={"strategy": "plurality"})
            if single_item:
                self.fallback_note = (
                    f"{strategy!r} needs a whole dataset; plurality was used for this one item"
                )

        # A dataset-level strategy re-votes every item at the end: it keeps them all whatever
        # the caller asked; `keep_verdicts` only decides what the result hands back.
        self.revote = self.dataset_strategy is not None and not self.fallback_note
        self.keep_verdicts = keep_verdicts
        self.results: list[PanelVerdict | None] | None = (
            [None] * n_items if keep_verdicts or self.revote else None
        )
        self.queue: queue.SimpleQueue[tuple[_ItemState, int] | None] = queue.SimpleQueue()
        # Room for items in flight: taken by the feeder, given back when an item finishes.
        self.window = threading.Semaphore(max(1, concurrency * _WINDOW_PER_THREAD))
        self.fed = 0  # items handed to the queue so far
        self.feeding = True  # until the feeder has read its last item (or stopped early)
        self.lock = threading.Lock()
        self.emit_lock = threading.Lock()
        self.all_done = threading.Event()
        self.error: BaseException | None = None
        self.started = time.perf_counter()
        self.last_emit = 0.0
        self.progress = RunProgress(
            total=n_items * len(self.critics),
            items_total=n_items,
            critic_done={c.name: 0 for c in self.critics},
            critic_failed={c.name: 0 for c in self.critics},
        )

    # -- driving --------------------------------------------------------------------------

    def run(self) -> RunResult:
        workers = [
            threading.Thread(target=self._work, name=f"jurybox-call-{n}", daemon=True)
            for n in range(max(1, min(self.concurrency, self.progress.total)))
        ]
        for worker in workers:
            worker.start()
        try:
            self._feed()
            self.all_done.wait()
        except BaseException:  # Ctrl-C in a notebook or the CLI: stop sending, then re-raise
            self.stop.set()
            for _ in workers:
                self.queue.put(None)
            raise
        for _ in workers:
            self.queue.put(None)
        for worker in workers:
            worker.join()
        if self.error is not None:
            raise self.error
        results = [pv for pv in self.results or () if pv is not None]
        if self.revote and results:
            assert self.dataset_strategy is not None
            outcomes = self.dataset_strategy(
                [pv.verdicts for pv in results], self.panel.voting, self.scale
            )
            for pv, outcome in zip(results, outcomes, strict=True):
                pv.outcome = outcome
                if self.on_item is not None:
                    self.on_item(pv)
        self.progress.elapsed_s = time.perf_counter() - self.started
        self.progress.critic_adjusted = self._adjusted()
        final = self.progress.copy()
        if self.on_progress is not None:
            self.on_progress(final)
        return RunResult(results if self.keep_verdicts else [], final, self.gate.stopped,
                         final.critic_adjusted)

    def _adjusted(self) -> dict[str, list[str]]:
        """The parameters the vendors refused so far, per critic that has any."""
        notes = {critic.name: self.gate.adjustments(critic.name) for critic in self.critics}
        return {name: said for name, said in notes.items() if said}

    def _feed(self) -> None:
        """Queue the items one by one, each once the window has room for it, until the last
        one, a failed callback or (when verdicts are not kept) a cancel."""
        try:
            for index, value in enumerate(self.items):
                while not self.window.acquire(timeout=_FEED_POLL_S):
                    if self._halted():
                        return
                if self._halted():
                    return
                state = _ItemState(index, Item.coerce(value, index))
                with self.lock:
                    self.fed += 1
                self._queue_tier(state)
        except BaseException as error:  # noqa: BLE001 - reading the items failed: surfaced by run()
            self._abort(error)
        finally:
            with self.lock:
                self.feeding = False
                finished = self.progress.items_done == self.fed
            if finished:
                self.all_done.set()

    def _halted(self) -> bool:
        """Whether to feed no more items: a callback failed, or the caller keeps no verdicts and
        the run was cancelled or reached its budget (an item never started then has nothing to
        report; kept verdicts promise every item a verdict, CANCELLED ones included, so feeding
        goes on: such calls send nothing and return at once)."""
        if self.stop.is_set():
            return True
        if self.keep_verdicts:
            return False
        cancelled = self.cancel is not None and self.cancel.is_set()
        return cancelled or (self.budget is not None and self.budget.reached)

    def _queue_tier(self, state: _ItemState) -> None:
        tier = self.tiers[state.tier_pos]
        state.pending = len(tier.critics)
        for critic_index in tier.critics:
            self.queue.put((state, critic_index))

    def _work(self) -> None:
        while True:
            task = self.queue.get()
            if task is None:
                return
            if self.stop.is_set():
                continue  # a callback failed: drain without calling
            state, critic_index = task
            try:
                critic = self.critics[critic_index]
                # An over-long prompt is sent whole, windowed or skipped as the panel says.
                guarded = guard(critic, state.item, self.scale, self.panel.context_guard)
                if isinstance(guarded, Verdict):
                    self._record(state, critic_index, guarded)
                    continue
                verdict = judge_with(
                    critic, guarded.item, self.scale, self.send, critics=self.by_name,
                    first_sample=self.first_sample[critic.name], pairwise=self.panel.pairwise,
                    rubric=self.panel.rubric,
                )
                if guarded.note and verdict.message is None:
                    verdict.message = guarded.note
                if critic.logprobs:  # read once here: stored with the call, voted on below
                    attach_probabilities(verdict, self.scale)
                self._record(state, critic_index, verdict)
            except BaseException as error:  # noqa: BLE001 - surfaced by run()
                self._abort(error)

    def _abort(self, error: BaseException) -> None:
        with self.lock:
            if self.error is None:
                self.error = error
        self.stop.set()
        self.all_done.set()

    # -- bookkeeping ----------------------------------------------------------------------

    def _record(self, state: _ItemState, critic_index: int, verdict: Verdict) -> None:
        if self.on_verdict is not None:
            self.on_verdict(verdict, state.item)
        name = self.critics[critic_index].name
        progress = self.progress
        with self.lock:
            state.verdicts[critic_index] = verdict
            state.pending -= 1
            tier_complete = state.pending == 0
            progress.ledger.add(verdict)
            if not is_cancelled(verdict):  # not sent: neither done nor failed (the ledger's rule)
                progress.critic_done[name] += 1
                if verdict.failure is not None:
                    progress.critic_failed[name] += 1
        if tier_complete:
            self._tier_done(state)
        self._maybe_emit()

    def _tier_done(self, state: _ItemState) -> None:
        tier = self.tiers[state.tier_pos]
        is_last = state.tier_pos == len(self.tiers) - 1
        if not self.cascaded:
            self._finish(state, self._vote(self._called(state), tier.voting), None)
            return
        tier_verdicts = [state.verdicts[i] for i in tier.critics]
        tier_outcome = self._vote(tier_verdicts, tier.voting)
        names = [self.critics[i].name for i in tier.critics]
        cascade = self.panel.cascade
        stopped: VoteOutcome | None = None
        if tier.policy:  # a tier of `cascade.tiers`: its own policy
            strategy = (tier.voting or self.item_config).strategy
            decision = apply_policy(tier, tier_verdicts, tier_outcome, strategy)
            sub = sub_verdict(tier, decision, tier_outcome, names, cascade.reject_label)
            going_on = decision.step == "next"
            if decision.step in ("rejected", "accepted"):
                stopped = stopped_outcome(decision, tier_outcome, cascade.reject_label)
        else:  # critics' tier numbers: the one settle rule (`judging.panel.cascade.decide`)
            step, reason = decide(tier, is_last, tier_verdicts, tier_outcome, cascade)
            sub = legacy_sub_verdict(tier, tier.number in cascade.guard_tiers, step, reason,
                                     tier_outcome, names, tier_verdicts, cascade.reject_label)
            going_on = step == "next"
        state.subs.append(sub)
        if going_on and (
            (self.cancel is not None and self.cancel.is_set()) or self.stop.is_set()
        ):
            # Cancelled: the later tiers' critics get CANCELLED verdicts, without requests.
            for later in self.tiers[state.tier_pos + 1 :]:
                for i in later.critics:
                    verdict = self._cancelled(self.critics[i], state.item)
                    if self.on_verdict is not None:
                        self.on_verdict(verdict, state.item)
                    with self.lock:
                        state.verdicts[i] = verdict
                        self.progress.ledger.add(verdict)  # "not sent", not done or failed
            state.subs[-1] = cancelled_sub_verdict(sub)
            self._finish(state, self._vote(self._called(state), tier.voting),
                         f"{sub.title}: cancelled before the next tier")
            return
        if going_on:
            state.tier_pos += 1
            self._queue_tier(state)
            return
        self._count_saved(state)
        if stopped is not None:
            outcome = stopped
        elif cascade.final_vote == "last_tier":
            outcome = tier_outcome
        else:
            outcome = (self._vote(self._called(state), tier.voting) if state.tier_pos
                       else tier_outcome)
        if not tier.policy and sub.step == "rejected":
            outcome = rejected(outcome, cascade, f"{sub.title}: {sub.reason}")
        settled_by = sub.text if tier.policy else f"tier {tier.number}: {sub.reason}"
        self._finish(state, outcome, settled_by)

    def _count_saved(self, state: _ItemState) -> None:
        """Count the calls of the tiers after this one, which the item no longer needs, and
        what they would have cost (`judging.engine.cascade_savings`)."""
        later = [self.critics[i] for t in self.tiers[state.tier_pos + 1 :] for i in t.critics]
        if not later:
            return
        orders = 2 if self.panel.pairwise.active and self.panel.pairwise.swap else 1
        prices = [saved_call_usd(critic, state.item, self.scale, self.by_name,
                                 rubric=self.panel.rubric, orders=orders) for critic in later]
        known = [p for p in prices if p is not None]
        with self.lock:
            ledger = self.progress.ledger
            ledger.add_saved(len(known), sum(known))
            ledger.add_saved(len(prices) - len(known), None)

    def _called(self, state: _ItemState) -> list[Verdict]:
        return [state.verdicts[i] for i in sorted(state.verdicts)]

    def _vote(self, verdicts: Sequence[Verdict], config: VotingConfig | None = None
              ) -> VoteOutcome:
        """The vote over `verdicts` with a tier's own `config` (None: the panel's)."""
        outcome = self.panel.vote(verdicts, config or self.item_config)
        if self.fallback_note:
            outcome.note = (
                f"{outcome.note}; {self.fallback_note}" if outcome.note else self.fallback_note
            )
        return outcome

    def _finish(self, state: _ItemState, outcome: VoteOutcome, settled_by: str | None) -> None:
        verdict = PanelVerdict(
            item_id=state.item.id,
            outcome=outcome,
            verdicts=self._called(state),
            # The deciding tier's strategy when it has its own voting config.
            strategy=(self.tiers[state.tier_pos].voting or self.panel.voting).strategy,
            tier=self.tiers[state.tier_pos].number,
            settled_by=settled_by,
            tiers=list(state.subs),
        )
        if self.results is not None:
            self.results[state.index] = verdict
        if self.answers is not None:
            self.answers.forget(state.item.id)
        if self.on_item is not None and not self.revote:
            self.on_item(verdict)  # a re-voted item is handed over once, after the re-vote
        with self.lock:
            self.progress.items_done += 1
            finished = not self.feeding and self.progress.items_done == self.fed
        self.window.release()
        if finished:
            self.all_done.set()

    @staticmethod
    def _cancelled(critic: Critic, item: Item) -> Verdict:
        return Verdict(
            critic=critic.name,
            item_id=item.id,
            failure=FailureKind.CANCELLED,
            message="not called: the run was cancelled before this tier",
            vendor=critic.vendor,
            model=critic.model,
        )

    def _maybe_emit(self) -> None:
        if self.on_progress is None:
            return
        now = time.perf_counter()
        if now - self.last_emit < self.interval:
            return
        # One emitter at a time; others skip rather than queue up behind a slow callback.
        if not self.emit_lock.acquire(blocking=False):
            return
        try:
            self.last_emit = now
            adjusted = self._adjusted()  # the gate's own lock; a few critics
            with self.lock:
                self.progress.elapsed_s = now - self.started
                self.progress.critic_adjusted = adjusted
                snapshot = self.progress.copy()
            self.on_progress(snapshot)
        finally:
            self.emit_lock.release()


_shared_limiters: dict[str, VendorLimiter] = {}
_shared_lock = threading.Lock()


def panel_limiter(panel: Panel) -> VendorLimiter:
    """A fresh `VendorLimiter` holding a panel's limits (and the presets' defaults).

    `run_panel` makes one per run; make your own only to drive `CallRunner.call` yourself.
    """
    return VendorLimiter(
        {v: lim.max_concurrency for v, lim in panel.limits.items() if lim.max_concurrency},
        {v: lim.requests_per_minute for v, lim in panel.limits.items()
         if lim.requests_per_minute},
    )


def _shared_limiter(panel: Panel) -> VendorLimiter:
    """One limiter per distinct set of limits for runs on the process-wide default runner, so
    a loop of `Panel.judge` calls (one run each) is paced and capped as a whole."""
    key = repr(sorted((vendor, lim.max_concurrency, lim.requests_per_minute)
                      for vendor, lim in panel.limits.items()))
    with _shared_lock:
        limiter = _shared_limiters.get(key)
        if limiter is None:
            limiter = _shared_limiters[key] = panel_limiter(panel)
        return limiter


def run_panel(
    panel: Panel,
    items: Iterable[Item | dict[str, Any]],
    *,
    concurrency: int = 64,
    on_progress: OnProgress | None = None,
    on_verdict: OnVerdict | None = None,
    cancel: threading.Event | None = None,
    cache: CallCache | None = None,
    runner: CallRunner | None = None,
    key_lookup: KeyLookup | None = None,
    progress_interval_s: float = 0.1,
    single_item: bool = False,
    budget: BudgetGuard | None = None,
    keep_verdicts: bool = True,
    on_item: OnItem | None = None,
) -> RunResult:
    """Judge items with a panel. See `Panel.judge_many` for the arguments.

    The panel's `limits` (per-vendor requests in flight and requests per minute, presets'
    defaults where it sets none) hold for the run whatever runner sends the calls; a `runner`
    given here applies its own limits too, so the stricter of the two wins.

    Args:
        progress_interval_s: at most one `on_progress` call per this many seconds during the run
            (plus one final call with the finished figures).
        single_item: set by `Panel.judge`: a dataset-level strategy falls back to plurality.
        budget: the run's cap (`judging.engine.budget`): calls that could pass it are not sent.
        items: read lazily, a window of them at a time. A sized collection (`len()`) is never
            copied: its length is the run's size, so it may be a view that reads its items
            page by page (`storage.datasets.dataset_store.DatasetItems`). Anything else is read into a list
            first, to know the run's size.
        keep_verdicts: False: the result's `verdicts` is empty and nothing is kept per item
            once it is finished (hand `on_item` what you need); items not yet started when
            `cancel` is set or the `budget` is reached are then left out (no verdicts, no
            callbacks) rather than given CANCELLED verdicts. True (the default): one
            `PanelVerdict` per item.
        on_item: `on_item(panel_verdict)` once per item with its final decision, from a call
            thread as the item finishes; with a dataset-level strategy (which re-votes every
            item at the end) from the calling thread, in input order, after the re-vote. An
            item that was cancelled part way comes with its CANCELLED verdicts. An exception
            in it stops the run and is re-raised.

    Returns:
        A `RunResult`: panel verdicts in input order (see `keep_verdicts`), final progress,
        stopped critics.

    Raises:
        ConfigError: concurrency below 1, or a runner and cache/key_lookup given together.
        PlaceholderError: the first item lacks a field a critic's prompt uses.
        Exception: whatever `on_verdict` / `on_progress` raised (the run stops first).
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
    if not isinstance(items, Sized):
        items = list(items)  # a generator: its length is the run's size
    n_items = len(items)
    if n_items:
        first = Item.coerce(next(iter(items)), 0)
        panel.check_fields(list(first.fields))
    own_runner = runner is None and not single_item
    if runner is not None and (cache is not None or key_lookup is not None):
        raise ConfigError(
            "pass cache and key_lookup to the CallRunner you give, not to the run as well"
        )
    shared = False
    if runner is None:
        if single_item and cache is None and key_lookup is None:
            runner, shared = default_runner(), True
        else:
            own_runner = True
            runner = CallRunner(key_lookup=key_lookup, cache=cache, max_connections=concurrency)
    try:
        return _Run(
            panel,
            items,
            n_items,
            concurrency=concurrency,
            runner=runner,
            limiter=_shared_limiter(panel) if shared else panel_limiter(panel),
            on_progress=on_progress,
            on_verdict=on_verdict,
            cancel=cancel,
            progress_interval_s=progress_interval_s,
            single_item=single_item,
            budget=budget,
            keep_verdicts=keep_verdicts,
            on_item=on_item,
        ).run()
    finally:
        if own_runner:
            runner.close()


def judge(panel: Panel, item: Item | dict[str, Any], *,
          runner: CallRunner | None = None) -> PanelVerdict:
    """Judge one item with every critic of a panel (tier by tier for cascades), in parallel.

    Args:
        panel: the panel.
        item: an `Item`, or a dict of fields (optional "id" and "gold" keys).
        runner: the `CallRunner` to use (default: a process-wide one reading keys from the
            environment, so a loop of judge() calls reuses one connection pool; the panel's
            `limits` then hold across the loop, not just within one call).

    Returns:
        The panel verdict. A dataset-level strategy (e.g. "dawid-skene") falls back to
        plurality for a single item, with a note on the outcome.

    Raises:
        PlaceholderError: the item lacks a field a prompt uses.
    """
    result = run_panel(panel, [item], concurrency=max(len(panel.critics), 1), runner=runner,
                       single_item=True)
    return result.verdicts[0]


def judge_many(
    panel: Panel,
    items: Iterable[Item | dict[str, Any]],
    *,
    concurrency: int = 64,
    on_progress: Callable[[RunProgress], None] | None = None,
    on_verdict: Callable[[Verdict, Item], None] | None = None,
    cancel: threading.Event | None = None,
    cache: CallCache | None = None,
    runner: CallRunner | None = None,
    key_lookup: Callable[[str], str | None] | None = None,
) -> list[PanelVerdict]:
    """Judge many items concurrently; nothing raises out of a call, nothing is dropped.

    Args:
        panel: the panel.
        items: `Item`s or dicts of fields (optional "id" and "gold" keys).
        concurrency: calls in flight at once (worker threads over item x critic calls). The
            panel's `limits` cap each vendor further (requests in flight, requests per
            minute), for this run.
        on_progress: called with a `RunProgress` copy at most every 0.1 s from a worker
            thread, and once at the end from the calling thread.
        on_verdict: `on_verdict(verdict, item)` for every new verdict (cached and cancelled
            ones included), called from worker threads, possibly concurrently: it must be
            thread-safe (e.g. append to a queue or a list behind a lock and batch-write
            from one thread). An exception in it stops the run and is re-raised here.
        cancel: once set, no new request is sent (first tries and retries alike); calls in
            flight finish and are kept; the rest get CANCELLED verdicts.
        cache: a `CallCache`; validated successes are stored and hits send no request.
        runner: a `CallRunner` to use (then give cache/key_lookup to it instead). Its own
            `vendor_limits` / `requests_per_minute` hold as well as the panel's `limits`:
            the stricter wins.
        key_lookup: variable name -> key (default `os.environ.get`).

    Returns:
        One `PanelVerdict` per item, in input order. Dataset-level strategies (e.g.
        "dawid-skene") are applied once every item has been judged.

    Raises:
        ConfigError: bad arguments (e.g. concurrency < 1).
        PlaceholderError: the first item lacks a field a prompt uses.
    """
    return run_panel(panel, items, concurrency=concurrency, on_progress=on_progress,
                     on_verdict=on_verdict, cancel=cancel, cache=cache, runner=runner,
                     key_lookup=key_lookup).verdicts
