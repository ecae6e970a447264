"""Leave-one-critic-out alpha: the panel's alpha without each critic (or rater) in turn.

A panel's handful of critics: alpha is recomputed without each column (R passes over a units x
R table). Many raters each answering a sparse subset (1,000 raters at 20,000 items took 582 s
that way): removing a rater changes only the units it answered, so alpha without it is the full
alpha's coincidence matrix and marginals plus what its own answers change, summed per rater
from the answers by `np.bincount`. Cost: answers x V^2 once, then V^2 per rater.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judging.agreement.agreement_results import AlphaResult, Level
from judging.agreement.alpha import (
    _alpha_from_parts,
    _alpha_parts,
    _alpha_result,
    _delta_matrix,
    _expected_numerator,
)
from judging.agreement.answers import Answers, answers_from_matrix
from judging.agreement.ratings import RatingMatrix, encode_ratings

# The answers' way keeps a V x V coincidence change per rater and per answer chunk: for label
# data (and Likert scales) V is small; above this many distinct values it is not worth it.
_MAX_ANSWER_VALUES = 64
# Answer x V^2 floats held at once while summing coincidence changes per rater.
_CHUNK_CELLS = 4_000_000
# A units x critics table goes the answers' way above this many critics (a panel usually has
# fewer, and then its figures stay those of the column-dropping computation, to the bit).
_PANEL_CRITICS = 16


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
        data: units x critics ratings, or a RatingMatrix (its critic names are used), or an
            `Answers` (a long table of (item, rater, label), see `encode_answers`; its raters'
            names and the level it was encoded at are used).
        level: measurement level.
        order: declared label order (see `encode_ratings`).
        critics: critic names per column; default "critic 1", "critic 2", ...

    Returns:
        critic name -> AlphaResult of the panel without that critic.
    """
    if isinstance(data, Answers):
        if data.n_values <= _MAX_ANSWER_VALUES:
            return _loo_from_answers(data, list(data.raters))
        return _loo_by_columns(data.to_matrix(), list(data.raters))
    matrix = encode_ratings(data, level, order=order, critics=critics)
    names = list(critics or matrix.critics) or [f"critic {i + 1}" for i in range(matrix.n_critics)]
    if matrix.n_critics > _PANEL_CRITICS and matrix.n_values <= _MAX_ANSWER_VALUES:
        return _loo_from_answers(answers_from_matrix(matrix), names)
    return _loo_by_columns(matrix, names)


def _loo_by_columns(matrix: RatingMatrix, names: list[Any]) -> dict[Any, AlphaResult]:
    return {
        name: _alpha_from_parts(_alpha_parts(matrix.drop_critic(index)))
        for index, name in enumerate(names)
    }


def _coincidences(counts: np.ndarray, m: np.ndarray) -> np.ndarray:
    """(rows, V, V) coincidences of units with these value counts and m ratings each:
    (n_c n_k - [c = k] n_c) / (m - 1), zero where m < 2 (such a unit pairs nothing)."""
    c = counts.astype(np.float64)
    out = c[:, :, None] * c[:, None, :]
    diag = np.arange(c.shape[1])
    out[:, diag, diag] -= c
    scale = np.where(m >= 2, 1.0 / np.maximum(m - 1.0, 1.0), 0.0)
    return out * scale[:, None, None]


def _loo_from_answers(answers: Answers, names: list[Any]) -> dict[Any, AlphaResult]:
    """Alpha without each rater, from the full data's parts and each rater's change to them."""
    level, values = answers.level, answers.values
    v, n_raters, n_units = answers.n_values, answers.n_raters, answers.n_items
    m = np.bincount(answers.item, minlength=n_units).astype(np.float64)
    counts = np.bincount(answers.item * v + answers.code, minlength=n_units * v).reshape(
        n_units, v
    )
    pairable = m >= 2
    # The full data's coincidence matrix and marginals (pairable units only).
    c_pair = counts[pairable].astype(np.float64)
    inv = 1.0 / (m[pairable] - 1.0)
    full_o = (c_pair * inv[:, None]).T @ c_pair - np.diag(inv @ c_pair)
    full_marg = c_pair.sum(axis=0)
    full_units = int(pairable.sum())

    # Each answer's change when its rater leaves: its unit loses one rating of its value.
    d_o = np.zeros((n_raters, v * v))
    d_marg = np.zeros((n_raters, v))
    d_units = np.zeros(n_raters)
    chunk = max(1, _CHUNK_CELLS // max(v * v, 1))
    for lo in range(0, answers.n_answers, chunk):
        unit = answers.item[lo : lo + chunk]
        rater = answers.rater[lo : lo + chunk]
        code = answers.code[lo : lo + chunk]
        before = counts[unit]
        after = before.copy()
        after[np.arange(len(code)), code] -= 1
        m_before, m_after = m[unit], m[unit] - 1.0
        change = _coincidences(after, m_after) - _coincidences(before, m_before)
        d_o += _sum_per_rater(rater, change.reshape(len(code), v * v), n_raters)
        marg = np.where((m_after >= 2)[:, None], after, 0) - np.where(
            (m_before >= 2)[:, None], before, 0
        )
        d_marg += _sum_per_rater(rater, marg.astype(np.float64), n_raters)
        d_units += np.bincount(
            rater, weights=(m_after >= 2).astype(np.float64) - (m_before >= 2), minlength=n_raters
        )

    # Rounding can leave a tiny negative where a marginal or coincidence is truly zero; the
    # marginals are integer counts, so round them back.
    marginals = np.rint(full_marg[None, :] + d_marg).astype(np.int64)
    coincidence = (full_o.ravel()[None, :] + d_o).reshape(n_raters, v, v)
    fixed = None if level == "ordinal" else _delta_matrix(level, values, full_marg)
    out: dict[Any, AlphaResult] = {}
    for r, name in enumerate(names):
        marg = marginals[r]
        n = int(marg.sum())
        delta = fixed if fixed is not None else _delta_matrix(level, values, marg)
        observed_num = float((delta * coincidence[r]).sum())
        expected_num = _expected_numerator(level, values, marg) if n else 0.0
        out[name] = _alpha_result(
            level, n_units, full_units + int(round(d_units[r])), n, observed_num, expected_num,
            marg,
        )
    return out


def _sum_per_rater(rater: np.ndarray, rows: np.ndarray, n_raters: int) -> np.ndarray:
    """(raters, width) sums of `rows` (answers x width) by the answer's rater."""
    width = rows.shape[1]
    index = (rater[:, None] * width + np.arange(width)).ravel()
    return np.bincount(index, weights=rows.ravel(), minlength=n_raters * width).reshape(
        n_raters, width
    )
