"""The retry policy: a pure function from one failed attempt to a decision.

`decide_retry(failure, attempt, headers, policy)` says either "send it again after N s"
(`RetryAfter`) or "stop, the call failed as kind K" (`GiveUp`). It reads nothing but its
arguments (and the clock, for a `Retry-After` given as an HTTP date, unless `now` is passed),
sleeps nothing and sends nothing: the runner acts on the decision. Keeping every rule here is
what keeps retries in one place, never stacked.

The rules, in order (like the official OpenAI client, without its mistakes):
    1. A failure whose kind is not `error` is final: fatal for the critic or the item, a
       refusal, a truncation, a parse failure. Exception: a 4xx fatal for the item that the
       vendor marks `x-should-retry: true` (the server knows best).
    2. `x-should-retry: false` stops at once.
    3. The budget: `policy.max_retries` retries after the first attempt; a rate limit gets
       `policy.max_rate_limit_retries` (the vendor said "later", not "no": waiting for the
       window it names is the cure, and a critic is never stopped for it).
    4. The wait: what the failure itself asks (0 s for a stale keep-alive connection, which
       the vendor never saw), else `retry-after-ms` / `Retry-After` (seconds or HTTP date),
       else exponential backoff min(base * 2^n, max) minus up to `jitter` of it. A server asking
       for more than `max_retry_after_s` is given up on instead of holding a worker for minutes.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

from judging.errors import CallFailure, RetryableCallError
from judging.verdicts import FailureKind


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry.

    Attributes:
        max_retries: retries after the first attempt (2 -> at most 3 requests), as the OpenAI
            client does.
        max_rate_limit_retries: retries of a call the vendor rate-limited (429,
            RESOURCE_EXHAUSTED, rate_limit_exceeded), each after the wait it asks for.
        base_delay_s / max_delay_s: backoff is min(base * 2^n, max) seconds ...
        jitter: ... minus up to this fraction at random (spreads a thundering herd).
        max_retry_after_s: a server asking to wait longer than this is given up on (ERROR with
            the wait it asked for) instead of holding a worker for minutes.
        time_scale: multiplies every wait; tests use 0 or 0.001 so they do not sleep.
    """

    max_retries: int = 2
    max_rate_limit_retries: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    jitter: float = 0.25
    max_retry_after_s: float = 60.0
    time_scale: float = 1.0


@dataclass(frozen=True, slots=True)
class RetryAfter:
    """Decision: send the call again after `seconds`, less up to `jitter` of them at random.

    Attributes:
        seconds: the wait before jitter (0: at once).
        jitter: the largest fraction taken off (0 for a wait the server asked for).
    """

    seconds: float
    jitter: float = 0.0

    def wait_s(self, draw: float) -> float:
        """The wait for a random `draw` in [0, 1): `seconds * (1 - jitter * draw)`."""
        return self.seconds * (1.0 - self.jitter * draw)


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Decision: the call failed for good, as `kind`, for the reason `message`."""

    kind: FailureKind
    message: str


RetryDecision = RetryAfter | GiveUp


def _lowered(headers: Mapping[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a server asks for: `retry-after-ms`, else `Retry-After` (seconds or HTTP date).

    Args:
        headers: the reply's headers (any mapping; names are matched case-insensitively).
        now: the current time as a Unix timestamp (default `time.time()`), for HTTP dates.

    Returns:
        Seconds to wait (>= 0), or None when the headers ask for nothing readable.
    """
    lowered = _lowered(headers)
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
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_delay(retry_index: int, policy: RetryPolicy) -> RetryAfter:
    """The backoff before the n-th retry (0-based): min(base * 2^n, max), with the policy's
    jitter still to apply."""
    delay = min(policy.base_delay_s * (2**retry_index), policy.max_delay_s)
    return RetryAfter(delay, policy.jitter)


def backoff_seconds(retry_index: int, policy: RetryPolicy, rng: random.Random) -> float:
    """min(base * 2^n, max) minus up to `jitter` of it, for the n-th retry (0-based)."""
    return backoff_delay(retry_index, policy).wait_s(rng.random())


def decide_retry(
    failure: CallFailure,
    attempt: int,
    headers: Mapping[str, str] | None,
    policy: RetryPolicy,
    *,
    now: float | None = None,
) -> RetryDecision:
    """What to do after an attempt failed.

    Args:
        failure: how the attempt failed; its `kind` (a `FailureKind` value) is what counts.
        attempt: the 0-based number of the attempt that failed.
        headers: the reply's headers (names in any case), or None when no reply arrived
            (timeouts, resets).
        policy: the retry policy.
        now: the current Unix time, for a `Retry-After` HTTP date (default: the clock).

    Returns:
        `RetryAfter(seconds, jitter)` or `GiveUp(kind, message)`; the message is the sentence
        the verdict keeps.
    """
    kind = failure.kind
    message = str(failure)
    lowered = _lowered(headers) if headers else {}
    should = (lowered.get("x-should-retry") or "").strip().lower()
    retryable = kind is FailureKind.ERROR or (
        kind is FailureKind.ITEM_ERROR and should == "true"
    )
    if not retryable:
        return GiveUp(kind, message)
    if should == "false":
        return GiveUp(FailureKind.ERROR,
                      f"{message} (the vendor said not to retry: x-should-retry: false)")
    rate_limited = isinstance(failure, RetryableCallError) and failure.rate_limited
    if attempt >= (policy.max_rate_limit_retries if rate_limited else policy.max_retries):
        tries = "attempt" if attempt == 0 else "attempts"
        return GiveUp(FailureKind.ERROR, f"{message} (gave up after {attempt + 1} {tries})")
    asked = failure.retry_after if isinstance(failure, RetryableCallError) else None
    if asked is None:
        asked = retry_after_seconds(lowered, now)
    if asked is None:
        return backoff_delay(attempt, policy)
    if asked > policy.max_retry_after_s:
        return GiveUp(FailureKind.ERROR,
                      f"{message} (the vendor asked to wait {asked:.0f} s, more than the "
                      f"{policy.max_retry_after_s:.0f} s limit: giving up)")
    return RetryAfter(asked)
