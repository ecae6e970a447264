"""Ratings as a units x critics matrix of integer codes, encoded once and reused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from judging.agreement.agreement_results import LEVELS, Level

if TYPE_CHECKING:
    pass

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
        raise ValueError(f"unknown measurement level {level!r}: use one of {', '.join(LEVELS)}")


def _to_object_grid(data: Any) -> tuple[np.ndarray, np.ndarray]:
    """(units, critics) object or float array plus a missing mask, from any accepted input."""
    import pandas as pd  # here: importing the statistics must not load pandas
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
    import pandas as pd  # here: importing the statistics must not load pandas
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
        found = (
            index.get_indexer(pd.Index(present, dtype=object))
            if present.size
            else (np.empty(0, dtype=np.int64))
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
