"""Audit strata from the panel's own confidence: the Dawid-Skene posterior that the consensus
label is right, computed from the critics' labels alone (no human label), cut into three.

Why another stratification than the agreement levels (`audit_stats.STRATA`): the label-next
queue saves labels by putting them where the panel is often wrong, but the audit's interval
charges every stratum a floor of uncertainty (half a pseudo-item at each end, see
`audit_stats`), about `W_h * sqrt(0.5) / n_h` for a stratum whose audited items are all right.
With three critics right 85/80/75% of the time, the unanimous stratum is half the items at
99.8% accuracy: Neyman allocation with the true variances would save 41% of the labels, but the
floor of that big, clean stratum keeps about 70 labels there, and the best allocation for the
interval as computed saves about 22% (the queue got 23%). Finer strata (agreement level x
label) make it worse (15%): each stratum pays its own floor. What helps is drawing the line
elsewhere: the posterior that the consensus is right puts the unanimous items together with the
majorities that are almost surely right (two reliable critics against a weak one, on a common
label), so the clean stratum grows (72% of the items at 99.2%) and its floor is paid once, and
the doubtful items, where the labels do the work, are set apart more sharply. Measured in
`benchmarks/bench_audit.py` (the `_by_confidence` figures).

Unbiased whatever the model gets wrong: the strata are a function of the critics' labels only,
fixed before any item is drawn, and items are drawn uniformly within them, so the stratified
estimator and its interval hold as they do for agreement levels. A Dawid-Skene fit that is
overconfident (critics whose mistakes are correlated) only makes the strata less useful, never
the estimate wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from judging.agreement import Answers
from judging.analysis.audit_stats import FloatArray, IntArray
from judging.voting.dawid_skene import dawid_skene

CONFIDENCE_STRATA: tuple[str, ...] = ("sure", "likely", "doubtful")
"""The confidence strata, as codes 0, 1, 2."""

SURE_AT = 0.95
"""Posterior that the consensus is right from which an item is sure."""
LIKELY_AT = 0.80
"""Posterior from which (and below sure) an item is likely; below it, or with no consensus
label (NaN), doubtful."""


def confidence_codes(confidence: npt.ArrayLike, *, sure_at: float = SURE_AT,
                     likely_at: float = LIKELY_AT) -> IntArray:
    """Each item's confidence stratum (an index of `CONFIDENCE_STRATA`) from the posterior that
    its consensus label is right (NaN: doubtful).

    Raises:
        ValueError: cut points out of order or outside [0, 1].
    """
    if not 0.0 <= likely_at <= sure_at <= 1.0:
        raise ValueError(f"the cut points must satisfy 0 <= likely_at <= sure_at <= 1, not "
                         f"{likely_at} and {sure_at}.")
    q = np.asarray(confidence, dtype=np.float64)
    codes = np.full(q.shape, 2, dtype=np.int64)
    codes[q >= likely_at] = 1  # NaN compares False: stays doubtful
    codes[q >= sure_at] = 0
    return codes


def consensus_confidence(votes: npt.ArrayLike, consensus: npt.ArrayLike,
                         n_labels: int) -> FloatArray:
    """The Dawid-Skene posterior that each item's consensus label is its true label, fitted on
    the critics' labels of the whole run (no human label is read).

    Args:
        votes: items x critics label codes (0..n_labels-1; -1 where the critic gave no valid
            label: a failed call is missing, never a label).
        consensus: each item's consensus label code (-1: no consensus label).
        n_labels: how many labels the scale has.

    Returns:
        (items,) the posterior of the consensus label; NaN where there is none. An item whose
        critics all failed gets the fitted prior of its consensus label.

    Raises:
        ValueError: a code outside -1..n_labels-1, fewer than two labels, or shapes that
            differ.
    """
    codes = np.asarray(votes, dtype=np.int64)
    said = np.asarray(consensus, dtype=np.int64).ravel()
    if codes.ndim != 2 or codes.shape[0] != len(said):
        raise ValueError(f"votes must be items x critics with one row per consensus label; got "
                         f"{codes.shape} for {len(said)} items.")
    if n_labels < 2:
        raise ValueError("Dawid-Skene needs at least two labels.")
    if codes.size and (codes.min() < -1 or codes.max() >= n_labels):
        raise ValueError(f"a vote's code is outside -1..{n_labels - 1}.")
    if len(said) and (said.min() < -1 or said.max() >= n_labels):
        raise ValueError(f"a consensus code is outside -1..{n_labels - 1}.")
    out = np.full(len(said), np.nan)
    if not len(said):
        return out
    item, rater = np.nonzero(codes >= 0)
    answers = Answers(item=item.astype(np.int64), rater=rater.astype(np.int64),
                      code=codes[item, rater], items=list(range(codes.shape[0])),
                      raters=[f"critic {j + 1}" for j in range(codes.shape[1])],
                      labels=list(range(n_labels)), values=np.arange(n_labels, dtype=np.float64),
                      level="nominal")
    posteriors = dawid_skene(answers).posteriors
    known = said >= 0
    out[known] = posteriors[np.flatnonzero(known), said[known]]
    return out


def confidence_from_labels(votes: Sequence[Sequence[str | None]],
                           consensus: Sequence[str | None],
                           labels: Sequence[str]) -> FloatArray:
    """`consensus_confidence` from labels as stored (text): each item's critics' valid labels
    (None: none) and its consensus label (None: none).

    Args:
        votes: one row per item, one entry per critic.
        consensus: one per item.
        labels: the scale's labels; any other label seen is added after them (a critic or the
            vote may give one the scale does not list).

    Returns:
        (items,) the posterior that each item's consensus label is right; NaN without one.
    """
    said = np.asarray(list(consensus), dtype=object)
    if not len(said):
        return np.full(0, np.nan)
    grid = np.asarray(votes, dtype=object)
    if grid.ndim != 2 or len(grid) != len(said):
        raise ValueError(f"votes must be one row per item, one entry per critic; got "
                         f"{grid.shape} for {len(said)} items.")
    known = list(labels)
    seen = {str(x) for x in np.unique(grid[grid != None]).tolist()}  # noqa: E711
    seen |= {str(x) for x in said if x is not None}
    known += sorted(seen - set(known))
    codes = np.full(grid.shape, -1, dtype=np.int64)
    target = np.full(len(said), -1, dtype=np.int64)
    for code, label in enumerate(known):
        codes[grid == label] = code
        target[said == label] = code
    return consensus_confidence(codes, target, max(2, len(known)))
