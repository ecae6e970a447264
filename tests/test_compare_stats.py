"""Exact McNemar and the paired bootstrap (`judging.analysis.compare_stats`) against references.

References:
- exact fractions, hand-computed: p = 2 * sum_{i<=k} C(n, i) / 2^n, capped at 1;
- the worked example of Fagerland, Lydersen & Laake, "The McNemar test for binary matched-pairs
  data" (BMC Med Res Methodol 13:91, 2013), Table 1 (Bentur et al.: airway hyper-responsiveness
  before and after transplantation, discordant pairs n12 = 1, n21 = 7): their exact conditional
  p-value is 2 * binomcdf(1, 8, 0.5) = 18/256 = 0.0703;
- `scipy.stats.binomtest` (two-sided, p = 0.5) and `scipy.stats.bootstrap` (percentile, paired),
  a test-only dependency: those cases skip when scipy is not installed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from judging.analysis.compare_stats import (
    mcnemar_exact,
    paired_accuracy,
    paired_bootstrap_difference,
)


def exact_two_sided(a_only: int, b_only: int) -> float:
    """The exact McNemar p-value with integer arithmetic (the reference, not the code under test)."""
    n, k = a_only + b_only, min(a_only, b_only)
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


# -- McNemar --------------------------------------------------------------------------------------


def test_the_published_example_gives_its_exact_p_value() -> None:
    result = mcnemar_exact(1, 7)
    assert result.p_value == pytest.approx(18 / 256, rel=1e-12)
    assert round(result.p_value, 3) == 0.070  # as printed in the paper
    assert (result.a_only, result.b_only, result.discordant) == (1, 7, 8)


@pytest.mark.parametrize(
    ("a_only", "b_only", "expected"),
    [
        (0, 1, 1.0),            # one discordant pair: 2 * 1/2 = 1
        (0, 5, 2 / 32),         # all discordant the same way: 2 * (1/2)^5
        (5, 0, 2 / 32),         # symmetric in the two versions
        (3, 3, 1.0),            # balanced: no evidence
        (2, 8, 2 * 56 / 1024),  # 2 * (1 + 10 + 45) / 2^10
        (10, 1, 2 * 12 / 2048),
    ],
)
def test_small_tables_by_hand(a_only: int, b_only: int, expected: float) -> None:
    assert mcnemar_exact(a_only, b_only).p_value == pytest.approx(expected, rel=1e-12)


def test_no_discordant_pair_is_no_evidence() -> None:
    result = mcnemar_exact(0, 0)
    assert result.p_value == 1.0 and result.discordant == 0


@pytest.mark.parametrize("a_only", range(0, 41, 3))
@pytest.mark.parametrize("b_only", [0, 1, 2, 7, 19, 40, 61])
def test_equals_exact_fractions(a_only: int, b_only: int) -> None:
    assert mcnemar_exact(a_only, b_only).p_value == pytest.approx(
        exact_two_sided(a_only, b_only), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(("a_only", "b_only"), [(480, 520), (4_900, 5_100), (49_800, 50_200),
                                                 (1, 30), (0, 1_000), (300_000, 301_000)])
def test_equals_scipy_binomtest(a_only: int, b_only: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    expected = stats.binomtest(a_only, a_only + b_only, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(a_only, b_only).p_value == pytest.approx(expected, rel=1e-8, abs=1e-300)


def test_large_counts_stay_finite_and_fast() -> None:
    # A million discordant items: no overflow, no million-digit integers.
    result = mcnemar_exact(500_000, 502_000)
    assert 0.0 < result.p_value < 0.1


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="0 or more"):
        mcnemar_exact(-1, 3)


# -- paired bootstrap ----------------------------------------------------------------------------


def test_same_seed_same_interval_other_seed_other_draws() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(200) < 0.7
    b = rng.random(200) < 0.8
    first = paired_bootstrap_difference(a, b, seed=3)
    assert paired_bootstrap_difference(a, b, seed=3) == first
    assert paired_bootstrap_difference(a, b, seed=4) != first
    assert first.estimate == pytest.approx(b.mean() - a.mean())
    assert first.low is not None and first.high is not None
    assert first.low <= first.estimate <= first.high


def test_no_discordant_item_gives_a_zero_width_interval_at_zero() -> None:
    a = [True, False, True, True]
    result = paired_bootstrap_difference(a, a)
    assert (result.estimate, result.low, result.high) == (0.0, 0.0, 0.0)


def test_all_discordant_one_way_gives_the_whole_difference() -> None:
    result = paired_bootstrap_difference([False] * 6, [True] * 6)
    assert (result.estimate, result.low, result.high) == (1.0, 1.0, 1.0)


def test_a_single_item() -> None:
    result = paired_bootstrap_difference([True], [False])
    assert (result.estimate, result.low, result.high) == (-1.0, -1.0, -1.0)


def test_no_item_is_undefined_with_a_reason() -> None:
    result = paired_bootstrap_difference([], [])
    assert result.estimate is None and result.low is None and result.high is None
    assert result.reason == "no item has a value in both versions"


def test_matches_a_plain_item_resampling_bootstrap() -> None:
    """The multinomial shortcut has the distribution of resampling items: its interval agrees
    with a plain loop over resampled item indices to within the Monte Carlo error."""
    rng = np.random.default_rng(11)
    a = (rng.random(150) < 0.75).astype(float)
    b = np.where(rng.random(150) < 0.2, 1.0 - a, a)  # B differs from A on about 20% of items
    ours = paired_bootstrap_difference(a, b, resamples=20_000, seed=1)
    picks = np.random.default_rng(2).integers(0, 150, size=(20_000, 150))
    means = (b[picks] - a[picks]).mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    assert ours.low == pytest.approx(low, abs=0.01)
    assert ours.high == pytest.approx(high, abs=0.01)


def test_matches_scipy_bootstrap_percentile() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    a = (rng.random(300) < 0.8).astype(float)
    b = (rng.random(300) < 0.7).astype(float)
    ours = paired_bootstrap_difference(a, b, resamples=20_000, seed=0)
    ref = stats.bootstrap((a, b), lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis),
                          paired=True, vectorized=True, n_resamples=20_000, method="percentile",
                          random_state=np.random.default_rng(0)).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=0.01)
    assert ours.high == pytest.approx(ref.high, abs=0.01)


def test_continuous_values_work_too() -> None:
    a = [0.5, 0.75, 1.0, 0.25]
    b = [1.0, 0.75, 1.0, 0.5]
    result = paired_bootstrap_difference(a, b, resamples=500)
    assert result.estimate == pytest.approx(0.1875)
    assert result.low is not None and result.high is not None
    assert 0.0 <= result.low <= result.estimate <= result.high <= 0.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"resamples": 0}, "resamples"), ({"confidence": 1.0}, "confidence"),
     ({"confidence": 0.0}, "confidence")],
)
def test_bad_settings_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_bootstrap_difference([1.0], [0.0], **kwargs)  # type: ignore[arg-type]


def test_unpaired_or_missing_values_are_refused() -> None:
    with pytest.raises(ValueError, match="one value per item"):
        paired_bootstrap_difference([1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        paired_bootstrap_difference([1.0, float("nan")], [1.0, 0.0])


# -- paired accuracy -----------------------------------------------------------------------------


def test_paired_accuracy_counts_the_table() -> None:
    # A right / B right: 5 both, 1 only A, 7 only B, 2 neither (the published example's shape).
    a = [True] * 5 + [True] * 1 + [False] * 7 + [False] * 2
    b = [True] * 5 + [False] * 1 + [True] * 7 + [False] * 2
    result = paired_accuracy(a, b, seed=0)
    assert (result.n, result.correct_a, result.correct_b) == (15, 6, 12)
    assert result.accuracy_a == pytest.approx(6 / 15)
    assert result.accuracy_b == pytest.approx(12 / 15)
    assert result.difference.estimate == pytest.approx(6 / 15)
    assert result.mcnemar is not None
    assert (result.mcnemar.a_only, result.mcnemar.b_only) == (1, 7)
    assert result.mcnemar.p_value == pytest.approx(18 / 256)
    assert result.reason is None


def test_paired_accuracy_without_items() -> None:
    result = paired_accuracy([], [])
    assert result.n == 0 and result.accuracy_a is None and result.mcnemar is None
    assert result.reason == "no item has a value in both versions"
