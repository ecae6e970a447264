"""Statistics on logprob scores: agreement on expected scores, calibration of pooled
probabilities against the humans.

- Agreement on expected scores: each critic's G-Eval expected score is a number, so the
  critics' agreement is Krippendorff's alpha at the interval level over them
  (`judging.agreement.alpha_with_reason`), where argmax labels give only the ordinal one. It
  credits two critics that both hesitated between 3 and 4, which argmax labels split.
- Calibration: is a pooled probability of 0.8 right 80% of the time? The expected calibration
  error (ECE) of Guo et al. (2017): items binned by their top pooled probability (equal-width
  bins on [0, 1]); ECE = sum over bins of (items in bin / items) x |accuracy - mean
  confidence|, where accuracy is the share whose top label is the human's.

Pure functions: `storage.results.expected_scores` reads the inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judging.agreement import AlphaResult, alpha_with_reason


def expected_score_alpha(rows: Sequence[Sequence[float | None]]) -> AlphaResult:
    """Krippendorff's alpha at the interval level over units x critics expected scores (None
    for a critic without one on that unit; units with fewer than two are dropped)."""
    return alpha_with_reason([list(row) for row in rows], "interval")


@dataclass(frozen=True)
class CalibrationBin:
    """One confidence bin: [low, high), its items, their mean top probability and accuracy."""

    low: float
    high: float
    n: int
    confidence: float | None
    accuracy: float | None


@dataclass(frozen=True)
class ProbabilityCalibration:
    """Pooled probabilities against human labels.

    Attributes:
        ece: expected calibration error (None with no item).
        n: items with a pooled distribution and a human label.
        bins: every bin, empty ones included (n 0, confidence and accuracy None).
        reason: why `ece` is None.
    """

    ece: float | None
    n: int
    bins: tuple[CalibrationBin, ...]
    reason: str | None = None


def probability_calibration(distributions: Sequence[Mapping[str, float]],
                            humans: Sequence[str],
                            bins: int = 10) -> ProbabilityCalibration:
    """The ECE of pooled label distributions against human labels (see the module doc).

    Args:
        distributions: per item, label -> pooled probability.
        humans: per item, the human's label.
        bins: how many equal-width confidence bins.

    Raises:
        ValueError: the sequences differ in length, or bins < 1.
    """
    if len(distributions) != len(humans):
        raise ValueError(f"calibration: {len(distributions)} distributions but {len(humans)} "
                         "human labels; give one of each per item")
    if bins < 1:
        raise ValueError(f"calibration: bins must be at least 1, not {bins}")
    width = 1.0 / bins
    conf: list[list[float]] = [[] for _ in range(bins)]
    right: list[list[bool]] = [[] for _ in range(bins)]
    for probs, human in zip(distributions, humans, strict=True):
        if not probs:
            continue
        top = max(probs, key=lambda label: probs[label])  # the first of tied labels
        p = float(probs[top])
        # p x bins, not p / width: 0.6 / 0.1 is 5.999..., which would put 0.6 in bin 5.
        index = min(int(p * bins), bins - 1)  # p = 1.0 belongs to the last bin
        conf[index].append(p)
        right[index].append(top == human)
    n = sum(len(c) for c in conf)
    out = []
    ece = 0.0
    for b in range(bins):
        size = len(conf[b])
        mean_conf = sum(conf[b]) / size if size else None
        accuracy = sum(right[b]) / size if size else None
        if size and mean_conf is not None and accuracy is not None:
            ece += size / n * abs(accuracy - mean_conf)
        out.append(CalibrationBin(b * width, (b + 1) * width, size, mean_conf, accuracy))
    if n == 0:
        return ProbabilityCalibration(None, 0, tuple(out), "no item has both pooled probabilities and a "
                           "human label (an override or a gold label)")
    return ProbabilityCalibration(ece, n, tuple(out))


@dataclass(frozen=True)
class ExpectedScoreReport:
    """A run's statistics on logprob scores.

    Attributes:
        alpha: interval alpha over the critics' expected scores (`expected_score_alpha`);
            undefined, with its reason, for labels without an order or a single critic.
        calibration: the pooled probabilities against the humans (`probability_calibration`).
    """

    alpha: AlphaResult
    calibration: ProbabilityCalibration
