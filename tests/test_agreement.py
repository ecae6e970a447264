"""Agreement statistics against published values, the `krippendorff` package, and edge cases."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from judging import agreement as ag
from judging.agreement import (
    LEVELS,
    agreement_with_reference,
    alpha_with_reason,
    bootstrap_alpha,
    cohen_kappa,
    cohen_kappa_result,
    encode_ratings,
    fleiss_kappa,
    fleiss_kappa_counts,
    gwet_ac1,
    krippendorff_alpha,
    leave_one_out_alpha,
    pairwise_kappa,
    per_item_alpha,
    percent_agreement,
    wilson_interval,
)
from judging.agreement import alpha as alpha_module
from tests.fixtures_agreement import (
    FLEISS_1971_COUNTS,
    WIKIPEDIA_FLEISS_COUNTS,
)

# Published in Krippendorff (2011), section C.
PUBLISHED_2011 = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def _package_alpha(units: list[list[object]], level: str) -> float:
    """The `krippendorff` package's alpha; it wants raters x units with NaN for missing."""
    grid = np.array(
        [[np.nan if v is None else float(v) for v in unit] for unit in units], dtype=float
    )
    return float(krippendorff.alpha(grid.T, level_of_measurement=level))


def _random_units(seed: int, n_units: int = 60, n_critics: int = 4, n_values: int = 5):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, n_values + 1, n_units)
    noise = rng.integers(1, n_values + 1, (n_units, n_critics))
    values = np.where(rng.random((n_units, n_critics)) < 0.6, truth[:, None], noise)
    grid = values.astype(object)
    grid[rng.random((n_units, n_critics)) < 0.2] = None
    return grid.tolist()


# ------------------------------------------------------------------ Krippendorff's alpha


@pytest.mark.parametrize("level", LEVELS)
def test_krippendorff_2011_published_values(krippendorff_units, level):
    value = krippendorff_alpha(krippendorff_units, level)
    assert value is not None
    assert round(value, 3) == PUBLISHED_2011[level]
    assert value == pytest.approx(_package_alpha(krippendorff_units, level), abs=5e-5)


def test_krippendorff_2011_counts_what_the_paper_counts(krippendorff_units):
    result = alpha_with_reason(krippendorff_units, "nominal")
    # Unit 12 has a single rating and is dropped; 40 pairable values remain.
    assert (result.n_units, result.n_pairable_units, result.n_pairable) == (12, 11, 40)
    assert result.reason is None and result.defined


def test_ordinal_string_labels_use_the_declared_order(krippendorff_units):
    names = {1: "poor", 2: "fair", 3: "good", 4: "very good", 5: "excellent"}
    words = [[None if v is None else names[v] for v in unit] for unit in krippendorff_units]
    order = ["poor", "fair", "good", "very good", "excellent"]
    assert krippendorff_alpha(words, "ordinal", order=order) == pytest.approx(
        krippendorff_alpha(krippendorff_units, "ordinal")
    )
    # Nominal alpha ignores order entirely.
    assert krippendorff_alpha(words) == pytest.approx(krippendorff_alpha(krippendorff_units))


def test_ordinal_string_labels_without_order_is_a_clear_error():
    with pytest.raises(ValueError, match="order"):
        krippendorff_alpha([["low", "high"], ["low", "low"]], "ordinal")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", LEVELS)
def test_random_data_matches_krippendorff_package(seed, level):
    units = _random_units(seed)
    assert krippendorff_alpha(units, level) == pytest.approx(
        _package_alpha(units, level), abs=1e-9
    )


@pytest.mark.parametrize("level", LEVELS)
def test_many_distinct_values_path_matches_package(monkeypatch, level):
    # Force the code path used for thousands of distinct values (no V x V matrix, no
    # dense counts) on data small enough for the package to check.
    monkeypatch.setattr(alpha_module, "_MAX_DENSE_VALUES", 3)
    monkeypatch.setattr(alpha_module, "_MAX_BOOTSTRAP_CELLS", 10)
    rng = np.random.default_rng(3)
    grid = np.round(rng.gamma(2.0, 2.0, size=(40, 3)), 1)
    grid[rng.random(grid.shape) < 0.15] = np.nan
    units = [[None if np.isnan(v) else float(v) for v in row] for row in grid]
    assert krippendorff_alpha(units, level) == pytest.approx(
        _package_alpha(units, level), abs=1e-9
    )


def test_numpy_input_with_nan_equals_list_input(krippendorff_units):
    grid = np.array(
        [[np.nan if v is None else v for v in unit] for unit in krippendorff_units], float
    )
    for level in LEVELS:
        assert krippendorff_alpha(grid, level) == pytest.approx(
            krippendorff_alpha(krippendorff_units, level)
        )


def test_all_unanimous_on_one_label_is_undefined_not_one():
    result = alpha_with_reason([["KEEP", "KEEP", "KEEP"]] * 5)
    assert result.value is None
    assert "no variation" in result.reason


def test_unanimous_units_with_different_labels_is_perfect_agreement():
    # Every unit unanimous, but the units differ: D_o = 0 < D_e, alpha = 1 (as the package).
    units = [["KEEP", "KEEP"], ["REJECT", "REJECT"], ["KEEP", "KEEP"]]
    assert krippendorff_alpha(units) == 1.0


def test_one_label_in_the_whole_dataset_is_undefined():
    units = [["yes", "yes", None], ["yes", None, None], [None, "yes", "yes"]]
    result = alpha_with_reason(units)
    assert result.value is None and "same value" in result.reason
    assert krippendorff_alpha(units) is None


def test_only_single_rated_units_is_undefined_with_reason():
    result = alpha_with_reason([["a", None], [None, "b"], ["c", None]])
    assert result.value is None
    assert "two or more" in result.reason
    assert result.n_pairable_units == 0


def test_no_units_is_undefined():
    assert alpha_with_reason([]).reason == "no ratings at all"


def test_single_rated_units_are_dropped(krippendorff_units):
    base = krippendorff_alpha(krippendorff_units)
    extra = krippendorff_units + [[7, None, None, None], [None, None, 9, None]]
    assert krippendorff_alpha(extra) == pytest.approx(base)


@pytest.mark.parametrize(
    ("units", "expected"),
    [
        # n_1 = 3, n_2 = 1: D_o = 2/4, D_e = (16 - 10)/12 -> alpha = 0
        ([["a", "b"], ["a", "a"]], 0.0),
        # D_o = 4/4, D_e = (16 - 8)/12 -> alpha = -0.5
        ([["a", "b"], ["b", "a"]], -0.5),
        ([["a", "a"], ["b", "b"]], 1.0),
    ],
)
def test_two_raters_two_units_by_hand(units, expected):
    assert krippendorff_alpha(units) == pytest.approx(expected)
    numeric = [[0 if v == "a" else 1 for v in unit] for unit in units]
    assert _package_alpha(numeric, "nominal") == pytest.approx(expected)


def test_failed_verdicts_are_missing_not_a_label():
    with_none = [["KEEP", "KEEP", None], ["REJECT", "REJECT", "REJECT"]]
    with_nan = [["KEEP", "KEEP", float("nan")], ["REJECT", "REJECT", "REJECT"]]
    assert krippendorff_alpha(with_none) == 1.0
    assert krippendorff_alpha(with_nan) == 1.0


def test_ragged_units_are_padded_with_missing_values():
    assert krippendorff_alpha([["a", "a", "b"], ["b", "b"]]) == pytest.approx(
        krippendorff_alpha([["a", "a", "b"], ["b", "b", None]])
    )


@pytest.mark.parametrize(
    ("data", "level", "kwargs", "message"),
    [
        ([[1, 2]], "cardinal", {}, "unknown measurement level"),
        ([["KEEP", "MAYBE"]], "nominal", {"order": ["KEEP", "REJECT"]}, "'MAYBE' is not one"),
        ([["KEEP", "REJECT"]], "interval", {}, "needs numeric ratings"),
        ([[1.0, -2.0]], "ratio", {}, "non-negative"),
        (["ab", "cd"], "nominal", {}, "bare string"),
        (np.zeros(3), "nominal", {}, "2-D"),
    ],
)
def test_bad_input_names_the_problem(data, level, kwargs, message):
    with pytest.raises(ValueError, match=message):
        krippendorff_alpha(data, level, **kwargs)


def test_likert_strings_at_interval_level_use_their_numbers():
    units = [["1", "2"], ["4", "5"], ["3", "3"]]
    numbers = [[1, 2], [4, 5], [3, 3]]
    assert krippendorff_alpha(units, "interval", order=["1", "2", "3", "4", "5"]) == (
        pytest.approx(krippendorff_alpha(numbers, "interval"))
    )


# ------------------------------------------------------------------ per-item alpha


def test_per_item_alpha_separates_a_9_1_split_from_a_three_way_split():
    background = [["A"] * 10, ["B"] * 10, ["C"] * 10]
    nine_one = ["A"] * 9 + ["B"]
    three_way = ["A"] * 4 + ["B"] * 3 + ["C"] * 3
    values = per_item_alpha(background + [nine_one, three_way])
    assert values[3] > values[4]
    # D_o(u) = disagreeing ordered pairs / all ordered pairs: 18/90 and 66/90.
    expected = alpha_with_reason(background + [nine_one, three_way]).expected
    assert values[3] == pytest.approx(1 - 0.2 / expected)
    assert values[4] == pytest.approx(1 - (66 / 90) / expected)
    assert values[0] == 1.0


def test_per_item_alpha_is_nan_for_single_rated_units_and_averages_to_alpha(krippendorff_units):
    values = per_item_alpha(krippendorff_units, "interval")
    assert math.isnan(values[11])  # unit 12 has one rating
    m = np.array([sum(v is not None for v in unit) for unit in krippendorff_units])
    ok = ~np.isnan(values)
    weighted = float((values[ok] * m[ok]).sum() / m[ok].sum())
    assert weighted == pytest.approx(krippendorff_alpha(krippendorff_units, "interval"))


def test_per_item_alpha_all_nan_when_dataset_has_no_variation():
    assert np.isnan(per_item_alpha([["x", "x"], ["x", "x"]])).all()


# ------------------------------------------------------------------ bootstrap


def test_bootstrap_is_reproducible_and_brackets_alpha(krippendorff_units):
    first = bootstrap_alpha(krippendorff_units, "nominal", resamples=500, seed=11)
    again = bootstrap_alpha(krippendorff_units, "nominal", resamples=500, seed=11)
    other = bootstrap_alpha(krippendorff_units, "nominal", resamples=500, seed=12)
    assert np.array_equal(first.distribution, again.distribution)
    assert not np.array_equal(first.distribution, other.distribution)
    assert first.low <= krippendorff_alpha(krippendorff_units) <= first.high
    assert len(first.distribution) + first.n_undefined == 500
    assert first.method == "exact" and first.confidence == 0.95


@pytest.mark.parametrize("level", LEVELS)
def test_each_resample_is_the_exact_alpha_of_the_resampled_units(monkeypatch, level):
    units = [u for u in _random_units(5, n_units=40) if sum(v is not None for v in u) >= 2]
    rng = np.random.default_rng(0)
    picks = [rng.integers(0, len(units), len(units)) for _ in range(5)]

    def fixed_draws(_rng, freq, inverse, size):
        # Same resamples as `picks`, expressed as multiplicities of the pooled patterns.
        return np.stack(
            [np.bincount(inverse[p], minlength=len(freq)) for p in picks[:size]]
        ).astype(float)

    monkeypatch.setattr(alpha_module, "_draw_multiplicities", fixed_draws)
    result = bootstrap_alpha(units, level, resamples=5, seed=0)
    expected = [krippendorff_alpha([units[i] for i in p], level) for p in picks]
    assert result.method == "exact"
    assert result.distribution == pytest.approx(expected)


def test_bootstrap_fixed_expected_fallback_is_close_to_exact(monkeypatch):
    units = _random_units(9, n_units=300)
    exact = bootstrap_alpha(units, "ratio", resamples=400, seed=1)
    monkeypatch.setattr(alpha_module, "_MAX_BOOTSTRAP_CELLS", 10)
    fallback = bootstrap_alpha(units, "ratio", resamples=400, seed=1)
    assert fallback.method == "fixed-expected"
    assert fallback.low == pytest.approx(exact.low, abs=0.05)
    assert fallback.high == pytest.approx(exact.high, abs=0.05)


def test_bootstrap_of_undefined_alpha_says_why():
    result = bootstrap_alpha([["x", "x"], ["x", "x"]], resamples=10)
    assert result.low is None and result.high is None
    assert "undefined" in result.reason and len(result.distribution) == 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"resamples": 0}, "resamples"), ({"confidence": 1.5}, "confidence"),
])
def test_bootstrap_rejects_bad_settings(krippendorff_units, kwargs, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_alpha(krippendorff_units, **kwargs)


# ------------------------------------------------------------------ leave one out


def test_leave_one_out_finds_the_critic_that_drags_the_panel_down():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 3, 300)
    noisy = rng.integers(0, 3, 300)
    units = [[t, t, t if i % 10 else (t + 1) % 3, n] for i, (t, n) in
             enumerate(zip(truth, noisy, strict=True))]
    result = leave_one_out_alpha(units, critics=["a", "b", "c", "noisy"])
    assert max(result, key=lambda name: result[name].value) == "noisy"
    assert result["noisy"].value > krippendorff_alpha(units)


# ------------------------------------------------------------------ kappa family


def test_cohen_kappa_wikipedia_example():
    # Wikipedia "Cohen's kappa": 50 proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    result = cohen_kappa_result(a, b)
    assert result.value == pytest.approx(0.4)
    assert result.observed == pytest.approx(0.7) and result.chance == pytest.approx(0.5)
    assert result.n == 50


def _sklearn_kappa(confusion: np.ndarray, weights: str | None) -> float:
    """sklearn's cohen_kappa_score formula, written out by hand on a confusion matrix."""
    k = confusion.shape[0]
    n = confusion.sum()
    expected = np.outer(confusion.sum(1), confusion.sum(0)) / n
    w = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if weights is None:
                w[i, j] = 0 if i == j else 1
            elif weights == "linear":
                w[i, j] = abs(i - j)
            else:
                w[i, j] = (i - j) ** 2
    return 1 - (w * confusion).sum() / (w * expected).sum()


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_weighted_cohen_kappa_matches_the_sklearn_formula(weights):
    confusion = np.array([[10, 3, 1], [2, 12, 4], [0, 5, 9]])
    a, b = [], []
    for i in range(3):
        for j in range(3):
            a += [i] * confusion[i, j]
            b += [j] * confusion[i, j]
    assert cohen_kappa(a, b, weights) == pytest.approx(_sklearn_kappa(confusion, weights))


def test_weighted_kappa_on_string_labels_uses_the_given_order():
    order = ["low", "mid", "high"]
    a = ["low", "low", "mid", "high", "high", "mid"]
    b = ["low", "mid", "mid", "high", "mid", "low"]
    as_numbers = [[order.index(x) for x in a], [order.index(x) for x in b]]
    assert cohen_kappa(a, b, "quadratic", labels=order) == pytest.approx(
        cohen_kappa(*as_numbers, "quadratic")
    )
    # Alphabetical order would rank "high" < "low" < "mid": a different (wrong) answer.
    assert cohen_kappa(a, b, "quadratic") != pytest.approx(
        cohen_kappa(a, b, "quadratic", labels=order)
    )


def test_cohen_kappa_skips_missing_and_reports_undefined():
    assert cohen_kappa(["a", None, "b"], ["a", "b", "b"]) == 1.0
    same = cohen_kappa_result(["a", "a"], ["a", "a"])
    assert same.value is None and "one and the same label" in same.reason
    none = cohen_kappa_result(["a", None], [None, "b"])
    assert none.value is None and none.n == 0 and "both" in none.reason
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa(["a", "b"], ["a", "b"], "cubic")  # type: ignore[arg-type]


def test_pairwise_kappa_matrix_matches_pairs(krippendorff_units):
    matrix = pairwise_kappa(krippendorff_units, critics=["A", "B", "C", "D"])
    columns = list(zip(*krippendorff_units, strict=True))
    for i in range(4):
        for j in range(4):
            expected = cohen_kappa(columns[i], columns[j])
            if expected is None:
                assert np.isnan(matrix.values[i, j]) and (i, j) in matrix.reasons
            else:
                assert matrix.values[i, j] == pytest.approx(expected)
    assert np.allclose(matrix.values, matrix.values.T, equal_nan=True)
    assert matrix.n[0, 1] == 9  # A and B both rated units 1-9
    assert list(matrix.to_frame().columns) == ["A", "B", "C", "D"]


def test_fleiss_1971_diagnoses_published_value():
    result = fleiss_kappa_counts(FLEISS_1971_COUNTS)
    assert round(result.value, 3) == 0.430  # Fleiss (1971): kappa = .430
    assert result.n == 30


def test_fleiss_wikipedia_example():
    result = fleiss_kappa_counts(WIKIPEDIA_FLEISS_COUNTS)
    assert round(result.value, 3) == 0.210
    assert result.observed == pytest.approx(0.378, abs=5e-4)
    assert result.chance == pytest.approx(0.2127, abs=5e-4)


def test_fleiss_from_raw_ratings_equals_counts():
    units = []
    for row in FLEISS_1971_COUNTS:
        units.append([label for label, count in enumerate(row) for _ in range(count)])
    assert fleiss_kappa(units) == pytest.approx(fleiss_kappa_counts(FLEISS_1971_COUNTS).value)


def test_irrcac_published_values_on_krippendorff_data(krippendorff_units):
    # Gwet's irrCAC package README on the same data (cac.raw4raters): percent agreement
    # 0.8181818, Fleiss 0.76117 (pe 0.2387153), AC1 0.77544 (pe 0.1903212), 5 categories.
    assert percent_agreement(krippendorff_units).value == pytest.approx(0.8181818, abs=1e-6)
    fleiss = ag.fleiss_kappa_result(krippendorff_units)
    assert fleiss.value == pytest.approx(0.76117, abs=5e-6)
    assert fleiss.chance == pytest.approx(0.2387153, abs=1e-6)
    ac1 = gwet_ac1(krippendorff_units, n_categories=5)
    assert ac1.value == pytest.approx(0.77544, abs=5e-6)
    assert ac1.chance == pytest.approx(0.1903212, abs=1e-6)


def test_ac1_stays_high_when_one_label_dominates_and_kappa_collapses():
    # 95 KEEP/KEEP, 3 KEEP/REJECT, 2 REJECT/KEEP: the kappa paradox.
    units = [["KEEP", "KEEP"]] * 95 + [["KEEP", "REJECT"]] * 3 + [["REJECT", "KEEP"]] * 2
    kappa = fleiss_kappa(units)
    ac1 = gwet_ac1(units)
    assert kappa is not None and kappa < 0
    # by hand: pa = 0.95, pi_keep = 0.975, pe = 2 * 0.975 * 0.025 = 0.04875
    assert ac1.value == pytest.approx((0.95 - 0.04875) / (1 - 0.04875))


def test_kappa_family_undefined_cases():
    one_label = [["x", "x"], ["x", "x"]]
    assert fleiss_kappa(one_label) is None
    assert "no variation" in ag.fleiss_kappa_result(one_label).reason
    assert gwet_ac1(one_label).value is None
    single = [["x", None], [None, "y"]]
    assert percent_agreement(single).value is None
    assert fleiss_kappa(single) is None


# ------------------------------------------------------------------ against a reference


def test_wilson_interval_known_value():
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 0) == (None, None)


def test_agreement_with_reference_never_counts_a_failure_as_agreement():
    result = agreement_with_reference(
        ["KEEP", None, "REJECT", "KEEP", "KEEP"], ["KEEP", "KEEP", "KEEP", None, "KEEP"]
    )
    assert (result.agree, result.n, result.missing) == (2, 3, 1)
    assert result.value == pytest.approx(2 / 3)
    assert result.low < result.value < result.high
    empty = agreement_with_reference([None], ["KEEP"])
    assert empty.value is None and empty.missing == 1 and empty.reason


def test_agreement_with_reference_numeric_tolerance():
    result = agreement_with_reference([0.5, 0.8, None], [0.55, 0.5, 0.1], tolerance=0.1)
    assert (result.agree, result.n) == (1, 2)


def test_encode_ratings_sorted_labels_and_counts():
    matrix = encode_ratings([["b", "a", None], ["a", "a", "c"]], critics=["x", "y", "z"])
    assert matrix.labels == ["a", "b", "c"]
    assert matrix.counts().tolist() == [[1, 1, 0], [2, 0, 1]]
    assert matrix.drop_critic(0).critics == ["y", "z"]
