"""Several reviewers (issue 12 part 3): items assigned with an overlap seen by two, each
reviewer's own labels, their agreement with each other on the overlap (cross-checked against
the `krippendorff` package), conflicts and a lead's adjudication, per-reviewer progress, and
Review's "assigned to me" list."""

from __future__ import annotations

import pathlib
from collections import Counter

import krippendorff
import numpy as np
import pytest

from judging.analysis.team_review import plan_assignment, reviewer_agreement
from judging.errors import DataError
from storage.db import StorageError, open_db
from storage.reviewing.assignments import (
    adjudicated_items,
    assignment,
    clear_assignment,
    reviewer_labels,
    reviewer_progress,
    save_assignment,
)
from storage.reviewing.overrides import add_override, final_labels
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import review_table
from tests.fixtures_storage import seed_run
from tests.test_app_smoke import no_exception, open_page

ITEMS = [f"item-{n:06d}" for n in range(100)]


def test_every_item_gets_a_reviewer_in_turn_and_the_overlap_a_second_one():
    plan = plan_assignment(ITEMS, ["ana", "bob", "cy"], 0.2, seed=7)
    assert list(plan) == ITEMS
    firsts = Counter(names[0] for names in plan.values())
    assert sorted(firsts.values()) == [33, 33, 34]  # shares differ by one at most
    doubled = [names for names in plan.values() if len(names) == 2]
    assert len(doubled) == 20
    assert all(a != b for a, b in doubled)
    assert plan == plan_assignment(ITEMS, ["ana", "bob", "cy"], 0.2, seed=7)  # reproducible


@pytest.mark.parametrize(("reviewers", "overlap", "message"), [
    ([], 0.0, "at least one reviewer"),
    (["ana", " "], 0.0, "blank names"),
    (["ana", "ana"], 0.2, "Each reviewer once"),
    (["ana", "bob"], 1.5, "from 0 to 1"),
    (["ana"], 0.2, "needs two reviewers"),
])
def test_an_assignment_that_cannot_work_is_a_sentence(reviewers, overlap, message):
    with pytest.raises(DataError, match=message):
        plan_assignment(ITEMS, reviewers, overlap)


def test_reviewer_alpha_on_the_overlap_matches_the_krippendorff_package():
    rng = np.random.default_rng(3)
    labels = {}
    for n in range(60):
        truth = rng.choice(["KEEP", "REJECT", "SPLIT"])
        said = {r: (truth if rng.random() < 0.75 else rng.choice(["KEEP", "REJECT", "SPLIT"]))
                for r in ("ana", "bob", "cy") if rng.random() < 0.8}
        labels[f"i{n}"] = said
    result = reviewer_agreement(labels)
    shared = {i: by for i, by in labels.items() if len(by) >= 2}
    codes = {"KEEP": 0, "REJECT": 1, "SPLIT": 2}
    matrix = np.array([[codes[by[r]] if r in by else np.nan for r in ("ana", "bob", "cy")]
                       for by in shared.values()], dtype=float).T
    assert result.n_items == len(shared)
    assert result.alpha.value == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-9)
    assert result.conflicts == [i for i, by in shared.items() if len(set(by.values())) > 1]
    assert result.kappa.critics == ["ana", "bob", "cy"]


def test_no_overlap_means_no_figure_and_a_reason():
    result = reviewer_agreement({"i1": {"ana": "KEEP"}, "i2": {"bob": "REJECT"}})
    assert (result.n_items, result.alpha.value, result.conflicts) == (0, None, [])
    assert result.alpha.reason


def test_storage_keeps_one_assignment_per_run_and_each_reviewers_own_label(db):
    run = seed_run(db, 6)
    items = [item.id for item in run.items]
    plan = plan_assignment(items, ["ana", "bob"], 0.5, seed=1)
    assert save_assignment(db, run.run_id, plan) == 9
    assert assignment(db, run.run_id) == plan
    with pytest.raises(StorageError, match="already has an assignment"):
        save_assignment(db, run.run_id, plan)
    with pytest.raises(StorageError, match="no item 'nope'"):
        clear_assignment(db, run.run_id)
        save_assignment(db, run.run_id, {"nope": ["ana"]})
    assert assignment(db, run.run_id) == {}  # the refused one wrote nothing
    save_assignment(db, run.run_id, plan)

    shared = next(item for item, names in plan.items() if len(names) == 2)
    add_override(db, run.run_id, shared, "KEEP", "", "ana", blind=True)
    add_override(db, run.run_id, shared, "SPLIT", "after the critics", "ana")
    add_override(db, run.run_id, shared, "REJECT", "", "bob")
    add_override(db, run.run_id, shared, "MERGE", "settled", "lead", adjudication=True)
    # Each reviewer's own label: ana's blind one, bob's latest; the lead's is not a review.
    assert reviewer_labels(db, run.run_id)[shared] == {"ana": "KEEP", "bob": "REJECT"}
    assert adjudicated_items(db, run.run_id) == {shared}
    final = final_labels(db, run.run_id).set_index("item_id")
    assert final.loc[shared, "final_label"] == "MERGE"  # the adjudication decides
    progress = {p["reviewer"]: p for p in reviewer_progress(db, run.run_id)}
    assert progress["ana"]["labelled"] == 1 and progress["bob"]["labelled"] == 1
    assert progress["ana"]["assigned"] + progress["bob"]["assigned"] == 9
    mine, total = review_table(db, run.run_id, ReviewFilter(assigned_to="bob"), limit=None)
    assert total == progress["bob"]["assigned"]
    assert set(mine["item_id"]) == {i for i, names in plan.items() if "bob" in names}


def test_the_team_page_assigns_shows_the_conflict_and_records_the_adjudication(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"team{run_id}."
    at = open_page("team", query={"run": str(run_id)})
    no_exception(at)
    at.text_area[0].set_value("ana\nbob")
    at.slider[0].set_value(100)  # every item to both: the conflict below is certain
    at.button(key=f"FormSubmitter:{k}assign-Assign").click().run()
    no_exception(at)
    plan = assignment(open_db(path), run_id)
    contested, total = review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True), limit=None)
    assert set(plan) == set(contested["item_id"]) and len(plan) == total
    assert all(sorted(names) == ["ana", "bob"] for names in plan.values())

    item = str(contested["item_id"].iloc[0])
    db = open_db(path)
    add_override(db, run_id, item, "KEEP", "", "ana")
    add_override(db, run_id, item, "REJECT", "", "bob")
    at.run()
    no_exception(at)
    assert at.selectbox(key=k + "conflict").value == item
    at.radio(key=f"{k}label.{item}").set_value("REJECT").run()
    at.text_input(key=k + "lead").set_value("lea")
    at.button(key=k + "adjudicate_go").click().run()
    no_exception(at)
    assert adjudicated_items(open_db(path), run_id) == {item}
    assert final_labels(open_db(path), run_id).set_index("item_id").loc[
        item, "final_label"] == "REJECT"

    # On Review, ana's list is her assignment once she asks for it (the switch never turns
    # itself on: issue 23), and the page says so.
    review = open_page("review", query={"run": str(run_id)})
    review.text_input(key=f"rv{run_id}.reviewer").set_value("ana").run()
    assert not review.toggle(key=f"rv{run_id}.mine").value
    review.toggle(key=f"rv{run_id}.mine").set_value(True).run()
    assert any("only the items assigned to ana" in c.value for c in review.caption)
    assert f"{total:,} items match" in " ".join(c.value for c in review.caption)
