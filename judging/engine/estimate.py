"""Before a run starts: how many calls, about how many tokens, and what it may cost.

Token counts are estimated from the rendered prompts of a sample of items at about four
characters per token (the rule of thumb vendors publish); the output side assumes a short JSON
verdict, capped by each critic's `max_tokens`. Where the vendor caches prompts (OpenAI,
Anthropic's Messages API, DeepSeek, Gemini, the simulator), a system prompt of at least
`MIN_CACHED_TOKENS` is counted as read from the cache on every call but a critic's first, at
the cached price (Anthropic: written once at its cache-write price). A price that is unknown
stays unknown: the total then says so instead of pretending the critic is free (an unknown cost
is None, never 0).

Pure domain logic: no storage, no streamlit. The Run page and the CLI call `estimate_run`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# One rule of thumb for the estimate and the cap, and one typical reply.
from judging.engine.budget import CHARS_PER_TOKEN, TYPICAL_REPLY_TOKENS
from judging.engine.chains import planned_calls
from judging.engine.context_guard import OverLong, over_long
from judging.errors import ConfigError
from judging.panel.cascade_tiers import tier_count
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.panel.vendors import api_of, caches_prompts, cost_usd
from judging.verdicts import PLUGIN_KINDS, Item

# The shortest prefix the vendors cache (OpenAI, Anthropic's Opus and Sonnet, DeepSeek, Gemini:
# 1,024 tokens): a shorter system prompt is sent in full every time.
MIN_CACHED_TOKENS = 1024

@dataclass(frozen=True, slots=True)
class CriticEstimate:
    """One critic's share of a run.

    Attributes:
        critic: the critic's name.
        calls: calls it would make (every item; an upper bound for a later cascade tier): a
            compound or repeated critic's every step, a debate's turns included.
        tokens_in: estimated prompt tokens over the run.
        tokens_out: estimated reply tokens over the run.
        cost_usd: estimated cost in US dollars; None when the critic's price is unknown.
        tokens_cached: of tokens_in, those expected to be read from the vendor's prompt cache
            (priced at the cached rate in `cost_usd`).
    """

    critic: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    tokens_cached: int = 0


@dataclass(frozen=True, slots=True)
class RunEstimate:
    """The whole run: totals plus one row per critic.

    Attributes:
        calls: calls over every critic.
        tokens_in: estimated prompt tokens over every critic.
        tokens_out: estimated reply tokens over every critic.
        cost_usd: estimated total cost; None when any critic's price is unknown (a partial sum
            would read as a full one).
        per_critic: one `CriticEstimate` per critic, in panel order.
        note: one sentence on how far to trust the figures.
        unpriced: names of the critics whose price is unknown.
        upper_bound: True for a cascade (later tiers only see items earlier tiers leave open).
        verdicts: item x critic verdicts, the unit a run's progress counts; `calls` differs
            where a critic sends several per verdict (both orders of a pair, a chain, samples)
            or none (a rule or python critic).
        both_orders: a pairwise panel asking each critic both orders (`swap`).
        over_long: the items whose prompt would not fit a critic's context window
            (`judging.panel.context_limits`), when every item was given to check.
    """

    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    per_critic: list[CriticEstimate]
    note: str
    unpriced: list[str]
    upper_bound: bool
    verdicts: int = 0
    both_orders: bool = False

    def counted(self) -> str:
        """The run's size in the unit its progress counts, with the calls behind it:
        "2,095 verdicts (4,190 calls, both orders)"."""
        why = ", both orders" if self.both_orders else ""
        return f"{self.verdicts:,} verdicts ({self.calls:,} calls{why})"
    over_long: list[OverLong] = field(default_factory=list)

    @property
    def known_cost_usd(self) -> float:
        """The sum over the critics whose price is known (a lower bound when some are not)."""
        return float(sum(row.cost_usd for row in self.per_critic if row.cost_usd is not None))


def estimate_run(panel: Panel, sample_items: Sequence[Item], n_items: int, *,
                 items: Iterable[Item] | None = None) -> RunEstimate:
    """Estimate a run of `panel` over `n_items` items from a sample of them.

    Args:
        panel: the panel to run.
        sample_items: a few items of the dataset; their prompts are rendered to count characters.
            Empty: prompt tokens are estimated from the templates alone.
        n_items: how many items the run has (0 or more).
        items: every item of the run, to name those too long for a critic's context window
            (`RunEstimate.over_long`); None: not checked.

    Returns:
        The estimate. A cascade's later tiers are counted as if every item reached them (an
        upper bound), which `note` and `upper_bound` say.

    Raises:
        ConfigError: `n_items` is negative, or a critic's prompt has no placeholder.
        PlaceholderError: a prompt uses a field the sample items do not have.
    """
    if n_items < 0:
        raise ConfigError(f"A run cannot have {n_items} items: give 0 or more.")
    rows: list[CriticEstimate] = []
    by_name = {critic.name: critic for critic in panel.critics}
    for critic in panel.critics:
        if critic.kind in PLUGIN_KINDS:  # a rule or python critic: no call, no token, $0
            rows.append(CriticEstimate(critic=critic.name, calls=0, tokens_in=0, tokens_out=0,
                                       cost_usd=0.0))
            continue
        # A pairwise critic that swaps is asked everything twice, once in each order.
        orders = 2 if panel.pairwise.active and panel.pairwise.swap else 1
        plan = [(sender, count * orders)
                for sender, count in planned_calls(critic, by_name, panel.rubric)]
        calls_per_item = sum(count for _, count in plan)
        # A later step of a chain also reads what the earlier ones said (a reply each).
        chain_length = calls_per_item // (critic.samples * orders)
        carried = (TYPICAL_REPLY_TOKENS * critic.samples * orders
                   * chain_length * (chain_length - 1) // 2)
        tokens_in = tokens_out = cached_total = 0
        cost: float | None = 0.0
        for sender, count in plan:
            sender_in = (_prompt_tokens(panel, sender, sample_items) * count
                         + (carried if sender is critic else 0)) * n_items
            sender_out = min(TYPICAL_REPLY_TOKENS, sender.max_tokens) * count * n_items
            tokens_in, tokens_out = tokens_in + sender_in, tokens_out + sender_out
            cached, written = _cached_tokens(sender, count * n_items)
            cached_total += cached
            price = cost_usd(sender, sender_in, sender_out, batched=sender.mode == "batch",
                             cached=cached, cache_write=written)
            cost = None if cost is None or price is None else cost + price
        rows.append(
            CriticEstimate(
                critic=critic.name,
                calls=calls_per_item * n_items,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost_usd=cost,
                tokens_cached=cached_total,
            )
        )
    unpriced = [row.critic for row in rows if row.cost_usd is None]
    total_cost = None if unpriced else float(sum(row.cost_usd or 0.0 for row in rows))
    upper_bound = tier_count(panel.critics, panel.cascade.tiers) > 1
    if upper_bound:
        note = ("Upper bound: later tiers of the cascade are only called for items the earlier "
                "tiers do not settle.")
    else:
        note = "Calls already answered in an earlier run come from the cache and cost nothing."
    if unpriced:
        note += (f" The cost is unknown because {', '.join(unpriced)} "
                 f"{'has' if len(unpriced) == 1 else 'have'} no price: set price_in_per_mtok "
                 "and price_out_per_mtok on the critic.")
    cached_total = sum(row.tokens_cached for row in rows)
    if cached_total:
        note += (f" About {cached_total:,} input tokens are expected from the vendors' prompt "
                 "caches (the shared system prompt), priced at the cached rate.")
    too_long = over_long(panel.critics, items, panel.scale) if items is not None else []
    if too_long:
        action = {"send": "sent whole anyway", "skip": "skipped",
                  "window": f"judged on their last {panel.context_guard.window} messages"}
        note += (f" {len({o.item_id for o in too_long}):,} items are too long for a critic's "
                 f"context window (estimated at {CHARS_PER_TOKEN:g} characters a token): the "
                 f"panel's context guard says they are "
                 f"{action[panel.context_guard.over_long]}.")
    return RunEstimate(
        calls=sum(row.calls for row in rows),
        tokens_in=sum(row.tokens_in for row in rows),
        tokens_out=sum(row.tokens_out for row in rows),
        cost_usd=total_cost,
        per_critic=rows,
        note=note,
        unpriced=unpriced,
        upper_bound=upper_bound,
        verdicts=n_items * len(panel.critics),
        both_orders=panel.pairwise.active and panel.pairwise.swap,
        over_long=too_long,
    )


def _cached_tokens(critic: Critic, calls: int) -> tuple[int, int]:
    """(tokens read from the prompt cache, tokens written to it) over `calls` calls of a
    critic: its system prompt, when long enough to be cached and the vendor caches."""
    system = round(len(critic.system_prompt or "") / CHARS_PER_TOKEN)
    if calls < 2 or system < MIN_CACHED_TOKENS or not caches_prompts(critic):
        return 0, 0
    written = system if api_of(critic) == "messages" else 0  # Anthropic bills the write
    return system * (calls - 1), written


def _prompt_tokens(panel: Panel, critic: Critic, sample_items: Sequence[Item]) -> int:
    """Mean prompt tokens of one call of this critic over the sample (templates alone if none)."""
    if sample_items:
        chars = [
            sum(len(m["content"]) for m in critic.build_messages(item.fields, panel.scale))
            for item in sample_items
        ]
        mean_chars = sum(chars) / len(chars)
    else:
        # No item to render: count the template and the system prompt, which every call sends.
        mean_chars = len(critic.prompt_template) + len(critic.system_prompt or "")
    return round(mean_chars / CHARS_PER_TOKEN)
