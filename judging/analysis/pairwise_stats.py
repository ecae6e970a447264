"""The results of a pairwise run: win rates per system, Bradley-Terry strengths, and each
critic's position bias. Pure functions over plain data (`judging.runs.stored.run_report` gathers it).

- Win rate: a system's wins plus half its ties, over its comparisons, with a percentile
  bootstrap interval over the comparisons (a seed makes it reproducible).
- Bradley-Terry: P(i beats j) = p_i / (p_i + p_j). Strengths are fitted by the MM iteration
  of Hunter (2004), p_i <- W_i / sum_j n_ij / (p_i + p_j), with a tie counted as half a win
  for each side, and scaled to sum to 1. They exist only when every system has won something
  and lost something against the others (else the likelihood has no maximum: the reason says
  so).
- Position bias: the share of a critic's answered pairs (both orders answered) whose answer
  changed when the responses were swapped, and how many of those changes went to whichever
  response was shown first.
- Against the gold labels, order by order (a swap run): over the pairs a critic answered in
  both orders, how often it was right in both (its verdict, the pair read in both orders) and
  the mean of the two orders' accuracies (the figure LLM-as-a-judge papers report: each order
  scored on its own, then averaged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from judging.panel.pairwise import PairwiseConfig

# One comparison's result: (system shown as A, system shown as B, the final label).
Outcome = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class SystemResult:
    """One system over the run's comparisons (a tie counts half in the win rate)."""

    system: str
    wins: int
    ties: int
    losses: int
    win_rate: float
    low: float | None  # the bootstrap interval of the win rate
    high: float | None

    @property
    def comparisons(self) -> int:
        return self.wins + self.ties + self.losses


@dataclass(frozen=True, slots=True)
class Strengths:
    """Bradley-Terry strengths by system (summing to 1), or why there are none."""

    values: dict[str, float]
    iterations: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PositionBias:
    """One critic's answers in the two orders."""

    critic: str
    pairs: int  # items (x samples) answered in both orders
    changed: int  # of those, answers that changed with the order
    to_first: int  # of the changes, how many went to the response shown first both times

    @property
    def rate(self) -> float | None:
        return self.changed / self.pairs if self.pairs else None


@dataclass(frozen=True, slots=True)
class OrderAccuracy:
    """One critic against the gold labels in the two orders, over the pairs (items x samples
    with a gold label) it answered in both."""

    critic: str
    pairs: int
    both: int  # right in both orders
    first: int  # right with the responses as given (A first)
    swapped: int  # right with them swapped (the answer read back in the first order)

    @property
    def both_rate(self) -> float | None:
        """The share of pairs right in both orders."""
        return self.both / self.pairs if self.pairs else None

    @property
    def mean_rate(self) -> float | None:
        """The mean of the two orders' accuracies."""
        return (self.first + self.swapped) / (2 * self.pairs) if self.pairs else None


def _tally(outcomes: Sequence[Outcome], config: PairwiseConfig) -> dict[str, list[int]]:
    """System -> [wins, ties, losses]."""
    tally: dict[str, list[int]] = {}
    for first, second, label in outcomes:
        a, b = tally.setdefault(first, [0, 0, 0]), tally.setdefault(second, [0, 0, 0])
        if label == config.a_label:
            a[0] += 1
            b[2] += 1
        elif label == config.b_label:
            a[2] += 1
            b[0] += 1
        else:
            a[1] += 1
            b[1] += 1
    return tally


def win_rates(outcomes: Sequence[Outcome], config: PairwiseConfig, *, resamples: int = 1000,
              seed: int = 0, level: float = 0.95) -> list[SystemResult]:
    """Every system's wins, ties, losses and win rate with a bootstrap interval, best first.

    Args:
        outcomes: one (system A, system B, label) per decided comparison; labels other than
            A and B count as ties.
    """
    tally = _tally(outcomes, config)
    draws = np.random.default_rng(seed).integers(0, len(outcomes), (resamples, len(outcomes))) \
        if outcomes else None
    rows = []
    for system, (wins, ties, losses) in tally.items():
        rate = (wins + ties / 2) / (wins + ties + losses)
        low = high = None
        if draws is not None:
            chosen = _win_points(outcomes, system, config)[draws]  # resamples x comparisons
            taken = (~np.isnan(chosen)).sum(axis=1)
            rates = np.nansum(chosen, axis=1)[taken > 0] / taken[taken > 0]
            if rates.size:
                low, high = (float(q) for q in np.quantile(rates, [(1 - level) / 2,
                                                                  (1 + level) / 2]))
        rows.append(SystemResult(system, wins, ties, losses, rate, low, high))
    return sorted(rows, key=lambda r: (-r.win_rate, r.system))


def _win_points(outcomes: Sequence[Outcome], system: str, config: PairwiseConfig) -> np.ndarray:
    """Per comparison: 1, 0.5 or 0 for `system`, NaN where it did not take part."""
    points = np.full(len(outcomes), np.nan)
    for index, (first, second, label) in enumerate(outcomes):
        if system not in (first, second):
            continue
        if label not in (config.a_label, config.b_label):
            points[index] = 0.5
        else:
            won = (label == config.a_label) == (system == first)
            points[index] = 1.0 if won else 0.0
    return points


def bradley_terry(outcomes: Sequence[Outcome], config: PairwiseConfig, *,
                  tolerance: float = 1e-10, max_iterations: int = 10_000) -> Strengths:
    """Bradley-Terry strengths by the MM iteration (see the module docstring)."""
    tally = _tally(outcomes, config)
    systems = sorted(tally)
    if len(systems) < 2:
        return Strengths({}, 0, "fewer than two systems were compared")
    stuck = [s for s in systems if tally[s][0] + tally[s][1] == 0 or tally[s][2] + tally[s][1] == 0]
    if stuck:
        return Strengths({}, 0, f"{', '.join(stuck)} won every comparison or lost every one, "
                         "so no finite strength fits")
    index = {s: n for n, s in enumerate(systems)}
    games = np.zeros((len(systems), len(systems)))
    for first, second, _ in outcomes:
        games[index[first], index[second]] += 1
        games[index[second], index[first]] += 1
    won = np.array([tally[s][0] + tally[s][1] / 2 for s in systems])
    strength = np.full(len(systems), 1.0 / len(systems))
    for iterations in range(1, max_iterations + 1):
        updated = won / (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        updated /= updated.sum()
        settled = np.max(np.abs(updated - strength)) < tolerance
        strength = updated
        if settled:
            return Strengths({s: float(strength[index[s]]) for s in systems}, iterations)
    return Strengths({}, max_iterations, "the fit did not settle (are some systems never "
                     "compared with the others?)")


def position_bias(answers: Mapping[str, Mapping[str, Sequence[tuple[str | None, str | None]]]],
                  config: PairwiseConfig) -> list[PositionBias]:
    """Each critic's position bias from its answers per item in both orders (`storage.results.calls.
    order_answers`: the label with A first, the label given on the swapped pair)."""
    rows = []
    for critic in sorted(answers):
        pairs = changed = to_first = 0
        for item_pairs in answers[critic].values():
            for forward, backward in item_pairs:
                if forward is None or backward is None:
                    continue
                pairs += 1
                if config.flip(backward) != forward:
                    changed += 1
                    # "A" both times: whichever response was shown first won, twice.
                    to_first += forward == backward == config.a_label
        rows.append(PositionBias(critic, pairs, changed, to_first))
    return rows


def order_accuracy(answers: Mapping[str, Mapping[str, Sequence[tuple[str | None, str | None]]]],
                   gold: Mapping[str, str], config: PairwiseConfig) -> list[OrderAccuracy]:
    """Each critic against the gold labels in each order, from its answers per item in both
    orders (as `position_bias` reads them); items without a gold label, and pairs not
    answered in both orders, are left out. Empty without gold labels."""
    if not gold:
        return []
    rows = []
    for critic in sorted(answers):
        pairs = both = first = swapped = 0
        for item_id, item_pairs in answers[critic].items():
            truth = gold.get(item_id)
            if truth is None:
                continue
            for forward, backward in item_pairs:
                if forward is None or backward is None:
                    continue
                pairs += 1
                right_first = forward == truth
                right_swapped = config.flip(backward) == truth
                first += right_first
                swapped += right_swapped
                both += right_first and right_swapped
        rows.append(OrderAccuracy(critic, pairs, both, first, swapped))
    return rows


@dataclass(frozen=True, slots=True)
class PairwiseReport:
    """A pairwise run's results: per system, Bradley-Terry strengths, per critic's bias and,
    on a swap run with gold labels, each critic's accuracy order by order."""

    comparisons: int  # decided comparisons counted (an abstained item is left out)
    systems: list[SystemResult]
    strengths: Strengths
    bias: list[PositionBias]
    vs_gold: list[OrderAccuracy] = field(default_factory=list)

    def to_text(self) -> str:
        """The plain-text summary `jurybox stats` prints for a pairwise run."""
        lines = [f"Pairwise results over {self.comparisons} comparisons (final labels; a tie "
                 "counts half)"]
        lines.append(f"  {'system':<16} {'wins':>5} {'ties':>5} {'losses':>6} {'win rate':>9} "
                     f"{'95% interval':>15} {'strength':>9}")
        for row in self.systems:
            interval = (f"{row.low:.2f} - {row.high:.2f}" if row.low is not None
                        and row.high is not None else "n/a")
            strength = self.strengths.values.get(row.system)
            lines.append(f"  {row.system:<16} {row.wins:>5} {row.ties:>5} {row.losses:>6} "
                         f"{row.win_rate:>9.2f} {interval:>15} "
                         f"{'n/a' if strength is None else f'{strength:.3f}':>9}")
        if self.strengths.reason:
            lines.append(f"  Bradley-Terry strengths: none, {self.strengths.reason}.")
        if self.bias:
            lines.append("  Position bias (answers that changed when A and B were swapped):")
            for b in self.bias:
                lines.append(f"    {b.critic:<16} {_percent(b.rate):>6} of {b.pairs} pairs; "
                             f"{b.to_first} went to the first shown both times")
        if self.vs_gold:
            lines.append("  Against the gold labels, asked in both orders:")
            lines.append(f"    {'critic':<16} {'right in both orders':>20} "
                         f"{'mean of the two orders':>22} {'pairs':>6}")
            for g in self.vs_gold:
                lines.append(f"    {g.critic:<16} {_percent(g.both_rate):>20} "
                             f"{_percent(g.mean_rate):>22} {g.pairs:>6}")
        return "\n".join(lines)


def _percent(rate: float | None) -> str:
    """A share as the pairwise figures print it: one decimal, "n/a" when undefined."""
    return "n/a" if rate is None else f"{rate:.1%}"
