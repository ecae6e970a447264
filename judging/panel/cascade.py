"""Cascaded panels: which tier to call next for an item, as pure functions.

A cascade's tiers are either named in the panel file (`cascade.tiers`: each a jury with its own
critics, voting and policy; `judging.panel.cascade_tiers` plans them and `judging.panel.cascade_policy`
applies their policies), or made of the critics' `tier` numbers, the older form this module
decides for. There, critics are grouped by `Critic.tier`, cheapest (lowest number) first. After
a tier has answered an item:

    guard failure   the tier is a guard tier (`CascadeConfig.guard_tiers`) and one of its critics
                    failed, or a rule or python critic's check failed (`Verdict.passed` is
                    False): the item is rejected at once with `reject_label`; a guard
                    tier of such checks alone that all pass sends the item on
    settled         the tier's own vote meets the rule (`settle="unanimous"`: every critic of the
                    tier gave a valid verdict and they agree; `settle="agreement"`: the tier's
                    agreement >= `min_agreement`, failures counting against it)
    next            otherwise the item goes on to the next tier
    last tier       the last tier always decides

The outcome reported for an item: when `CascadeConfig.final_vote` is "all_tiers" (the default),
the vote over every critic called so far for the item, so an item the cheap tier disagreed on
still shows that disagreement to the reviewer; with "last_tier", only the deciding tier's vote.
The runner (`judging.engine.panel_runner`) does the calling; this module only decides.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from judging.known_fields import StrictModel
from judging.panel.cascade_tiers import CascadeTier, Tier, plan_tiers
from judging.verdicts import Verdict, VoteOutcome

__all__ = ["CascadeConfig", "CascadeTier", "Step", "Tier", "decide", "plan_tiers", "rejected"]

Step = Literal["settled", "reject", "next", "last"]


class CascadeConfig(StrictModel):
    """Tiered panels: `tiers` (each a jury with its own critics, voting and policy: see
    `judging.panel.cascade_tiers`), or critics grouped by `Critic.tier`, cheapest (lowest) first.

    With `tiers`, each tier's policy says when it stops an item, the last one (policy final)
    decides, and `settle`, `min_agreement` and `guard_tiers` do not apply (a panel setting them
    is refused); `reject_label` (the label of an item a guard tier rejects, instead of the fail
    label its critic voted) and `final_vote` do.

    Without `tiers`:

    A tier settles an item when its own vote meets `settle` (and `min_agreement`); a failure in
    a `guard_tiers` tier rejects the item at once with `reject_label`; otherwise the item goes
    on to the next tier. The last tier always decides. `final_vote` says which verdicts the
    reported outcome counts: "all_tiers" (every critic called for the item, so an escalated item
    still shows the disagreement that escalated it) or "last_tier" (the deciding tier alone).
    See `judging.panel.cascade`.
    """

    settle: Literal["unanimous", "agreement"] = "unanimous"
    min_agreement: float = Field(default=1.0, gt=0.0, le=1.0)
    guard_tiers: list[int] = Field(default_factory=list)
    reject_label: str | None = None
    final_vote: Literal["all_tiers", "last_tier"] = "all_tiers"
    # Each tier a jury of its own with a policy (`judging.panel.cascade_tiers`); empty: the critics'
    # `tier` numbers and the rules above.
    tiers: list[CascadeTier] = Field(default_factory=list)


def decide(
    tier: Tier,
    is_last: bool,
    tier_verdicts: Sequence[Verdict],
    tier_outcome: VoteOutcome,
    config: CascadeConfig,
) -> tuple[Step, str]:
    """What happens to an item after `tier` has answered it.

    Args:
        tier: the tier that just answered.
        is_last: True when no tier follows.
        tier_verdicts: that tier's verdicts on the item.
        tier_outcome: the vote over that tier's verdicts alone.
        config: the panel's cascade settings.

    Returns:
        (step, reason): the step, and a short text for `PanelVerdict.settled_by`.
    """
    if tier.number in config.guard_tiers:
        broken = [v for v in tier_verdicts if not v.ok]
        if broken:
            first = broken[0]
            kind = first.failure.value if first.failure else "failure"
            return "reject", f"tier {tier.number}: guard failure ({first.critic}: {kind})"
        failed = [v for v in tier_verdicts if v.passed is False]
        if failed:
            names = ", ".join(v.critic for v in failed)
            return "reject", f"tier {tier.number}: rejected by {names}"
        if not is_last and all(v.passed is not None for v in tier_verdicts):
            # A guard tier of checks only: passing them says nothing is wrong, not what the
            # verdict is, so the item goes on (a lone passed check would otherwise settle it
            # "unanimously" with its pass label).
            return "next", f"tier {tier.number}: checks passed"
    if is_last:
        return "last", f"tier {tier.number}: last tier"
    if config.settle == "unanimous":
        if not tier_outcome.disagreement and tier_outcome.consensus is not None:
            return "settled", f"tier {tier.number}: unanimous"
    elif (
        tier_outcome.consensus is not None
        and tier_outcome.agreement is not None
        and tier_outcome.agreement >= config.min_agreement
    ):
        return "settled", f"tier {tier.number}: agreement {tier_outcome.agreement:.2f}"
    return "next", f"tier {tier.number}: not settled"


def rejected(outcome: VoteOutcome, config: CascadeConfig, reason: str) -> VoteOutcome:
    """The outcome of an item a guard tier rejected: `reject_label`, flagged for review."""
    note = f"rejected by the cascade ({reason})"
    return dataclasses.replace(
        outcome,
        consensus=config.reject_label,
        agreement=None,
        disagreement=True,
        note=f"{outcome.note}; {note}" if outcome.note else note,
    )
