"""A stored run read once, and the one home of its items' final decisions.

`load_run` gives a `StoredRun`: the row typed (`storage.results.runs.RunRecord`), the panel it runs
parsed once, and the rule of its final decisions attached (`decision_rule`: the labels that
split and merge a class, a score's label by the thresholds, a rubric's scoring of its marks;
storage applies it in SQL, `storage.reviewing.decisions`). Review, Agreement, Team, the curated taxonomy,
the export and the CLI all take their rule from here, so they apply the same one.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import pandas as pd

from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.panel.rubric import rubric_score
from judging.voting.strategies import band
from storage.results.export_files import ExportOptions
from storage.results.runs import RunRecord, read_run
from storage.reviewing.decisions import DecisionRule, final_decisions
from storage.reviewing.overrides import human_labels


def decision_rule(panel: Panel) -> DecisionRule:
    """The final-decision rule of `panel`."""
    curation = panel.curation
    thresholds = dict(panel.voting.thresholds)
    rubric = panel.rubric

    def label_of_score(score: float) -> str:
        # As the consensus label is written (`storage.results.consensus`): the band, else the score.
        return (band(score, thresholds) if thresholds else None) or f"{score:g}"

    return DecisionRule(
        split_label=curation.split_label if curation.active else None,
        merge_label=curation.merge_label if curation.active else None,
        numeric=panel.scale.is_numeric,
        label_of_score=label_of_score,
        score_marks=(lambda marks: rubric_score(marks, rubric)) if rubric.active else None,
        rubric=rubric.active,
    )


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run as stored, with what its panel says.

    Attributes:
        record: the run's row, typed.
        panel: the panel version the run was made with (shared by every reader of that
            version in this process: read it, never change it).
        rule: how an item's final decision is made, from the panel.
    """

    record: RunRecord
    panel: Panel
    rule: DecisionRule

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def dataset_id(self) -> int:
        return self.record.dataset_id

    def decisions(self, db: Any) -> pd.DataFrame:
        """Every item's final decision (`storage.reviewing.decisions.final_decisions`)."""
        return final_decisions(db, self.id, self.rule)

    def human_labels(self, db: Any) -> dict[str, str]:
        """The humans' labels as Agreement compares them with the critics (a rubric's
        criterion marks count: `storage.reviewing.overrides.human_labels`)."""
        return human_labels(db, self.id, self.rule)

    def export_options(self, options: ExportOptions | None = None) -> ExportOptions:
        """`options` (default: none) with this run's rule, its rubric scorer when its panel
        has a rubric, and `curation` set when it curates a taxonomy (a split's children and a
        merge's target are then columns): the CLI and the Export page export the same."""
        options = dataclasses.replace(options or ExportOptions(), rule=self.rule)
        if self.panel.curation.active:
            options = dataclasses.replace(options, curation=True)
        rubric = self.panel.rubric
        if not rubric.active:
            return options
        return dataclasses.replace(options, score_marks=lambda marks: rubric_score(marks, rubric))


@functools.lru_cache(maxsize=32)
def _panel(panel_hash: str, yaml_text: str) -> Panel:
    # A version's YAML never changes (the hash names its content): parsed once per process.
    return load_panel(yaml_text)


def load_run(db: Any, run_id: int) -> StoredRun:
    """Run `run_id`, read once.

    Raises:
        storage.db.NotFoundError: no run has this id.
        JuryboxError: its panel snapshot cannot be read any more.
    """
    record = read_run(db, run_id)
    panel = _panel(record.panel_hash, record.panel_yaml)
    return StoredRun(record=record, panel=panel, rule=decision_rule(panel))


def run_rule(db: Any, run_id: int) -> DecisionRule:
    """The final-decision rule of run `run_id`."""
    return load_run(db, run_id).rule


def run_decisions(db: Any, run_id: int) -> pd.DataFrame:
    """Every item's final decision in run `run_id`."""
    return load_run(db, run_id).decisions(db)


def run_human_labels(db: Any, run_id: int) -> dict[str, str]:
    """The humans' labels of run `run_id` as Agreement compares them with the critics."""
    return load_run(db, run_id).human_labels(db)


def export_options(db: Any, run_id: int, options: ExportOptions | None = None) -> ExportOptions:
    """`options` with run `run_id`'s final-decision rule (see `StoredRun.export_options`).

    Raises:
        storage.db.NotFoundError: no run has this id.
    """
    return load_run(db, run_id).export_options(options)
