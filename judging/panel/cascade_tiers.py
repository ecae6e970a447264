"""The tiers of a cascade as the panel file names them (`cascade.tiers`), and the run's plan.

Agent Judge's `CascadedJury` gives each tier its own jury (judges and a voting strategy) and a
policy; `cascade.tiers` is that, in a panel file:

    cascade:
      tiers:
        - {name: guardrails, critics: [no_pii], policy: reject_on_any_fail}
        - {name: cheap, critics: [mini], policy: accept_on_all_pass}
        - {name: panel, critics: [a, b, c], policy: final, voting: {strategy: majority}}

Policies (`judging.panel.cascade_policy` applies them):

    reject_on_any_fail   guardrails: a critic voting one of `fail_labels` stops the item as
                         rejected; otherwise the item goes on
    accept_on_all_pass   a consensus gate: every critic voting one of `pass_labels` stops the
                         item as accepted; otherwise the item goes on
    final                the last tier (and only it) decides, by its voting config

A critic that gives no verdict (an error, a refusal) counts as voting fail when `on_failure` is
"fail" (the default: a guard that could not check fails closed, and a gate is not passed), and
is left out with "ignore".

Without `cascade.tiers`, a cascade is made of the critics' `tier` numbers and the one settle
rule of `CascadeConfig` (`judging.panel.cascade`), as before; both become one plan here (`Tier`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from judging.known_fields import StrictModel
from judging.panel.critics import Critic
from judging.voting.strategies import VotingConfig

TierPolicy = Literal["reject_on_any_fail", "accept_on_all_pass", "final"]
POLICIES: tuple[str, ...] = ("reject_on_any_fail", "accept_on_all_pass", "final")

# Labels that read as "pass" / "fail" whatever the scale calls them (compared lower-case): the
# defaults of `pass_labels` / `fail_labels`, so a yes/no or KEEP/REJECT panel needs neither.
_PASS_WORDS = frozenset({
    "pass", "passed", "yes", "accept", "accepted", "keep", "safe", "ok", "approve", "approved",
    "allow", "allowed", "correct", "true", "good", "valid",
})
_FAIL_WORDS = frozenset({
    "fail", "failed", "no", "reject", "rejected", "unsafe", "block", "blocked", "deny",
    "denied", "incorrect", "false", "bad", "invalid", "remove",
})


class CascadeTier(StrictModel):
    """One tier of `cascade.tiers`: a jury of its own (critics and voting) and a policy.

    Attributes:
        name: shown on Review ("tier 1 guardrails: rejected by no_pii"); optional.
        critics: the names of the tier's critics; every critic of the panel sits in exactly
            one tier.
        policy: reject_on_any_fail, accept_on_all_pass or final (the last tier's, and only its).
        voting: the tier's own voting config (None: the panel's `voting`).
        fail_labels: reject_on_any_fail: the labels that count as fail (empty: the scale's
            labels that read as fail, e.g. no, REJECT, FAIL, unsafe).
        pass_labels: accept_on_all_pass: the labels that count as pass (empty: the scale's
            labels that read as pass, e.g. yes, KEEP, PASS, safe).
        on_failure: "fail": a critic of the tier that gives no verdict counts as voting fail;
            "ignore": it is left out (a gate then needs at least one pass).
    """


    name: str = ""
    critics: list[str] = Field(min_length=1)
    policy: TierPolicy
    voting: VotingConfig | None = None
    fail_labels: list[str] = Field(default_factory=list)
    pass_labels: list[str] = Field(default_factory=list)
    on_failure: Literal["fail", "ignore"] = "fail"


def default_labels(labels: Sequence[str], kind: Literal["pass", "fail"]) -> list[str]:
    """The scale's labels that read as pass (or fail), in the scale's order."""
    words = _PASS_WORDS if kind == "pass" else _FAIL_WORDS
    return [label for label in labels if label.strip().lower() in words]


def tier_labels(tier: CascadeTier, labels: Sequence[str]) -> tuple[str, ...]:
    """The labels a tier's policy looks for: its own, else the scale's defaults (fail labels
    for reject_on_any_fail, pass labels for accept_on_all_pass, none for final)."""
    if tier.policy == "reject_on_any_fail":
        return tuple(tier.fail_labels or default_labels(labels, "fail"))
    if tier.policy == "accept_on_all_pass":
        return tuple(tier.pass_labels or default_labels(labels, "pass"))
    return ()


@dataclass(frozen=True, slots=True)
class Tier:
    """One tier of a run's plan.

    Attributes:
        number: shown as "tier N": the critics' `tier` number, or the position from 1 in
            `cascade.tiers`.
        critics: the positions of its critics in the panel, in panel order.
        name: its name ("" for none).
        policy: one of `POLICIES`, or "" for a tier made of critics' numbers (the settle rule
            and `guard_tiers` of `CascadeConfig` decide there).
        voting: its own voting config (None: the panel's).
        labels: the fail labels (reject_on_any_fail) or pass labels (accept_on_all_pass).
        on_failure: "fail" or "ignore" (see `CascadeTier`).
    """

    number: int
    critics: tuple[int, ...]
    name: str = ""
    policy: str = ""
    voting: VotingConfig | None = None
    labels: tuple[str, ...] = ()
    on_failure: str = "fail"


def plan_tiers(critics: Sequence[Critic]) -> list[Tier]:
    """Group critics into tiers by their `tier` number, lowest first, panel order within."""
    numbers = sorted({critic.tier for critic in critics})
    return [
        Tier(n, tuple(i for i, critic in enumerate(critics) if critic.tier == n)) for n in numbers
    ]


def tier_count(critics: Sequence[Critic], tiers: Sequence[CascadeTier]) -> int:
    """How many tiers a panel's cascade has (1: no cascade)."""
    return len(tiers) if tiers else len({critic.tier for critic in critics})


def plan_cascade(critics: Sequence[Critic], tiers: Sequence[CascadeTier],
                 labels: Sequence[str]) -> list[Tier]:
    """The run's tiers: `cascade.tiers` when the panel names them, else the critics' numbers.

    Args:
        critics: the panel's critics.
        tiers: the panel's `cascade.tiers` (checked: every critic in exactly one tier).
        labels: the labels of the scale the panel votes on (for the default pass/fail labels).
    """
    if not tiers:
        return plan_tiers(critics)
    position = {critic.name: i for i, critic in enumerate(critics)}
    return [
        Tier(
            number=n,
            critics=tuple(sorted(position[name] for name in tier.critics)),
            name=tier.name,
            policy=tier.policy,
            voting=tier.voting,
            labels=tier_labels(tier, labels),
            on_failure=tier.on_failure,
        )
        for n, tier in enumerate(tiers, start=1)
    ]
