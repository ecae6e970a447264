"""Agreement on a rubric run, criterion by criterion: which criterion the critics disagree on,
not only that the scores differ. Pure functions over plain data (`judging.runs.stored.run_report` gathers
it from storage).

Per criterion: Krippendorff's alpha of the critics' marks (nominal: MET, UNMET and
CANNOT_ASSESS), how many items have it in dispute, each critic's agreement with the panel's
mark, and Cohen's kappa for every pair of critics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judging.agreement import AlphaResult, KappaMatrix, alpha_with_reason, pairwise_kappa
from judging.panel.rubric import MARKS, RubricConfig


@dataclass(frozen=True, slots=True)
class CriterionAgreement:
    """The critics on one criterion over the run."""

    criterion: str
    text: str
    weight: float
    items: int  # items with at least one critic's mark
    disputed: int  # items whose critics' marks differ (or a critic failed)
    alpha: AlphaResult
    with_panel: dict[str, float | None]  # critic -> share of its marks equal to the panel's
    kappa: KappaMatrix


@dataclass(frozen=True, slots=True)
class RubricReport:
    """Every criterion's agreement, in the rubric's order."""

    criteria: list[CriterionAgreement]

    def to_text(self) -> str:
        """The plain-text section `jurybox stats` prints for a rubric run."""
        lines = ["Rubric: agreement per criterion (marks MET / UNMET / CANNOT_ASSESS)"]
        lines.append(f"  {'criterion':<20} {'weight':>6} {'items':>6} {'disputed':>8} "
                     f"{'alpha':>7}  agreement with the panel")
        for c in self.criteria:
            alpha = "n/a" if c.alpha.value is None else f"{c.alpha.value:.3f}"
            agree = ", ".join(f"{critic} {'n/a' if share is None else f'{share:.0%}'}"
                              for critic, share in c.with_panel.items())
            lines.append(f"  {c.criterion:<20} {c.weight:>6g} {c.items:>6} {c.disputed:>8} "
                         f"{alpha:>7}  {agree}")
        return "\n".join(lines)


def rubric_report(
    marks: Sequence[tuple[str, str, str, str | None]],
    panel_marks: Mapping[str, Mapping[str, Mapping[str, object]]],
    rubric: RubricConfig,
    critics: Sequence[str],
) -> RubricReport:
    """Agreement per criterion.

    Args:
        marks: every critic's mark, (item id, critic, criterion, mark) (`storage.reviewing.criteria.
            critic_marks`).
        panel_marks: item id -> criterion -> the panel's vote ({"mark", "disputed", ...}).
        rubric: the panel's rubric (its criteria in order).
        critics: the panel's critics in order.
    """
    rows = []
    for criterion in rubric.criteria:
        by_item: dict[str, dict[str, str | None]] = {}
        for item, critic, marked, mark in marks:
            if marked == criterion.id:
                by_item.setdefault(item, {})[critic] = mark
        table = [[said.get(critic) for critic in critics] for said in by_item.values()]
        with_panel: dict[str, float | None] = {}
        for critic in critics:
            pairs = [(said[critic], panel_marks.get(item, {}).get(criterion.id, {}).get("mark"))
                     for item, said in by_item.items() if said.get(critic) is not None]
            with_panel[critic] = (sum(a == b for a, b in pairs) / len(pairs)) if pairs else None
        disputed = sum(1 for item in by_item
                       if panel_marks.get(item, {}).get(criterion.id, {}).get("disputed"))
        rows.append(CriterionAgreement(
            criterion=criterion.id, text=criterion.text, weight=criterion.weight,
            items=len(by_item), disputed=disputed,
            alpha=alpha_with_reason(table, "nominal", order=list(MARKS)),
            with_panel=with_panel,
            kappa=pairwise_kappa(table, labels=list(MARKS), critics=list(critics)),
        ))
    return RubricReport(rows)
