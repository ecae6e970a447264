"""Krippendorff's alpha (coincidence-matrix method), per-item alpha, bootstrap (leave-one-out
alpha, which reuses these parts, is in `leave_one_out`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from judging.agreement.agreement_results import AlphaResult, BootstrapResult, Level
from judging.agreement.ratings import RatingMatrix, _unit_counts, encode_ratings

# Above this many distinct values the V x V difference matrix is not materialised; per-unit
# disagreement is then computed from pairs of critic columns instead.
_MAX_DENSE_VALUES = 2048
# The exact bootstrap keeps a unit x value count matrix; above this many cells it holds the
# expected disagreement fixed instead (Hayes & Krippendorff 2007 do the same).
_MAX_BOOTSTRAP_CELLS = 20_000_000
# Ordinal bootstrap recomputes the rank metric per resample from V x V coincidences per pattern.
_MAX_ORDINAL_BOOTSTRAP_VALUES = 16


# --------------------------------------------------------------------------------------------
# Krippendorff's alpha


def _delta_matrix(level: str, values: np.ndarray, marginals: np.ndarray) -> np.ndarray:
    """V x V squared-difference metric delta^2(c, k) of Krippendorff (2011)."""
    v = values.astype(np.float64)
    if level == "nominal":
        return 1.0 - np.eye(len(v))
    if level == "interval":
        return (v[:, None] - v[None, :]) ** 2
    if level == "ratio":
        total = v[:, None] + v[None, :]
        diff = v[:, None] - v[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(total == 0, 0.0, (diff / np.where(total == 0, 1.0, total)) ** 2)
        return out
    # ordinal: (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 = (C_k - C_c + (n_c - n_k)/2)^2
    n = marginals.astype(np.float64)
    cum = np.cumsum(n)
    return (cum[None, :] - cum[:, None] + (n[:, None] - n[None, :]) / 2.0) ** 2


def _pair_delta(
    level: str, values: np.ndarray, marginals: np.ndarray, ci: np.ndarray, cj: np.ndarray
) -> np.ndarray:
    """delta^2 for arrays of code pairs, without a V x V matrix (many distinct values)."""
    if level == "nominal":
        return (ci != cj).astype(np.float64)
    vi, vj = values[ci], values[cj]
    if level == "interval":
        return (vi - vj) ** 2
    if level == "ratio":
        total = vi + vj
        return np.where(total == 0, 0.0, ((vi - vj) / np.where(total == 0, 1.0, total)) ** 2)
    n = marginals.astype(np.float64)
    cum = np.cumsum(n)
    return (cum[cj] - cum[ci] + (n[ci] - n[cj]) / 2.0) ** 2


def _expected_numerator(level: str, values: np.ndarray, marginals: np.ndarray) -> float:
    """sum_{c,k} n_c n_k delta^2(c, k): D_e times n (n - 1)."""
    n_c = marginals.astype(np.float64)
    n = n_c.sum()
    if level == "nominal":
        return float(n * n - (n_c**2).sum())
    if level == "interval":
        # Centred for accuracy: sum n_c n_k (v_c - v_k)^2 = 2 n sum n_c (v_c - mean)^2.
        mean = (n_c * values).sum() / n if n else 0.0
        return float(2.0 * n * (n_c * (values - mean) ** 2).sum())
    used = np.flatnonzero(n_c)
    if len(used) <= _MAX_DENSE_VALUES:
        delta = _delta_matrix(level, values, marginals)[np.ix_(used, used)]
        return float(n_c[used] @ delta @ n_c[used])
    total = 0.0
    for start in range(0, len(used), 512):  # blocks of rows bound the memory
        rows = used[start : start + 512]
        ci = np.repeat(rows, len(used))
        cj = np.tile(used, len(rows))
        block = _pair_delta(level, values, marginals, ci, cj).reshape(len(rows), len(used))
        total += float(n_c[rows] @ block @ n_c[used])
    return total


@dataclass(frozen=True)
class _AlphaParts:
    """Everything alpha, per-item alpha and the bootstrap share, computed once."""

    matrix: RatingMatrix
    m: np.ndarray  # valid ratings per unit (all units)
    pairable: np.ndarray  # bool mask, m >= 2
    counts: np.ndarray | None  # (pairable units, V) counts, when dense is affordable
    marginals: np.ndarray  # n_c over pairable units
    n: int  # pairable values
    do_unit: np.ndarray  # per pairable unit: sum over ordered pairs delta^2 / (m_u - 1)
    expected_num: float  # sum n_c n_k delta^2
    delta: np.ndarray | None  # V x V metric when materialised


def _alpha_parts(matrix: RatingMatrix) -> _AlphaParts:
    codes = matrix.codes
    level = matrix.level
    n_values = matrix.n_values
    valid = codes >= 0
    m = valid.sum(axis=1)
    pairable = m >= 2
    pcodes = codes[pairable]
    pm = m[pairable].astype(np.float64)
    dense = n_values * max(len(pcodes), 1) <= _MAX_BOOTSTRAP_CELLS and n_values <= 256
    counts = _unit_counts(pcodes, n_values) if dense else None
    if counts is not None:
        marginals = counts.sum(axis=0)
    else:
        marginals = np.bincount(pcodes[pcodes >= 0], minlength=n_values)
    n = int(marginals.sum())
    delta = (
        _delta_matrix(level, matrix.values, marginals) if n_values <= _MAX_DENSE_VALUES else None
    )
    do_unit = _unit_disagreement(level, pcodes, pm, counts, delta, matrix.values, marginals)
    expected_num = _expected_numerator(level, matrix.values, marginals) if n else 0.0
    return _AlphaParts(matrix, m, pairable, counts, marginals, n, do_unit, expected_num, delta)


def _unit_disagreement(
    level: str,
    pcodes: np.ndarray,
    pm: np.ndarray,
    counts: np.ndarray | None,
    delta: np.ndarray | None,
    values: np.ndarray,
    marginals: np.ndarray,
) -> np.ndarray:
    """Per pairable unit: sum over ordered pairs of delta^2, divided by (m_u - 1).

    Each unit's figure depends on its own ratings and the dataset-wide `delta` / `marginals`
    only, so items can be scored a chunk at a time (`per_item_alpha_in`) to the same bits.
    """
    n_values = len(values)
    if len(pcodes) == 0:
        return np.zeros(0)
    if level == "nominal" and counts is not None:
        return (pm * pm - (counts.astype(np.float64) ** 2).sum(axis=1)) / (pm - 1.0)
    if counts is not None and delta is not None and n_values <= 64:
        c = counts.astype(np.float64)
        return ((c @ delta) * c).sum(axis=1) / (pm - 1.0)
    # Many distinct values: sum delta^2 over pairs of critic columns (R^2 / 2 gathers).
    total = np.zeros(len(pcodes))
    pvalid = pcodes >= 0
    for i in range(pcodes.shape[1]):
        for j in range(i + 1, pcodes.shape[1]):
            both = pvalid[:, i] & pvalid[:, j]
            if not both.any():
                continue
            ci, cj = pcodes[both, i], pcodes[both, j]
            if delta is not None:
                d = delta[ci, cj]
            else:
                d = _pair_delta(level, values, marginals, ci, cj)
            total[both] += 2.0 * d
    return total / (pm - 1.0)


def _alpha_from_parts(parts: _AlphaParts) -> AlphaResult:
    return _alpha_result(
        parts.matrix.level,
        parts.matrix.n_units,
        int(parts.pairable.sum()),
        parts.n,
        float(parts.do_unit.sum()),
        parts.expected_num,
        parts.marginals,
    )


def _alpha_result(
    level: str,
    n_units: int,
    n_pairable_units: int,
    n: int,
    observed_num: float,
    expected_num: float,
    marginals: np.ndarray,
) -> AlphaResult:
    """Alpha from its parts: observed_num = sum over pairable units of their ordered pairs'
    delta^2 / (m_u - 1), expected_num = sum n_c n_k delta^2 (the reason when undefined)."""
    common = dict(
        level=level,
        n_units=n_units,
        n_pairable_units=n_pairable_units,
        n_pairable=n,
    )
    if n_pairable_units == 0:
        reason = (
            "no ratings at all"
            if n_units == 0
            else "no unit has two or more valid ratings, so nothing can be compared"
        )
        return AlphaResult(None, reason, **common)  # type: ignore[arg-type]
    observed = float(observed_num / n)
    expected = expected_num / (n * (n - 1))
    if expected_num <= 0.0:
        used = int((marginals > 0).sum())
        reason = (
            "no variation: every pairable rating has the same value"
            if used <= 1
            else "no variation in the expected disagreement"
        )
        return AlphaResult(None, reason, observed=observed, expected=expected, **common)  # type: ignore[arg-type]
    value = 1.0 - observed / expected
    return AlphaResult(value, None, observed=observed, expected=expected, **common)  # type: ignore[arg-type]


def alpha_with_reason(
    data: Any, level: Level | str = "nominal", *, order: Sequence[Any] | None = None
) -> AlphaResult:
    """Krippendorff's alpha with the reason when it is undefined, and its parts.

    Units with fewer than two valid ratings are dropped (they cannot be paired).

    Args:
        data: units x critics ratings (see `encode_ratings`), or a RatingMatrix.
        level: "nominal", "ordinal", "interval" or "ratio".
        order: declared label order (see `encode_ratings`); needed for ordinal string labels.

    Returns:
        An AlphaResult; `value` is None with a `reason` when no unit has two ratings or when
        every pairable rating has the same value (no variation).

    Raises:
        ValueError: bad level or ratings that do not fit the level (see `encode_ratings`).
    """
    matrix = encode_ratings(data, level, order=order)
    return _alpha_from_parts(_alpha_parts(matrix))


def krippendorff_alpha(
    data: Any, level: Level | str = "nominal", *, order: Sequence[Any] | None = None
) -> float | None:
    """Krippendorff's alpha (coincidence-matrix method, Krippendorff 2011).

    Args:
        data: a list of units, each a list of ratings (one per critic, None for missing).
        level: "nominal", "ordinal", "interval" or "ratio".
        order: declared label order; required for ordinal data with string labels.

    Returns:
        alpha, or None when it is undefined (see `alpha_with_reason` for why).

    Raises:
        ValueError: bad level or ratings that do not fit the level.
    """
    return alpha_with_reason(data, level, order=order).value


def per_item_alpha(
    data: Any, level: Level | str = "nominal", *, order: Sequence[Any] | None = None
) -> np.ndarray:
    """Per-unit alpha against the dataset's expected disagreement.

    alpha_u = 1 - D_o(u) / D_e, where D_o(u) is the mean delta^2 over the ordered pairs of
    valid ratings within unit u and D_e is the dataset's expected disagreement. Alpha on a
    single unit alone is degenerate (0 unless unanimous); against the dataset's D_e, a 9-to-1
    split scores higher than a three-way split. Unanimous units score 1; units that disagree
    more than chance score below 0. The dataset alpha is the mean of alpha_u weighted by each
    unit's number of ratings m_u.

    Args:
        data: units x critics ratings, or a RatingMatrix.
        level: measurement level.
        order: declared label order (see `encode_ratings`).

    Returns:
        float array, one per unit in input order; NaN for units with fewer than two valid
        ratings, and all NaN when the dataset's D_e is zero or undefined.
    """
    matrix = encode_ratings(data, level, order=order)
    return _per_item_from_parts(_alpha_parts(matrix))


@dataclass(frozen=True)
class DatasetDisagreement:
    """The dataset-wide half of per-item alpha, built once by `dataset_disagreement` from
    aggregates, so that `per_item_alpha_in` can score items a chunk at a time and give the
    same figures, to the bit, as `per_item_alpha` over the whole table.

    Attributes:
        level: measurement level.
        labels: the value behind each code (as `encode_ratings` gives them for the dataset).
        values: the numeric value of each code.
        marginals: n_c, valid ratings of each value in units with two or more of them.
        n: their total.
        dense: whether the whole-table computation would count values per unit (it decides
            which of two equal formulas is used; kept so chunks use the same one).
        expected_num: sum n_c n_k delta^2 (D_e times n (n - 1)).
        delta: the V x V metric, when materialised.
    """

    level: str
    labels: list[Any]
    values: np.ndarray
    marginals: np.ndarray
    n: int
    dense: bool
    expected_num: float
    delta: np.ndarray | None


def dataset_disagreement(
    present: Sequence[Any],
    pairable_counts: Mapping[Any, int],
    n_pairable_units: int,
    level: Level | str = "nominal",
    *,
    order: Sequence[Any] | None = None,
) -> DatasetDisagreement:
    """The dataset's expected disagreement and metric, from aggregates (no ratings table).

    Args:
        present: every distinct valid rating in the dataset (in any unit, pairable or not:
            they fix the codes and values as `encode_ratings` would).
        pairable_counts: rating -> how many valid ratings of it lie in units with two or more
            valid ratings.
        n_pairable_units: how many units have two or more valid ratings.
        level, order: as in `per_item_alpha`.

    Raises:
        ValueError: as `encode_ratings` (a rating outside `order`, bad level, ...).
    """
    matrix = encode_ratings([[value] for value in present], level, order=order)
    code = {label: i for i, label in enumerate(matrix.labels)}
    marginals = np.zeros(matrix.n_values, dtype=np.int64)
    for value, count in pairable_counts.items():
        marginals[code[value]] += int(count)
    n_values = matrix.n_values
    n = int(marginals.sum())
    return DatasetDisagreement(
        level=matrix.level,
        labels=list(matrix.labels),
        values=matrix.values,
        marginals=marginals,
        n=n,
        dense=n_values * max(int(n_pairable_units), 1) <= _MAX_BOOTSTRAP_CELLS
        and n_values <= 256,
        expected_num=_expected_numerator(matrix.level, matrix.values, marginals) if n else 0.0,
        delta=(
            _delta_matrix(matrix.level, matrix.values, marginals)
            if n_values <= _MAX_DENSE_VALUES
            else None
        ),
    )


def per_item_alpha_in(rows: Sequence[Sequence[Any]], dataset: DatasetDisagreement) -> np.ndarray:
    """`per_item_alpha` for some of a dataset's units, against the whole dataset's D_e.

    Args:
        rows: units x critics ratings (None for a missing or failed rating), a chunk of the
            dataset `dataset` was built from.
        dataset: from `dataset_disagreement`.

    Returns:
        float array, one per row: what `per_item_alpha` over the whole dataset gives them.

    Raises:
        ValueError: a rating that is not among the dataset's (`dataset.labels`).
    """
    code = {label: i for i, label in enumerate(dataset.labels)}
    width = max((len(row) for row in rows), default=0)
    codes = np.full((len(rows), width), -1, dtype=np.int64)
    for u, row in enumerate(rows):
        for c, value in enumerate(row):
            if value is None or (isinstance(value, float) and np.isnan(value)):
                continue
            found = code.get(value)
            if found is None:
                raise ValueError(f"rating {value!r} is not among the dataset's ratings")
            codes[u, c] = found
    m = (codes >= 0).sum(axis=1)
    pairable = m >= 2
    out = np.full(len(rows), np.nan)
    if dataset.n < 2 or dataset.expected_num <= 0.0 or not pairable.any():
        return out
    pcodes = codes[pairable]
    pm = m[pairable].astype(np.float64)
    counts = _unit_counts(pcodes, len(dataset.labels)) if dataset.dense else None
    do_unit = _unit_disagreement(
        dataset.level, pcodes, pm, counts, dataset.delta, dataset.values, dataset.marginals
    )
    expected = dataset.expected_num / (dataset.n * (dataset.n - 1))
    out[pairable] = 1.0 - (do_unit / pm) / expected
    return out


def _per_item_from_parts(parts: _AlphaParts) -> np.ndarray:
    out = np.full(parts.matrix.n_units, np.nan)
    if parts.n < 2 or parts.expected_num <= 0.0:
        return out
    expected = parts.expected_num / (parts.n * (parts.n - 1))
    pm = parts.m[parts.pairable].astype(np.float64)
    out[parts.pairable] = 1.0 - (parts.do_unit / pm) / expected
    return out


def _pattern_pool(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of a unit x value count matrix: (patterns, frequency, unit -> pattern)."""
    if counts.shape[1] == 0:
        return counts[:1], np.array([len(counts)]), np.zeros(len(counts), dtype=np.int64)
    base = int(counts.max()) + 1
    if base ** counts.shape[1] < 2**62:
        key = counts @ (base ** np.arange(counts.shape[1], dtype=np.int64))
        _, first, inverse, freq = np.unique(
            key, return_index=True, return_inverse=True, return_counts=True
        )
        return counts[first], freq, inverse.ravel()
    patterns, inverse, freq = np.unique(counts, axis=0, return_inverse=True, return_counts=True)
    return patterns, freq, inverse.ravel()


def _draw_multiplicities(
    rng: np.random.Generator, freq: np.ndarray, inverse: np.ndarray, size: int
) -> np.ndarray:
    """(size, patterns) counts of each pattern in `size` resamples of all units."""
    n_units = int(freq.sum())
    n_patterns = len(freq)
    if n_patterns <= 4096:
        # Resampling units uniformly with replacement = multinomial over patterns weighted by
        # how many units share each pattern: exact, and O(patterns) instead of O(units).
        return rng.multinomial(n_units, freq / n_units, size=size).astype(np.float64)
    picks = rng.integers(0, n_units, size=(size, n_units), dtype=np.int32)
    pattern = inverse[picks] + (np.arange(size) * n_patterns)[:, None]
    return (
        np.bincount(pattern.ravel(), minlength=size * n_patterns)
        .reshape(size, n_patterns)
        .astype(np.float64)
    )


def bootstrap_alpha(
    data: Any,
    level: Level | str = "nominal",
    *,
    resamples: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    order: Sequence[Any] | None = None,
) -> BootstrapResult:
    """Percentile bootstrap confidence interval for alpha, resampling units with replacement.

    Each resample's alpha is recomputed exactly (observed and expected disagreement from the
    resampled units), from pooled per-unit contribution vectors rather than from scratch.
    With very many distinct values (or many for ordinal data) the expected disagreement is held
    at its full-data value and only the observed disagreement is resampled
    (method "fixed-expected", as in Hayes & Krippendorff 2007).

    Args:
        data: units x critics ratings, or a RatingMatrix.
        level: measurement level.
        resamples: number of bootstrap resamples (>= 1).
        seed: random seed; the same seed gives the same interval.
        confidence: interval coverage, strictly between 0 and 1.
        order: declared label order (see `encode_ratings`).

    Returns:
        A BootstrapResult with the interval and every defined resampled alpha.

    Raises:
        ValueError: resamples < 1 or confidence outside (0, 1).
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence}")
    matrix = encode_ratings(data, level, order=order)
    return _bootstrap_from_parts(_alpha_parts(matrix), resamples, seed, confidence)


def _bootstrap_from_parts(
    parts: _AlphaParts, resamples: int, seed: int | None, confidence: float
) -> BootstrapResult:
    full = _alpha_from_parts(parts)
    if full.value is None:
        return BootstrapResult(
            None,
            None,
            confidence,
            np.zeros(0),
            resamples,
            resamples,
            seed,
            "none",
            reason=f"alpha is undefined: {full.reason}",
        )
    level = parts.matrix.level
    rng = np.random.default_rng(seed)
    m = parts.m[parts.pairable].astype(np.float64)
    counts = parts.counts
    exact = counts is not None and (
        level != "ordinal" or parts.matrix.n_values <= _MAX_ORDINAL_BOOTSTRAP_VALUES
    )
    if level == "interval" and counts is None:
        exact = True  # closed form below needs only per-unit sums
    # Resamples are drawn in chunks so an index matrix never exceeds ~5M entries (~20 MB).
    chunk = max(1, min(resamples, 200, 5_000_000 // max(len(m), 1)))
    alphas: list[np.ndarray] = []

    if exact and counts is not None:
        patterns, freq, inverse = _pattern_pool(counts)
        p = patterns.astype(np.float64)
        pm = p.sum(axis=1)
        # per-pattern observed numerator (the metric is fixed except for ordinal data)
        if level == "nominal":
            p_do = (pm * pm - (p * p).sum(axis=1)) / (pm - 1.0)
        elif level != "ordinal":
            assert parts.delta is not None
            p_do = ((p @ parts.delta) * p).sum(axis=1) / (pm - 1.0)
        if level == "ordinal":
            # per-pattern coincidences o_ck = (n_c n_k - [c=k] n_c) / (m - 1), flattened
            coinc = (p[:, :, None] * p[:, None, :]) - p[:, :, None] * np.eye(p.shape[1])
            coinc = (coinc / (pm - 1.0)[:, None, None]).reshape(len(p), -1)
        for start in range(0, resamples, chunk):
            size = min(chunk, resamples - start)
            w = _draw_multiplicities(rng, freq, inverse, size)
            n_b = w @ pm
            marg = w @ p  # (size, V)
            if level == "ordinal":
                cum = np.cumsum(marg, axis=1)
                delta_b = (
                    cum[:, None, :] - cum[:, :, None] + (marg[:, :, None] - marg[:, None, :]) / 2
                ) ** 2
                obs_num = ((w @ coinc).reshape(size, *delta_b.shape[1:]) * delta_b).sum(axis=(1, 2))
                exp_num = np.einsum("bi,bij,bj->b", marg, delta_b, marg)
            else:
                obs_num = w @ p_do
                if level == "nominal":
                    exp_num = n_b * n_b - (marg * marg).sum(axis=1)
                else:
                    assert parts.delta is not None
                    exp_num = np.einsum("bi,ij,bj->b", marg, parts.delta, marg)
            with np.errstate(invalid="ignore", divide="ignore"):
                alphas.append(np.where(exp_num > 0, 1.0 - (n_b - 1.0) * obs_num / exp_num, np.nan))
        method = "exact"
    else:
        # Per-unit vectors, resampled by index: observed numerator and m_u always; for interval
        # also centred sums, which give the expected disagreement in closed form.
        n_units = len(m)
        do = parts.do_unit
        if level == "interval":
            codes = parts.matrix.codes[parts.pairable]
            vals = np.where(codes >= 0, parts.matrix.values[np.maximum(codes, 0)], 0.0)
            centre = float(vals.sum() / m.sum())
            vals = np.where(codes >= 0, vals - centre, 0.0)
            s1, s2 = vals.sum(axis=1), (vals**2).sum(axis=1)
        expected_full = parts.expected_num / (parts.n * (parts.n - 1))
        for start in range(0, resamples, chunk):
            size = min(chunk, resamples - start)
            picks = rng.integers(0, n_units, size=(size, n_units), dtype=np.int32)
            n_b = m[picks].sum(axis=1)
            obs_num = do[picks].sum(axis=1)
            if level == "interval":
                t1, t2 = s1[picks].sum(axis=1), s2[picks].sum(axis=1)
                exp_num = 2.0 * n_b * t2 - 2.0 * t1 * t1
                with np.errstate(invalid="ignore", divide="ignore"):
                    alphas.append(
                        np.where(exp_num > 0, 1.0 - (n_b - 1.0) * obs_num / exp_num, np.nan)
                    )
            else:
                alphas.append(1.0 - (obs_num / n_b) / expected_full)
        method = "exact" if level == "interval" else "fixed-expected"

    draws = np.concatenate(alphas)
    defined = draws[np.isfinite(draws)]
    n_undefined = int(len(draws) - len(defined))
    if len(defined) == 0:
        return BootstrapResult(
            None,
            None,
            confidence,
            defined,
            resamples,
            n_undefined,
            seed,
            method,
            reason="alpha was undefined in every resample",
        )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(defined, [tail, 1.0 - tail])
    return BootstrapResult(
        float(low), float(high), confidence, defined, resamples, n_undefined, seed, method
    )
