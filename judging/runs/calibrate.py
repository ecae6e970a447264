"""A run's calibration and few-shot examples, from its stored verdicts and reviews; and the
new panel versions they suggest, saved next to the others. Used by the Agreement page."""

from __future__ import annotations

import sqlite_utils

from judging.calibration import Calibration, calibrate
from judging.errors import DataError
from judging.few_shot import Example, choose_examples, with_examples
from judging.panel import Panel
from judging.panel_files import dump_panel, load_panel, panel_hash
from storage.consensus import load_panel_verdicts
from storage.datasets import load_items
from storage.overrides import human_labels, latest_overrides
from storage.panels import save_panel
from storage.runs import get_run


def _panel_of(db: sqlite_utils.Database, run_id: int) -> Panel:
    panel = load_panel(get_run(db, run_id)["panel_yaml"])
    if panel.scale.is_numeric:
        raise DataError("Calibration compares labels: this run's panel gives scores.")
    return panel


def run_calibration(db: sqlite_utils.Database, run_id: int) -> Calibration:
    """The run's calibration (`judging.calibration.calibrate`) on its stored verdicts.

    Raises:
        NotFoundError: no such run.
        DataError: a score panel, or no human label yet.
    """
    panel = _panel_of(db, run_id)
    humans = human_labels(db, run_id)
    if not humans:
        raise DataError("Calibration learns from reviews: override some items on Review first.")
    verdicts = {pv.item_id: pv.verdicts for pv in load_panel_verdicts(db, run_id)}
    return calibrate(panel, verdicts, humans)


def few_shot_panel(
    db: sqlite_utils.Database, run_id: int, critic: str, *, k: int = 4
) -> tuple[list[Example], Panel]:
    """Examples for `critic` from the run's reviewed items with a note, and the run's panel with
    them in that critic's system prompt.

    Raises:
        NotFoundError: no such run.
        DataError: no such critic, or no reviewed item with a note to learn from.
    """
    panel = _panel_of(db, run_id)
    names = [c.name for c in panel.critics]
    if critic not in names:
        raise DataError(f"This run's panel has no critic {critic!r}; its critics: "
                        f"{', '.join(names)}.")
    said = {v.item_id: (None if v.failure is not None else v.label)
            for pv in load_panel_verdicts(db, run_id) for v in pv.verdicts if v.critic == critic}
    run = get_run(db, run_id)
    fields = {item.id: item.fields for item in load_items(db, int(run["dataset_id"]))}
    examples = choose_examples(critic, said, latest_overrides(db, run_id), fields, k=k)
    if not examples:
        raise DataError("No reviewed item has a note yet: the note is what an example teaches. "
                        "Add a note when you override an item on Review.")
    critics = [with_examples(c, examples) if c.name == critic else c for c in panel.critics]
    return examples, Panel.model_validate(panel.model_copy(update={"critics": critics}).model_dump())


def save_panel_version(db: sqlite_utils.Database, panel: Panel, name: str) -> str:
    """Save `panel` under `name` as a new version (Panel and Run pages list it); its hash."""
    renamed = panel.model_copy(update={"name": name})
    version = panel_hash(renamed)
    save_panel(db, panel_hash=version, name=name, yaml_text=dump_panel(renamed))
    return version
