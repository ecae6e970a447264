"""Audit strata by the panel's confidence (`judging.analysis.audit_strata`): the cut points, the
posterior of the consensus by Bayes' rule under the fitted Dawid-Skene model (checked by hand
from the fit's priors and confusion matrices), and, on a small seeded simulation, that the
label-next queue over these strata keeps its coverage and no bias (the 200-run figures are
`benchmarks/bench_audit.py`'s `_by_confidence` ones)."""

from __future__ import annotations

import numpy as np
import pytest

from judging.analysis.audit_stats import planned_strata, stratified_mean
from judging.analysis.audit_strata import (
    CONFIDENCE_STRATA,
    confidence_codes,
    consensus_confidence,
)
from judging.voting.dawid_skene import dawid_skene


def test_confidence_codes_cut_at_sure_and_likely() -> None:
    assert CONFIDENCE_STRATA == ("sure", "likely", "doubtful")
    got = confidence_codes([1.0, 0.95, 0.9499, 0.8, 0.7999, 0.0, float("nan")])
    assert got.tolist() == [0, 0, 1, 1, 2, 2, 2]
    assert confidence_codes([0.5, 0.3], sure_at=0.5, likely_at=0.3).tolist() == [0, 1]
    with pytest.raises(ValueError, match="likely_at <= sure_at"):
        confidence_codes([0.5], sure_at=0.7, likely_at=0.9)


def _votes() -> tuple[np.ndarray, np.ndarray]:
    # Three critics, three labels; critic 3 is noisy, and some calls failed (-1).
    rng = np.random.default_rng(7)
    truth = rng.choice(3, 400, p=[0.6, 0.3, 0.1])
    votes = np.empty((400, 3), dtype=np.int64)
    for j, accuracy in enumerate([0.9, 0.85, 0.6]):
        wrong = (truth + rng.integers(1, 3, 400)) % 3
        votes[:, j] = np.where(rng.random(400) < accuracy, truth, wrong)
    votes[rng.random((400, 3)) < 0.05] = -1
    votes[0] = -1  # an item whose critics all failed
    consensus = np.array([np.bincount(row[row >= 0], minlength=3).argmax() if (row >= 0).any()
                          else -1 for row in votes])
    consensus[1] = -1  # an item without a consensus label
    return votes, consensus


def test_the_posterior_is_bayes_rule_under_the_fitted_model() -> None:
    votes, consensus = _votes()
    got = consensus_confidence(votes, consensus, 3)
    fit = dawid_skene([[None if v < 0 else int(v) for v in row] for row in votes],
                      labels=[0, 1, 2])
    for i in range(len(votes)):
        if consensus[i] < 0:
            assert np.isnan(got[i])
            continue
        # P(true = t | votes) proportional to prior[t] * prod over answering critics of
        # confusion[critic, t, vote]; a failed call is missing, not a label.
        joint = fit.priors.copy()
        for critic, vote in enumerate(votes[i]):
            if vote >= 0:
                joint = joint * fit.confusion[critic, :, vote]
        assert got[i] == pytest.approx(joint[consensus[i]] / joint.sum(), rel=1e-6, abs=1e-9)
    # No valid vote at all: the prior of its consensus label (here -1 for item 0: NaN).
    assert np.isnan(got[0])


def test_the_posterior_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="one row per consensus label"):
        consensus_confidence(np.zeros((3, 2)), [0, 0], 2)
    with pytest.raises(ValueError, match="outside -1..1"):
        consensus_confidence([[0, 2]], [0], 2)
    with pytest.raises(ValueError, match="consensus code is outside"):
        consensus_confidence([[0, 1]], [3], 2)
    with pytest.raises(ValueError, match="at least two labels"):
        consensus_confidence([[0, 0]], [0], 1)
    assert consensus_confidence(np.zeros((0, 3)), [], 2).shape == (0,)


def _panel(seed: int) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """A 3-critic run of 3,000 items: (confidence strata, panel right?, true accuracy, each
    stratum's mean posterior)."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, 3000, p=[0.5, 0.25, 0.15, 0.10])
    votes = np.empty((3000, 3), dtype=np.int64)
    for j, accuracy in enumerate([0.85, 0.80, 0.75]):
        wrong = (truth + rng.integers(1, 4, 3000)) % 4
        votes[:, j] = np.where(rng.random(3000) < accuracy, truth, wrong)
    counts = np.stack([(votes == k).sum(axis=1) for k in range(4)], axis=1)
    label = counts.argmax(axis=1)  # ties to the first label
    confidence = consensus_confidence(votes, label, 4)
    strata = confidence_codes(confidence)
    right = label == truth
    predicted = np.array([confidence[strata == h].mean() for h in range(3)])
    return strata, right, float(right.mean()), predicted


def test_the_strata_order_the_items_by_how_often_the_panel_is_right() -> None:
    strata, right, _, predicted = _panel(0)
    accuracy = np.array([right[strata == h].mean() for h in range(3)])
    assert accuracy[0] > 0.97 > accuracy[1] > accuracy[2]
    # The fit is calibrated here (its critics are independent, as Dawid-Skene assumes).
    assert predicted == pytest.approx(accuracy, abs=0.05)
    assert np.bincount(strata, minlength=3)[0] > 0.6 * len(strata)


def test_the_label_next_queue_over_confidence_strata_covers_without_bias() -> None:
    """No human label goes into the strata or the plan (counts of labels only), and items are
    uniform within the strata: the stratified interval covers, and its estimate's mean error
    is within noise of zero."""
    covered, errors = 0, []
    for seed in range(60):
        strata, right, truth, predicted = _panel(seed)
        sizes = np.bincount(strata, minlength=3)
        rng = np.random.default_rng(5000 + seed)
        order = [rng.permutation(np.flatnonzero(strata == h)).tolist() for h in range(3)]
        done: list[int] = []
        for _ in range(100):
            counts = np.bincount(strata[np.array(done, dtype=int)], minlength=3)
            (h,) = planned_strata(counts, predicted, sizes, 1, rng=rng)
            done.append(order[h].pop())
        picked = np.array(done, dtype=int)
        got = stratified_mean(right[picked].astype(float), strata[picked], sizes)
        assert got.estimate is not None and got.low is not None and got.high is not None
        covered += got.low <= truth <= got.high
        errors.append(got.estimate - truth)
    assert covered >= 54
    mean, se = float(np.mean(errors)), float(np.std(errors, ddof=1) / np.sqrt(len(errors)))
    assert abs(mean) < 3 * se
