"""Agreement statistics: pure, vectorised functions over a units x critics table of ratings.

Input shape everywhere: `data` is a sequence of units (items), each a sequence of ratings, one
per critic, `None` (or NaN) where the critic gave no valid verdict. Failed verdicts are missing
values, never a label: a critic that errored can neither agree nor disagree.

What is here:
    encode_ratings        data -> RatingMatrix (labels encoded to ints once, reused below)
    krippendorff_alpha    alpha by the coincidence-matrix method (Krippendorff 2011), any level
    alpha_with_reason     the same, with the reason when alpha is undefined and its parts
    per_item_alpha        alpha_u = 1 - D_o(u) / D_e(dataset), one figure per unit
    bootstrap_alpha       percentile confidence interval by resampling units, with the draws
    leave_one_out_alpha   alpha without each critic in turn (who drags the panel down)
    cohen_kappa           two raters, unweighted / linear / quadratic weights
    pairwise_kappa        Cohen's kappa for every pair of critics
    fleiss_kappa          many raters (Gwet's generalisation for missing ratings)
    gwet_ac1              Gwet's AC1, robust when one label dominates
    percent_agreement     share of agreeing rating pairs within units
    agreement_with_reference  one critic against consensus / humans / gold, with a Wilson CI

Every figure that the maths leaves undefined comes back as `None` together with a sentence
saying why (`reason`), never as a silent 0 or 1.

Speed: labels are encoded to integer codes once (`encode_ratings`); unit x value counts are
built with `np.bincount`; per-unit disagreement comes from those counts (or from pairs of critic
columns when there are many distinct values), so no Python loop runs over units. The bootstrap
resamples per-unit contribution vectors: units with the same counts pattern are pooled, and a
resample is a vector of pattern multiplicities, so 1000 resamples of 100,000 units cost a few
small matrix products.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import pandas as pd

Level = Literal["nominal", "ordinal", "interval", "ratio"]
KappaWeights = Literal["linear", "quadratic"] | None
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

# Above this many distinct values the V x V difference matrix is not materialised; per-unit
# disagreement is then computed from pairs of critic columns instead.
_MAX_DENSE_VALUES = 2048
# The exact bootstrap keeps a unit x value count matrix; above this many cells it holds the
# expected disagreement fixed instead (Hayes & Krippendorff 2007 do the same).
_MAX_BOOTSTRAP_CELLS = 20_000_000
# Ordinal bootstrap recomputes the rank metric per resample from V x V coincidences per pattern.
_MAX_ORDINAL_BOOTSTRAP_VALUES = 16


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True)
class AlphaResult:
    """Krippendorff's alpha with what it rests on.

    Attributes:
        value: alpha, or None when undefined.
        reason: why alpha is undefined (None when it is defined).
        level: the measurement level used.
        n_units: units given.
        n_pairable_units: units with at least two valid ratings (the others are dropped).
        n_pairable: pairable values, the `n` of Krippendorff's formulas.
        observed: observed disagreement D_o (None when nothing is pairable).
        expected: expected disagreement D_e (None when nothing is pairable).
    """

    value: float | None
    reason: str | None
    level: str
    n_units: int
    n_pairable_units: int
    n_pairable: int
    observed: float | None = None
    expected: float | None = None

    @property
    def defined(self) -> bool:
        return self.value is not None


@dataclass(frozen=True, slots=True)
class BootstrapResult:
    """A percentile bootstrap interval for alpha, and the resampled values (for a histogram).

    Attributes:
        low, high: the interval bounds, None when alpha is undefined on the data.
        confidence: e.g. 0.95.
        distribution: alpha of every resample where it is defined.
        resamples: resamples drawn.
        n_undefined: resamples where alpha was undefined (e.g. no variation left); excluded.
        seed: the random seed (same seed, same interval).
        method: "exact" (alpha recomputed on each resample) or "fixed-expected" (only the
            observed disagreement is resampled; used when there are too many distinct values).
        reason: why there is no interval, else None.
    """

    low: float | None
    high: float | None
    confidence: float
    distribution: np.ndarray
    resamples: int
    n_undefined: int
    seed: int | None
    method: str
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Statistic:
    """A coefficient (kappa, AC1, percent agreement) with the number of units it rests on.

    Attributes:
        value: the coefficient, or None when undefined.
        reason: why it is undefined, else None.
        n: units (or items) it was computed on.
        observed: observed agreement p_o / p_a where the coefficient has one.
        chance: chance agreement p_e where the coefficient has one.
    """

    value: float | None
    reason: str | None
    n: int
    observed: float | None = None
    chance: float | None = None


@dataclass(frozen=True, slots=True)
class Proportion:
    """Agreement of one critic with a reference: k of n items, with a Wilson interval.

    Attributes:
        value: k / n, None when n == 0.
        low, high: Wilson score interval at `confidence`.
        n: items where both the critic and the reference have a value.
        agree: items where they agree.
        missing: items where the reference has a value but the critic failed (not in n).
        reason: why value is None, else None.
    """

    value: float | None
    low: float | None
    high: float | None
    n: int
    agree: int
    missing: int = 0
    confidence: float = 0.95
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class KappaMatrix:
    """Cohen's kappa for every pair of critics.

    Attributes:
        critics: critic names, in row/column order.
        values: R x R kappas, NaN where undefined (the diagonal is a critic against itself).
        n: R x R counts of items both critics rated.
        reasons: (row, col) -> why that kappa is undefined.
    """

    critics: list[str]
    values: np.ndarray
    n: np.ndarray
    reasons: dict[tuple[int, int], str] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """The kappa values as a labelled DataFrame (NaN where undefined)."""
        return pd.DataFrame(self.values, index=self.critics, columns=self.critics)


# --------------------------------------------------------------------------------------------
# Encoding


@dataclass(frozen=True)
class RatingMatrix:
    """Ratings encoded once for every statistic in this module.

    Attributes:
        codes: (units, critics) int64 array; -1 where the rating is missing.
        labels: the value behind each code, in code order (sorted, or the given order).
        values: numeric value of each code (interval/ratio: the number; ordinal: the rank).
        level: measurement level the codes are meant for.
        critics: critic names (column order), when known.
    """

    codes: np.ndarray
    labels: list[Any]
    values: np.ndarray
    level: str
    critics: list[str] = field(default_factory=list)

    @property
    def n_units(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_critics(self) -> int:
        return int(self.codes.shape[1])

    @property
    def n_values(self) -> int:
        return len(self.labels)

    def counts(self) -> np.ndarray:
        """(units, values) matrix: how many critics gave each value to each unit."""
        return _unit_counts(self.codes, self.n_values)

    def drop_critic(self, index: int) -> RatingMatrix:
        """The same ratings without critic column `index`."""
        keep = [i for i in range(self.n_critics) if i != index]
        names = [self.critics[i] for i in keep] if self.critics else []
        return RatingMatrix(self.codes[:, keep], self.labels, self.values, self.level, names)


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(
            f"unknown measurement level {level!r}: use one of {', '.join(LEVELS)}"
        )


def _to_object_grid(data: Any) -> tuple[np.ndarray, np.ndarray]:
    """(units, critics) object or float array plus a missing mask, from any accepted input."""
    if isinstance(data, pd.DataFrame):
        data = data.to_numpy(dtype=object)
    if isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise ValueError(
                f"ratings must be 2-D (units x critics); got an array of shape {data.shape}"
            )
        if data.dtype.kind in "biuf":
            grid = data.astype(np.float64, copy=False)
            return grid, np.isnan(grid)
        grid = data.astype(object, copy=False)
        return grid, np.asarray(pd.isna(grid), dtype=bool)
    if isinstance(data, (str, bytes)):
        raise ValueError("ratings must be a list of units, each a list of ratings; got a string")
    if isinstance(data, list) and data and not isinstance(data[0], (str, bytes)):
        # Fast path: numpy builds a rectangular list of lists in C. Ragged input comes back
        # 1-D (an array of lists) and takes the general path below.
        try:
            fast = np.array(data, dtype=object)
        except ValueError:
            fast = None
        if fast is not None and fast.ndim == 2:
            return fast, np.asarray(pd.isna(fast), dtype=bool)
    rows = [list(unit) if not isinstance(unit, (str, bytes)) else None for unit in data]
    if any(row is None for row in rows):
        raise ValueError(
            "each unit must be a list of ratings (one per critic); got a bare string. "
            "Wrap single ratings in a list."
        )
    width = max((len(row) for row in rows), default=0)  # type: ignore[arg-type]
    grid = np.empty((len(rows), width), dtype=object)
    if rows and all(len(row) == width for row in rows):  # type: ignore[arg-type]
        flat = np.empty(len(rows) * width, dtype=object)
        flat[:] = list(chain.from_iterable(rows))  # type: ignore[arg-type]
        grid = flat.reshape(len(rows), width)
    else:  # ragged units: pad with missing values
        grid[:] = None
        for i, row in enumerate(rows):
            grid[i, : len(row)] = row  # type: ignore[arg-type]
    return grid, np.asarray(pd.isna(grid), dtype=bool)


def _as_float(present: np.ndarray, level: str) -> np.ndarray:
    if present.dtype.kind == "f":
        return present
    try:
        numbers = present.astype(np.float64)
    except (TypeError, ValueError):
        bad = next(v for v in present if not _is_number(v))
        raise ValueError(
            f"level {level!r} needs numeric ratings; got {bad!r}. Use level='nominal', or "
            "pass order=[...] to rank labels."
        ) from None
    if not np.isfinite(numbers).all():
        raise ValueError(f"level {level!r}: ratings must be finite numbers (found inf)")
    return numbers


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def encode_ratings(
    data: Any,
    level: Level | str = "nominal",
    *,
    order: Sequence[Any] | None = None,
    critics: Sequence[str] | None = None,
) -> RatingMatrix:
    """Encode a units x critics table of ratings into integer codes.

    Args:
        data: a sequence of units, each a sequence of ratings (one per critic; None or NaN
            for a missing/failed rating); or a 2-D numpy array / DataFrame of the same shape.
            Ragged units are padded with missing values.
        level: "nominal", "ordinal", "interval" or "ratio".
        order: the declared labels in order. Required for ordinal data with string labels
            (worst to best, or any order you declare); for nominal data it fixes the label
            set (unused labels are kept); for interval/ratio with string labels each label's
            position is its value (e.g. Likert "1".."5").
        critics: optional critic names, one per column.

    Returns:
        A RatingMatrix usable by every function of this module.

    Raises:
        ValueError: unknown level, a label outside `order`, non-numeric ratings for an
            interval/ratio level without `order`, negative ratings at the ratio level.
    """
    if isinstance(data, RatingMatrix):
        return data
    _check_level(level)
    grid, missing = _to_object_grid(data)
    n_units, n_critics = grid.shape
    if critics is not None and len(critics) != n_critics:
        raise ValueError(f"{len(critics)} critic names given for {n_critics} rating columns")
    present = grid[~missing]
    codes = np.full(grid.shape, -1, dtype=np.int64)

    if order is not None:
        labels = list(order)
        if len(set(labels)) != len(labels):
            raise ValueError(f"order lists a label twice: {labels}")
        index = pd.Index(labels, dtype=object)
        found = index.get_indexer(pd.Index(present, dtype=object)) if present.size else (
            np.empty(0, dtype=np.int64)
        )
        if (found < 0).any():
            bad = present[np.flatnonzero(found < 0)[0]]
            raise ValueError(
                f"rating {bad!r} is not one of the declared labels {labels}: fix the rating "
                "or add the label to order"
            )
        codes[~missing] = found
        if level in ("interval", "ratio") and all(_is_number(v) for v in labels):
            values = np.array([float(v) for v in labels], dtype=np.float64)
        else:
            values = np.arange(len(labels), dtype=np.float64)
    elif level == "nominal":
        if present.dtype.kind == "f":
            uniques, inverse = np.unique(present, return_inverse=True)
            labels = [float(u) for u in uniques]
        else:
            inverse, uniq = pd.factorize(pd.Index(present, dtype=object), sort=False)
            labels = list(uniq)
            try:
                ranked = sorted(range(len(labels)), key=lambda i: labels[i])
            except TypeError:  # mixed, unorderable labels: keep order of appearance
                ranked = list(range(len(labels)))
            position = np.empty(len(labels), dtype=np.int64)
            position[ranked] = np.arange(len(labels))
            inverse = position[inverse] if len(labels) else inverse
            labels = [labels[i] for i in ranked]
        codes[~missing] = inverse
        values = np.arange(len(labels), dtype=np.float64)
    else:
        numbers = _as_float(present, level)
        if level == "ratio" and (numbers < 0).any():
            raise ValueError("level 'ratio' needs non-negative ratings (found a negative one)")
        uniques, inverse = np.unique(numbers, return_inverse=True)
        codes[~missing] = inverse
        labels = [float(u) for u in uniques]
        values = uniques.astype(np.float64)
        if level == "ordinal":
            values = np.arange(len(labels), dtype=np.float64)
    if level == "ratio" and (values < 0).any():
        raise ValueError("level 'ratio' needs non-negative values")
    return RatingMatrix(codes, labels, values, level, list(critics or []))


def _unit_counts(codes: np.ndarray, n_values: int) -> np.ndarray:
    """(units, values) counts by one bincount over unit * V + code."""
    n_units = codes.shape[0]
    valid = codes >= 0
    rows = np.broadcast_to(np.arange(n_units)[:, None], codes.shape)[valid]
    flat = rows * n_values + codes[valid]
    counts = np.bincount(flat, minlength=n_units * n_values)
    return counts.reshape(n_units, n_values).astype(np.int64, copy=False)


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
    if len(pcodes) == 0:
        do_unit = np.zeros(0)
    elif level == "nominal" and counts is not None:
        do_unit = (pm * pm - (counts.astype(np.float64) ** 2).sum(axis=1)) / (pm - 1.0)
    elif counts is not None and delta is not None and n_values <= 64:
        c = counts.astype(np.float64)
        do_unit = ((c @ delta) * c).sum(axis=1) / (pm - 1.0)
    else:
        # Many distinct values: sum delta^2 over pairs of critic columns (R^2 / 2 gathers).
        total = np.zeros(len(pcodes))
        pvalid = pcodes >= 0
        for i in range(codes.shape[1]):
            for j in range(i + 1, codes.shape[1]):
                both = pvalid[:, i] & pvalid[:, j]
                if not both.any():
                    continue
                ci, cj = pcodes[both, i], pcodes[both, j]
                if delta is not None:
                    d = delta[ci, cj]
                else:
                    d = _pair_delta(level, matrix.values, marginals, ci, cj)
                total[both] += 2.0 * d
        do_unit = total / (pm - 1.0)
    expected_num = _expected_numerator(level, matrix.values, marginals) if n else 0.0
    return _AlphaParts(matrix, m, pairable, counts, marginals, n, do_unit, expected_num, delta)


def _alpha_from_parts(parts: _AlphaParts) -> AlphaResult:
    matrix = parts.matrix
    n_pairable_units = int(parts.pairable.sum())
    common = dict(
        level=matrix.level,
        n_units=matrix.n_units,
        n_pairable_units=n_pairable_units,
        n_pairable=parts.n,
    )
    if n_pairable_units == 0:
        reason = (
            "no ratings at all"
            if matrix.n_units == 0
            else "no unit has two or more valid ratings, so nothing can be compared"
        )
        return AlphaResult(None, reason, **common)  # type: ignore[arg-type]
    n = parts.n
    observed = float(parts.do_unit.sum() / n)
    expected = parts.expected_num / (n * (n - 1))
    if parts.expected_num <= 0.0:
        used = int((parts.marginals > 0).sum())
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
    return np.bincount(pattern.ravel(), minlength=size * n_patterns).reshape(
        size, n_patterns
    ).astype(np.float64)


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
            None, None, confidence, np.zeros(0), resamples, resamples, seed, "none",
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
                obs_num = ((w @ coinc).reshape(size, *delta_b.shape[1:]) * delta_b).sum(
                    axis=(1, 2)
                )
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
            None, None, confidence, defined, resamples, n_undefined, seed, method,
            reason="alpha was undefined in every resample",
        )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(defined, [tail, 1.0 - tail])
    return BootstrapResult(
        float(low), float(high), confidence, defined, resamples, n_undefined, seed, method
    )


def leave_one_out_alpha(
    data: Any,
    level: Level | str = "nominal",
    *,
    order: Sequence[Any] | None = None,
    critics: Sequence[str] | None = None,
) -> dict[str, AlphaResult]:
    """Alpha of the panel without each critic in turn.

    A critic whose removal raises alpha the most is the one dragging agreement down.

    Args:
        data: units x critics ratings, or a RatingMatrix (its critic names are used).
        level: measurement level.
        order: declared label order (see `encode_ratings`).
        critics: critic names per column; default "critic 1", "critic 2", ...

    Returns:
        critic name -> AlphaResult of the panel without that critic.
    """
    matrix = encode_ratings(data, level, order=order, critics=critics)
    names = list(critics or matrix.critics) or [f"critic {i + 1}" for i in range(matrix.n_critics)]
    out: dict[str, AlphaResult] = {}
    for index, name in enumerate(names):
        out[name] = _alpha_from_parts(_alpha_parts(matrix.drop_critic(index)))
    return out


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


def _kappa_codes(
    ca: np.ndarray, cb: np.ndarray, n_values: int, w: np.ndarray
) -> Statistic:
    both = (ca >= 0) & (cb >= 0)
    n = int(both.sum())
    if n == 0:
        return Statistic(None, "no item was rated by both critics", 0)
    confusion = np.bincount(
        ca[both] * n_values + cb[both], minlength=n_values * n_values
    ).reshape(n_values, n_values).astype(np.float64)
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / n
    exp_dis = float((w * expected).sum())
    obs_dis = float((w * confusion).sum())
    w_max = float(w.max()) if w.size else 1.0
    w_max = w_max or 1.0
    observed_agreement = 1.0 - obs_dis / (n * w_max)
    chance_agreement = 1.0 - exp_dis / (n * w_max)
    if exp_dis <= 0.0:
        return Statistic(
            None,
            "no chance disagreement: both critics gave one and the same label to every item",
            n,
            observed_agreement,
            chance_agreement,
        )
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
    """Cohen's kappa for every pair of critics (columns).

    Args:
        data: units x critics ratings, or a RatingMatrix (label order = its code order).
        weights: None, "linear" or "quadratic".
        labels: ordered labels (default: sorted labels that occur).
        critics: critic names per column.

    Returns:
        A KappaMatrix (symmetric; NaN where undefined, with the reason).
    """
    matrix = encode_ratings(data, "nominal", order=labels, critics=critics)
    names = list(critics or matrix.critics) or [f"critic {i + 1}" for i in range(matrix.n_critics)]
    size = matrix.n_critics
    w = _kappa_weights(matrix.n_values, weights)
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



def _chance_inputs(counts: np.ndarray) -> tuple[np.ndarray, float | None, int]:
    """pi_k (mean share per unit over rated units) and p_a (over units with >= 2 ratings)."""
    m = counts.sum(axis=1).astype(np.float64)
    rated = m >= 1
    pairable = m >= 2
    pi = (counts[rated] / m[rated, None]).mean(axis=0) if rated.any() else np.zeros(
        counts.shape[1]
    )
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


# --------------------------------------------------------------------------------------------
# One critic against a reference


def wilson_interval(
    successes: int, n: int, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """Wilson score interval for a proportion; (None, None) when n == 0.

    Args:
        successes: k.
        n: trials.
        confidence: coverage, e.g. 0.95.

    Returns:
        (low, high).
    """
    if n <= 0:
        return None, None
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def agreement_with_reference(
    ratings: Sequence[Any],
    reference: Sequence[Any],
    *,
    tolerance: float = 0.0,
    confidence: float = 0.95,
) -> Proportion:
    """How often one critic matches a reference (consensus, human override or gold).

    Only items where both have a value count; items where the reference exists but the critic
    failed are reported as `missing`, never as agreement.

    Args:
        ratings: the critic's rating per item (None for failed).
        reference: the reference label per item (None where there is none).
        tolerance: numeric ratings within this distance of the reference agree (0: exact).
        confidence: Wilson interval coverage.

    Returns:
        A Proportion (value, Wilson interval, n, agree, missing).

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(ratings) != len(reference):
        raise ValueError(
            f"ratings and reference must cover the same items: {len(ratings)} vs "
            f"{len(reference)}"
        )
    r = np.empty(len(ratings), dtype=object)
    r[:] = list(ratings)
    ref = np.empty(len(reference), dtype=object)
    ref[:] = list(reference)
    has_ref = ~np.asarray(pd.isna(ref), dtype=bool)
    has_r = ~np.asarray(pd.isna(r), dtype=bool)
    both = has_ref & has_r
    missing = int((has_ref & ~has_r).sum())
    n = int(both.sum())
    if n == 0:
        return Proportion(
            None, None, None, 0, 0, missing, confidence,
            reason="no item has both a rating from this critic and a reference label",
        )
    a, b = r[both], ref[both]
    if tolerance > 0:
        agree_mask = np.abs(a.astype(np.float64) - b.astype(np.float64)) <= tolerance
    else:
        agree_mask = np.asarray(a == b, dtype=bool)
    return proportion(int(agree_mask.sum()), n, missing=missing, confidence=confidence)


def proportion(
    agree: int, n: int, *, missing: int = 0, confidence: float = 0.95
) -> Proportion:
    """A Proportion (k of n, Wilson interval) from counts; undefined when n == 0.

    Args:
        agree: k, items in agreement.
        n: items compared.
        missing: items the critic failed on (reported, not counted).
        confidence: Wilson interval coverage.

    Returns:
        A Proportion.
    """
    if n == 0:
        return Proportion(
            None, None, None, 0, 0, missing, confidence,
            reason="no item has both a rating from this critic and a reference label",
        )
    low, high = wilson_interval(agree, n, confidence)
    return Proportion(agree / n, low, high, n, agree, missing, confidence)
