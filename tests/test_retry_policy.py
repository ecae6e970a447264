"""The retry policy as a table: (failure, attempt, headers, policy) -> decision. No I/O."""

from __future__ import annotations

import email.utils
import random

import pytest

from judging.engine.calls import GiveUp, RetryAfter, RetryDecision, RetryPolicy, decide_retry
from judging.engine.calls.retry import backoff_seconds
from judging.errors import (
    CallFailure,
    CriticCallError,
    ItemCallError,
    ParseError,
    RefusalError,
    RetryableCallError,
    TruncatedError,
)
from judging.verdicts import FailureKind

NOW = 1_800_000_000.0
POLICY = RetryPolicy()  # 2 retries, 0.5 s base, 8 s cap, 25 % jitter, 60 s Retry-After cap
E = FailureKind


def http_date(offset_s: float) -> str:
    return email.utils.formatdate(NOW + offset_s, usegmt=True)


TABLE: list[tuple[str, CallFailure, int, dict[str, str] | None, RetryPolicy, RetryDecision]] = [
    # -- retryable failures: backoff min(0.5 * 2^n, 8) with 25 % jitter --------------------
    ("503 first attempt", RetryableCallError("HTTP 503"), 0, {}, POLICY,
     RetryAfter(0.5, 0.25)),
    ("503 second attempt", RetryableCallError("HTTP 503"), 1, {}, POLICY,
     RetryAfter(1.0, 0.25)),
    ("timeout, no reply at all", RetryableCallError("timed out"), 0, None, POLICY,
     RetryAfter(0.5, 0.25)),
    ("backoff capped", RetryableCallError("HTTP 500"), 6, None,
     RetryPolicy(max_retries=10), RetryAfter(8.0, 0.25)),
    # -- what the server asks for, without jitter --------------------------------------------
    ("Retry-After seconds", RetryableCallError("HTTP 429"), 0, {"Retry-After": "3"}, POLICY,
     RetryAfter(3.0)),
    ("retry-after-ms wins", RetryableCallError("HTTP 429"), 0,
     {"retry-after-ms": "1500", "Retry-After": "9"}, POLICY, RetryAfter(1.5)),
    ("Retry-After HTTP date", RetryableCallError("HTTP 429"), 0,
     {"Retry-After": http_date(5)}, POLICY, RetryAfter(5.0)),
    ("Retry-After in the past", RetryableCallError("HTTP 429"), 0,
     {"Retry-After": http_date(-100)}, POLICY, RetryAfter(0.0)),
    ("unreadable Retry-After: backoff", RetryableCallError("HTTP 429"), 0,
     {"Retry-After": "soon"}, POLICY, RetryAfter(0.5, 0.25)),
    ("Retry-After too long", RetryableCallError("HTTP 429"), 0, {"Retry-After": "600"},
     POLICY, GiveUp(E.ERROR, "HTTP 429 (the vendor asked to wait 600 s, more than the 60 s "
                             "limit: giving up)")),
    ("stale keep-alive connection: at once", RetryableCallError("stale", retry_after=0.0), 0,
     None, POLICY, RetryAfter(0.0)),
    # -- the budget --------------------------------------------------------------------------
    ("budget spent", RetryableCallError("HTTP 500"), 2, {}, POLICY,
     GiveUp(E.ERROR, "HTTP 500 (gave up after 3 attempts)")),
    ("no retries at all", RetryableCallError("HTTP 500"), 0, {}, RetryPolicy(max_retries=0),
     GiveUp(E.ERROR, "HTTP 500 (gave up after 1 attempt)")),
    ("stale on the last attempt", RetryableCallError("stale", retry_after=0.0), 2, None,
     POLICY, GiveUp(E.ERROR, "stale (gave up after 3 attempts)")),
    # -- x-should-retry ----------------------------------------------------------------------
    ("x-should-retry: false", RetryableCallError("HTTP 503"), 0, {"x-should-retry": "false"},
     POLICY, GiveUp(E.ERROR, "HTTP 503 (the vendor said not to retry: x-should-retry: false)")),
    ("x-should-retry: true on a 4xx", ItemCallError("HTTP 400"), 0,
     {"X-Should-Retry": " TRUE "}, POLICY, RetryAfter(0.5, 0.25)),
    ("x-should-retry: true, budget spent", ItemCallError("HTTP 400"), 2,
     {"x-should-retry": "true"}, POLICY, GiveUp(E.ERROR, "HTTP 400 (gave up after 3 attempts)")),
    # -- final at once, as their own kind ----------------------------------------------------
    ("fatal for the item", ItemCallError("too long"), 0, {}, POLICY,
     GiveUp(E.ITEM_ERROR, "too long")),
    ("fatal for the critic", CriticCallError("bad key"), 0, {}, POLICY,
     GiveUp(E.CRITIC_ERROR, "bad key")),
    ("x-should-retry never saves a critic error", CriticCallError("no quota"), 0,
     {"x-should-retry": "true"}, POLICY, GiveUp(E.CRITIC_ERROR, "no quota")),
    ("refusal", RefusalError("no"), 0, {}, POLICY, GiveUp(E.REFUSAL, "no")),
    ("truncated", TruncatedError("cut"), 0, {}, POLICY, GiveUp(E.TRUNCATED, "cut")),
    ("parse failure", ParseError("no JSON"), 0, {"Retry-After": "1"}, POLICY,
     GiveUp(E.PARSE_FAIL, "no JSON")),
]


@pytest.mark.parametrize(
    ("failure", "attempt", "headers", "policy", "expected"),
    [row[1:] for row in TABLE], ids=[row[0] for row in TABLE],
)
def test_retry_decision(failure: CallFailure, attempt: int, headers: dict[str, str] | None,
                        policy: RetryPolicy, expected: RetryDecision) -> None:
    decision = decide_retry(failure, attempt, headers, policy, now=NOW)
    if isinstance(expected, RetryAfter) and isinstance(decision, RetryAfter):
        assert decision.seconds == pytest.approx(expected.seconds, abs=1.0)  # HTTP dates: 1 s
        assert decision.jitter == expected.jitter
    else:
        assert decision == expected


def test_every_failure_kind_comes_from_the_failure_itself() -> None:
    """`CallFailure.kind` is what the decision reads: one map, in errors.py."""
    for failure_class in (ItemCallError, CriticCallError, RefusalError, TruncatedError,
                          ParseError):
        decision = decide_retry(failure_class("x"), 0, None, POLICY)
        assert isinstance(decision, GiveUp)
        assert decision.kind.value == failure_class.kind


@pytest.mark.parametrize(("draw", "expected"), [(0.0, 1.0), (0.5, 0.875), (0.999, 0.75025)])
def test_jitter_takes_off_up_to_its_fraction(draw: float, expected: float) -> None:
    assert RetryAfter(1.0, 0.25).wait_s(draw) == pytest.approx(expected)
    assert RetryAfter(3.0).wait_s(draw) == 3.0  # a server's own wait is kept exactly


def test_backoff_seconds_draws_within_the_jitter() -> None:
    rng = random.Random(1)
    assert all(6.0 <= backoff_seconds(n, POLICY, rng) <= 8.0 for n in range(4, 10))
