"""The simulator's table of refused parameters, read family by family (`judging.simulator.sim_rules`).

The SDK tests (tests/test_simulator_sdk.py) show the refusals reach a client as the vendors'
errors; these pin which model names fall in which family, including the names that look alike
but are not (gpt-5-chat-latest, claude-opus-4-6, a date where a minor version would be).
"""

from __future__ import annotations

import httpx
import pytest

from judging.simulator.sim_rules import (
    chat_refusal,
    claude_refuses_sampling,
    is_openai_reasoning,
    messages_refusal,
)
from tests.fixtures_simulator import SimulatorFactory

HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(("model", "reasoning"), [
    ("o1", True), ("o1-mini", True), ("o3", True), ("o3-mini", True), ("o3-pro", True),
    ("o4-mini", True), ("o4-mini-high", True), ("gpt-5", True), ("gpt-5.1", True),
    ("gpt-5-mini", True), ("gpt-5-nano", True), ("gpt-5.2", True), ("gpt-5.2-pro", True),
    ("GPT-5", True), ("gpt-5-2025-08-07", True),
    ("gpt-5-chat-latest", False), ("gpt-5.1-chat-latest", False), ("gpt-4.1", False),
    ("gpt-4o", False), ("gpt-50", False), ("openai/o3", False), ("ollama-o3", False),
    ("sim-careful", False),
])
def test_openai_reasoning_families(model: str, reasoning: bool) -> None:
    assert is_openai_reasoning(model) is reasoning
    refused = chat_refusal({"model": model, "messages": HI, "max_tokens": 10})
    assert (refused is not None) is reasoning


@pytest.mark.parametrize(("model", "refuses"), [
    ("claude-opus-4-7", True), ("claude-opus-4.7", True), ("claude-opus-4-7-20260416", True),
    ("claude-sonnet-4-7", True), ("claude-haiku-4-9", True), ("claude-opus-4-10", True),
    ("claude-sonnet-5", True), ("claude-opus-5-1", True), ("claude-haiku-5-0-20270101", True),
    ("claude-opus-4-6", False), ("claude-opus-4-1-20250805", False),
    ("claude-opus-4-20250514", False), ("claude-sonnet-4-5", False), ("claude-haiku-4-5", False),
    ("claude-3-7-sonnet-20250219", False), ("claude-3-5-haiku-latest", False),
    ("anthropic/claude-opus-4.7", False),
])
def test_claude_families_that_refuse_temperature(model: str, refuses: bool) -> None:
    assert claude_refuses_sampling(model) is refuses
    native = messages_refusal({"model": model, "max_tokens": 10, "messages": HI,
                               "temperature": 0.0})
    assert (native is not None) is refuses
    if native is not None:
        status, body = native
        assert status == 400 and body["error"]["message"] == (
            "`temperature` is deprecated for this model.")


def test_a_reasoning_model_takes_the_default_temperature_and_top_p() -> None:
    base = {"model": "o3", "messages": HI, "max_completion_tokens": 10}
    assert chat_refusal({**base, "temperature": 1, "top_p": 1.0}) is None
    assert chat_refusal({**base, "max_tokens": None, "logprobs": False}) is None
    status, body = chat_refusal({**base, "temperature": 0.0}) or (0, {})
    assert status == 400 and "does not support 0.0 with" in body["error"]["message"]


def test_thinking_budget_rules() -> None:
    base = {"model": "claude-opus-4-6", "messages": HI}
    assert messages_refusal({**base, "max_tokens": 4000, "temperature": 1,
                             "thinking": {"type": "enabled", "budget_tokens": 1024}}) is None
    for request, words in (
            ({"max_tokens": 4000, "thinking": {"type": "enabled", "budget_tokens": 500}},
             "greater than or equal to 1024"),
            ({"max_tokens": 1024, "thinking": {"type": "enabled", "budget_tokens": 1024}},
             "`max_tokens` must be greater than `thinking.budget_tokens`")):
        status, body = messages_refusal({**base, **request}) or (0, {})
        assert status == 400 and words in body["error"]["message"]
    # Adaptive thinking came with 4.6; from 4.7 on it is the only kind.
    older = {"model": "claude-sonnet-4-5", "messages": HI, "max_tokens": 4000,
             "thinking": {"type": "adaptive"}}
    status, body = messages_refusal(older) or (0, {})
    assert body["error"]["message"] == "adaptive thinking is not supported on this model"
    assert messages_refusal({**older, "model": "claude-opus-4-7"}) is None


def test_a_refusal_is_counted_as_a_bad_request_and_never_reaches_a_critic(
        simulator_factory: SimulatorFactory) -> None:
    sim = simulator_factory()
    with httpx.Client(timeout=10) as client:
        for model in ("o3", "gpt-5.1"):
            reply = client.post(f"{sim.base_url}/chat/completions", json={
                "model": model, "messages": HI, "max_tokens": 10, "temperature": 0})
            assert reply.status_code == 400
            assert reply.json()["error"]["code"] == "unsupported_parameter"
    stats = sim.stats()
    assert stats["bad_requests"] == 2 and stats["successes"] == 0 and stats["failures"] == 0
    assert stats["outcomes"] == {"unsupported_parameter": 2} and stats["distinct_requests"] == 0
