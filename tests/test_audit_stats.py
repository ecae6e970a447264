"""The audit's statistics (`judging.analysis.audit_stats`): the stratified estimator against a worked
example and an independent numpy reference, PPI's label shares against the published formula,
the sampling helpers, the label-next allocation, and the intervals' coverage on a small seeded
simulation (the 200-run figures are `benchmarks/bench_audit.py`'s)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from judging.analysis.audit_stats import (
    STRATA,
    AuditPopulation,
    AuditSample,
    audit_estimate,
    corrected_share,
    draw_within,
    label_gains,
    next_strata,
    next_strata_from_sums,
    planned_strata,
    proportional_allocation,
    stratified_mean,
    stratum_codes,
)
from judging.analysis.audit_tally import AuditTally

Z = NormalDist().inv_cdf(0.975)


def test_a_worked_example_by_hand() -> None:
    # Stratum 0 holds 6 items, 3 audited: 1, 1, 0. Stratum 1 holds 4, 2 audited: 1, 0.
    # Estimate: (6 * 2/3 + 4 * 1/2) / 10 = 0.6.
    # With half a pseudo-item at 0 and at 1 per stratum:
    #   stratum 0: n' = 4, sum' = 2.5, squares' = 2.5: mean' 0.625, s2 = (2.5 - 2.5^2/4)/3 = 0.3125
    #   stratum 1: n' = 3, sum' = 1.5, squares' = 1.5: mean' 0.5,   s2 = (1.5 - 1.5^2/3)/2 = 0.375
    # Variance: 0.6^2 (1 - 3/6) 0.3125/3 + 0.4^2 (1 - 2/4) 0.375/2 = 0.01875 + 0.015 = 0.03375
    # Centre: 0.6 * 0.625 + 0.4 * 0.5 = 0.575; half-width 1.959964 * sqrt(0.03375) = 0.360068
    got = stratified_mean([1, 1, 0, 1, 0], [0, 0, 0, 1, 1], [6, 4])
    assert got.estimate == pytest.approx(0.6)
    assert got.low == pytest.approx(0.575 - Z * math.sqrt(0.03375))
    assert got.high == pytest.approx(0.575 + Z * math.sqrt(0.03375))
    assert got.low == pytest.approx(0.214932, abs=1e-6)
    assert got.n == 5 and got.used == {"stratum 0": 3, "stratum 1": 2}
    assert got.reason is None


def _reference(values: np.ndarray, cells: np.ndarray, sizes: np.ndarray) -> tuple[float, float]:
    """The estimate and its variance, written independently: a loop over strata, numpy's own
    weighted mean and variance of each stratum's items plus the two half-weight pseudo-items."""
    population = sizes.sum()
    estimate, variance = 0.0, 0.0
    for h, size in enumerate(sizes):
        y = values[cells == h]
        estimate += size / population * y.mean()
        augmented = np.concatenate([y, [0.0, 1.0]])
        weights = np.concatenate([np.ones(len(y)), [0.5, 0.5]])
        mean = np.average(augmented, weights=weights)
        s2 = np.sum(weights * (augmented - mean) ** 2) / (weights.sum() - 1)
        variance += (size / population) ** 2 * (1 - len(y) / size) * s2 / len(y)
    return estimate, variance


@pytest.mark.parametrize("seed", range(5))
def test_the_estimate_and_its_variance_equal_an_independent_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(50, 2000, 3)
    cells = np.concatenate([np.full(rng.integers(5, 40), h) for h in range(3)])
    values = (rng.random(len(cells)) < rng.random(3)[cells]).astype(float)
    got = stratified_mean(values, cells, sizes, clip=None)
    estimate, variance = _reference(values, cells, sizes)
    assert got.estimate == pytest.approx(estimate)
    assert got.high is not None and got.low is not None
    assert ((got.high - got.low) / 2) == pytest.approx(Z * math.sqrt(variance))


def test_with_many_items_it_is_the_textbook_stratified_interval() -> None:
    """Cochran's stratified mean with s_h^2 the sample variance: the pseudo-items fade away."""
    rng = np.random.default_rng(7)
    sizes = np.array([400_000, 300_000, 100_000])
    cells = np.repeat([0, 1, 2], [20_000, 15_000, 5_000])
    values = (rng.random(len(cells)) < np.array([0.97, 0.85, 0.6])[cells]).astype(float)
    got = stratified_mean(values, cells, sizes)
    share = sizes / sizes.sum()
    textbook = sum(share[h] ** 2 * (1 - (cells == h).sum() / sizes[h])
                   * np.var(values[cells == h], ddof=1) / (cells == h).sum() for h in range(3))
    assert got.high is not None and got.low is not None
    assert (got.high - got.low) / 2 == pytest.approx(Z * math.sqrt(textbook), rel=1e-3)


def test_one_stratum_corrected_share_is_the_prediction_powered_estimate() -> None:
    """Angelopoulos et al. (2023), PPI for a mean: theta = mean of the predictions over all
    items + mean of (truth - prediction) over the labelled ones."""
    rng = np.random.default_rng(3)
    predicted = rng.random(1000) < 0.84  # the panel says KEEP on 84%
    labelled = rng.choice(1000, 120, replace=False)
    truth = np.where(rng.random(120) < 0.8, predicted[labelled], ~predicted[labelled])
    rect = truth.astype(float) - predicted[labelled].astype(float)
    got = corrected_share([predicted.sum()], rect, np.zeros(120, dtype=int), [1000])
    assert got.estimate == pytest.approx(predicted.mean() + rect.mean())
    assert got.low is not None and got.high is not None
    assert 0.0 <= got.low < got.estimate < got.high <= 1.0


def test_a_corrected_share_stays_a_share_and_inside_its_interval() -> None:
    """The rectifier is estimated from a sample, so the panel's share plus it can pass 100%:
    the panel gave KEEP to 800 of the 900 sure items, and the five audited there happen to be
    among the 100 it did not, each KEEP to the human (a share of 104.7% was seen so). The
    share is clipped to [0, 1] with its interval, and stays inside it."""
    population = AuditPopulation(
        sizes=np.array([900, 0, 100]),
        panel_counts={"KEEP": np.array([800, 0, 20]), "REJECT": np.array([100, 0, 80])},
        critic_counts={})
    sample = AuditSample(strata=np.array([0] * 5 + [2] * 5),
                         panel=["REJECT"] * 5 + ["KEEP", "REJECT", "REJECT", "KEEP", "REJECT"],
                         human=["KEEP"] * 5 + ["KEEP", "KEEP", "REJECT", "KEEP", "REJECT"])
    keep = audit_estimate(population, sample).labels[0]
    assert keep.label == "KEEP" and keep.panel_share == pytest.approx(0.82)
    tally = AuditTally(population)  # the live audit's running sums
    for h, p, y in zip(sample.strata, sample.panel, sample.human, strict=True):
        tally.add(int(h), p, y, {})
    for share in (keep.corrected, tally.estimate().labels[0].corrected):
        assert share.estimate is not None and share.low is not None and share.high is not None
        assert 0.0 <= share.low <= share.estimate <= share.high <= 1.0, share
        assert share.estimate == 1.0  # 0.82 + 0.9 * 1.0 + 0.1 * 0.2 = 1.74, clipped
    rect = np.array([1.0] * 5)
    alone = corrected_share([800, 0], rect, np.zeros(5, dtype=int), [900, 0])
    assert alone.estimate == 1.0 and alone.low is not None and alone.low <= 1.0


def test_a_stratum_without_audited_items_leaves_the_estimate_undefined() -> None:
    got = stratified_mean([1, 0], [0, 0], [10, 5, 0], names=["unanimous", "majority", "x"])
    assert got.estimate is None and got.low is None
    assert got.reason == "no audited item yet in majority"
    # A stratum of size 0 needs no audited item.
    assert stratified_mean([1, 0, 1], [0, 0, 1], [10, 5, 0]).estimate == pytest.approx(
        (10 * 0.5 + 5 * 1) / 15)


def test_an_all_agreeing_stratum_still_counts_its_uncertainty() -> None:
    """Every audited item right: without the pseudo-items the interval would be [1, 1]."""
    got = stratified_mean(np.ones(30), np.zeros(30, dtype=int), [1000])
    assert got.estimate == 1.0 and got.high == 1.0
    assert got.low is not None and 0.9 < got.low < 0.99


@pytest.mark.parametrize(
    ("values", "cells", "sizes", "words"),
    [([1, 0], [0], [5], "2 values but 1 strata"),
     ([1, 0, 1], [0, 0, 0], [2], "3 audited items in stratum 0, which holds 2"),
     ([1], [3], [5, 5], "outside 0..1")],
)
def test_inconsistent_input_is_refused_with_a_sentence(values: list[int], cells: list[int],
                                                       sizes: list[int], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        stratified_mean(values, cells, sizes)


def test_strata_from_agreement() -> None:
    codes = stratum_codes([1.0, 0.75, 2 / 3, 0.5, 0.25, float("nan"), 0.9999999999])
    assert [STRATA[c] for c in codes] == ["unanimous", "majority", "majority", "contested",
                                          "contested", "contested", "unanimous"]


def test_proportional_allocation() -> None:
    assert proportional_allocation([500, 300, 200], 100).tolist() == [50, 30, 20]
    # Every stratum gets its minimum of 2, then proportionally; never more than it holds.
    assert proportional_allocation([980, 19, 1], 50).tolist() == [47, 2, 1]
    assert proportional_allocation([3, 2, 0], 10).tolist() == [3, 2, 0]
    assert sum(proportional_allocation([7, 11, 13], 17)) == 17
    with pytest.raises(ValueError, match="at least one item"):
        proportional_allocation([5], 0)


def test_draw_within_takes_the_allocation_from_each_stratum_at_random() -> None:
    strata = np.repeat([0, 1, 2], [100, 50, 10])
    picked = draw_within(strata, [10, 5, 2], np.random.default_rng(0))
    assert len(set(picked.tolist())) == 17
    assert np.bincount(strata[picked], minlength=3).tolist() == [10, 5, 2]
    # Uniform within a stratum: over many draws every item of stratum 2 comes up about equally.
    seen = np.zeros(160)
    rng = np.random.default_rng(1)
    for _ in range(2000):
        seen[draw_within(strata, [0, 0, 2], rng)] += 1
    assert seen[:150].sum() == 0
    assert np.all(np.abs(seen[150:] - 400) < 80)
    with pytest.raises(ValueError, match="stratum 2 has 10 candidates, 11 asked for"):
        draw_within(strata, [0, 0, 11], rng)


def test_label_next_first_covers_every_stratum_then_goes_where_labels_help_most() -> None:
    sizes = [5000, 4000, 1000]
    rng = np.random.default_rng(0)
    first = next_strata([], [], sizes, 3, rng=rng, epsilon=0.0)
    assert sorted(first) == [0, 1, 2]
    # 40 audited each: stratum 0 all right, stratum 1 half right, stratum 2 half right. One
    # more label helps most in stratum 1 (big and uncertain), then alternates with 2 and 0.
    cells = np.repeat([0, 1, 2], 40)
    values = np.concatenate([np.ones(40), np.tile([0.0, 1.0], 20), np.tile([0.0, 1.0], 20)])
    gains = label_gains(values, cells, sizes)
    assert gains.argmax() == 1
    plan = next_strata(values, cells, sizes, 100, rng=rng, epsilon=0.0)
    counts = np.bincount(plan, minlength=3)
    assert counts[1] > counts[2] and counts[1] > counts[0]
    # Neyman: n_h proportional to N_h S_h; stratum 1 (S 0.5, N 4000) against 2 (S 0.5, N 1000).
    assert (counts[1] + 40) / (counts[2] + 40) == pytest.approx(4, rel=0.35)


def test_label_next_keeps_a_random_share() -> None:
    sizes = [5000, 4000, 1000]
    cells = np.repeat([0, 1, 2], 40)
    values = np.concatenate([np.ones(40), np.tile([0.0, 1.0], 20), np.tile([0.0, 1.0], 20)])
    plan = next_strata(values, cells, sizes, 2000, rng=np.random.default_rng(0), epsilon=1.0)
    # All random: in proportion to the unlabelled items (0.5, 0.4, 0.1).
    shares = np.bincount(plan, minlength=3) / 2000
    assert shares == pytest.approx([0.5, 0.4, 0.1], abs=0.04)
    with pytest.raises(ValueError, match="between 0 and 1"):
        next_strata(values, cells, sizes, 1, rng=np.random.default_rng(0), epsilon=1.5)


def test_planned_label_next_reads_counts_and_predictions_only() -> None:
    sizes = [5000, 4000, 1000]
    labelled = [40, 40, 40]
    predicted = [0.999, 0.5, 0.5]
    # Exactly the adaptive queue fed the sums the predictions expect: n p right of n.
    got = planned_strata(labelled, predicted, sizes, 50, rng=np.random.default_rng(3))
    want = next_strata_from_sums([40, 40, 40], [39.96, 20, 20], [39.96, 20, 20], sizes, 50,
                                 rng=np.random.default_rng(3))
    assert got == want
    # Neyman on the predictions: stratum 1 (N 4000, S 0.5) against 2 (N 1000, S 0.5).
    plan = planned_strata(labelled, predicted, sizes, 300, rng=np.random.default_rng(0),
                          epsilon=0.0)
    counts = np.bincount(plan, minlength=3) + 40
    assert counts[1] / counts[2] == pytest.approx(4, rel=0.35)
    # No prediction for a stratum (NaN) reads as a coin toss; a stratum with none labelled
    # comes first.
    assert planned_strata([0, 5, 5], [float("nan"), 0.9, 0.9], sizes, 1,
                          rng=np.random.default_rng(0), epsilon=0.0) == [0]
    with pytest.raises(ValueError, match="one of each per stratum"):
        planned_strata([1, 2], [0.5, 0.5, 0.5], sizes, 1, rng=np.random.default_rng(0))


def test_audit_estimate_per_label_and_per_critic() -> None:
    population = AuditPopulation(
        sizes=np.array([60, 30, 10]),
        panel_counts={"KEEP": np.array([40, 20, 5]), "REJECT": np.array([20, 10, 5])},
        critic_counts={"a": np.array([60, 30, 10]), "b": np.array([60, 30, 0])},
    )
    sample = AuditSample(
        strata=np.array([0, 0, 0, 1, 1, 2, 2]),
        panel=["KEEP", "KEEP", "REJECT", "KEEP", "REJECT", "KEEP", None],
        human=["KEEP", "KEEP", "REJECT", "REJECT", "REJECT", "REJECT", "KEEP"],
        critics={"a": ["KEEP", "REJECT", "REJECT", "KEEP", "REJECT", "REJECT", "KEEP"],
                 "b": ["KEEP", "KEEP", "REJECT", "REJECT", "REJECT", None, None]},
    )
    got = audit_estimate(population, sample)
    # Accuracy: stratum means 1, 1/2, 0 (None counts as wrong) -> 0.6 + 0.15 + 0 = 0.75.
    assert got.accuracy.estimate == pytest.approx(0.75)
    keep, reject = got.labels
    assert keep.label == "KEEP" and keep.panel_share == pytest.approx(0.65)
    # KEEP's items: stratum 0 (40 items) 2/2 right, stratum 1 (20) 0/1, stratum 2 (5) 0/1.
    assert keep.accuracy.estimate == pytest.approx(40 / 65)
    # KEEP's corrected share: 0.65 + stratified mean of 1[human KEEP] - 1[panel KEEP]:
    # stratum 0: (0 + 0 + 0)/3, stratum 1: (-1 + 0)/2, stratum 2: (-1 + 1)/2.
    assert keep.corrected.estimate == pytest.approx(0.65 + 0.3 * -0.5)
    # The panel gave REJECT to 5 contested items, none of them audited: no estimate, and why.
    assert reject.accuracy.estimate is None
    assert reject.accuracy.reason == "no audited item yet in contested"
    # Critic a: stratum means 2/3, 1/2, 1 -> 0.4 + 0.15 + 0.1; b: only where it answered.
    assert got.critics["a"].estimate == pytest.approx(0.65)
    assert got.critics["b"].estimate == pytest.approx((60 * 1 + 30 * 1) / 90)
    assert got.as_dict()["accuracy"]["n"] == 7


def _population(seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """A run of 4,000 items in three strata with known accuracies: (strata, right?, truth)."""
    rng = np.random.default_rng(seed)
    strata = rng.choice(3, 4000, p=[0.55, 0.35, 0.10])
    right = rng.random(4000) < np.array([0.99, 0.9, 0.6])[strata]
    return strata, right, float(right.mean())


def test_the_audit_interval_covers_the_true_accuracy_in_seeded_runs() -> None:
    covered = 0
    for seed in range(100):
        strata, right, truth = _population(seed)
        sizes = np.bincount(strata, minlength=3)
        rng = np.random.default_rng(1000 + seed)
        picked = draw_within(strata, proportional_allocation(sizes, 150), rng)
        got = stratified_mean(right[picked].astype(float), strata[picked], sizes)
        assert got.low is not None and got.high is not None
        covered += got.low <= truth <= got.high
    assert covered >= 90


def test_the_label_next_design_keeps_its_coverage() -> None:
    """Strata chosen adaptively, items uniform within them: the stratified interval with the
    realised stratum sizes still covers."""
    covered = 0
    for seed in range(100):
        strata, right, truth = _population(seed)
        sizes = np.bincount(strata, minlength=3)
        rng = np.random.default_rng(2000 + seed)
        order = [rng.permutation(np.flatnonzero(strata == h)).tolist() for h in range(3)]
        done: list[int] = []
        for _ in range(120):
            picked = np.array(done, dtype=int)
            (h,) = next_strata(right[picked].astype(float), strata[picked], sizes, 1, rng=rng)
            done.append(order[h].pop())
        picked = np.array(done, dtype=int)
        got = stratified_mean(right[picked].astype(float), strata[picked], sizes)
        assert got.low is not None and got.high is not None
        covered += got.low <= truth <= got.high
    assert covered >= 90
