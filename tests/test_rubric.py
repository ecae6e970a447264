"""Rubric panels (issue 10 part 1): scoring pinned by hand (weights, penalties, CANNOT_ASSESS
policies), marks read from replies, the vote per criterion, and a run end to end against the
simulator over real HTTP: marks stored, per-criterion agreement, the disputed filter, a
reviewer's criterion mark and the export."""

from __future__ import annotations

import csv
import io
import pathlib

import pytest

from judging.errors import ConfigError, ParseError
from judging.panel.panel_model import Panel
from judging.panel.rubric import (
    CANNOT_ASSESS,
    MET,
    UNMET,
    RubricConfig,
    normalize_mark,
    parse_marks,
    rubric_score,
    rubric_vote,
)
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.stored.run_report import run_rubric
from judging.runs.stored.stored_run import export_options
from judging.simulator.sim_server import Profile
from judging.verdicts import FailureKind, Verdict
from judging.voting.strategies import VotingConfig
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import NotFoundError, StorageError, open_db
from storage.results.export_files import export_bytes
from storage.results.runs import get_run
from storage.reviewing.criteria import add_criterion_override, final_marks
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table

RUBRIC = RubricConfig(criteria=[
    {"id": "accurate", "text": "The answer is factually right.", "weight": 2},
    {"id": "complete", "text": "It covers every step.", "weight": 1},
    {"id": "rival", "text": "It recommends a competitor.", "weight": -1},
])


# -- scoring --------------------------------------------------------------------------------


@pytest.mark.parametrize(("marks", "expected"), [
    ({"accurate": MET, "complete": MET, "rival": UNMET}, 1.0),
    ({"accurate": MET, "complete": UNMET, "rival": UNMET}, 2 / 3),
    ({"accurate": UNMET, "complete": MET, "rival": UNMET}, 1 / 3),
    ({"accurate": MET, "complete": MET, "rival": MET}, 2 / 3),  # the penalty takes 1 of 3
    ({"accurate": UNMET, "complete": MET, "rival": MET}, 0.0),  # 1 - 1: never below 0
    ({"accurate": UNMET, "complete": UNMET, "rival": MET}, 0.0),  # -1 / 3, clipped to 0
])
def test_the_score_is_the_met_weight_over_the_positive_weight(marks, expected):
    assert rubric_score(marks, RUBRIC) == pytest.approx(expected)


@pytest.mark.parametrize(("policy", "expected"), [
    ("skip", 1.0),  # accurate leaves the count: complete 1 of 1
    ("unmet", 1 / 3),  # accurate counts as unmet: 1 of 3
    ("met", 1.0),  # accurate counts as met: 3 of 3
])
def test_cannot_assess_follows_the_panels_policy(policy, expected):
    rubric = RUBRIC.model_copy(update={"cannot_assess": policy})
    marks = {"accurate": CANNOT_ASSESS, "complete": MET, "rival": UNMET}
    assert rubric_score(marks, rubric) == pytest.approx(expected)


def test_nothing_countable_has_no_score():
    marks = {"accurate": CANNOT_ASSESS, "complete": CANNOT_ASSESS, "rival": MET}
    assert rubric_score(marks, RUBRIC) is None


# -- reading marks --------------------------------------------------------------------------


def test_marks_are_read_from_the_reply_and_synonyms_are_understood():
    reply = ('Here you go: {"criteria": {"accurate": {"mark": "met", "reasoning": "right"}, '
             '"complete": {"mark": "Not met"}, "rival": "N/A"}, "confidence": 0.8}')
    marks, confidence = parse_marks(reply, RUBRIC)
    assert marks == {"accurate": (MET, "right"), "complete": (UNMET, None),
                     "rival": (CANNOT_ASSESS, None)}
    assert confidence == 0.8
    with pytest.raises(ParseError, match="the reply gives no mark for complete, rival"):
        parse_marks('{"criteria": {"accurate": "MET"}}', RUBRIC)
    with pytest.raises(ParseError, match="'maybe' is not one of MET, UNMET, CANNOT_ASSESS"):
        normalize_mark("maybe")


# -- the vote -------------------------------------------------------------------------------


def _critic(name: str, **marks: str) -> Verdict:
    return Verdict(name, "i1", score=rubric_score(marks, RUBRIC),
                   marks={c: (m, None) for c, m in marks.items()})


def test_the_panel_votes_per_criterion_and_scores_the_consensus_marks():
    verdicts = [
        _critic("a", accurate=MET, complete=MET, rival=UNMET),
        _critic("b", accurate=MET, complete=UNMET, rival=UNMET),
        _critic("c", accurate=MET, complete=UNMET, rival=UNMET),
        Verdict("d", "i1", failure=FailureKind.ERROR, message="HTTP 500 x3"),
    ]
    outcome = rubric_vote(verdicts, {}, VotingConfig(strategy="plurality"), RUBRIC)
    assert {c: v["mark"] for c, v in outcome.marks.items()} == {
        "accurate": MET, "complete": UNMET, "rival": UNMET}
    assert outcome.consensus == pytest.approx(2 / 3)
    # The failed critic is failed on every criterion: none looks unanimous.
    assert outcome.marks["accurate"]["agreement"] == pytest.approx(3 / 4)
    assert outcome.marks["accurate"]["disputed"] and outcome.failed == 1
    assert outcome.disagreement and outcome.note == "in dispute: accurate, complete, rival"


@pytest.mark.parametrize(("change", "message"), [
    ({"scale": {"kind": "nominal", "labels": ["a", "b"]}},
     r"scale: a rubric panel's scale is the item's score"),
    ({"rubric": {"criteria": [{"id": "x", "text": "t", "weight": -1}]}},
     "rubric.criteria: no criterion has a positive weight"),
    ({"rubric": {"criteria": [{"id": "x", "text": "t"}, {"id": "x", "text": "u"}]}},
     "rubric.criteria: the id 'x' is used twice"),
    ({"voting": {"strategy": "mean"}}, "voting.strategy: 'mean' aggregates scores"),
])
def test_the_panel_refuses_a_rubric_it_cannot_run(change, message):
    spec = {"name": "r", "scale": {"kind": "score", "min": 0, "max": 1},
            "rubric": RUBRIC.model_dump(),
            "critics": [{"name": "a", "model": "m", "prompt_template": "{response}"}]}
    with pytest.raises(ConfigError, match=message):
        Panel.model_validate({**spec, **change})


# -- end to end -----------------------------------------------------------------------------


def _rubric_run(tmp_path: pathlib.Path, server, *, per_criterion: bool) -> tuple[object, int]:
    data = tmp_path / "answers.csv"
    data.write_text("id,response\n" + "".join(f"r{n:02d},support answer {n}\n"
                                              for n in range(20)), encoding="utf-8")
    panel = Panel.model_validate({
        "name": "graded", "scale": {"kind": "score", "min": 0, "max": 1},
        "rubric": {**RUBRIC.model_dump(), "per_criterion": per_criterion},
        "critics": [{"name": n, "vendor": "custom", "base_url": server.base_url, "model": n,
                     "prompt_template": "Answer: {response}"} for n in ("sharp", "rough")]})
    db_path = tmp_path / "r.db"
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="answers")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(str(db_path), run_id, concurrency=4).wait(60)
    assert get_run(db, run_id)["status"] == "done"
    return db, run_id


@pytest.mark.parametrize(("per_criterion", "calls"), [(False, 2 * 20), (True, 2 * 20 * 3)])
def test_a_rubric_run_stores_every_mark_and_scores_the_panels_marks(
        tmp_path, simulator_factory, per_criterion, calls):
    server = simulator_factory(profiles={"sharp": Profile(accuracy=1.0),
                                         "rough": Profile(accuracy=0.6)})
    db, run_id = _rubric_run(tmp_path, server, per_criterion=per_criterion)
    assert server.stats()["total"] == calls
    disputed = set()
    for n in range(20):
        detail = item_detail(db, run_id, f"r{n:02d}")
        marks = {v["critic"]: {c: m["mark"] for c, m in v["marks"].items()}
                 for v in detail["verdicts"]}
        voted = detail["consensus"]["marks"]
        assert set(voted) == {"accurate", "complete", "rival"}
        for criterion, vote in voted.items():
            assert vote["disputed"] == (marks["sharp"][criterion] != marks["rough"][criterion])
        if any(v["disputed"] for v in voted.values()):
            disputed.add(f"r{n:02d}")
        # The item's score is the score of the panel's marks, and each critic's its own.
        assert detail["consensus"]["score"] == pytest.approx(
            rubric_score({c: v["mark"] for c, v in voted.items()}, RUBRIC))
        for verdict in detail["verdicts"]:
            assert verdict["score"] == pytest.approx(rubric_score(marks[verdict["critic"]],
                                                                  RUBRIC))
        if per_criterion:
            assert [s["role"] for s in detail["steps"]["sharp"]] == [
                "criterion accurate", "criterion complete", "criterion rival"]
    assert disputed  # at 60% accuracy the rough critic disagrees somewhere
    frame, total = review_table(db, run_id, ReviewFilter(disputed=True), limit=None)
    assert set(frame["item_id"]) == disputed and total == len(disputed)
    only_rival, _ = review_table(db, run_id, ReviewFilter(disputed="rival"), limit=None)
    assert set(only_rival["item_id"]) <= disputed

    report = {c.criterion: c for c in run_rubric(db, run_id).criteria}
    assert report["accurate"].items == 20
    assert report["accurate"].with_panel["sharp"] is not None
    assert sum(c.disputed for c in report.values()) >= len(disputed)


def test_a_reviewers_criterion_mark_changes_the_final_marks_and_score_not_the_vote(
        tmp_path, simulator_factory):
    server = simulator_factory(profiles={"sharp": Profile(accuracy=1.0),
                                         "rough": Profile(accuracy=1.0)})
    db, run_id = _rubric_run(tmp_path, server, per_criterion=False)
    voted = item_detail(db, run_id, "r03")["consensus"]["marks"]
    flipped = UNMET if voted["accurate"]["mark"] == MET else MET
    add_criterion_override(db, run_id, "r03", "accurate", flipped, "checked by hand", "ana")
    assert final_marks(db, run_id)["r03"]["accurate"] == flipped
    assert item_detail(db, run_id, "r03")["consensus"]["marks"] == voted  # the vote stays
    with pytest.raises(StorageError, match="reviewer's name"):
        add_criterion_override(db, run_id, "r03", "accurate", MET, "", " ")
    with pytest.raises(NotFoundError, match="no item 'nope'"):
        add_criterion_override(db, run_id, "nope", "accurate", MET, "", "ana")

    options = export_options(db, run_id)
    rows = {r["item_id"]: r for r in csv.DictReader(io.StringIO(
        export_bytes(db, run_id, "csv", options).decode()))}
    row = rows["r03"]
    assert row["accurate: consensus"] == voted["accurate"]["mark"]
    assert row["accurate: final"] == flipped
    assert row["accurate: sharp"] in (MET, UNMET, CANNOT_ASSESS)
    final = {c: row[f"{c}: final"] for c in ("accurate", "complete", "rival")}
    assert float(row["final_score"]) == pytest.approx(rubric_score(final, RUBRIC))
