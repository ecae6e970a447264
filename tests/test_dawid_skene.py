"""Dawid-Skene: accuracy estimates without gold, its consensus, and the voting strategy."""

from __future__ import annotations

import numpy as np
import pytest

from judging.errors import ConfigError
from judging.scales import Scale
from judging.verdicts import FailureKind, Verdict
from judging.voting.dawid_skene import dawid_skene, dawid_skene_vote
from judging.voting.strategies import VotingConfig

SCALE = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])


def _verdicts(item: str, labels: list[str | None]) -> list[Verdict]:
    out = []
    for i, label in enumerate(labels):
        if label is None:
            out.append(Verdict(critic=f"c{i}", item_id=item, failure=FailureKind.ERROR,
                               message="HTTP 500 after 3 attempts"))
        else:
            out.append(Verdict(critic=f"c{i}", item_id=item, label=label))
    return out


def test_accuracy_estimates_land_within_005_of_the_truth(synthetic_panel):
    model = dawid_skene(synthetic_panel.ratings(), labels=synthetic_panel.labels,
                        critics=synthetic_panel.critics)
    estimated = np.array([model.accuracies[c] for c in synthetic_panel.critics])
    real = synthetic_panel.realised_accuracy()
    assert np.abs(estimated - real).max() < 0.05
    assert model.converged


def test_majority_agreement_overrates_lenient_critics_but_dawid_skene_does_not(synthetic_panel):
    model = dawid_skene(synthetic_panel.ratings(), labels=synthetic_panel.labels,
                        critics=synthetic_panel.critics)
    plural = synthetic_panel.plurality()
    rated = synthetic_panel.codes >= 0
    vs_majority = ((synthetic_panel.codes == plural[:, None]) & rated).sum(0) / rated.sum(0)
    real = synthetic_panel.realised_accuracy()
    for index in (3, 4):  # the lenient critics
        name = synthetic_panel.critics[index]
        assert vs_majority[index] - real[index] > 0.05  # the trap this guards against
        assert abs(model.accuracies[name] - real[index]) < 0.02


def test_consensus_beats_plurality_vote(synthetic_panel):
    model = dawid_skene(synthetic_panel.ratings(), labels=synthetic_panel.labels)
    truth = np.array(synthetic_panel.labels)[synthetic_panel.truth]
    ds_accuracy = (np.array(model.consensus(), dtype=object) == truth).mean()
    plurality_accuracy = (synthetic_panel.plurality() == synthetic_panel.truth).mean()
    assert ds_accuracy > plurality_accuracy + 0.02


def test_model_shapes_priors_and_posteriors(synthetic_panel):
    model = dawid_skene(synthetic_panel.ratings(), labels=synthetic_panel.labels)
    assert model.confusion.shape == (5, 4, 4)
    assert np.allclose(model.confusion.sum(axis=2), 1.0)
    assert np.allclose(model.posteriors.sum(axis=1), 1.0)
    assert model.priors == pytest.approx([0.3, 0.3, 0.25, 0.15], abs=0.03)
    frame = model.confusion_frame(model.critics[0])
    assert list(frame.index) == synthetic_panel.labels


def test_items_without_ratings_get_no_consensus():
    model = dawid_skene([["a", "a"], ["b", "b"], [None, None], ["a", "b"]])
    assert model.consensus()[2] is None
    assert model.posteriors[2] == pytest.approx(model.priors)


def test_needs_two_labels():
    with pytest.raises(ValueError, match="two labels"):
        dawid_skene([["a", "a"], ["a", "a"]])


# ------------------------------------------------------------------ the voting strategy


def test_vote_outcomes_report_failures_honestly():
    items = [
        _verdicts("1", ["KEEP", "KEEP", "KEEP"]),
        _verdicts("2", ["KEEP", "KEEP", None]),
        _verdicts("3", ["REJECT", "REJECT", "KEEP"]),
        _verdicts("4", [None, None, None]),
    ] + [_verdicts(str(i), ["SPLIT", "SPLIT", "MERGE"]) for i in range(5, 12)]
    config = VotingConfig(strategy="dawid-skene", fallback="REJECT")
    outcomes = dawid_skene_vote(items, config, SCALE)
    assert len(outcomes) == len(items)
    first, second, third, fourth = outcomes[:4]
    assert (first.consensus, first.agreement, first.disagreement) == ("KEEP", 1.0, False)
    # A failed critic never makes an item look agreed.
    assert second.consensus == "KEEP" and second.failed == 1
    assert second.disagreement is True and second.agreement == pytest.approx(2 / 3)
    assert second.counts == {"KEEP": 2}
    assert third.consensus == "REJECT" and third.counts == {"REJECT": 2, "KEEP": 1}
    assert fourth.consensus == "REJECT" and fourth.failed == 3 and fourth.agreement == 0.0
    assert "no valid verdict" in fourth.note and "fell back to REJECT" in fourth.note
    assert "1 of 3 critics failed (1 error)" in second.note


def test_error_policies():
    items = [_verdicts("1", ["KEEP", "KEEP", None]), _verdicts("2", ["REJECT", "KEEP", "KEEP"])]
    abstain = dawid_skene_vote(items, VotingConfig(error_policy="abstain", fallback="SPLIT"),
                               SCALE)
    assert abstain[0].consensus == "SPLIT" and "abstained" in abstain[0].note
    assert abstain[0].disagreement and abstain[0].agreement == 0.0
    counted = dawid_skene_vote(
        items, VotingConfig(error_policy="count_as", error_label="REJECT"), SCALE
    )
    # The failure votes REJECT in the model, but only real verdicts are counted as agreement.
    assert counted[0].failed == 1 and counted[0].counts == {"KEEP": 2}
    assert counted[0].agreement == pytest.approx(2 / 3) and "counted as REJECT" in counted[0].note
    with pytest.raises(ConfigError, match="error_label"):
        dawid_skene_vote(items, VotingConfig(error_policy="count_as"), SCALE)


def test_ties_follow_the_tie_policy():
    # Two symmetric critics: the split items are exact ties.
    items = [_verdicts("1", ["KEEP", "KEEP"]), _verdicts("2", ["REJECT", "REJECT"]),
             _verdicts("3", ["KEEP", "REJECT"]), _verdicts("4", ["REJECT", "KEEP"])]
    scale = Scale(kind="nominal", labels=["KEEP", "REJECT"])
    pessimistic = dawid_skene_vote(items, VotingConfig(priority=["REJECT", "KEEP"]), scale)
    optimistic = dawid_skene_vote(
        items, VotingConfig(priority=["REJECT", "KEEP"], tie_policy="optimistic"), scale
    )
    abstain = dawid_skene_vote(items, VotingConfig(tie_policy="abstain"), scale)
    assert pessimistic[2].tie and pessimistic[2].consensus == "REJECT"
    assert optimistic[2].tie and optimistic[2].consensus == "KEEP"
    assert abstain[2].tie and abstain[2].consensus is None
    assert not pessimistic[0].tie and pessimistic[0].consensus == "KEEP"


def test_labels_are_normalised_and_unknown_ones_count_as_failed():
    items = [[Verdict(critic="a", item_id="1", label="keep"),
              Verdict(critic="b", item_id="1", label="KEEP"),
              Verdict(critic="c", item_id="1", label="PERHAPS")],
             _verdicts("2", ["REJECT", "REJECT", "REJECT"])]
    outcomes = dawid_skene_vote(items, VotingConfig(), SCALE)
    assert outcomes[0].counts == {"KEEP": 2} and outcomes[0].failed == 1


def test_score_scale_is_a_config_error():
    with pytest.raises(ConfigError, match="label scale"):
        dawid_skene_vote([], VotingConfig(), Scale(kind="score", min=0, max=1))


def test_registered_as_dataset_strategy(synthetic_panel):
    from judging.voting.strategies import vote_dataset

    ratings = synthetic_panel.ratings()[:300]
    items = [
        [Verdict(critic=name, item_id=str(i), label=label) if label is not None else
         Verdict(critic=name, item_id=str(i), failure=FailureKind.PARSE_FAIL, message="no JSON")
         for name, label in zip(synthetic_panel.critics, row, strict=True)]
        for i, row in enumerate(ratings)
    ]
    config = VotingConfig(strategy="dawid-skene")
    outcomes = vote_dataset(items, {}, config, SCALE)
    assert [o.consensus for o in outcomes] == [
        o.consensus for o in dawid_skene_vote(items, config, SCALE)
    ]
