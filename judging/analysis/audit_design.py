"""An audit sample's design: what its strata are and how its label-next queue picks a stratum.

Two designs, named as `storage.reviewing.audit` records them with each sampled item:

- "agreement" (every sample drawn before the design below existed): strata by the panel's
  agreement level (`audit_stats.STRATA`: unanimous, majority, contested), the queue adaptive
  (`audit_stats.next_strata`, which reads the labels' values).
- "confidence" (every new sample): strata by the Dawid-Skene posterior that the consensus
  label is right (`audit_strata.CONFIDENCE_STRATA`: sure, likely, doubtful), the queue planned
  from each stratum's mean posterior (`audit_stats.planned_strata`, which reads the counts of
  labels given, never their values). On the simulator it saves more labels (0.447 against
  0.327 on the demo panel, 0.273 against 0.233 on three critics) and its estimate is unbiased,
  where the adaptive queue's comes out slightly high (`benchmarks/bench_audit.py`).

Why a sample keeps its design: each audited item stands for the items of its stratum (its
weight is the stratum's size over its audited items), so a sample's estimate only means
something over the strata it was drawn from. A run whose sample was drawn by agreement keeps
drawing, estimating and queueing by agreement; switching would mix two samples whose items
stand for different sets.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from judging.analysis.audit_stats import (
    STRATA,
    FloatArray,
    gains_from_sums,
    next_strata_from_sums,
    planned_strata,
    stratum_cuts,
)
from judging.analysis.audit_strata import CONFIDENCE_STRATA, LIKELY_AT, SURE_AT

AGREEMENT = "agreement"
CONFIDENCE = "confidence"
DESIGNS: tuple[str, ...] = (AGREEMENT, CONFIDENCE)
NEW_SAMPLE_DESIGN = CONFIDENCE
"""The design of a sample drawn for a run that has none yet."""


def check_design(design: str) -> str:
    """The design's name when it is one of `DESIGNS`.

    Raises:
        ValueError: any other name.
    """
    if design not in DESIGNS:
        raise ValueError(f"An audit sample is drawn by {' or '.join(DESIGNS)}, not {design!r}.")
    return design


def strata_names(design: str) -> tuple[str, ...]:
    """The design's strata, as codes 0, 1, 2."""
    return STRATA if check_design(design) == AGREEMENT else CONFIDENCE_STRATA


def design_cuts(design: str) -> dict[str, float]:
    """The design's cut points, as `storage.reviewing.audit` binds them: `unanimous` and `majority` on
    the agreement, or `sure` and `likely` on the posterior that the consensus is right."""
    if check_design(design) == AGREEMENT:
        return stratum_cuts()
    return {"sure": SURE_AT, "likely": LIKELY_AT}


def planned(design: str) -> bool:
    """Whether the design's queue is planned from predicted accuracies (never the labels)."""
    return check_design(design) == CONFIDENCE


def design_sentence(design: str) -> str:
    """The design in one plain sentence, for the pages."""
    if check_design(design) == AGREEMENT:
        return ("Strata: how many critics back the panel's label (unanimous / majority / "
                "contested); \"Label next\" picks the stratum from the labels given so far.")
    return (f"Strata: how sure the panel is of its label (sure from {SURE_AT:.0%}, likely from "
            f"{LIKELY_AT:.0%}, doubtful below), from the critics' labels alone; \"Label next\" "
            "plans how many labels each stratum gets from that, never from the labels given.")


# What "Label next" saves, measured on simulated panels whose truth is known
# (`benchmarks/bench_audit.py`, 200 seeded runs each; for "confidence" the low and high figure
# of two seed sets, 0-199 and 1000-1199): the share of labels it spares to reach
# the interval width that 300 labels drawn uniformly give under the same strata and estimator.
# A design's queue saves most when its strata differ most in how often the panel is right;
# each stratum's interval carries a floor (half a pseudo-item at each end: `audit_stats`), so a
# big clean stratum still needs its labels, which bounds the saving on a panel whose items are
# mostly in one clean stratum (docs/benchmarks.md works the bound out).
_SAVINGS = {
    CONFIDENCE: ("42-45% fewer labels on a panel of four critics of different skill and "
                 "leanings (the demo's), 27-29% fewer on three critics right 85%, 80% and "
                 "75% of the time"),
    AGREEMENT: ("about 33% fewer labels on a panel of four critics of different skill and "
                "leanings (the demo's), about 23% fewer on three critics right 85%, 80% and "
                "75% of the time"),
}


def saving_sentence(design: str) -> str:
    """What the design's "Label next" queue saves against labelling items drawn at random, and
    on which panels, in plain words for the pages."""
    return ("What \"Label next\" saves: to reach the interval that labelling items drawn at "
            f"random gives, it needed {_SAVINGS[check_design(design)]}, on simulated panels. "
            "It saves most when some strata are much more often wrong than others, least when "
            "most items sit in one stratum the panel gets right; the interval holds either way.")


def predicted_accuracy(confidence_sums: npt.ArrayLike, sizes: npt.ArrayLike) -> FloatArray:
    """Each stratum's predicted accuracy: its items' mean posterior that the consensus is right
    (an item without a consensus label counts 0: it counts as wrong); NaN for an empty
    stratum."""
    total = np.asarray(confidence_sums, dtype=np.float64).ravel()
    size = np.asarray(sizes, dtype=np.float64).ravel()
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(size > 0, total / np.maximum(size, 1.0), np.nan)


def queue_plan(n: npt.ArrayLike, total: npt.ArrayLike, squares: npt.ArrayLike,
               sizes: npt.ArrayLike, count: int, *, rng: np.random.Generator, epsilon: float,
               predicted: npt.ArrayLike | None) -> tuple[list[int], FloatArray]:
    """The strata of the next `count` labels and each stratum's gain now, for either design.

    Args:
        n, total, squares: per stratum, the usable labels' count, and the sum and sum of squares
            of the panel being right on them. With `predicted`, only `n` is read.
        predicted: None: the adaptive queue (`next_strata`, on the labels' values); else each
            stratum's predicted accuracy, and the queue is planned from it and the counts
            (`planned_strata`: the same picks from the same generator).

    Returns:
        (the strata in order, the gains `label_gains` gives on the sums the queue reads).
    """
    counts = np.asarray(n, dtype=np.float64).ravel()
    if predicted is None:
        gains = gains_from_sums(counts, total, squares, sizes)
        return next_strata_from_sums(counts, total, squares, sizes, count, rng=rng,
                                     epsilon=epsilon), gains
    p = np.asarray(predicted, dtype=np.float64).ravel()
    p = np.clip(np.where(np.isnan(p), 0.5, p), 0.0, 1.0)
    # The sums `planned_strata` plans on: what the counts would give at the predicted accuracy.
    gains = gains_from_sums(counts, counts * p, counts * p, sizes)
    return planned_strata(counts, p, sizes, count, rng=rng, epsilon=epsilon), gains
