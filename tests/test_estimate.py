"""The run estimate: calls, tokens and cost before a run starts; unknown prices stay unknown."""

from __future__ import annotations

import pytest

from judging.engine.estimate import CHARS_PER_TOKEN, TYPICAL_REPLY_TOKENS, estimate_run
from judging.errors import ConfigError, PlaceholderError
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.verdicts import Item

PROMPT = "Is this kind? {text}"


def critic(name: str, **kwargs: object) -> Critic:
    options: dict[str, object] = {"vendor": "simulated", "model": "sim-careful",
                                  "prompt_template": PROMPT}
    options.update(kwargs)
    return Critic(name=name, **options)


def panel(*critics: Critic) -> Panel:
    return Panel(scale=Scale(kind="yesno"), critics=list(critics))


SAMPLE = [Item(id="1", fields={"text": "x" * 400}), Item(id="2", fields={"text": "y" * 800})]


def test_calls_are_items_times_critics() -> None:
    est = estimate_run(panel(critic("a"), critic("b"), critic("c")), SAMPLE, 1000)
    assert est.calls == 3000
    assert [r.calls for r in est.per_critic] == [1000, 1000, 1000]
    assert [r.critic for r in est.per_critic] == ["a", "b", "c"]


def test_prompt_tokens_follow_the_mean_rendered_item() -> None:
    short = estimate_run(panel(critic("a")), SAMPLE[:1], 100)
    both = estimate_run(panel(critic("a")), SAMPLE, 100)
    # The second item is 400 characters longer, so the mean is 200 characters (50 tokens) more.
    per_call_delta = (both.tokens_in - short.tokens_in) / 100
    assert per_call_delta == pytest.approx(200 / CHARS_PER_TOKEN, abs=1)
    assert short.tokens_in >= 100 * 400 / CHARS_PER_TOKEN  # the item text is in the prompt


def test_reply_tokens_are_capped_by_max_tokens() -> None:
    est = estimate_run(panel(critic("big"), critic("small", max_tokens=20)), SAMPLE, 50)
    big, small = est.per_critic
    assert big.tokens_out == TYPICAL_REPLY_TOKENS * 50
    assert small.tokens_out == 20 * 50
    assert est.tokens_out == big.tokens_out + small.tokens_out


def test_known_prices_give_a_cost() -> None:
    priced = critic("gpt", vendor="openai", model="gpt-4o-mini", price_in_per_mtok=1.0,
                    price_out_per_mtok=2.0)
    est = estimate_run(panel(priced), SAMPLE, 1000)
    (row,) = est.per_critic
    expected = (row.tokens_in * 1.0 + row.tokens_out * 2.0) / 1e6
    assert row.cost_usd == pytest.approx(expected)
    assert est.cost_usd == pytest.approx(expected) and est.cost_usd > 0
    assert est.unpriced == []


def test_an_unknown_price_stays_unknown_never_zero() -> None:
    unpriced = critic("gpt", vendor="openai", model="gpt-4o-mini")
    est = estimate_run(panel(critic("sim"), unpriced), SAMPLE, 1000)
    sim, gpt = est.per_critic
    assert sim.cost_usd == 0.0  # the simulator is free
    assert gpt.cost_usd is None
    assert est.cost_usd is None  # one unknown makes the total unknown
    assert est.unpriced == ["gpt"]
    assert "gpt" in est.note and "unknown" in est.note
    assert est.known_cost_usd == 0.0


def test_a_cascade_is_an_upper_bound() -> None:
    flat = estimate_run(panel(critic("a"), critic("b")), SAMPLE, 10)
    cascade = estimate_run(panel(critic("a"), critic("b", tier=1)), SAMPLE, 10)
    assert not flat.upper_bound and cascade.upper_bound
    assert "Upper bound" in cascade.note and "Upper bound" not in flat.note


def test_no_sample_counts_the_template_alone() -> None:
    est = estimate_run(panel(critic("a", system_prompt="Be fair.")), [], 10)
    assert est.tokens_in == round((len(PROMPT) + len("Be fair.")) / CHARS_PER_TOKEN) * 10


def test_zero_items_cost_nothing() -> None:
    est = estimate_run(panel(critic("a")), SAMPLE, 0)
    assert (est.calls, est.tokens_in, est.tokens_out, est.cost_usd) == (0, 0, 0, 0.0)


def test_bad_input_is_refused_with_a_sentence() -> None:
    with pytest.raises(ConfigError, match="-1 items"):
        estimate_run(panel(critic("a")), SAMPLE, -1)
    with pytest.raises(PlaceholderError, match="text"):
        estimate_run(panel(critic("a")), [Item(id="1", fields={"body": "no text field"})], 5)


LONG_SYSTEM = "You curate a retail product taxonomy; judge each class on its merits. " * 80


@pytest.mark.parametrize(("vendor", "model", "read", "write"), [
    ("openai", "gpt-4o", 0.5, 1.0),  # OpenAI's automatic cache: half the input price on gpt-4o
    ("anthropic", "claude-sonnet-4-5", 0.1, 1.25),  # a tenth; the write once at 1.25x
    ("deepseek", "deepseek-chat", 0.1, 1.0),
])
def test_a_long_shared_system_prompt_is_priced_at_the_cached_rate(
        vendor: str, model: str, read: float, write: float) -> None:
    """Issue 22, item 2: the estimate counts what the vendors' prompt caches will serve, at
    their cached rate (the rates of docs/vendors.md), as the ledger will once the run is paid."""
    priced = critic("c", vendor=vendor, model=model, system_prompt=LONG_SYSTEM,
                    price_in_per_mtok=2.0, price_out_per_mtok=8.0)
    (row,) = estimate_run(panel(priced), SAMPLE, 100).per_critic
    system = round(len(LONG_SYSTEM) / CHARS_PER_TOKEN)
    assert row.tokens_cached == system * 99  # every call but the first reads it
    plain = row.tokens_in - row.tokens_cached - (system if write != 1.0 else 0)
    expected = (plain * 2.0 + row.tokens_cached * 2.0 * read
                + (system * 2.0 * write if write != 1.0 else 0) + row.tokens_out * 8.0) / 1e6
    assert row.cost_usd == pytest.approx(expected)
    # A prompt under the vendors' minimum is not cached.
    (short,) = estimate_run(panel(critic("s", vendor=vendor, model=model,
                                         price_in_per_mtok=2.0, price_out_per_mtok=8.0)),
                            SAMPLE, 100).per_critic
    assert short.tokens_cached == 0
