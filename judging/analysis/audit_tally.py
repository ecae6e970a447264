"""An audit's running sums: the estimate after each label without reading the sample again.

`judging.analysis.audit_stats.audit_estimate` reads every audited item; all it needs of them is, per
stratum, how many there are and the sum and sum of squares of a few values (right or wrong; per
label, the rectifier and the right/wrong of the items the panel gave it; per critic, its own
right/wrong). `AuditTally` keeps exactly those sums and adds one item's share when its label
becomes usable, so a label costs a few additions and the estimate a handful of array sums,
whatever the size of the run or of its sample. The values are -1, 0 or 1, so the sums are
exact in floating point and the figures equal the full recompute's, whatever the order the
items were added in (the tests check it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from judging.analysis.audit_design import queue_plan
from judging.analysis.audit_stats import (
    AuditEstimate,
    AuditPopulation,
    FloatArray,
    Interval,
    LabelFigures,
    shifted_share,
    stratified_from_sums,
)


@dataclass
class _Sums:
    """Per stratum: audited count, sum and sum of squares of one value."""

    n: FloatArray
    total: FloatArray
    squares: FloatArray

    @classmethod
    def zeros(cls, k: int) -> _Sums:
        return cls(np.zeros(k), np.zeros(k), np.zeros(k))

    def add(self, stratum: int, value: float) -> None:
        self.n[stratum] += 1.0
        self.total[stratum] += value
        self.squares[stratum] += value * value


@dataclass
class AuditTally:
    """The running sums of an audit over one run's population (`AuditPopulation`).

    Attributes:
        population: what is known of every item, per stratum.
        accuracy: the panel right (1) or wrong (0) on each usable item.
        rectifier: label -> 1[human's label] - 1[panel's label] on each usable item.
        label_accuracy: label -> right/wrong over the usable items the panel gave that label.
        critics: critic -> right/wrong over the usable items where it gave a valid label.
        human_labels: the humans' labels seen that the panel never gave (in first-seen order).
    """

    population: AuditPopulation
    accuracy: _Sums = field(init=False)
    rectifier: dict[str, _Sums] = field(init=False)
    label_accuracy: dict[str, _Sums] = field(init=False)
    critics: dict[str, _Sums] = field(init=False)
    human_labels: list[str] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        k = len(self.population.sizes)
        self.accuracy = _Sums.zeros(k)
        self.rectifier = {label: _Sums.zeros(k) for label in self.population.panel_counts}
        self.label_accuracy = {label: _Sums.zeros(k) for label in self.population.panel_counts}
        self.critics = {critic: _Sums.zeros(k) for critic in self.population.critic_counts}

    @property
    def labelled(self) -> int:
        """Usable audited items added so far."""
        return int(self.accuracy.n.sum())

    def add(self, stratum: int, panel: str | None, human: str,
            said: Mapping[str, str | None]) -> None:
        """One audited item's blind label becomes usable.

        Args:
            stratum: its stratum code.
            panel: the panel's label (None: no consensus label, counted wrong).
            human: the human's blind label.
            said: critic -> its valid label on the item (None or missing: none).
        """
        right = float(panel is not None and panel == human)
        self.accuracy.add(stratum, right)
        if human not in self.rectifier:
            # A label the panel never gave: its rectifier was 0 on every earlier item.
            self.rectifier[human] = _Sums(self.accuracy.n.copy(), np.zeros_like(self.accuracy.n),
                                          np.zeros_like(self.accuracy.n))
            self.rectifier[human].n[stratum] -= 1.0  # counted just below
            self.label_accuracy[human] = _Sums.zeros(len(self.accuracy.n))
            self.human_labels.append(human)
        for label, sums in self.rectifier.items():
            sums.add(stratum, float(human == label) - float(panel == label))
        if panel is not None and panel in self.label_accuracy:
            self.label_accuracy[panel].add(stratum, right)
        for critic, sums in self.critics.items():
            given = said.get(critic)
            if given is not None:
                sums.add(stratum, float(given == human))

    def estimate(self, *, confidence: float = 0.95) -> AuditEstimate:
        """The figures `audit_stats.audit_estimate` gives on the same items."""
        sizes = np.asarray(self.population.sizes, dtype=np.int64)
        strata = self.population.strata
        names = list(strata) if len(sizes) == len(strata) else None
        accuracy = _interval(self.accuracy, sizes, names, confidence)
        total = int(sizes.sum())
        known = list(self.population.panel_counts) + sorted(self.human_labels)
        labels = []
        for label in known:
            counts = np.asarray(self.population.panel_counts.get(label, np.zeros_like(sizes)),
                                dtype=np.int64)
            rect = self.rectifier[label]
            corrected = stratified_from_sums(rect.n, rect.total, rect.squares, sizes,
                                             names=names, bounds=(-1.0, 1.0), clip=None,
                                             confidence=confidence)
            if total > 0:
                corrected = shifted_share(float(counts.sum()) / total, corrected)
            mine = _interval(self.label_accuracy[label], counts, names, confidence)
            labels.append(LabelFigures(label, float(counts.sum()) / total if total else 0.0,
                                       corrected, mine))
        critics = {critic: _interval(self.critics[critic],
                                     np.asarray(self.population.critic_counts[critic]), names,
                                     confidence)
                   for critic in self.population.critic_counts}
        return AuditEstimate(accuracy, labels, critics, total)

    def queue(self, count: int, *, rng: np.random.Generator, epsilon: float
              ) -> tuple[list[int], FloatArray]:
        """The label-next queue's next `count` strata and the strata's gains now
        (`audit_design.queue_plan`): planned from the population's predicted accuracies and
        the counts of usable labels when it has them, else `audit_stats.next_strata` over the
        usable items' right/wrong."""
        a = self.accuracy
        return queue_plan(a.n, a.total, a.squares, self.population.sizes, count, rng=rng,
                          epsilon=epsilon, predicted=self.population.predicted)


def _interval(sums: _Sums, sizes: Sequence[int] | np.ndarray, names: list[str] | None,
              confidence: float) -> Interval:
    return stratified_from_sums(sums.n, sums.total, sums.squares, sizes, names=names,
                                confidence=confidence)
