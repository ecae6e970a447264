"""How far each critic can be trusted: its reliability against blind human labels (pure, numpy).

Per critic and per label (one label against the rest), the true-positive rate (of the items a
human labelled L blind, the share the critic also called L) and the true-negative rate (of the
items a human gave another label, the share the critic did not call L), each with its Wilson
score interval (`judging.agreement.proportion`: the one Wilson interval of the code base);
Cohen's kappa between the critic and the humans with a percentile bootstrap interval; and the
critic's position and verbosity bias where the run measured them.

Why blind labels only: an override given after reading the critics leans towards them, and the
items reviewed by contest are the hard ones; a label given before the critics were shown (a
blind first pass, or the audit sample) is neither anchored nor chosen by the critics' verdicts.

A critic is "trusted" on a label only when the low ends of both intervals clear a threshold the
user sets: a high rate on four items is not trust. A critic's failed verdicts are no verdict:
they are counted apart (`missing`), never as a wrong label.

The bootstrap resamples items with `numpy.random.default_rng(seed).integers(0, n, (B, n))`,
the draw `scipy.stats.bootstrap(..., paired=True, method="percentile")` makes, and takes the
linear-interpolated quantiles: with the same seed the interval is scipy's up to floating-point
rounding (tests/test_reliability_stats.py checks it against scipy with an independent kappa).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from judging.agreement import Proportion, proportion
from judging.analysis.pairwise_stats import PositionBias
from judging.analysis.verbosity import VerbosityRow

TRUSTED_AT = 0.8
"""The default threshold: both intervals' low ends at 80% or more."""

RESAMPLES = 2000
_CELLS_PER_CHUNK = 2_000_000  # resample rows drawn at once: B x n indices stay under ~16 MB


@dataclass(frozen=True)
class LabelReliability:
    """One critic on one label, against the humans' blind labels.

    Attributes:
        label: the label (the rest of the scale's labels are its negatives).
        positive: items the humans labelled `label` (with a valid verdict of the critic).
        tpr: the share of those the critic also called `label` (Wilson interval).
        tnr: of the items the humans gave another label, the share the critic did not call
            `label` (Wilson interval).
    """

    label: str
    tpr: Proportion
    tnr: Proportion

    def trusted(self, threshold: float) -> bool:
        """Both intervals' low ends at `threshold` or above (an undefined rate never is)."""
        return all(rate.low is not None and rate.low >= threshold
                   for rate in (self.tpr, self.tnr))


@dataclass(frozen=True)
class KappaInterval:
    """Cohen's kappa with a percentile bootstrap interval over items.

    Attributes:
        value: kappa on the items as they are (None when undefined: see `reason`).
        low, high: the interval (None when it cannot be computed).
        n: items compared.
        resamples, seed, confidence: how the interval was drawn.
        undefined: resamples on which kappa was undefined (left out of the quantiles).
        reason: why there is no kappa or no interval.
    """

    value: float | None
    low: float | None
    high: float | None
    n: int
    resamples: int
    seed: int | None
    confidence: float
    undefined: int = 0
    reason: str | None = None


@dataclass(frozen=True)
class CriticReliability:
    """One critic's card.

    Attributes:
        critic: its name.
        n: items with a blind human label and a valid verdict of the critic.
        missing: items with a blind human label on which the critic failed (not in `n`).
        labels: one row per label, in the scale's order.
        kappa: Cohen's kappa with the humans, with its interval.
        position: its position bias (pairwise panels: both orders asked), else None.
        verbosity: its verbosity row (ordered scales), else None.
    """

    critic: str
    n: int
    missing: int
    labels: list[LabelReliability]
    kappa: KappaInterval
    position: PositionBias | None = None
    verbosity: VerbosityRow | None = None

    def trusted_labels(self, threshold: float) -> list[str]:
        """The labels this critic is trusted on at `threshold`, in the scale's order."""
        return [row.label for row in self.labels if row.trusted(threshold)]


@dataclass(frozen=True)
class ReliabilityCard:
    """Every critic's card for one run, and what it was computed from.

    Attributes:
        critics: one card per critic, in panel order (empty with a `reason`).
        blind_items: items with a blind human label.
        audit_items: of those, how many are in the run's audit sample.
        verbosity_field: the item field whose length the verbosity figures measure.
        verbosity_reason: why there are no verbosity figures, if there are none.
        position_measured: whether the run asked each pair in both orders.
        reason: why there is no card.
    """

    critics: list[CriticReliability] = field(default_factory=list)
    blind_items: int = 0
    audit_items: int = 0
    verbosity_field: str | None = None
    verbosity_reason: str | None = None
    position_measured: bool = False
    reason: str | None = None

    def source_sentence(self) -> str:
        """What the card was computed from, in one sentence for the page and the CLI."""
        n = self.blind_items
        audit = (f" ({self.audit_items:,} of them in the audit sample)" if self.audit_items
                 else "")
        return (f"Against {n:,} item{'' if n == 1 else 's'} labelled blind, before the critics "
                f"were shown{audit}. Overrides given after reading the critics are left out: "
                "they lean towards them. The rates are over the labelled items as they are, "
                "not weighted: an audit labelled by \"Label next\" holds more contested items "
                "than the run, so they tend to read low.")

    def to_text(self, threshold: float = TRUSTED_AT) -> str:
        """The card as plain text (what `jurybox reliability` prints)."""
        if self.reason is not None:
            return f"Critic reliability: {self.reason}"
        lines = ["Critic reliability against blind human labels", "  " + self.source_sentence(),
                 f"  Trusted on a label: both intervals' low ends at {threshold:.0%} or more."]
        for card in self.critics:
            trusted = card.trusted_labels(threshold)
            lines.append("")
            lines.append(f"{card.critic}: {card.n:,} items"
                         + (f", {card.missing:,} failed" if card.missing else "")
                         + f"; {trust_sentence(card, threshold)}")
            lines.append(f"  Cohen's kappa with the humans: {kappa_text(card.kappa)}")
            for row in card.labels:
                mark = "  trusted" if row.label in trusted else ""
                lines.append(f"  {row.label}: true-positive {rate_text(row.tpr)}, "
                             f"true-negative {rate_text(row.tnr)}{mark}")
            if card.position is not None:
                lines.append(f"  Position bias: {position_text(card.position)}")
            if card.verbosity is not None:
                lines.append(f"  Verbosity (length of {self.verbosity_field!r}): "
                             f"{verbosity_text(card.verbosity)}")
        if not self.position_measured:
            lines.append("")
            lines.append("Position bias: not measured (only a pairwise panel asks each pair in "
                         "both orders).")
        if self.verbosity_reason:
            lines.append(f"Verbosity: {self.verbosity_reason}.")
        return "\n".join(lines)


def trust_sentence(card: CriticReliability, threshold: float) -> str:
    """"trusted on KEEP, REJECT" or why not, at `threshold`."""
    trusted = card.trusted_labels(threshold)
    if trusted:
        return f"trusted on {', '.join(trusted)} at {threshold:.0%}"
    return f"not trusted on any label at {threshold:.0%}"


def rate_text(rate: Proportion) -> str:
    """"90% [83%, 94%] (54/60)", or "undefined (reason)"."""
    if rate.value is None or rate.low is None or rate.high is None:
        return f"undefined ({rate.reason or 'no item'})"
    return f"{rate.value:.0%} [{rate.low:.0%}, {rate.high:.0%}] ({rate.agree}/{rate.n})"


def kappa_text(kappa: KappaInterval) -> str:
    """"0.712 [0.601, 0.805] over 60 items", or why it is undefined."""
    if kappa.value is None:
        return f"undefined ({kappa.reason})"
    if kappa.low is None or kappa.high is None:
        return f"{kappa.value:.3f} over {kappa.n:,} items (no interval: {kappa.reason})"
    return (f"{kappa.value:.3f} [{kappa.low:.3f}, {kappa.high:.3f}] over {kappa.n:,} items "
            f"({kappa.confidence:.0%} bootstrap, {kappa.resamples:,} resamples, seed "
            f"{kappa.seed})")


def position_text(bias: PositionBias) -> str:
    """"changed on 4 of 30 pairs (13%), 3 to the first shown both times"."""
    if not bias.pairs:
        return "no pair answered in both orders"
    return (f"changed on {bias.changed} of {bias.pairs} pairs ({bias.changed / bias.pairs:.0%}),"
            f" {bias.to_first} to the first shown both times")


def verbosity_text(row: VerbosityRow) -> str:
    """"rho -0.089 [-0.34, +0.18] over 60 items", or why there is none."""
    if row.rho is None or row.low is None or row.high is None:
        return f"not measured ({row.reason})"
    return f"rho {row.rho:+.3f} [{row.low:+.3f}, {row.high:+.3f}] over {row.n:,} items"


# -- the statistics -------------------------------------------------------------------------


def label_rates(said: Sequence[str | None], human: Sequence[str], labels: Sequence[str], *,
                confidence: float = 0.95) -> list[LabelReliability]:
    """Each label's true-positive and true-negative rates of one critic (one label against
    the rest), over the items where the critic gave a valid verdict.

    Args:
        said: the critic's label per item (None: it failed).
        human: the humans' blind label per item.
        labels: the labels to report, in order.

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(said) != len(human):
        raise ValueError(f"said and human must cover the same items: {len(said)} vs "
                         f"{len(human)}")
    valid = [(s, h) for s, h in zip(said, human, strict=True) if s is not None]
    critic = np.array([s for s, _ in valid], dtype=object)
    truth = np.array([h for _, h in valid], dtype=object)
    rows = []
    for label in labels:
        positive, called = truth == label, critic == label
        tpr = proportion(int((positive & called).sum()), int(positive.sum()),
                         confidence=confidence)
        tnr = proportion(int((~positive & ~called).sum()), int((~positive).sum()),
                         confidence=confidence)
        if tpr.n == 0:
            tpr = _undefined(tpr, f"no item labelled {label} blind")
        if tnr.n == 0:
            tnr = _undefined(tnr, f"no item labelled other than {label} blind")
        rows.append(LabelReliability(label, tpr, tnr))
    return rows


def _undefined(rate: Proportion, reason: str) -> Proportion:
    return Proportion(None, None, None, 0, 0, rate.missing, rate.confidence, reason=reason)


def _kappas(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], k: int,
            index: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Cohen's kappa of each row of `index` (a resample of item positions): NaN where chance
    agreement is 1 (both sides gave one and the same label throughout)."""
    rows, n = index.shape
    cells = (np.arange(rows)[:, None] * (k * k) + a[index] * k + b[index]).ravel()
    table = np.bincount(cells, minlength=rows * k * k).reshape(rows, k, k) / n
    observed = np.trace(table, axis1=1, axis2=2)
    chance = (table.sum(axis=2) * table.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (observed - chance) / (1.0 - chance)
    kappa[np.isclose(chance, 1.0)] = np.nan
    return np.asarray(kappa, dtype=np.float64)


def kappa_interval(a: Sequence[str], b: Sequence[str], *, resamples: int = RESAMPLES,
                   seed: int | None = 0, confidence: float = 0.95) -> KappaInterval:
    """Cohen's kappa between two label sequences over the same items, with a percentile
    bootstrap interval over items (module doc: scipy's draw and quantiles).

    Args:
        a, b: one label per item each (no missing values: compare valid verdicts only).
        resamples: bootstrap resamples.
        seed: the generator's seed (the same seed gives the same interval).
        confidence: the interval's coverage.

    Raises:
        ValueError: the sequences differ in length, or `resamples` is below 1.
    """
    if len(a) != len(b):
        raise ValueError(f"a and b must cover the same items: {len(a)} vs {len(b)}")
    if resamples < 1:
        raise ValueError(f"resamples must be 1 or more, not {resamples}")
    n = len(a)

    def result(value: float | None, low: float | None = None, high: float | None = None, *,
               undefined: int = 0, reason: str | None = None) -> KappaInterval:
        return KappaInterval(value, low, high, n, resamples, seed, confidence, undefined,
                             reason)

    if n == 0:
        return result(None, reason="no item has both a blind label and a valid verdict")
    names = sorted({*map(str, a), *map(str, b)})
    code = {name: i for i, name in enumerate(names)}
    ca = np.array([code[str(x)] for x in a], dtype=np.int64)
    cb = np.array([code[str(x)] for x in b], dtype=np.int64)
    k = len(names)
    value = float(_kappas(ca, cb, k, np.arange(n, dtype=np.int64)[None, :])[0])
    if not np.isfinite(value):
        return result(None, reason=(
            "no chance disagreement: the critic and the humans gave one and the same label "
            "to every item"))
    rng = np.random.default_rng(seed)
    chunk = max(1, _CELLS_PER_CHUNK // n)
    draws = []
    for start in range(0, resamples, chunk):
        # Row by row, the same stream as one (resamples, n) draw: chunks keep memory flat.
        index = rng.integers(0, n, (min(chunk, resamples - start), n))
        draws.append(_kappas(ca, cb, k, index))
    theta = np.concatenate(draws)
    defined = theta[np.isfinite(theta)]
    undefined = int(theta.size - defined.size)
    if n < 2 or defined.size == 0:
        return result(value, undefined=undefined, reason="too few items to resample")
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(defined, [tail, 1.0 - tail])
    return result(value, float(low), float(high), undefined=undefined)


def critic_reliability(
    critic: str, said: Mapping[str, str | None], human: Mapping[str, str],
    labels: Sequence[str], *, resamples: int = RESAMPLES, seed: int | None = 0,
    confidence: float = 0.95, position: PositionBias | None = None,
    verbosity: VerbosityRow | None = None,
) -> CriticReliability:
    """One critic's card against the humans' blind labels.

    Args:
        critic: its name.
        said: item id -> its label (None: it failed; an item it has no row for is left out).
        human: item id -> the humans' blind label.
        labels: the labels to report, in order.
        position, verbosity: its bias figures, where the run measured them.
    """
    items = [item for item in human if item in said]
    failed = sum(said[item] is None for item in items)
    valid = [item for item in items if said[item] is not None]
    return CriticReliability(
        critic=critic,
        n=len(valid),
        missing=failed,
        labels=label_rates([said[i] for i in items], [human[i] for i in items], labels,
                           confidence=confidence),
        kappa=kappa_interval([str(said[i]) for i in valid], [human[i] for i in valid],
                             resamples=resamples, seed=seed, confidence=confidence),
        position=position,
        verbosity=verbosity,
    )
