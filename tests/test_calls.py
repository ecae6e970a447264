"""The call layer: retries, deadlines, fatal errors, the cache, cancellation; no network."""

from __future__ import annotations

import email.utils
import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from judging.engine.calls import (
    CallRunner,
    MemoryCache,
    RetryPolicy,
    VendorLimiter,
    backoff_seconds,
    cache_key_for,
    retry_after_seconds,
)
from judging.errors import ConfigError
from judging.panel.critics import Critic
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, Verdict
from tests.fixtures_calls import KEY_VAR, SECRET_KEY, Script, chat_body, error, ok

ITEM = Item("item-1", {"text": "Birds > Penguins"})
MakeRunner = Callable[..., CallRunner]
MakeCritic = Callable[..., Critic]


def items(n: int) -> list[Item]:
    return [Item(f"item-{i}", {"text": f"class {i}"}) for i in range(n)]


def leaks(verdict: Verdict) -> bool:
    return SECRET_KEY in json.dumps(verdict.to_dict(), default=str)


# -- success and evidence ------------------------------------------------------------------


def test_success_keeps_the_evidence(make_runner: MakeRunner, make_critic: MakeCritic,
                                    label_scale: Scale) -> None:
    script = Script(ok(usage=(1000, 200)))
    critic = make_critic(price_in_per_mtok=2.0, price_out_per_mtok=10.0)
    verdict = make_runner(script).call(critic, ITEM, label_scale)
    assert verdict.ok and verdict.label == "KEEP" and verdict.confidence == 0.9
    assert verdict.reasoning == "fine"
    assert (verdict.attempts, verdict.tokens_in, verdict.tokens_out) == (1, 1000, 200)
    assert verdict.cost_usd == pytest.approx((1000 * 2.0 + 200 * 10.0) / 1e6)
    assert verdict.raw_request is not None
    assert verdict.raw_request["url"] == "https://api.openai.com/v1/chat/completions"
    assert verdict.raw_request["body"]["model"] == "gpt-test"
    assert verdict.raw_response and "KEEP" in verdict.raw_response
    assert verdict.latency_ms is not None and verdict.latency_ms >= 0
    assert (verdict.vendor, verdict.model, verdict.simulated) == ("openai", "gpt-test", False)
    assert verdict.cache_key and len(verdict.cache_key) == 64
    # The key travels in the header only, and is kept nowhere in the verdict.
    assert script.requests[0].headers["Authorization"] == f"Bearer {SECRET_KEY}"
    assert not leaks(verdict)


def test_unknown_price_is_none_not_zero(make_runner: MakeRunner, make_critic: MakeCritic,
                                        label_scale: Scale) -> None:
    verdict = make_runner(Script(ok())).call(make_critic(), ITEM, label_scale)
    assert verdict.ok and verdict.cost_usd is None


def test_simulated_critic_costs_zero_and_is_labelled(make_runner: MakeRunner,
                                                     make_critic: MakeCritic,
                                                     label_scale: Scale) -> None:
    critic = make_critic(vendor="simulated", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    verdict = make_runner(Script(ok())).call(critic, ITEM, label_scale)
    assert verdict.ok and verdict.simulated and verdict.cost_usd == 0.0


@pytest.mark.parametrize(
    ("vendor", "json_mode", "expected"),
    [("openai", None, True), ("anthropic", None, False), ("openai", False, False),
     ("gemini", None, True)],
)
def test_json_mode_requested_where_supported(make_runner: MakeRunner, make_critic: MakeCritic,
                                             label_scale: Scale, vendor: str,
                                             json_mode: bool | None, expected: bool) -> None:
    script = Script(ok())
    make_runner(script).call(make_critic(vendor=vendor, json_mode=json_mode), ITEM, label_scale)
    sent = script.sent_json()
    assert ("response_format" in sent) is expected
    if expected:
        assert sent["response_format"] == {"type": "json_object"}


def test_one_transport_and_one_route_per_base_url(make_runner: MakeRunner,
                                                  make_critic: MakeCritic, label_scale: Scale,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script(ok())
    runner = make_runner(script)
    # Never a client per call: building one during a call fails the test.
    def no_client(*args: object, **kwargs: object) -> None:
        raise AssertionError("an httpx.Client was built for a call")

    monkeypatch.setattr(httpx.Client, "__init__", no_client)
    for item in items(5):
        assert runner.call(make_critic(), item, label_scale).ok
    assert runner.call(make_critic("other", vendor="deepseek"), ITEM, label_scale).ok
    assert script.count == 6
    # Every request went through the one transport; the endpoint and its headers were built
    # once per base URL and reused.
    assert sorted(route.url for route in runner._routes.values()) == [
        "https://api.deepseek.com/v1/chat/completions",
        "https://api.openai.com/v1/chat/completions",
    ]
    sent = script.requests[0]
    assert sent.headers["Host"] == "api.openai.com"
    assert sent.headers["Content-Length"] == str(len(sent.content))
    assert sent.headers["Content-Type"] == "application/json"
    # The key is added per request: the shared route never holds it.
    assert all("authorization" not in route.headers for route in runner._routes.values())


def test_vendor_extra_headers_are_sent(make_runner: MakeRunner, make_critic: MakeCritic,
                                       label_scale: Scale) -> None:
    script = Script(ok())
    make_runner(script).call(make_critic(vendor="openrouter"), ITEM, label_scale)
    assert script.requests[0].headers["X-Title"] == "Jurybox"
    assert script.requests[0].url == "https://openrouter.ai/api/v1/chat/completions"


# -- retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected_wait"),
    [({"Retry-After": "3"}, 3.0), ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5)],
)
def test_429_then_success_honours_retry_after(make_runner: MakeRunner, make_critic: MakeCritic,
                                              label_scale: Scale, sleeps: list[float],
                                              headers: dict[str, str],
                                              expected_wait: float) -> None:
    script = Script(error(429, "slow down", headers), ok())
    verdict = make_runner(script).call(make_critic(), ITEM, label_scale)
    assert verdict.ok and verdict.attempts == 2
    assert script.count == 2  # a single 429 costs exactly 2 requests, not 9
    assert sleeps == [pytest.approx(expected_wait)]


def test_429_with_retry_after_http_date(make_runner: MakeRunner, make_critic: MakeCritic,
                                        label_scale: Scale, sleeps: list[float]) -> None:
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    script = Script(error(429, headers={"Retry-After": when}), ok())
    verdict = make_runner(script).call(make_critic(), ITEM, label_scale)
    assert verdict.ok and script.count == 2
    assert len(sleeps) == 1 and 3.0 <= sleeps[0] <= 5.0


def test_retry_after_parsing() -> None:
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None
    past = email.utils.formatdate(time.time() - 100, usegmt=True)
    assert retry_after_seconds({"Retry-After": past}) == 0.0


def test_retry_after_longer_than_the_cap_gives_up(make_runner: MakeRunner,
                                                  make_critic: MakeCritic,
                                                  label_scale: Scale, sleeps: list[float]) -> None:
    script = Script(error(429, headers={"Retry-After": "600"}), ok())
    verdict = make_runner(script).call(make_critic(), ITEM, label_scale)
    assert verdict.failure is FailureKind.ERROR
    assert "600 s" in (verdict.message or "") and script.count == 1 and sleeps == []


def test_x_should_retry_false_stops_retries(make_runner: MakeRunner, make_critic: MakeCritic,
                                            label_scale: Scale) -> None:
    script = Script(error(503, headers={"x-should-retry": "false"}), ok())
    verdict = make_runner(script).call(make_critic(), ITEM, label_scale)
    assert verdict.failure is FailureKind.ERROR and script.count == 1
    assert "x-should-retry" in (verdict.message or "")


def test_x_should_retry_true_retries_a_generic_4xx(make_runner: MakeRunner,
                                                   make_critic: MakeCritic,
                                                   label_scale: Scale) -> None:
    script = Script(error(400, "try again", headers={"x-should-retry": "true"}), ok())
    verdict = make_runner(script).call(make_critic(), ITEM, label_scale)
    assert verdict.ok and script.count == 2


def test_500_every_time_is_an_error_with_attempts_counted(make_runner: MakeRunner,
                                                          make_critic: MakeCritic,
                                                          label_scale: Scale,
                                                          sleeps: list[float]) -> None:
    script = Script(error(500, "internal"))
    verdict = make_runner(script).call(make_critic(), ITEM, label_scale)
    assert verdict.failure is FailureKind.ERROR
    assert verdict.attempts == 3 and script.count == 3
    assert "gave up after 3 attempts" in (verdict.message or "")
    # Exponential backoff with up to 25% jitter: 0.5 s then 1 s, each minus up to a quarter.
    assert len(sleeps) == 2
    assert 0.375 <= sleeps[0] <= 0.5 and 0.75 <= sleeps[1] <= 1.0


def test_backoff_is_capped() -> None:
    import random

    policy = RetryPolicy()
    rng = random.Random(1)
    assert all(6.0 <= backoff_seconds(n, policy, rng) <= 8.0 for n in range(4, 10))


def test_max_retries_zero_sends_one_request(make_runner: MakeRunner, make_critic: MakeCritic,
                                            label_scale: Scale) -> None:
    script = Script(error(500))
    runner = make_runner(script, retry=RetryPolicy(max_retries=0))
    verdict = runner.call(make_critic(), ITEM, label_scale)
    assert verdict.failure is FailureKind.ERROR and script.count == 1
    assert "gave up after 1 attempt)" in (verdict.message or "")


def test_html_502_from_a_proxy_is_retried(make_runner: MakeRunner, make_critic: MakeCritic,
                                          label_scale: Scale) -> None:
    html = httpx.Response(
        502, headers={"content-type": "text/html"},
        content=b"<html><body><h1>502 Bad Gateway</h1></body></html>",
    )
    script = Script(html, ok())
    assert make_runner(script).call(make_critic(), ITEM, label_scale).ok
    assert script.count == 2
    always = Script(html)
    verdict = make_runner(always).call(make_critic(), ITEM, label_scale)
    assert verdict.failure is FailureKind.ERROR and "HTML" in (verdict.message or "")
    assert verdict.raw_response and "Bad Gateway" in verdict.raw_response


def test_connection_reset_is_retried(make_runner: MakeRunner, make_critic: MakeCritic,
                                     label_scale: Scale) -> None:
    def reset(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset by peer", request=request)

    script = Script(reset, ok())
    verdict = make_runner(script).call(make_critic(), ITEM, label_scale)
    assert verdict.ok and verdict.attempts == 2


def test_error_object_inside_200_is_retried_and_never_cached(make_runner: MakeRunner,
                                                             make_critic: MakeCritic,
                                                             label_scale: Scale) -> None:
    cache = MemoryCache()
    script = Script(httpx.Response(200, json={"error": {"message": "upstream died", "code": 502}}))
    verdict = make_runner(script, cache=cache).call(make_critic(), ITEM, label_scale)
    assert verdict.failure is FailureKind.ERROR and "upstream died" in (verdict.message or "")
    assert script.count == 3 and len(cache) == 0


def test_error_array_inside_200_then_success(make_runner: MakeRunner, make_critic: MakeCritic,
                                             label_scale: Scale) -> None:
    gemini = httpx.Response(200, json=[{"error": {"code": 503, "message": "overloaded",
                                                  "status": "UNAVAILABLE"}}])
    script = Script(gemini, ok())
    verdict = make_runner(script).call(make_critic(vendor="gemini"), ITEM, label_scale)
    assert verdict.ok and script.count == 2


# -- fatal for the item / the critic -----------------------------------------------------------


def test_context_length_is_fatal_for_the_item_only(make_runner: MakeRunner,
                                                   make_critic: MakeCritic,
                                                   label_scale: Scale) -> None:
    script = Script(
        error(400, "This model's maximum context length is 8192 tokens",
              code="context_length_exceeded"),
        ok(),
    )
    runner = make_runner(script)
    first = runner.call(make_critic(), ITEM, label_scale)
    assert first.failure is FailureKind.ITEM_ERROR and script.count == 1
    assert "too long" in (first.message or "")
    assert runner.call(make_critic(), items(2)[1], label_scale).ok  # the critic goes on
    assert script.count == 2


def test_401_stops_the_critic_and_never_leaks_the_key(make_runner: MakeRunner,
                                                      make_critic: MakeCritic,
                                                      label_scale: Scale) -> None:
    # Some vendors echo the key they rejected: it must be scrubbed from what we keep.
    script = Script(error(401, f"Incorrect API key provided: {SECRET_KEY}"))
    runner = make_runner(script)
    verdicts = [runner.call(make_critic(), item, label_scale) for item in items(6)]
    assert script.count == 1
    assert all(v.failure is FailureKind.CRITIC_ERROR for v in verdicts)
    assert KEY_VAR in (verdicts[0].message or "")
    assert all((v.message or "").startswith("not called:") for v in verdicts[1:])
    assert all(KEY_VAR in (v.message or "") for v in verdicts[1:])
    assert verdicts[0].raw_request is not None
    assert "Authorization" not in json.dumps(verdicts[0].raw_request)
    assert not any(leaks(v) for v in verdicts)
    assert "alpha" in runner.gate.stopped


@pytest.mark.parametrize(
    "reply",
    [
        error(403, "forbidden"),
        error(404, "The model `gpt-test` does not exist"),
        error(429, "You exceeded your current quota", type="insufficient_quota",
              code="insufficient_quota"),
    ],
    ids=["403", "404", "insufficient_quota"],
)
def test_fatal_for_the_critic(make_runner: MakeRunner, make_critic: MakeCritic,
                              label_scale: Scale, sleeps: list[float],
                              reply: httpx.Response) -> None:
    script = Script(reply)
    runner = make_runner(script)
    verdicts = [runner.call(make_critic(), item, label_scale) for item in items(3)]
    assert script.count == 1 and sleeps == []  # quota errors are never retried
    assert {v.failure for v in verdicts} == {FailureKind.CRITIC_ERROR}


def test_stopping_one_critic_leaves_others_running(make_runner: MakeRunner,
                                                   make_critic: MakeCritic,
                                                   label_scale: Scale) -> None:
    def by_model(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == "bad":
            return error(404, "no such model")
        return ok()

    runner = make_runner(Script(by_model))
    bad, good = make_critic("bad", model="bad"), make_critic("good")
    assert runner.call(bad, ITEM, label_scale).failure is FailureKind.CRITIC_ERROR
    assert runner.call(good, ITEM, label_scale).ok


def test_missing_key_is_a_critic_error_without_a_request(make_runner: MakeRunner,
                                                         make_critic: MakeCritic,
                                                         label_scale: Scale) -> None:
    script = Script(ok())
    runner = make_runner(script, key_lookup=lambda name: None)
    verdict = runner.call(make_critic(), ITEM, label_scale)
    assert verdict.failure is FailureKind.CRITIC_ERROR and script.count == 0
    assert KEY_VAR in (verdict.message or "") and "not set" in (verdict.message or "")


@pytest.mark.parametrize(
    ("key", "problem"),
    [(SECRET_KEY + "\n", None), ("sk-abc\ndef", "line break"),
     ("sk-abc\r\nX-Forged: 1", "line break"), ("sk-abc def", "a space"),
     ("sk-abc\x00def", "a control character"),
     ("sk-abc\u2011def", "a non-ASCII character"), ("   ", "not set")],
    ids=["trailing-newline-stripped", "newline", "crlf", "space", "nul", "non-ascii", "blank"],
)
def test_a_malformed_key_is_a_configuration_error_without_an_attempt(
    make_runner: MakeRunner, make_critic: MakeCritic, label_scale: Scale, key: str,
    problem: str | None,
) -> None:
    script = Script(ok())
    runner = make_runner(script, key_lookup={KEY_VAR: key}.get)
    verdicts = [runner.call(make_critic(), item, label_scale) for item in items(2)]
    if problem is None:  # surrounding whitespace of a pasted key is not a mistake
        assert all(v.ok for v in verdicts) and script.count == 2
        assert script.requests[0].headers["Authorization"] == f"Bearer {SECRET_KEY}"
        return
    first = verdicts[0]
    assert first.failure is FailureKind.CRITIC_ERROR
    assert first.attempts == 0 and script.count == 0
    assert KEY_VAR in (first.message or "") and problem in (first.message or "")
    assert "sk-abc" not in json.dumps([v.to_dict() for v in verdicts], default=str)
    assert verdicts[1].failure is FailureKind.CRITIC_ERROR


def test_keyless_vendor_sends_no_authorization(make_runner: MakeRunner, make_critic: MakeCritic,
                                               label_scale: Scale) -> None:
    script = Script(ok())
    critic = make_critic(vendor="ollama", api_key_env=None)
    assert make_runner(script, key_lookup=lambda name: None).call(critic, ITEM, label_scale).ok
    assert "Authorization" not in script.requests[0].headers
    assert str(script.requests[0].url) == "http://127.0.0.1:11434/v1/chat/completions"


def test_custom_vendor_without_base_url_is_a_critic_error(make_runner: MakeRunner,
                                                          make_critic: MakeCritic,
                                                          label_scale: Scale) -> None:
    script = Script(ok())
    verdict = make_runner(script).call(make_critic(vendor="custom", api_key_env=None), ITEM,
                                       label_scale)
    assert verdict.failure is FailureKind.CRITIC_ERROR and "base_url" in (verdict.message or "")
    assert script.count == 0


# -- reply shapes through the runner -----------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "label", "reasoning"),
    [
        (ok('```json\n{"label": "split", "confidence": 0.8}\n```'), "SPLIT", None),
        (ok('<think>{"label": "REJECT"}</think>\n{"label": "KEEP"}'), "KEEP",
         '{"label": "REJECT"}'),
        (ok('{"label": "MERGE"}', reasoning_content="it duplicates X"), "MERGE",
         "it duplicates X"),
    ],
    ids=["fenced", "think-decoy", "reasoning_content"],
)
def test_reply_shapes(make_runner: MakeRunner, make_critic: MakeCritic, label_scale: Scale,
                      reply: httpx.Response, label: str, reasoning: str | None) -> None:
    verdict = make_runner(Script(reply)).call(make_critic(), ITEM, label_scale)
    assert verdict.ok and verdict.label == label
    if reasoning is not None:
        assert verdict.reasoning == reasoning


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (ok("", finish_reason="length"), FailureKind.TRUNCATED),
        (ok(None, refusal="I can't help with that."), FailureKind.REFUSAL),
        (ok('{"label": "PERHAPS"}'), FailureKind.PARSE_FAIL),
        (ok("   "), FailureKind.PARSE_FAIL),
    ],
    ids=["blank-length", "refusal", "off-scale", "blank"],
)
def test_unusable_replies_are_classified_not_retried(make_runner: MakeRunner,
                                                     make_critic: MakeCritic,
                                                     label_scale: Scale, reply: httpx.Response,
                                                     kind: FailureKind) -> None:
    cache = MemoryCache()
    script = Script(reply)
    verdict = make_runner(script, cache=cache).call(make_critic(), ITEM, label_scale)
    assert verdict.failure is kind and verdict.message
    assert script.count == 1 and verdict.attempts == 1 and len(cache) == 0
    assert verdict.raw_response == reply.content.decode()


@pytest.mark.parametrize(
    "content",
    ["", '{"label": "KEEP", "confidence": 0.', '{"label": "KEEP"}'],
    ids=["blank", "partial-json", "complete-json"],
)
def test_content_filter_is_a_refusal_never_a_label(make_runner: MakeRunner,
                                                   make_critic: MakeCritic,
                                                   label_scale: Scale, content: str) -> None:
    script = Script(ok(content, finish_reason="content_filter", usage=(900, 3)))
    critic = make_critic(price_in_per_mtok=2.0, price_out_per_mtok=10.0)
    verdict = make_runner(script).call(critic, ITEM, label_scale)
    assert verdict.failure is FailureKind.REFUSAL and verdict.label is None
    assert "content_filter" in (verdict.message or "")
    assert script.count == 1  # not retried: the filter would strike again
    assert (verdict.tokens_in, verdict.tokens_out) == (900, 3)  # billed all the same


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (ok("", finish_reason="length", usage=(1000, 512)), FailureKind.TRUNCATED),
        (ok(None, refusal="I can't help with that.", usage=(1000, 512)), FailureKind.REFUSAL),
        (ok("I think it is fine.", usage=(1000, 512)), FailureKind.PARSE_FAIL),
    ],
    ids=["truncated", "refusal", "parse-fail"],
)
def test_billed_failures_keep_tokens_and_cost(make_runner: MakeRunner, make_critic: MakeCritic,
                                              label_scale: Scale, reply: httpx.Response,
                                              kind: FailureKind) -> None:
    """A 200 reply without a verdict is billed by the vendor: its tokens and cost are kept."""
    critic = make_critic(price_in_per_mtok=2.0, price_out_per_mtok=10.0)
    verdict = make_runner(Script(reply)).call(critic, ITEM, label_scale)
    assert verdict.failure is kind
    assert (verdict.tokens_in, verdict.tokens_out) == (1000, 512)
    assert verdict.cost_usd == pytest.approx((1000 * 2.0 + 512 * 10.0) / 1e6)


def test_unbilled_failures_have_unknown_cost(make_runner: MakeRunner, make_critic: MakeCritic,
                                             label_scale: Scale) -> None:
    critic = make_critic(price_in_per_mtok=2.0, price_out_per_mtok=10.0)
    verdict = make_runner(Script(error(500))).call(critic, ITEM, label_scale)
    assert verdict.failure is FailureKind.ERROR
    assert (verdict.tokens_in, verdict.tokens_out, verdict.cost_usd) == (None, None, None)


def test_tokens_of_every_billed_attempt_add_up(make_runner: MakeRunner, make_critic: MakeCritic,
                                               label_scale: Scale) -> None:
    # An error inside a 200 that still reports usage, then a 500 (no usage), then a success.
    billed_error = httpx.Response(200, json={"error": {"message": "upstream hiccup"},
                                             "usage": {"prompt_tokens": 300,
                                                       "completion_tokens": 5}})
    script = Script(billed_error, error(500), ok(usage=(1000, 200)))
    critic = make_critic(price_in_per_mtok=2.0, price_out_per_mtok=10.0)
    verdict = make_runner(script).call(critic, ITEM, label_scale)
    assert verdict.ok and verdict.attempts == 3
    assert (verdict.tokens_in, verdict.tokens_out) == (1300, 205)
    assert verdict.cost_usd == pytest.approx((1300 * 2.0 + 205 * 10.0) / 1e6)


# -- cache -------------------------------------------------------------------------------------


def test_cache_hit_sends_no_request(make_runner: MakeRunner, make_critic: MakeCritic,
                                    label_scale: Scale) -> None:
    cache = MemoryCache()
    first_script, second_script = Script(ok()), Script(ok('{"label": "REJECT"}'))
    first = make_runner(first_script, cache=cache).call(make_critic(), ITEM, label_scale)
    again = make_runner(second_script, cache=cache).call(make_critic(), ITEM, label_scale)
    assert first.ok and not first.cached
    assert second_script.count == 0
    assert again.cached and again.label == "KEEP" and again.cache_key == first.cache_key


def test_cache_key_ignores_the_key_and_tracks_the_request(make_critic: MakeCritic,
                                                          label_scale: Scale) -> None:
    base = cache_key_for(make_critic(), ITEM, label_scale)
    assert cache_key_for(make_critic(api_key_env="OTHER_VAR"), ITEM, label_scale) == base
    assert cache_key_for(make_critic(name="renamed"), ITEM, label_scale) == base
    assert cache_key_for(make_critic(model="gpt-other"), ITEM, label_scale) != base
    assert cache_key_for(make_critic(temperature=0.5), ITEM, label_scale) != base
    assert cache_key_for(make_critic(base_url="http://127.0.0.1:1/v1"), ITEM, label_scale) != base
    other_item = Item("item-1", {"text": "something else"})
    assert cache_key_for(make_critic(), other_item, label_scale) != base


# -- cancellation, limits, deadline ------------------------------------------------------------


def test_cancelled_before_the_call_sends_nothing(make_runner: MakeRunner,
                                                 make_critic: MakeCritic,
                                                 label_scale: Scale) -> None:
    cancel = threading.Event()
    cancel.set()
    script = Script(ok())
    verdict = make_runner(script).call(make_critic(), ITEM, label_scale, cancel=cancel)
    assert verdict.failure is FailureKind.CANCELLED and script.count == 0


def test_cancel_during_backoff_sends_no_retry(make_runner: MakeRunner, make_critic: MakeCritic,
                                              label_scale: Scale) -> None:
    cancel = threading.Event()
    script = Script(error(500), ok())
    runner = make_runner(script, sleep=lambda seconds: cancel.set())
    verdict = runner.call(make_critic(), ITEM, label_scale, cancel=cancel)
    assert verdict.failure is FailureKind.CANCELLED and script.count == 1
    assert "HTTP 500" in (verdict.message or "")


def test_vendor_concurrency_limit(make_runner: MakeRunner, make_critic: MakeCritic,
                                  label_scale: Scale) -> None:
    changed = threading.Condition()
    state = {"now": 0, "peak": 0}

    def slow(request: httpx.Request) -> httpx.Response:
        with changed:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            changed.notify_all()
            # Hold each request a while (until a third is in flight, or 0.15 s), so the peak
            # does not depend on how fast threads start; without the limit all 8 pile up here.
            changed.wait_for(lambda: state["now"] >= 3, timeout=0.15)
            state["now"] -= 1
        return ok()

    runner = make_runner(Script(slow), vendor_limits={"openai": 2})
    threads = [
        threading.Thread(target=runner.call, args=(make_critic(), item, label_scale))
        for item in items(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert state["peak"] == 2


def test_requests_per_minute_paces_requests(make_runner: MakeRunner, make_critic: MakeCritic,
                                            label_scale: Scale, sleeps: list[float]) -> None:
    runner = make_runner(Script(ok()), requests_per_minute={"openai": 6})
    for item in items(3):
        runner.call(make_critic(), item, label_scale)
    # 6/min is one request per 10 s: the 2nd and 3rd wait for their slots (recorded, not slept).
    assert len(sleeps) == 2
    assert 9.0 < sleeps[0] <= 10.0 and 19.0 < sleeps[1] <= 20.0


def test_run_limiter_and_runner_limits_both_pace(make_runner: MakeRunner,
                                                 make_critic: MakeCritic, label_scale: Scale,
                                                 sleeps: list[float]) -> None:
    # The runner's own pace (6/min) and the run's (30/min) each hand out slots; a request
    # waits for both, so the stricter sets the spacing. The clock is frozen: waits add up.
    runner = make_runner(Script(ok()), requests_per_minute={"openai": 6}, clock=lambda: 5.0)
    limiter = VendorLimiter(requests_per_minute={"openai": 30})
    for item in items(3):
        assert runner.call(make_critic(), item, label_scale, limiter=limiter).ok
    assert sorted(sleeps) == pytest.approx([2.0, 4.0, 10.0, 20.0])


def test_retries_take_a_pace_slot_too(make_runner: MakeRunner, make_critic: MakeCritic,
                                      label_scale: Scale, sleeps: list[float]) -> None:
    # The vendor counts every request against the rate, so a retry is paced like a first try.
    runner = make_runner(Script(error(500), ok()), clock=lambda: 0.0,
                         retry=RetryPolicy(time_scale=0))
    limiter = VendorLimiter(requests_per_minute={"openai": 60})
    verdict = runner.call(make_critic(), ITEM, label_scale, limiter=limiter)
    assert verdict.ok and verdict.attempts == 2
    assert sleeps == [1.0]


def test_cancel_while_waiting_for_a_slot_sends_nothing(make_runner: MakeRunner,
                                                       make_critic: MakeCritic,
                                                       label_scale: Scale) -> None:
    cancel = threading.Event()
    script = Script(ok())
    # The "sleep" is where the user presses cancel: after the wait, no request may go out.
    runner = make_runner(script, sleep=lambda seconds: cancel.set(), clock=lambda: 0.0)
    limiter = VendorLimiter(requests_per_minute={"openai": 1})
    assert runner.call(make_critic(), items(1)[0], label_scale, limiter=limiter).ok
    verdict = runner.call(make_critic(), ITEM, label_scale, cancel=cancel, limiter=limiter)
    assert verdict.failure is FailureKind.CANCELLED
    assert verdict.message == "not called: the run was cancelled"
    assert script.count == 1


def test_run_limiter_replaces_the_preset_default_cap() -> None:
    # ollama's preset caps it at 4; a run's limiter carries that default and may override it.
    assert VendorLimiter().concurrency_for("ollama") == 4
    assert VendorLimiter({"ollama": 16}).concurrency_for("ollama") == 16
    assert VendorLimiter().concurrency_for("openai") is None
    assert VendorLimiter(preset_defaults=False).semaphore("ollama") is None
    explicit = VendorLimiter({"openai": 2})
    assert explicit.semaphore("openai", with_default=False) is explicit.semaphore("openai")
    assert explicit.semaphore("ollama", with_default=False) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_concurrency": {"openai": 0}}, r"limits\.openai\.max_concurrency: must be more"),
        ({"max_concurrency": {"openai": True}}, r"limits\.openai\.max_concurrency"),
        ({"requests_per_minute": {"gemini": -5.0}},
         r"limits\.gemini\.requests_per_minute: must be more than 0 \(got -5\.0\)"),
    ],
)
def test_limiter_refuses_non_positive_limits(kwargs: dict[str, dict[str, float]],
                                             message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        VendorLimiter(**kwargs)


def test_runner_refuses_non_positive_limits() -> None:
    with pytest.raises(ConfigError, match=r"limits\.openai\.requests_per_minute"):
        CallRunner(requests_per_minute={"openai": 0})


class _TrickleHandler(http.server.BaseHTTPRequestHandler):
    mode = "trickle"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps(chat_body()).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if self.server.mode == "stall":  # type: ignore[attr-defined]
                # Bytes for half the deadline, then nothing: the reader sits in a socket read
                # when the deadline passes, and only the deadline's watchdog can wake it then.
                for byte in body[:10]:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.05)
                time.sleep(3)
            for byte in body:  # about 20 bytes a second: ~10 s for the whole body
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            pass  # the client hung up, as it should

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def trickle_server() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TrickleHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode", ["trickle", "stall"])
@pytest.mark.timeout(20)
def test_slow_body_hits_the_deadline(trickle_server: http.server.ThreadingHTTPServer,
                                     make_critic: MakeCritic, label_scale: Scale,
                                     mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import judging.engine.calls.deadline as deadline

    cut: list[httpx.Response] = []
    real_cut = deadline._cut
    monkeypatch.setattr(deadline, "_cut", lambda response: (cut.append(response),
                                                            real_cut(response)))
    trickle_server.mode = mode  # type: ignore[attr-defined]
    port = trickle_server.server_address[1]
    critic = make_critic(vendor="custom", base_url=f"http://127.0.0.1:{port}/v1",
                         api_key_env=None, timeout_s=1.0)
    with CallRunner(retry=RetryPolicy(max_retries=0)) as runner:
        verdict = runner.call(critic, ITEM, label_scale)
    # Not the reply the server completes after ~10 s: the call ended at its deadline.
    assert verdict.failure is FailureKind.ERROR
    assert "no complete reply within the deadline of 1 s" in (verdict.message or "")
    if mode == "stall":
        # Cut by the deadline's watchdog, not left to the per-read timeout (which would end
        # the stalled body only a full second after its last byte).
        assert len(cut) == 1


def test_cancel_stops_calls_queued_behind_a_vendor_limit(make_runner: MakeRunner,
                                                         make_critic: MakeCritic,
                                                         label_scale: Scale) -> None:
    # 14 calls behind a limit of 2: two are at the vendor when the user cancels. Those two may
    # finish; none of the twelve waiting for a slot may be sent afterwards.
    cancel = threading.Event()
    arrived = threading.Condition()
    state = {"sent": 0}

    def held(request: httpx.Request) -> httpx.Response:
        with arrived:
            state["sent"] += 1
            arrived.notify_all()
        cancel.wait(timeout=10)
        return ok()

    runner = make_runner(Script(held), vendor_limits={"openai": 2})
    verdicts: list[Verdict] = []
    # One critic per call: a critic's first call is a lone probe, which would hide the limit.
    threads = [
        threading.Thread(target=lambda n=n: verdicts.append(
            runner.call(make_critic(f"critic-{n}"), ITEM, label_scale, cancel=cancel)))
        for n in range(14)
    ]
    for thread in threads:
        thread.start()
    with arrived:
        assert arrived.wait_for(lambda: state["sent"] == 2, timeout=10)
    cancel.set()
    for thread in threads:
        thread.join()
    assert state["sent"] == 2
    kinds = sorted(str(v.failure) for v in verdicts)
    assert kinds.count(str(FailureKind.CANCELLED)) == 12
    assert sum(v.attempts for v in verdicts) == 2
