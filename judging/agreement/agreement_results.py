"""The result types of the agreement statistics: a value, or None with the reason."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

Level = Literal["nominal", "ordinal", "interval", "ratio"]
KappaWeights = Literal["linear", "quadratic"] | None
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

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


NO_SHARED_ITEM = "no item was rated by both critics"
NO_CHANCE_DISAGREEMENT = (
    "no chance disagreement: both critics gave one and the same label to every item"
)


class PairReasons(Mapping[tuple[int, int], str]):
    """(row, col) -> why that kappa is undefined, read off the kappa matrix itself.

    Cohen's kappa between two critics is undefined for one of two reasons: they share no item
    (n = 0), or they share items but chance disagreement is zero (NaN with n > 0). With 1,000
    raters each answering a sparse subset, most of the 499,500 pairs are one or the other, so
    the reasons are not stored one by one. Reads like the dict the column-pair computation
    builds, and compares equal to it.
    """

    def __init__(self, n: np.ndarray, values: np.ndarray) -> None:
        self._n = n
        self._undefined = np.isnan(values)

    def __getitem__(self, key: tuple[int, int]) -> str:
        try:
            i, j = (int(x) for x in key)
        except (TypeError, ValueError):
            raise KeyError(key) from None
        size = self._n.shape[0]
        if not (0 <= i < size and 0 <= j < size and self._undefined[i, j]):
            raise KeyError(key)
        return NO_SHARED_ITEM if self._n[i, j] == 0 else NO_CHANCE_DISAGREEMENT

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for i, j in np.argwhere(self._undefined):
            yield (int(i), int(j))

    def __len__(self) -> int:
        return int(self._undefined.sum())


@dataclass(frozen=True, slots=True)
class KappaMatrix:
    """Cohen's kappa for every pair of critics.

    Attributes:
        critics: critic names, in row/column order.
        values: R x R kappas, NaN where undefined (the diagonal is a critic against itself).
        n: R x R counts of items both critics rated.
        reasons: (row, col) -> why that kappa is undefined (a dict, or a PairReasons for a
            matrix computed from answers).
    """

    critics: list[str]
    values: np.ndarray
    n: np.ndarray
    reasons: Mapping[tuple[int, int], str] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """The kappa values as a labelled DataFrame (NaN where undefined)."""
        import pandas as pd  # here: importing the statistics must not load pandas
        return pd.DataFrame(self.values, index=self.critics, columns=self.critics)
