"""Agreement per jury of a panel of juries (`judging.voting.juries`): pure, from tables of ratings.

Within each jury: its critics' ratings alone go through the same report as a whole panel's
(`judging.analysis.agreement_report.table_agreement_report`: Krippendorff's alpha with its interval, pairwise
Cohen's kappa, Fleiss' kappa, percent agreement), and each critic is compared with its jury's
decision. Between juries: the juries' decisions are the ratings (each jury one rater), so alpha
and Cohen's kappa say how far the juries agree with each other, and each jury is compared with
the panel's top decision. An abstaining jury is a missing rating, as a failed critic is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from judging.analysis.agreement_report import AgreementReport, table_agreement_report
from judging.scales import Scale
from judging.voting.juries import JuryConfig


@dataclass(frozen=True)
class JuryFigures:
    """One jury's own figures.

    Attributes:
        jury: its name.
        critics: its critics, in panel order.
        report: its critics' agreement report (`vs_consensus`: each critic against the jury's
            decision).
        split: items where the jury was not agreed (its disagreement flag).
        with_panel: items where the jury decided and the panel decided, and how many of them
            the jury's decision is the panel's.
    """

    jury: str
    critics: list[str]
    report: AgreementReport
    split: int
    with_panel: tuple[int, int]


@dataclass(frozen=True)
class JuryReport:
    """Agreement within each jury and between the juries' decisions."""

    juries: list[JuryFigures]
    # The juries' decisions as ratings (a column per jury); `vs_consensus`: each jury against
    # the panel's decision.
    between: AgreementReport


def jury_agreement(
    ratings: pd.DataFrame,
    decisions: pd.DataFrame,
    split: Mapping[str, int],
    top: Mapping[Any, Any],
    juries: Sequence[JuryConfig],
    scale: Scale,
    *,
    resamples: int = 1000,
    seed: int | None = 0,
) -> JuryReport:
    """Every jury's figures and the figures between juries.

    Args:
        ratings: items x critics (the index holds item ids; None where a critic failed), as
            `storage.reviewing.review_queue.ratings_grid` reads them.
        decisions: items x juries, each jury's decision (None where it abstained).
        split: jury -> items on which it was split.
        top: item id -> the panel's decision (items without one absent).
        juries: the panel's juries.
        scale: the panel's scale (level and label order).
        resamples: bootstrap resamples for each alpha's interval.
        seed: bootstrap seed.
    """
    figures = []
    for jury in juries:
        mine = decisions[jury.name] if jury.name in decisions else pd.Series(dtype=object)
        own = {item: value for item, value in mine.items() if value is not None
               and not (isinstance(value, float) and pd.isna(value))}
        report = table_agreement_report(
            ratings[[c for c in jury.critics if c in ratings.columns]], scale=scale,
            consensus=own, resamples=resamples, seed=seed, fit_dawid_skene=False)
        both = [item for item in own if item in top]
        same = sum(1 for item in both if _same(own[item], top[item]))
        figures.append(JuryFigures(jury.name, list(jury.critics), report,
                                   int(split.get(jury.name, 0)), (same, len(both))))
    columns = [jury.name for jury in juries]
    table = decisions.reindex(columns=columns)
    between = table_agreement_report(table, scale=scale, consensus=dict(top),
                                     resamples=resamples, seed=seed, fit_dawid_skene=False)
    return JuryReport(figures, between)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-9
    return str(a) == str(b)
