"""The composition matrix, team review, calibration and Agreement (issue 23 part 3): for every
panel kind, an assignment made on Team, two reviewers who disagree, and a lead's adjudication on
Team, then checked where the analyst reads it (storage, Review, Agreement, every export format,
the history); for every kind that gives labels, calibration learns from exactly the items
Agreement counts as reviewed by humans; a pairwise run's wins are counted by the final
decisions."""

from __future__ import annotations

import re
from typing import Any

import pytest

from judging.runs.stored.calibrate import run_calibration
from storage.reviewing.assignments import assigned_count, assignment, reviewer_labels
from storage.reviewing.review_queue import item_detail
from tests.fixtures_matrix import (
    KIND_NAMES,
    LABEL_KINDS,
    UI,
    MatrixRun,
    a_different_decision,
    agreement_reviewed,
    all_text,
    another_decision,
    button,
    check_everywhere,
    decisions_by_item,
    no_exception,
    open_app_page,
    open_review,
    record,
    replace,
    review_count,
    review_decide,
    review_frame,
    review_open,
    widget,
)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_an_adjudication_on_team_is_the_final_decision_everywhere(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    query = {"run": str(run.run_id)}
    at = open_app_page("team", query)
    widget(at, "text_area", UI.REVIEWERS, contains=True).set_value("ana\nbob")
    widget(at, "radio", UI.ITEMS).set_value("all items")
    widget(at, "slider", UI.OVERLAP).set_value(50)
    button(at, "Assign").click().run()
    no_exception(at)
    plan = assignment(run.db, run.run_id)
    assert len(plan) == 16 and sum(len(names) == 2 for names in plan.values()) == 8
    assert "Assigned 16 items to 2 reviewers (24 reviews)" in all_text(at)

    # Ana reviews her items on Review: the list holds exactly hers.
    review = open_review(run, reviewer="ana")
    mine = widget(review, "toggle", "assigned to ana", contains=True)
    assert not mine.value  # off until the reviewer turns it on
    mine.set_value(True).run()
    no_exception(review)
    assert review_count(review) == assigned_count(run.db, run.run_id, "ana")
    item = next(i for i, names in plan.items() if names == ["ana", "bob"])
    assert item in [str(i) for i in review_frame(review)["item_id"]]
    review_open(review, item)
    ana = a_different_decision(run, item, reviewer="ana")
    review_decide(review, run, ana)
    bob = another_decision(run, ana, "bob")
    record(run, bob)
    assert reviewer_labels(run.db, run.run_id)[item] == {"ana": ana.label, "bob": bob.label}

    # The lead sides with ana, on Team (a split's children typed again: the latest decision,
    # bob's, has none to prefill).
    at = open_app_page("team", query)
    no_exception(at)
    assert "1 item where reviewers disagree" in all_text(at)
    widget(at, "selectbox", UI.ADJUDICATE).set_value(item).run()
    lead = replace(ana, reviewer="lead")
    widget(at, "radio", UI.DECISION).set_value(lead.label).run()  # then the form appears
    if run.kind.curation:
        widget(at, "text_area", UI.CHILDREN, contains=True).set_value(
            "\n".join(lead.children))
        widget(at, "selectbox", UI.MERGE_INTO, contains=True).set_value(
            lead.merge_into)
    widget(at, "text_area", UI.NOTE).set_value("ana is right")
    widget(at, "text_input", UI.REVIEWER).set_value("lead")
    button(at, "Adjudicate").click().run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert f"Adjudicated {item}" in all_text(at)
    assert "(1 adjudicated)" in all_text(at)
    # The reviewers' own labels stay theirs; the lead's is the item's final decision.
    assert reviewer_labels(run.db, run.run_id)[item] == {"ana": ana.label, "bob": bob.label}
    check_everywhere(run, lead, reviewed=1)


@pytest.mark.parametrize("kind", LABEL_KINDS)
def test_calibration_learns_from_the_items_agreement_counts_as_reviewed(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    items = list(decisions_by_item(run))[:6]
    for item in items:
        record(run, a_different_decision(run, item))
    page: list[Any] = []
    assert agreement_reviewed(run, page) == 6
    calibration = run_calibration(run.db, run.run_id)
    assert calibration.from_humans == 6
    assert calibration.from_dawid_skene == 10  # the items no human looked at
    (at,) = page
    assert "Each critic against 6 human labels" in all_text(at)
    # A figure as "title  \n**value**" (text that wraps: a metric cut it short).
    now = next(str(m.value) for m in at.markdown
               if str(m.value).startswith("Consensus vs humans now"))
    # Every decision differs from the consensus: the consensus agrees with none of the six.
    assert re.search(r"\*\*0% \(.*n=6\)\*\*", now), now


@pytest.mark.parametrize("kind", ["pairwise"])
def test_agreement_counts_each_system_s_wins_by_the_final_decisions(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    for item in list(decisions_by_item(run))[:3]:
        record(run, a_different_decision(run, item))
    tally: dict[str, list[int]] = {}
    for item, row in decisions_by_item(run).items():
        fields = item_detail(run.db, run.run_id, item)["fields"]
        a, b = fields["system_a"], fields["system_b"]
        for system in (a, b):
            tally.setdefault(system, [0, 0, 0])
        if row["final_label"] == "TIE":
            tally[a][1] += 1
            tally[b][1] += 1
        else:
            winner, loser = (a, b) if row["final_label"] == "A" else (b, a)
            tally[winner][0] += 1
            tally[loser][2] += 1
    at = open_app_page("agreement", {"run": str(run.run_id)})
    no_exception(at)
    table = next(f.value for f in at.dataframe if "wins" in f.value.columns)
    shown = {row["system"]: [row["wins"], row["ties"], row["losses"]]
             for row in table.to_dict("records")}
    assert shown == tally
    assert "Over 16 comparisons" in all_text(at)
