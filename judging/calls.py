"""Model calls: the ONE retry layer of Jurybox, and the only code that sleeps.

A `CallRunner` sends one critic's request for one item and always returns a `Verdict`: a
validated success, or a failure with its `FailureKind` and a sentence. Nothing raises out of
`CallRunner.call`.

What it owns, and why here:
    clients      pooled `httpx.Client`s per base URL, made once and shared by every call (a
                 client per call burns a core on TLS and pool set-up). The pool is split into
                 "lanes" of `LANE_SIZE` connections, each worker thread sticking to one lane:
                 httpcore scans every connection of a pool on each request, and with 64
                 connections in one pool that scan cost ~3x the CPU and ~2.5x the wall time
                 of 16 lanes of 4 (measured here, 3000 calls at 100 ms, concurrency 64).
    limits       a per-vendor cap on requests in flight, an optional requests-per-minute pace
    retries      408, 409, 429, 5xx, 529, timeouts, resets, proxy HTML: exponential backoff with
                 jitter like the OpenAI client (min(0.5 * 2^n, 8) s minus up to 25 %), honouring
                 `retry-after-ms`, `Retry-After` (seconds or HTTP date, capped) and
                 `x-should-retry`. Never stacked: the httpx clients themselves never retry.
    deadline     `critic.timeout_s` of wall clock per attempt, enforced here because httpx has
                 none: the header wait is bounded by the socket timeout, and the body is
                 streamed with a watchdog that cuts the socket when the deadline passes (a
                 body trickled byte by byte is still cut off)
    fatal        401/403/404/out of quota stop the critic for the run (`CriticGate`): later
                 items get "not called: <reason>" without a request
    cache        optional `CallCache`: only validated successes are stored; a hit sends nothing

Thread safety: a runner is shared by all worker threads of a run (and may outlive runs); every
method is safe to call concurrently. Close it (or use it as a context manager) to free sockets.
"""

from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import heapq
import itertools
import json
import math
import os
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import certifi
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
from judging.parsing import parse_reply
from judging.scales import Scale
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

LANE_SIZE = 4  # connections per pooled client; see "clients" in the module docstring

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
        self.next_slot = 0.0
        self.lock = threading.Lock()

    def reserve(self, now: float) -> float:
        """Seconds to wait before sending."""
        with self.lock:
            slot = max(now, self.next_slot)
            self.next_slot = slot + self.interval
            return slot - now


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
        self._cond = threading.Condition()
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
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: nothing left to cut


class _DeadlineExceeded(Exception):
    pass


# --------------------------------------------------------------------------------------------
# The runner


def _scrub(text: str | None, secret: str | None) -> str | None:
    """Remove a key from text a vendor sent back (some echo part or all of it in errors)."""
    if text is None or not secret:
        return text
    return text.replace(secret, "***")


class CallRunner:
    """Sends calls: pooled clients, per-vendor limits, the retry loop, deadlines and the cache.

    Args:
        key_lookup: maps a key variable name to its value (default `os.environ.get`).
        cache: optional `CallCache`; validated successes are stored, hits send nothing.
        transport: an httpx transport for every client (tests pass `httpx.MockTransport`).
        max_connections: connection pool size per base URL; keep it >= the run's concurrency.
        vendor_limits: max requests in flight per vendor name (default: the preset's
            `max_concurrency`, None meaning only the run's concurrency limits it).
        requests_per_minute: optional pace per vendor name, e.g. {"openai": 500}.
        retry: the retry policy.
        sleep: the function used for every wait (default: `time.sleep`, or the run's cancel
            event so a cancel cuts a backoff short). Tests inject one that records waits.
        seed: seeds the jitter (None: random).
    """

    def __init__(
        self,
        *,
        key_lookup: KeyLookup | None = None,
        cache: CallCache | None = None,
        transport: httpx.BaseTransport | None = None,
        max_connections: int = 128,
        vendor_limits: dict[str, int] | None = None,
        requests_per_minute: dict[str, float] | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        seed: int | None = None,
    ) -> None:
        if max_connections < 1:
            raise ConfigError("max_connections must be at least 1")
        self.key_lookup: KeyLookup = key_lookup or os.environ.get
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.max_connections = max_connections
        self._transport = transport
        self._sleep_fn = sleep
        self._rng = random.Random(seed)
        self._vendor_limits = dict(vendor_limits or {})
        self._rpm = dict(requests_per_minute or {})
        self._clients: dict[str, list[httpx.Client | None]] = {}
        self._lanes = max(1, math.ceil(max_connections / LANE_SIZE))
        self._lane_of_thread = threading.local()
        self._next_lane = itertools.count()
        self._ssl_context: ssl.SSLContext | None = None
        self._semaphores: dict[str, threading.BoundedSemaphore | None] = {}
        self._paces: dict[str, _Pace] = {}
        self._lock = threading.Lock()
        self._watchdog = _Watchdog()
        self.gate = CriticGate()
        self._closed = False

    # -- resources -------------------------------------------------------------------------

    def client_for(self, base_url: str) -> httpx.Client:
        """The pooled client this thread uses for a base URL (its lane; made on first use)."""
        lane: int | None = getattr(self._lane_of_thread, "lane", None)
        if lane is None:
            lane = self._lane_of_thread.lane = next(self._next_lane) % self._lanes
        lanes = self._clients.get(base_url)
        client = lanes[lane] if lanes is not None else None
        if client is not None:
            return client
        with self._lock:
            lanes = self._clients.setdefault(base_url, [None] * self._lanes)
            client = lanes[lane]
            if client is None:
                client = lanes[lane] = self._new_client()
            return client

    def _new_client(self) -> httpx.Client:
        size = min(LANE_SIZE, self.max_connections)
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        transport = self._transport
        if transport is None:
            if self._ssl_context is None:
                # One TLS context for every lane: loading the CA bundle is the costly part.
                self._ssl_context = ssl.create_default_context(cafile=certifi.where())
            transport = httpx.HTTPTransport(verify=self._ssl_context, limits=limits)
        return httpx.Client(
            transport=transport,
            timeout=None,  # set per request from the deadline
            headers={"User-Agent": "jurybox", "Content-Type": "application/json"},
        )

    def _semaphore(self, vendor: str) -> threading.BoundedSemaphore | None:
        if vendor in self._semaphores:
            return self._semaphores[vendor]
        with self._lock:
            if vendor not in self._semaphores:
                limit = self._vendor_limits.get(vendor, get_preset(vendor).max_concurrency)
                self._semaphores[vendor] = (
                    threading.BoundedSemaphore(limit) if limit else None
                )
            return self._semaphores[vendor]

    def _pace(self, vendor: str) -> _Pace | None:
        rpm = self._rpm.get(vendor)
        if not rpm:
            return None
        with self._lock:
            return self._paces.setdefault(vendor, _Pace(rpm))

    def close(self) -> None:
        """Close every client and stop the deadline watchdog. A call made afterwards opens fresh
        clients (so a late call from a straggling thread still gets a verdict, not a crash)."""
        with self._lock:
            clients = [c for lanes in self._clients.values() for c in lanes if c is not None]
            self._clients = {}
            self._closed = True
            watchdog, self._watchdog = self._watchdog, _Watchdog()
        for client in clients:
            client.close()
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
    ) -> Verdict:
        """Judge one item with one critic. Never raises: failures come back as verdicts.

        Args:
            critic: the critic to call.
            item: the item to judge.
            scale: the panel's scale (the reply is normalised onto it).
            cancel: once set, no new request (first or retry) is sent; the verdict is CANCELLED.
            gate: the run's register of stopped critics (default: this runner's own).

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
                            verdict, gate, cancel)
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
    ) -> None:
        url = f"{base_url}/chat/completions"
        verdict.raw_request = {"url": url, "body": prepared.body}
        headers = dict(extra_headers)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        client = self.client_for(base_url)
        try:
            self._run_attempts(
                critic, scale, client, url, headers, prepared, verdict, key, gate, cancel
            )
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
        client: httpx.Client,
        url: str,
        headers: dict[str, str],
        prepared: PreparedCall,
        verdict: Verdict,
        key: str | None,
        gate: CriticGate,
        cancel: threading.Event | None,
    ) -> None:
        """The retry loop. Fills `verdict` in place."""
        content = prepared.content
        semaphore = self._semaphore(critic.vendor)
        pace = self._pace(critic.vendor)
        policy = self.retry
        last: CallFailure | None = None
        for attempt in range(policy.max_retries + 1):
            if cancel is not None and cancel.is_set():
                self._fail(verdict, FailureKind.CANCELLED,
                           f"cancelled before retry {attempt}; last error: {last}" if attempt
                           else "not called: the run was cancelled")
                return
            if pace is not None:
                self._wait(pace.reserve(time.monotonic()), cancel, scaled=False)
            verdict.attempts = attempt + 1
            response_headers: httpx.Headers | None = None
            try:
                if semaphore is not None:
                    semaphore.acquire()
                try:
                    status, response_headers, body = self._send(
                        client, url, content, headers, critic.timeout_s
                    )
                finally:
                    if semaphore is not None:
                        semaphore.release()
                verdict.raw_response = body
                parsed = parse_reply(status, body, scale)
            except _DeadlineExceeded:
                last = RetryableCallError(
                    f"no complete reply within the deadline of {critic.timeout_s:g} s"
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
                verdict.tokens_in = parsed.tokens_in
                verdict.tokens_out = parsed.tokens_out
                verdict.cost_usd = cost_usd(critic, parsed.tokens_in, parsed.tokens_out)
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

    def _send(
        self,
        client: httpx.Client,
        url: str,
        content: bytes,
        headers: dict[str, str],
        timeout_s: float,
    ) -> tuple[int, httpx.Headers, str]:
        """One HTTP request with a wall-clock deadline over connect, headers and body."""
        deadline = time.monotonic() + timeout_s
        with client.stream(
            "POST", url, content=content, headers=headers, timeout=httpx.Timeout(timeout_s)
        ) as response:
            token = self._watchdog.watch(deadline, response)
            chunks: list[bytes] = []
            try:
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise _DeadlineExceeded
            except httpx.TransportError:
                if time.monotonic() >= deadline:
                    raise _DeadlineExceeded from None
                raise
            finally:
                self._watchdog.release(token)
        body = b"".join(chunks).decode(response.encoding or "utf-8", errors="replace")
        return response.status_code, response.headers, body


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
    "backoff_seconds",
    "cache_key_for",
    "default_runner",
    "prepare_call",
    "retry_after_seconds",
]
