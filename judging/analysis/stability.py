"""Stability: whether a critic gives the same answer when asked the same item again.

A disagreement between critics means something only if each critic agrees with itself. With
repeats (`Critic.samples`), each critic's samples on an item are its own small panel:

- flip rate: the share of items whose samples do not all agree (on a score scale: whose spread
  is above a tenth of the scale's range);
- within-critic agreement: the share of sample pairs on an item that agree, over all items;
- within-critic alpha: Krippendorff's alpha with the samples as the coders, at the scale's level
  (comparable with the between-critic alpha next to it).

Failed samples are left out of an item's figures; an item with fewer than two answered samples
counts in none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from judging.agreement import AlphaResult, alpha_with_reason
from judging.scales import Scale

# On a score scale, two samples "agree" when they are within this share of the range.
SCORE_TOLERANCE = 0.1


@dataclass(slots=True)
class CriticStability:
    """One critic's figures over its repeated samples (see the module docstring)."""

    critic: str
    items: int  # items with at least two answered samples
    flip_rate: float | None
    agreement: float | None
    alpha: AlphaResult | None
    unstable: list[str] = field(default_factory=list)  # item ids whose samples disagree


def tolerance(scale: Scale) -> float:
    """How far apart two samples' scores may be and still agree (0 for labels)."""
    if not scale.is_numeric or scale.min is None or scale.max is None:
        return 0.0
    return SCORE_TOLERANCE * (scale.max - scale.min)


def _same(a: Any, b: Any, scale: Scale) -> bool:
    if scale.is_numeric:
        return abs(float(a) - float(b)) <= tolerance(scale)
    return bool(a == b)


def critic_stability(
    critic: str, per_item: Mapping[str, Sequence[Any]], scale: Scale
) -> CriticStability:
    """Stability of one critic from its samples' answers per item (None = a failed sample)."""
    answered = {item: [v for v in values if v is not None] for item, values in per_item.items()}
    answered = {item: values for item, values in answered.items() if len(values) >= 2}
    if not answered:
        return CriticStability(critic, 0, None, None, None)
    unstable = [
        item for item, values in answered.items()
        if not all(_same(a, b, scale) for a, b in combinations(values, 2))
    ]
    pairs = [_same(a, b, scale) for values in answered.values() for a, b in combinations(values, 2)]
    width = max(len(values) for values in answered.values())
    rows = [list(values) + [None] * (width - len(values)) for values in answered.values()]
    alpha = alpha_with_reason(rows, scale.level,
                              order=scale.labels if scale.level == "ordinal" else None)
    return CriticStability(
        critic=critic,
        items=len(answered),
        flip_rate=len(unstable) / len(answered),
        agreement=sum(pairs) / len(pairs),
        alpha=alpha,
        unstable=sorted(unstable),
    )


def stability(
    samples: Mapping[str, Mapping[str, Sequence[Any]]], scale: Scale
) -> list[CriticStability]:
    """Every repeated critic's stability, by critic name (`storage.results.calls.sample_values` gives
    `samples`: critic -> item id -> answers in sample order)."""
    return [critic_stability(critic, samples[critic], scale) for critic in sorted(samples)]


def stability_text(results: Sequence[CriticStability], between: float | None) -> str:
    """The plain-text summary `jurybox stability RUN` prints."""
    if not results:
        return ("Stability: no critic of this run was asked more than once per item. Give a "
                "critic samples: N (and a temperature above 0) to measure it.")
    lines = ["Stability (each critic against itself, over its repeated samples)"]
    lines.append(f"  between-critic alpha (the panel): {_num(between)}")
    lines.append(f"  {'critic':<20} {'items':>6} {'flip rate':>9} {'agreement':>9} {'alpha':>7}")
    for r in results:
        alpha = r.alpha.value if r.alpha is not None else None
        lines.append(f"  {r.critic:<20} {r.items:>6} {_pct(r.flip_rate):>9} "
                     f"{_pct(r.agreement):>9} {_num(alpha):>7}")
    unstable = sorted({item for r in results for item in r.unstable})
    if unstable:
        shown = ", ".join(unstable[:10]) + (" ..." if len(unstable) > 10 else "")
        lines.append(f"  unstable items ({len(unstable)}): {shown}")
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def expected_flip_rate(accuracy: float, labels: int, samples: int) -> float:
    """The flip rate of a critic that answers right with probability `accuracy` and otherwise
    picks one of the other `labels - 1` labels uniformly, independently per sample: one minus
    the chance that all samples give the same label. (What a simulator profile with that noise
    should show; the tests compare the two.)"""
    wrong = (1 - accuracy) / (labels - 1)
    return 1 - (accuracy**samples + (labels - 1) * wrong**samples)
