"""The official `openai` and `anthropic` SDKs pointed at the simulator on 127.0.0.1 work.

The SDKs are the oracle for what a vendor sends and what a client may expect back: each reply
is read by the SDK as its users would, and the raw bodies are also validated against the SDK's
response types (the SDKs themselves build their objects without validation, so a missing
required field would otherwise pass unseen).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic.types import Message, MessageStreamEvent
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
from openai.types import Batch, FileObject
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from judging.panel.critics import Critic
from judging.scales import Scale
from judging.simulator.sim_server import Profile, SimulatorServer

LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]
SCALE = Scale(kind="nominal", labels=LABELS)
CRITIC = Critic(name="c", model="m", prompt_template="Class: {name}\nParent: {parent}\nDecide.")
# Long enough (over 1024 estimated tokens) for both vendors' prompt caches.
RUBRIC = "Judge the class against the taxonomy's rules. " + " ".join(
    f"Rule {n}: a class must name one kind of product and sit under the right parent."
    for n in range(80))


def chat_messages(name: str) -> list[dict[str, str]]:
    """Exactly what a critic sends."""
    return CRITIC.build_messages({"name": name, "parent": "Audio"}, SCALE)


def anthropic_params(name: str) -> tuple[str, list[dict[str, Any]]]:
    system, user = chat_messages(name)
    return system["content"], [{"role": "user", "content": user["content"]}]


@pytest.fixture
def sim_factory() -> Iterator[Callable[..., SimulatorServer]]:
    servers: list[SimulatorServer] = []

    def make(**options: Any) -> SimulatorServer:
        options.setdefault("latency_ms", 1)
        options.setdefault("batch_seconds", 0.05)
        server = SimulatorServer(**options).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def sim(sim_factory: Callable[..., SimulatorServer]) -> SimulatorServer:
    return sim_factory()


def oai(sim: SimulatorServer) -> openai.OpenAI:
    # The openai SDK wants the base URL with /v1; it adds /chat/completions, /batches ...
    return openai.OpenAI(base_url=sim.base_url, api_key="test", max_retries=0)


def claude(sim: SimulatorServer) -> anthropic.Anthropic:
    # The anthropic SDK's paths start with /v1: it wants the server's root.
    return anthropic.Anthropic(base_url=sim.root_url, api_key="test", max_retries=0)


def reset(sim: SimulatorServer) -> None:
    """Forget every request seen, so the same request draws the same reply again."""
    httpx.post(f"{sim.root_url}/stats/reset").raise_for_status()


# -- chat completions ---------------------------------------------------------------------------


def test_a_chat_completion_is_read_by_the_openai_sdk(sim: SimulatorServer) -> None:
    completion = oai(sim).chat.completions.create(
        model="gpt-4.1", messages=chat_messages("Earbuds"), max_tokens=200,  # type: ignore[arg-type]
        temperature=0, logprobs=True, top_logprobs=3)
    assert isinstance(completion, ChatCompletion)
    verdict = json.loads(completion.choices[0].message.content or "")
    assert verdict["label"] in LABELS
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    assert completion.choices[0].logprobs is not None

    raw = httpx.post(f"{sim.base_url}/chat/completions", json={
        "model": "gpt-4.1", "messages": chat_messages("Earbuds"), "max_tokens": 200}).json()
    assert ChatCompletion.model_validate(raw).choices[0].message.role == "assistant"


def test_a_streamed_chat_completion_yields_the_same_text_in_chunks(sim: SimulatorServer) -> None:
    client = oai(sim)
    plain = client.chat.completions.create(model="gpt-4.1", messages=chat_messages("Tweeters"),  # type: ignore[arg-type]
                                           max_tokens=200)
    reset(sim)
    chunks = list(client.chat.completions.create(
        model="gpt-4.1", messages=chat_messages("Tweeters"), max_tokens=200,  # type: ignore[arg-type]
        stream=True, stream_options={"include_usage": True}))
    assert len(chunks) > 3 and all(isinstance(c, ChatCompletionChunk) for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain.choices[0].message.content
    finals = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finals[-1] == "stop" and set(finals[:-1]) == {None}
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == plain.usage.total_tokens  # type: ignore[union-attr]


def test_a_streamed_completion_with_logprobs_carries_them_token_by_token(
        sim: SimulatorServer) -> None:
    client = oai(sim)
    ask: dict[str, Any] = {"model": "gpt-4.1", "messages": chat_messages("Tweeters"),
                           "max_tokens": 200, "logprobs": True, "top_logprobs": 4}
    plain = client.chat.completions.create(**ask)
    reset(sim)
    chunks = [c for c in client.chat.completions.create(**ask, stream=True) if c.choices]
    pieces = [c for c in chunks if c.choices[0].delta.content]
    assert "".join(c.choices[0].delta.content or "" for c in pieces) == (
        plain.choices[0].message.content)
    streamed = [t for c in pieces for t in c.choices[0].logprobs.content]  # type: ignore[union-attr]
    assert streamed == plain.choices[0].logprobs.content  # type: ignore[union-attr]


def test_a_streamed_request_the_model_refuses_raises_before_any_chunk(
        sim: SimulatorServer) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        list(oai(sim).chat.completions.create(model="o3", messages=chat_messages("x"),  # type: ignore[arg-type]
                                              max_tokens=50, stream=True))
    assert refused.value.code == "unsupported_parameter"


# -- parameters the vendors refuse --------------------------------------------------------------


@pytest.mark.parametrize("model", ["o1", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5.1",
                                   "gpt-5-mini", "gpt-5.2", "gpt-5.2-pro"])
def test_openai_reasoning_models_refuse_max_tokens_and_temperature(
        sim: SimulatorServer, model: str) -> None:
    client = oai(sim)
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model=model, messages=chat_messages("x"), max_tokens=50)  # type: ignore[arg-type]
    assert (refused.value.code, refused.value.param) == ("unsupported_parameter", "max_tokens")
    assert refused.value.body == {  # OpenAI's body, word for word
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                   "Use 'max_completion_tokens' instead.",
        "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}

    for name, value, shown in (("temperature", 0, "0"), ("temperature", 0.2, "0.2"),
                               ("top_p", 0.5, "0.5")):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model=model, messages=chat_messages("x"),  # type: ignore[arg-type]
                                           max_completion_tokens=50, **{name: value})
        assert (refused.value.code, refused.value.param) == ("unsupported_value", name)
        assert refused.value.body["message"] == (  # type: ignore[index]
            f"Unsupported value: '{name}' does not support {shown} with this model. "
            "Only the default (1) value is supported.")
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model=model, messages=chat_messages("x"),  # type: ignore[arg-type]
                                       max_completion_tokens=50, logprobs=True)
    assert (refused.value.code, refused.value.param) == ("unsupported_parameter", "logprobs")

    # What these models do take.
    ok = client.chat.completions.create(model=model, messages=chat_messages("x"),  # type: ignore[arg-type]
                                        max_completion_tokens=300, reasoning_effort="low",
                                        temperature=1)
    assert json.loads(ok.choices[0].message.content or "")["label"] in LABELS
    stats = sim.stats()
    assert stats["outcomes"]["unsupported_parameter"] == 5 and stats["successes"] == 1


@pytest.mark.parametrize("model", ["gpt-5-chat-latest", "gpt-4.1", "gpt-4o-mini", "o-custom"])
def test_chat_models_take_max_tokens_and_temperature(sim: SimulatorServer, model: str) -> None:
    ok = oai(sim).chat.completions.create(model=model, messages=chat_messages("x"),  # type: ignore[arg-type]
                                          max_tokens=200, temperature=0, logprobs=True)
    assert ok.choices[0].finish_reason == "stop"


def test_deepseek_reasoner_refuses_logprobs_deepseek_chat_takes_them(
        sim: SimulatorServer) -> None:
    client = oai(sim)
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="deepseek-reasoner", messages=chat_messages("x"),  # type: ignore[arg-type]
                                       max_tokens=200, logprobs=True, top_logprobs=3)
    assert "does not support the parameter `logprobs`" in refused.value.message
    # temperature is accepted and ignored, as DeepSeek documents.
    client.chat.completions.create(model="deepseek-reasoner", messages=chat_messages("x"),  # type: ignore[arg-type]
                                   max_tokens=200, temperature=0)
    client.chat.completions.create(model="deepseek-chat", messages=chat_messages("x"),  # type: ignore[arg-type]
                                   max_tokens=200, logprobs=True)


@pytest.mark.parametrize("model", ["claude-opus-4-7", "claude-opus-4.7", "claude-sonnet-5",
                                   "claude-haiku-4-8-20260601", "claude-opus-5-1"])
def test_claude_opus_47_and_later_refuse_temperature(sim: SimulatorServer, model: str) -> None:
    system, messages = anthropic_params("x")
    with pytest.raises(anthropic.BadRequestError) as refused:
        # anthropic 2.14 has no temperature argument at all: a client sends it in the body.
        claude(sim).messages.create(model=model, max_tokens=200, system=system,
                                    messages=messages, extra_body={"temperature": 0})  # type: ignore[arg-type]
    body = refused.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"] == {"type": "invalid_request_error",
                             "message": "`temperature` is deprecated for this model."}
    assert str(body["request_id"]).startswith("req_")

    # The same model on the OpenAI-compatible route: OpenAI's error shape.
    with pytest.raises(openai.BadRequestError) as compat:
        oai(sim).chat.completions.create(model=model, messages=chat_messages("x"),  # type: ignore[arg-type]
                                         max_tokens=200, temperature=0)
    assert compat.value.body["message"] == "`temperature` is deprecated for this model."  # type: ignore[index]
    assert compat.value.param == "temperature"
    # Without temperature it answers.
    reply = claude(sim).messages.create(model=model, max_tokens=200, system=system,
                                        messages=messages)  # type: ignore[arg-type]
    assert reply.stop_reason == "end_turn"


@pytest.mark.parametrize("model", ["claude-opus-4-6", "claude-sonnet-4-6",
                                   "claude-3-7-sonnet-20250219", "claude-opus-4-20250514"])
def test_earlier_claudes_take_temperature(sim: SimulatorServer, model: str) -> None:
    system, messages = anthropic_params("x")
    reply = claude(sim).messages.create(model=model, max_tokens=200, system=system,
                                        messages=messages, extra_body={"temperature": 0})  # type: ignore[arg-type]
    assert json.loads(reply.content[0].text)["label"] in LABELS  # type: ignore[union-attr]


# -- Anthropic's Messages API -------------------------------------------------------------------


def test_messages_create_returns_a_message_holding_the_verdict(sim: SimulatorServer) -> None:
    system, messages = anthropic_params("Soundbars")
    message = claude(sim).messages.create(model="claude-opus-4-7", max_tokens=300,
                                          system=system, messages=messages)  # type: ignore[arg-type]
    assert isinstance(message, Message) and message.role == "assistant"
    assert message.model == "claude-opus-4-7" and message.id.startswith("msg_")
    (block,) = message.content
    assert block.type == "text" and json.loads(block.text)["label"] in LABELS
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert (message.usage.cache_read_input_tokens,
            message.usage.cache_creation_input_tokens) == (0, 0)

    # The same request on the chat route gets the same verdict: one set of critics.
    reset(sim)
    chat = oai(sim).chat.completions.create(model="claude-opus-4-7", max_tokens=300,
                                            messages=chat_messages("Soundbars"))  # type: ignore[arg-type]
    assert chat.choices[0].message.content == block.text

    raw = httpx.post(f"{sim.root_url}/v1/messages", headers={
        "x-api-key": "test", "anthropic-version": "2023-06-01"}, json={
        "model": "claude-opus-4-7", "max_tokens": 300, "messages": messages,
        "system": [{"type": "text", "text": system}]})
    assert Message.model_validate(raw.json()).content[0].type == "text"


def test_thinking_comes_first_as_a_thinking_block(sim: SimulatorServer) -> None:
    system, messages = anthropic_params("Soundbars")
    client = claude(sim)
    message = client.messages.create(
        model="claude-opus-4-6", max_tokens=4000, system=system, messages=messages,  # type: ignore[arg-type]
        thinking={"type": "adaptive"})
    thinking, text = message.content
    assert thinking.type == "thinking" and thinking.thinking and thinking.signature
    assert text.type == "text" and json.loads(text.text)["label"] in LABELS

    # From Opus 4.7 on: adaptive only, and the thinking text is omitted unless asked for.
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="claude-opus-4-7", max_tokens=4000, system=system,
                               messages=messages,  # type: ignore[arg-type]
                               thinking={"type": "enabled", "budget_tokens": 2000})
    assert '"thinking.type.enabled" is not supported' in refused.value.message
    omitted = client.messages.create(model="claude-opus-4-7", max_tokens=4000, system=system,
                                     messages=messages, thinking={"type": "adaptive"})  # type: ignore[arg-type]
    assert omitted.content[0].type == "thinking" and omitted.content[0].thinking == ""
    shown = client.messages.create(model="claude-opus-4-7", max_tokens=4000, system=system,
                                   messages=messages,  # type: ignore[arg-type]
                                   thinking={"type": "adaptive", "display": "summarized"})
    assert shown.content[0].thinking  # type: ignore[union-attr]


@pytest.mark.parametrize(("body", "headers", "status", "message"), [
    ({"model": "claude-opus-4-6", "messages": [{"role": "user", "content": "hi"}]}, None, 400,
     "max_tokens: Field required"),
    ({"model": "claude-opus-4-6", "max_tokens": 10, "messages": [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}, None,
     400, 'messages.0.role: Unexpected role "system". The Messages API accepts a top-level '
          '`system` parameter, not "system" as an input message role.'),
    ({"model": "claude-opus-4-6", "max_tokens": 10, "response_format": {"type": "json_object"},
      "messages": [{"role": "user", "content": "hi"}]}, None, 400,
     "response_format: Extra inputs are not permitted"),
    ({"model": "claude-opus-4-6", "max_tokens": 2000, "temperature": 0,
      "thinking": {"type": "enabled", "budget_tokens": 1024},
      "messages": [{"role": "user", "content": "hi"}]}, None, 400,
     "`temperature` may only be set to 1 when thinking is enabled."),
    ({"model": "claude-opus-4-6", "max_tokens": 10, "messages": [
        {"role": "user", "content": "hi"}]}, {"anthropic-version": "2023-06-01"}, 401,
     "x-api-key header is required"),
])
def test_the_messages_api_refuses_what_anthropic_refuses(
        sim: SimulatorServer, body: dict[str, Any], headers: dict[str, str] | None, status: int,
        message: str) -> None:
    sent = headers if headers is not None else {"x-api-key": "t", "anthropic-version": "2023-06-01"}
    reply = httpx.post(f"{sim.root_url}/v1/messages", json=body, headers=sent)
    assert reply.status_code == status
    error = reply.json()
    assert error["type"] == "error" and error["error"]["message"].startswith(message)
    assert sim.stats()["successes"] == 0


def test_streamed_messages_give_anthropics_events_and_the_same_text(sim: SimulatorServer) -> None:
    system, messages = anthropic_params("Turntables")
    client = claude(sim)
    plain = client.messages.create(model="claude-opus-4-7", max_tokens=4000, system=system,
                                   messages=messages,  # type: ignore[arg-type]
                                   thinking={"type": "adaptive", "display": "summarized"})
    reset(sim)
    events: list[MessageStreamEvent] = list(client.messages.create(
        model="claude-opus-4-7", max_tokens=4000, system=system, messages=messages,  # type: ignore[arg-type]
        thinking={"type": "adaptive", "display": "summarized"}, stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 2
    reset(sim)
    with client.messages.stream(model="claude-opus-4-7", max_tokens=4000, system=system,
                                messages=messages,  # type: ignore[arg-type]
                                thinking={"type": "adaptive", "display": "summarized"}) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == plain.content[1].text  # type: ignore[union-attr]
    assert [b.model_dump(exclude={"parsed_output"}) for b in final.content] == [
        b.model_dump() for b in plain.content]
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == plain.usage.output_tokens


def test_failures_are_anthropic_shaped(sim_factory: Callable[..., SimulatorServer]) -> None:
    sim = sim_factory(profiles={"claude-busy": Profile(rate_429=1.0, retry_after_ms=2000),
                                "claude-down": Profile(rate_500=1.0),
                                "claude-prude": Profile(rate_refusal=1.0),
                                "claude-terse": Profile(rate_truncated=1.0)})
    system, messages = anthropic_params("x")
    client = claude(sim)

    def ask(model: str) -> Message:
        return client.messages.create(model=model, max_tokens=200, system=system,
                                      messages=messages)  # type: ignore[arg-type]

    with pytest.raises(anthropic.RateLimitError) as limited:
        ask("claude-busy")
    assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert limited.value.response.headers["retry-after"] == "2"
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        ask("claude-down")
    assert overloaded.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    assert ask("claude-prude").stop_reason == "refusal"
    assert ask("claude-terse").stop_reason == "max_tokens"


# -- prompt caching ----------------------------------------------------------------------------


def test_openai_reports_a_repeated_long_prefix_as_cached(sim: SimulatorServer) -> None:
    client = oai(sim)

    def ask(name: str, system: str) -> Any:
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": chat_messages(name)[1]["content"]}]
        return client.chat.completions.create(model="gpt-4.1", messages=messages,  # type: ignore[arg-type]
                                              max_tokens=200).usage

    first, second = ask("Earbuds", RUBRIC), ask("Tweeters", RUBRIC)
    assert first.prompt_tokens_details.cached_tokens == 0
    cached = second.prompt_tokens_details.cached_tokens
    # The shared rubric, in 128-token steps from 1024; prompt_tokens still counts it.
    assert cached >= 1024 and cached % 128 == 0 and cached <= len(RUBRIC) / 4
    assert second.prompt_tokens > cached
    # A short prefix is never cached.
    short = [ask(name, "Judge the class.") for name in ("a", "b")]
    assert [u.prompt_tokens_details.cached_tokens for u in short] == [0, 0]
    assert sim.stats()["tokens_cached"] == cached


def test_anthropic_reads_a_marked_prefix_from_cache_the_second_time(
        sim: SimulatorServer) -> None:
    client = claude(sim)

    def ask(name: str, rubric: str) -> Any:
        _, messages = anthropic_params(name)
        return client.messages.create(
            model="claude-opus-4-7", max_tokens=300, messages=messages,  # type: ignore[arg-type]
            system=[{"type": "text", "text": rubric, "cache_control": {"type": "ephemeral"}}]
        ).usage

    first, second = ask("Earbuds", RUBRIC), ask("Tweeters", RUBRIC)
    written = first.cache_creation_input_tokens
    assert written == -(-len(RUBRIC) // 4) and first.cache_read_input_tokens == 0
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens) == (written, 0)
    # input_tokens counts only what follows the breakpoint.
    assert 0 < second.input_tokens < 300
    # Below Anthropic's minimum nothing is cached, however often it is sent.
    small = [ask(name, "Judge the class.") for name in ("a", "b")]
    assert {(u.cache_read_input_tokens, u.cache_creation_input_tokens) for u in small} == {(0, 0)}


# -- OpenAI's files and batches -----------------------------------------------------------------


def _wait(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, "the simulated batch never ended"
        time.sleep(0.05)


def test_files_and_batches_through_the_openai_sdk(sim: SimulatorServer) -> None:
    client = oai(sim)
    lines = [{"custom_id": f"r{n}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "gpt-4.1", "messages": chat_messages(f"class {n}"),
                       "max_tokens": 200}} for n in range(3)]
    lines.append({"custom_id": "refused", "method": "POST", "url": "/v1/chat/completions",
                  "body": {"model": "o3", "messages": chat_messages("x"), "max_tokens": 200}})
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    uploaded = client.files.create(file=("requests.jsonl", data), purpose="batch")
    assert (uploaded.filename, uploaded.bytes, uploaded.purpose) == (
        "requests.jsonl", len(data), "batch")
    FileObject.model_validate(httpx.get(f"{sim.base_url}/files/{uploaded.id}").json())
    assert client.files.retrieve(uploaded.id).status == "processed"

    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    assert batch.status == "in_progress" and batch.input_file_id == uploaded.id
    _wait(lambda: client.batches.retrieve(batch.id).status == "completed")
    done = client.batches.retrieve(batch.id)
    Batch.model_validate(httpx.get(f"{sim.base_url}/batches/{batch.id}").json())
    assert done.request_counts is not None and (
        done.request_counts.completed, done.request_counts.failed) == (3, 1)
    assert done.completed_at is not None and done.output_file_id and done.error_file_id

    other = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    listed = client.batches.list(limit=1)
    assert [b.id for b in listed.data] == [other.id] and listed.has_more
    assert [b.id for b in client.batches.list()] == [other.id, batch.id]  # pages followed
    raw_list = httpx.get(f"{sim.base_url}/batches").json()
    assert raw_list["object"] == "list" and raw_list["first_id"] == other.id
    assert raw_list["last_id"] == batch.id and raw_list["has_more"] is False
    for item in raw_list["data"]:
        Batch.model_validate(item)

    output = [json.loads(line) for line in
              client.files.content(done.output_file_id).text.splitlines()]
    assert sorted(line["custom_id"] for line in output) == ["r0", "r1", "r2"]
    for line in output:
        ChatCompletion.model_validate(line["response"]["body"])
    (error,) = [json.loads(line) for line in
                client.files.content(done.error_file_id).text.splitlines()]
    assert error["custom_id"] == "refused" and error["response"]["status_code"] == 400
    assert error["response"]["body"]["error"]["code"] == "unsupported_parameter"
    assert client.files.retrieve(done.output_file_id).purpose == "batch_output"


# -- Anthropic's message batches ---------------------------------------------------------------


def test_message_batches_through_the_anthropic_sdk(sim: SimulatorServer) -> None:
    client = claude(sim)
    system, messages = anthropic_params("Soundbars")
    params = {"model": "claude-opus-4-7", "max_tokens": 300, "system": system,
              "messages": messages}
    created = client.messages.batches.create(requests=[
        {"custom_id": "ok", "params": params},  # type: ignore[typeddict-item]
        {"custom_id": "hot", "params": {**params, "temperature": 0}},  # type: ignore[typeddict-item]
        {"custom_id": "openai-only", "params": {**params, "model": "claude-opus-4-6",  # type: ignore[typeddict-item]
                                                "max_completion_tokens": 300}},
    ])
    assert created.processing_status == "in_progress" and created.results_url is None
    MessageBatch.model_validate(
        httpx.get(f"{sim.root_url}/v1/messages/batches/{created.id}").json())
    _wait(lambda: client.messages.batches.retrieve(created.id).processing_status == "ended")
    ended = client.messages.batches.retrieve(created.id)
    assert ended.ended_at is not None and ended.expires_at > ended.created_at
    assert (ended.request_counts.succeeded, ended.request_counts.errored) == (1, 2)

    listed = client.messages.batches.list()
    assert [b.id for b in listed.data] == [created.id]
    raw_list = httpx.get(f"{sim.root_url}/v1/messages/batches").json()
    assert (raw_list["first_id"], raw_list["last_id"], raw_list["has_more"]) == (
        created.id, created.id, False)

    results = {r.custom_id: r for r in client.messages.batches.results(created.id)}
    assert set(results) == {"ok", "hot", "openai-only"}
    ok = results["ok"].result
    assert ok.type == "succeeded"
    assert json.loads(ok.message.content[0].text)["label"] in LABELS  # type: ignore[union-attr]
    hot = results["hot"].result
    assert hot.type == "errored" and hot.error.error.type == "invalid_request_error"  # type: ignore[union-attr]
    assert hot.error.error.message == "`temperature` is deprecated for this model."  # type: ignore[union-attr]
    assert results["openai-only"].result.error.error.message == (  # type: ignore[union-attr]
        "max_completion_tokens: Extra inputs are not permitted")
    raw = httpx.get(ended.results_url or "").text
    for line in raw.splitlines():
        MessageBatchIndividualResponse.model_validate_json(line)
