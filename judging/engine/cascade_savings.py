"""What a call a cascade did not make would have cost: the ledger's `saved_usd`.

A call not made has no reply to read tokens from, so it is estimated as `judging.engine.estimate`
estimates a run before it starts, for the one item: the prompt the critic would have sent for
it (rendered, at `CHARS_PER_TOKEN`), a typical verdict's reply (`TYPICAL_REPLY_TOKENS`, capped
by the critic's `max_tokens`), every step of a compound or repeated critic, at the critic's
prices. A critic without a price gives None: counted as an unpriced saved call, never as $0.
"""

from __future__ import annotations

from collections.abc import Mapping

from judging.engine.budget import CHARS_PER_TOKEN, TYPICAL_REPLY_TOKENS
from judging.engine.chains import planned_calls
from judging.errors import ConfigError
from judging.panel.critics import Critic
from judging.panel.rubric import RubricConfig
from judging.panel.vendors import cost_usd
from judging.scales import Scale
from judging.verdicts import Item


def saved_call_usd(critic: Critic, item: Item, scale: Scale, critics: Mapping[str, Critic],
                   *, rubric: RubricConfig | None = None, orders: int = 1) -> float | None:
    """The estimated cost of the calls behind one verdict of `critic` on `item`.

    Args:
        critic: the critic not called.
        item: the item it was not called for.
        scale: the panel's scale (its answer format is part of the prompt).
        critics: the panel's critics by name (a debate's debaters send calls too).
        rubric: the panel's rubric (a call per criterion when `per_criterion`).
        orders: 2 when a pairwise panel asks again with the answers swapped.

    Returns:
        US dollars, or None when a critic involved has no price (or the prompt cannot be
        rendered for the item).
    """
    total = 0.0
    for sender, count in planned_calls(critic, critics, rubric):
        try:
            chars = sum(len(m["content"]) for m in sender.build_messages(item.fields, scale))
        except ConfigError:
            return None
        calls = count * orders
        tokens_in = round(chars / CHARS_PER_TOKEN) * calls
        tokens_out = min(TYPICAL_REPLY_TOKENS, sender.max_tokens) * calls
        price = cost_usd(sender, tokens_in, tokens_out, batched=sender.mode == "batch")
        if price is None:
            return None
        total += price
    return total
