"""Team adjudication asks for what Review asks for (issue 23, major defect 3): a lead's SPLIT
needs the new child classes and keeps them, a MERGE its target, and the curated taxonomy shows
the lead's children; Review lists what "needs a decision" and preselects nothing Save refuses."""

from __future__ import annotations

import pathlib

from judging.runs.stored.stored_run import run_decisions
from judging.runs.stored.taxonomy import curated_taxonomy
from storage.db import open_db
from storage.reviewing.assignments import adjudicated_items, save_assignment
from storage.reviewing.decisions import NEEDS_DECISION
from storage.reviewing.overrides import add_override
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table
from tests.test_app_smoke import all_text, no_exception, open_page, save_button


def _conflict(path: pathlib.Path, run_id: int, *, split_last: bool = False) -> str:
    """An item two reviewers labelled differently: ana split it, with children; bob kept it
    (after her, or before her with `split_last`)."""
    db = open_db(path)
    item = str(review_table(db, run_id, sort="item", limit=1)[0]["item_id"].iloc[0])
    save_assignment(db, run_id, {item: ["ana", "bob"]})
    if split_last:
        add_override(db, run_id, item, "KEEP", "one kind", "bob")
    add_override(db, run_id, item, "SPLIT", "two kinds", "ana", children=["Trail", "Road"])
    if not split_last:
        add_override(db, run_id, item, "KEEP", "one kind", "bob")
    return item


def test_a_lead_s_split_needs_children_keeps_them_and_the_taxonomy_shows_them(demo_db):
    path, run_id = demo_db
    item = _conflict(path, run_id)
    k = f"team{run_id}."
    submit = k + "adjudicate_go"
    at = open_page("team", query={"run": str(run_id)})
    no_exception(at)
    assert at.selectbox(key=k + "conflict").value == item
    # Each reviewer's decision with its children, for the lead to settle between.
    assert "Trail, Road" in set(at.dataframe[-1].value["children"])

    at.radio(key=f"{k}label.{item}").set_value("SPLIT").run()
    # Prefilled from the latest decision (bob's KEEP: no children), so a bare SPLIT is refused.
    assert at.text_area(key=f"{k}children.{item}").value == ""
    at.text_input(key=k + "lead").set_value("lea")
    at.button(key=submit).click().run()
    no_exception(at)
    assert any("A SPLIT needs the new child classes" in e.value for e in at.error)
    assert adjudicated_items(open_db(path), run_id) == set()  # refused: nothing written

    at.text_area(key=f"{k}children.{item}").set_value("Trail running\nRoad running")
    at.button(key=submit).click().run()
    no_exception(at)
    assert adjudicated_items(open_db(path), run_id) == {item}
    saved = item_detail(open_db(path), run_id, item)["overrides"][-1]
    assert (saved["label"], saved["children"], saved["reviewer"]) == \
        ("SPLIT", ["Trail running", "Road running"], "lea")
    taxonomy = curated_taxonomy(open_db(path), run_id)
    (split,) = [d for d in taxonomy.split if d.item_id == item]
    assert (split.children, split.reviewer) == (("Trail running", "Road running"), "lea")


def test_a_lead_who_sides_with_a_split_keeps_the_reviewer_s_children(demo_db):
    path, run_id = demo_db
    item = _conflict(path, run_id, split_last=True)
    k = f"team{run_id}."
    at = open_page("team", query={"run": str(run_id)})
    at.radio(key=f"{k}label.{item}").set_value("SPLIT").run()
    assert at.text_area(key=f"{k}children.{item}").value == "Trail\nRoad"
    at.text_input(key=k + "lead").set_value("lea")
    at.button(key=k + "adjudicate_go").click().run()
    no_exception(at)
    saved = item_detail(open_db(path), run_id, item)["overrides"][-1]
    assert (saved["label"], saved["children"]) == ("SPLIT", ["Trail", "Road"])
    assert any(d.item_id == item and d.children == ("Trail", "Road")
               for d in curated_taxonomy(open_db(path), run_id).split)


def test_a_lead_s_merge_needs_its_target(demo_db):
    path, run_id = demo_db
    item = _conflict(path, run_id)
    k = f"team{run_id}."
    at = open_page("team", query={"run": str(run_id)})
    at.radio(key=f"{k}label.{item}").set_value("MERGE").run()
    at.text_input(key=k + "lead").set_value("lea")
    at.button(key=k + "adjudicate_go").click().run()
    no_exception(at)
    assert any("needs the class to merge into" in e.value for e in at.error)
    picker = at.selectbox(key=f"{k}merge.{item}")
    target = next(o for o in picker.options
                  if o != item_detail(open_db(path), run_id, item)["fields"]["candidate_class"])
    picker.set_value(target)
    at.button(key=k + "adjudicate_go").click().run()
    no_exception(at)
    saved = item_detail(open_db(path), run_id, item)["overrides"][-1]
    assert (saved["label"], saved["merge_into"], saved["children"]) == ("MERGE", target, [])
    assert any(d.item_id == item and d.merge_into == target
               for d in curated_taxonomy(open_db(path), run_id).merged)


def test_review_lists_the_items_that_need_a_decision(demo_db):
    path, run_id = demo_db
    k = f"rv{run_id}."
    final = run_decisions(open_db(path), run_id)
    open_ids = list(final.loc[final["status"] == NEEDS_DECISION, "item_id"])
    assert open_ids  # the demo's critics split and merge, and never name children or targets
    taxonomy = curated_taxonomy(open_db(path), run_id)
    assert len(taxonomy.needs_decision) == len(open_ids)
    assert not [d for d in taxonomy.split if not d.children]  # never counted as decided

    at = open_page("review", query={"run": str(run_id)})
    at.text_input(key=k + "reviewer").set_value("ana").run()
    at.toggle(key=k + "needs").set_value(True).run()
    no_exception(at)
    assert at.toggle(key=k + "disagree").disabled  # every such item, contested or not
    assert f"{len(open_ids):,} items match" in " ".join(c.value for c in at.caption)
    item = at.query_params["item"]
    assert item in open_ids
    # The item's unactionable consensus is named, and not preselected for Save to refuse.
    assert "**Needs a decision**:" in all_text(at)
    assert at.radio(key=f"{k}label.{item}").value is None


def test_reopening_a_split_shows_its_children_and_a_merge_its_target(demo_db):
    path, run_id = demo_db
    db = open_db(path)
    # The first two items of Review's list as it opens (contested first).
    first, second = [str(i) for i in review_table(db, run_id, ReviewFilter(disagreements_only=True), limit=2)[0]["item_id"]]
    classes = [item_detail(db, run_id, i)["fields"]["candidate_class"] for i in (first, second)]
    add_override(db, run_id, first, "SPLIT", "", "ana", children=["Trail", "Road"])
    add_override(db, run_id, second, "MERGE", "", "ana", merge_into=classes[0])
    k = f"rv{run_id}."
    # Decided items are opened by asking for them (a link; Save hands on undecided ones).
    at = open_page("review", query={"run": str(run_id), "item": first})
    at.text_input(key=k + "reviewer").set_value("ana").run()
    no_exception(at)
    assert at.query_params["item"] == first
    assert at.radio(key=f"{k}label.{first}").value == "SPLIT"
    assert at.text_area(key=f"{k}children.{first}").value == "Trail\nRoad"
    save_button(at).click().run()
    no_exception(at)  # saved again as it stands: nothing refused
    assert item_detail(open_db(path), run_id, first)["overrides"][-1]["children"] == \
        ["Trail", "Road"]
    # The save opened the next undecided item (the third); Previous asks for the second.
    at.button(key=k + "previous").click().run()
    assert at.query_params["item"] == second
    assert at.selectbox(key=f"{k}merge.{second}").value == classes[0]


def test_two_splits_into_different_classes_are_a_conflict_the_same_classes_are_not(demo_db):
    """Comparing labels alone, two SPLITs agree and the later one's children silently won; a
    curation decision is its label with its new classes (or a merge's target)."""
    path, run_id = demo_db
    db = open_db(path)
    first, second = (str(i) for i in review_table(db, run_id, sort="item", limit=2)[0]["item_id"])
    save_assignment(db, run_id, {first: ["ana", "bob"], second: ["ana", "bob"]})
    add_override(db, run_id, first, "SPLIT", "", "ana", children=["Trail", "Road"])
    add_override(db, run_id, first, "SPLIT", "", "bob", children=["Road", "Path"])
    add_override(db, run_id, second, "SPLIT", "", "ana", children=["Trail", "Road"])
    add_override(db, run_id, second, "SPLIT", "", "bob", children=["Road", "Trail"])
    db.close()

    k = f"team{run_id}."
    at = open_page("team", query={"run": str(run_id)})
    no_exception(at)
    assert at.selectbox(key=k + "conflict").options == [first]
    conflicts = next(d.value for d in at.dataframe if "item" in d.value.columns)
    row = conflicts.set_index("item").loc[first]
    assert (row["ana"], row["bob"]) == ("SPLIT into Road; Trail", "SPLIT into Path; Road")
    assert "1 item where reviewers disagree" in all_text(at)


def test_adjudicate_appears_with_a_picked_decision_and_its_first_click_saves_it(demo_db):
    path, run_id = demo_db
    item = _conflict(path, run_id)
    k = f"team{run_id}."
    at = open_page("team", query={"run": str(run_id)})
    no_exception(at)
    # Nothing preselected, and so no button that would save nothing: a sentence says why.
    assert at.radio(key=f"{k}label.{item}").value is None
    assert not [b for b in at.button if b.key == k + "adjudicate_go"]
    assert any("Adjudicate** appears once a decision is picked" in c.value for c in at.caption)
    at.radio(key=f"{k}label.{item}").set_value("KEEP").run()
    at.text_input(key=k + "lead").set_value("lea")
    at.button(key=k + "adjudicate_go").click().run()  # the first click
    no_exception(at)
    assert adjudicated_items(open_db(path), run_id) == {item}
    saved = item_detail(open_db(path), run_id, item)["overrides"][-1]
    assert (saved["label"], saved["reviewer"]) == ("KEEP", "lea")
