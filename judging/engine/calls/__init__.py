"""Model calls: the ONE retry layer of Jurybox, and the only code that sleeps.

A `CallRunner` sends one critic's request for one item and always returns a `Verdict`: a
validated success, or a failure with its `FailureKind` and a sentence. Nothing raises out of
`CallRunner.call`.

One module per concern:
    cache        `CallCache`, `MemoryCache`: only validated successes are stored; a hit sends
                 nothing. `ItemAnswers`: a run without a cache keeps its items' answers while
                 they are judged, so an identical request of an item is sent once
    prepare      the request body, the bytes sent and the cache key (`prepare_call`)
    retry        the retry policy as a pure function, `decide_retry(failure, attempt, headers,
                 policy)` -> `RetryAfter(seconds)` or `GiveUp(kind, message)`: 408, 409, 429,
                 5xx, 529, timeouts, resets, bad gzip, proxy HTML are retried with backoff and
                 jitter like the OpenAI client (min(0.5 * 2^n, 8) s minus up to 25 %), honouring
                 `retry-after-ms`, `Retry-After` (seconds or HTTP date, capped) and
                 `x-should-retry`; a stale keep-alive connection at once. Never stacked: the
                 transports never retry.
    gate         `CriticGate`: 401/403/404/out of quota stop the critic for the run; later items
                 get "not called: <reason>" without a request
    limits       `VendorLimiter`: a per-vendor cap on requests in flight and an optional
                 requests-per-minute pace: the runner's own plus the run's (a panel's `limits`),
                 a request waiting for both so the stricter wins
    deadline     `critic.timeout_s` of wall clock per attempt, enforced here because httpx has
                 none: the header wait is bounded by the socket timeout, and the body is read
                 under a watchdog that cuts the socket when the deadline passes
    transports   `VendorTransport`, one per runner: httpx's own pool with `trust_env` (proxies,
                 NO_PROXY, SSL_CERT_FILE / SSL_CERT_DIR) for vendors, sized to the run's
                 concurrency; the fast `judging.engine.transport.ThreadLocalTransport` for plain HTTP
                 to loopback (the simulator, a local vLLM or Ollama)
    attempt      one request under its deadline, and what its exception means
    scrub        every text a verdict carries is cleared of the keys in use and `Bearer` tokens
    runner       `CallRunner`, which ties them together, and `default_runner()`

Billing: a reply that arrived (HTTP 2xx) but holds no verdict (a refusal, a truncation, a
parse failure) was still billed by the vendor, so its verdict carries the reply's tokens and
cost; tokens of every attempt of a call are added up.
"""

from judging.engine.calls.cache import CallCache, MemoryCache
from judging.engine.calls.call_runner import CallRunner, default_runner
from judging.engine.calls.gate import CriticGate
from judging.engine.calls.limits import VendorLimiter
from judging.engine.calls.prepare import PreparedCall, cache_key_for, prepare_call
from judging.engine.calls.retry import (
    GiveUp,
    RetryAfter,
    RetryDecision,
    RetryPolicy,
    backoff_seconds,
    decide_retry,
    retry_after_seconds,
)
from judging.engine.calls.transports import VendorTransport, is_loopback

__all__ = [
    "CallCache",
    "CallRunner",
    "CriticGate",
    "GiveUp",
    "MemoryCache",
    "PreparedCall",
    "RetryAfter",
    "RetryDecision",
    "RetryPolicy",
    "VendorLimiter",
    "VendorTransport",
    "backoff_seconds",
    "cache_key_for",
    "decide_retry",
    "default_runner",
    "is_loopback",
    "prepare_call",
    "retry_after_seconds",
]
