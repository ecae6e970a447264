"""`kind: python` critics: a function of a test module judges items through the real run path
(`run_panel` -> `CallRunner.call`), its verdicts are cached, counted as rule evaluations at $0,
and its failures are kept as verdicts; a runner of the web app never imports it."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from judging.engine.calls import CallRunner, MemoryCache
from judging.engine.panel_runner import RunResult, run_panel
from judging.engine.plugin_critics import WEB_REFUSAL
from judging.errors import ConfigError
from judging.panel.panel_files import panel_from_dict
from judging.panel.panel_model import Panel
from judging.verdicts import FailureKind
from tests import fixtures_plugins

ITEMS = [
    {"id": "a", "text": "write to ada@example.org", "answer": "Paris", "ref": "Paris"},
    {"id": "b", "text": "nothing personal", "answer": "Lyon", "ref": "Paris"},
    {"id": "c", "text": "bob@example.com again", "answer": "paris is big", "ref": "Paris is big"},
]


def _panel(*critics: dict[str, Any], scale: dict[str, Any] | None = None) -> Panel:
    voting = {"strategy": "mean" if scale and scale["kind"] == "score" else "plurality"}
    return panel_from_dict({"scale": scale or {"kind": "yesno"}, "voting": voting,
                            "critics": [{"kind": "python", **c} for c in critics]})


def _run(panel: Panel, runner: CallRunner) -> RunResult:
    return run_panel(panel, ITEMS, concurrency=4, runner=runner)


def test_a_python_critic_judges_with_its_reasoning_for_free() -> None:
    panel = _panel({"name": "no_pii", "function": "tests.fixtures_plugins:no_pii"},
                   {"name": "same", "function": "tests.fixtures_plugins:matches_reference",
                    "reference_field": "ref"})
    with CallRunner() as runner:
        result = _run(panel, runner)
    got = {(v.item_id, v.critic): (v.label, v.reasoning, v.passed)
           for pv in result.verdicts for v in pv.verdicts}
    assert got[("a", "no_pii")] == ("no", "found the e-mail address ada@example.org", False)
    assert got[("b", "no_pii")] == ("yes", "no e-mail address", True)
    assert got[("a", "same")] == ("yes", None, True)
    assert got[("b", "same")] == ("no", None, False)
    verdict = result.verdicts[0].verdicts[0]
    assert (verdict.vendor, verdict.model, verdict.attempts, verdict.cost_usd) == (
        "python", "tests.fixtures_plugins:no_pii", 0, None)
    assert verdict.raw_request == {"kind": "python", "function": "tests.fixtures_plugins:no_pii",
                                   "reference_field": None}
    ledger = result.progress.ledger
    assert (ledger.calls, ledger.rule_evaluations, ledger.sent_calls, ledger.http_attempts,
            ledger.cost_usd, ledger.unpriced_calls) == (6, 6, 0, 0, 0.0, 0)
    assert "6 rule evaluations ($0)" in ledger.sent_text()


def test_a_score_with_reasoning_and_confidence() -> None:
    panel = _panel({"name": "graded", "function": "tests.fixtures_plugins:graded",
                    "reference_field": "ref"}, scale={"kind": "score", "min": 0, "max": 1})
    with CallRunner() as runner:
        verdict = _run(panel, runner).verdicts[2].verdicts[0]
    assert (verdict.score, verdict.reasoning, verdict.confidence) == (1.0, "3 of 3 words", 0.5)
    assert verdict.passed is True  # the top of the scale is the pass value


def test_verdicts_come_from_the_cache_the_second_time() -> None:
    panel = _panel({"name": "no_pii", "function": "tests.fixtures_plugins:no_pii"})
    cache = MemoryCache()
    before = fixtures_plugins.CALLS["no_pii"]
    with CallRunner(cache=cache) as runner:
        first = _run(panel, runner)
        second = _run(panel, runner)
    assert fixtures_plugins.CALLS["no_pii"] - before == 3  # the second run called nothing
    assert first.progress.ledger.rule_evaluations == 3
    assert (second.progress.ledger.rule_evaluations, second.progress.ledger.cache_hits) == (0, 3)
    again = second.verdicts[0].verdicts[0]
    assert again.cached and again.label == "no" and again.passed is False  # still a failed check


@pytest.mark.parametrize(("function", "kind", "message"), [
    ("tests.fixtures_plugins:broken", FailureKind.ERROR,
     "tests.fixtures_plugins:broken raised ValueError: cannot read this item"),
    ("tests.fixtures_plugins:off_scale", FailureKind.PARSE_FAIL,
     "tests.fixtures_plugins:off_scale returned verdict 'maybe' is not exactly one of: yes, no"),
    ("tests.no_such_module:check", FailureKind.CRITIC_ERROR,
     "module 'tests.no_such_module' cannot be imported"),
    ("tests.fixtures_plugins:missing", FailureKind.CRITIC_ERROR,
     "'tests.fixtures_plugins' has no 'missing'; check the name after the colon"),
    ("tests.fixtures_plugins:NOT_A_FUNCTION", FailureKind.CRITIC_ERROR,
     "'NOT_A_FUNCTION' is not a function"),
])
def test_a_failing_function_is_a_kept_failure_with_a_sentence(function: str, kind: FailureKind,
                                                             message: str) -> None:
    panel = _panel({"name": "f", "function": function})
    with CallRunner() as runner:
        result = _run(panel, runner)
    for pv in result.verdicts:
        (verdict,) = pv.verdicts
        assert verdict.failure is kind and message in (verdict.message or ""), verdict.message
    assert result.progress.ledger.failed == 3


@pytest.mark.parametrize(("critic", "message"), [
    ({"function": "tests.fixtures_plugins.no_pii"},
     r"critics\[0\]: function: 'tests.fixtures_plugins.no_pii' is not a function path; write "
     r"module:function"),
    ({}, r"critics\[0\]: a python critic needs function"),
])
def test_a_misspelt_function_is_refused_when_the_panel_is_built(critic: dict[str, Any],
                                                                  message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _panel({"name": "f", **critic})


def test_the_web_apps_runner_never_imports_the_function() -> None:
    module = "tests.plugin_probe"
    assert module not in sys.modules
    panel = _panel({"name": "probe", "function": f"{module}:check"})
    with CallRunner(python_critics=False) as runner:
        result = _run(panel, runner)
    for pv in result.verdicts:
        (verdict,) = pv.verdicts
        assert verdict.failure is FailureKind.CRITIC_ERROR and verdict.message == WEB_REFUSAL
    assert module not in sys.modules


def test_checking_a_panel_says_a_rule_is_free_and_a_refused_function_why() -> None:
    from judging.runs.stored.critic_check import check_critics
    from judging.verdicts import Item

    panel = panel_from_dict({"scale": {"kind": "yesno"}, "critics": [
        {"name": "short", "kind": "rule", "rule": {"check": "length", "field": "text", "max": 5}},
        {"name": "probe", "kind": "python", "function": "tests.plugin_probe:check"}]})
    with CallRunner(python_critics=False) as runner:
        rule, probe = check_critics(panel, Item("1", {"text": "hello world"}), runner)
    assert rule.ok and "OK (no in " in rule.sentence and "a rule check: free" in rule.sentence
    assert not probe.ok and WEB_REFUSAL.rstrip(".") in probe.sentence
    assert "tests.plugin_probe" not in sys.modules


def test_a_function_that_returns_labels_needs_no_pass_or_fail_label() -> None:
    """On a nominal scale a function returning the scale's labels is built and judges without
    pass_label / fail_label; one returning a bool there fails its calls with a sentence."""
    items = [{"id": "a", "verdict": "KEEP"}, {"id": "b", "verdict": "REJECT"}]
    panel = _panel({"name": "stored", "function": "tests.fixtures_plugins:verdict_column"},
                   {"name": "bool", "function": "tests.fixtures_plugins:passes"},
                   scale={"kind": "nominal", "labels": ["KEEP", "REJECT"]})
    with CallRunner() as runner:
        result = run_panel(panel, items, runner=runner)
    got = {(v.item_id, v.critic): v for pv in result.verdicts for v in pv.verdicts}
    assert [got[(i, "stored")].label for i in "ab"] == ["KEEP", "REJECT"]
    assert got[("a", "bool")].failure is FailureKind.PARSE_FAIL
    assert ("returned True, a pass or a fail, but the critic has no pass_label and fail_label "
            "for it on the nominal scale: set them, or return a label of the scale (KEEP, "
            "REJECT)") in (got[("a", "bool")].message or "")
    with pytest.raises(ConfigError, match=r"critics\[0\]\.fail_label: a python critic"):
        _panel({"name": "half", "function": "tests.fixtures_plugins:passes",
                "pass_label": "KEEP"}, scale={"kind": "nominal", "labels": ["KEEP", "REJECT"]})


PAIRWISE = {"kind": "nominal", "labels": ["A", "B", "TIE"]}
PAIRS = [{"id": "p1", "q": "?", "x": "long answer", "y": "short", "verdict": "A"},
         {"id": "p2", "q": "?", "x": "short", "y": "long answer", "verdict": "B"},
         {"id": "p3", "q": "?", "x": "same", "y": "same", "verdict": "TIE"}]


def _pairwise_panel(swap: bool) -> Panel:
    return panel_from_dict({
        "scale": PAIRWISE, "voting": {"strategy": "plurality"},
        "pairwise": {"first_field": "x", "second_field": "y", "swap": swap},
        "critics": [{"name": "benchmark", "kind": "python",
                     "function": "tests.fixtures_plugins:verdict_column"}]})


@pytest.mark.parametrize("swap", [True, False])
def test_a_python_critic_brings_a_pairwise_benchmarks_stored_decisions(swap: bool) -> None:
    """On a pairwise panel the function gets the item with both responses and returns the
    pairwise label in the item's stored order; with swap it is asked once all the same (not
    read back flipped into ties)."""
    with CallRunner() as runner:
        result = run_panel(_pairwise_panel(swap), PAIRS, runner=runner)
    assert [pv.consensus for pv in result.verdicts] == ["A", "B", "TIE"]
    for pv in result.verdicts:
        (verdict,) = pv.verdicts
        assert verdict.failure is None and len(verdict.calls) == 1
    assert result.progress.ledger.rule_evaluations == 3


def test_python_critics_on_a_rubric_panel_and_rules_on_a_pairwise_one_are_refused() -> None:
    rubric = {"criteria": [{"id": "ok", "text": "It is fine."}]}
    with pytest.raises(ConfigError, match=r"critics\[0\]\.kind: python critics give one label "
                                          "or score per item, not a mark per criterion"):
        panel_from_dict({"scale": {"kind": "score", "min": 0, "max": 1}, "rubric": rubric,
                         "critics": [{"name": "f", "kind": "python",
                                      "function": "tests.fixtures_plugins:graded"}]})
    with pytest.raises(ConfigError, match=r"critics\[0\]\.kind: a rule passes or fails one text"):
        panel_from_dict({"scale": PAIRWISE, "pairwise": {"first_field": "x", "second_field": "y"},
                         "critics": [{"name": "r", "kind": "rule", "pass_label": "A",
                                      "fail_label": "B",
                                      "rule": {"check": "length", "field": "x", "max": 5}}]})


def test_a_stored_pairwise_run_of_stored_decisions_ranks_the_systems(tmp_path) -> None:
    """Through the background job and the database, as `jurybox judge` runs it: the
    benchmark's decisions become the run's, and the pairwise report ranks its systems."""
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from judging.runs.stored.run_report import run_pairwise
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db

    data = tmp_path / "benchmark.csv"
    data.write_text("id,q,sys_x,x,sys_y,y,verdict\n"
                    "p1,?,atlas,long,comet,short,A\n"
                    "p2,?,comet,short,atlas,long,B\n"
                    "p3,?,atlas,long,breeze,mid,A\n", encoding="utf-8")
    panel = panel_from_dict({
        "scale": PAIRWISE, "voting": {"strategy": "plurality"},
        "pairwise": {"first_field": "x", "second_field": "y", "first_system": "sys_x",
                     "second_system": "sys_y"},
        "critics": [{"name": "benchmark", "kind": "python",
                     "function": "tests.fixtures_plugins:verdict_column"}]})
    db = open_db(tmp_path / "b.db")
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="benchmark")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    job = JobRegistry().start_run(str(tmp_path / "b.db"), run_id)
    assert job.wait(60) and job.progress().status == "done"
    report = run_pairwise(db, run_id)
    assert report is not None
    assert {r.system: (r.wins, r.losses) for r in report.systems} == {
        "atlas": (3, 0), "comet": (0, 2), "breeze": (0, 1)}
