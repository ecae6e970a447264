"""Browser tests of the Review loop from the keyboard (issue 23, "What to build" 4), and of a
blind first pass that is blind (major defect 2), in Chromium against the real app.

A review is two key presses (a number for the label, Ctrl+Enter to save), after which the next
item is open with its decision focused: no mouse, and no Tab walk back to the decision. J, K
and S walk the list, N puts the cursor in the note, Esc takes it out; the keys are written on
the page. The reviewer's name survives a reload and a deep link.

Every wait is on what is then asserted (the heading of the item, the focused element).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from storage.db import open_db
from storage.reviewing.overrides import override_history
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table
from tests.fixtures_app import BROWSER_TIMEOUT_MS, name_the_reviewer, running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")  # the demo panel's scale, keys 1 to 4

# The focused element is the decision (the radio group inside the decision's container).
_DECISION_FOCUSED = """() => {
  const active = document.activeElement;
  return !!active && active.getAttribute('role') === 'radiogroup'
    && !!active.closest('[class*="st-key-rv"][class*="-decision"]');
}"""
_NOTE_FOCUSED = """() => {
  const active = document.activeElement;
  return !!active && active.tagName === 'TEXTAREA'
    && active.getAttribute('aria-label') === 'Note (why)';
}"""


def _expect() -> Any:
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    return expect


class Keys:
    """The keyboard, counting every press (a chord such as Ctrl+Enter is one press)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.pressed: list[str] = []

    def press(self, key: str) -> None:
        self.pressed.append(key)
        self.page.keyboard.press(key)


def test_a_review_is_two_key_presses_and_the_next_decision_has_the_focus(
    app_page: Any, demo_db: tuple[pathlib.Path, int],
) -> None:
    expect = _expect()
    path, run_id = demo_db
    walk = [str(i) for i in review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True), limit=6)[0]["item_id"]]
    with running_app(path) as app:
        page = app_page
        page.goto(f"{app['url']}/review?run={run_id}")
        main = page.get_by_test_id("stMain")

        def open_item_is(item: str) -> None:
            expect(main.get_by_role("heading", name=f"Item {item}", exact=True)).to_be_visible()
            settled(page)
            page.wait_for_function(_DECISION_FOCUSED)

        expect(main.get_by_role("heading", name=f"Item {walk[0]}", exact=True)).to_be_visible()
        name_the_reviewer(page, "dana")  # once, before the loop (a new browser has no name)
        # The keys are written on the page, the buttons carry theirs.
        expect(main.get_by_text("Keys:", exact=False)).to_contain_text("1 KEEP")
        expect(main.get_by_text("Keys:", exact=False)).to_contain_text("save and next")
        for name, key in (("Previous", "K"), ("Next", "J"), ("Skip", "S")):
            expect(main.get_by_role("button", name=f"{name} Shortcut {key}", exact=True)) \
                .to_be_visible()
        open_item_is(walk[0])

        keys = Keys(page)
        for item in walk[:3]:
            open_item_is(item)
            before = len(keys.pressed)
            keys.press("1")  # KEEP
            keys.press("Control+Enter")
            expect(main.get_by_text(f"Saved KEEP for {item}.")).to_be_visible()
            assert len(keys.pressed) - before == 2
        open_item_is(walk[3])
        assert len(keys.pressed) == 6  # three reviews, two presses each

        keys.press("k")  # previous: the last item decided
        open_item_is(walk[2])
        keys.press("s")  # skip: the next one nobody has decided
        open_item_is(walk[3])
        keys.press("j")  # next
        open_item_is(walk[4])

        # N: the note, in one key; typing there is typing (J is a letter, not "next").
        keys.press("n")
        page.wait_for_function(_NOTE_FOCUSED)
        page.keyboard.type("just a judgement call")
        keys.press("Escape")
        page.wait_for_function(_DECISION_FOCUSED)
        expect(main.get_by_role("heading", name=f"Item {walk[4]}", exact=True)).to_be_visible()
        keys.press("2")  # REJECT
        keys.press("Control+Enter")
        expect(main.get_by_text(f"Saved REJECT for {walk[4]}.")).to_be_visible()
        open_item_is(walk[5])

        # The name stays: on a reload, and in a deep link opened in another tab.
        page.reload()
        expect(main.get_by_role("textbox", name="Reviewer")).to_have_value("dana")
        other = page.context.new_page()
        other.goto(f"{app['url']}/review?run={run_id}&item={walk[1]}")
        other_main = other.get_by_test_id("stMain")
        expect(other_main.get_by_role("heading", name=f"Item {walk[1]}", exact=True)) \
            .to_be_visible()
        expect(other_main.get_by_role("textbox", name="Reviewer")).to_have_value("dana")
        other.close()

    db = open_db(path)
    for item in walk[:3]:
        (saved,) = override_history(db, run_id, item)
        assert (saved["label"], saved["reviewer"]) == ("KEEP", "dana")
    assert override_history(db, run_id, walk[3]) == []  # walked over, not decided
    (noted,) = override_history(db, run_id, walk[4])
    assert (noted["label"], noted["note"]) == ("REJECT", "just a judgement call")


def test_in_blind_mode_no_text_reveals_the_gold_or_the_consensus_of_an_unreviewed_item(
    app_page: Any, demo_db: tuple[pathlib.Path, int],
) -> None:
    expect = _expect()
    path, run_id = demo_db
    with running_app(path) as app:
        page = app_page
        page.goto(f"{app['url']}/review?run={run_id}&blind=1")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_text("items match")).to_be_visible()
        name_the_reviewer(page, "carla")
        heading = main.get_by_role("heading", name="Item ")
        expect(heading).to_be_visible()
        item = heading.inner_text().removeprefix("Item ").strip()
        detail = item_detail(open_db(path), run_id, item)
        assert detail["gold"] in LABELS and detail["consensus"]["consensus"] in LABELS
        settled(page)

        # Every text of the page (the table's hidden cells included), but the labels offered
        # to choose from (the decision and its keys): no label of the scale anywhere.
        decision = main.locator('[class*="st-key-rv"][class*="-decision"]')
        expect(decision.get_by_test_id("stRadio")).to_be_visible()  # drawn before it is read
        settled(page)
        everything = main.text_content() or ""
        offered = decision.text_content() or ""
        shown = everything.replace(offered, "")
        assert [label for label in LABELS if label in shown] == [], [
            shown[max(0, shown.find(label) - 80):shown.find(label) + 40] for label in LABELS
            if label in shown]
        expect(main.get_by_text("gold label", exact=True)).to_have_count(0)
        # The filters that would tell what the critics said are not there at all.
        for name in ("Consensus", "Critic", "That critic's verdict", "Failures",
                     "Search items and reasons"):
            expect(main.get_by_label(name, exact=True)).to_have_count(0)
        for name in ("Disagreements only", "Tied votes only", "Filter per-item alpha"):
            expect(main.get_by_text(name, exact=True)).to_have_count(0)

        # The blind label, from the keyboard: then the critics and the gold are shown.
        page.wait_for_function(_DECISION_FOCUSED)
        page.keyboard.press(str(LABELS.index("KEEP") + 1))
        page.keyboard.press("Control+Enter")
        expect(main.get_by_text(f"Saved your blind label KEEP for {item}.")).to_be_visible()
        expect(main.get_by_text("gold label", exact=True)).to_be_visible()
        expect(main.get_by_text("consensus ", exact=False).first).to_be_visible()
    (saved,) = override_history(open_db(path), run_id, item)
    assert (saved["label"], saved["blind"], saved["reviewer"]) == ("KEEP", True, "carla")


_NOTE = 'textarea[aria-label="Note (why)"]'
# Two Ctrl+Enter key presses in one task of the page: both reach the server before the first
# save is drawn (pressed one after the other through Playwright, they were not).
_TWO_CTRL_ENTERS = """() => {
  for (const _ of [0, 1]) {
    document.activeElement.dispatchEvent(new KeyboardEvent("keydown", {
      key: "Enter", code: "Enter", ctrlKey: true, bubbles: true, cancelable: true}));
  }
}"""
_CHILDREN = 'textarea[aria-label^="If SPLIT"]'


def test_one_ctrl_enter_from_a_text_box_stores_one_decision_on_the_open_item(
    app_page: Any, demo_db: tuple[pathlib.Path, int],
) -> None:
    """Ctrl+Enter from the note, from a SPLIT's children and from the radio (once, and twice at
    once): each saves once, on the item open, and the next item opens with empty boxes (a text area in a form submits
    the form on Ctrl+Enter by itself: with Save's own shortcut, two saves were sent, the
    second onto the next item under its preselected label)."""
    expect = _expect()
    path, run_id = demo_db
    walk = [str(i) for i in review_table(open_db(path), run_id,
                                         ReviewFilter(disagreements_only=True), limit=6)[0]["item_id"]]
    with running_app(path) as app:
        page = app_page
        page.goto(f"{app['url']}/review?run={run_id}")
        main = page.get_by_test_id("stMain")
        decision = main.locator('[class*="st-key-rv"][class*="-decision"]')

        def picked(label: str) -> None:
            # A number key acts once the decision is drawn (it waits for it): the radio is
            # checked before the next key or click goes anywhere else.
            expect(decision.get_by_role("radio", name=label)).to_be_checked()

        def open_item_is(item: str) -> None:
            heading = main.get_by_role("heading", name=f"Item {item}", exact=True)
            # Counted, not "visible": while a run that replaced an interrupted one is under
            # way, the interrupted run's heading can stand beside the new one until it ends.
            expect(heading).to_have_count(1)
            settled(page)
            expect(heading).to_have_count(1)
            expect(heading.first).to_be_visible()
            page.wait_for_function(_DECISION_FOCUSED)
            # The boxes of the item now open are empty: nothing typed for the last one.
            expect(decision.locator(_NOTE)).to_have_value("")
            expect(decision.locator(_CHILDREN)).to_have_value("")

        expect(main.get_by_role("heading", name=f"Item {walk[0]}", exact=True)).to_be_visible()
        name_the_reviewer(page, "dana")
        open_item_is(walk[0])

        # From the note: 2 (REJECT), N, the note, Ctrl+Enter.
        page.keyboard.press("2")
        picked("REJECT")
        page.keyboard.press("n")
        page.wait_for_function(_NOTE_FOCUSED)
        page.keyboard.type("note 0")
        page.keyboard.press("Control+Enter")
        expect(main.get_by_text(f"Saved REJECT for {walk[0]}.")).to_be_visible()
        open_item_is(walk[1])

        # From a SPLIT's new child classes.
        page.keyboard.press("3")
        picked("SPLIT")
        decision.locator(_CHILDREN).click()
        page.keyboard.type("lamps")
        page.keyboard.press("Enter")
        page.keyboard.type("shades")
        page.keyboard.press("Control+Enter")
        expect(main.get_by_text(f"Saved SPLIT for {walk[1]}.")).to_be_visible()
        open_item_is(walk[2])

        # From the radio, after a note typed and left with Esc.
        page.keyboard.press("n")
        page.wait_for_function(_NOTE_FOCUSED)
        page.keyboard.type("note 2")
        page.keyboard.press("Escape")
        page.wait_for_function(_DECISION_FOCUSED)
        page.keyboard.press("1")
        picked("KEEP")
        page.keyboard.press("Control+Enter")
        expect(main.get_by_text(f"Saved KEEP for {walk[2]}.")).to_be_visible()
        open_item_is(walk[3])

        # Two saves sent at once (as a text area and Save's shortcut both sent them): the
        # second, made for the item just saved, is dropped (never recorded on the item opened
        # after it), and the list stays on that next item.
        page.keyboard.press("1")
        picked("KEEP")
        page.evaluate(_TWO_CTRL_ENTERS)
        open_item_is(walk[4])

        # One more round trip: every message the saves sent has been handled once it is drawn.
        page.keyboard.press("j")
        open_item_is(walk[5])

    rows = [(r["item_id"], r["label"], r["note"], r["reviewer"], r["children"])
            for r in open_db(path)["overrides"].rows_where("run_id = ?", [run_id],
                                                            order_by="id")]
    assert rows == [(walk[0], "REJECT", "note 0", "dana", None),
                    (walk[1], "SPLIT", "", "dana", '["lamps", "shades"]'),
                    (walk[2], "KEEP", "note 2", "dana", None),
                    (walk[3], "KEEP", "", "dana", None)]


def test_a_label_key_pressed_before_the_decision_is_drawn_picks_on_the_item_drawn(
    app_page: Any, demo_db: tuple[pathlib.Path, int],
) -> None:
    """A number pressed at once after the name is given, or after Ctrl+Enter, waits for the
    decision it is meant for: it is neither typed into the name nor clicked on the item being
    left, nor lost while the next item is drawn."""
    expect = _expect()
    path, run_id = demo_db
    db = open_db(path)
    walk = [str(i) for i in review_table(db, run_id, ReviewFilter(disagreements_only=True),
                                         limit=2)[0]["item_id"]]
    # On each item, the label that is not preselected (KEEP or REJECT: saved without more).
    wanted = [next(label for label in ("KEEP", "REJECT")
                   if label != item_detail(db, run_id, item)["final_label"]) for item in walk]
    with running_app(path) as app:
        page = app_page
        page.goto(f"{app['url']}/review?run={run_id}")
        main = page.get_by_test_id("stMain")
        decision = main.locator('[class*="st-key-rv"][class*="-decision"]')
        expect(main.get_by_role("heading", name=f"Item {walk[0]}", exact=True)).to_be_visible()
        settled(page)
        name = main.get_by_role("textbox", name="Reviewer")
        name.fill("dana")
        name.press("Enter")
        page.keyboard.press(str(LABELS.index(wanted[0]) + 1))  # before the decision is drawn
        expect(decision.get_by_role("radio", name=wanted[0], exact=True)).to_be_checked()
        expect(name).to_have_value("dana")
        expect(main.get_by_role("heading", name=f"Item {walk[0]}", exact=True)).to_be_visible()

        page.keyboard.press("Control+Enter")
        page.keyboard.press(str(LABELS.index(wanted[1]) + 1))  # before the next item is drawn
        expect(main.get_by_text(f"Saved {wanted[0]} for {walk[0]}.")).to_be_visible()
        expect(main.get_by_role("heading", name=f"Item {walk[1]}", exact=True)).to_be_visible()
        expect(decision.get_by_role("radio", name=wanted[1], exact=True)).to_be_checked()
        page.keyboard.press("Control+Enter")
        expect(main.get_by_text(f"Saved {wanted[1]} for {walk[1]}.")).to_be_visible()
    for item, label in zip(walk, wanted, strict=True):
        (saved,) = override_history(open_db(path), run_id, item)
        assert (saved["label"], saved["reviewer"]) == (label, "dana")
