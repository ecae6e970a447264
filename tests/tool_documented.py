"""Files other tools write, built from their documented schemas: the oracle of
`test_import_tools.py` and `test_tool_exports.py`.

promptfoo `results.json` (`promptfoo eval -o results.json`): the `OutputFile`, `EvaluateSummaryV3`,
`EvaluateResult` and `GradingResult` types of promptfoo's src/types/index.ts
(https://github.com/promptfoo/promptfoo/blob/main/src/types/index.ts), the "JSON Output" section
of https://www.promptfoo.dev/docs/configuration/outputs/ (site/docs/configuration/outputs.md),
and which assertion types call a grading provider from src/assertions/constants.ts
(`MODEL_GRADED_ASSERTION_TYPES`, `usesGradingProvider`). Ids, timestamps and numbers are
made up; every key is one the types name.

Label Studio JSON export: the task, annotation and prediction fields of
https://labelstud.io/guide/task_format (docs/source/includes/task_format.md in
HumanSignal/label-studio), prediction `model_version` and `score` from
https://labelstud.io/guide/predictions, the `choices` and `textarea` result values of
https://labelstud.io/tags/choices and https://labelstud.io/tags/textarea, `rating` of
https://labelstud.io/tags/rating, and `completed_by` as a user id (the task format page) or as
the user (`id`, `email`, `first_name`, `last_name`: the export's `CompletedBySerializer`,
label_studio/data_export/serializers.py).
"""

from __future__ import annotations

import copy
import json
from typing import Any

_USAGE = {"total": 30, "prompt": 20, "completion": 10, "cached": 0, "numRequests": 1}


def _component(kind: str, value: str, passed: bool, score: float, reason: str,
               **extra: Any) -> dict[str, Any]:
    assertion: dict[str, Any] = {"type": kind, "value": value}
    metadata = extra.pop("metadata", None)
    assertion.update(extra)
    found: dict[str, Any] = {"pass": passed, "score": score, "reason": reason,
                             "assertion": assertion}
    if metadata is not None:
        found["metadata"] = metadata
    return found


def _row(test: int, prompt: int, provider: str, vars_: dict[str, Any], output: str,
         components: list[dict[str, Any]] | None, *, error: str | None = None) -> dict[str, Any]:
    passed = components is not None and all(c["pass"] for c in components)
    score = (sum(c["score"] for c in components) / len(components)) if components else 0
    grading = None if components is None else {
        "pass": passed, "score": score, "reason": "All assertions passed" if passed else
        next(c["reason"] for c in components if not c["pass"]),
        "namedScores": {}, "tokensUsed": _USAGE, "componentResults": components}
    return {
        "id": f"row-{test}-{prompt}-{provider}",
        "promptIdx": prompt, "testIdx": test,
        "testCase": {"vars": vars_, "assert": [c["assertion"] for c in components or []]},
        "promptId": f"prompt-{prompt}",
        "provider": {"id": provider, "label": ""},
        "prompt": {"raw": f"Answer briefly: {vars_['question']}", "label": "brief"},
        "vars": vars_,
        "response": None if error else {"output": output, "tokenUsage": _USAGE, "cached": False},
        "error": error,
        "failureReason": 2 if error else (0 if passed else 1),
        "success": passed,
        "score": score,
        "latencyMs": 412,
        "gradingResult": grading,
        "namedScores": {},
        "cost": 0.0001,
        "metadata": {},
    }


_RUBRIC = "Is polite and answers the question"
_Q1 = {"question": "What is the capital of France?", "output": "a var named like a field"}
_Q2 = {"question": "How many legs has a spider?"}

PROMPTFOO_RESULTS: dict[str, Any] = {
    "evalId": "eval-7Xk-2026-11-29T03:00:00",
    "results": {
        "version": 3,
        "timestamp": "2026-11-29T03:00:00.000Z",
        "prompts": [{"raw": "Answer briefly: {{question}}", "label": "brief",
                     "provider": "openai:gpt-4.1-mini"}],
        "results": [
            _row(0, 0, "openai:gpt-4.1-mini", _Q1, "Paris.", [
                _component("llm-rubric", _RUBRIC, True, 1, "Polite and correct.", metric="tone"),
                _component("g-eval", "Coherence of the answer", True, 0.8, "Coherent."),
                _component("contains", "Paris", True, 1, "Assertion passed"),
                {"pass": True, "score": 1, "reason": "All assertions passed",
                 "assertion": {"type": "assert-set", "assert": []},
                 "componentResults": [
                     _component("model-graded-closedqa", "Names Paris", True, 1, "Names Paris."),
                 ]},
                _component("human", "", False, 0, "Too curt for our style guide."),
            ]),
            _row(0, 0, "anthropic:claude-sonnet-4-5", _Q1, "The capital is Paris.", [
                _component("llm-rubric", _RUBRIC, True, 1, "Polite.", metric="tone"),
                _component("g-eval", "Coherence of the answer", False, 0.4, "Rambles."),
                _component("contains", "Paris", True, 1, "Assertion passed"),
                {"pass": True, "score": 1, "reason": "All assertions passed",
                 "assertion": {"type": "assert-set", "assert": []},
                 "componentResults": [
                     _component("model-graded-closedqa", "Names Paris", True, 1, "Yes."),
                 ]},
            ]),
            _row(1, 0, "openai:gpt-4.1-mini", _Q2, "Eight, obviously.", [
                _component("llm-rubric", _RUBRIC, False, 0, "Condescending.", metric="tone"),
                _component("g-eval", "Coherence of the answer", True, 0.9, "Clear."),
                _component("contains", "Paris", False, 0, "Expected output to contain Paris"),
                _component("factuality", "Spiders have eight legs", False, 0,
                           "Could not parse grader output",
                           metadata={"graderError": True}),
            ]),
            _row(1, 0, "anthropic:claude-sonnet-4-5", _Q2, "", None,
                 error="API error: 529 overloaded"),
        ],
        "stats": {"successes": 2, "failures": 1, "errors": 1, "tokenUsage": _USAGE},
    },
    "config": {"description": "capital and spiders",
               "providers": ["openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5"]},
    "shareableUrl": None,
    "metadata": {"promptfooVersion": "0.120.0", "nodeVersion": "v22.11.0", "platform": "linux",
                 "arch": "x64", "exportedAt": "2026-11-29T03:01:00.000Z"},
}


def _choice(label: str, rid: str) -> dict[str, Any]:
    return {"id": rid, "from_name": "sentiment", "to_name": "text", "type": "choices",
            "origin": "manual", "value": {"choices": [label]}}


def _comment(text: str, rid: str) -> dict[str, Any]:
    return {"id": rid, "from_name": "comment", "to_name": "text", "type": "textarea",
            "origin": "manual", "value": {"text": [text]}}


def _annotation(aid: int, task: int, who: Any, result: list[dict[str, Any]], *,
                at: str, cancelled: bool = False, ground_truth: bool = False) -> dict[str, Any]:
    return {"id": aid, "completed_by": who, "result": result, "was_cancelled": cancelled,
            "ground_truth": ground_truth, "created_at": at, "updated_at": at,
            "draft_created_at": None, "lead_time": 12.5, "prediction": {}, "result_count": 0,
            "unique_id": f"u-{aid}", "import_id": None, "last_action": None, "task": task,
            "project": 7, "updated_by": 3, "parent_prediction": None,
            "parent_annotation": None, "last_created_by": None}


def _prediction(pid: int, task: int, version: str, label: str, score: float) -> dict[str, Any]:
    return {"id": pid, "model_version": version, "created_ago": "2 hours", "score": score,
            "result": [_choice(label, f"p{pid}")], "cluster": None, "neighbors": None,
            "mislabeling": 0.0, "created_at": "2026-11-28T09:00:00.000000Z",
            "updated_at": "2026-11-28T09:00:00.000000Z", "model": None, "model_run": None,
            "task": task, "project": 7}


_ANA = {"id": 3, "email": "ana@example.com", "first_name": "Ana", "last_name": "Lima"}

LABEL_STUDIO_EXPORT: list[dict[str, Any]] = [
    {
        "id": 101, "data": {"text": "The update fixed everything, thank you!"},
        "annotations": [
            _annotation(1, 101, _ANA, [_choice("Positive", "a1"), _comment("clear praise", "c1")],
                        at="2026-11-28T10:00:00.000000Z", ground_truth=True),
            _annotation(2, 101, 4, [_choice("Neutral", "a2")], at="2026-11-28T10:05:00.000000Z"),
            _annotation(3, 101, 5, [], at="2026-11-28T10:06:00.000000Z", cancelled=True),
        ],
        "predictions": [
            _prediction(11, 101, "gpt-judge-v1", "Positive", 0.93),
            _prediction(12, 101, "bert-sentiment-2", "Positive", 0.71),
        ],
        "drafts": [], "meta": {}, "created_at": "2026-11-28T08:00:00.000000Z",
        "updated_at": "2026-11-28T10:06:00.000000Z", "inner_id": 1, "total_annotations": 2,
        "cancelled_annotations": 1, "total_predictions": 2, "comment_count": 0,
        "unresolved_comment_count": 0, "last_comment_updated_at": None, "project": 7,
        "updated_by": 5, "file_upload": "reviews.json", "comment_authors": [],
    },
    {
        "id": 102, "data": {"text": "Crashes on start. Again."},
        "annotations": [
            _annotation(4, 102, 4, [_choice("Neutral", "a4")], at="2026-11-28T11:00:00.000000Z"),
            # The same annotator again, later: their latest decision is the one kept.
            _annotation(5, 102, 4, [_choice("Negative", "a5")], at="2026-11-28T11:30:00.000000Z"),
        ],
        "predictions": [
            _prediction(13, 102, "gpt-judge-v1", "Negative", 0.88),
            _prediction(14, 102, "bert-sentiment-2", "Neutral", 0.52),
        ],
        "drafts": [], "meta": {}, "created_at": "2026-11-28T08:00:00.000000Z",
        "updated_at": "2026-11-28T11:30:00.000000Z", "inner_id": 2, "total_annotations": 2,
        "cancelled_annotations": 0, "total_predictions": 2, "comment_count": 0,
        "unresolved_comment_count": 0, "last_comment_updated_at": None, "project": 7,
        "updated_by": 4, "file_upload": "reviews.json", "comment_authors": [],
    },
]


def label_studio_rating_export() -> list[dict[str, Any]]:
    """The same tasks labelled with a `Rating` control (`{"rating": n}`) instead of choices."""
    tasks = copy.deepcopy(LABEL_STUDIO_EXPORT)
    stars = iter([5, 3, 4, 2, 1, 2, 1, 3])
    for task in tasks:
        for entry in [*task["annotations"], *task["predictions"]]:
            for result in entry["result"]:
                if result["type"] == "choices":
                    result.update(from_name="stars", type="rating",
                                  value={"rating": next(stars)})
    return tasks


def as_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()
