"""The verbosity probe: does a critic's verdict follow the length of the response it judges?

LLM judges are known to favour longer answers. For each critic, the Spearman rank correlation
between the length (in characters) of one item field, the response, and the critic's verdict:
its score on a score scale, else its label's position in the scale's order (ordinal, likert,
yes/no, or any two labels). A nominal scale of three labels or more has no order, so no
correlation. The interval is Fisher's z with the standard error sqrt(1.06 / (n - 3)) that
Fieller, Hartley and Pearson (1957) give for Spearman's rho.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from judging.scales import Scale

MIN_ITEMS = 10  # fewer pairs give an interval too wide to say anything


@dataclass(frozen=True)
class VerbosityRow:
    """One critic: Spearman's rho between length and verdict over `n` items, with its interval
    (None with a `reason` when undefined)."""

    critic: str
    n: int
    rho: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class VerbosityProbe:
    """The probe of one run: the field measured, one row per critic, or why there is none."""

    measured: str | None  # the item field whose length is measured
    rows: list[VerbosityRow] = field(default_factory=list)
    reason: str | None = None

    def to_text(self) -> str:
        if self.reason is not None:
            return f"Verbosity: {self.reason}"
        lines = [f"Verbosity: Spearman's rho between the length of {self.measured!r} and each "
                 "critic's verdict (95% interval)"]
        for row in self.rows:
            figure = (row.reason if row.rho is None
                      else f"{row.rho:+.3f} [{row.low:+.3f}, {row.high:+.3f}]")
            lines.append(f"  {row.critic}: {figure}  (n={row.n})")
        return "\n".join(lines)


def spearman(x: Any, y: Any) -> float | None:
    """Spearman's rho (average ranks for ties); None when either side does not vary."""
    rx = pd.Series(x, dtype=float).rank().to_numpy()
    ry = pd.Series(y, dtype=float).rank().to_numpy()
    if len(rx) < 2 or np.std(rx) == 0 or np.std(ry) == 0:
        return None
    rho = float(np.corrcoef(rx, ry)[0, 1])
    return rho if math.isfinite(rho) else None


def fisher_interval(rho: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The interval of Spearman's rho by Fisher's z (module doc); needs n > 3."""
    z = math.atanh(max(min(rho, 0.999999), -0.999999))
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(1.06 / (n - 3))
    return math.tanh(z - half), math.tanh(z + half)


def orders_verdicts(scale: Scale) -> bool:
    """Whether a verdict on this scale can rise or fall (a score, or labels in an order)."""
    return scale.is_numeric or scale.kind in ("ordinal", "likert", "yesno") or len(scale.labels) == 2


def _position(scale: Scale) -> dict[str, int] | None:
    return {label: n for n, label in enumerate(scale.labels)} if orders_verdicts(scale) else None


def shown_field(means: Mapping[str, float], shown: Mapping[str, Sequence[str]]) -> str | None:
    """The field to measure by default: of the text fields some critic's prompt shows, the one
    with the longest mean text (the response, usually); None when no prompt shows a text field.

    Why not the longest field of the dataset: a field no critic reads cannot sway a verdict.
    On the rubric demo the critics read `answer_a`, and the longest field is `answer_b`, which
    none of them sees: a figure on it says nothing about the critics.

    Args:
        means: text field -> its mean length in characters
            (`storage.datasets.dataset_store.text_field_lengths`).
        shown: critic -> the fields its prompt template shows (`Critic.placeholders`).
    """
    seen = {name for fields in shown.values() for name in fields if name in means}
    return max(sorted(seen), key=lambda name: means[name]) if seen else None


def verbosity_probe(
    lengths: Mapping[str, int], verdicts: Mapping[str, Mapping[str, Any]], scale: Scale,
    field_name: str | None, shown: Mapping[str, Sequence[str]] | None = None,
) -> VerbosityProbe:
    """Each critic's verdict against the response length.

    Args:
        lengths: item id -> length of the measured field, in characters.
        verdicts: critic -> {item id: its label, or score on a score scale} (valid verdicts).
        scale: the panel's scale (which says how verdicts are ordered).
        field_name: the field measured (named in the report).
        shown: critic -> the fields its prompt shows; a critic whose prompt does not show
            `field_name` gets no figure, with the reason (default: every critic sees it).
    """
    if field_name is None:
        return VerbosityProbe(field_name, reason="no text field to measure")
    if not orders_verdicts(scale):
        return VerbosityProbe(field_name, reason=(
            f"the labels of this {scale.kind} scale ({', '.join(scale.labels)}) have no order, "
            "so a verdict cannot rise or fall with length"))
    if not lengths:
        return VerbosityProbe(field_name, reason="no text field to measure")
    position = None if scale.is_numeric else _position(scale)
    rows = []
    for critic, said in verdicts.items():
        if shown is not None and field_name not in shown.get(critic, ()):
            rows.append(VerbosityRow(critic, 0, None, reason=(
                f"its prompt does not show {field_name}, so its length cannot sway it")))
            continue
        pairs = [(lengths[item], value if position is None else position.get(str(value)))
                 for item, value in said.items() if item in lengths]
        # A missing value (None, or NaN from a table: a rubric score with nothing to count)
        # is no verdict.
        pairs = [(length, value) for length, value in pairs
                 if value is not None and not (isinstance(value, float) and math.isnan(value))]
        n = len(pairs)
        if n < MIN_ITEMS:
            rows.append(VerbosityRow(critic, n, None, reason=f"{n} items, fewer than {MIN_ITEMS}"))
            continue
        rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
        if rho is None:
            rows.append(VerbosityRow(critic, n, None,
                                     reason="its verdicts (or the lengths) do not vary"))
            continue
        low, high = fisher_interval(rho, n)
        rows.append(VerbosityRow(critic, n, rho, low, high))
    return VerbosityProbe(field_name, rows)
