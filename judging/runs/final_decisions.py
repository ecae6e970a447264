"""The panel's part of the final-decision rule (`storage.decisions`), built from the panel a run
was made with: the labels that split and merge a class, a score's label by the thresholds, and
a rubric's scoring of its marks. Review, Agreement, Team, the curated taxonomy, the export and
the CLI all take their rule from here, so they apply the same one."""

from __future__ import annotations

from typing import Any

import pandas as pd

from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.panel.rubric import rubric_score
from judging.voting.strategies import band
from storage.decisions import DecisionRule, final_decisions
from storage.overrides import human_labels
from storage.runs import get_run


def decision_rule(panel: Panel) -> DecisionRule:
    """The decision rule of `panel`."""
    curation = panel.curation
    thresholds = dict(panel.voting.thresholds)
    rubric = panel.rubric

    def label_of_score(score: float) -> str:
        # As the consensus label is written (`storage.consensus`): the band, else the score.
        return (band(score, thresholds) if thresholds else None) or f"{score:g}"

    return DecisionRule(
        split_label=curation.split_label if curation.active else None,
        merge_label=curation.merge_label if curation.active else None,
        numeric=panel.scale.is_numeric,
        label_of_score=label_of_score,
        score_marks=(lambda marks: rubric_score(marks, rubric)) if rubric.active else None,
        rubric=rubric.active,
    )


def run_rule(db: Any, run_id: int) -> DecisionRule:
    """The decision rule of the panel run `run_id` was made with.

    Raises:
        storage.db.NotFoundError: no run has this id.
    """
    return decision_rule(load_panel(get_run(db, run_id)["panel_yaml"]))


def run_decisions(db: Any, run_id: int) -> pd.DataFrame:
    """Every item's final decision in run `run_id` (`storage.decisions.final_decisions`)."""
    return final_decisions(db, run_id, run_rule(db, run_id))


def run_human_labels(db: Any, run_id: int) -> dict[str, str]:
    """The humans' labels of run `run_id` as Agreement compares them with the critics
    (`storage.overrides.human_labels` by the run's rule: a rubric's criterion marks count)."""
    return human_labels(db, run_id, run_rule(db, run_id))
