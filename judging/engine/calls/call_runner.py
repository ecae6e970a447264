"""`CallRunner`: sends one critic's call for one item, retries it, and returns a `Verdict`.

The runner ties the call layer together; each concern lives in its own module (see the package
docstring). It is the only code of Jurybox that sleeps.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, Self

import httpx

from judging.engine.batches.batch_results import BatchResult
from judging.engine.batches.lines import batch_api_of, sent_body
from judging.engine.budget import BudgetGuard
from judging.engine.calls.adjust import adjusted_body, adjustment_for, adjustment_note
from judging.engine.calls.attempt import Route, failure_of, make_route, send_once
from judging.engine.calls.cache import CallCache
from judging.engine.calls.deadline import Watchdog
from judging.engine.calls.gate import CriticGate
from judging.engine.calls.limits import Pace, VendorLimiter
from judging.engine.calls.prepare import PreparedCall, encode_body, prepare_call
from judging.engine.calls.retry import GiveUp, RetryPolicy, decide_retry
from judging.engine.calls.scrub import Scrubber
from judging.engine.calls.single_flight import SingleFlight
from judging.engine.calls.transports import VendorTransport
from judging.engine.endpoints import resolve_base_url
from judging.engine.parsing import ParsedReply, Usage, parse_reply, reply_usage
from judging.engine.plugin_critics import (
    ImportedAnswers,
    judge_plugin,
    mark_passed,
    plugin_cache_key,
)
from judging.errors import (
    CallFailure,
    ConfigError,
    PlaceholderError,
    RetryableCallError,
    UnsupportedParameterError,
)
from judging.panel.critics import Critic
from judging.panel.rubric import RubricConfig
from judging.panel.vendors import (
    KeyLookup,
    VendorPreset,
    api_of,
    cost_usd,
    get_preset,
    key_variable,
    resolve_key,
)
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS, FailureKind, Item, Verdict

log = logging.getLogger(__name__)

_NOT_CALLED = "not called: the run was cancelled"
_OVER_BUDGET = "not called: the run's budget cap could be passed (resume with a higher cap)"
_NOT_IN_BATCH = ("no result from the vendor's batch for this request; resume the run to submit "
                 "it in a new batch")


class BatchAnswers(Protocol):
    """Where a batch critic's calls find their answers (`storage.results.vendor_batches`)."""

    def result(self, custom_id: str) -> BatchResult | None: ...

    def why_missing(self, critic: str) -> str | None:
        """Why this critic's calls have no result (the vendor refused its batch), or None."""
        ...


@dataclass(frozen=True, slots=True)
class _Failed:
    """An attempt that gave no verdict: how it failed, and the reply's headers if one came."""

    failure: CallFailure
    headers: httpx.Headers | None


@contextmanager
def _held(semaphores: list[threading.BoundedSemaphore]) -> Iterator[None]:
    """Hold every vendor-limit slot for the block (taken in one fixed order: no deadlock)."""
    for semaphore in semaphores:
        semaphore.acquire()
    try:
        yield
    finally:
        for semaphore in semaphores:
            semaphore.release()


class CallRunner:
    """Sends calls: one shared transport, per-vendor limits, the retry loop, deadlines, the cache.

    Args:
        key_lookup: maps a key variable name to its value (default `os.environ.get`).
        cache: optional `CallCache`; validated successes are stored, hits send nothing.
        transport: the `httpx.BaseTransport` every request goes through (default: a
            `VendorTransport`, closed with the runner: httpx's pool with proxy and CA support
            for vendors, the fast `ThreadLocalTransport` for plain HTTP to loopback). Tests pass
            `httpx.MockTransport`. A transport you pass is yours: `close()` leaves it open. It
            must not retry.
        max_connections: the size of the default transport's connection pool; give the run's
            concurrency (`run_panel` does). Ignored when you pass a transport.
        vendor_limits: max requests in flight per vendor name, a cap this runner keeps for
            every call it sends (default: the preset's `max_concurrency` for calls made outside
            a panel run; inside one, the panel's `limits` decide it).
        requests_per_minute: optional pace per vendor name, e.g. {"openai": 500}, kept for
            every call this runner sends.
        retry: the retry policy.
        sleep: the function used for every wait (default: `time.sleep`, or the run's cancel
            event so a cancel cuts a backoff short). Tests inject one that records waits.
        clock: monotonic seconds, read to place requests on a requests-per-minute pace
            (default `time.monotonic`). Tests inject a frozen one to check the spacing.
        seed: seeds the jitter (None: random).
        batch_answers: the results of the vendor batches of a run: a critic with `mode:
            batch` is then answered from them, never live (`judging.engine.batches`). Without it,
            such a critic is called live (a notebook's `Panel.judge`).
        python_critics: whether calls of `kind: python` critics import and run the function
            the panel names (the library and the CLI: True). The web app passes False: such
            calls then fail with a sentence and no code named in a panel is imported.
        imported: the verdicts `kind: imported` critics replay (a run of imported verdicts).

    Raises:
        ConfigError: a limit of 0 or below, or `max_connections` below 1.

    Thread safety: a runner is shared by all worker threads of a run (and may outlive runs);
    every method is safe to call concurrently. Close it (or use it as a context manager) to free
    sockets.
    """

    def __init__(
        self,
        *,
        key_lookup: KeyLookup | None = None,
        cache: CallCache | None = None,
        transport: httpx.BaseTransport | None = None,
        max_connections: int = 64,
        vendor_limits: dict[str, int] | None = None,
        requests_per_minute: dict[str, float] | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        seed: int | None = None,
        batch_answers: BatchAnswers | None = None,
        python_critics: bool = True,
        imported: ImportedAnswers | None = None,
    ) -> None:
        # Preset defaults apply here only to calls made without a run's limiter: a run's
        # limiter already carries them (overridable by the panel). See `call`. Built first:
        # a bad limit raises before anything needs closing.
        self.limiter = VendorLimiter(vendor_limits, requests_per_minute)
        if isinstance(max_connections, bool) or max_connections < 1:
            raise ConfigError(f"max_connections must be at least 1 (got {max_connections!r})")
        self.key_lookup: KeyLookup = key_lookup or os.environ.get
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.batch_answers = batch_answers
        self.python_critics = python_critics
        self.imported = imported
        self._own_transport = transport is None
        self.transport: httpx.BaseTransport = (
            transport or VendorTransport(max_connections=max_connections)
        )
        self._sleep_fn = sleep
        self._rng = random.Random(seed)
        self._clock = clock or time.monotonic
        self._routes: dict[tuple[str, str, tuple[tuple[str, str], ...]], Route] = {}
        self._timeouts: dict[float, dict[str, float]] = {}
        self._lock = threading.Lock()
        self._watchdog = Watchdog()
        # Every key this runner has sent, so a reply echoing ANY of them is scrubbed (a
        # gateway may echo another critic's key). Only in memory, like the environment.
        self._keys: frozenset[str] = frozenset()
        self._scrubber = Scrubber(())
        self.gate = CriticGate()
        self._flights = SingleFlight()  # identical requests in flight: only one is sent
        self._closed = False

    # -- resources -------------------------------------------------------------------------

    def _route(self, base_url: str, extra_headers: dict[str, str] | None = None,
               api: str = "chat") -> Route:
        """The endpoint of a base URL with its prebuilt headers (made once, then shared)."""
        key = (base_url, api, tuple(extra_headers.items()) if extra_headers else ())
        route = self._routes.get(key)
        if route is None:
            route = make_route(base_url, extra_headers, api)
            with self._lock:
                route = self._routes.setdefault(key, route)
        return route

    def _timeout(self, seconds: float) -> dict[str, float]:
        timeouts = self._timeouts.get(seconds)
        if timeouts is None:
            timeouts = {"connect": seconds, "read": seconds, "write": seconds, "pool": seconds}
            self._timeouts[seconds] = timeouts
        return timeouts

    def _scrubber_with(self, key: str | None) -> Scrubber:
        """The scrubber for every key in use, this call's included."""
        if key and key not in self._keys:
            with self._lock:
                if key not in self._keys:
                    self._keys = self._keys | {key}
                    self._scrubber = Scrubber(self._keys)
        return self._scrubber

    def close(self) -> None:
        """Close the runner's own transport (its idle connections) and stop the deadline
        watchdog. A call made afterwards still works: it opens a fresh connection (so a late
        call from a straggling thread gets a verdict, not a crash)."""
        with self._lock:
            self._closed = True
            watchdog, self._watchdog = self._watchdog, Watchdog()
        if self._own_transport:
            self.transport.close()
        watchdog.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait(self, seconds: float, cancel: threading.Event | None, *, scaled: bool = True) -> None:
        if scaled:
            seconds *= self.retry.time_scale
        if seconds <= 0:
            return
        if self._sleep_fn is not None:
            self._sleep_fn(seconds)
        elif cancel is not None:
            cancel.wait(seconds)
        else:
            time.sleep(seconds)

    # -- one call --------------------------------------------------------------------------

    def call(
        self,
        critic: Critic,
        item: Item,
        scale: Scale | RubricConfig,
        *,
        cancel: threading.Event | None = None,
        gate: CriticGate | None = None,
        limiter: VendorLimiter | None = None,
        budget: BudgetGuard | None = None,
        messages: list[dict[str, str]] | None = None,
        free_text: bool = False,
        sample: int = 0,
        answers: CallCache | None = None,
    ) -> Verdict:
        """Judge one item with one critic. Never raises: failures come back as verdicts.

        Args:
            critic: the critic to call.
            item: the item to judge.
            scale: the panel's scale (the reply is normalised onto it).
            cancel: once set, no new request (first or retry) is sent; the verdict is CANCELLED.
                It is checked before each attempt and again once the vendor-limit slot is
                taken, so calls queued behind a limit never go out after a cancel.
            gate: the run's register of stopped critics (default: this runner's own).
            limiter: the run's per-vendor limits (a panel's `limits` with preset defaults).
                Applied on top of this runner's own `vendor_limits` / `requests_per_minute`
                (a request waits for both, so the stricter wins); the preset defaults then
                come from the run's limiter only, so a panel can raise or lower them.
            budget: the run's cap: a call that could pass it is not sent (CANCELLED, with the
                reason); a cache hit is free and never refused (`judging.engine.budget`).
            messages / free_text / sample: one step of a compound or repeated critic (see
                `prepare_call`); a free-text step's reply text comes back as `reasoning`, with
                no label.
            answers: where the run keeps its answers when this runner has no cache
                (`judging.engine.calls.cache.ItemAnswers`): an identical request waits for the
                one in flight and takes its answer from there, as it would from a cache.
                Ignored when the runner has a cache.

        Returns:
            A `Verdict` with the label/score, or `failure` + `message`, and the evidence. No
            text of it holds a key this runner sent (see `judging.engine.calls.scrub`).
        """
        if critic.kind in PLUGIN_KINDS:
            # A rule or python critic: judged here, free, no request.
            if not isinstance(scale, Scale):  # refused by `judging.panel.plugin_checks` already
                return self._failed(critic, item, FailureKind.CRITIC_ERROR,
                                    f"a {critic.kind} critic cannot mark a rubric")
            return self._plugin(critic, item, scale, sample)
        gate = gate or self.gate
        started = time.perf_counter()
        try:
            preset = get_preset(critic.vendor)
            prepared = prepare_call(critic, item, scale, messages=messages,
                                    free_text=free_text, sample=sample)
        except CallFailure as failure:
            return self._failed(critic, item, failure.kind, str(failure))
        except PlaceholderError as error:  # this item lacks a field the prompt uses
            return self._failed(critic, item, FailureKind.ITEM_ERROR, str(error))
        except ConfigError as error:  # e.g. a prompt without placeholders: every item fails
            return self._failed(critic, item, FailureKind.CRITIC_ERROR, str(error))
        except Exception as error:  # noqa: BLE001 - nothing may raise out of a call
            return self._failed(critic, item, FailureKind.ERROR,
                                f"could not build the request: {error}")

        verdict = Verdict(
            critic=critic.name,
            item_id=item.id,
            cache_key=prepared.cache_key,
            vendor=critic.vendor,
            model=critic.model,
            simulated=preset.simulated,
        )
        since = self._flights.tick()
        cache = self.cache if self.cache is not None else answers
        if cache is not None:
            stored = cache.get(prepared.cache_key)
            if stored is not None:
                return self._hit(stored, critic, item)
        if critic.mode == "batch" and self.batch_answers is not None:
            return self._from_batch(critic, scale if not free_text else None, prepared, verdict,
                                    cache)

        reason = gate.reason(critic.name)
        if reason is not None:
            return self._fail(verdict, FailureKind.CRITIC_ERROR, f"not called: {reason}")
        if cancel is not None and cancel.is_set():
            return self._fail(verdict, FailureKind.CANCELLED, _NOT_CALLED)
        if cache is not None:  # the same request in flight: wait, take its answer
            stored = self._flights.lead_or_wait(prepared.cache_key, cache.get, since=since)
            if stored is not None:
                return self._hit(stored, critic, item)
        held = None
        if budget is not None:
            price_in, price_out = critic.price_in_per_mtok, critic.price_out_per_mtok
            if preset.simulated and (price_in is None or price_out is None):
                price_in = price_out = 0.0  # a simulated critic without prices costs nothing
            held = budget.reserve(budget.reservation_for(
                critic.name, item.id, len(prepared.content), critic.max_tokens, price_in,
                price_out, cache_write_factor=_cache_write_factor(critic, preset)),
                cancel=cancel)  # may wait for calls in flight to make room
            if held is None:
                self._flights.done(prepared.cache_key)
                return self._fail(verdict, FailureKind.CANCELLED, _NOT_CALLED if cancel
                                  is not None and cancel.is_set() else _OVER_BUDGET)
        try:
            return self._send(critic, item, scale if not free_text else None, preset,
                              prepared, verdict, gate, cancel, limiter, started, cache)
        finally:
            self._flights.done(prepared.cache_key)  # after the cache's put: waiters read it
            if held is not None and budget is not None:
                budget.settle(held, verdict.cost_usd,
                              (verdict.tokens_in or 0) + (verdict.tokens_out or 0),
                              tokens_in=verdict.tokens_in, tokens_out=verdict.tokens_out)

    def _plugin(self, critic: Critic, item: Item, scale: Scale, sample: int) -> Verdict:
        """A plug-in critic's verdict: from the cache when it has one, else judged (and cached
        when it succeeded, as a call's answer is). An imported verdict is looked up, never
        cached."""
        if critic.kind == "imported":
            return judge_plugin(critic, item, scale, python_critics=False,
                                imported=self.imported, sample=sample)
        if self.cache is not None:
            stored = self.cache.get(plugin_cache_key(critic, item, scale))
            if stored is not None:
                return mark_passed(self._hit(stored, critic, item), critic, scale)
        verdict = judge_plugin(critic, item, scale, python_critics=self.python_critics)
        if self.cache is not None and verdict.ok:
            self.cache.put(verdict)
        return verdict

    def _hit(self, stored: Verdict, critic: Critic, item: Item) -> Verdict:
        """A cache hit as this call's verdict. A stored step may be served to a plain call and
        the other way round: the hit is this call's own, whatever part it played where it was
        made."""
        hit = dataclasses.replace(stored, critic=critic.name, item_id=item.id,
                                  cached=True, role=None, sample=0, steps=[])
        self._scrubber.verdict(hit)  # stored by an older version, maybe unscrubbed
        return hit

    def _send(
        self, critic: Critic, item: Item, scale: Scale | RubricConfig | None,
        preset: VendorPreset, prepared: PreparedCall, verdict: Verdict, gate: CriticGate,
        cancel: threading.Event | None, limiter: VendorLimiter | None, started: float,
        cache: CallCache | None,
    ) -> Verdict:
        """The part of `call` that talks to the vendor (after the cache, gate and budget); a
        success is put in `cache` (the runner's, or the run's answers)."""
        try:
            key = resolve_key(critic, self.key_lookup)
            base_url = resolve_base_url(critic)
        except CallFailure as failure:
            gate.stop(critic.name, str(failure))
            return self._fail(verdict, FailureKind.CRITIC_ERROR, str(failure))
        except Exception as error:  # noqa: BLE001 - e.g. the simulator could not start
            message = f"critic {critic.name!r}: could not reach the vendor: {error}"
            gate.stop(critic.name, message)
            return self._fail(verdict, FailureKind.CRITIC_ERROR, message)
        scrubber = self._scrubber_with(key)

        is_probe = gate.enter(critic.name)
        if not is_probe:
            reason = gate.reason(critic.name)
            if reason is not None:  # the probe found the critic unusable
                return self._fail(verdict, FailureKind.CRITIC_ERROR, f"not called: {reason}")
        try:
            try:
                api = api_of(critic)
                route = self._route(base_url, preset.extra_headers, api)
            except Exception as error:  # noqa: BLE001 - httpx.InvalidURL and kin
                message = (f"critic {critic.name!r}: the base URL {base_url!r} is not usable: "
                           f"{error}")
                gate.stop(critic.name, message)
                self._fail(verdict, FailureKind.CRITIC_ERROR, message)
                return verdict
            # A copy of the route's prebuilt headers (a list copy) plus what varies per call;
            # the key lives only in this request object, never in the route or the verdict.
            headers = httpx.Headers(route.headers)
            if key:
                if api == "messages":  # Anthropic's own header; it takes no Bearer token
                    headers["x-api-key"] = key
                else:
                    headers["Authorization"] = f"Bearer {key}"
            last = self._run_attempts(critic, scale, route, headers, prepared, verdict,
                                      scrubber, gate, cancel, limiter)
            self._note_outcome(critic, verdict, last, gate, scrubber)
        finally:
            if is_probe:
                gate.probe_done(critic.name)
            # Every text the verdict carries, whatever path filled it: vendors echo keys.
            scrubber.verdict(verdict)
        verdict.latency_ms = (time.perf_counter() - started) * 1000.0
        if verdict.ok and cache is not None:
            cache.put(verdict)
        return verdict

    def _from_batch(self, critic: Critic, scale: Scale | RubricConfig | None,
                    prepared: PreparedCall, verdict: Verdict, cache: CallCache | None
                    ) -> Verdict:
        """A batch critic's call, answered by its result line through the live path's parsing,
        pricing (at the batch price), scrubbing and cache; nothing is sent from here."""
        assert self.batch_answers is not None
        result = self.batch_answers.result(prepared.cache_key)
        if result is None:
            refused = self.batch_answers.why_missing(critic.name)
            if refused is not None:  # never sent: unpaid; the resume submits it again
                return self._fail(verdict, FailureKind.ERROR, f"{refused}; fix the cause and "
                                  "resume the run to submit it again")
            return self._fail(verdict, FailureKind.ERROR, _NOT_IN_BATCH)
        api = batch_api_of(critic)
        verdict.raw_request = {"batch_api": api, "custom_id": prepared.cache_key,
                               "body": sent_body(api, prepared)}
        verdict.raw_response = result.raw
        if result.not_run is not None:
            return self._fail(verdict, FailureKind.ERROR, result.not_run)  # never run: unpaid
        verdict.attempts = 1
        try:
            parsed = parse_reply(result.status, result.body, scale)
        except CallFailure as failure:
            if 200 <= result.status < 300:  # answered without a verdict: billed all the same
                self._add_usage(verdict, critic, reply_usage(result.body), batched=True)
            self._fail(verdict, failure.kind, str(failure))
        except Exception as error:  # noqa: BLE001 - nothing may raise out of a call
            self._fail(verdict, FailureKind.ERROR, f"unexpected error: {error!r}")
        else:
            verdict.label, verdict.score = parsed.label, parsed.score
            verdict.confidence, verdict.reasoning = parsed.confidence, parsed.reasoning
            verdict.marks = parsed.marks
            self._add_usage(verdict, critic, parsed.usage or Usage(parsed.tokens_in,
                                                                   parsed.tokens_out),
                            batched=True)
        self._scrubber.verdict(verdict)
        if verdict.ok and cache is not None:
            cache.put(verdict)
        return verdict

    @staticmethod
    def _failed(critic: Critic, item: Item, kind: FailureKind, message: str) -> Verdict:
        """A verdict for a call that could not even be built."""
        return Verdict(
            critic=critic.name,
            item_id=item.id,
            failure=kind,
            message=message,
            vendor=critic.vendor,
            model=critic.model,
        )

    @staticmethod
    def _fail(verdict: Verdict, kind: FailureKind, message: str) -> Verdict:
        verdict.failure = kind
        verdict.message = message
        return verdict

    def _limits(
        self, vendor: str, limiter: VendorLimiter | None
    ) -> tuple[list[threading.BoundedSemaphore], list[Pace]]:
        """The in-flight slots and paces a request to `vendor` must take: the run's limits,
        then this runner's own (without the preset default when the run has a limiter: the
        run's limiter carries it, possibly overridden by the panel)."""
        semaphores = [
            sem for sem in (
                limiter.semaphore(vendor) if limiter is not None else None,
                self.limiter.semaphore(vendor, with_default=limiter is None),
            ) if sem is not None
        ]
        paces = [
            pace for pace in (
                limiter.pace(vendor) if limiter is not None else None,
                self.limiter.pace(vendor),
            ) if pace is not None
        ]
        return semaphores, paces

    def _run_attempts(
        self,
        critic: Critic,
        scale: Scale | RubricConfig | None,
        route: Route,
        headers: httpx.Headers,
        prepared: PreparedCall,
        verdict: Verdict,
        scrubber: Scrubber,
        gate: CriticGate,
        cancel: threading.Event | None,
        limiter: VendorLimiter | None,
    ) -> CallFailure | None:
        """The retry loop: attempts until a verdict or a `GiveUp`. Fills `verdict` in place.

        Returns:
            The last failure (None when the call ended with a reply the model gave).
        """
        semaphores, paces = self._limits(critic.vendor, limiter)
        timeouts = self._timeout(critic.timeout_s)
        last: CallFailure | None = None
        api = api_of(critic)
        body = adjusted_body(prepared.body, gate.adjusted(critic.name))
        content = prepared.content if body is prepared.body else encode_body(body)
        self._show_request(verdict, route, body, gate, critic)
        failures = 0  # failed attempts that count against the retry budget
        adjusted_here: set[str] = set()

        def cancelled(attempt: int) -> bool:
            if cancel is None or not cancel.is_set():
                return False
            self._fail(verdict, FailureKind.CANCELLED,
                       f"cancelled before retry {attempt}; last error: {last}" if attempt
                       else _NOT_CALLED)
            return True

        for attempt in itertools.count():
            if cancelled(attempt):
                return last
            if paces:
                for pace in paces:  # every retry takes a slot too: the vendor counts it
                    self._wait(pace.reserve(self._clock()), cancel, scaled=False)
                if cancelled(attempt):  # cancelled while waiting for a pace slot
                    return last
            with _held(semaphores):
                # Again once the in-flight slot is ours: calls queued behind a vendor limit
                # when the run was cancelled must not reach the vendor.
                if cancelled(attempt):
                    return last
                verdict.attempts = attempt + 1
                headers["Content-Length"] = str(len(content))
                try:
                    reply = send_once(self.transport, self._watchdog, route, headers,
                                      content, timeouts, critic.timeout_s)
                except Exception as error:  # noqa: BLE001 - classified below
                    outcome: ParsedReply | _Failed | GiveUp = self._transport_failure(
                        error, critic.timeout_s)
                else:
                    verdict.raw_response = reply.body
                    outcome = self._read(reply.status, reply.headers, reply.body, critic,
                                         scale, verdict)
            if isinstance(outcome, ParsedReply):
                verdict.label = outcome.label
                verdict.score = outcome.score
                verdict.confidence = outcome.confidence
                verdict.reasoning = outcome.reasoning
                verdict.marks = outcome.marks
                self._add_usage(verdict, critic, outcome.usage or Usage(
                    outcome.tokens_in, outcome.tokens_out))
                return None
            if isinstance(outcome, _Failed) and isinstance(outcome.failure,
                                                           UnsupportedParameterError):
                change = adjustment_for(outcome.failure, body, api)
                if change is not None and change[0] not in adjusted_here:
                    # A parameter this model refuses: taken out (or renamed) for the rest of
                    # the run, and this call sent again at once, outside the retry budget (the
                    # request was wrong, not the vendor busy). At most once per parameter.
                    name, replacement = change
                    # Never the same name twice in one call: a vendor refusing the replacement
                    # too ("use max_tokens" after "use max_completion_tokens") ends as an error.
                    adjusted_here.update((name, replacement or name))
                    note = adjustment_note(critic.model, name, replacement, str(outcome.failure))
                    if gate.adjust(critic.name, name, replacement, note):
                        log.warning("critic %r: %s", critic.name, note)  # the run log
                    body = adjusted_body(body, {name: replacement})
                    content = encode_body(body)
                    self._show_request(verdict, route, body, gate, critic)
                    last = outcome.failure
                    continue
            decision = (outcome if isinstance(outcome, GiveUp)
                        else decide_retry(outcome.failure, failures, outcome.headers, self.retry))
            if isinstance(decision, GiveUp):
                message = decision.message
                if decision.kind is FailureKind.CRITIC_ERROR:
                    # Scrubbed before it is shared: the gate repeats it on later verdicts.
                    message = scrubber.text(self._critic_reason(critic, message)) or ""
                    gate.stop(critic.name, message)
                self._fail(verdict, decision.kind, message)
                return outcome.failure if isinstance(outcome, _Failed) else None
            assert isinstance(outcome, _Failed)  # a GiveUp outcome returned above
            last = outcome.failure
            failures += 1
            self._wait(decision.wait_s(self._rng.random()), cancel)
        return last  # pragma: no cover - the loop only ends by returning

    @staticmethod
    def _show_request(verdict: Verdict, route: Route, body: dict[str, Any], gate: CriticGate,
                      critic: Critic) -> None:
        """Keep what is sent as the verdict's raw request, with the run's adjustments of the
        critic's parameters when there are any (such a request is then stored whole)."""
        verdict.raw_request = {"url": route.url, "body": body}
        notes = gate.adjustments(critic.name)
        if notes:
            verdict.raw_request["adjusted"] = notes

    def _note_outcome(self, critic: Critic, verdict: Verdict, last: CallFailure | None,
                      gate: CriticGate, scrubber: Scrubber) -> None:
        """Tell the gate how the call ended, so the same error on K items in a row stops the
        critic. Only errors count (an answer the model gave, even a refusal, resets the
        streak); a rate limit neither counts nor resets: waiting is its cure, not stopping."""
        if verdict.failure is FailureKind.CANCELLED or verdict.failure is FailureKind.CRITIC_ERROR:
            return
        if verdict.failure in (FailureKind.ERROR, FailureKind.ITEM_ERROR):
            if isinstance(last, RetryableCallError) and last.rate_limited:
                return
            if gate.outcome(critic.name, scrubber.text(verdict.message or "") or ""):
                reason = gate.reason(critic.name) or ""
                verdict.message = f"{verdict.message} ({reason})"
            return
        gate.outcome(critic.name, None)

    @staticmethod
    def _transport_failure(error: Exception, timeout_s: float) -> _Failed | GiveUp:
        failure = failure_of(error, timeout_s)
        if failure is None:  # a bug, not the vendor: retrying would pay again for nothing
            return GiveUp(FailureKind.ERROR, f"unexpected error: {error!r}")
        return _Failed(failure, None)

    def _read(
        self,
        status: int,
        reply_headers: httpx.Headers,
        body: str,
        critic: Critic,
        scale: Scale | RubricConfig | None,
        verdict: Verdict,
    ) -> ParsedReply | _Failed | GiveUp:
        try:
            return parse_reply(status, body, scale)
        except CallFailure as failure:
            if 200 <= status < 300:
                # A reply without a verdict (refusal, truncation, no JSON) is billed all the
                # same: keep what it cost.
                self._add_usage(verdict, critic, reply_usage(body))
            return _Failed(failure, reply_headers)
        except Exception as error:  # noqa: BLE001 - nothing may raise out of a call
            return GiveUp(FailureKind.ERROR, f"unexpected error: {error!r}")

    @staticmethod
    def _critic_reason(critic: Critic, text: str) -> str:
        if "refused the API key" in text:
            variable = key_variable(critic) or "(no key variable: the critic sends no key)"
            return f"critic {critic.name!r}: {text}. Check the key in {variable}."
        return f"critic {critic.name!r}: {text}"

    @staticmethod
    def _add_usage(verdict: Verdict, critic: Critic, usage: Usage, *, batched: bool = False
                   ) -> None:
        """Add one reply's usage to the verdict (a retried call pays for every reply that
        reported usage): tokens, cached tokens, and its cost, priced from the tokens (cached
        ones at the cached rate) or, when the vendor reports what it billed, that. Unknown
        stays None, never 0."""
        if usage.tokens_in is not None:
            verdict.tokens_in = (verdict.tokens_in or 0) + usage.tokens_in
        if usage.tokens_out is not None:
            verdict.tokens_out = (verdict.tokens_out or 0) + usage.tokens_out
        if usage.cached is not None:
            verdict.tokens_cached = (verdict.tokens_cached or 0) + usage.cached
        cost = cost_usd(critic, usage.tokens_in, usage.tokens_out, batched=batched,
                        cached=usage.cached, cache_write=usage.cache_write, reported=usage.cost)
        if cost is not None:
            verdict.cost_usd = (verdict.cost_usd or 0.0) + cost


def _cache_write_factor(critic: Critic, preset: VendorPreset) -> float:
    """What a prompt token may cost when the vendor writes it to its prompt cache: only the
    Messages API bills writes at a premium (Anthropic's `cache_control`); elsewhere 1."""
    return preset.cache_write_factor if api_of(critic) == "messages" else 1.0


# --------------------------------------------------------------------------------------------
# A process-wide runner for one-off `Panel.judge` calls (notebooks), so a loop of judge() calls
# reuses one pool instead of building a client per call.

_default_runner: CallRunner | None = None
_default_lock = threading.Lock()


def default_runner() -> CallRunner:
    """The shared runner used by `Panel.judge` when none is given (keys from the environment)."""
    global _default_runner
    with _default_lock:
        if _default_runner is None or _default_runner._closed:
            _default_runner = CallRunner()
        return _default_runner
