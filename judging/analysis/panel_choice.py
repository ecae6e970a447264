"""Which judges does a panel need? How many independent votes its critics really cast, and the
cheapest sub-panel that decides as well as the whole one.

Critics from one model family, or prompted alike, err together: five of them are then worth
fewer than five votes. Measured on the items with a reference (gold labels, or blind human
labels), where each critic's error is known (a wrong label, or none given):

- The error correlation of two critics is the Pearson (phi) correlation of their error
  indicators over the items both judged; "err together" is the share of either's errors the
  other shares.
- The panel's effective number of independent votes is the design effect of its mean pairwise
  error correlation (Kish): `n / (1 + (n - 1) * rho)`. Independent critics (rho 0, or below) are
  worth n votes; critics that always err together (rho 1) are worth one. Intervals are percentile
  bootstraps over items.
- Every sub-panel is scored by its plurality vote's accuracy against the reference (a tie, or no
  vote at all, counts as wrong). The recommendation is chosen honestly: in k-fold
  cross-validation the cheapest sub-panel whose accuracy on the training folds comes within
  `tolerance` of the full panel's is picked, and scored on the held-out fold; the figure
  reported for the procedure is that held-out accuracy. The Pareto front is cost against
  accuracy over all items.

Pure functions over plain mappings (critic -> item -> label); numpy for the bootstraps.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Labels = Mapping[str, Mapping[str, str | None]]


@dataclass(frozen=True, slots=True)
class ErrorLink:
    """How two critics' errors go together on the items both judged with a reference."""

    a: str
    b: str
    items: int
    rho: float | None  # phi correlation of the error indicators (None: one never or always errs)
    low: float | None
    high: float | None
    agree: float  # share of items on which they gave the same label
    together: float | None  # share of either's errors both made (None: neither erred)

    def sentence(self) -> str:
        """"a and b agree on 97% of items and err together on 81% of their errors"."""
        together = ("never err" if self.together is None
                    else f"err together on {self.together:.0%} of their errors")
        return f"{self.a} and {self.b} agree on {self.agree:.0%} of items and {together}"


@dataclass(frozen=True, slots=True)
class EffectiveSize:
    """The panel's effective number of independent votes, with its interval."""

    critics: int
    votes: float
    low: float
    high: float
    rho: float  # the mean pairwise error correlation

    def sentence(self) -> str:
        return (f"your {self.critics} critics ≈ {self.votes:.1f} independent votes "
                f"[{self.low:.1f}, {self.high:.1f}] (mean error correlation {self.rho:.2f})")


@dataclass(frozen=True, slots=True)
class SubPanel:
    """One sub-panel: its critics, cost per item, and its plurality vote's accuracy."""

    critics: tuple[str, ...]
    cost: float
    accuracy: float
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class PanelChoice:
    """What `choose_panel` found.

    Attributes:
        items: items with a reference that the figures are over.
        effective: the whole panel's effective number of votes.
        links: every pair of critics' error link, strongest first.
        panels: every sub-panel (one critic up to the whole panel), cheapest first.
        front: the sub-panels no other beats on both cost and accuracy, cheapest first.
        recommended: the cheapest sub-panel within `tolerance` of the whole panel's accuracy
            over all items.
        held_out: the cross-validated accuracy of picking that way (the mean over folds of
            the picked sub-panel's accuracy on its held-out fold) and its interval.
        redundant: sentences on pairs of critics that add little beyond each other.
    """

    items: int
    basis: str
    effective: EffectiveSize
    links: list[ErrorLink]
    panels: list[SubPanel]
    front: list[SubPanel]
    recommended: SubPanel
    held_out: tuple[float, float, float]
    redundant: list[str]


def _errors(labels: Labels, critics: Sequence[str], items: Sequence[str],
            reference: Mapping[str, str]) -> np.ndarray:
    """items x critics: 1 where the critic is wrong or gave nothing."""
    return np.array([[0.0 if labels[c].get(i) == reference[i] else 1.0 for c in critics]
                     for i in items])


def _phi(x: np.ndarray, y: np.ndarray) -> float | None:
    if x.std() == 0 or y.std() == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def _mean_rho(errors: np.ndarray) -> float:
    """The mean phi over pairs of critics whose errors vary (a critic never or always wrong
    has no correlation)."""
    varies = errors.std(axis=0) > 0
    if varies.sum() < 2:
        return 0.0
    matrix = np.corrcoef(errors[:, varies], rowvar=False)
    upper = matrix[np.triu_indices(int(varies.sum()), k=1)]
    return float(np.mean(upper))


def effective_votes(n: int, rho: float) -> float:
    """Kish's design effect: n votes with mean pairwise error correlation rho are worth
    n / (1 + (n - 1) rho) independent ones. A negative mean (errors that avoid each other) is
    read as 0: the panel is said to be worth n votes, never more."""
    rho = min(max(rho, 0.0), 1.0)
    return n / (1 + (n - 1) * rho) if n > 1 else float(n)


def _vote(labels: Labels, critics: Sequence[str], item: str) -> str | None:
    """The plurality label of the critics on the item; None on a tie or no vote."""
    counts = Counter(v for c in critics if (v := labels[c].get(item)) is not None)
    if not counts:
        return None
    (top, first), *rest = counts.most_common(2) + [(None, 0)]
    return None if rest and rest[0][1] == first else top


def _correct(labels: Labels, critics: Sequence[str], items: Sequence[str],
             reference: Mapping[str, str]) -> np.ndarray:
    return np.array([_vote(labels, critics, i) == reference[i] for i in items], dtype=float)


def _interval(values: np.ndarray, rng: np.random.Generator, resamples: int) -> tuple[float, float]:
    if len(values) == 0:
        return (float("nan"), float("nan"))
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    means = values[picks].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def choose_panel(labels: Labels, reference: Mapping[str, str], costs: Mapping[str, float], *,
                 tolerance: float = 0.01, folds: int = 5, resamples: int = 500,
                 seed: int = 0, basis: str = "gold labels") -> PanelChoice:
    """The effective size of the panel in `labels` and its cheapest sub-panel that is as good.

    Args:
        labels: critic -> item -> label (None: no verdict), every critic of the panel.
        reference: item -> the right label (gold, or blind human labels); only these items
            count.
        costs: critic -> its cost per item (any unit; equal costs: the fewest critics).
        tolerance: how far below the whole panel's accuracy a sub-panel may be and still be
            "as good".
        folds / resamples / seed: the cross-validation and the bootstraps.
        basis: what the reference is, in words ("gold labels", "blind human labels").

    Raises:
        ValueError: fewer than two critics, or fewer items with a reference than folds.
    """
    critics = list(labels)
    items = [i for i in reference if any(labels[c].get(i) is not None for c in critics)]
    if len(critics) < 2:
        raise ValueError("A panel of one critic has nothing to choose from.")
    if len(items) < folds:
        raise ValueError(f"{len(items)} items with a reference: at least {folds} are needed.")
    rng = np.random.default_rng(seed)
    errors = _errors(labels, critics, items, reference)
    rho = _mean_rho(errors)
    boot = []
    for _ in range(resamples):
        pick = rng.integers(0, len(items), len(items))
        boot.append(effective_votes(len(critics), _mean_rho(errors[pick])))
    effective = EffectiveSize(len(critics), effective_votes(len(critics), rho),
                              float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975)),
                              rho)
    links = []
    for a, b in itertools.combinations(range(len(critics)), 2):
        both = [n for n, i in enumerate(items)
                if labels[critics[a]].get(i) is not None and labels[critics[b]].get(i) is not None]
        ea, eb = errors[both, a], errors[both, b]
        r = _phi(ea, eb) if both else None
        rs = []
        for _ in range(resamples if r is not None else 0):
            pick = rng.integers(0, len(both), len(both))
            if (v := _phi(ea[pick], eb[pick])) is not None:
                rs.append(v)
        either = float(np.maximum(ea, eb).sum())
        agree = float(np.mean([labels[critics[a]][items[n]] == labels[critics[b]][items[n]]
                               for n in both])) if both else 0.0
        links.append(ErrorLink(critics[a], critics[b], len(both), r,
                               float(np.quantile(rs, 0.025)) if rs else None,
                               float(np.quantile(rs, 0.975)) if rs else None, agree,
                               float((ea * eb).sum()) / either if either else None))
    links.sort(key=lambda link: -(link.rho if link.rho is not None else -2))
    subsets = [s for k in range(1, len(critics) + 1) for s in itertools.combinations(critics, k)]
    correct = {s: _correct(labels, s, items, reference) for s in subsets}
    panels = []
    for s in subsets:
        low, high = _interval(correct[s], rng, resamples)
        panels.append(SubPanel(s, float(sum(costs.get(c, 1.0) for c in s)),
                               float(correct[s].mean()), low, high))
    panels.sort(key=lambda p: (p.cost, -p.accuracy, len(p.critics)))
    front: list[SubPanel] = []
    for p in panels:  # cheapest first: on the front when no cheaper one is as accurate
        if not front or p.accuracy > front[-1].accuracy:
            front.append(p)
    full = tuple(critics)

    def as_good(rows: np.ndarray) -> tuple[str, ...]:
        target = correct[full][rows].mean() - tolerance
        fits = [p for p in panels if correct[p.critics][rows].mean() >= target]
        return min(fits, key=lambda p: (p.cost, -correct[p.critics][rows].mean())).critics

    # Each item scored by the panel picked without it: pooled over the folds, an item-level
    # sample of the procedure's accuracy, bootstrapped like the others.
    order = rng.permutation(len(items))
    held = np.zeros(len(items))
    for fold in np.array_split(order, folds):
        train = np.setdiff1d(order, fold)
        held[fold] = correct[as_good(train)][fold]
    chosen = as_good(np.arange(len(items)))
    recommended = next(p for p in panels if p.critics == chosen)
    held_low, held_high = _interval(held, rng, resamples)
    redundant = [link.sentence() for link in links
                 if link.rho is not None and link.agree >= 0.9 and (link.together or 0) >= 0.5]
    return PanelChoice(len(items), basis, effective, links, panels, front, recommended,
                       (float(held.mean()), held_low, held_high), redundant)


def size_k_against_top_k(labels: Labels, reference: Mapping[str, str], k: int, *,
                         folds: int = 5, seed: int = 0) -> tuple[float, float]:
    """The test of the method: held-out accuracy (k-fold) of the k-critic panel picked by its
    vote's accuracy on the training folds, and of the k critics most accurate on their own
    there. Both panels cost k critics."""
    critics = list(labels)
    items = [i for i in reference if any(labels[c].get(i) is not None for c in critics)]
    subsets = list(itertools.combinations(critics, k))
    correct = {s: _correct(labels, s, items, reference) for s in subsets}
    alone = {c: np.array([labels[c].get(i) == reference[i] for i in items], dtype=float)
             for c in critics}
    order = np.random.default_rng(seed).permutation(len(items))
    picked, top = [], []
    for fold in np.array_split(order, folds):
        train = np.setdiff1d(order, fold)
        best = max(subsets, key=lambda s: correct[s][train].mean())
        ranked = tuple(sorted(critics, key=lambda c: -alone[c][train].mean())[:k])
        picked.append(correct[best][fold].mean())
        top.append(_correct(labels, ranked, [items[n] for n in fold], reference).mean())
    return float(np.mean(picked)), float(np.mean(top))


def top_by_accuracy(labels: Labels, reference: Mapping[str, str], k: int) -> tuple[str, ...]:
    """The k critics most often right on their own (ties: panel order)."""
    items = list(reference)
    accuracy = {c: np.mean([labels[c].get(i) == reference[i] for i in items]) for c in labels}
    return tuple(sorted(labels, key=lambda c: -accuracy[c])[:k])


def held_out_accuracy(labels: Labels, reference: Mapping[str, str], critics: Sequence[str],
                      ) -> float:
    """A fixed sub-panel's plurality accuracy over the items with a reference."""
    items = [i for i in reference]
    return float(_correct(labels, critics, items, reference).mean())


def choice_text(choice: PanelChoice, *, priced: bool) -> str:
    """The plain-text section `jurybox stats` prints."""
    def cost(p: SubPanel) -> str:
        n = len(p.critics)
        return f"${p.cost:.4f}/item" if priced else f"{n} critic{'s' if n != 1 else ''}"

    lines = [f"Which judges do I need? (over {choice.items:,} items with {choice.basis})",
             f"  Effective size: {choice.effective.sentence()}"]
    for link in choice.links[:3]:
        rho = "-" if link.rho is None else (f"{link.rho:.2f} [{link.low:.2f}, {link.high:.2f}]"
                                            if link.low is not None else f"{link.rho:.2f}")
        lines.append(f"  Error correlation {rho}: {link.sentence()}")
    lines.append("  Cost against accuracy (the Pareto front):")
    for p in choice.front:
        lines.append(f"    {', '.join(p.critics):40} {cost(p):>14}  {p.accuracy:.1%} "
                     f"[{p.low:.1%}, {p.high:.1%}]")
    full = choice.panels[-1] if len(choice.panels[-1].critics) == choice.effective.critics \
        else max(choice.panels, key=lambda p: len(p.critics))
    held, low, high = choice.held_out
    lines.append(f"  Recommended: {', '.join(choice.recommended.critics)} ({cost(choice.recommended)}"
                 f", {choice.recommended.accuracy:.1%}; the whole panel {full.accuracy:.1%}). "
                 f"Chosen this way on held-out items: {held:.1%} [{low:.1%}, {high:.1%}].")
    lines += [f"  Adds little: {sentence}." for sentence in choice.redundant]
    return "\n".join(lines)


def correlated_errors(n_items: int, n_critics: int, error: float, rho: float,
                      seed: int) -> np.ndarray:
    """items x critics error indicators whose pairwise correlation is `rho` (for tests and the
    benchmark): per item, with probability rho every critic shares one error draw, else each
    draws its own (a mixture whose covariance is rho * p * (1 - p))."""
    rng = np.random.default_rng(seed)
    shared = rng.random(n_items) < rho
    common = rng.random(n_items) < error
    own = rng.random((n_items, n_critics)) < error
    return np.where(shared[:, None], common[:, None], own).astype(float)
