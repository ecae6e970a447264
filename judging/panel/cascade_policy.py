"""A cascade tier's policy applied to one item, as pure functions (no calls, no threads).

For the tiers of `cascade.tiers` (`judging.panel.cascade_tiers` says what each policy means), after a
tier has answered an item:

    reject_on_any_fail   a critic voted one of the tier's fail labels (or, with on_failure
                         "fail", gave no verdict): "rejected"; else "next"
    accept_on_all_pass   every critic voted one of the pass labels (with on_failure "ignore",
                         every critic that gave a verdict, at least one): "accepted"; else "next"
    final                "decided"

What an item stopped early reports: the label it stopped with (`CascadeConfig.reject_label`
when set for a rejection, else the fail label its first failing critic voted; for an accept,
the tier's vote when that is a pass label, else the most common pass label), with agreement the
share of the tier's critics that voted that way, so a rejection by one guard of two, or one
made because a guard gave no verdict, is flagged for review.

Every tier called also leaves a sub-verdict (`judging.verdicts.TierVerdict`) on the item, the
tiers made of critics' numbers included (`legacy_sub_verdict`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from judging.panel.cascade_tiers import Tier
from judging.verdicts import TierVerdict, Verdict, VoteOutcome

TierStep = Literal["rejected", "accepted", "next", "decided"]


@dataclass(frozen=True, slots=True)
class TierDecision:
    """What a tier's policy made of an item: the step, why, and the label it stops with."""

    step: TierStep
    reason: str
    label: str | None = None
    agreement: float | None = None


def _shown(value: str | float | None) -> str:
    if value is None:
        return "no consensus"
    return value if isinstance(value, str) else f"{value:g}"


def _names(verdicts: Sequence[Verdict]) -> str:
    return ", ".join(v.critic for v in verdicts)


def _why_broken(verdict: Verdict) -> str:
    return verdict.failure.value if verdict.failure is not None else "no verdict"


def apply_policy(tier: Tier, verdicts: Sequence[Verdict], outcome: VoteOutcome,
                 strategy: str) -> TierDecision:
    """Apply a `cascade.tiers` tier's policy to its critics' verdicts on one item.

    Args:
        tier: a planned tier with a policy (`Tier.policy` one of `POLICIES`).
        verdicts: the tier's verdicts on the item, in panel order.
        outcome: the tier's own vote over them (its voting config).
        strategy: that voting config's strategy (named in a final tier's reason).
    """
    share = (lambda n: n / len(verdicts)) if verdicts else (lambda n: 0.0)
    labels = "/".join(tier.labels)
    if tier.policy == "reject_on_any_fail":
        failing = [v for v in verdicts if v.ok and v.label in tier.labels]
        if failing:
            first = failing[0].label
            return TierDecision("rejected", f"rejected by {_names(failing)} ({first})",
                                first, share(len(failing)))
        broken = [v for v in verdicts if not v.ok] if tier.on_failure == "fail" else []
        if broken:
            return TierDecision(
                "rejected", f"rejected: {broken[0].critic} gave no verdict "
                f"({_why_broken(broken[0])}) and the tier fails closed",
                tier.labels[0], 0.0)
        return TierDecision("next", f"passed: no critic voted {labels}")
    if tier.policy == "accept_on_all_pass":
        counted = [v for v in verdicts if v.ok or tier.on_failure == "fail"]
        blocking = [v for v in counted if not v.ok or v.label not in tier.labels]
        if counted and not blocking:
            votes = Counter(str(v.label) for v in counted)
            label = (outcome.consensus if outcome.consensus in tier.labels
                     else max(tier.labels, key=lambda name: votes.get(name, 0)))
            assert isinstance(label, str)
            return TierDecision("accepted", f"accepted: {_names(counted)} voted {labels}",
                                label, share(votes.get(label, 0)))
        if not counted:
            return TierDecision("next", "went on: no critic gave a verdict")
        stopper = blocking[0]
        said = (f"voted {stopper.label}" if stopper.ok
                else f"gave no verdict ({_why_broken(stopper)})")
        return TierDecision("next", f"went on: {stopper.critic} {said}")
    agreement = (f", agreement {outcome.agreement:.2f}" if outcome.agreement is not None
                 else "")
    return TierDecision("decided", f"decided {_shown(outcome.consensus)} by {strategy}{agreement}")


def stopped_outcome(decision: TierDecision, tier_outcome: VoteOutcome,
                    reject_label: str | None) -> VoteOutcome:
    """The item's outcome when a tier stopped it early (rejected or accepted)."""
    label = decision.label
    if decision.step == "rejected" and reject_label is not None:
        label = reject_label
    agreement = decision.agreement
    return dataclasses.replace(
        tier_outcome,
        consensus=label,
        agreement=agreement,
        # Anything short of the whole tier voting so (a split guard, a guard that gave no
        # verdict) goes to review.
        disagreement=agreement is None or agreement < 1.0,
        tie=False,
    )


def sub_verdict(tier: Tier, decision: TierDecision, outcome: VoteOutcome,
                critics: Sequence[str], reject_label: str | None = None) -> TierVerdict:
    """A `cascade.tiers` tier's sub-verdict on an item: what the tier decided.

    A tier that stopped the item (rejected, accepted) records the label it stopped it with and
    the share of its critics that voted so (`stopped_outcome`), not its critics' plurality: a
    guard of three that rejects on one "no" among two "yes" decided "no", and a sub-verdict
    saying "rejected" beside the majority's "yes" would contradict the item's own decision.
    Any other step records the tier's vote (`outcome`)."""
    if decision.step in ("rejected", "accepted"):
        outcome = stopped_outcome(decision, outcome, reject_label)
    return TierVerdict(
        tier=tier.number, name=tier.name, policy=tier.policy, step=decision.step,
        label=outcome.consensus, agreement=outcome.agreement, critics=list(critics),
        reason=decision.reason,
    )


_LEGACY_STEPS = {"settled": "settled", "reject": "rejected", "next": "next", "last": "decided"}


def legacy_sub_verdict(tier: Tier, guard: bool, step: str, reason: str, outcome: VoteOutcome,
                       critics: Sequence[str], verdicts: Sequence[Verdict] = (),
                       reject_label: str | None = None) -> TierVerdict:
    """The sub-verdict of a tier made of critics' numbers, from `judging.panel.cascade.decide`.

    A guard's rejection records what the guard decided: `reject_label` (the item's label,
    `judging.panel.cascade.rejected`), else the label of its first failed check, with the share
    of its critics (`verdicts`) that failed or gave no verdict as agreement; not the tier's
    plurality, which for a guard of several is what the checks that passed said."""
    prefix = f"tier {tier.number}: "
    label, agreement = outcome.consensus, outcome.agreement
    if step == "reject":
        against = [v for v in verdicts if not v.ok or v.passed is False]
        said = next((v.label for v in against if v.ok and v.label is not None), None)
        label = reject_label if reject_label is not None else said
        agreement = len(against) / len(verdicts) if verdicts else None
    return TierVerdict(
        tier=tier.number, name="", policy="guard" if guard else "settle",
        step=_LEGACY_STEPS.get(step, step), label=label, agreement=agreement,
        critics=list(critics), reason=reason.removeprefix(prefix),
    )


def cancelled_sub_verdict(sub: TierVerdict) -> TierVerdict:
    """A tier's sub-verdict when the run was cancelled before the next tier."""
    return dataclasses.replace(sub, step="cancelled",
                               reason=f"{sub.reason}; cancelled before the next tier")
