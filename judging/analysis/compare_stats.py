"""Paired statistics for two runs over the same items: exact McNemar and a paired bootstrap.

Two panel versions judged the same items; for each item and each version we know whether it
was right (against a human's label, a gold label, or "every critic backed the consensus"). The
question is whether the difference between the versions is more than chance. Both tools here
work on the items the two versions share, paired item by item:

- `mcnemar_exact`: only the discordant items carry evidence (right in one version, wrong in the
  other). Under "no difference" each discordant item is a fair coin, so the two-sided p-value is
  twice the binomial tail of the smaller count, capped at 1 (McNemar's exact conditional test;
  scipy's `binomtest(k, n, 0.5)` and statsmodels' `mcnemar(exact=True)` give the same value).
- `paired_bootstrap_difference`: the difference of the two means (B minus A) with a percentile
  interval from resampling items, both versions' values of an item moving together.
- `paired_accuracy`: both, from two boolean arrays.

Pure functions over numbers: no storage, no run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "BootstrapDifference",
    "McNemarResult",
    "PairedAccuracy",
    "mcnemar_exact",
    "paired_accuracy",
    "paired_bootstrap_difference",
]

ArrayLike = Sequence[float] | Sequence[bool] | npt.NDArray[np.generic]


@dataclass(frozen=True, slots=True)
class McNemarResult:
    """McNemar's exact test on the discordant items of a paired comparison.

    Attributes:
        a_only: items version A got right and version B wrong.
        b_only: items version B got right and version A wrong.
        p_value: two-sided exact p-value; 1.0 when there is no discordant item (no evidence
            either way).
    """

    a_only: int
    b_only: int
    p_value: float

    @property
    def discordant(self) -> int:
        return self.a_only + self.b_only


def _binomial_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), in log space so that n in the millions neither
    overflows nor builds million-digit integers: log C(n, i) is a running sum of
    log((n - i + 1) / i), then the terms are added with a log-sum-exp."""
    if k >= n:
        return 1.0
    i = np.arange(1, k + 1, dtype=np.float64)
    log_comb = np.concatenate(([0.0], np.cumsum(np.log((n - i + 1) / i))))
    top = float(log_comb.max())
    log_tail = top + math.log(float(np.exp(log_comb - top).sum())) - n * math.log(2.0)
    return math.exp(log_tail)


def mcnemar_exact(a_only: int, b_only: int) -> McNemarResult:
    """McNemar's exact (binomial) test, two-sided.

    Args:
        a_only: discordant items in A's favour (A right, B wrong).
        b_only: discordant items in B's favour.

    Returns:
        The counts and p = min(1, 2 * P(X <= min(a_only, b_only))), X ~ Binomial(a_only +
        b_only, 1/2).

    Raises:
        ValueError: a negative count.
    """
    if a_only < 0 or b_only < 0:
        raise ValueError(f"discordant counts must be 0 or more, not {a_only} and {b_only}")
    n = a_only + b_only
    if n == 0:
        return McNemarResult(0, 0, 1.0)
    p = min(1.0, 2.0 * _binomial_half_cdf(min(a_only, b_only), n))
    return McNemarResult(int(a_only), int(b_only), p)


@dataclass(frozen=True, slots=True)
class BootstrapDifference:
    """The difference of two paired means (B minus A) with a bootstrap percentile interval.

    Attributes:
        estimate: mean(B) - mean(A) over the items, or None when there is no item.
        low / high: the interval's bounds, or None with `reason`.
        confidence: the interval's level (0.95 for 95%).
        resamples: bootstrap resamples drawn.
        seed: the generator's seed (the same seed and data give the same interval).
        reason: why there is no figure, else None.
    """

    estimate: float | None
    low: float | None
    high: float | None
    confidence: float
    resamples: int
    seed: int
    reason: str | None = None


def _paired_values(a: ArrayLike, b: ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    x_a = np.asarray(a, dtype=np.float64).ravel()
    x_b = np.asarray(b, dtype=np.float64).ravel()
    if x_a.shape != x_b.shape:
        raise ValueError(
            f"paired values need one value per item in each version: got {x_a.size} and {x_b.size}"
        )
    if not (np.isfinite(x_a).all() and np.isfinite(x_b).all()):
        raise ValueError("paired values must be finite numbers: leave items without a value out")
    return x_a, x_b


def paired_bootstrap_difference(
    a: ArrayLike, b: ArrayLike, *, resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> BootstrapDifference:
    """mean(b) - mean(a) over paired items, with a percentile bootstrap interval.

    Each resample draws n items with replacement (an item brings both its values). Only the
    per-item differences matter, and they take few distinct values (-1, 0, 1 for right/wrong),
    so a resample is drawn as how many items land on each distinct difference — a multinomial
    with the observed shares, exactly the distribution of resampling items — which costs
    O(resamples x distinct values) instead of O(resamples x n) (a million items stay instant).

    Args:
        a, b: one value per item for version A and version B, in the same item order.
        resamples: how many bootstrap resamples (at least 1).
        confidence: the interval's level, between 0 and 1.
        seed: seed of the generator.

    Returns:
        The estimate and interval; with no item, all None and a reason.

    Raises:
        ValueError: arrays of different lengths, non-finite values, or bad settings.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), not {confidence}")
    x_a, x_b = _paired_values(a, b)
    n = x_a.size
    if n == 0:
        return BootstrapDifference(None, None, None, confidence, resamples, seed,
                                   reason="no item has a value in both versions")
    diff = x_b - x_a
    values, counts = np.unique(diff, return_counts=True)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts / n, size=resamples)
    means = draws @ values / n
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return BootstrapDifference(float(diff.mean()), float(low), float(high), confidence,
                               resamples, seed)


@dataclass(frozen=True, slots=True)
class PairedAccuracy:
    """Two versions' accuracy on the same items, and whether they differ.

    Attributes:
        n: items with a reference in both versions.
        correct_a / correct_b: items each version got right.
        accuracy_a / accuracy_b: those as shares, None when n is 0.
        difference: accuracy B minus A with its bootstrap interval.
        mcnemar: the exact test on the discordant items, None when n is 0.
    """

    n: int
    correct_a: int
    correct_b: int
    accuracy_a: float | None
    accuracy_b: float | None
    difference: BootstrapDifference
    mcnemar: McNemarResult | None

    @property
    def reason(self) -> str | None:
        return self.difference.reason


def paired_accuracy(
    correct_a: ArrayLike, correct_b: ArrayLike, *, resamples: int = 2000,
    confidence: float = 0.95, seed: int = 0,
) -> PairedAccuracy:
    """Accuracy of two versions on the same items: each one's share right, the difference (B
    minus A) with a paired bootstrap interval, and McNemar's exact test.

    Args:
        correct_a, correct_b: per item, whether version A / B was right (same item order).
        resamples, confidence, seed: as `paired_bootstrap_difference`.

    Raises:
        ValueError: arrays of different lengths, or bad bootstrap settings.
    """
    x_a = np.asarray(correct_a, dtype=bool).ravel()
    x_b = np.asarray(correct_b, dtype=bool).ravel()
    difference = paired_bootstrap_difference(x_a, x_b, resamples=resamples,
                                             confidence=confidence, seed=seed)
    n = int(x_a.size)
    right_a, right_b = int(x_a.sum()), int(x_b.sum())
    if n == 0:
        return PairedAccuracy(0, 0, 0, None, None, difference, None)
    test = mcnemar_exact(int((x_a & ~x_b).sum()), int((~x_a & x_b).sum()))
    return PairedAccuracy(n, right_a, right_b, right_a / n, right_b / n, difference, test)
