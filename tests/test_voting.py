"""Voting: every strategy, tie policy and error policy, and the honesty invariants."""

from __future__ import annotations

import math

import pytest

from judging.errors import ConfigError
from judging.scales import Scale
from judging.verdicts import FailureKind, Verdict
from judging.voting.strategies import (
    DATASET_STRATEGIES,
    STRATEGIES,
    STRATEGY_KINDS,
    Ballot,
    Decision,
    VotingConfig,
    band,
    register_strategy,
    strategy_help,
    strategy_names,
    vote,
    vote_dataset,
)

YESNO = Scale(kind="yesno")
TAXONOMY = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])
SCORE = Scale(kind="score", min=0, max=1)
LABEL_STRATEGIES = [n for n, k in STRATEGY_KINDS.items() if k == "label" and n in STRATEGIES]
SCORE_STRATEGIES = [n for n, k in STRATEGY_KINDS.items() if k == "score"]


def labels(*values: str | None, item: str = "i1") -> list[Verdict]:
    """Verdicts from critics c0, c1, ...; None is a failed call."""
    out = []
    for index, value in enumerate(values):
        if value is None:
            out.append(Verdict(f"c{index}", item, failure=FailureKind.ERROR, message="HTTP 500 x3"))
        else:
            out.append(Verdict(f"c{index}", item, label=value, confidence=0.9))
    return out


def scores(*values: float | None) -> list[Verdict]:
    out = []
    for index, value in enumerate(values):
        if value is None:
            out.append(Verdict(f"c{index}", "i1", failure=FailureKind.PARSE_FAIL, message="?"))
        else:
            out.append(Verdict(f"c{index}", "i1", score=value))
    return out


def cfg(**fields: object) -> VotingConfig:
    return VotingConfig(**fields)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- label strategies


@pytest.mark.parametrize(
    ("strategy", "values", "extra", "consensus"),
    [
        ("plurality", ["KEEP", "KEEP", "REJECT"], {}, "KEEP"),
        ("plurality", ["SPLIT", "MERGE", "MERGE", "KEEP"], {}, "MERGE"),
        ("majority", ["KEEP", "KEEP", "REJECT"], {}, "KEEP"),
        ("majority", ["KEEP", "KEEP", "REJECT", "SPLIT"], {}, None),  # 2 of 4 is not > 50%
        ("unanimous", ["KEEP", "KEEP", "KEEP"], {}, "KEEP"),
        ("unanimous", ["KEEP", "KEEP", "REJECT"], {}, None),
        ("any", ["KEEP", "KEEP", "REJECT"], {"target_label": "REJECT"}, "REJECT"),
        ("any", ["KEEP", "KEEP", "SPLIT"], {"target_label": "REJECT"}, "KEEP"),
        ("first-disagreement", ["SPLIT", "SPLIT", "SPLIT"], {}, "SPLIT"),
        ("first-disagreement", ["SPLIT", "SPLIT", "KEEP"], {}, None),
        ("weighted", ["KEEP", "KEEP", "REJECT"], {}, "KEEP"),
    ],
)
def test_label_strategies(
    strategy: str, values: list[str], extra: dict[str, object], consensus: str | None
) -> None:
    outcome = vote(labels(*values), {}, cfg(strategy=strategy, **extra), TAXONOMY)
    assert outcome.consensus == consensus
    assert outcome.failed == 0
    assert sum(outcome.counts.values()) == len(values)


def test_counts_follow_scale_order_and_agreement_is_share_of_critics() -> None:
    outcome = vote(labels("MERGE", "KEEP", "MERGE"), {}, cfg(), TAXONOMY)
    assert list(outcome.counts) == ["KEEP", "MERGE"]
    assert outcome.counts == {"KEEP": 1, "MERGE": 2}
    assert outcome.agreement == pytest.approx(2 / 3)
    assert outcome.disagreement is True


def test_unanimous_valid_vote_is_agreed() -> None:
    outcome = vote(labels("yes", "yes", "yes"), {}, cfg(strategy="unanimous"), YESNO)
    assert outcome == outcome.__class__(
        consensus="yes", agreement=1.0, disagreement=False, counts={"yes": 3}, failed=0
    )


def test_weighted_heavier_critic_outvotes_two_light_ones() -> None:
    weights = {"c0": 3.0, "c1": 1.0, "c2": 1.0}
    outcome = vote(labels("REJECT", "KEEP", "KEEP"), weights, cfg(strategy="weighted"), TAXONOMY)
    assert outcome.consensus == "REJECT"
    # Agreement counts critics, not weight.
    assert outcome.agreement == pytest.approx(1 / 3)


def test_weighted_with_confidence() -> None:
    verdicts = [
        Verdict("c0", "i", label="yes", confidence=0.2),
        Verdict("c1", "i", label="yes", confidence=0.2),
        Verdict("c2", "i", label="no", confidence=0.9),
    ]
    assert vote(verdicts, {}, cfg(strategy="weighted"), YESNO).consensus == "yes"
    with_conf = vote(verdicts, {}, cfg(strategy="weighted", use_confidence=True), YESNO)
    assert with_conf.consensus == "no"


def test_weighted_all_zero_weights_abstains_to_fallback() -> None:
    outcome = vote(
        labels("yes", "no"), {"c0": 0, "c1": 0}, cfg(strategy="weighted", fallback="no"), YESNO
    )
    assert outcome.consensus == "no"
    assert "weight 0" in (outcome.note or "")


def test_majority_counts_failed_critics_in_the_denominator() -> None:
    # 1 of 3 critics is not a majority even though it is the only valid verdict.
    outcome = vote(labels("yes", None, None), {}, cfg(strategy="majority"), YESNO)
    assert outcome.consensus is None
    assert outcome.failed == 2
    assert outcome.disagreement is True


def test_first_disagreement_names_the_dissenter_and_falls_back() -> None:
    outcome = vote(
        labels("KEEP", "KEEP", "SPLIT"),
        {},
        cfg(strategy="first-disagreement", fallback="MERGE"),
        TAXONOMY,
    )
    assert outcome.consensus == "MERGE"
    assert outcome.disagreement is True
    assert "c2 (SPLIT) disagrees with c0 (KEEP)" in (outcome.note or "")
    assert outcome.agreement == 0.0  # nobody voted for the fallback


def test_any_without_target_label_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="target_label"):
        vote(labels("yes"), {}, cfg(strategy="any"), YESNO)


def test_any_with_no_valid_verdicts_abstains() -> None:
    outcome = vote(labels(None, None), {}, cfg(strategy="any", target_label="yes"), YESNO)
    assert outcome.consensus is None
    assert outcome.agreement is None


# ----------------------------------------------------------------------------- tie policies


@pytest.mark.parametrize(
    ("policy", "priority", "expected"),
    [
        ("pessimistic", [], "KEEP"),  # scale order
        ("optimistic", [], "REJECT"),
        ("pessimistic", ["REJECT", "SPLIT", "MERGE", "KEEP"], "REJECT"),
        ("optimistic", ["REJECT", "SPLIT", "MERGE", "KEEP"], "KEEP"),
        ("pessimistic", ["REJECT"], "REJECT"),  # a partial priority, then scale order
        ("abstain", [], None),
    ],
)
@pytest.mark.parametrize("strategy", ["plurality", "weighted"])
def test_tie_policies(
    strategy: str, policy: str, priority: list[str], expected: str | None
) -> None:
    config = cfg(strategy=strategy, tie_policy=policy, priority=priority)
    outcome = vote(labels("KEEP", "REJECT"), {}, config, TAXONOMY)
    assert outcome.tie is True
    assert outcome.consensus == expected
    assert outcome.disagreement is True
    assert "tie between" in (outcome.note or "")


def test_abstained_tie_takes_the_fallback() -> None:
    config = cfg(tie_policy="abstain", fallback="SPLIT")
    outcome = vote(labels("KEEP", "REJECT"), {}, config, TAXONOMY)
    assert outcome.consensus == "SPLIT"
    assert "fell back to SPLIT" in (outcome.note or "")


def test_abstain_without_fallback_still_reports_the_split() -> None:
    outcome = vote(
        labels("KEEP", "KEEP", "REJECT", "REJECT"), {}, cfg(tie_policy="abstain"), TAXONOMY
    )
    assert outcome.consensus is None
    assert outcome.agreement == 0.5  # the largest bloc, so the reviewer sees how split it was


def test_no_tie_is_not_flagged() -> None:
    assert vote(labels("KEEP", "KEEP", "REJECT"), {}, cfg(), TAXONOMY).tie is False


# ----------------------------------------------------------------------------- error policies


@pytest.mark.parametrize("strategy", LABEL_STRATEGIES)
@pytest.mark.parametrize("policy", ["ignore", "abstain", "count_as"])
def test_a_failed_critic_never_makes_a_vote_look_unanimous(strategy: str, policy: str) -> None:
    config = cfg(strategy=strategy, error_policy=policy, error_label="yes", target_label="yes")
    outcome = vote(labels("yes", "yes", None), {}, config, YESNO)
    assert outcome.disagreement is True
    assert outcome.failed == 1
    assert outcome.counts == {"yes": 2}  # the failure is not a "yes" in the counts
    if outcome.consensus is not None:
        assert outcome.agreement == pytest.approx(2 / 3)
    assert "1 of 3 critics failed" in (outcome.note or "")


def test_error_policy_ignore_votes_among_the_valid_ones() -> None:
    outcome = vote(labels("no", "yes", None, None), {}, cfg(tie_policy="optimistic"), YESNO)
    # yes/no tie among valid ones; failures left out rather than breaking the tie.
    assert outcome.consensus == "no"  # optimistic = last in scale order (yes, no)
    assert outcome.failed == 2
    assert outcome.agreement == 0.25


def test_error_policy_abstain_makes_the_panel_abstain() -> None:
    config = cfg(error_policy="abstain", fallback="no")
    outcome = vote(labels("yes", "yes", "yes", None), {}, config, YESNO)
    assert outcome.consensus == "no"
    assert outcome.disagreement is True
    assert outcome.counts == {"yes": 3}
    assert "panel abstains" in (outcome.note or "")
    no_failure = vote(labels("yes", "yes", "yes"), {}, config, YESNO)
    assert no_failure.consensus == "yes"


def test_error_policy_count_as_decides_but_is_not_agreement() -> None:
    config = cfg(error_policy="count_as", error_label="REJECT")
    outcome = vote(labels("KEEP", None, None), {}, config, TAXONOMY)
    assert outcome.consensus == "REJECT"
    assert outcome.agreement == 0.0  # no critic actually said REJECT
    assert outcome.disagreement is True
    assert "counted as REJECT" in (outcome.note or "")


def test_error_policy_count_as_breaks_unanimity() -> None:
    config = cfg(strategy="unanimous", error_policy="count_as", error_label="no", fallback="no")
    outcome = vote(labels("yes", "yes", None), {}, config, YESNO)
    assert outcome.consensus == "no"  # via fallback: "yes" was not unanimous


@pytest.mark.parametrize(
    ("config", "scale", "match"),
    [
        (cfg(error_policy="count_as"), YESNO, "error_label"),
        (cfg(error_policy="count_as", error_label="maybe"), YESNO, "not a label"),
        (cfg(strategy="mean", error_policy="count_as", error_label="x"), SCORE, "score"),
    ],
)
def test_count_as_misconfigured(config: VotingConfig, scale: Scale, match: str) -> None:
    verdicts = scores(0.5, None) if scale.is_numeric else labels("yes", None)
    with pytest.raises(ConfigError, match=match):
        vote(verdicts, {}, config, scale)


def test_every_failure_kind_is_counted_and_named() -> None:
    verdicts = [Verdict("ok", "i", label="yes")] + [
        Verdict(kind.value, "i", failure=kind, message="m") for kind in FailureKind
    ]
    outcome = vote(verdicts, {}, cfg(), YESNO)
    assert outcome.failed == len(FailureKind)
    for kind in FailureKind:
        assert kind.value in (outcome.note or "")


def test_label_off_the_scale_counts_as_failed_and_synonyms_are_normalised() -> None:
    verdicts = [
        Verdict("a", "i", label="YES "),
        Verdict("b", "i", label="true"),
        Verdict("c", "i", label="perhaps"),
    ]
    outcome = vote(verdicts, {}, cfg(), YESNO)
    assert outcome.counts == {"yes": 2}
    assert outcome.failed == 1


def test_no_verdicts_at_all() -> None:
    outcome = vote([], {}, cfg(fallback="no"), YESNO)
    assert outcome.consensus == "no"
    assert outcome.agreement is None
    assert outcome.disagreement is True


# ----------------------------------------------------------------------------- score strategies


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("mean", 0.6),
        ("median", 0.5),
        ("max", 0.9),
        ("min", 0.4),
        ("mean-variance", 0.6),
        ("weighted-mean", (0.9 * 2 + 0.5 + 0.4) / 4),
    ],
)
def test_score_strategies(strategy: str, expected: float) -> None:
    weights = {"c0": 2.0}
    outcome = vote(scores(0.9, 0.5, 0.4), weights, cfg(strategy=strategy), SCORE)
    assert outcome.consensus == pytest.approx(expected)
    assert outcome.spread == pytest.approx(0.5)
    assert outcome.disagreement is True


def test_mean_variance_reports_the_variance() -> None:
    outcome = vote(scores(0.2, 0.4, 0.6), {}, cfg(strategy="mean-variance"), SCORE)
    assert outcome.variance == pytest.approx((0.2**2 + 0 + 0.2**2) / 3)
    assert vote(scores(0.2, 0.4), {}, cfg(strategy="mean"), SCORE).variance is None


@pytest.mark.parametrize("strategy", SCORE_STRATEGIES)
def test_errors_are_never_averaged_in_as_zero(strategy: str) -> None:
    config = cfg(strategy=strategy, max_spread=0.5)
    outcome = vote(scores(0.8, 0.8, None), {}, config, SCORE)
    assert outcome.consensus == pytest.approx(0.8)  # a 0 for the error would give 0.53
    assert outcome.failed == 1
    assert outcome.disagreement is True
    assert outcome.agreement == pytest.approx(2 / 3)


@pytest.mark.parametrize("strategy", SCORE_STRATEGIES)
def test_score_strategies_with_no_valid_score_abstain(strategy: str) -> None:
    outcome = vote(scores(None, None), {}, cfg(strategy=strategy, max_spread=0.1), SCORE)
    assert outcome.consensus is None
    assert outcome.agreement is None
    assert outcome.failed == 2


def test_score_error_policy_abstain() -> None:
    outcome = vote(scores(0.8, None), {}, cfg(strategy="mean", error_policy="abstain"), SCORE)
    assert outcome.consensus is None


def test_weighted_mean_with_confidence() -> None:
    verdicts = [
        Verdict("a", "i", score=1.0, confidence=0.1),
        Verdict("b", "i", score=0.0, confidence=0.9),
    ]
    outcome = vote(verdicts, {}, cfg(strategy="weighted-mean", use_confidence=True), SCORE)
    assert outcome.consensus == pytest.approx(0.1)


THRESHOLDS = {"uphold": 0.7, "borderline": 0.4, "escalate": 0.0}


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (0.95, "uphold"),
        (0.7, "uphold"),
        (0.69, "borderline"),
        (0.4, "borderline"),
        (0.1, "escalate"),
    ],
)
def test_band(score: float, expected: str) -> None:
    assert band(score, THRESHOLDS) == expected


def test_band_below_every_threshold_is_escalate() -> None:
    # Glacis: below the lowest threshold "means escalate", whatever the bands are called.
    assert band(0.1, {"high": 0.5}) == "escalate"
    assert band(0.1, {}) is None


def test_thresholds_give_a_recommendation_and_counts_per_recommendation() -> None:
    config = cfg(strategy="median", thresholds=THRESHOLDS)
    outcome = vote(scores(0.9, 0.8, 0.5, 0.1), {}, config, SCORE)
    assert outcome.consensus == pytest.approx(0.65)
    assert outcome.recommendation == "borderline"
    assert outcome.counts == {"uphold": 2, "borderline": 1, "escalate": 1}
    assert outcome.agreement == 0.25  # only the 0.5 critic lands in "borderline"
    assert outcome.disagreement is True


def test_thresholds_agree_when_all_in_one_band() -> None:
    config = cfg(strategy="mean", thresholds=THRESHOLDS)
    outcome = vote(scores(0.9, 0.8, 0.75), {}, config, SCORE)
    assert outcome.recommendation == "uphold"
    assert outcome.agreement == 1.0
    assert outcome.disagreement is False


@pytest.mark.parametrize(
    ("values", "max_spread", "disagreement"),
    [((0.5, 0.6, 0.55), 0.1, False), ((0.5, 0.7), 0.1, True), ((0.5, 0.5), None, False)],
)
def test_consensus_as_spread_within_max_spread(
    values: tuple[float, ...], max_spread: float | None, disagreement: bool
) -> None:
    outcome = vote(scores(*values), {}, cfg(strategy="mean", max_spread=max_spread), SCORE)
    assert outcome.disagreement is disagreement


def test_spread_strategy_abstains_when_scores_are_far_apart() -> None:
    config = cfg(strategy="spread", max_spread=0.2)
    assert vote(scores(0.5, 0.6), {}, config, SCORE).consensus == pytest.approx(0.55)
    far = vote(scores(0.1, 0.9), {}, config, SCORE)
    assert far.consensus is None
    assert "max_spread" in (far.note or "")
    with pytest.raises(ConfigError, match="max_spread"):
        vote(scores(0.5), {}, cfg(strategy="spread"), SCORE)


def test_score_without_thresholds_counts_per_value() -> None:
    outcome = vote(scores(0.5, 0.5, 1.0), {}, cfg(strategy="median"), SCORE)
    assert outcome.counts == {"0.5": 2, "1": 1}
    assert outcome.agreement == pytest.approx(2 / 3)


# ----------------------------------------------------------------------------- registry


def test_unknown_strategy_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown strategy 'borda'.*plurality"):
        vote(labels("yes"), {}, cfg(strategy="borda"), YESNO)


@pytest.mark.parametrize(
    ("strategy", "scale", "verdicts"),
    [("mean", YESNO, labels("yes")), ("plurality", SCORE, scores(0.5))],
)
def test_strategy_on_the_wrong_kind_of_scale(
    strategy: str, scale: Scale, verdicts: list[Verdict]
) -> None:
    with pytest.raises(ConfigError, match="voting.strategy"):
        vote(verdicts, {}, cfg(strategy=strategy), scale)


def test_dataset_strategy_through_vote_is_refused() -> None:
    with pytest.raises(ConfigError, match="vote_dataset"):
        vote(labels("yes"), {}, cfg(strategy="dawid-skene"), YESNO)


def test_strategy_names_list_everything() -> None:
    names = strategy_names()
    assert names == sorted(names)
    assert set(STRATEGIES) | set(DATASET_STRATEGIES) == set(names)
    for expected in (
        "plurality",
        "majority",
        "unanimous",
        "weighted",
        "any",
        "first-disagreement",
        "mean",
        "weighted-mean",
        "median",
        "max",
        "min",
        "mean-variance",
        "spread",
        "dawid-skene",
    ):
        assert expected in names
    assert all(strategy_help(name) for name in names)


@pytest.fixture
def custom_strategy() -> object:
    def lowest_confidence_wins(ballot: Ballot, config: VotingConfig, scale: Scale) -> str | None:
        """The label of the least confident critic (a deliberately odd rule)."""
        real = [v for v in ballot.votes if v.confidence is not None]
        return min(real, key=lambda v: v.confidence or 0).value if real else None  # type: ignore[return-value]

    register_strategy("least-sure", lowest_confidence_wins, kind="label")
    yield lowest_confidence_wins
    STRATEGIES.pop("least-sure", None)
    STRATEGY_KINDS.pop("least-sure", None)


def test_custom_strategy_by_name_gets_the_same_honest_outcome(custom_strategy: object) -> None:
    verdicts = [
        Verdict("a", "i", label="yes", confidence=0.9),
        Verdict("b", "i", label="no", confidence=0.3),
        Verdict("c", "i", failure=FailureKind.ERROR, message="500"),
    ]
    outcome = vote(verdicts, {}, cfg(strategy="least-sure"), YESNO)
    assert outcome.consensus == "no"
    assert outcome.agreement == pytest.approx(1 / 3)
    assert outcome.failed == 1
    assert outcome.disagreement is True
    assert "least-sure" in strategy_names()


def test_callable_strategy_and_decision_result() -> None:
    def always_split(ballot: Ballot, config: VotingConfig, scale: Scale) -> Decision:
        return Decision("SPLIT", note="always split")

    outcome = vote(labels("KEEP"), {}, cfg(), TAXONOMY, strategy=always_split)
    assert outcome.consensus == "SPLIT"
    assert outcome.note == "always split"


def test_custom_strategy_returning_an_off_scale_label_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'maybe'.*not a label"):
        vote(labels("yes"), {}, cfg(), YESNO, strategy=lambda b, c, s: "maybe")


def test_register_strategy_refuses_builtin_names_and_non_callables() -> None:
    with pytest.raises(ConfigError, match="built in"):
        register_strategy("plurality", lambda b, c, s: None)
    with pytest.raises(ConfigError, match="expected a function"):
        register_strategy("broken", "not a function")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- dataset level


def test_vote_dataset_per_item_strategies() -> None:
    outcomes = vote_dataset([labels("yes", "yes"), labels("no", None)], {}, cfg(), YESNO)
    assert [o.consensus for o in outcomes] == ["yes", "no"]
    assert [o.disagreement for o in outcomes] == [False, True]


def test_vote_dataset_calls_the_dataset_strategy(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def fake(per_item: list[list[Verdict]], config: VotingConfig, scale: Scale) -> list:  # type: ignore[type-arg]
        seen.append(len(per_item))
        return [vote(v, {}, cfg(), scale) for v in per_item]

    monkeypatch.setitem(DATASET_STRATEGIES, "dawid-skene", fake)
    outcomes = vote_dataset(
        [labels("yes"), labels("no"), labels("yes")], {}, cfg(strategy="dawid-skene"), YESNO
    )
    assert seen == [3]
    assert len(outcomes) == 3


def test_agreement_is_never_nan() -> None:
    for values in (["yes"], [None], ["yes", None], []):
        outcome = vote(labels(*values), {}, cfg(), YESNO)
        assert outcome.agreement is None or not math.isnan(outcome.agreement)


def test_dawid_skene_through_vote_dataset() -> None:
    pytest.importorskip("judging.voting.dawid_skene")
    per_item = [
        [
            Verdict("good", str(i), label="yes" if i % 3 else "no"),
            Verdict("also-good", str(i), label="yes" if i % 3 else "no"),
            Verdict("noisy", str(i), label="yes"),
        ]
        for i in range(30)
    ]
    per_item[0].append(Verdict("broken", "0", failure=FailureKind.ERROR, message="500"))
    outcomes = vote_dataset(per_item, {}, cfg(strategy="dawid-skene"), YESNO)
    assert len(outcomes) == 30
    assert [o.consensus for o in outcomes] == ["yes" if i % 3 else "no" for i in range(30)]
    assert outcomes[0].failed == 1
    assert outcomes[0].disagreement is True


# ----------------------------------------------------------------------------- honest ties


def test_a_tie_without_a_priority_does_not_claim_caution() -> None:
    outcome = vote(labels("SPLIT", "MERGE", "REJECT"), {}, cfg(), TAXONOMY)
    assert outcome.tie and outcome.consensus == "REJECT"  # first of the three in scale order
    assert "cautious" not in (outcome.note or "")
    assert outcome.note == ("tie between REJECT and SPLIT and MERGE: no priority set, took "
                            "REJECT (first in the scale's order)")


def test_a_tie_broken_by_the_priority_says_so() -> None:
    outcome = vote(labels("SPLIT", "MERGE"), {}, cfg(priority=["MERGE", "SPLIT"]), TAXONOMY)
    assert (outcome.consensus, outcome.tie) == ("MERGE", True)
    assert outcome.note == ("tie between MERGE and SPLIT: took MERGE, the most cautious by the "
                            "panel's priority")


def test_the_tie_rule_is_stated_before_a_run() -> None:
    from judging.voting.strategies import tie_rule_text

    text = tie_rule_text(cfg(), TAXONOMY)
    assert text is not None and "No tie priority is set" in text and "KEEP, REJECT" in text
    assert "in the priority (MERGE, KEEP" in (tie_rule_text(cfg(priority=["MERGE"]), TAXONOMY) or "")
    assert tie_rule_text(cfg(tie_policy="abstain"), TAXONOMY) is None


# -- ordered labels: median, max, min (issue 10 part 3) -------------------------------------


def _said(*labels: str | None) -> list[Verdict]:
    return [Verdict(f"c{n}", "i1", label=label) if label is not None
            else Verdict(f"c{n}", "i1", failure=FailureKind.ERROR, message="HTTP 500 x3")
            for n, label in enumerate(labels)]


LIKERT = Scale(kind="likert", min=1, max=5)
GRADES = Scale(kind="ordinal", labels=["poor", "fair", "good", "great"])


@pytest.mark.parametrize(("strategy", "labels", "expected"), [
    ("median", ("1", "4", "5"), "4"),
    ("max", ("1", "4", "5"), "5"),
    ("min", ("1", "4", "5"), "1"),
    ("median", ("5", "5", "1", None), "5"),  # a failed critic is left out, never a 0
    ("median", ("3", "2", "4", "3"), "3"),  # both middle labels are 3
])
def test_ordered_labels_are_aggregated_by_their_place_on_the_scale(strategy, labels, expected):
    outcome = vote(_said(*labels), {}, VotingConfig(strategy=strategy), LIKERT)
    assert outcome.consensus == expected and not outcome.tie
    valid = [label for label in labels if label is not None]
    assert outcome.agreement == pytest.approx(valid.count(expected) / len(labels))


def test_the_order_is_the_scales_not_the_alphabets():
    said = _said("great", "fair", "poor")  # alphabetically: fair < great < poor
    assert vote(said, {}, VotingConfig(strategy="median"), GRADES).consensus == "fair"
    assert vote(said, {}, VotingConfig(strategy="max"), GRADES).consensus == "great"


@pytest.mark.parametrize(("config", "expected"), [
    (VotingConfig(strategy="median"), "fair"),  # no priority: first in the scale's order
    (VotingConfig(strategy="median", priority=["good"]), "good"),
    (VotingConfig(strategy="median", tie_policy="optimistic"), "good"),
    (VotingConfig(strategy="median", tie_policy="abstain"), None),
])
def test_two_different_middle_labels_are_a_tie_broken_by_the_tie_policy(config, expected):
    outcome = vote(_said("poor", "fair", "good", "great"), {}, config, GRADES)
    assert outcome.consensus == expected and outcome.tie
    assert "fair" in outcome.note and "good" in outcome.note


@pytest.mark.parametrize("strategy", ["median", "max", "min"])
def test_a_nominal_scale_has_no_order_to_aggregate(strategy):
    from judging.panel.panel_model import Panel

    with pytest.raises(ConfigError, match=f"'{strategy}' needs an order among the labels"):
        Panel.model_validate({
            "name": "p", "scale": {"kind": "nominal", "labels": ["a", "b"]},
            "voting": {"strategy": strategy},
            "critics": [{"name": "c", "model": "m", "prompt_template": "{x}"}]})
