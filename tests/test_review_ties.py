"""Ties are visible (issue 14 item 6): the review table marks them and filters to them, the item
panel says a tie rule decided and how, Agreement counts them by the label the rule chose and
links to them; with no priority set the note never calls the pick "the most cautious"."""

from __future__ import annotations

import pathlib

from storage.db import open_db
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, item_position, review_table, tie_breaks
from tests.fixtures_app import shown
from tests.test_app_smoke import no_exception, open_page


def _tied(path: pathlib.Path, run_id: int) -> dict[str, str | None]:
    """item id -> consensus of the run's tied items, read straight from the consensus table."""
    db = open_db(path)
    return {str(i): c for i, c in db.execute(
        "SELECT item_id, consensus FROM consensus WHERE run_id = ? AND tie", [run_id])}


def test_ties_only_is_exactly_the_tied_items(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    tied = _tied(path, run_id)
    assert len(tied) >= 2, "the demo run has tied votes"
    frame, total = review_table(open_db(path), run_id, ReviewFilter(ties_only=True), limit=None)
    assert total == len(tied)
    assert set(frame["item_id"]) == set(tied)
    assert frame["tie"].all()
    # The position of an item agrees with the filtered table (the page walks it in order).
    last = str(frame["item_id"].iloc[-1])
    assert item_position(open_db(path), run_id, last, ReviewFilter(ties_only=True)) == total - 1
    untied = next(str(i) for i in review_table(open_db(path), run_id, limit=None)[0]["item_id"]
                  if str(i) not in tied)
    assert item_position(open_db(path), run_id, untied, ReviewFilter(ties_only=True)) is None


def test_tie_breaks_count_the_label_the_rule_chose(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    tied = _tied(path, run_id)
    breaks = tie_breaks(open_db(path), run_id)
    assert sum(breaks.values()) == len(tied)
    for label, n in breaks.items():
        assert n == sum(1 for c in tied.values() if c == label)
    assert list(breaks.values()) == sorted(breaks.values(), reverse=True)


def test_the_table_marks_ties_and_the_item_panel_says_how_it_was_broken(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    tied = sorted(_tied(path, run_id))
    at = open_page("review", query={"run": str(run_id), "item": tied[0]})
    no_exception(at)
    table = at.dataframe[0].value
    marked = set(table.loc[table["tie"], "item_id"])
    assert marked and marked <= set(tied)
    assert not (set(table.loc[~table["tie"], "item_id"]) & set(tied))
    line = " ".join(t.value for t in at.text)
    assert "tied vote: the panel's tie rule decided" in line
    note = item_detail(open_db(path), run_id, tied[0])["consensus"]["note"]
    assert "tie between" in note and note in line  # how: the rule and the label it took


def test_tied_votes_only_filters_the_table_and_is_shared_in_the_url(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    tied = _tied(path, run_id)
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id)})
    at.toggle(key=k + "ties").set_value(True).run()
    no_exception(at)
    assert set(at.dataframe[0].value["item_id"]) == set(tied)
    assert at.query_params["item"] in tied  # the open item is one of them
    assert at.query_params["ties"] == "1"
    at.toggle(key=k + "ties").set_value(False).run()
    assert "ties" not in at.query_params
    # A link with ties=1 (Agreement's "Review the tied items") opens the filter on.
    at = open_page("review", query={"run": str(run_id), "ties": "1"})
    no_exception(at)
    assert at.toggle(key=k + "ties").value is True
    assert set(at.dataframe[0].value["item_id"]) == set(tied)


def test_agreement_counts_ties_by_the_chosen_label_and_links_to_them(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    breaks = tie_breaks(open_db(path), run_id)
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    captions = [shown(c.value) for c in at.caption]
    (line,) = [c for c in captions if "had a tied vote" in c]
    total = sum(breaks.values())
    assert line.startswith(f"{total} items had a tied vote, decided by the panel's tie rule")
    for label, n in breaks.items():
        assert f"{label} for {n}" in line
    assert "priority (REJECT, SPLIT, MERGE, KEEP)" in line  # the demo panel's rule, in words
    (link,) = [p for p in at.get("page_link") if "tied items" in p.proto.label]
    assert "ties=1" in link.proto.query_string and f"run={run_id}" in link.proto.query_string


def test_with_no_priority_a_tie_is_not_called_cautious(
    hostile_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = hostile_db
    tied = sorted(_tied(path, run_id))
    at = open_page("review", query={"run": str(run_id), "item": tied[0]})
    no_exception(at)
    at.toggle(key=f"rv{run_id}.disagree").set_value(False).run()
    line = " ".join(t.value for t in at.text)
    assert "no priority set, took" in line and "(first in the scale's order)" in line
    assert "cautious" not in line
    agreement = open_page("agreement", query={"run": str(run_id)})
    text = " ".join(shown(c.value) for c in agreement.caption)
    assert "No tie priority is set" in text and "cautious first" in text  # advice, not a claim
