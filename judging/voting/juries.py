"""Juries of juries: named sub-panels, each with its own critics and voting, combined on top.

As Agent Judge's `Juries.combine(j1, j2, strategy)` / `Juries.allOf(strategy, ...)`: a panel's
`juries` name groups of its critics (a safety jury, a quality jury); each jury votes over its own
critics' verdicts with its own `voting`, and the panel's `voting` then votes over the juries'
decisions, each jury one member of weight `JuryConfig.weight`. Every strategy works at the top
(majority, weighted, unanimous, first-disagreement, the score strategies ...); `all-of` is the
one made for it: accept (`target_label`) only if every jury accepts.

What the top-level outcome holds (the item's decision, as stored and reviewed):
    consensus       the top vote over the juries' decisions (a jury that abstained is a failed
                    member: the top `error_policy` says what it counts as);
    agreement       the share of juries (by count) backing it;
    counts          juries per decision;
    disagreement    set when the juries differ, a jury abstained, or any jury was itself split:
                    a split inside the safety jury is worth a reviewer's look even when both
                    juries landed on the same label;
    failed          the critics that failed, over every jury (as on a flat panel);
    juries          each jury's own outcome, in panel order.

Pure functions, like `judging.voting.strategies`: the runner calls them through `Panel.vote`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import ConfigDict, Field

from judging.known_fields import StrictModel
from judging.scales import Scale
from judging.verdicts import Verdict, VoteOutcome
from judging.voting.strategies import VotingConfig, vote

__all__ = ["JuryConfig", "combine_juries", "jury_outcomes", "vote_juries"]


class JuryConfig(StrictModel):
    """One jury of a panel of juries (`Panel.juries`).

    Attributes:
        name: the jury's name, unique in the panel (shown on Review, Agreement, the export).
        critics: names of the panel's critics that sit in this jury (each in one jury only).
        voting: how this jury turns its critics' verdicts into its decision.
        weight: the jury's weight in the panel's top-level vote (weighted strategies).
        description: what the jury is for (optional).
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1, description="The jury's name, unique in the panel.")
    critics: list[str] = Field(
        default_factory=list,
        description="Names of the panel's critics in this jury (each critic in one jury).")
    voting: VotingConfig = Field(
        default_factory=VotingConfig,
        description="How this jury's critics' verdicts become the jury's decision.")
    weight: float = Field(
        default=1.0, ge=0.0, allow_inf_nan=False,
        description="The jury's weight in the panel's own (top-level) vote.")
    description: str = ""


def jury_outcomes(
    verdicts: Sequence[Verdict],
    juries: Sequence[JuryConfig],
    weights: Mapping[str, float],
    scale: Scale,
) -> dict[str, VoteOutcome]:
    """Each jury's own vote over its critics' verdicts (a critic not answered yet is absent).

    Args:
        verdicts: the item's verdicts, every jury's critics together.
        juries: the panel's juries.
        weights: critic name -> weight (within a jury's weighted strategies).
        scale: the panel's scale.

    Returns:
        jury name -> its outcome, in jury order.
    """
    by_critic = {verdict.critic: verdict for verdict in verdicts}
    return {
        jury.name: vote([by_critic[name] for name in jury.critics if name in by_critic],
                        dict(weights), jury.voting, scale)
        for jury in juries
    }


def _member(name: str, item_id: str, outcome: VoteOutcome, scale: Scale) -> Verdict:
    """A jury's decision as one member's verdict in the top vote; an abstention gives no value
    (a failed member), its agreement stands in for a confidence (`use_confidence`)."""
    value = outcome.consensus
    if value is None:
        return Verdict(critic=name, item_id=item_id, message="the jury abstained")
    if scale.is_numeric:
        return Verdict(critic=name, item_id=item_id, score=float(value),
                       confidence=outcome.agreement)
    return Verdict(critic=name, item_id=item_id, label=str(value), confidence=outcome.agreement)


_TREATMENT = {
    "ignore": "left out of the top vote",
    "abstain": "so the panel abstains",
    "count_as": "counted as {label}",
}


def combine_juries(
    outcomes: Mapping[str, VoteOutcome],
    juries: Sequence[JuryConfig],
    config: VotingConfig,
    scale: Scale,
    *,
    item_id: str = "",
) -> VoteOutcome:
    """The panel's decision from its juries' decisions (see the module's doc).

    Args:
        outcomes: jury name -> its outcome (`jury_outcomes`).
        juries: the juries, in panel order (their weights count in weighted strategies).
        config: the top-level voting (the panel's `voting`).
        scale: the panel's scale.
        item_id: the item (for the members' verdicts only).

    Returns:
        The top-level outcome, with `juries` set to `outcomes`.

    Raises:
        ConfigError: as `judging.voting.strategies.vote` (the panel's checks rule these out beforehand).
    """
    members = [_member(jury.name, item_id, outcomes[jury.name], scale) for jury in juries]
    top = vote(members, {jury.name: jury.weight for jury in juries}, config, scale)
    notes = top.note.split("; ") if top.note else []
    abstained = [jury.name for jury in juries if outcomes[jury.name].consensus is None]
    if abstained and notes:
        # `vote` says "1 of 2 critics failed (1 invalid), ..." first: a jury did not fail, it
        # gave no decision. Its note is always the first and holds no "; " of its own.
        how = _TREATMENT[config.error_policy].format(label=config.error_label)
        notes[0] = (f"{'jury' if len(abstained) == 1 else 'juries'} {', '.join(abstained)} "
                    f"gave no decision, {how}")
    split = [jury.name for jury in juries
             if outcomes[jury.name].disagreement and outcomes[jury.name].consensus is not None]
    if split:
        notes.append(f"split within {'jury' if len(split) == 1 else 'juries'} {', '.join(split)}")
    top.note = "; ".join(notes) or None
    top.disagreement = top.disagreement or bool(split)
    top.failed = sum(outcome.failed for outcome in outcomes.values())
    top.juries = dict(outcomes)
    return top


def vote_juries(
    verdicts: Sequence[Verdict],
    juries: Sequence[JuryConfig],
    weights: Mapping[str, float],
    config: VotingConfig,
    scale: Scale,
) -> VoteOutcome:
    """One item's decision by a panel of juries: each jury's vote, then the top vote.

    Args:
        verdicts: the item's verdicts (every critic of every jury).
        juries: the panel's juries.
        weights: critic name -> weight.
        config: the top-level voting over the juries' decisions.
        scale: the panel's scale.
    """
    item_id = verdicts[0].item_id if verdicts else ""
    return combine_juries(jury_outcomes(verdicts, juries, weights, scale), juries, config,
                          scale, item_id=item_id)
