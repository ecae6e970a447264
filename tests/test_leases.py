"""Leases on Review items (issue 23, "What to build" 4): the item a reviewer has open is theirs
for a while, so two reviewers walking one list are not handed the same item; a lease expires by
itself; Team shows each reviewer's pace (labels per hour, median seconds per item)."""

from __future__ import annotations

import pathlib

import pytest
from streamlit.testing.v1 import AppTest

from storage.db import StorageError, open_db
from storage.reviewing.assignments import PACE_BREAK_SECONDS, reviewer_pace
from storage.reviewing.leases import LEASE_SECONDS, held_by_others, release_lease, take_lease
from storage.reviewing.overrides import add_override, override_history
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import review_table
from tests.test_app_smoke import APP, all_text, no_exception, open_page, save_button

T0 = "2026-11-26T10:00:00.000000+00:00"


def _later(seconds: float) -> str:
    import datetime as dt

    return (dt.datetime.fromisoformat(T0) + dt.timedelta(seconds=seconds)).isoformat(
        timespec="microseconds")


def test_a_lease_is_its_holders_until_it_expires(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    db = open_db(path)
    first, second = [str(i) for i in review_table(db, run_id, limit=2)[0]["item_id"]]
    assert take_lease(db, run_id, first, "ana", at=T0).reviewer == "ana"
    # Bob cannot take it while it runs; Ana renews it.
    assert take_lease(db, run_id, first, "bob", at=_later(60)).reviewer == "ana"
    assert held_by_others(db, run_id, [first, second], "bob", at=_later(60)).keys() == {first}
    assert held_by_others(db, run_id, [first, second], "ana", at=_later(60)) == {}
    renewed = take_lease(db, run_id, first, "ana", at=_later(LEASE_SECONDS - 1))
    assert renewed.expires_at == _later(2 * LEASE_SECONDS - 1)
    # Expired (a closed tab): Bob gets it.
    late = _later(2 * LEASE_SECONDS)
    assert held_by_others(db, run_id, [first], "bob", at=late) == {}
    assert take_lease(db, run_id, first, "bob", at=late).reviewer == "bob"
    # One lease per reviewer and run: opening another item frees the last one.
    take_lease(db, run_id, second, "bob", at=late)
    assert held_by_others(db, run_id, [first, second], "ana", at=late).keys() == {second}
    assert release_lease(db, run_id, "bob") == 1
    assert held_by_others(db, run_id, [first, second], "ana", at=late) == {}
    with pytest.raises(StorageError, match="Name the reviewer"):
        take_lease(db, run_id, first, "  ")


def _open_as(reviewer: str, run_id: int) -> AppTest:
    """Review opened by a reviewer this browser knows (the name its cookie gives back)."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["run"] = str(run_id)
    at.session_state["reviewer"] = reviewer
    at.switch_page("pages/review.py")
    return at.run()


def test_two_reviewers_on_one_list_are_never_handed_the_same_item(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    order = [str(i) for i in review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True), limit=4)[0]["item_id"]]
    ana = _open_as("ana", run_id)
    assert ana.query_params["item"] == order[0]
    # Bob opens the same list: the first item is Ana's, he gets the next one.
    bob = _open_as("bob", run_id)
    no_exception(bob)
    assert bob.query_params["item"] == order[1]
    # Ana saves: her next item is not Bob's open one.
    ana.radio(key=f"{k}label.{order[0]}").set_value("KEEP")
    save_button(ana).click().run()
    no_exception(ana)
    assert ana.query_params["item"] == order[2]
    # Bob walks back to Ana's first item (decided, hers no more: free) and then to her open one.
    bob.button(key=k + "previous").click().run()
    assert bob.query_params["item"] == order[0]
    assert not bob.warning or not any("has this item open" in w.value for w in bob.warning)
    bob.button(key=k + "next").click().run()  # order[1] is free again (Bob left it)
    assert bob.query_params["item"] == order[1]
    bob.button(key=k + "next").click().run()  # order[2] is Ana's: passed over
    assert bob.query_params["item"] == order[3]


def test_a_reviewer_trailing_a_teammate_is_never_handed_what_the_teammate_decided(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    order = [str(i) for i in review_table(open_db(path), run_id, ReviewFilter(
        disagreements_only=True), limit=6)[0]["item_id"]]
    ana, bob = _open_as("ana", run_id), _open_as("bob", run_id)
    assert (ana.query_params["item"], bob.query_params["item"]) == (order[0], order[1])
    # Ana runs ahead while Bob reads his item: she decides 0, 2 and 3.
    for here, following in ((order[0], order[2]), (order[2], order[3]), (order[3], order[4])):
        ana.radio(key=f"{k}label.{here}").set_value("KEEP")
        save_button(ana).click().run()
        assert ana.query_params["item"] == following
    # Bob saves: his next item is neither one Ana decided nor the one she has open.
    bob.radio(key=f"{k}label.{order[1]}").set_value("REJECT")
    save_button(bob).click().run()
    no_exception(bob)
    assert bob.query_params["item"] == order[5]
    decided = [o["item_id"] for o in open_db(path).query(
        "SELECT item_id FROM overrides WHERE run_id = ?", [run_id])]
    assert sorted(decided) == sorted(order[:4])  # each once


def test_an_item_someone_else_has_open_says_who_and_cannot_be_saved(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    first = str(review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True), limit=1)[0]["item_id"][0])
    take_lease(open_db(path), run_id, first, "ana")
    bob = open_page("review", query={"run": str(run_id), "item": first})
    bob.text_input(key=k + "reviewer").set_value("bob").run()
    no_exception(bob)
    assert bob.query_params["item"] == first  # a link opens its item, held or not
    assert any("ana has this item open" in w.value for w in bob.warning)
    save = save_button(bob)
    assert save.disabled
    assert override_history(open_db(path), run_id, first) == []


def test_team_shows_each_reviewers_pace(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    db = open_db(path)
    items = [str(i) for i in review_table(db, run_id, sort="item", limit=6)[0]["item_id"]]
    # Ana: 4 labels 20, 40 and 30 s apart, then a break; Bob: one label (nothing to time).
    stamps = [0, 20, 60, 90, 90 + PACE_BREAK_SECONDS + 1]
    for item, at in zip(items, stamps):  # (overrides are append-only: written with a time)
        db.execute("INSERT INTO overrides (run_id, item_id, label, note, reviewer, created_at)"
                   " VALUES (?, ?, 'KEEP', '', 'ana', ?)", [run_id, item, _later(at)])
    add_override(db, run_id, items[5], "REJECT", "", "bob")
    pace = {p["reviewer"]: p for p in reviewer_pace(db, run_id)}
    assert pace["ana"]["labels"] == 5
    assert pace["ana"]["median_seconds"] == 30
    assert pace["ana"]["labels_per_hour"] == pytest.approx(3 / 90 * 3600)
    assert (pace["bob"]["labels"], pace["bob"]["median_seconds"]) == (1, None)

    at = open_page("team", query={"run": str(run_id)})
    no_exception(at)
    table = next(f.value for f in at.dataframe if "labels per hour" in f.value.columns)
    ana = table[table["reviewer"] == "ana"].iloc[0]
    assert (ana["labels"], ana["median seconds per item"]) == (5, 30)
    assert "Pace" in all_text(at)
