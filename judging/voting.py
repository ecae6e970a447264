"""Voting: pure functions that turn one item's verdicts into a panel decision.

Strategies live in a registry by name; `vote` looks one up and applies the error policy and the
tie policy around it. (Strategies to be filled in: see the engine issue, item 8.)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

TiePolicy = Literal["pessimistic", "optimistic", "abstain"]
ErrorPolicy = Literal["ignore", "abstain", "count_as"]


class VotingConfig(BaseModel):
    """How a panel turns verdicts into a consensus. Saved in the panel file."""

    strategy: str = "plurality"
    tie_policy: TiePolicy = "pessimistic"
    # Labels from most cautious to most lenient; breaks ties (pessimistic takes the first tied
    # label in this order, optimistic the last). Empty: the scale's declared order.
    priority: list[str] = Field(default_factory=list)
    fallback: str | None = None  # label when the vote abstains or nothing valid was given
    error_policy: ErrorPolicy = "ignore"
    error_label: str | None = None  # with error_policy "count_as"
    use_confidence: bool = False  # weighted: weight x confidence
    target_label: str | None = None  # strategy "any": at least one critic says this
    # Score strategies: recommendation -> lowest score for it, e.g. {"uphold": 0.7,
    # "borderline": 0.4, "escalate": 0.0}.
    thresholds: dict[str, float] = Field(default_factory=dict)
    max_spread: float | None = None  # scores agree when max - min <= this
