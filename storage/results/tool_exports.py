"""Final decisions written back in other tools' shapes, so a review done in Jurybox goes home to
the tool the verdicts came from. Pure functions from a list of `ToolDecision` to bytes; the
reading side is `storage.datasets.readers.eval_logs`.

- `inspect_scores_jsonl`: Inspect AI's precomputed-scores file, JSON Lines of
  `{"id", "value", "epoch"?, "explanation"?, "metadata"?}`, which Inspect's
  `precomputed_scores("decisions.jsonl")` scorer applies to a log (`inspect score` or
  `inspect_ai.score`). A decision without an epoch applies to every epoch of its sample.
- `label_studio_tasks`: the Label Studio export the verdicts came from, each decided task given
  one more annotation holding the decision as a result of the verdict control's own
  `from_name`, `to_name` and `type` (choices, rating or number), marked `ground_truth`; the note
  goes in a textarea result when the tasks have one. Import it into a project with the same
  labelling config.
- `long_table_csv`: the long table, one row per verdict and per decision: item_id, judge (the
  reviewer's name on a decision row), kind ("judge" or "reviewer"), sample, label, score, note,
  at; CSV through `csv_bytes` (quoted, formula-safe).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from judging.errors import DataError
from judging.verdicts import ImportedVerdict
from storage.results.export_files import csv_bytes

__all__ = ["ToolDecision", "inspect_scores_jsonl", "label_studio_tasks", "long_table_csv"]


@dataclass(frozen=True, slots=True)
class ToolDecision:
    """A reviewer's final decision on an item, with the ids its source tool knows it by.

    Attributes:
        item_id: the item in Jurybox.
        label / score: the decision (one of them).
        note: the reviewer's note.
        reviewer: who decided.
        at: when (ISO 8601).
        sample_id: Inspect's sample id (defaults to `item_id`; give the int for an int id).
        epoch: Inspect's epoch (from 1); None applies the decision to every epoch.
        task_id: Label Studio's task id (defaults to `item_id`).
    """

    item_id: str
    label: str | None = None
    score: float | None = None
    note: str = ""
    reviewer: str = ""
    at: str | None = None
    sample_id: str | int | None = None
    epoch: int | None = None
    task_id: str | int | None = None

    @property
    def value(self) -> str | float:
        """The decision, a label or a score."""
        if self.label is not None and self.score is None:
            return self.label
        if self.score is not None and self.label is None:
            return float(self.score)
        raise DataError(f"The decision on item {self.item_id!r} needs a label or a score "
                        "(one of them) to be written back.")


def inspect_scores_jsonl(decisions: Iterable[ToolDecision]) -> bytes:
    """Inspect's precomputed-scores file (JSON Lines) holding the decisions.

    Raises:
        DataError: a decision without a label or score, or two for one sample and epoch.
    """
    lines = []
    seen: set[tuple[str, int | None]] = set()
    for decision in decisions:
        sample_id = decision.item_id if decision.sample_id is None else decision.sample_id
        key = (str(sample_id), decision.epoch)
        if key in seen:  # Inspect refuses the file then; say so here, naming the sample
            raise DataError(f"Two decisions for Inspect sample {sample_id!r}"
                            + (f" epoch {decision.epoch}" if decision.epoch else "")
                            + ": keep one decision per sample and epoch.")
        seen.add(key)
        record: dict[str, Any] = {"id": sample_id, "value": decision.value}
        if decision.epoch is not None:
            record["epoch"] = decision.epoch
        if decision.note:
            record["explanation"] = decision.note
        metadata = {k: v for k, v in (("reviewer", decision.reviewer), ("at", decision.at),
                                      ("item_id", decision.item_id)) if v}
        record["metadata"] = metadata
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def label_studio_tasks(tasks: Sequence[dict[str, Any]], decisions: Iterable[ToolDecision],
                       control: str) -> bytes:
    """The Label Studio tasks with each decision added as an annotation (JSON).

    Args:
        tasks: the export the verdicts were read from (a list of tasks, as parsed JSON).
        decisions: the final decisions, matched to tasks by `task_id` (else `item_id`).
        control: the `from_name` of the verdict control (the `VerdictSet`'s source names it).

    Raises:
        DataError: a decision for a task not in the export, or the control's result shape
            not found on the tasks.
    """
    out = copy.deepcopy(list(tasks))
    by_id = {str(task.get("id")): task for task in out}
    shape = _result_shape(out, lambda r: r.get("from_name") == control)
    if shape is None:
        raise DataError(f"No result of control {control!r} in the export: name the control the "
                        "verdicts were read from.")
    textarea = _result_shape(out, lambda r: r.get("type") == "textarea")
    for n, decision in enumerate(decisions, start=1):
        task_id = str(decision.item_id if decision.task_id is None else decision.task_id)
        task = by_id.get(task_id)
        if task is None:
            raise DataError(f"The decision on item {decision.item_id!r} names Label Studio task "
                            f"{task_id}, which is not in the export: write back to the export "
                            "the verdicts were read from.")
        value = decision.value
        kind = shape["type"]
        if kind == "choices":
            if not isinstance(value, str):
                raise DataError(f"Task {task_id}: control {control!r} takes a choice, but the "
                                f"decision is the score {value}.")
            content: dict[str, Any] = {"choices": [value]}
        elif isinstance(value, str):
            raise DataError(f"Task {task_id}: control {control!r} takes a number ({kind}), but "
                            f"the decision is the label {value!r}.")
        else:
            content = {kind: int(value) if kind == "rating" else value}
        result = [{"id": f"jurybox-{n}", **shape, "origin": "manual", "value": content}]
        if decision.note and textarea is not None:
            result.append({"id": f"jurybox-{n}-note", **textarea, "origin": "manual",
                           "value": {"text": [decision.note]}})
        annotation: dict[str, Any] = {"result": result, "was_cancelled": False,
                                      "ground_truth": True}
        if decision.at:
            annotation["created_at"] = decision.at
        task.setdefault("annotations", []).append(annotation)
    return json.dumps(out, ensure_ascii=False, indent=1).encode("utf-8")


def _result_shape(tasks: list[dict[str, Any]],
                  wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The from_name, to_name and type of the first result that is `wanted`, if any."""
    for task in tasks:
        for entry in [*(task.get("annotations") or []), *(task.get("predictions") or [])]:
            for result in (entry.get("result") or []) if isinstance(entry, dict) else []:
                if not isinstance(result, dict):
                    continue
                if wanted(result):
                    return {k: result.get(k) for k in ("from_name", "to_name", "type")}
    return None


def long_table_csv(decisions: Iterable[ToolDecision],
                   verdicts: Iterable[ImportedVerdict] = ()) -> bytes:
    """The long table: each verdict, then each decision, one row each (CSV)."""
    rows = [{"item_id": v.item_id, "judge": v.judge, "kind": "judge", "sample": v.sample,
             "label": v.label, "score": v.score, "note": v.reasoning or "", "at": None}
            for v in verdicts]
    for d in decisions:
        value = d.value
        rows.append({"item_id": d.item_id, "judge": d.reviewer, "kind": "reviewer", "sample": 0,
                     "label": value if isinstance(value, str) else None,
                     "score": value if isinstance(value, float) else None,
                     "note": d.note, "at": d.at})
    columns = ["item_id", "judge", "kind", "sample", "label", "score", "note", "at"]
    return csv_bytes(pd.DataFrame(rows, columns=columns))
