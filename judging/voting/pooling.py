"""Pooled label probabilities: the maths behind voting on logprobs instead of argmax labels.

A critic asked for token logprobs gives a probability per label (`judging.voting.logprobs`). Its
*expected score* is G-Eval's (Liu et al. 2023, eq. 1): `sum_i p(s_i) x s_i` over the labels'
values, with the standard deviation of that distribution as its spread. A panel pools its
critics by averaging their distributions, weighted by critic weight (a linear opinion pool):
the pooled distribution's argmax is a label, its mean is the weighted mean of the critics'
expected scores (the mean is linear), and its spread holds both each critic's doubt and the
critics' disagreement (the spread of a mixture).

A critic whose reply carries no probabilities is pooled as certain of its label (a one-hot
distribution) and named in `Pooled.fallback`, so the vote can say so: never silently.

Pure functions over plain values: no I/O, nothing here knows what a Verdict is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judging.scales import Scale


@dataclass(frozen=True, slots=True)
class Opinion:
    """One critic's say in the pool.

    Attributes:
        critic: its name (for the fallback note).
        label: the label it gave (its argmax).
        probs: label -> probability from its logprobs, or None when its reply had none.
        weight: its weight in the panel.
        counted_failure: a failed call counted as a label by the error policy (pooled as
            certain, but not named as a critic without logprobs: the failure note says it).
    """

    critic: str
    label: str
    probs: Mapping[str, float] | None
    weight: float = 1.0
    counted_failure: bool = False


@dataclass(frozen=True, slots=True)
class Pooled:
    """A pooled distribution.

    Attributes:
        probs: label -> pooled probability, every label of the scale, in scale order.
        expected: the pooled expected score (None for labels without an order).
        spread: the standard deviation of the pooled distribution around `expected`.
        fallback: critics pooled by their argmax label because they gave no probabilities.
    """

    probs: dict[str, float]
    expected: float | None
    spread: float | None
    fallback: tuple[str, ...] = ()

    def fallback_note(self) -> str | None:
        """The sentence saying which critics were counted by their label alone (or None)."""
        if not self.fallback:
            return None
        names = ", ".join(self.fallback)
        one = len(self.fallback) == 1
        return (f"{names} gave no label probabilities (no logprobs in {'its' if one else 'their'}"
                f" repl{'y' if one else 'ies'}): counted as certain of {'its' if one else 'their'}"
                " label")


def label_values(scale: Scale) -> dict[str, float] | None:
    """The number each label stands for when the labels have an order, else None: numeric
    labels (likert "1".."5") by their value; ordinal, yes/no and two-label scales by their
    position 1..K in the scale's declared order."""
    labels = scale.labels
    if not labels:
        return None
    try:
        return {label: float(label) for label in labels}
    except ValueError:
        pass
    if scale.kind in ("ordinal", "yesno") or len(labels) == 2:
        return {label: float(n) for n, label in enumerate(labels, 1)}
    return None


def moments(probs: Mapping[str, float], values: Mapping[str, float]) -> tuple[float, float]:
    """(expected score, standard deviation) of a label distribution (G-Eval's score)."""
    expected = sum(p * values[label] for label, p in probs.items())
    variance = sum(p * (values[label] - expected) ** 2 for label, p in probs.items())
    return expected, math.sqrt(max(variance, 0.0))


def pool(opinions: Sequence[Opinion], scale: Scale) -> Pooled | None:
    """The weighted mean of the critics' label distributions (see the module doc).

    Returns:
        The pooled distribution, or None when nothing can be pooled (no opinions, or every
        weight is 0).
    """
    labels = scale.labels
    mass = dict.fromkeys(labels, 0.0)
    total = 0.0
    fallback: list[str] = []
    for opinion in opinions:
        weight = opinion.weight
        if weight <= 0:
            continue
        probs = opinion.probs
        if not probs:
            if not opinion.counted_failure:
                fallback.append(opinion.critic)
            probs = {opinion.label: 1.0}
        norm = sum(p for label, p in probs.items() if label in mass)
        if norm <= 0:
            continue
        for label, p in probs.items():
            if label in mass:
                mass[label] += weight * p / norm
        total += weight
    if total <= 0:
        return None
    pooled = {label: mass[label] / total for label in labels}
    values = label_values(scale)
    if values is None:
        return Pooled(pooled, None, None, tuple(fallback))
    expected, spread = moments(pooled, values)
    return Pooled(pooled, expected, spread, tuple(fallback))


def nearest_labels(expected: float, scale: Scale) -> list[str]:
    """The label(s) whose value is nearest `expected` (two when it lies halfway between)."""
    values = label_values(scale)
    if values is None:
        return []
    best = min(abs(v - expected) for v in values.values())
    return [label for label, v in values.items() if math.isclose(abs(v - expected), best,
                                                                 abs_tol=1e-9)]
