"""One final decision per item, whatever the panel kind (issue 23, part 2): the rule of
`storage.reviewing.decisions` for label, pairwise, curation, score and rubric panels, the "needs a
decision" state (a SPLIT without children, a MERGE without target, no consensus), the Review
filter that lists it, bulk accept that skips it, and the humans' labels Agreement reads."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import sqlite_utils

from judging.panel.panel_model import Panel
from judging.panel.rubric import MET, UNMET
from judging.runs.stored.stored_run import decision_rule
from judging.verdicts import PanelVerdict, VoteOutcome
from storage.datasets.dataset_store import save_dataset
from storage.panels import save_panel
from storage.results.consensus import write_consensus
from storage.results.runs import create_run
from storage.reviewing.criteria import add_criterion_override
from storage.reviewing.decisions import DECIDED, NEEDS_DECISION, decision_counts, final_decisions
from storage.reviewing.overrides import accept_consensus, add_override, human_labels
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_position, review_table
from tests.fixtures_storage import make_parsed

CRITIC = {"name": "c", "vendor": "simulated", "model": "m", "prompt_template": "{text}"}
RUBRIC = {"criteria": [{"id": "accurate", "text": "It is accurate.", "weight": 2},
                       {"id": "complete", "text": "It is complete.", "weight": 1},
                       {"id": "rival", "text": "It names a rival.", "weight": -1}]}
THRESHOLDS = {"uphold": 0.7, "borderline": 0.4, "escalate": 0.0}


def _panel(**spec: Any) -> Panel:
    return Panel.model_validate({"name": "p", "critics": [CRITIC], **spec})


CURATION = _panel(
    scale={"kind": "nominal", "labels": ["KEEP", "REJECT", "SPLIT", "MERGE"]},
    curation={"class_field": "text", "keep_label": "KEEP", "reject_label": "REJECT",
              "split_label": "SPLIT", "merge_label": "MERGE"})
LABEL = _panel(scale={"kind": "nominal", "labels": ["KEEP", "REJECT", "SPLIT", "MERGE"]})
PAIRWISE = _panel(scale={"kind": "nominal", "labels": ["A", "B", "TIE"]},
                  pairwise={"first_field": "text", "second_field": "n"},
                  critics=[{**CRITIC, "prompt_template": "A: {text} B: {n}"}])
SCORE = _panel(scale={"kind": "score", "min": 0, "max": 1},
               voting={"strategy": "mean", "thresholds": THRESHOLDS})
RUBRIC_PANEL = _panel(scale={"kind": "score", "min": 0, "max": 1}, rubric=RUBRIC,
                      voting={"thresholds": THRESHOLDS})


def _outcome(**parts: Any) -> VoteOutcome:
    return VoteOutcome(**{"agreement": 1.0, "disagreement": False, **parts})


def _run(db: sqlite_utils.Database, outcomes: list[VoteOutcome]) -> tuple[int, list[str]]:
    """A run whose stored consensus is `outcomes`, one per item, in order."""
    parsed = make_parsed(len(outcomes), salt=hashlib.sha256(repr(outcomes).encode()).hexdigest())
    dataset_id = save_dataset(db, parsed, name="d").id
    save_panel(db, panel_hash="h" + parsed.content_hash[:8], name="p", yaml_text="name: p\n")
    run_id = create_run(db, dataset_id=dataset_id, panel_hash="h" + parsed.content_hash[:8],
                        critics=["c"])
    ids = [item.id for item in parsed.items]
    write_consensus(db, run_id, [PanelVerdict(item_id=i, outcome=o, verdicts=[],
                                              strategy="plurality")
                                 for i, o in zip(ids, outcomes, strict=True)])
    return run_id, ids


def _by_item(db: sqlite_utils.Database, run_id: int, panel: Panel) -> dict[str, dict[str, Any]]:
    frame = final_decisions(db, run_id, decision_rule(panel))
    return {row["item_id"]: row for row in frame.to_dict("records")}


def test_a_curation_consensus_that_cannot_be_acted_on_needs_a_decision(db):
    run_id, ids = _run(db, [_outcome(consensus=label) for label in
                            ("KEEP", "SPLIT", "MERGE", None, "REJECT", "SPLIT", "MERGE")])
    add_override(db, run_id, ids[5], "SPLIT", "two kinds", "ana", children=["Trail", "Road"])
    add_override(db, run_id, ids[6], "MERGE", "a duplicate", "bob", merge_into="Boots")
    final = _by_item(db, run_id, CURATION)
    assert [final[i]["status"] for i in ids] == [
        DECIDED, NEEDS_DECISION, NEEDS_DECISION, NEEDS_DECISION, DECIDED, DECIDED, DECIDED]
    assert "child classes" in final[ids[1]]["why"] and "merge into" in final[ids[2]]["why"]
    assert "abstained" in final[ids[3]]["why"]
    assert (final[ids[5]]["children"], final[ids[5]]["decided_by"]) == (("Trail", "Road"), "human")
    assert final[ids[6]]["merge_into"] == "Boots"
    assert decision_counts(final_decisions(db, run_id, decision_rule(CURATION))) == {
        DECIDED: 4, NEEDS_DECISION: 3}
    # A SPLIT recorded without children (a bulk accept of old) is no decision either.
    add_override(db, run_id, ids[4], "SPLIT", "accepted the consensus", "cy")
    assert _by_item(db, run_id, CURATION)[ids[4]]["status"] == NEEDS_DECISION


@pytest.mark.parametrize("panel", [LABEL, PAIRWISE], ids=["label", "pairwise"])
def test_a_label_or_pairwise_decision_is_the_latest_override_else_the_consensus(db, panel):
    first, second = panel.scale.labels[:2]
    run_id, ids = _run(db, [_outcome(consensus=first), _outcome(consensus=second),
                            _outcome(consensus=None)])
    add_override(db, run_id, ids[1], first, "", "ana")
    add_override(db, run_id, ids[1], second, "on reflection", "bob")
    final = _by_item(db, run_id, panel)
    assert [final[i]["final_label"] for i in ids[:2]] == [first, second]
    assert [final[i]["decided_by"] for i in ids[:2]] == ["panel", "human"]
    assert final[ids[1]]["reviewer"] == "bob"
    # Without curation a SPLIT means nothing more, and only an abstained vote is open.
    assert [final[i]["status"] for i in ids] == [DECIDED, DECIDED, NEEDS_DECISION]


def test_a_score_decision_takes_its_label_from_the_thresholds(db):
    run_id, ids = _run(db, [_outcome(consensus=0.8, recommendation="uphold"),
                            _outcome(consensus=0.5, recommendation="borderline")])
    add_override(db, run_id, ids[1], "0.2", "too generous", "ana")
    final = _by_item(db, run_id, SCORE)
    assert (final[ids[0]]["final_label"], final[ids[0]]["final_score"]) == ("uphold", 0.8)
    assert (final[ids[1]]["final_label"], final[ids[1]]["final_score"]) == ("escalate", 0.2)
    assert human_labels(db, run_id, decision_rule(SCORE)) == {ids[1]: "0.2"}


def _rubric_outcome(**marks: str) -> VoteOutcome:
    from judging.panel.rubric import RubricConfig, rubric_score
    from judging.voting.strategies import band

    score = rubric_score(marks, RubricConfig.model_validate(RUBRIC))
    assert score is not None
    return _outcome(consensus=score, recommendation=band(score, THRESHOLDS),
                       marks={c: {"mark": m, "agreement": 1.0, "disputed": False}
                              for c, m in marks.items()})


def test_a_rubric_reviewers_marks_rescore_the_item_and_its_label_follows(db):
    # accurate UNMET, complete MET: 1 of 3 -> 0.33, "escalate".
    run_id, ids = _run(db, [_rubric_outcome(accurate=UNMET, complete=MET, rival=UNMET),
                            _rubric_outcome(accurate=MET, complete=MET, rival=UNMET)])
    rule = decision_rule(RUBRIC_PANEL)
    before = _by_item(db, run_id, RUBRIC_PANEL)[ids[0]]
    assert (before["final_label"], before["decided_by"]) == ("escalate", "panel")
    assert human_labels(db, run_id, rule) == {}
    add_criterion_override(db, run_id, ids[0], "accurate", MET, "it is right", "ana")
    after = _by_item(db, run_id, RUBRIC_PANEL)[ids[0]]
    # The reviewer's mark gives 3 of 3: score 1.0, and the label by the thresholds with it.
    assert (after["final_score"], after["final_label"]) == (1.0, "uphold")
    assert (after["decided_by"], after["status"], after["marked"]) == ("human", DECIDED, True)
    # A reviewed rubric item is a human's label for Agreement: the score, as its figure.
    assert human_labels(db, run_id, rule) == {ids[0]: "1.0"}
    # An item override given after the marks wins; marks given after it win again.
    add_override(db, run_id, ids[0], "0.5", "half right after all", "bob")
    assert _by_item(db, run_id, RUBRIC_PANEL)[ids[0]]["final_label"] == "borderline"
    add_criterion_override(db, run_id, ids[0], "complete", UNMET, "", "cy")
    assert _by_item(db, run_id, RUBRIC_PANEL)[ids[0]]["final_score"] == pytest.approx(2 / 3)
    assert _by_item(db, run_id, RUBRIC_PANEL)[ids[1]]["decided_by"] == "panel"


def test_the_review_filter_lists_exactly_what_the_rule_says_needs_a_decision(db):
    run_id, ids = _run(db, [_outcome(consensus=label) for label in
                            ("KEEP", "SPLIT", "MERGE", None, "SPLIT")])
    add_override(db, run_id, ids[4], "SPLIT", "", "ana", children=["A", "B"])
    rule = decision_rule(CURATION)
    frame, total = review_table(db, run_id, ReviewFilter(needs_decision=rule), sort="item", limit=None)
    final = final_decisions(db, run_id, rule)
    assert list(frame["item_id"]) == list(final.loc[final["status"] == NEEDS_DECISION, "item_id"])
    assert total == 3 and list(frame["item_id"]) == ids[1:4]
    assert item_position(db, run_id, ids[2], ReviewFilter(needs_decision=rule), sort="item") == 1
    assert item_position(db, run_id, ids[4], ReviewFilter(needs_decision=rule), sort="item") is None


def test_bulk_accept_skips_what_cannot_be_acted_on_and_says_why(db):
    run_id, ids = _run(db, [_outcome(consensus=label) for label in
                            ("KEEP", "SPLIT", "MERGE", None, "REJECT", "SPLIT")])
    accepted = accept_consensus(db, run_id, ids, "ana", rule=decision_rule(CURATION))
    assert accepted.added == 2
    assert accepted.skipped == {"a SPLIT consensus has no new child classes": 2,
                                "a MERGE consensus has no class to merge into": 1,
                                "no consensus (the vote abstained)": 1}
    assert "skipped 4 that need a decision of your own" in accepted.sentence()
    final = _by_item(db, run_id, CURATION)
    assert {i for i, row in final.items() if row["decided_by"] == "human"} == {ids[0], ids[4]}
    assert decision_counts(final_decisions(db, run_id, decision_rule(CURATION)))[
        NEEDS_DECISION] == 4


def test_bulk_accept_on_a_score_panel_records_the_score_and_its_band(db):
    run_id, ids = _run(db, [_outcome(consensus=0.75, recommendation="uphold")])
    accept_consensus(db, run_id, ids, "ana", rule=decision_rule(SCORE))
    row = _by_item(db, run_id, SCORE)[ids[0]]
    assert (row["override_label"], row["final_label"], row["final_score"]) == \
        ("0.75", "uphold", 0.75)


def test_a_rubric_vote_labels_the_score_by_the_thresholds():
    from judging.panel.rubric import RubricConfig, rubric_vote
    from judging.verdicts import Verdict
    from judging.voting.strategies import VotingConfig

    rubric = RubricConfig.model_validate(RUBRIC)
    verdict = Verdict("c", "i", score=0.5, marks={"accurate": (MET, None),
                                                  "complete": (UNMET, None),
                                                  "rival": (UNMET, None)})
    outcome = rubric_vote([verdict], {"c": 1.0}, VotingConfig(thresholds=THRESHOLDS), rubric)
    assert (outcome.consensus, outcome.recommendation) == (pytest.approx(2 / 3), "borderline")
