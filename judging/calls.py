"""Model calls: the ONE retry layer of Jurybox, and the only code that sleeps.

A `CallRunner` sends one critic's request for one item and always returns a `Verdict`: a
validated success, or a failure with its `FailureKind` and a sentence. Nothing raises out of
`CallRunner.call`.

What it owns, and why here:
    transport    one `httpx.BaseTransport` shared by every call, made once (never a client per
                 call). By default `judging.transport.ThreadLocalTransport`: one HTTP/1.1
                 keep-alive socket per worker thread and host, replies parsed by the stdlib's
                 `http.client`, so the request path takes no pool lock (httpx's own pool
                 spent ~3x the CPU here assigning connections, and h11 several times
                 http.client's parsing cost).
                 Calls go straight to `transport.handle_request` with one `httpx.Request`
                 built from a pre-parsed URL and prebuilt headers: `httpx.Client`'s cookie,
                 auth, redirect and URL-merging layers did nothing for us at ~0.5 ms a call.
                 Tests inject `httpx.MockTransport` in its place.
    limits       a per-vendor cap on requests in flight, an optional requests-per-minute pace
                 (`VendorLimiter`): the runner's own, plus the run's (a panel's `limits`), a
                 request waiting for both so the stricter wins
    retries      408, 409, 429, 5xx, 529, timeouts, resets, proxy HTML: exponential backoff with
                 jitter like the OpenAI client (min(0.5 * 2^n, 8) s minus up to 25 %), honouring
                 `retry-after-ms`, `Retry-After` (seconds or HTTP date, capped) and
                 `x-should-retry`. Never stacked: the transports themselves never retry.
    deadline     `critic.timeout_s` of wall clock per attempt, enforced here because httpx has
                 none: the header wait is bounded by the socket timeout, and the body is
                 streamed with a watchdog that cuts the socket (the transport exposes it as
                 the response's `network_stream`) when the deadline passes, so a body
                 trickled byte by byte is still cut off
    fatal        401/403/404/out of quota stop the critic for the run (`CriticGate`): later
                 items get "not called: <reason>" without a request
    cache        optional `CallCache`: only validated successes are stored; a hit sends nothing

Thread safety: a runner is shared by all worker threads of a run (and may outlive runs); every
method is safe to call concurrently. Close it (or use it as a context manager) to free sockets.

Billing: a reply that arrived (HTTP 2xx) but holds no verdict (a refusal, a truncation, a
parse failure) was still billed by the vendor, so its verdict carries the reply's tokens and
cost; tokens of every attempt of a call are added up.
"""

from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import heapq
import itertools
import json
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import httpx

from judging.critics import Critic
from judging.errors import (
    CallFailure,
    ConfigError,
    CriticCallError,
    ItemCallError,
    ParseError,
    PlaceholderError,
    RefusalError,
    RetryableCallError,
    TruncatedError,
)
from judging.parsing import parse_reply, reply_usage
from judging.scales import Scale
from judging.transport import ThreadLocalTransport
from judging.vendors import (
    KeyLookup,
    cost_usd,
    get_preset,
    json_mode_for,
    key_variable,
    resolve_base_url,
    resolve_key,
)
from judging.verdicts import FailureKind, Item, Verdict

_KIND_OF: dict[type[CallFailure], FailureKind] = {
    RetryableCallError: FailureKind.ERROR,
    ItemCallError: FailureKind.ITEM_ERROR,
    CriticCallError: FailureKind.CRITIC_ERROR,
    RefusalError: FailureKind.REFUSAL,
    TruncatedError: FailureKind.TRUNCATED,
    ParseError: FailureKind.PARSE_FAIL,
}


# --------------------------------------------------------------------------------------------
# Cache


@runtime_checkable
class CallCache(Protocol):
    """Where validated successes are kept so a resumed run does not pay twice.

    `storage` provides one backed by SQLite; `MemoryCache` is the in-process one.
    Implementations must be safe to call from many threads.
    """

    def get(self, key: str) -> Verdict | None:
        """The stored successful verdict for a cache key, or None."""
        ...

    def put(self, verdict: Verdict) -> None:
        """Store a successful verdict under `verdict.cache_key`."""
        ...


class MemoryCache:
    """A thread-safe in-memory `CallCache` (for notebooks, tests and one-process runs)."""

    def __init__(self) -> None:
        self._store: dict[str, Verdict] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            return self._store.get(key)

    def put(self, verdict: Verdict) -> None:
        if verdict.cache_key is None or not verdict.ok:
            return
        with self._lock:
            self._store[verdict.cache_key] = verdict

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)


# --------------------------------------------------------------------------------------------
# Requests


@dataclass(slots=True)
class PreparedCall:
    """One critic's request for one item, before it is sent."""

    critic: Critic
    item: Item
    url_key: str  # the base URL as it enters the cache key ("simulated://" for the simulator)
    body: dict[str, Any]
    content: bytes  # the body as sent (serialised once: it is also what the cache key hashes)
    cache_key: str


def _request_body(critic: Critic, messages: list[dict[str, str]]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": critic.model,
        "messages": messages,
        "temperature": critic.temperature,
        "max_tokens": critic.max_tokens,
    }
    if json_mode_for(critic):
        body["response_format"] = {"type": "json_object"}
    # Extra parameters (seed, top_p, ...) may override, except the two that define the call.
    for name, value in critic.extra.items():
        if name not in ("model", "messages"):
            body[name] = value
    return body


def prepare_call(critic: Critic, item: Item, scale: Scale) -> PreparedCall:
    """Build the request body and cache key for one call, without sending anything.

    The cache key is the sha256 of vendor, base URL, model, messages and parameters; never the
    key. The simulated vendor's key uses "simulated://" instead of its (random) port so a cache
    survives a restart of the simulator.

    Raises:
        PlaceholderError: the critic's prompt uses a field this item lacks.
        CriticCallError: unknown vendor, or a custom vendor without a base URL.
    """
    preset = get_preset(critic.vendor)
    if critic.base_url:
        url_key = critic.base_url.rstrip("/")
    elif preset.simulated:
        url_key = "simulated://"
    else:
        url_key = resolve_base_url(critic)
    messages = critic.build_messages(item.fields, scale)
    body = _request_body(critic, messages)
    # Sorted keys make the bytes (and so the key) independent of dict order; the model,
    # messages and every parameter are in the body, the API key never is.
    content = json.dumps(body, sort_keys=True, ensure_ascii=False, default=str).encode()
    digest = hashlib.sha256(f"{critic.vendor}\n{url_key}\n".encode())
    digest.update(content)
    return PreparedCall(
        critic=critic, item=item, url_key=url_key, body=body, content=content,
        cache_key=digest.hexdigest(),
    )


def cache_key_for(critic: Critic, item: Item, scale: Scale) -> str:
    """The cache key of one call (see `prepare_call`). For resume bookkeeping in `storage`."""
    return prepare_call(critic, item, scale).cache_key


# --------------------------------------------------------------------------------------------
# Retry timing


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry.

    Attributes:
        max_retries: retries after the first attempt (2 -> at most 3 requests), as the OpenAI
            client does.
        base_delay_s / max_delay_s: backoff is min(base * 2^n, max) seconds ...
        jitter: ... minus up to this fraction at random (spreads a thundering herd).
        max_retry_after_s: a server asking to wait longer than this is given up on (ERROR with
            the wait it asked for) instead of holding a worker for minutes.
        time_scale: multiplies every wait; tests use 0 or 0.001 so they do not sleep.
    """

    max_retries: int = 2
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    jitter: float = 0.25
    max_retry_after_s: float = 60.0
    time_scale: float = 1.0


def retry_after_seconds(
    headers: httpx.Headers | dict[str, str], now: float | None = None
) -> float | None:
    """The wait a server asks for: `retry-after-ms`, else `Retry-After` (seconds or HTTP date).

    Returns:
        Seconds to wait (>= 0), or None when the headers ask for nothing readable.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_seconds(retry_index: int, policy: RetryPolicy, rng: random.Random) -> float:
    """min(base * 2^n, max) minus up to `jitter` of it, for the n-th retry (0-based)."""
    delay = min(policy.base_delay_s * (2**retry_index), policy.max_delay_s)
    return delay * (1.0 - policy.jitter * rng.random())


# --------------------------------------------------------------------------------------------
# Per-run critic gate, rate limiter, deadline watchdog


class CriticGate:
    """Critics stopped for the rest of a run after a fatal error (bad key, no model, no quota).

    One per run: `Panel.judge_many` makes a fresh one, so a fixed key works on the next run.
    """

    def __init__(self) -> None:
        self._reasons: dict[str, str] = {}
        self._probes: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def enter(self, critic: str) -> bool:
        """Called before a critic's request is sent. The first call of a critic in the run is
        its probe and goes at once (returns True); the others wait until the probe has
        finished, so a bad key or a missing model costs exactly one request, not one per
        worker already in flight. Afterwards this is one dict lookup."""
        probe = self._probes.get(critic)
        if probe is None:
            with self._lock:
                probe = self._probes.get(critic)
                if probe is None:
                    self._probes[critic] = threading.Event()
                    return True
        if not probe.is_set():  # is_set reads a flag; wait() would take the event's lock
            probe.wait()  # bounded: the probe's own deadline and retry budget end it
        return False

    def probe_done(self, critic: str) -> None:
        """The probe call of a critic has finished (whatever its outcome)."""
        self._probes[critic].set()

    def reason(self, critic: str) -> str | None:
        """Why a critic was stopped, or None if it may be called."""
        return self._reasons.get(critic)  # a dict read is atomic; no lock on the hot path

    def stop(self, critic: str, reason: str) -> None:
        """Stop a critic (the first reason wins)."""
        with self._lock:
            self._reasons.setdefault(critic, reason)

    @property
    def stopped(self) -> dict[str, str]:
        with self._lock:
            return dict(self._reasons)


class _Pace:
    """Requests-per-minute pacing for one vendor: each request takes the next free slot."""

    def __init__(self, rpm: float) -> None:
        self.interval = 60.0 / rpm
        self.next_slot: float | None = None
        self.lock = threading.Lock()

    def reserve(self, now: float) -> float:
        """Seconds to wait before sending."""
        with self.lock:
            slot = now if self.next_slot is None else max(now, self.next_slot)
            self.next_slot = slot + self.interval
            return slot - now


class VendorLimiter:
    """Per-vendor caps: requests in flight (a semaphore) and requests per minute (a pace).

    A `CallRunner` holds one for its own limits; `run_panel` makes one per run from the panel's
    `limits` and hands it to every `CallRunner.call`, so a panel's limits hold whichever runner
    sends its calls. Safe to share between threads.

    Args:
        max_concurrency: max requests in flight per vendor name, e.g. {"openai": 8}.
        requests_per_minute: pace per vendor name, e.g. {"openai": 500}: each request takes the
            next free slot 60/rpm seconds after the previous one (no bursts).
        preset_defaults: a vendor without a `max_concurrency` entry gets its preset's
            `VendorPreset.max_concurrency` (e.g. ollama's 4) instead of no cap.

    Raises:
        ConfigError: a limit below or equal to 0.
    """

    def __init__(
        self,
        max_concurrency: dict[str, int] | None = None,
        requests_per_minute: dict[str, float] | None = None,
        *,
        preset_defaults: bool = True,
    ) -> None:
        for what, limits in (("max_concurrency", max_concurrency),
                             ("requests_per_minute", requests_per_minute)):
            for vendor, value in (limits or {}).items():
                if isinstance(value, bool) or not value > 0:
                    raise ConfigError(
                        f"limits.{vendor}.{what}: must be more than 0 (got {value!r})"
                    )
        self.max_concurrency = dict(max_concurrency or {})
        self.requests_per_minute = dict(requests_per_minute or {})
        self.preset_defaults = preset_defaults
        self._semaphores: dict[str, threading.BoundedSemaphore | None] = {}
        self._paces: dict[str, _Pace | None] = {}
        self._lock = threading.Lock()

    def concurrency_for(self, vendor: str) -> int | None:
        """The cap on requests in flight to a vendor (None: no cap).

        Raises:
            CriticCallError: `vendor` is not a known preset (and has no explicit entry).
        """
        limit = self.max_concurrency.get(vendor)
        if limit is None and self.preset_defaults:
            limit = get_preset(vendor).max_concurrency
        return limit

    def semaphore(
        self, vendor: str, *, with_default: bool = True
    ) -> threading.BoundedSemaphore | None:
        """The vendor's in-flight semaphore, or None when nothing caps it.

        `with_default=False` ignores the preset default (the caller applies its own cap): an
        explicit entry still returns the same shared semaphore.
        """
        if not with_default and vendor not in self.max_concurrency:
            return None
        if vendor in self._semaphores:  # a dict read is atomic: no lock on the hot path
            return self._semaphores[vendor]
        with self._lock:
            if vendor not in self._semaphores:
                limit = self.concurrency_for(vendor)
                self._semaphores[vendor] = threading.BoundedSemaphore(limit) if limit else None
            return self._semaphores[vendor]

    def pace(self, vendor: str) -> _Pace | None:
        """The vendor's requests-per-minute pace, or None when it is not paced."""
        if vendor in self._paces:
            return self._paces[vendor]
        with self._lock:
            if vendor not in self._paces:
                rpm = self.requests_per_minute.get(vendor)
                self._paces[vendor] = _Pace(rpm) if rpm else None
            return self._paces[vendor]


class _Watchdog:
    """One thread that cuts the socket of any response still being read past its deadline.

    httpx bounds each socket read but not the whole body, so a server trickling one byte at a
    time would hold a call forever. `shutdown()` (not `close()`) is what wakes a thread blocked in
    `recv` on Linux; the reader then sees the connection end and reports the deadline.
    Entries are released by dropping their response (O(1)); stale entries are popped when the
    thread wakes, so a finished call holds no response in memory.
    """

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []  # [deadline, sequence, response or None]
        # A plain Lock (not the default RLock): taken twice per call by every worker thread.
        self._cond = threading.Condition(threading.Lock())
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, deadline: float, response: httpx.Response) -> list[Any]:
        entry = [deadline, next(self._ids), response]
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="jurybox-deadlines", daemon=True
                )
                self._thread.start()
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:  # a new earliest deadline: re-arm the timer
                self._cond.notify()
        return entry

    def release(self, entry: list[Any]) -> None:
        # Under the lock: once this returns, the loop can no longer cut this response's socket,
        # which is about to go back to the pool for another request.
        with self._cond:
            entry[2] = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _loop(self) -> None:
        with self._cond:
            while not self._closed:
                while self._heap and self._heap[0][2] is None:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                response = heapq.heappop(self._heap)[2]
                _cut(response)


def _cut(response: httpx.Response) -> None:
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        try:
            # The plain socket's shutdown even for TLS: SSLSocket.shutdown also drops its SSL
            # object under the feet of the thread still reading from it.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: nothing left to cut


class _CancelledWhileQueued(Exception):
    """The run was cancelled while this call waited for a vendor-limit slot."""


class _DeadlineExceeded(Exception):
    pass


# --------------------------------------------------------------------------------------------
# The runner


def _scrub(text: str | None, secret: str | None) -> str | None:
    """Remove a key from text a vendor sent back (some echo part or all of it in errors)."""
    if text is None or not secret:
        return text
    return text.replace(secret, "***")


@dataclass(frozen=True, slots=True)
class _Route:
    """What every call to one base URL shares, built once: the parsed endpoint URL and the
    headers every request to it carries (never the key: that is added per call)."""

    url: str
    parsed: httpx.URL
    headers: httpx.Headers


class CallRunner:
    """Sends calls: one shared transport, per-vendor limits, the retry loop, deadlines, the cache.

    Args:
        key_lookup: maps a key variable name to its value (default `os.environ.get`).
        cache: optional `CallCache`; validated successes are stored, hits send nothing.
        transport: the `httpx.BaseTransport` every request goes through (default: a
            `ThreadLocalTransport`, closed with the runner). Tests pass `httpx.MockTransport`.
            A transport you pass is yours: `close()` leaves it open. It must not retry.
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

    Raises:
        ConfigError: a limit of 0 or below.
    """

    def __init__(
        self,
        *,
        key_lookup: KeyLookup | None = None,
        cache: CallCache | None = None,
        transport: httpx.BaseTransport | None = None,
        vendor_limits: dict[str, int] | None = None,
        requests_per_minute: dict[str, float] | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        seed: int | None = None,
    ) -> None:
        # Preset defaults apply here only to calls made without a run's limiter: a run's
        # limiter already carries them (overridable by the panel). See `call`. Built first:
        # a bad limit raises before anything needs closing.
        self.limiter = VendorLimiter(vendor_limits, requests_per_minute)
        self.key_lookup: KeyLookup = key_lookup or os.environ.get
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self._own_transport = transport is None
        self.transport: httpx.BaseTransport = transport or ThreadLocalTransport()
        self._sleep_fn = sleep
        self._rng = random.Random(seed)
        self._clock = clock or time.monotonic
        self._routes: dict[tuple[str, tuple[tuple[str, str], ...]], _Route] = {}
        self._timeouts: dict[float, dict[str, float]] = {}
        self._lock = threading.Lock()
        self._watchdog = _Watchdog()
        self.gate = CriticGate()
        self._closed = False

    # -- resources -------------------------------------------------------------------------

    def _route(self, base_url: str, extra_headers: dict[str, str] | None = None) -> _Route:
        """The endpoint of a base URL with its prebuilt headers (made once, then shared)."""
        key = (base_url, tuple(extra_headers.items()) if extra_headers else ())
        route = self._routes.get(key)
        if route is None:
            url = f"{base_url}/chat/completions"
            parsed = httpx.URL(url)
            headers = httpx.Headers({
                # Host and Content-Length are ours to set: requests are built from a stream
                # (the body is already bytes), which httpx does not annotate.
                "Host": parsed.netloc.decode("ascii"),
                "User-Agent": "jurybox",
                "Accept": "application/json",
                "Content-Type": "application/json",
                **(extra_headers or {}),
            })
            route = _Route(url=url, parsed=parsed, headers=headers)
            with self._lock:
                route = self._routes.setdefault(key, route)
        return route

    def _timeout(self, seconds: float) -> dict[str, float]:
        timeouts = self._timeouts.get(seconds)
        if timeouts is None:
            timeouts = {"connect": seconds, "read": seconds, "write": seconds, "pool": seconds}
            self._timeouts[seconds] = timeouts
        return timeouts

    def close(self) -> None:
        """Close the runner's own transport (its idle connections) and stop the deadline
        watchdog. A call made afterwards still works: it opens a fresh connection (so a late
        call from a straggling thread gets a verdict, not a crash)."""
        with self._lock:
            self._closed = True
            watchdog, self._watchdog = self._watchdog, _Watchdog()
        if self._own_transport:
            self.transport.close()
        watchdog.close()

    def __enter__(self) -> CallRunner:
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
        scale: Scale,
        *,
        cancel: threading.Event | None = None,
        gate: CriticGate | None = None,
        limiter: VendorLimiter | None = None,
    ) -> Verdict:
        """Judge one item with one critic. Never raises: failures come back as verdicts.

        Args:
            critic: the critic to call.
            item: the item to judge.
            scale: the panel's scale (the reply is normalised onto it).
            cancel: once set, no new request (first or retry) is sent; the verdict is CANCELLED.
            gate: the run's register of stopped critics (default: this runner's own).
            limiter: the run's per-vendor limits (a panel's `limits` with preset defaults).
                Applied on top of this runner's own `vendor_limits` / `requests_per_minute`
                (a request waits for both, so the stricter wins); the preset defaults then
                come from the run's limiter only, so a panel can raise or lower them.

        Returns:
            A `Verdict` with the label/score, or `failure` + `message`, and the evidence.
        """
        gate = gate or self.gate
        started = time.perf_counter()
        try:
            preset = get_preset(critic.vendor)
            prepared = prepare_call(critic, item, scale)
        except CallFailure as failure:
            return self._failed(critic, item, _KIND_OF.get(type(failure), FailureKind.ERROR),
                                str(failure), simulated=False)
        except PlaceholderError as error:  # this item lacks a field the prompt uses
            return self._failed(critic, item, FailureKind.ITEM_ERROR, str(error), simulated=False)
        except ConfigError as error:  # e.g. a prompt without placeholders: every item fails
            return self._failed(critic, item, FailureKind.CRITIC_ERROR, str(error),
                                simulated=False)
        except Exception as error:  # noqa: BLE001 - nothing may raise out of a call
            return self._failed(critic, item, FailureKind.ERROR,
                                f"could not build the request: {error}", simulated=False)

        verdict = Verdict(
            critic=critic.name,
            item_id=item.id,
            cache_key=prepared.cache_key,
            vendor=critic.vendor,
            model=critic.model,
            simulated=preset.simulated,
        )
        if self.cache is not None:
            stored = self.cache.get(prepared.cache_key)
            if stored is not None:
                return dataclasses.replace(stored, critic=critic.name, item_id=item.id, cached=True)

        reason = gate.reason(critic.name)
        if reason is not None:
            verdict.failure = FailureKind.CRITIC_ERROR
            verdict.message = f"not called: {reason}"
            return verdict
        if cancel is not None and cancel.is_set():
            verdict.failure = FailureKind.CANCELLED
            verdict.message = "not called: the run was cancelled"
            return verdict

        key: str | None = None
        try:
            key = resolve_key(critic, self.key_lookup)
            base_url = resolve_base_url(critic)
        except CallFailure as failure:
            gate.stop(critic.name, str(failure))
            verdict.failure = FailureKind.CRITIC_ERROR
            verdict.message = str(failure)
            return verdict
        except Exception as error:  # noqa: BLE001 - e.g. the simulator could not start
            verdict.failure = FailureKind.CRITIC_ERROR
            verdict.message = f"critic {critic.name!r}: could not reach the vendor: {error}"
            gate.stop(critic.name, verdict.message)
            return verdict

        is_probe = gate.enter(critic.name)
        if not is_probe:
            reason = gate.reason(critic.name)
            if reason is not None:  # the probe found the critic unusable
                verdict.failure = FailureKind.CRITIC_ERROR
                verdict.message = f"not called: {reason}"
                return verdict
        try:
            self._send_call(critic, scale, base_url, key, preset.extra_headers, prepared,
                            verdict, gate, cancel, limiter)
        finally:
            if is_probe:
                gate.probe_done(critic.name)
        verdict.latency_ms = (time.perf_counter() - started) * 1000.0
        if verdict.ok and self.cache is not None:
            self.cache.put(verdict)
        return verdict

    def _send_call(
        self,
        critic: Critic,
        scale: Scale,
        base_url: str,
        key: str | None,
        extra_headers: dict[str, str],
        prepared: PreparedCall,
        verdict: Verdict,
        gate: CriticGate,
        cancel: threading.Event | None,
        limiter: VendorLimiter | None,
    ) -> None:
        route = self._route(base_url, extra_headers)
        verdict.raw_request = {"url": route.url, "body": prepared.body}
        # A copy of the route's prebuilt headers (a list copy) plus what varies per call; the
        # key lives only in this request object, never in the route or the verdict.
        headers = httpx.Headers(route.headers)
        headers["Content-Length"] = str(len(prepared.content))
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            self._run_attempts(critic, scale, route, headers, prepared, verdict, key, gate, cancel,
                               limiter)
        finally:
            verdict.message = _scrub(verdict.message, key)
            verdict.raw_response = _scrub(verdict.raw_response, key)

    def _failed(
        self, critic: Critic, item: Item, kind: FailureKind, message: str, *, simulated: bool
    ) -> Verdict:
        return Verdict(
            critic=critic.name,
            item_id=item.id,
            failure=kind,
            message=message,
            vendor=critic.vendor,
            model=critic.model,
            simulated=simulated,
        )

    def _run_attempts(
        self,
        critic: Critic,
        scale: Scale,
        route: _Route,
        headers: httpx.Headers,
        prepared: PreparedCall,
        verdict: Verdict,
        key: str | None,
        gate: CriticGate,
        cancel: threading.Event | None,
        limiter: VendorLimiter | None,
    ) -> None:
        """The retry loop. Fills `verdict` in place."""
        content = prepared.content
        vendor = critic.vendor
        # The run's limits, then this runner's own (without the preset default when the run
        # has a limiter: the run's limiter carries it, possibly overridden by the panel).
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
        policy = self.retry
        timeouts = self._timeout(critic.timeout_s)
        last: CallFailure | None = None
        for attempt in range(policy.max_retries + 1):
            if cancel is not None and cancel.is_set():
                self._fail(verdict, FailureKind.CANCELLED,
                           f"cancelled before retry {attempt}; last error: {last}" if attempt
                           else "not called: the run was cancelled")
                return
            if paces:
                for pace in paces:  # every retry takes a slot too: the vendor counts it
                    self._wait(pace.reserve(self._clock()), cancel, scaled=False)
                if cancel is not None and cancel.is_set():  # cancelled while waiting a slot
                    self._fail(verdict, FailureKind.CANCELLED,
                               f"cancelled before retry {attempt}; last error: {last}" if attempt
                               else "not called: the run was cancelled")
                    return
            verdict.attempts = attempt + 1
            response_headers: httpx.Headers | None = None
            try:
                for semaphore in semaphores:  # always in the same order: no deadlock
                    semaphore.acquire()
                try:
                    # A call may have waited long for its vendor slot: a cancel that came
                    # meanwhile must stop it here, or every queued call still goes out.
                    if cancel is not None and cancel.is_set():
                        raise _CancelledWhileQueued
                    status, response_headers, body = self._send(
                        route, headers, content, timeouts, critic.timeout_s
                    )
                finally:
                    for semaphore in semaphores:
                        semaphore.release()
                verdict.raw_response = body
                try:
                    parsed = parse_reply(status, body, scale)
                except CallFailure:
                    if 200 <= status < 300:
                        # A reply without a verdict (refusal, truncation, no JSON) is billed
                        # all the same: keep what it cost.
                        self._add_usage(verdict, critic, *reply_usage(body))
                    raise
            except _CancelledWhileQueued:
                verdict.attempts = attempt  # this attempt was never sent
                self._fail(verdict, FailureKind.CANCELLED,
                           f"cancelled before retry {attempt}; last error: {last}" if attempt
                           else "not called: the run was cancelled")
                return
            except _DeadlineExceeded:
                last = RetryableCallError(
                    f"no complete reply within the deadline of {critic.timeout_s:g} s"
                )
            except (httpx.LocalProtocolError, httpx.UnsupportedProtocol) as error:
                # The request itself is invalid (a line break in the key, a base URL that is
                # not http/https): every retry and every later item would fail the same way.
                last = CriticCallError(
                    f"could not send a valid request: {_scrub(str(error), key)}"
                )
            except httpx.TimeoutException:
                last = RetryableCallError(
                    f"timed out (deadline {critic.timeout_s:g} s) waiting for the vendor"
                )
            except httpx.TransportError as error:
                last = RetryableCallError(
                    f"connection problem: {type(error).__name__}: {_scrub(str(error), key)}"
                )
            except CallFailure as failure:
                last = failure
            except Exception as error:  # noqa: BLE001 - nothing may raise out of a call
                self._fail(verdict, FailureKind.ERROR, f"unexpected error: {error!r}")
                return
            else:
                verdict.label = parsed.label
                verdict.score = parsed.score
                verdict.confidence = parsed.confidence
                verdict.reasoning = parsed.reasoning
                self._add_usage(verdict, critic, parsed.tokens_in, parsed.tokens_out)
                return

            should = (response_headers.get("x-should-retry") or "").strip().lower() \
                if response_headers is not None else ""
            if isinstance(last, CriticCallError):
                # Scrubbed before it is shared: the gate repeats it on later verdicts.
                reason = _scrub(self._critic_reason(critic, last), key) or ""
                gate.stop(critic.name, reason)
                self._fail(verdict, FailureKind.CRITIC_ERROR, reason)
                return
            retryable = isinstance(last, RetryableCallError) or (
                # The server knows best: a generic 4xx it marks retryable is retried.
                should == "true" and type(last) is ItemCallError
            )
            if not retryable:
                self._fail(verdict, _KIND_OF.get(type(last), FailureKind.ERROR), str(last))
                return
            if should == "false":
                self._fail(verdict, FailureKind.ERROR,
                           f"{last} (the vendor said not to retry: x-should-retry: false)")
                return
            if attempt == policy.max_retries:
                tries = "attempt" if attempt == 0 else "attempts"
                self._fail(verdict, FailureKind.ERROR,
                           f"{last} (gave up after {attempt + 1} {tries})")
                return
            asked = retry_after_seconds(response_headers) if response_headers is not None else None
            if asked is not None and asked > policy.max_retry_after_s:
                self._fail(verdict, FailureKind.ERROR,
                           f"{last} (the vendor asked to wait {asked:.0f} s, more than the "
                           f"{policy.max_retry_after_s:.0f} s limit: giving up)")
                return
            self._wait(asked if asked is not None else backoff_seconds(attempt, policy, self._rng),
                       cancel)

    @staticmethod
    def _fail(verdict: Verdict, kind: FailureKind, message: str) -> None:
        verdict.failure = kind
        verdict.message = message

    @staticmethod
    def _critic_reason(critic: Critic, failure: CallFailure) -> str:
        text = str(failure)
        if "refused the API key" in text:
            variable = key_variable(critic) or "(no key variable: the critic sends no key)"
            return f"critic {critic.name!r}: {text}. Check the key in {variable}."
        return f"critic {critic.name!r}: {text}"

    @staticmethod
    def _add_usage(
        verdict: Verdict, critic: Critic, tokens_in: int | None, tokens_out: int | None
    ) -> None:
        """Add one reply's tokens to the verdict (a retried call pays for every reply that
        reported usage) and price the total; unknown stays None, never 0."""
        if tokens_in is not None:
            verdict.tokens_in = (verdict.tokens_in or 0) + tokens_in
        if tokens_out is not None:
            verdict.tokens_out = (verdict.tokens_out or 0) + tokens_out
        verdict.cost_usd = cost_usd(critic, verdict.tokens_in, verdict.tokens_out)

    def _send(
        self,
        route: _Route,
        headers: httpx.Headers,
        content: bytes,
        timeouts: dict[str, float],
        timeout_s: float,
    ) -> tuple[int, httpx.Headers, str]:
        """One HTTP request with a wall-clock deadline over connect, headers and body."""
        deadline = time.monotonic() + timeout_s
        request = httpx.Request(
            "POST", route.parsed, headers=headers, stream=httpx.ByteStream(content),
            extensions={"timeout": timeouts},
        )
        response = self.transport.handle_request(request)
        try:
            token = self._watchdog.watch(deadline, response)
            chunks: list[bytes] = []
            reply_headers = response.headers
            # The transport's byte stream as it is, unless the vendor compressed it (we never
            # ask it to) or the body is already in memory (MockTransport replies): then httpx
            # decodes. (iter_raw's re-chunking and counters cost ~5 % of a call's CPU.)
            reader: Iterable[bytes]
            if response.is_stream_consumed or "content-encoding" in reply_headers:
                reader = response.iter_bytes()
            else:
                reader = response.stream  # type: ignore[assignment]  # a SyncByteStream here
            try:
                for chunk in reader:
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise _DeadlineExceeded
            except httpx.TransportError:
                if time.monotonic() >= deadline:
                    raise _DeadlineExceeded from None
                raise
            finally:
                self._watchdog.release(token)
        finally:
            response.close()  # hands a fully read keep-alive connection back to the transport
        # JSON is UTF-8 (RFC 8259); only a declared charset says otherwise.
        content_type = reply_headers.get("content-type", "")
        encoding = (response.encoding or "utf-8") if "charset" in content_type else "utf-8"
        body = b"".join(chunks).decode(encoding, errors="replace")
        return response.status_code, reply_headers, body


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


__all__ = [
    "CallCache",
    "CallRunner",
    "CriticGate",
    "MemoryCache",
    "PreparedCall",
    "RetryPolicy",
    "VendorLimiter",
    "backoff_seconds",
    "cache_key_for",
    "default_runner",
    "prepare_call",
    "retry_after_seconds",
]
