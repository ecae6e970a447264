"""AppTest: a link naming an item (`/review?run=R&item=I`) opens that item on Review, whatever
filter hid it, and says which filters it turned off (pages/ui/review/review_link.py). Real demo run in a
real SQLite file, judged by the simulator on 127.0.0.1."""

from __future__ import annotations

import pathlib

from storage.db import open_db
from tests.fixtures_app import shown
from tests.test_app_smoke import all_text, no_exception, open_page


def _calm_item(path: pathlib.Path, run_id: int) -> str:
    """An item every critic agreed on (so "Disagreements only" leaves it out)."""
    db = open_db(path)
    row = db.execute("SELECT item_id FROM consensus WHERE run_id = ? AND NOT disagreement"
                     " ORDER BY position DESC LIMIT 1", [run_id]).fetchone()
    db.close()
    return str(row[0])


def test_a_same_tab_link_opens_its_item_in_a_run_visited_before(
        demo_db: tuple[pathlib.Path, int]) -> None:
    # Team's "Open X on Review" is a same-tab link: the session has seen this run before, with
    # its own filters and open item. It used to open the item left open then.
    path, run_id = demo_db
    k = f"rv{run_id}."
    calm = _calm_item(path, run_id)
    at = open_page("review", query={"run": str(run_id)})
    at.selectbox(key=k + "consensus").set_value("SPLIT").run()
    no_exception(at)
    before = at.query_params["item"]
    assert before != calm

    at.switch_page("pages/team.py")
    at.run()
    at.query_params["item"] = calm
    at.switch_page("pages/review.py")
    at.run()
    no_exception(at)
    assert at.query_params["item"] == calm
    assert any(f"Opened {calm} from the link: " in shown(i.value) for i in at.info)
    assert at.toggle(key=k + "disagree").value is False
    assert at.selectbox(key=k + "consensus").value == "(any)"
    # The item's own heading is drawn, not only the URL.
    assert calm in shown(all_text(at))

    # The page's own moves afterwards are no link: the user's filters stay as set.
    at.toggle(key=k + "disagree").set_value(True).run()
    no_exception(at)
    assert at.toggle(key=k + "disagree").value is True
    assert at.query_params["item"] != calm
    assert not any("from the link" in shown(i.value) for i in at.info)


def test_a_link_to_an_item_in_the_list_changes_no_filter(
        demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    db = open_db(path)
    (contested,) = db.execute("SELECT item_id FROM consensus WHERE run_id = ? AND disagreement"
                              " ORDER BY position DESC LIMIT 1", [run_id]).fetchone()
    db.close()
    at = open_page("review", query={"run": str(run_id), "item": contested})
    no_exception(at)
    assert at.query_params["item"] == contested
    assert at.toggle(key=f"rv{run_id}.disagree").value is True
    assert not any("from the link" in shown(i.value) for i in at.info)


def test_a_link_to_an_item_the_run_does_not_have_says_so(
        demo_db: tuple[pathlib.Path, int]) -> None:
    _, run_id = demo_db
    at = open_page("review", query={"run": str(run_id), "item": "NO-SUCH-ITEM"})
    no_exception(at)
    assert any(f"Run #{run_id} has no item NO-SUCH-ITEM" in shown(w.value) for w in at.warning)
    assert at.query_params["item"] != "NO-SUCH-ITEM"  # the list's first item opened
