"""Fixtures for the agreement tests: published reliability data and a synthetic panel."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers
# (rows) x 12 units (columns), None = observer did not rate the unit.
KRIPPENDORFF_2011_OBSERVERS: list[list[int | None]] = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]

# Fleiss (1971), Table 1: 30 patients x 5 diagnoses (depression, personality disorder,
# schizophrenia, neurosis, other); each cell counts the 6 psychiatrists choosing it.
FLEISS_1971_COUNTS: list[list[int]] = [
    [0, 0, 0, 6, 0], [0, 3, 0, 0, 3], [0, 1, 4, 0, 1], [0, 0, 0, 0, 6], [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0], [0, 0, 4, 0, 2], [2, 0, 3, 1, 0], [2, 0, 0, 4, 0], [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0], [1, 1, 0, 4, 0], [0, 3, 3, 0, 0], [1, 0, 0, 5, 0], [0, 2, 0, 3, 1],
    [0, 0, 5, 0, 1], [3, 0, 0, 1, 2], [5, 1, 0, 0, 0], [0, 2, 0, 4, 0], [1, 0, 2, 0, 3],
    [0, 0, 0, 0, 6], [0, 1, 0, 5, 0], [0, 2, 0, 1, 3], [2, 0, 0, 4, 0], [1, 0, 0, 4, 1],
    [0, 5, 0, 1, 0], [4, 0, 0, 0, 2], [0, 2, 0, 4, 0], [1, 0, 5, 0, 0], [0, 0, 0, 0, 6],
]

# Wikipedia, "Fleiss' kappa", worked example: 10 subjects x 5 categories, 14 raters each.
WIKIPEDIA_FLEISS_COUNTS: list[list[int]] = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


@dataclass
class SyntheticPanel:
    """Items with known true labels, judged by critics of known accuracy."""

    labels: list[str]
    truth: np.ndarray  # (items,) true label index
    codes: np.ndarray  # (items, critics) label index, -1 = failed
    critics: list[str]

    def ratings(self) -> list[list[str | None]]:
        lab = np.array(self.labels + [None], dtype=object)
        return lab[self.codes].tolist()

    def realised_accuracy(self) -> np.ndarray:
        """Each critic's accuracy on the items it rated, against the truth."""
        rated = self.codes >= 0
        hits = (self.codes == self.truth[:, None]) & rated
        return hits.sum(axis=0) / rated.sum(axis=0)

    def plurality(self) -> np.ndarray:
        counts = np.stack([(self.codes == k).sum(axis=1) for k in range(len(self.labels))], 1)
        return counts.argmax(axis=1)


def make_synthetic_panel(n_items: int = 4000, seed: int = 7) -> SyntheticPanel:
    """Three honest critics (errors spread evenly) and two lenient ones (errors go to KEEP).

    Like the issue's example: agreement with the majority overrates the lenient critics.
    """
    rng = np.random.default_rng(seed)
    labels = ["KEEP", "REJECT", "SPLIT", "MERGE"]
    k = len(labels)
    truth = rng.choice(k, size=n_items, p=[0.3, 0.3, 0.25, 0.15])
    columns = []
    for accuracy in (0.88, 0.8, 0.72):
        wrong = (truth + rng.integers(1, k, n_items)) % k
        columns.append(np.where(rng.random(n_items) < accuracy, truth, wrong))
    for accuracy in (0.5, 0.55):  # lenient: when wrong, say KEEP 90% of the time
        other = (truth + rng.integers(1, k, n_items)) % k
        wrong = np.where(rng.random(n_items) < 0.9, 0, other)
        columns.append(np.where(rng.random(n_items) < accuracy, truth, wrong))
    codes = np.stack(columns, axis=1)
    codes[rng.random(codes.shape) < 0.04] = -1  # failed verdicts
    critics = ["sharp", "solid", "fair", "lenient-a", "lenient-b"]
    return SyntheticPanel(labels, truth, codes, critics)


@pytest.fixture(scope="session")
def synthetic_panel() -> SyntheticPanel:
    return make_synthetic_panel()


@pytest.fixture
def krippendorff_units() -> list[list[int | None]]:
    """Krippendorff's 2011 data as units x observers (the shape this project uses)."""
    return [list(unit) for unit in zip(*KRIPPENDORFF_2011_OBSERVERS, strict=True)]
