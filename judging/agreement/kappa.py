"""The kappa family: Cohen (weighted), pairwise matrices, Fleiss, Gwet's AC1, percent agreement.

Pairwise kappa has two computations with the same results. With a panel's few critics it
compares columns pair by pair (R^2 / 2 passes over the items). With many raters each answering
a sparse subset (1,000 raters: 499,500 pairs, 161 s that way at 20,000 items), it walks the
answers instead: the pairs of answers within each item give every pair of raters' confusion
counts in one `np.unique`, so the cost is the sum over items of answers^2, not raters^2 x items.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from judging.agreement.agreement_results import (
    NO_CHANCE_DISAGREEMENT,
    NO_SHARED_ITEM,
    KappaMatrix,
    KappaWeights,
    PairReasons,
    Statistic,
)
from judging.agreement.answers import Answers, answers_from_matrix, check_encoded_as
from judging.agreement.ratings import RatingMatrix, encode_ratings

# Pairs of answers materialised at once when walking the answers (bounds the memory: a few
# arrays of this many int64).
_PAIR_CHUNK = 2_000_000
# A units x critics matrix goes the answers' way when its pair-by-pair cost is this many times
# the answers' (and it has more critics than a panel usually has).
_ANSWERS_SPEEDUP = 4
_PANEL_CRITICS = 16

# --------------------------------------------------------------------------------------------
# Kappa family


def _kappa_weights(n_values: int, weights: KappaWeights) -> np.ndarray:
    """Disagreement weights w_ij (0 on the diagonal), as in sklearn's cohen_kappa_score."""
    idx = np.arange(n_values, dtype=np.float64)
    if weights is None:
        return 1.0 - np.eye(n_values)
    if weights == "linear":
        return np.abs(idx[:, None] - idx[None, :])
    if weights == "quadratic":
        return (idx[:, None] - idx[None, :]) ** 2
    raise ValueError(f"unknown kappa weights {weights!r}: use None, 'linear' or 'quadratic'")


def _kappa_codes(ca: np.ndarray, cb: np.ndarray, n_values: int, w: np.ndarray) -> Statistic:
    both = (ca >= 0) & (cb >= 0)
    n = int(both.sum())
    if n == 0:
        return Statistic(None, NO_SHARED_ITEM, 0)
    confusion = (
        np.bincount(ca[both] * n_values + cb[both], minlength=n_values * n_values)
        .reshape(n_values, n_values)
        .astype(np.float64)
    )
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / n
    exp_dis = float((w * expected).sum())
    obs_dis = float((w * confusion).sum())
    w_max = float(w.max()) if w.size else 1.0
    w_max = w_max or 1.0
    observed_agreement = 1.0 - obs_dis / (n * w_max)
    chance_agreement = 1.0 - exp_dis / (n * w_max)
    if exp_dis <= 0.0:
        return Statistic(None, NO_CHANCE_DISAGREEMENT, n, observed_agreement, chance_agreement)
    return Statistic(1.0 - obs_dis / exp_dis, None, n, observed_agreement, chance_agreement)


def cohen_kappa_result(
    a: Sequence[Any],
    b: Sequence[Any],
    weights: KappaWeights = None,
    labels: Sequence[Any] | None = None,
) -> Statistic:
    """Cohen's kappa between two raters, with the reason when undefined.

    Items where either rater is missing (None/NaN) are left out. Weighted kappa uses the
    disagreement weights |i - j| ("linear") or (i - j)^2 ("quadratic") on label positions, the
    same definition as sklearn's `cohen_kappa_score`.

    Args:
        a, b: ratings of the same items by two raters (same length).
        weights: None, "linear" or "quadratic".
        labels: the labels in order (needed for a meaningful weighted kappa on string labels);
            default: the sorted labels that occur.

    Returns:
        A Statistic: kappa (None when no item has both ratings, or when chance disagreement
        is zero), n, observed and chance agreement.

    Raises:
        ValueError: different lengths, unknown weights, or a label outside `labels`.
    """
    if len(a) != len(b):
        raise ValueError(f"the two raters must rate the same items: {len(a)} vs {len(b)} ratings")
    data = [[x, y] for x, y in zip(a, b, strict=True)]
    if not data:
        return Statistic(None, "no items", 0)
    matrix = encode_ratings(data, "nominal", order=labels)
    w = _kappa_weights(matrix.n_values, weights)
    return _kappa_codes(matrix.codes[:, 0], matrix.codes[:, 1], matrix.n_values, w)


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    weights: KappaWeights = None,
    labels: Sequence[Any] | None = None,
) -> float | None:
    """Cohen's kappa between two raters; None when undefined (see `cohen_kappa_result`).

    Args:
        a, b: ratings of the same items (None for missing).
        weights: None, "linear" or "quadratic".
        labels: ordered labels (default: sorted labels that occur).

    Returns:
        kappa, or None when undefined.
    """
    return cohen_kappa_result(a, b, weights, labels).value


def pairwise_kappa(
    data: Any,
    *,
    weights: KappaWeights = None,
    labels: Sequence[Any] | None = None,
    critics: Sequence[str] | None = None,
) -> KappaMatrix:
    """Cohen's kappa for every pair of critics (columns), or of raters in a long table.

    Args:
        data: units x critics ratings, or a RatingMatrix (label order = its code order), or
            an `Answers` (a long table of (item, rater, label), see `encode_answers`): then
            the matrix is in the answers' rater order, with their names.
        weights: None, "linear" or "quadratic".
        labels: ordered labels (default: sorted labels that occur; for `Answers`, give the
            order when encoding them).
        critics: critic names per column.

    Returns:
        A KappaMatrix (symmetric; NaN where undefined, with the reason).

    Raises:
        ValueError: unknown weights, a label outside `labels`, or `labels`/`critics` that
            contradict an `Answers`.
    """
    if isinstance(data, Answers):
        check_encoded_as(data, labels, critics)
        return _pairwise_kappa_answers(data, _kappa_weights(data.n_values, weights))
    matrix = encode_ratings(data, "nominal", order=labels, critics=critics)
    names = list(critics or matrix.critics) or [f"critic {i + 1}" for i in range(matrix.n_critics)]
    w = _kappa_weights(matrix.n_values, weights)
    if _answers_are_cheaper(matrix):
        answers = answers_from_matrix(matrix)
        return replace(_pairwise_kappa_answers(answers, w), critics=names)
    size = matrix.n_critics
    values = np.full((size, size), np.nan)
    counts = np.zeros((size, size), dtype=np.int64)
    reasons: dict[tuple[int, int], str] = {}
    for i in range(size):
        for j in range(i, size):
            stat = _kappa_codes(matrix.codes[:, i], matrix.codes[:, j], matrix.n_values, w)
            counts[i, j] = counts[j, i] = stat.n
            if stat.value is None:
                reasons[(i, j)] = reasons[(j, i)] = stat.reason or "undefined"
            else:
                values[i, j] = values[j, i] = stat.value
    return KappaMatrix(names, values, counts, reasons)


def _answers_are_cheaper(matrix: RatingMatrix) -> bool:
    """Whether walking the answers beats comparing R^2 / 2 column pairs over every unit."""
    size = matrix.n_critics
    if size <= _PANEL_CRITICS:
        return False
    m = (matrix.codes >= 0).sum(axis=1).astype(np.float64)
    column_cost = size * (size + 1) / 2 * matrix.n_units
    return column_cost > _ANSWERS_SPEEDUP * float((m * m).sum() + m.sum())


def _answer_pairs(answers: Answers) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every pair of answers to the same item with rater(a) <= rater(b) (an answer with itself
    included: that pair is a rater against itself), as index arrays, whole items at a time."""
    by_item = np.argsort(answers.item, kind="stable")
    m = np.bincount(answers.item, minlength=answers.n_items)
    end = np.cumsum(m)
    start = end - m
    cost = np.cumsum(m * m)  # ordered pairs up to each item
    u0 = 0
    while u0 < answers.n_items:
        done = int(cost[u0 - 1]) if u0 else 0
        u1 = max(int(np.searchsorted(cost, done + _PAIR_CHUNK, side="right")), u0 + 1)
        position = np.arange(start[u0], end[u1 - 1])  # of the answers, sorted by item
        item = answers.item[by_item[position]]
        size = m[item]
        first = np.repeat(position, size)
        within = np.arange(len(first)) - np.repeat(np.cumsum(size) - size, size)
        a, b = by_item[first], by_item[np.repeat(start[item], size) + within]
        keep = answers.rater[a] <= answers.rater[b]
        yield a[keep], b[keep]
        u0 = u1


def _pairwise_kappa_answers(answers: Answers, w: np.ndarray) -> KappaMatrix:
    """Pairwise kappa from a long table: each pair of raters' confusion counts from the pairs
    of answers within items, then every kappa at once."""
    size, v = answers.n_raters, answers.n_values
    found_keys: list[np.ndarray] = []
    found_counts: list[np.ndarray] = []
    for a, b in _answer_pairs(answers):
        pair = answers.rater[a] * size + answers.rater[b]
        key = (pair * v + answers.code[a]) * v + answers.code[b]
        uniq, count = np.unique(key, return_counts=True)
        found_keys.append(uniq)
        found_counts.append(count)
    values = np.full((size, size), np.nan)
    counts = np.zeros((size, size), dtype=np.int64)
    if found_keys:
        keys, inverse = np.unique(np.concatenate(found_keys), return_inverse=True)
        cell_counts = np.bincount(inverse.ravel(), weights=np.concatenate(found_counts))
        pairs, pair_of = np.unique(keys // (v * v), return_inverse=True)
        confusion = np.zeros((len(pairs), v * v))  # each pair's V x V counts, flattened
        confusion[pair_of.ravel(), keys % (v * v)] = cell_counts
        n = confusion.sum(axis=1)
        given_a = confusion.reshape(len(pairs), v, v).sum(axis=2)
        given_b = confusion.reshape(len(pairs), v, v).sum(axis=1)
        # Matrix products rather than sums over (pairs, V, V) arrays: the same figures, in a
        # tenth of the time at 200,000 pairs. A zero stays exactly zero (every term is >= 0).
        exp_dis = ((given_a @ w) * given_b).sum(axis=1) / n
        obs_dis = confusion @ w.ravel()
        rows, cols = pairs // size, pairs % size
        defined = exp_dis > 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            kappa = np.where(defined, 1.0 - obs_dis / np.where(defined, exp_dis, 1.0), np.nan)
        values[rows, cols] = values[cols, rows] = kappa
        counts[rows, cols] = counts[cols, rows] = n.astype(np.int64)
    return KappaMatrix(list(answers.raters), values, counts, PairReasons(counts, values))


def _chance_inputs(counts: np.ndarray) -> tuple[np.ndarray, float | None, int]:
    """pi_k (mean share per unit over rated units) and p_a (over units with >= 2 ratings)."""
    m = counts.sum(axis=1).astype(np.float64)
    rated = m >= 1
    pairable = m >= 2
    pi = (counts[rated] / m[rated, None]).mean(axis=0) if rated.any() else np.zeros(counts.shape[1])
    if not pairable.any():
        return pi, None, 0
    c = counts[pairable].astype(np.float64)
    mp = m[pairable]
    per_unit = (c * (c - 1.0)).sum(axis=1) / (mp * (mp - 1.0))
    return pi, float(per_unit.mean()), int(pairable.sum())


def fleiss_kappa_counts(counts: Any) -> Statistic:
    """Fleiss' kappa from a units x categories table of rating counts.

    With the same number of raters per unit this is Fleiss (1971). With varying numbers
    (missing ratings) it is Gwet's generalisation: p_a over units with >= 2 ratings,
    p_k = mean over rated units of n_uk / m_u, p_e = sum p_k^2.

    Args:
        counts: (units, categories) non-negative integer counts.

    Returns:
        A Statistic; None when no unit has two ratings or chance agreement is 1.

    Raises:
        ValueError: a table that is not 2-D or has negative counts.
    """
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2 or (table < 0).any():
        raise ValueError("counts must be a units x categories table of non-negative counts")
    pi, pa, n = _chance_inputs(table)
    if pa is None:
        return Statistic(None, "no unit has two or more ratings", 0)
    pe = float((pi**2).sum())
    if pe >= 1.0 - 1e-12:
        return Statistic(None, "no variation: every rating has the same label", n, pa, pe)
    return Statistic((pa - pe) / (1.0 - pe), None, n, pa, pe)


def fleiss_kappa_result(data: Any) -> Statistic:
    """Fleiss' kappa over units x raters ratings, with the reason when undefined.

    Args:
        data: units x critics ratings (labels; None for missing), or a RatingMatrix.

    Returns:
        A Statistic (see `fleiss_kappa_counts`).
    """
    return fleiss_kappa_counts(encode_ratings(data, "nominal").counts())


def fleiss_kappa(data: Any) -> float | None:
    """Fleiss' kappa over units x raters ratings; None when undefined.

    Args:
        data: units x critics ratings (labels; None for missing).

    Returns:
        kappa or None (see `fleiss_kappa_result` for the reason).
    """
    return fleiss_kappa_result(data).value


def gwet_ac1(data: Any, *, n_categories: int | None = None) -> Statistic:
    """Gwet's AC1 (Gwet 2008), robust when one label dominates.

    p_a: mean over units with >= 2 ratings of the share of agreeing ordered rating pairs;
    p_e = sum_k pi_k (1 - pi_k) / (Q - 1), pi_k the mean share of label k per rated unit.

    Args:
        data: units x critics ratings (labels; None for missing), or a RatingMatrix.
        n_categories: Q, the number of labels on the scale (default: labels that occur).
            Pass the scale's label count when some labels were never used.

    Returns:
        A Statistic; None when no unit has two ratings or fewer than two categories exist.
    """
    matrix = encode_ratings(data, "nominal")
    counts = matrix.counts()
    q = max(matrix.n_values, n_categories or 0)
    pi, pa, n = _chance_inputs(counts)
    if pa is None:
        return Statistic(None, "no unit has two or more ratings", 0)
    if q < 2:
        return Statistic(None, "AC1 needs at least two categories", n, pa, None)
    pe = float((pi * (1.0 - pi)).sum() / (q - 1))
    return Statistic((pa - pe) / (1.0 - pe), None, n, pa, pe)


def percent_agreement(data: Any) -> Statistic:
    """Share of agreeing rating pairs, averaged over units with at least two ratings.

    Args:
        data: units x critics ratings, or a RatingMatrix (compared as labels).

    Returns:
        A Statistic; None when no unit has two ratings.
    """
    matrix = encode_ratings(data, "nominal")
    _, pa, n = _chance_inputs(matrix.counts())
    if pa is None:
        return Statistic(None, "no unit has two or more ratings", 0)
    return Statistic(pa, None, n, pa, None)
