"""Final decisions written back in other tools' shapes (`storage.results.tool_exports`), each read back
by the tool's own loader where there is one: Inspect's `precomputed_scores` scorer applied to a
real log by `inspect_ai.score`, and our Label Studio reader on the written tasks."""

from __future__ import annotations

import io
import json
import pathlib

import pandas as pd
import pytest

from judging.errors import DataError
from judging.verdicts import ImportedVerdict
from storage.datasets.readers.eval_logs import read_label_studio_export
from storage.results.tool_exports import (
    ToolDecision,
    inspect_scores_jsonl,
    label_studio_tasks,
    long_table_csv,
)
from tests.tool_documented import LABEL_STUDIO_EXPORT, label_studio_rating_export


def test_inspect_precomputed_scores_are_applied_by_inspect(inspect_logs, inspect_home) -> None:
    from inspect_ai import score
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import precomputed_scores

    decisions = [
        ToolDecision("q1", label="C", note="4 is right.", reviewer="ana", at="2026-11-29T10:00:00Z"),
        ToolDecision("2", label="I", reviewer="bo", sample_id=2, epoch=1),
        ToolDecision("2", label="C", reviewer="bo", sample_id=2, epoch=2),
    ]
    path = inspect_home / "decisions.jsonl"
    path.write_bytes(inspect_scores_jsonl(decisions))
    assert json.loads(path.read_text().splitlines()[0]) == {
        "id": "q1", "value": "C", "explanation": "4 is right.",
        "metadata": {"reviewer": "ana", "at": "2026-11-29T10:00:00Z", "item_id": "q1"}}

    log = score(read_eval_log(str(inspect_logs["eval"])), precomputed_scores(str(path),
                on_missing="error"), action="overwrite", display="none")
    got = {(str(s.id), s.epoch): s.scores["precomputed_scores"] for s in log.samples}
    assert {k: v.value for k, v in got.items()} == {
        ("q1", 1): "C", ("q1", 2): "C", ("2", 1): "I", ("2", 2): "C"}
    assert got[("q1", 2)].explanation == "4 is right."
    assert got[("2", 1)].metadata == {"reviewer": "bo", "item_id": "2"}


def test_inspect_scores_refuse_two_decisions_for_one_sample() -> None:
    with pytest.raises(DataError, match="Two decisions for Inspect sample 'q1'"):
        inspect_scores_jsonl([ToolDecision("q1", label="C"), ToolDecision("q1", label="I")])
    with pytest.raises(DataError, match="needs a label or a score"):
        inspect_scores_jsonl([ToolDecision("q1")])


def test_label_studio_tasks_carry_the_decision_as_the_controls_result() -> None:
    decisions = [ToolDecision("102", label="Negative", note="a crash report", reviewer="ana",
                              at="2026-11-29T10:00:00Z")]
    written = json.loads(label_studio_tasks(LABEL_STUDIO_EXPORT, decisions, "sentiment"))
    assert written[0] == LABEL_STUDIO_EXPORT[0]  # undecided tasks are as they were
    added = written[1]["annotations"][-1]
    assert added["ground_truth"] is True and added["was_cancelled"] is False
    assert [(r["from_name"], r["to_name"], r["type"], r["value"]) for r in added["result"]] == [
        ("sentiment", "text", "choices", {"choices": ["Negative"]}),
        ("comment", "text", "textarea", {"text": ["a crash report"]})]
    # Read back: the decision is the task's gold, the tasks otherwise unchanged.
    back = read_label_studio_export(json.dumps(written).encode(), "written.json")
    assert [(i.id, i.gold) for i in back.items] == [("101", "Positive"), ("102", "Negative")]
    assert len(back.verdicts) == 4


def test_label_studio_rating_takes_the_score() -> None:
    tasks = label_studio_rating_export()
    written = json.loads(label_studio_tasks(tasks, [ToolDecision("101", score=4.0)], "stars"))
    assert written[0]["annotations"][-1]["result"][0]["value"] == {"rating": 4}
    with pytest.raises(DataError, match="takes a number \\(rating\\), but the decision is the label"):
        label_studio_tasks(tasks, [ToolDecision("101", label="Positive")], "stars")
    with pytest.raises(DataError, match="task 999, which is not in the export"):
        label_studio_tasks(tasks, [ToolDecision("x", score=1, task_id=999)], "stars")
    with pytest.raises(DataError, match="No result of control 'mood'"):
        label_studio_tasks(tasks, [], "mood")


def test_long_table_lists_verdicts_then_decisions() -> None:
    verdicts = [ImportedVerdict("q1", "strict", label="I", reasoning="=cmd|' /C calc'!A0"),
                ImportedVerdict("q1", "lenient", score=0.5, sample=1)]
    raw = long_table_csv([ToolDecision("q1", label="C", note="fine", reviewer="ana",
                                       at="2026-11-29T10:00:00Z")], verdicts)
    table = pd.read_csv(io.BytesIO(raw), keep_default_na=False)
    assert list(table.columns) == ["item_id", "judge", "kind", "sample", "label", "score", "note", "at"]
    assert table.to_dict("records") == [
        {"item_id": "q1", "judge": "strict", "kind": "judge", "sample": 0, "label": "I",
         "score": "", "note": "'=cmd|' /C calc'!A0", "at": ""},  # formula-safe
        {"item_id": "q1", "judge": "lenient", "kind": "judge", "sample": 1, "label": "",
         "score": "0.5", "note": "", "at": ""},
        {"item_id": "q1", "judge": "ana", "kind": "reviewer", "sample": 0, "label": "C",
         "score": "", "note": "fine", "at": "2026-11-29T10:00:00Z"},
    ]


def test_nothing_decided_writes_empty_files(tmp_path: pathlib.Path) -> None:
    assert inspect_scores_jsonl([]) == b""
    assert long_table_csv([]).decode().splitlines() == ["item_id,judge,kind,sample,label,score,note,at"]
