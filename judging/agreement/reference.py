"""One critic against a reference (consensus, humans, gold), with a Wilson interval."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from judging.agreement.agreement_results import Proportion

if TYPE_CHECKING:
    pass

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
    import pandas as pd  # here: importing the statistics must not load pandas
    if len(ratings) != len(reference):
        raise ValueError(
            f"ratings and reference must cover the same items: {len(ratings)} vs {len(reference)}"
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
    if n == 0:  # `proportion` says why the figure is undefined
        return proportion(0, 0, missing=missing, confidence=confidence)
    a, b = r[both], ref[both]
    if tolerance > 0:
        agree_mask = np.abs(a.astype(np.float64) - b.astype(np.float64)) <= tolerance
    else:
        agree_mask = np.asarray(a == b, dtype=bool)
    return proportion(int(agree_mask.sum()), n, missing=missing, confidence=confidence)


def proportion(agree: int, n: int, *, missing: int = 0, confidence: float = 0.95) -> Proportion:
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
            None,
            None,
            None,
            0,
            0,
            missing,
            confidence,
            reason="no item has both a rating from this critic and a reference label",
        )
    low, high = wilson_interval(agree, n, confidence)
    return Proportion(agree / n, low, high, n, agree, missing, confidence)
