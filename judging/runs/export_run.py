"""What the export needs from the domain: a rubric run's scoring of its final marks, and
whether the run curates a taxonomy (then a split's children and a merge's target are columns).

Storage writes the export but cannot read a panel (`judging.panel.panel_files`); the CLI and the
Export page get their `ExportOptions` here, so both export the same columns.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from judging.panel.panel_files import load_panel
from judging.panel.rubric import rubric_score
from judging.runs.final_decisions import decision_rule
from storage.export_files import ExportOptions
from storage.runs import get_run


def export_options(db: Any, run_id: int, options: ExportOptions | None = None) -> ExportOptions:
    """`options` (default: none) with the run's final-decision rule, its rubric scorer when its
    panel has a rubric, and `curation` set when it curates a taxonomy.

    Raises:
        storage.db.NotFoundError: no run has this id.
    """
    panel = load_panel(get_run(db, run_id)["panel_yaml"])
    options = dataclasses.replace(options or ExportOptions(), rule=decision_rule(panel))
    if panel.curation.active:
        options = dataclasses.replace(options, curation=True)
    rubric = panel.rubric
    if not rubric.active:
        return options
    return dataclasses.replace(options, score_marks=lambda marks: rubric_score(marks, rubric))
