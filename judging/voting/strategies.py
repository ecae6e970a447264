"""Voting: pure functions that turn one item's verdicts into a panel decision.

Strategies live in a registry by name (`STRATEGIES`, plus `DATASET_STRATEGIES` for those that
need the whole dataset at once). `vote` applies the error policy before a strategy runs and the
fallback after it, then fills every field of the `VoteOutcome` the same way for every strategy,
custom ones included. That is what keeps the one promise every peer library broke somewhere:

    A failed critic never makes a vote look unanimous or agreed. Two "yes" and one error is not
    unanimous: agreement is 2/3 (the share of ALL critics backing the consensus) and the
    disagreement flag is set, whatever the strategy and the error policy.

and its twin for scores: an error is never averaged in as a score of 0; it is left out of the
numbers and counted in `failed`.

Label strategies (nominal, ordinal, likert, yes/no scales):
    plurality           most votes wins; ties broken by the tie policy.
    majority            a label backed by strictly more than half of ALL critics, else abstain.
    unanimous           every counted critic gives the same label, else abstain.
    weighted            sum of critic weights (x confidence with `use_confidence`); ties by policy.
    any                 `target_label` if at least one critic says it, else the plurality.
    all-of              `target_label` only if every critic says it (a failed one never does);
                        else the first dissenting critic's label. Made for juries of juries
                        (`judging.voting.juries`): accept only if every jury accepts.
    first-disagreement  the first critic decides unless another critic disagrees with it; then the
                        vote abstains (-> `fallback`, e.g. a "REVIEW" label) and names who
                        disagreed first.
    dawid-skene         (dataset-level) labels weighted by each critic's estimated accuracy.

Probability strategies (label scales whose critics ask for logprobs, `judging.voting.pooling`): the
critics' label distributions are averaged, weighted by critic weight, instead of counting each
critic's argmax label. A critic whose reply carried no probabilities (a vendor without
logprobs, a reply without them) counts as certain of its label, and the vote's note names it.
    pooled-probability  the label with the highest pooled probability; ties by the tie policy.
    mean-expected-score the label nearest the pooled expected score (G-Eval's score averaged
                        over critics); ordered labels only (likert, ordinal, yes/no). Halfway
                        between two labels is a tie, broken by the tie policy.
With any strategy, when every counted critic gave probabilities, the outcome carries the pooled
distribution, expected score and spread as well (for the export and the statistics).

Ordered-label strategies (ordinal and likert scales, by each label's place on the scale):
    median, max, min    the middle, highest or lowest label (two different middle labels are a
                        tie, broken by the tie policy).

Score strategies (score scales):
    mean, weighted-mean, median, max, min
    mean-variance       the mean, with the (population) variance of the scores reported.
    spread              the mean if max - min <= `max_spread`, else abstain.

Policies:
    tie_policy    pessimistic: the tied label that comes first in `priority` (most cautious
                  first); optimistic: the last; abstain: no consensus (-> `fallback`).
    error_policy  ignore: vote among the valid verdicts, report the failures all the same;
                  abstain: any failure makes the panel abstain (-> `fallback`);
                  count_as: each failure is a vote for `error_label` (label scales only).

Scores: spread and thresholds together, as Glacis' judges do (its `JudgeRunner`: the
`consensus` flag from `max(scores) - min(scores) <= consensus_threshold`, the recommendation from
the mean by `uphold_threshold` / `borderline_threshold`, "escalate" below both). Two answers,
each from its own setting, both kept on the outcome:
    disagreement    with `max_spread`: the valid scores spread more than it apart (or a critic
                    failed, or the vote abstained). Without it: the scores fall in different
                    bands (with thresholds), else they are not all equal.
    recommendation  with `thresholds`: the band of the aggregated score (the band with the
                    highest lower bound not above it); a score below every band is
                    `ESCALATE` ("escalate"), whatever the bands are called. It is the score
                    panel's consensus label, so filters, the export and the final-label rule
                    read it where they read a label.
A critic "backs" the consensus (its share is `agreement`) when its score lies within
`max_spread` of the consensus; without `max_spread`, when it falls in the consensus's band;
without either, when it equals the consensus. When the spread flags a disagreement, or a score
is below every band, the vote's note says so (Review's consensus line and the export's
`consensus_note` show it).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from judging.errors import ConfigError, ParseError
from judging.scales import Scale
from judging.verdicts import Verdict, VoteOutcome
from judging.voting.dawid_skene import dawid_skene_vote
from judging.voting.pooling import Opinion, Pooled, nearest_labels, pool
from judging.voting.voting_config import VotingConfig

StrategyKind = Literal["label", "score", "both"]

# The recommendation of a score below every threshold: it met no band, so a human looks at it.
ESCALATE = "escalate"


@dataclass(frozen=True, slots=True)
class Vote:
    """One counted vote: a valid verdict, or a failure counted as `error_label`."""

    critic: str
    value: str | float
    weight: float
    confidence: float | None = None
    from_failure: bool = False  # error_policy "count_as" turned a failure into this vote
    probs: dict[str, float] | None = None  # label probabilities from logprobs, if any


@dataclass(frozen=True, slots=True)
class Ballot:
    """One item's verdicts as a strategy sees them, after the error policy.

    Attributes:
        votes: the counted votes in panel order (failures included only under "count_as").
        failed: the verdicts that gave no usable value, in panel order.
        total: how many critics the panel asked (valid + failed).
        pooled: the votes' pooled label distribution (`judging.voting.pooling`) when the strategy
            pools probabilities or every vote carries them; None otherwise.
    """

    votes: tuple[Vote, ...]
    failed: tuple[Verdict, ...]
    total: int
    pooled: Pooled | None = None

    def tally(self, *, weighted: bool = False, use_confidence: bool = False) -> dict[str, float]:
        """Votes (or weights) per value, in order of first appearance."""
        tally: dict[str, float] = {}
        for vote in self.votes:
            amount = 1.0
            if weighted:
                amount = vote.weight
                if use_confidence:
                    # A verdict without a confidence is taken at face value rather than dropped.
                    amount *= 1.0 if vote.confidence is None else vote.confidence
            key = str(vote.value)
            tally[key] = tally.get(key, 0.0) + amount
        return tally

    @property
    def scores(self) -> list[float]:
        return [float(vote.value) for vote in self.votes]


@dataclass(slots=True)
class Decision:
    """What a strategy returns: a consensus (None = abstain), and whether a tie was broken."""

    consensus: str | float | None
    tie: bool = False
    note: str | None = None
    variance: float | None = None


StrategyResult = Decision | str | float | None
Strategy = Callable[[Ballot, VotingConfig, Scale], StrategyResult]
DatasetStrategy = Callable[[list[list[Verdict]], VotingConfig, Scale], list[VoteOutcome]]


# ----------------------------------------------------------------------------- tie breaking


def priority_order(config: VotingConfig, scale: Scale) -> list[str]:
    """Labels, most cautious first: `config.priority`, then the other labels in scale order."""
    order = [label for label in config.priority if label in scale.labels]
    return order + [label for label in scale.labels if label not in order]


def _top(tally: dict[str, float], config: VotingConfig, scale: Scale) -> Decision:
    """The label with the largest tally, breaking a tie by the tie policy."""
    if not tally:
        return Decision(None, note="no valid verdicts to count")
    best = max(tally.values())
    tied = [label for label, amount in tally.items() if math.isclose(amount, best, abs_tol=1e-12)]
    if len(tied) == 1:
        return Decision(tied[0])
    order = priority_order(config, scale)
    tied.sort(key=lambda label: order.index(label) if label in order else len(order))
    names = " and ".join(tied)
    if config.tie_policy == "abstain":
        return Decision(None, tie=True, note=f"tie between {names}: abstained")
    return Decision(*tie_choice(tied, config))


def tie_choice(tied: list[str], config: VotingConfig) -> tuple[str, bool, str]:
    """`(label, True, note)` for a tie already sorted by `priority_order`, saying honestly how it
    was broken: by the panel's priority, or — with no priority among the tied labels — merely
    by the order of the scale, which is not a judgement of caution."""
    names = " and ".join(tied)
    pick = tied[0] if config.tie_policy == "pessimistic" else tied[-1]
    by_priority = [label for label in config.priority if label in tied]
    if config.tie_policy == "pessimistic" and by_priority:
        how = f"took {pick}, the most cautious by the panel's priority"
    elif config.tie_policy == "optimistic" and by_priority and pick in by_priority:
        how = f"took {pick}, the most lenient by the panel's priority"
    elif config.tie_policy == "pessimistic":
        how = f"no priority set, took {pick} (first in the scale's order)"
    else:
        how = f"no priority set, took {pick} (last in the scale's order)"
    return pick, True, f"tie between {names}: {how}"


def tie_rule_text(config: VotingConfig, scale: Scale) -> str | None:
    """What the panel will do with a tie, in one sentence, before any run (None for score
    strategies and abstaining panels, where nothing is picked)."""
    if config.tie_policy == "abstain" or not scale.labels:
        return None
    order = priority_order(config, scale)
    end = "first" if config.tie_policy == "pessimistic" else "last"
    if not config.priority:
        return (f"No tie priority is set: a tied vote goes to the tied label that comes {end} "
                f"in the scale's order ({', '.join(order)}). That order is not a judgement: "
                "set a priority (most cautious first) or the tie policy 'abstain'.")
    return (f"A tied vote goes to the tied label that comes {end} in the priority "
            f"({', '.join(order)}).")


# ----------------------------------------------------------------------------- label strategies


def plurality(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The label with the most votes; a tie is broken by the tie policy."""
    return _top(ballot.tally(), config, scale)


def majority(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """A label backed by more than half of ALL critics (failed ones count), else abstain."""
    for label, count in ballot.tally().items():
        if count > ballot.total / 2:
            return Decision(label)
    return Decision(None, note=f"no label has more than half of the {ballot.total} critics")


def unanimous(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The label every counted critic gives, else abstain."""
    values = {str(vote.value) for vote in ballot.votes}
    if len(values) == 1:
        return Decision(values.pop())
    if not values:
        return Decision(None, note="no valid verdicts to count")
    return Decision(None, note="the critics are not unanimous")


def weighted(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The label with the largest sum of critic weights (x confidence with `use_confidence`)."""
    tally = ballot.tally(weighted=True, use_confidence=config.use_confidence)
    if tally and max(tally.values()) <= 0:
        return Decision(None, note="every counted vote has weight 0")
    return _top(tally, config, scale)


def any_label(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """`target_label` when at least one critic says it; otherwise the plurality of the others."""
    target = config.target_label
    if target is None:
        raise ConfigError("voting.target_label: the 'any' strategy needs the label to look for")
    said = [
        vote.critic + (" (a failure counted as it)" if vote.from_failure else "")
        for vote in ballot.votes
        if vote.value == target
    ]
    if said:
        return Decision(target, note=f"{target} said by {', '.join(said)}")
    return _top(ballot.tally(), config, scale)


def all_of(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """`target_label` only when every member says it; else the first dissenter's label.

    Agent Judge's "all must pass" over juries (`judging.voting.juries`): the safety jury and the
    quality jury must both accept. A failed member (an abstaining jury) never accepts: under the
    error policy "ignore" the vote then abstains (-> `fallback`) rather than accept without it.
    """
    target = config.target_label
    if target is None:
        raise ConfigError(
            "voting.target_label: the 'all-of' strategy needs the label every member must give")
    for vote_ in ballot.votes:
        if vote_.value != target:
            how = " (a failure counted as it)" if vote_.from_failure else ""
            return Decision(vote_.value,
                            note=f"not all gave {target}: {vote_.critic} gave {vote_.value}{how}")
    if ballot.failed:
        names = ", ".join(verdict.critic for verdict in ballot.failed)
        return Decision(None, note=f"not all gave {target}: {names} gave no verdict")
    if not ballot.votes:
        return Decision(None, note="no valid verdicts to count")
    return Decision(target)


def first_disagreement(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The first critic (panel order) decides unless another disagrees: then abstain and flag.

    The abstention falls back to `fallback` (typically a "needs review" label); the note names
    the first critic that disagreed.
    """
    if not ballot.votes:
        return Decision(None, note="no valid verdicts to count")
    first = ballot.votes[0]
    for vote in ballot.votes[1:]:
        if vote.value != first.value:
            return Decision(
                None,
                note=f"{vote.critic} ({vote.value}) disagrees with {first.critic} ({first.value})",
            )
    return Decision(first.value)


# ----------------------------------------------------------------------------- probability strategies


def pooled_probability(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The label with the highest pooled probability (critics' label probabilities averaged
    by weight; a critic without them counts as certain of its label)."""
    pooled = ballot.pooled
    if pooled is None:
        return Decision(None, note="no valid verdicts to pool")
    return _top({label: p for label, p in pooled.probs.items() if p > 0}, config, scale)


def mean_expected_score(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The label nearest the pooled expected score (G-Eval scores averaged by weight)."""
    pooled = ballot.pooled
    if pooled is None:
        return Decision(None, note="no valid verdicts to pool")
    if pooled.expected is None:
        return Decision(None, note=f"{scale.kind} labels have no order, so no expected score; "
                                   "use pooled-probability")
    tied = nearest_labels(pooled.expected, scale)
    if len(tied) == 1:
        return Decision(tied[0])
    order = priority_order(config, scale)
    tied.sort(key=lambda label: order.index(label) if label in order else len(order))
    if config.tie_policy == "abstain":
        return Decision(None, tie=True, note=f"expected score {pooled.expected:.2f} is halfway "
                        f"between {' and '.join(tied)}: abstained")
    return Decision(*tie_choice(tied, config))


# ----------------------------------------------------------------------------- score strategies


def _scores_or_abstain(ballot: Ballot) -> list[float] | Decision:
    scores = ballot.scores
    return scores if scores else Decision(None, note="no valid scores to aggregate")


def mean(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The mean of the valid scores (failures are left out, never counted as 0)."""
    scores = _scores_or_abstain(ballot)
    return scores if isinstance(scores, Decision) else Decision(statistics.fmean(scores))


def weighted_mean(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The mean of the valid scores weighted by critic weight (x confidence with use_confidence)."""
    total = 0.0
    weight_sum = 0.0
    for vote in ballot.votes:
        weight = vote.weight
        if config.use_confidence:
            weight *= 1.0 if vote.confidence is None else vote.confidence
        total += weight * float(vote.value)
        weight_sum += weight
    if not ballot.votes:
        return Decision(None, note="no valid scores to aggregate")
    if weight_sum <= 0:
        return Decision(None, note="every counted score has weight 0")
    return Decision(total / weight_sum)


def _ordered_labels(ballot: Ballot, scale: Scale, name: str) -> list[str] | Decision:
    """The valid labels sorted by their place on an ordered scale (ordinal, likert)."""
    if scale.level != "ordinal":
        raise ConfigError(
            f"voting.strategy: {name!r} needs an ordered scale (ordinal or likert), but "
            f"{scale.kind} labels have no order; use plurality or another label strategy"
        )
    labels = sorted((str(vote.value) for vote in ballot.votes), key=scale.rank)
    return labels if labels else Decision(None, note="no valid verdicts to count")


def median(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The median of the valid scores (the mean of the middle two for an even count); on an
    ordered label scale, the middle label (two different middle labels: a tie, broken by the
    tie policy)."""
    if not scale.is_numeric:
        labels = _ordered_labels(ballot, scale, "median")
        if isinstance(labels, Decision):
            return labels
        low, high = labels[(len(labels) - 1) // 2], labels[len(labels) // 2]
        if low == high:
            return Decision(low)
        if config.tie_policy == "abstain":
            return Decision(None, tie=True, note=f"median between {low} and {high}: abstained")
        order = priority_order(config, scale)
        tied = sorted({low, high}, key=order.index)
        return Decision(*tie_choice(tied, config))
    scores = _scores_or_abstain(ballot)
    return scores if isinstance(scores, Decision) else Decision(float(statistics.median(scores)))


def maximum(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The highest valid score; on an ordered label scale, the label furthest up the scale."""
    if not scale.is_numeric:
        labels = _ordered_labels(ballot, scale, "max")
        return labels if isinstance(labels, Decision) else Decision(labels[-1])
    scores = _scores_or_abstain(ballot)
    return scores if isinstance(scores, Decision) else Decision(max(scores))


def minimum(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The lowest valid score; on an ordered label scale, the label furthest down the scale."""
    if not scale.is_numeric:
        labels = _ordered_labels(ballot, scale, "min")
        return labels if isinstance(labels, Decision) else Decision(labels[0])
    scores = _scores_or_abstain(ballot)
    return scores if isinstance(scores, Decision) else Decision(min(scores))


def mean_variance(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The mean of the valid scores, with their population variance in `VoteOutcome.variance`."""
    scores = _scores_or_abstain(ballot)
    if isinstance(scores, Decision):
        return scores
    return Decision(statistics.fmean(scores), variance=statistics.pvariance(scores))


def spread(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
    """The mean when the valid scores lie within `max_spread` of each other, else abstain."""
    if config.max_spread is None:
        raise ConfigError("voting.max_spread: the 'spread' strategy needs a maximum spread")
    scores = _scores_or_abstain(ballot)
    if isinstance(scores, Decision):
        return scores
    width = max(scores) - min(scores)
    if width > config.max_spread + 1e-12:
        return Decision(
            None, note=f"scores spread {width:g} apart, more than max_spread {config.max_spread:g}"
        )
    return Decision(statistics.fmean(scores))


# ----------------------------------------------------------------------------- registries

STRATEGIES: dict[str, Strategy] = {
    "plurality": plurality,
    "majority": majority,
    "unanimous": unanimous,
    "weighted": weighted,
    "any": any_label,
    "all-of": all_of,
    "first-disagreement": first_disagreement,
    "mean": mean,
    "weighted-mean": weighted_mean,
    "median": median,
    "max": maximum,
    "min": minimum,
    "mean-variance": mean_variance,
    "spread": spread,
    "pooled-probability": pooled_probability,
    "mean-expected-score": mean_expected_score,
}

# Which scales a strategy applies to: "label" scales, "score" scales, or "both".
STRATEGY_KINDS: dict[str, StrategyKind] = {
    "plurality": "label",
    "majority": "label",
    "unanimous": "label",
    "weighted": "label",
    "any": "label",
    "all-of": "label",
    "first-disagreement": "label",
    "mean": "score",
    "weighted-mean": "score",
    "median": "both",  # on label scales: ordered ones only (the panel check says so)
    "max": "both",
    "min": "both",
    "mean-variance": "score",
    "spread": "score",
    "dawid-skene": "label",
    "pooled-probability": "label",
    "mean-expected-score": "label",
}

# Strategies that read the pooled label probabilities (`Ballot.pooled`): the ballot pools
# them whatever the critics gave, and the note names critics counted by their label alone.
PROBABILITY_STRATEGIES: set[str] = {"pooled-probability", "mean-expected-score"}

_BUILTIN = frozenset(STRATEGY_KINDS)


def _dawid_skene(
    per_item_verdicts: list[list[Verdict]], config: VotingConfig, scale: Scale
) -> list[VoteOutcome]:
    """Dawid-Skene: labels weighted by each critic's accuracy, estimated over the whole dataset."""
    return dawid_skene_vote(per_item_verdicts, config, scale)


DATASET_STRATEGIES: dict[str, DatasetStrategy] = {"dawid-skene": _dawid_skene}


def register_strategy(name: str, fn: Strategy, *, kind: StrategyKind = "both",
                      probabilities: bool = False) -> None:
    """Add a custom per-item strategy under `name` (re-registering a custom name replaces it).

    Args:
        name: the name a `VotingConfig.strategy` uses.
        fn: `fn(ballot, config, scale)` returning a `Decision`, or just the consensus (a label, a
            score, or None to abstain). `vote` fills agreement, counts and flags around it.
        kind: the scales it applies to: "label", "score" or "both".
        probabilities: it reads `ballot.pooled` (the pooled label probabilities), so the
            ballot always pools them, with a note for critics that gave none.

    Raises:
        ConfigError: `name` is a built-in strategy, or `fn` is not callable.
    """
    if name in _BUILTIN:
        raise ConfigError(f"strategy {name!r} is built in; register yours under another name")
    if not callable(fn):
        raise ConfigError(f"strategy {name!r}: expected a function, got {type(fn).__name__}")
    STRATEGIES[name] = fn
    STRATEGY_KINDS[name] = kind
    if probabilities:
        PROBABILITY_STRATEGIES.add(name)
    else:
        PROBABILITY_STRATEGIES.discard(name)


def strategy_names() -> list[str]:
    """Every strategy name a panel may use, per-item and dataset-level, sorted."""
    return sorted(set(STRATEGIES) | set(DATASET_STRATEGIES))


def is_dataset_strategy(name: str) -> bool:
    """True when the strategy needs the whole dataset (use `vote_dataset`)."""
    return name in DATASET_STRATEGIES


def strategy_help(name: str) -> str:
    """The first line of a strategy's docstring, for menus and error messages."""
    fn = STRATEGIES.get(name) or DATASET_STRATEGIES.get(name)
    doc = (fn.__doc__ or "").strip() if fn is not None else ""
    return doc.splitlines()[0] if doc else ""


def unknown_strategy_message(name: str) -> str:
    """The sentence for a strategy name nobody registered."""
    return (
        f"voting.strategy: unknown strategy {name!r}; choose one of {', '.join(strategy_names())}"
    )


# ----------------------------------------------------------------------------- the vote


def _usable_value(verdict: Verdict, scale: Scale) -> str | float | None:
    """The verdict's value on the scale, or None when it gives no usable verdict."""
    if not verdict.ok:
        return None
    if scale.is_numeric:
        raw: object = verdict.score if verdict.score is not None else verdict.label
    else:
        if verdict.label is not None and verdict.label in scale.labels:
            return verdict.label  # the common case, already canonical: skip normalising
        raw = verdict.label if verdict.label is not None else verdict.score
    if raw is None:
        return None
    try:
        return scale.normalize(raw)
    except ParseError:
        return None


def band(score: float, thresholds: dict[str, float]) -> str | None:
    """The recommendation for `score`: the band with the highest lower bound not above it;
    `ESCALATE` when it is below every band (Glacis: "below this means escalate"). None only
    when there are no thresholds."""
    best: tuple[float, str] | None = None
    for name, lower in thresholds.items():
        if score >= lower - 1e-12 and (best is None or lower > best[0]):
            best = (lower, name)
    if best is not None:
        return best[1]
    return ESCALATE if thresholds else None


def backs_consensus(scores: np.ndarray, consensus: np.ndarray | float,
                    config: VotingConfig) -> np.ndarray:
    """Which of `scores` back the score panel's `consensus` (element by element): within
    `max_spread` of it; without `max_spread`, in the same band of `thresholds`; without
    either, equal to it. The one rule a vote's `agreement` and the report's per-critic
    agreement with the consensus both follow (a NaN backs nothing)."""
    scores = np.asarray(scores, dtype=np.float64)
    consensus = np.asarray(consensus, dtype=np.float64)
    if config.max_spread is not None:
        return np.abs(scores - consensus) <= config.max_spread + 1e-9
    if config.thresholds:
        # The band's place among the lower bounds (as `band`: the highest not above the
        # score; -1, escalate, below every one).
        lowers = np.sort(np.fromiter(config.thresholds.values(), dtype=np.float64)) - 1e-12
        known = ~np.isnan(scores) & ~np.isnan(consensus)
        same = (np.searchsorted(lowers, scores, side="right")
                == np.searchsorted(lowers, consensus, side="right"))
        return known & same
    return np.abs(scores - consensus) <= 1e-9


def _below_every_band(score: float, thresholds: dict[str, float]) -> bool:
    return bool(thresholds) and all(score < lower - 1e-12 for lower in thresholds.values())


def _resolve(strategy: str | Strategy) -> tuple[str, Strategy, StrategyKind]:
    if callable(strategy):
        return getattr(strategy, "__name__", "custom"), strategy, "both"
    if strategy in DATASET_STRATEGIES:
        raise ConfigError(
            f"voting.strategy: {strategy!r} needs the whole dataset at once; "
            "use vote_dataset() instead of vote()"
        )
    fn = STRATEGIES.get(strategy)
    if fn is None:
        raise ConfigError(unknown_strategy_message(strategy))
    return strategy, fn, STRATEGY_KINDS.get(strategy, "both")


def _as_decision(result: StrategyResult, name: str, scale: Scale) -> Decision:
    decision = result if isinstance(result, Decision) else Decision(result)
    value = decision.consensus
    if value is None:
        return decision
    if scale.is_numeric:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"strategy {name!r} returned {value!r}, not a score")
        decision.consensus = float(value)
    elif value not in scale.labels:
        raise ConfigError(
            f"strategy {name!r} returned {value!r}, which is not a label of the scale "
            f"({', '.join(scale.labels)})"
        )
    return decision


def vote(
    verdicts: Sequence[Verdict],
    weights: dict[str, float],
    config: VotingConfig,
    scale: Scale,
    *,
    strategy: str | Strategy | None = None,
) -> VoteOutcome:
    """Decide one item from its critics' verdicts.

    Args:
        verdicts: every critic's verdict on the item, in panel order, failed ones included.
        weights: critic name -> weight (a missing critic weighs 1).
        config: the strategy and its tie and error policies.
        scale: the panel's scale (label strategies need a label scale, score ones a score scale).
        strategy: overrides `config.strategy`; may be a registered name or a callable
            `fn(ballot, config, scale)` (see `register_strategy`).

    Returns:
        The outcome: consensus (None when abstaining without a fallback), agreement over ALL
        critics, disagreement flag, counts of valid verdicts, failed count, and for scores the
        spread, variance and recommendation. Failed verdicts never raise.

    Raises:
        ConfigError: an unknown strategy, a strategy on the wrong kind of scale, or a policy that
            needs a setting it does not have (e.g. count_as without error_label).
    """
    name, fn, kind = _resolve(strategy if strategy is not None else config.strategy)
    if kind == "label" and scale.is_numeric:
        raise ConfigError(f"voting.strategy: {name!r} votes on labels but the scale is a score")
    if kind == "score" and not scale.is_numeric:
        raise ConfigError(
            f"voting.strategy: {name!r} aggregates scores but the scale is {scale.kind}"
        )

    real: list[Vote] = []
    failed: list[Verdict] = []
    counted: list[Vote] = []  # what the strategy sees, in panel order
    for verdict in verdicts:
        value = _usable_value(verdict, scale)
        weight = weights.get(verdict.critic, 1.0)
        if value is not None:
            vote_ = Vote(verdict.critic, value, weight, verdict.confidence,
                         probs=verdict.label_probs)
            real.append(vote_)
            counted.append(vote_)
            continue
        failed.append(verdict)
        if config.error_policy == "count_as":
            error_label = _error_label(config, scale)
            counted.append(Vote(verdict.critic, error_label, weight, None, from_failure=True))

    total = len(verdicts)
    notes: list[str] = []
    if failed:
        kinds = Counter(v.failure.value if v.failure else "invalid" for v in failed)
        what = ", ".join(f"{n} {k}" for k, n in kinds.items())
        treatment = {
            "ignore": "left out of the vote",
            "abstain": "so the panel abstains",
            "count_as": f"counted as {config.error_label}",
        }[config.error_policy]
        notes.append(f"{len(failed)} of {total} critics failed ({what}), {treatment}")

    # A built-in probability strategy passed as a callable pools as it does by name.
    pools = name in PROBABILITY_STRATEGIES or fn in (pooled_probability, mean_expected_score)
    pooled = _pooled(counted, real, pools, scale)
    if pooled is not None and pools:
        fallback = pooled.fallback_note()
        if fallback:
            notes.append(fallback)
    if failed and config.error_policy == "abstain":
        decision = Decision(None)
    else:
        ballot = Ballot(votes=tuple(counted), failed=tuple(failed), total=total, pooled=pooled)
        decision = _as_decision(fn(ballot, config, scale), name, scale)
    if decision.note:
        notes.append(decision.note)

    if scale.is_numeric:
        outcome = _score_outcome(decision, real, failed, total, config, notes)
    else:
        outcome = _label_outcome(decision, real, failed, total, config, scale, notes)
    if pooled is not None:
        outcome.label_probs = pooled.probs
        outcome.expected_score, outcome.expected_spread = pooled.expected, pooled.spread
    outcome.note = "; ".join(notes) or None
    return outcome


def _pooled(counted: list[Vote], real: list[Vote], pools: bool, scale: Scale) -> Pooled | None:
    """The pooled label distribution of the counted votes: always for a probability strategy
    (critics without probabilities fall back to their label, and the note says so); for any
    other strategy only when every valid vote carries probabilities, so that a pooled figure
    is never a silent mix of probabilities and labels."""
    if scale.is_numeric or not counted:
        return None
    if not pools and not (real and all(v.probs for v in real)):
        return None
    return pool([Opinion(v.critic, str(v.value), v.probs, v.weight, v.from_failure)
                 for v in counted], scale)


def _error_label(config: VotingConfig, scale: Scale) -> str:
    if scale.is_numeric:
        raise ConfigError(
            "voting.error_policy: 'count_as' needs a label scale; a failure cannot be counted "
            "as a score (it would bias the aggregate). Use 'ignore' or 'abstain'."
        )
    if config.error_label is None:
        raise ConfigError("voting.error_label: error_policy 'count_as' needs the label to count")
    if config.error_label not in scale.labels:
        raise ConfigError(
            f"voting.error_label: {config.error_label!r} is not a label of the scale "
            f"({', '.join(scale.labels)})"
        )
    return config.error_label


def _label_outcome(
    decision: Decision,
    real: list[Vote],
    failed: list[Verdict],
    total: int,
    config: VotingConfig,
    scale: Scale,
    notes: list[str],
) -> VoteOutcome:
    raw_counts = Counter(str(vote.value) for vote in real)
    counts = {label: raw_counts[label] for label in scale.labels if raw_counts[label]}
    consensus = decision.consensus
    if consensus is None and config.fallback is not None:
        consensus = config.fallback
        notes.append(f"abstained: fell back to {config.fallback}")
    if consensus is not None:
        # Only real verdicts back a consensus: a failure counted as a label decides, but it is
        # not agreement.
        agreement: float | None = counts.get(str(consensus), 0) / total if total else None
    else:
        agreement = max(counts.values()) / total if counts and total else None
    agreed = (
        consensus is not None
        and not failed
        and bool(real)
        and all(vote.value == consensus for vote in real)
    )
    return VoteOutcome(
        consensus=consensus,
        agreement=agreement,
        disagreement=not agreed,
        counts=counts,
        failed=len(failed),
        tie=decision.tie,
    )


def _score_outcome(
    decision: Decision,
    real: list[Vote],
    failed: list[Verdict],
    total: int,
    config: VotingConfig,
    notes: list[str],
) -> VoteOutcome:
    """Spread and thresholds, each with its own job (see the module's doc)."""
    scores = [float(vote.value) for vote in real]
    consensus = decision.consensus
    width = max(scores) - min(scores) if scores else None
    thresholds = config.thresholds
    max_spread = config.max_spread
    recommendation: str | None = None
    if consensus is not None and thresholds:
        recommendation = band(float(consensus), thresholds)
        if _below_every_band(float(consensus), thresholds):
            lowest = min(thresholds.items(), key=lambda kv: kv[1])
            notes.append(f"score {float(consensus):g} is below every threshold (the lowest: "
                         f"{lowest[0]} from {lowest[1]:g}): {ESCALATE}")
    bands: list[str] = []
    if thresholds:
        bands = [band(score, thresholds) or ESCALATE for score in scores]
        counts = dict(Counter(bands))
    else:
        counts = dict(Counter(f"{score:g}" for score in scores))
    if max_spread is not None:
        # The spread decides agreement, whatever band the mean falls in: .71 and .99 with
        # max_spread .05 are both "uphold" but do not agree.
        split = width is not None and width > max_spread + 1e-9
        if split and width is not None and consensus is not None:  # (an abstention says why)
            said = f" (the recommendation, {recommendation}, is the aggregate's band)" \
                if recommendation is not None else ""
            notes.append(f"scores spread {width:g} apart, more than max_spread "
                         f"{max_spread:g}: the critics disagree{said}")
    elif thresholds:
        split = len(set(bands)) > 1
    else:
        split = width is not None and width > 1e-9
    backing = (int(backs_consensus(np.asarray(scores), float(consensus), config).sum())
               if consensus is not None else 0)
    agreement = backing / total if consensus is not None and total else None
    return VoteOutcome(
        consensus=consensus,
        agreement=agreement,
        disagreement=bool(failed) or not scores or consensus is None or split,
        counts=counts,
        failed=len(failed),
        recommendation=recommendation,
        spread=width,
        variance=decision.variance,
        tie=decision.tie,
    )


def vote_dataset(
    per_item_verdicts: Sequence[Sequence[Verdict]],
    weights: dict[str, float],
    config: VotingConfig,
    scale: Scale,
) -> list[VoteOutcome]:
    """Decide every item of a dataset: dataset-level strategies see all items at once.

    Args:
        per_item_verdicts: for each item, its critics' verdicts (failed ones included).
        weights: critic name -> weight, for per-item strategies.
        config: the voting configuration.
        scale: the panel's scale.

    Returns:
        One outcome per item, in the same order.

    Raises:
        ConfigError: as `vote`.
    """
    dataset_fn = DATASET_STRATEGIES.get(config.strategy)
    if dataset_fn is not None:
        if scale.is_numeric and STRATEGY_KINDS.get(config.strategy) == "label":
            raise ConfigError(
                f"voting.strategy: {config.strategy!r} votes on labels but the scale is a score"
            )
        return dataset_fn([list(verdicts) for verdicts in per_item_verdicts], config, scale)
    return [vote(verdicts, weights, config, scale) for verdicts in per_item_verdicts]
