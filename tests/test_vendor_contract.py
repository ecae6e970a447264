"""Jurybox against the vendors' own definitions, not against its own simulator.

- Requests: every body Jurybox builds, for every preset and a table of model families, is
  accepted by the official SDK's typed `create()` (an unknown parameter is a TypeError there)
  and is byte for byte the JSON the SDK itself sends for it; the headers and path are the SDK's.
- Replies and errors: the documented bodies of each vendor (`tests/vendor_documented.py`, each
  with its source) served over real HTTP on 127.0.0.1 give the label, failure kind, tokens,
  cached tokens, cost, attempts and waits the vendor means.
"""

from __future__ import annotations

import json
from typing import Any, get_type_hints

import anthropic
import httpx
import httpx2  # the anthropic SDK's own HTTP client (2.x): it refuses httpx objects
import openai
import pytest
from anthropic import _constants as anthropic_constants
from anthropic.types import message_create_params
from openai.types.chat import completion_create_params
from pydantic import TypeAdapter

from judging.engine.anthropic_messages import ANTHROPIC_VERSION
from judging.engine.batches.clients import AnthropicBatches
from judging.engine.calls import CallRunner, RetryPolicy
from judging.engine.calls.gate import CriticGate
from judging.engine.calls.prepare import prepare_call
from judging.panel.critics import Critic
from judging.panel.request_rules import request_notes
from judging.panel.vendors import PRESETS, api_of
from judging.scales import Scale
from judging.verdicts import Item
from tests.fixtures_network import Reply, SeenRequest
from tests.vendor_documented import CASES, PRICE_IN, PRICE_OUT, Case, anthropic_message

KEY_VAR = "JURYBOX_CONTRACT_KEY"
KEY = "sk-contract-test-0123456789"
SCALE = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])
ITEM = Item(id="TX-1", fields={"text": "Electric kettles"})

# Model families people pick in 2026, per preset (the simulator stands in for OpenAI).
FAMILIES: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4o", "gpt-4.1-mini", "o3", "o4-mini", "gpt-5", "gpt-5.1", "gpt-5-mini",
               "gpt-5-chat-latest"),
    "anthropic": ("claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-1", "claude-opus-4-7",
                  "claude-opus-4.8", "claude-sonnet-5"),
    "gemini": ("gemini-2.5-flash", "gemini-3-pro-preview"),
    "deepseek": ("deepseek-chat", "deepseek-reasoner"),
    "openrouter": ("openai/o3", "anthropic/claude-opus-4.7", "meta-llama/llama-3.3-70b-instruct"),
    "ollama": ("qwen3:8b",),
    "custom": ("Qwen/Qwen3-32B",),
    "simulated": ("careful",),
}
# Extra parameters users set (`seed`, `stop`, `top_p`), and a removal by null.
EXTRAS: tuple[dict[str, Any], ...] = ({}, {"seed": 7, "stop": "END", "top_p": 0.9},
                                      {"temperature": None})


def _critic(vendor: str, model: str, **changes: Any) -> Critic:
    fields: dict[str, Any] = dict(
        name="c", vendor=vendor, model=model, prompt_template="Judge this class: {text}",
        system_prompt="You curate a product taxonomy. " * 200,  # long enough to cache
        base_url="http://127.0.0.1:9/v1" if vendor in ("custom", "simulated") else None,
        price_in_per_mtok=PRICE_IN, price_out_per_mtok=PRICE_OUT,
    )
    fields.update(changes)
    return Critic(**fields)


def _families() -> list[tuple[str, str, dict[str, Any]]]:
    return [(vendor, model, extra) for vendor, models in FAMILIES.items() for model in models
            for extra in EXTRAS]


class _Capture:
    """A mock transport's handler that records what an SDK sends and answers `reply`
    (httpx for the openai SDK, httpx2 for the anthropic one)."""

    def __init__(self, reply: dict[str, Any], http: Any = httpx) -> None:
        self.reply = reply
        self.http = http
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        return self.http.Response(200, json=self.reply)

    def client(self) -> Any:
        return self.http.Client(transport=self.http.MockTransport(self))


def _typed_keys(params_type: Any) -> set[str]:
    return set(get_type_hints(params_type))


@pytest.mark.parametrize(("vendor", "model", "extra"), _families())
def test_every_request_is_what_the_vendors_sdk_sends(vendor: str, model: str,
                                                    extra: dict[str, Any]) -> None:
    critic = _critic(vendor, model, extra=extra)
    body = prepare_call(critic, ITEM, SCALE).body
    if api_of(critic) == "messages":
        params_type = message_create_params.MessageCreateParamsNonStreaming
        assert set(body) <= _typed_keys(params_type), set(body) - _typed_keys(params_type)
        TypeAdapter(params_type).validate_python(body)
        capture = _Capture(anthropic_message(), httpx2)
        client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key=KEY,
                                     http_client=capture.client(), max_retries=0)
        client.messages.create(**body)  # a parameter the SDK does not define: TypeError
        sent = capture.requests[0]
        assert sent.url.path == "/v1/messages"
        assert sent.headers["authorization"] == f"Bearer {KEY}"  # the SDK's way; ours below
        assert sent.headers["anthropic-version"] == ANTHROPIC_VERSION
        # The shared system prompt is marked cacheable; the item's text never is.
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in json.dumps(body["messages"])
    else:
        params_type = completion_create_params.CompletionCreateParamsNonStreaming
        assert set(body) <= _typed_keys(params_type), set(body) - _typed_keys(params_type)
        TypeAdapter(params_type).validate_python(body)
        capture = _Capture({"id": "x", "object": "chat.completion", "created": 0,
                            "model": model, "choices": []})
        client_o = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY,
                                 http_client=capture.client(), max_retries=0)
        client_o.chat.completions.create(**body)
        sent = capture.requests[0]
        assert sent.url.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(sent.content) == body  # byte for byte what the SDK would send

    # What the model families refuse is never sent (the vendors' 400s of 2026).
    bare = model.split("/", 1)[-1]
    reasoning = vendor in ("openai", "openrouter") and bare.startswith(("o3", "o4", "gpt-5")) \
        and "chat" not in bare
    if reasoning:
        assert "temperature" not in body and "top_p" not in body and "stop" not in body
    if vendor == "openai":
        assert "max_tokens" not in body and body["max_completion_tokens"] == critic.max_tokens
    if vendor == "anthropic" or (vendor == "openrouter" and "claude-opus-4.7" in model):
        assert "temperature" not in body and "top_p" not in body
    if extra.get("temperature", 0) is None:
        assert "temperature" not in body
    if reasoning or (vendor == "anthropic" and model >= "claude-opus-4-7"):
        assert request_notes(critic)  # the Panel page says what is not sent


def test_the_runner_sends_what_the_sdk_sends_over_real_http(local_vendor, monkeypatch) -> None:
    """The whole live path (headers, path, body) against the SDK's own request."""
    monkeypatch.setenv(KEY_VAR, KEY)
    server = local_vendor(lambda seen: Reply(200, json.dumps(anthropic_message()).encode()))
    critic = _critic("anthropic", "claude-opus-4-7", base_url=server.base_url,
                     api_key_env=KEY_VAR)
    with CallRunner(retry=RetryPolicy(time_scale=0)) as runner:
        verdict = runner.call(critic, ITEM, SCALE)
    assert verdict.ok and verdict.label == "KEEP"
    seen = server.seen[0]
    headers = {name.lower(): value for name, value in seen.headers.items()}
    assert seen.path == "/v1/messages"
    assert headers["x-api-key"] == KEY and "authorization" not in headers
    # The SDK sends the key as a Bearer token and takes x-api-key as a credential too
    # (anthropic/_client.py); the version is the one it pins.
    assert headers["anthropic-version"] == ANTHROPIC_VERSION == anthropic_constants.ANTHROPIC_API_VERSION
    capture = _Capture(anthropic_message(), httpx2)
    anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"), api_key=KEY,
                        http_client=capture.client(),
                        max_retries=0).messages.create(**json.loads(seen.body))
    assert json.loads(capture.requests[0].content) == json.loads(seen.body)
    assert verdict.raw_request is not None and KEY not in json.dumps(verdict.raw_request)


def test_live_calls_and_batches_send_the_anthropic_version_the_sdk_sends(
        local_vendor, monkeypatch) -> None:
    """One `anthropic-version` for a live call and for a Message Batches request, over real
    HTTP, and it is the value the official SDK sends on both (batches sent 2023-06-01 while
    live calls sent the SDK's)."""
    monkeypatch.setenv(KEY_VAR, KEY)
    live = local_vendor(lambda seen: Reply(200, json.dumps(anthropic_message()).encode()))
    critic = _critic("anthropic", "claude-sonnet-4-6", base_url=live.base_url,
                     api_key_env=KEY_VAR)
    with CallRunner(retry=RetryPolicy(time_scale=0)) as runner:
        assert runner.call(critic, ITEM, SCALE).ok
    batch = local_vendor(lambda seen: Reply(200, json.dumps({"id": "msgbatch_1"}).encode()))
    client = AnthropicBatches(batch.base_url, KEY)
    try:
        client.cancel("msgbatch_1")
    finally:
        client.close()
    sent = [{name.lower(): value for name, value in server.seen[0].headers.items()}
            ["anthropic-version"] for server in (live, batch)]
    capture = _Capture({"id": "msgbatch_1", "type": "message_batch"}, httpx2)
    sdk = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key=KEY,
                              http_client=capture.client(), max_retries=0)
    sdk.messages.batches.cancel("msgbatch_1")
    assert sent == [capture.requests[0].headers["anthropic-version"]] * 2


def _serve(case: Case, local_vendor: Any) -> Any:
    def reply(seen: SeenRequest) -> Reply:
        exchange = case.replies[min(seen.number, len(case.replies)) - 1]
        return Reply(exchange.status, exchange.bytes(), list(exchange.headers))
    return local_vendor(reply)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_documented_replies_read_as_the_vendor_means(case: Case, local_vendor,
                                                     monkeypatch) -> None:
    monkeypatch.setenv(KEY_VAR, KEY)
    server = _serve(case, local_vendor)
    critic = _critic(case.vendor, case.model, base_url=server.base_url, api_key_env=KEY_VAR,
                     extra=case.extra, api=case.api)
    waits: list[float] = []
    gate = CriticGate()
    with CallRunner(retry=RetryPolicy(jitter=0.0), sleep=waits.append) as runner:
        verdict = runner.call(critic, ITEM, SCALE, gate=gate)

        assert (verdict.failure.value if verdict.failure else None) == case.failure, \
            verdict.message
        assert verdict.label == case.label
        assert verdict.attempts == case.attempts == len(server.seen)
        if case.tokens_in is not None or case.tokens_out is not None:
            assert (verdict.tokens_in, verdict.tokens_out) == (case.tokens_in, case.tokens_out)
        if case.tokens_cached is not None:
            assert (verdict.tokens_cached or 0) == case.tokens_cached
        if case.cost_usd is not None:
            assert verdict.cost_usd == pytest.approx(case.cost_usd)
        if case.asked_waits:
            assert waits == list(case.asked_waits)
        if case.reasoning is not None:
            assert verdict.reasoning == case.reasoning
        if case.message_has:
            assert case.message_has in (verdict.message or "")
        if case.adjusted is not None:
            first, second = (json.loads(seen.body) for seen in server.seen[:2])
            assert case.adjusted in first and case.adjusted not in second
            assert gate.adjustments("c") and case.adjusted in gate.adjustments("c")[0]
            assert verdict.raw_request is not None and verdict.raw_request["adjusted"]
        if case.vendor == "anthropic" and case.api is None:
            assert server.seen[0].path == "/v1/messages"

        # The next item: sent unless the critic had to be stopped.
        before = len(server.seen)
        later = runner.call(critic, Item(id="TX-2", fields={"text": "Kettles"}), SCALE,
                            gate=gate)
    if case.stops:
        assert gate.reason("c") is not None and len(server.seen) == before
        assert later.failure is not None and later.failure.value == "critic_error"
    else:
        assert gate.reason("c") is None and len(server.seen) > before
        if case.adjusted is not None:  # remembered for the run: the second item goes adjusted
            assert case.adjusted not in json.loads(server.seen[before].body)


def test_the_same_error_on_three_items_in_a_row_stops_the_critic(local_vendor,
                                                                monkeypatch) -> None:
    """An error that recurs on every request (here a 400 no adjustment can cure) stops the
    critic after K items, with a sentence naming it, instead of grinding through the run."""
    monkeypatch.setenv(KEY_VAR, KEY)
    body = json.dumps({"error": {"message": "Invalid 'response_format': this model does not "
                                 "support json_object (request req_8f2a91).",
                                 "type": "invalid_request_error", "code": None}}).encode()
    server = local_vendor(lambda seen: Reply(400, body))
    critic = _critic("custom", "local-model", base_url=server.base_url, api_key_env=KEY_VAR)
    gate = CriticGate(repeated_errors=3)
    with CallRunner(retry=RetryPolicy(time_scale=0)) as runner:
        verdicts = [runner.call(critic, Item(id=str(i), fields={"text": f"t{i}"}), SCALE,
                                gate=gate) for i in range(6)]
    assert len(server.seen) == 3
    assert [v.failure.value for v in verdicts if v.failure] == ["item_error"] * 3 + [
        "critic_error"] * 3
    reason = gate.reason("c") or ""
    assert "same error on 3 items in a row" in reason and "json_object" in reason


def test_a_rate_limit_never_stops_a_critic(local_vendor, monkeypatch) -> None:
    """Five items each rate-limited past their retries: every item is tried, none stops it."""
    monkeypatch.setenv(KEY_VAR, KEY)
    body = json.dumps({"error": {"message": "Rate limit reached. You exceeded your current "
                                 "quota, please check your plan and billing details.",
                                 "type": "requests", "code": "rate_limit_exceeded"}}).encode()
    server = local_vendor(lambda seen: Reply(429, body))
    critic = _critic("openai", "gpt-4o", base_url=server.base_url, api_key_env=KEY_VAR)
    gate = CriticGate(repeated_errors=3)
    policy = RetryPolicy(time_scale=0, max_rate_limit_retries=1)
    with CallRunner(retry=policy) as runner:
        verdicts = [runner.call(critic, Item(id=str(i), fields={"text": f"t{i}"}), SCALE,
                                gate=gate) for i in range(5)]
    assert gate.reason("c") is None
    assert [v.failure.value for v in verdicts if v.failure] == ["error"] * 5
    assert len(server.seen) == 10  # each item: the first try and its one retry


def test_every_preset_has_a_case_or_a_family() -> None:
    covered = {case.vendor for case in CASES} | set(FAMILIES)
    assert set(PRESETS) <= covered


# Batch result lines as the vendors document them:
# https://platform.openai.com/docs/guides/batch#5-retrieve-the-results (output and error file)
# https://docs.claude.com/en/docs/build-with-claude/batch-processing#retrieving-batch-results
BATCH_LINES: tuple[tuple[str, dict[str, Any], str | None, str | None], ...] = (
    ("openai", {"id": "batch_req_123", "custom_id": "request-2", "response": {
        "status_code": 200, "request_id": "req_123",
        "body": {"id": "chatcmpl-123", "object": "chat.completion", "created": 1711652795,
                 "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "message": {
                     "role": "assistant", "content": '{"label": "MERGE"}'},
                     "logprobs": None, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 22, "completion_tokens": 2, "total_tokens": 24}}},
        "error": None}, "MERGE", None),
    ("openai", {"id": "batch_req_456", "custom_id": "request-1", "response": None,
                "error": {"code": "batch_expired",
                          "message": "This request could not be executed before the "
                                     "completion window expired."}}, None, "not run"),
    ("openai", {"id": "batch_req_789", "custom_id": "request-3", "response": {
        "status_code": 400, "request_id": "req_789", "body": {"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                       "Use 'max_completion_tokens' instead.", "type": "invalid_request_error",
            "param": "max_tokens", "code": "unsupported_parameter"}}}, "error": None},
     None, "item_error"),
    ("anthropic", {"custom_id": "my-second-request", "result": {
        "type": "succeeded", "message": {
            "id": "msg_014VwiXbi91y3JMjcpyGBHX5", "type": "message", "role": "assistant",
            "model": "claude-opus-4-7", "content": [
                {"type": "thinking", "thinking": "Shoppers look for it.", "signature": "x"},
                {"type": "text", "text": '{"label": "KEEP"}'}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 36,
                      "cache_read_input_tokens": 1500, "cache_creation_input_tokens": 0}}}},
     "KEEP", None),
    ("anthropic", {"custom_id": "my-third-request", "result": {
        "type": "succeeded", "message": {
            "id": "msg_3", "type": "message", "role": "assistant", "model": "claude-opus-4-7",
            "content": [{"type": "text", "text": '{"label": "REJECT"}'}],
            "stop_reason": "refusal", "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 5}}}}, None, "refusal"),
    ("anthropic", {"custom_id": "my-fifth-request", "result": {
        "type": "succeeded", "message": {
            "id": "msg_5", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": '{"label": "KEEP", "reasoning": "Shop'}],
            "stop_reason": "model_context_window_exceeded", "stop_sequence": None,
            "usage": {"input_tokens": 199_000, "output_tokens": 1000}}}}, None, "truncated"),
    ("anthropic", {"custom_id": "my-sixth-request", "result": {
        "type": "succeeded", "message": {
            "id": "msg_6", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": '{"label": "KE'}],
            "stop_reason": "max_tokens", "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 300}}}}, None, "truncated"),
    ("anthropic", {"custom_id": "my-first-request", "result": {
        "type": "errored", "error": {"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "max_completion_tokens: Extra inputs are not permitted"}}}},
     None, "item_error"),
    ("anthropic", {"custom_id": "my-fourth-request", "result": {"type": "expired"}},
     None, "not run"),
)


@pytest.mark.parametrize(("api", "line", "label", "failure"), BATCH_LINES)
def test_documented_batch_result_lines_read_as_live_replies(api: str, line: dict[str, Any],
                                                            label: str | None,
                                                            failure: str | None) -> None:
    from judging.engine.batches.batch_results import parse_results
    from judging.engine.parsing import parse_reply
    from judging.errors import CallFailure

    (result,) = parse_results(api, [json.dumps(line)])  # type: ignore[arg-type]
    if failure == "not run":
        assert result.not_run is not None and "resume" in result.not_run
        return
    try:
        parsed = parse_reply(result.status, result.body, SCALE)
    except CallFailure as error:
        assert error.kind == failure
        return
    assert failure is None and parsed.label == label
    if api == "anthropic":  # thinking kept, cached tokens counted as the live reader does
        assert parsed.reasoning == "Shoppers look for it."
        assert parsed.usage is not None and parsed.usage.cached == 1500
        assert parsed.tokens_in == 11 + 1500


@pytest.mark.parametrize("extra", [{}, {"stop": "END", "reasoning_effort": "low", "user": "u1",
                                        "max_completion_tokens": 300, "seed": 3, "n": 1,
                                        "logprobs": True, "temperature": 0.2}])
@pytest.mark.parametrize("vendor", ["anthropic", "simulated"])
def test_anthropic_batch_lines_carry_only_messages_api_fields(vendor: str,
                                                              extra: dict[str, Any]) -> None:
    """A batch line for Anthropic's Message Batches is the SDK's `Request` type: chat-only
    keys of `extra` (OpenAI's stop, reasoning_effort, user, max_completion_tokens, seed, n,
    logprobs) are never copied into its params, whatever API the critic speaks live."""
    from anthropic.types.messages import batch_create_params

    from judging.engine.batches.lines import batch_line

    critic = _critic(vendor, "claude-haiku-4-5", extra=extra, mode="batch",
                     batch_api="anthropic")
    line = batch_line("anthropic", prepare_call(critic, ITEM, SCALE))
    request_type = batch_create_params.Request
    TypeAdapter(request_type).validate_python(line)
    params_type = message_create_params.MessageCreateParamsNonStreaming
    assert set(line["params"]) <= _typed_keys(params_type), set(line["params"]) - _typed_keys(
        params_type)
    if extra:
        assert line["params"]["stop_sequences"] == ["END"]
        assert line["params"]["max_tokens"] == 300


def test_a_vendor_refusing_the_replacement_too_ends_as_an_error(local_vendor,
                                                                 monkeypatch) -> None:
    """A gateway that says "use max_completion_tokens" and then "use max_tokens": the call
    renames once, and the second refusal is the item's error (never a loop of renames)."""
    monkeypatch.setenv(KEY_VAR, KEY)

    def reply(seen: SeenRequest) -> Reply:
        body = json.loads(seen.body)
        name, other = (("max_tokens", "max_completion_tokens") if "max_tokens" in body
                       else ("max_completion_tokens", "max_tokens"))
        return Reply(400, json.dumps({"error": {
            "message": f"Unsupported parameter: '{name}' is not supported with this model. "
                       f"Use '{other}' instead.", "type": "invalid_request_error",
            "param": name, "code": "unsupported_parameter"}}).encode())

    server = local_vendor(reply)
    critic = _critic("custom", "fickle", base_url=server.base_url, api_key_env=KEY_VAR)
    with CallRunner(retry=RetryPolicy(time_scale=0)) as runner:
        verdict = runner.call(critic, ITEM, SCALE)
    assert verdict.failure is not None and verdict.failure.value == "item_error"
    assert len(server.seen) == 2


@pytest.mark.parametrize(("vendor", "model", "refused"), [
    ("deepseek", "deepseek-reasoner", True),  # "will trigger an error" (DeepSeek's guide)
    ("openai", "o3", True),  # reasoning models answer 400 unsupported_parameter
    ("openrouter", "openai/gpt-5.1", True),
    ("deepseek", "deepseek-chat", False),
    ("openai", "gpt-4.1-mini", False),
])
def test_logprobs_a_model_errors_on_are_refused_when_the_panel_is_built(
        vendor: str, model: str, refused: bool) -> None:
    """https://api-docs.deepseek.com/guides/reasoning_model (logprobs / top_logprobs on
    deepseek-reasoner "will trigger an error"): the panel is refused with a sentence before any
    call, instead of a run whose every item fails."""
    from judging.errors import ConfigError
    from judging.panel.panel_model import Panel

    def build() -> Panel:
        return Panel(name="p", scale=SCALE,
                     critics=[_critic(vendor, model, logprobs=True, name="r")])

    if refused:
        with pytest.raises(ConfigError, match=r"critics\[0\]\.logprobs: .*errors when asked"):
            build()
    else:
        assert build().critics[0].logprobs
