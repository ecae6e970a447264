"""AppTest: a blind first pass on Review (issue 12 part 2). The critics' labels, reasons, the
consensus and the table's label columns stay hidden until the reviewer has saved their own
label; that blind label is stored as such before the reveal, kept when the reviewer revises,
and is the one Agreement compares the critics with."""

from __future__ import annotations

import pathlib

from storage.db import open_db
from storage.reviewing.overrides import human_labels, override_history
from storage.reviewing.review_queue import item_detail
from tests.test_app_smoke import no_exception, open_page, save_button

REVEAL = "Save and show the critics"
REVISE = "Save and go to the next item"


def _page_text(at) -> str:
    parts = [m.value for m in at.markdown] + [t.value for t in at.text] + \
        [c.value for c in at.caption] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def test_the_critics_stay_hidden_until_the_blind_label_is_saved(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id), "blind": "1"})
    no_exception(at)
    assert at.toggle(key=k + "blind").value  # a shared link opens in blind mode
    at.text_input(key=k + "reviewer").set_value("carla").run()
    item = at.query_params["item"]
    detail = item_detail(open_db(path), run_id, item)
    reasons = [v["reasoning"] for v in detail["verdicts"] if v["reasoning"]]
    assert reasons
    text = _page_text(at)
    assert not any(reason in text for reason in reasons)
    assert "consensus" not in " ".join(t.value for t in at.text)  # no consensus line
    table = at.dataframe[0].value
    assert list(table.columns) == ["item_id", "preview", "overridden"]  # no label column
    blind_radio = at.radio(key=f"{k}label.{item}.blind")
    assert blind_radio.value is None  # no label preselected: the consensus would be a hint

    # No label picked: refused with a sentence, nothing stored.
    save_button(at, REVEAL).click().run()
    assert any("Pick a label" in e.value for e in at.error)
    assert override_history(open_db(path), run_id, item) == []

    # KEEP and REJECT: a split or a merge would also need its children or its target.
    mine, revised = "KEEP", "REJECT"
    at.radio(key=f"{k}label.{item}.blind").set_value(mine)
    at.text_area(key=f"{k}note.{item}.blind").set_value("my own reading")
    save_button(at, REVEAL).click().run()
    no_exception(at)
    (stored,) = override_history(open_db(path), run_id, item)
    assert (stored["label"], stored["reviewer"], stored["blind"]) == (mine, "carla", True)
    # Revealed on the same item: the consensus line and the critics' reasons are shown now.
    assert at.query_params["item"] == item
    text = _page_text(at)
    assert any(reason in text for reason in reasons)
    assert any(t.value.startswith("consensus ") for t in at.text)

    # Convinced by the critics: the revision is the final label, the blind one still counts.
    at.radio(key=f"{k}label.{item}").set_value(revised)
    save_button(at, REVISE).click().run()
    no_exception(at)
    history = override_history(open_db(path), run_id, item)
    assert [(h["label"], h["blind"]) for h in history] == [(mine, True), (revised, False)]
    assert item_detail(open_db(path), run_id, item)["final_label"] == revised
    assert human_labels(open_db(path), run_id)[item] == mine
    assert at.query_params["item"] != item  # moved on, and the next item is hidden again
    assert at.radio(key=f"{k}label.{at.query_params['item']}.blind").value is None


def test_keep_my_blind_label_moves_on_without_a_second_override(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id), "blind": "1"})
    item = at.query_params["item"]
    at.text_input(key=k + "reviewer").set_value("dan").run()
    at.radio(key=f"{k}label.{item}.blind").set_value("KEEP")
    save_button(at, REVEAL).click().run()
    at.button(key=f"{k}keep.{item}").click().run()
    no_exception(at)
    assert at.query_params["item"] != item
    assert [h["label"] for h in override_history(open_db(path), run_id, item)] == ["KEEP"]


def test_without_blind_mode_nothing_changes(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id)})
    assert not at.toggle(key=k + "blind").value
    at.text_input(key=k + "reviewer").set_value("carla").run()
    item = at.query_params["item"]
    assert at.radio(key=f"{k}label.{item}").value is not None  # the final label, preselected
    assert "consensus" in list(at.dataframe[0].value.columns)
