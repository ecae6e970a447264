"""The voting config a panel file holds: which strategy, ties, errors, score bands.

Apart from the strategies so that Dawid-Skene (a strategy module of its own, which
`strategies` registers) and the strategies can both read it without importing each other.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judging.known_fields import StrictModel

TiePolicy = Literal["pessimistic", "optimistic", "abstain"]
ErrorPolicy = Literal["ignore", "abstain", "count_as"]


class VotingConfig(StrictModel):
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
    # "borderline": 0.4}; below every band: "escalate".
    thresholds: dict[str, float] = Field(
        default_factory=dict,
        description="Score bands: recommendation -> lowest score (e.g. uphold: 0.7, "
        "borderline: 0.4). The aggregated score gets the band it reaches; below every band "
        "it is 'escalate'.")
    # Scores agree when max - min <= this (Glacis' consensus_threshold), bands or not.
    max_spread: float | None = Field(
        default=None, ge=0.0,
        description="Scores further apart than this (max - min) are a disagreement, whatever "
        "band their aggregate falls in.")
