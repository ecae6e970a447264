"""The judges people pick in 2026, run end to end against a simulator that refuses what the
vendors refuse (`judging.simulator.sim_rules`, written from the vendors' documents, not from our
client): every item is judged, no request is refused, a model unknown to our table is adjusted
once, and a long shared system prompt is read from the prompt cache and priced so."""

from __future__ import annotations

from typing import Any

import pytest

from judging.engine.calls import CallRunner, RetryPolicy
from judging.engine.ledger import Ledger
from judging.engine.panel_runner import judge_many
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.verdicts import Item

SCALE = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])
ITEMS = [Item(id=f"TX-{i}", fields={"text": f"Candidate class number {i}"}) for i in range(10)]
KEY_VAR = "JURYBOX_TODAY_KEY"
LONG_SYSTEM = "You curate a retail product taxonomy; judge each class on its own merits. " * 80


def _critic(name: str, vendor: str, model: str, base_url: str, **changes: Any) -> Critic:
    fields: dict[str, Any] = dict(
        name=name, vendor=vendor, model=model, base_url=base_url, api_key_env=KEY_VAR,
        prompt_template="Is this a good class? {text}", system_prompt=LONG_SYSTEM,
        price_in_per_mtok=2.0, price_out_per_mtok=8.0, max_tokens=400,
    )
    fields.update(changes)
    return Critic(**fields)


@pytest.fixture
def today(simulator, monkeypatch) -> tuple[Any, Panel]:
    monkeypatch.setenv(KEY_VAR, "sk-today-test-key")
    base = simulator.base_url
    panel = Panel(name="today", scale=SCALE, critics=[
        _critic("o3", "openai", "o3", base),
        _critic("gpt5", "openai", "gpt-5.1", base, extra={"reasoning_effort": "low"}),
        _critic("opus", "anthropic", "claude-opus-4-7", base),
        _critic("sonnet", "anthropic", "claude-sonnet-4-6", base),
        _critic("r1", "deepseek", "deepseek-reasoner", base),
    ])
    return simulator, panel


def test_todays_judges_answer_every_item(today) -> None:
    simulator, panel = today
    with CallRunner(retry=RetryPolicy(time_scale=0)) as runner:
        results = judge_many(panel, ITEMS, runner=runner, concurrency=8)
    verdicts = [v for result in results for v in result.verdicts]
    failed = [(v.critic, v.message) for v in verdicts if v.failure is not None
              and v.failure.value not in ("refusal", "truncated", "parse_fail")]
    assert failed == []
    stats = simulator.stats()
    assert stats["bad_requests"] == 0  # nothing sent that a vendor refuses
    # Anthropic critics spoke the Messages API; the others chat completions.
    anthropic = [v for v in verdicts if v.critic in ("opus", "sonnet")]
    assert all(v.raw_request and v.raw_request["url"].endswith("/messages") for v in anthropic)
    assert all("temperature" not in v.raw_request["body"] for v in anthropic if v.raw_request)
    # The shared system prompt came from the prompt cache after the first calls, and was
    # priced at the cached rate (less than the same tokens at the input price).
    ledger = Ledger().add_all(verdicts)
    assert ledger.tokens_cached > 0
    for verdict in verdicts:
        if verdict.tokens_cached:
            plain = ((verdict.tokens_in or 0) * 2.0 + (verdict.tokens_out or 0) * 8.0) / 1e6
            assert verdict.cost_usd is not None and verdict.cost_usd < plain


def test_a_model_our_table_does_not_know_is_adjusted_once_per_run(simulator,
                                                                 monkeypatch) -> None:
    """A gateway (`custom`) in front of a reasoning model: our table cannot know the model, so
    the first request carries max_tokens and temperature; the simulator refuses each with the
    vendor's 400, the call layer renames and drops them once, and every later item goes out
    right the first time."""
    monkeypatch.setenv(KEY_VAR, "sk-today-test-key")
    critic = _critic("gateway", "custom", "gpt-5.2", simulator.base_url)
    panel = Panel(name="gateway", scale=SCALE, critics=[critic])
    with CallRunner(retry=RetryPolicy(time_scale=0)) as runner:
        results = judge_many(panel, ITEMS, runner=runner, concurrency=1)
    verdicts = [v for result in results for v in result.verdicts]
    assert all(v.ok for v in verdicts), [v.message for v in verdicts]
    assert sum(v.attempts for v in verdicts) == len(ITEMS) + 2  # two refusals, once each
    assert simulator.stats()["bad_requests"] == 2
    last = verdicts[-1].raw_request or {}
    assert "max_completion_tokens" in last["body"] and "max_tokens" not in last["body"]
    assert "temperature" not in last["body"]
    assert len(last["adjusted"]) == 2 and "max_completion_tokens" in " ".join(last["adjusted"])
