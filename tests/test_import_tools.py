"""promptfoo results and Label Studio exports read into a `VerdictSet`, from files built on
the tools' documented schemas (`tests/tool_documented.py`, with their sources)."""

from __future__ import annotations

import copy

import pytest

from judging.errors import DataError
from judging.verdicts import ImportedAnnotation
from storage.datasets.readers.eval_logs import read_label_studio_export, read_promptfoo_results
from tests.tool_documented import (
    LABEL_STUDIO_EXPORT,
    PROMPTFOO_RESULTS,
    as_bytes,
    label_studio_rating_export,
)

GPT, CLAUDE = "openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5"


def _by(vs, judge):
    return {(v.item_id, v.sample): (v.label, v.score) for v in vs.verdicts if v.judge == judge}


def test_promptfoo_rows_are_items_with_vars_output_and_prompt(tmp_path):
    path = tmp_path / "results.json"
    path.write_bytes(as_bytes(PROMPTFOO_RESULTS))
    vs = read_promptfoo_results(path)
    assert vs.format == "promptfoo"
    assert vs.source == "promptfoo results.json, eval eval-7Xk-2026-11-29T03:00:00"
    assert [i.id for i in vs.items] == [f"0:0:{GPT}", f"0:0:{CLAUDE}", f"1:0:{GPT}", f"1:0:{CLAUDE}"]
    first = vs.items[0].fields
    assert first["question"] == "What is the capital of France?"
    assert first["output"] == "Paris."
    # A var named like a fixed field keeps its value under "vars.<name>".
    assert first["vars.output"] == "a var named like a field"
    assert first["prompt"] == "Answer briefly: What is the capital of France?"
    assert first["provider"] == GPT
    assert vs.items[3].fields["output"] is None  # the row that failed with an error


def test_promptfoo_graded_assertions_are_judges_labels_or_scores():
    vs = read_promptfoo_results(as_bytes(PROMPTFOO_RESULTS), "results.json")
    # contains is a deterministic check; factuality's only grade was a grader error.
    assert list(vs.judges) == ["tone", "g-eval", "model-graded-closedqa"]
    assert vs.judges["tone"] == "promptfoo assertion llm-rubric: Is polite and answers the question"
    assert _by(vs, "tone") == {(f"0:0:{GPT}", 0): ("pass", None), (f"0:0:{CLAUDE}", 0): ("pass", None),
                               (f"1:0:{GPT}", 0): ("fail", None)}
    # g-eval grades on a scale: its scores are the verdicts.
    assert _by(vs, "g-eval") == {(f"0:0:{GPT}", 0): (None, 0.8), (f"0:0:{CLAUDE}", 0): (None, 0.4),
                                 (f"1:0:{GPT}", 0): (None, 0.9)}
    # An assert-set is opened: its model-graded assertion is a judge.
    assert _by(vs, "model-graded-closedqa") == {(f"0:0:{GPT}", 0): ("pass", None),
                                                (f"0:0:{CLAUDE}", 0): ("pass", None)}
    rude = next(v for v in vs.verdicts if v.judge == "tone" and v.label == "fail")
    assert rude.reasoning == "Condescending."
    assert vs.annotations == [ImportedAnnotation(f"0:0:{GPT}", "human", label="fail",
                                                 note="Too curt for our style guide.")]


def test_promptfoo_checks_are_judges_when_asked():
    vs = read_promptfoo_results(as_bytes(PROMPTFOO_RESULTS), include_checks=True)
    assert "contains" in vs.judges
    assert _by(vs, "contains")[(f"1:0:{GPT}", 0)] == ("fail", None)


def test_promptfoo_repeated_rows_and_names_are_told_apart():
    doc = copy.deepcopy(PROMPTFOO_RESULTS)
    rows = doc["results"]["results"]
    rows.append(copy.deepcopy(rows[0]))  # --repeat 2: the same row again
    rows[0]["gradingResult"]["componentResults"].append(
        copy.deepcopy(rows[0]["gradingResult"]["componentResults"][0]))
    vs = read_promptfoo_results(as_bytes(doc))
    assert (f"0:0:{GPT}", 1) in _by(vs, "tone")
    assert _by(vs, "tone #2") == {(f"0:0:{GPT}", 0): ("pass", None)}
    assert len(vs.items) == 4


@pytest.mark.parametrize("raw, words", [
    (b"{not json", "is not valid JSON: Expecting property name"),
    (b'{"evalId": "x", "results": {"version": 3}}', "has no results.results list"),
    (b'{"results": {"results": [{"promptIdx": 0}]}}', "result 1 has no testIdx and promptIdx"),
    (b"\xff\xfe{}", "is not UTF-8 text"),
])
def test_promptfoo_bad_files_are_a_sentence(raw, words):
    with pytest.raises(DataError, match=words):
        read_promptfoo_results(raw, "results.json")


def test_label_studio_predictions_are_judges_annotations_are_people(tmp_path):
    path = tmp_path / "export.json"
    path.write_bytes(as_bytes(LABEL_STUDIO_EXPORT))
    vs = read_label_studio_export(path)
    assert vs.format == "label-studio"
    assert vs.source == "Label Studio export export.json, control sentiment"
    assert [(i.id, i.fields, i.gold) for i in vs.items] == [
        ("101", {"text": "The update fixed everything, thank you!"}, "Positive"),
        ("102", {"text": "Crashes on start. Again."}, None),
    ]
    assert list(vs.judges) == ["gpt-judge-v1", "bert-sentiment-2"]
    assert [(v.item_id, v.judge, v.label, v.confidence) for v in vs.verdicts] == [
        ("101", "gpt-judge-v1", "Positive", 0.93), ("101", "bert-sentiment-2", "Positive", 0.71),
        ("102", "gpt-judge-v1", "Negative", 0.88), ("102", "bert-sentiment-2", "Neutral", 0.52),
    ]
    # The cancelled annotation is left out; annotator 4's later decision on 102 is kept.
    assert vs.annotations == [
        ImportedAnnotation("101", "ana@example.com", label="Positive", note="clear praise",
                           at="2026-11-28T10:00:00.000000Z"),
        ImportedAnnotation("101", "4", label="Neutral", at="2026-11-28T10:05:00.000000Z"),
        ImportedAnnotation("102", "4", label="Negative", at="2026-11-28T11:30:00.000000Z"),
    ]
    assert vs.labels == ["Positive", "Negative", "Neutral"]


def test_label_studio_rating_gives_scores():
    vs = read_label_studio_export(as_bytes(label_studio_rating_export()))
    assert vs.numeric
    assert [(v.item_id, v.judge, v.score) for v in vs.verdicts] == [
        ("101", "gpt-judge-v1", 4.0), ("101", "bert-sentiment-2", 2.0),
        ("102", "gpt-judge-v1", 1.0), ("102", "bert-sentiment-2", 3.0),
    ]
    assert {(a.item_id, a.annotator, a.score) for a in vs.annotations} == {
        ("101", "ana@example.com", 5.0), ("101", "4", 3.0), ("102", "4", 2.0)}
    assert vs.items[0].gold is None  # a score is no gold label


def test_label_studio_two_verdict_controls_need_a_choice():
    tasks = copy.deepcopy(LABEL_STUDIO_EXPORT)
    tasks[1] = label_studio_rating_export()[1]
    with pytest.raises(DataError, match=r"several verdict controls \(sentiment, stars\): choose"):
        read_label_studio_export(as_bytes(tasks), "export.json")
    vs = read_label_studio_export(as_bytes(tasks), "export.json", control="stars")
    assert {v.item_id for v in vs.verdicts} == {"102"}


@pytest.mark.parametrize("tasks, words", [
    ({"id": 1}, "should be a list of tasks"),
    ([{"data": {"text": "x"}}], "task 1 has no id or no data"),
    ([], "holds no choices, rating or number results"),
    ([{"id": 1, "data": {}, "annotations": [{"result": [
        {"from_name": "s", "to_name": "t", "type": "choices", "value": {"choices": ["A", "B"]}}]}]}],
     r"task 1 chooses \['A', 'B'\] on 's': a verdict is one choice"),
])
def test_label_studio_bad_exports_are_a_sentence(tasks, words):
    with pytest.raises(DataError, match=words):
        read_label_studio_export(as_bytes(tasks), "export.json")
