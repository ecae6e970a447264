"""Before a run starts: how many calls, about how many tokens, and what it may cost.

Token counts are estimated from the rendered prompts of a sample of items at about four
characters per token (the rule of thumb vendors publish); the output side assumes a short JSON
verdict (capped by each critic's `max_tokens`). A price that is unknown stays unknown: the
total then says so instead of pretending the critic is free.
"""

from __future__ import annotations

from dataclasses import dataclass

from judging.panel import Panel
from judging.vendors import cost_usd
from judging.verdicts import Item

CHARS_PER_TOKEN = 4.0
TYPICAL_REPLY_TOKENS = 80  # {"label": ..., "confidence": ..., "reasoning": "one or two sentences"}


@dataclass(frozen=True, slots=True)
class CriticEstimate:
    """One critic's share of a run."""

    critic: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None  # None: the critic's price is unknown


@dataclass(frozen=True, slots=True)
class RunEstimate:
    """The whole run: totals plus one row per critic."""

    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None  # None when any critic's price is unknown
    per_critic: list[CriticEstimate]
    note: str


def estimate_run(panel: Panel, sample: list[Item], n_items: int) -> RunEstimate:
    """Estimate a run of `panel` over `n_items` items from a sample of them.

    Args:
        panel: the panel to run.
        sample: a few items of the dataset (their prompts are rendered to count characters).
        n_items: how many items the run has.

    Returns:
        The estimate. A cascade's later tiers are counted as if every item reached them (an
        upper bound), which the note says.

    Raises:
        PlaceholderError: a prompt uses a field the items do not have.
    """
    rows: list[CriticEstimate] = []
    for critic in panel.critics:
        if sample:
            chars = [
                sum(len(m["content"]) for m in critic.build_messages(item.fields, panel.scale))
                for item in sample
            ]
            per_call_in = round(sum(chars) / len(chars) / CHARS_PER_TOKEN)
        else:
            per_call_in = 0
        per_call_out = min(TYPICAL_REPLY_TOKENS, critic.max_tokens)
        tokens_in = per_call_in * n_items
        tokens_out = per_call_out * n_items
        rows.append(
            CriticEstimate(
                critic=critic.name,
                calls=n_items,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost_usd=cost_usd(critic, tokens_in, tokens_out),
            )
        )
    costs = [row.cost_usd for row in rows]
    total_cost = None if any(c is None for c in costs) else float(sum(c or 0.0 for c in costs))
    tiers = {critic.tier for critic in panel.critics}
    note = (
        "Upper bound: later tiers of the cascade are only called for items the earlier tiers "
        "do not settle."
        if len(tiers) > 1
        else "Calls already answered in an earlier run come from the cache and cost nothing."
    )
    return RunEstimate(
        calls=sum(row.calls for row in rows),
        tokens_in=sum(row.tokens_in for row in rows),
        tokens_out=sum(row.tokens_out for row in rows),
        cost_usd=total_cost,
        per_critic=rows,
        note=note,
    )
