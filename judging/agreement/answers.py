"""Ratings as a long table of answers: one row per (item, rater, label), encoded once.

Crowdsourced labels and large reviewer teams come this way: many raters, each answering a
sparse subset of the items. A units x critics matrix of such data is mostly empty (20,000 items
x 1,000 raters with 5 answers per item is 2% full), and every statistic that walks it pays for
the empty cells. `Answers` keeps only the answers, as three integer index arrays, so Dawid-Skene,
pairwise kappa and leave-one-out alpha cost what the answers cost (see `dawid_skene`,
`pairwise_kappa`, `leave_one_out_alpha`, which all take an `Answers` as their data).

Labels are encoded by `encode_ratings` itself (on the column of answers), so an `Answers` and a
`RatingMatrix` of the same ratings have the same labels, codes and values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from judging.agreement.agreement_results import Level
from judging.agreement.ratings import RatingMatrix, encode_ratings

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Answers:
    """A long table of ratings, encoded.

    Attributes:
        item: (answers,) int64 index into `items`.
        rater: (answers,) int64 index into `raters`.
        code: (answers,) int64 index into `labels` (valid answers only: missing ones are
            dropped when encoding, as a failed verdict is a missing value, never a label).
        items: item ids in index order (every item seen, even one whose answers all failed).
        raters: rater names in index order, as given (every rater seen).
        labels: the value behind each code (as `encode_ratings` orders them).
        values: numeric value of each code (see `RatingMatrix.values`).
        level: measurement level the codes are meant for.
    """

    item: np.ndarray
    rater: np.ndarray
    code: np.ndarray
    items: list[Any]
    raters: list[Any]
    labels: list[Any]
    values: np.ndarray
    level: str

    @property
    def n_answers(self) -> int:
        return int(len(self.code))

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_raters(self) -> int:
        return len(self.raters)

    @property
    def n_values(self) -> int:
        return len(self.labels)

    def to_matrix(self) -> RatingMatrix:
        """The same ratings as an items x raters matrix (for small data and for checks: it
        allocates every empty cell)."""
        codes = np.full((self.n_items, self.n_raters), -1, dtype=np.int64)
        codes[self.item, self.rater] = self.code
        return RatingMatrix(codes, self.labels, self.values, self.level,
                            [str(r) for r in self.raters])


def _objects(values: Sequence[Any]) -> np.ndarray:
    """A 1-D object array of `values`, whatever they are (tuples stay tuples, not a 2-D array)."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def _factorize(values: Sequence[Any], what: str) -> tuple[np.ndarray, list[Any]]:
    """Index per row and the distinct values in order of first appearance."""
    import pandas as pd  # here: importing the statistics must not load pandas
    index = pd.Index(_objects(values), dtype=object)
    if len(index) and index.isna().any():
        row = int(np.flatnonzero(index.isna())[0])
        raise ValueError(
            f"answer row {row} has no {what}: every answer needs an item id and a rater name "
            f"(only the label may be missing, for a failed verdict)"
        )
    codes, uniques = pd.factorize(index, sort=False)
    return codes.astype(np.int64, copy=False), list(uniques)


def encode_answers(
    items: Sequence[Any],
    raters: Sequence[Any],
    ratings: Sequence[Any],
    level: Level | str = "nominal",
    *,
    order: Sequence[Any] | None = None,
) -> Answers:
    """Encode a long table of answers: row i says rater `raters[i]` gave item `items[i]` the
    rating `ratings[i]`.

    Args:
        items: item id per answer.
        raters: rater name per answer (kept as given, in order of first appearance).
        ratings: the rating per answer; None or NaN for a failed or missing one (the item and
            the rater are still counted, the answer is not).
        level: "nominal", "ordinal", "interval" or "ratio".
        order: the declared labels in order (see `encode_ratings`).

    Returns:
        An Answers usable by `dawid_skene`, `pairwise_kappa` and `leave_one_out_alpha`.

    Raises:
        ValueError: columns of different lengths, a missing item id or rater name, a rater
            answering the same item twice, or ratings that do not fit the level (as
            `encode_ratings`).
    """
    if not len(items) == len(raters) == len(ratings):
        raise ValueError(
            f"items, raters and ratings must be columns of one table: got {len(items)}, "
            f"{len(raters)} and {len(ratings)} rows"
        )
    item, item_ids = _factorize(items, "item id")
    rater, rater_names = _factorize(raters, "rater name")
    n_raters = max(len(rater_names), 1)
    pair = item * n_raters + rater
    if len(pair):
        order_rows = np.argsort(pair, kind="stable")
        twice = np.flatnonzero(np.diff(pair[order_rows]) == 0)
        if len(twice):
            row = int(order_rows[twice[0] + 1])
            raise ValueError(
                f"rater {rater_names[rater[row]]!r} answered item {item_ids[item[row]]!r} "
                "more than once: keep one answer per rater and item (e.g. the latest)"
            )
    matrix = encode_ratings(_objects(ratings)[:, None], level, order=order)
    codes = matrix.codes[:, 0]
    valid = codes >= 0
    return Answers(
        item=item[valid],
        rater=rater[valid],
        code=codes[valid],
        items=item_ids,
        raters=rater_names,
        labels=list(matrix.labels),
        values=matrix.values,
        level=matrix.level,
    )


def encode_answer_frame(
    frame: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    level: Level | str = "nominal",
    order: Sequence[Any] | None = None,
) -> Answers:
    """`encode_answers` over a DataFrame with one row per answer.

    Args:
        frame: the long table.
        item, rater, label: its column names (crowd-kit's are "task", "worker", "label").
        level, order: as `encode_answers`.

    Raises:
        ValueError: a named column is absent, or as `encode_answers`.
    """
    absent = [name for name in (item, rater, label) if name not in frame.columns]
    if absent:
        raise ValueError(
            f"the answers table has no column {', '.join(map(repr, absent))}; its columns are "
            f"{list(frame.columns)}: pass item=, rater=, label= with the names it uses"
        )
    return encode_answers(frame[item].to_numpy(dtype=object), frame[rater].to_numpy(dtype=object),
                          frame[label].to_numpy(dtype=object), level, order=order)


def answers_from_matrix(matrix: RatingMatrix) -> Answers:
    """The valid cells of a units x critics matrix as answers (items are row positions)."""
    unit, critic = np.nonzero(matrix.codes >= 0)
    names = list(matrix.critics) or [f"critic {i + 1}" for i in range(matrix.n_critics)]
    return Answers(
        item=unit.astype(np.int64),
        rater=critic.astype(np.int64),
        code=matrix.codes[unit, critic],
        items=list(range(matrix.n_units)),
        raters=names,
        labels=list(matrix.labels),
        values=matrix.values,
        level=matrix.level,
    )


def check_encoded_as(
    answers: Answers, labels: Sequence[Any] | None, critics: Sequence[Any] | None
) -> None:
    """Refuse `labels=` / `critics=` that contradict already-encoded answers (they would be
    silently ignored otherwise).

    Raises:
        ValueError: the labels or the raters differ from the answers'.
    """
    if labels is not None and list(labels) != answers.labels:
        raise ValueError(
            f"the answers were encoded with the labels {answers.labels}, not {list(labels)}: "
            "pass order=[...] to encode_answers instead"
        )
    if critics is not None and list(critics) != list(answers.raters):
        raise ValueError(
            "critics= does not match the answers' raters: the answers keep their raters' "
            "names, rename them in the long table instead"
        )
