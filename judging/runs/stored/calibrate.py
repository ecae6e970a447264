"""A run's calibration and few-shot examples, from its stored verdicts and reviews; a trial of
the taught critic on the items it got wrong; and the new panel versions they suggest, saved
next to the others. Used by the Agreement page.

Each of them takes `min_reviewer_alpha`: when set, the human labels are used only once the
reviewers' own alpha on their overlap reaches it (`judging.analysis.label_gate`); below it they refuse
with the gate's sentence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlite_utils

from judging.analysis.calibration import Calibration
from judging.analysis.code_calibration import calibrate_codes
from judging.analysis.few_shot import Example, choose_examples, with_examples
from judging.analysis.label_gate import LabelGate, label_gate
from judging.analysis.team_review import reviewer_agreement
from judging.engine.panel_runner import run_panel
from judging.errors import DataError
from judging.panel.cascade import CascadeConfig
from judging.panel.panel_files import dump_panel, panel_hash
from judging.panel.panel_model import Panel
from judging.panel.vendors import KeyLookup
from judging.runs.stored.stored_run import load_run
from judging.voting.strategies import STRATEGY_KINDS
from storage.datasets.dataset_store import load_items_of
from storage.panels import save_panel
from storage.results.calls import load_verdicts_of
from storage.results.runs import get_run
from storage.results.vote_grid import vote_grid
from storage.reviewing.assignments import reviewer_labels
from storage.reviewing.overrides import human_labels, latest_overrides


def _panel_of(db: sqlite_utils.Database, run_id: int) -> Panel:
    panel = load_run(db, run_id).panel
    if panel.scale.is_numeric:
        raise DataError("Calibration compares labels: this run's panel gives scores.")
    return panel


def calibration_gate(db: sqlite_utils.Database, run_id: int,
                     min_reviewer_alpha: float | None) -> LabelGate:
    """Whether the run's human labels may teach the panel (`judging.analysis.label_gate`): the
    reviewers' alpha on the items two or more of them labelled (each reviewer's own label, as
    the Team page counts it) against `min_reviewer_alpha` (None: no gate).

    Raises:
        NotFoundError: no such run.
    """
    if min_reviewer_alpha is None:
        return label_gate(reviewer_agreement({}), None)
    scale = load_run(db, run_id).panel.scale
    agreement = reviewer_agreement(reviewer_labels(db, run_id), level=scale.level,
                                   order=scale.labels or None)
    return label_gate(agreement, min_reviewer_alpha)


def _check_gate(db: sqlite_utils.Database, run_id: int, min_reviewer_alpha: float | None) -> None:
    gate = calibration_gate(db, run_id, min_reviewer_alpha)
    if not gate.open:
        raise DataError(gate.sentence())


def run_calibration(db: sqlite_utils.Database, run_id: int, *,
                    min_reviewer_alpha: float | None = None) -> Calibration:
    """The run's calibration (`judging.analysis.calibration.calibrate`) on its stored verdicts.

    Args:
        min_reviewer_alpha: use the human labels only once the reviewers' alpha on their
            overlap reaches this (None: always).

    Raises:
        NotFoundError: no such run.
        DataError: a score panel, no human label yet, or the reviewers' agreement below
            `min_reviewer_alpha` (the sentence says which).
    """
    panel = _panel_of(db, run_id)
    _check_gate(db, run_id, min_reviewer_alpha)
    humans = human_labels(db, run_id)
    if not humans:
        raise DataError("Calibration learns from reviews: override some items on Review first.")
    # The votes as integer arrays, not `Verdict` objects (`judging.analysis.code_calibration`): at
    # 1,000,000 items x 3 critics the objects took about 3 GB and 75 s.
    grid = vote_grid(db, run_id, [c.name for c in panel.critics],
                     confidence=panel.voting.use_confidence or panel.voting.strategy
                     not in STRATEGY_KINDS)
    return calibrate_codes(panel, items=grid.items, critics=grid.critics, codes=grid.codes,
                           values=grid.values, order=grid.order, humans=humans,
                           confidence=grid.confidence)


def few_shot_panel(
    db: sqlite_utils.Database, run_id: int, critic: str, *, k: int = 4,
    min_reviewer_alpha: float | None = None,
) -> tuple[list[Example], Panel]:
    """Examples for `critic` from the run's reviewed items with a note, and the run's panel with
    them in that critic's system prompt.

    Args:
        min_reviewer_alpha: as for `run_calibration`.

    Raises:
        NotFoundError: no such run.
        DataError: no such critic, no reviewed item with a note to learn from, or the
            reviewers' agreement below `min_reviewer_alpha`.
    """
    panel = _panel_of(db, run_id)
    _check_gate(db, run_id, min_reviewer_alpha)
    names = [c.name for c in panel.critics]
    if critic not in names:
        raise DataError(f"This run's panel has no critic {critic!r}; its critics: "
                        f"{', '.join(names)}.")
    reviewed = latest_overrides(db, run_id)
    # Only the reviewed items can be examples: their verdicts and fields are all it reads.
    said = _critic_said(db, run_id, critic, reviewed)
    run = get_run(db, run_id)
    fields = {item.id: item.fields
              for item in load_items_of(db, int(run["dataset_id"]), list(reviewed))}
    examples = choose_examples(critic, said, reviewed, fields, k=k)
    if not examples:
        raise DataError("No reviewed item has a note yet: the note is what an example teaches. "
                        "Add a note when you override an item on Review.")
    critics = [with_examples(c, examples) if c.name == critic else c for c in panel.critics]
    return examples, Panel.model_validate(panel.model_copy(update={"critics": critics}).model_dump())


def _critic_said(
    db: sqlite_utils.Database, run_id: int, critic: str, items: Iterable[str]
) -> dict[str, str | None]:
    """item_id -> `critic`'s stored label on it (None: it failed), for those of `items` it has
    a verdict on (one query over those items, not the run)."""
    return {v.item_id: (None if v.failure is not None else v.label)
            for v in load_verdicts_of(db, run_id, list(items)) if v.critic == critic}


def save_panel_version(db: sqlite_utils.Database, panel: Panel, name: str) -> str:
    """Save `panel` under `name` as a new version (Panel and Run pages list it); its hash."""
    renamed = panel.model_copy(update={"name": name})
    version = panel_hash(renamed)
    save_panel(db, panel_hash=version, name=name, yaml_text=dump_panel(renamed))
    return version


@dataclass(frozen=True)
class TrialRow:
    """One disputed item: the human's label, the critic's stored one, its label with examples."""

    item_id: str
    human: str
    before: str | None
    after: str | None


def try_on_disputed(
    db: sqlite_utils.Database, run_id: int, taught: Panel, critic: str, *, limit: int = 20,
    key_lookup: KeyLookup | None = None, min_reviewer_alpha: float | None = None,
) -> list[TrialRow]:
    """Ask the taught critic again about the reviewed items its stored label disagreed with
    (up to `limit`, in item order): real calls, nothing stored, so the page can show whether
    the examples changed its mind before the new version is run in full.

    Raises:
        DataError: no such critic, no reviewed item it disagreed with, or the reviewers'
            agreement below `min_reviewer_alpha` (as for `run_calibration`).
    """
    _check_gate(db, run_id, min_reviewer_alpha)
    run = get_run(db, run_id)
    humans = human_labels(db, run_id)
    said = _critic_said(db, run_id, critic, humans)
    wrong = [item for item in said if said[item] != humans[item]]
    if not wrong:
        raise DataError(f"{critic} agrees with every reviewed item: nothing to try the examples "
                        "on.")
    only = [c for c in taught.critics if c.name == critic]
    if not only:
        raise DataError(f"The taught panel has no critic {critic!r}.")
    solo = taught.model_copy(update={"critics": only, "cascade": CascadeConfig()})
    items = load_items_of(db, int(run["dataset_id"]), wrong)[:limit]  # the first, in file order
    disputed = [item.id for item in items]
    result = run_panel(solo, items, concurrency=8, key_lookup=key_lookup)
    after = {pv.item_id: next((v.label for v in pv.verdicts if v.failure is None), None)
             for pv in result.verdicts}
    return [TrialRow(item, humans[item], said[item], after.get(item)) for item in disputed]
