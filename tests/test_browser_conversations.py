"""Browser test of a conversation reviewed per turn, in Chromium against the real app: the
open turn's thread is drawn as a transcript with the turn judged boxed, and J moves to the
next turn of the list, whose own thread and turn are then shown.

Every wait is on what is then asserted (the item's heading, the boxed turn)."""

from __future__ import annotations

import pathlib
import urllib.parse
from typing import Any

import pytest

from storage.db import open_db
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import review_table
from tests.fixtures_app import BROWSER_TIMEOUT_MS, name_the_reviewer, running_app, settled
from tests.test_conversations import _demo_run

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

# The focused element is the decision (the radio group inside the decision's container): the
# page is ready for the keys.
_DECISION_FOCUSED = """() => {
  const active = document.activeElement;
  return !!active && active.getAttribute('role') === 'radiogroup'
    && !!active.closest('[class*="st-key-rv"][class*="-decision"]');
}"""


def test_a_turn_is_reviewed_in_its_transcript_and_j_moves_to_the_next_turn(
        app_page: Any, tmp_path: pathlib.Path, simulator_factory: Any) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    path = tmp_path / "turns.db"
    _, run_id = _demo_run(path, simulator_factory)
    walk = [str(i) for i in review_table(open_db(path), run_id,
                                         ReviewFilter(disagreements_only=True))[0]["item_id"]]
    assert set(walk) == {"refund-late#t3", "dishwasher-yes#t1", "wrong-order#t1"}
    with running_app(path) as app:
        page = app_page
        item = urllib.parse.quote(walk[0])
        page.goto(f"{app['url']}/review?run={run_id}&item={item}")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_role("heading", name=f"Item {walk[0]}", exact=True)).to_be_visible()
        name_the_reviewer(page, "dana")  # the keys act on the reviewer's open decision
        for n, item_id in enumerate(walk[:2]):
            expect(main.get_by_role("heading", name=f"Item {item_id}", exact=True)).to_be_visible()
            turn = int(item_id.rsplit("#t", 1)[1])
            judged = main.locator(f".st-key-judged_turn_{turn}")
            expect(judged).to_be_visible()
            expect(judged.get_by_test_id("stChatMessage")).to_have_count(1)
            expect(judged).to_contain_text("The turn judged here: turn")
            thread = item_id.split("#", 1)[0]
            expect(main.get_by_text(f"Thread {thread}: fails", exact=False)).to_be_visible()
            # The whole thread is drawn, one bubble per message, and no list as text.
            assert main.get_by_test_id("stChatMessage").count() >= 4
            expect(main.get_by_text("[{'role'", exact=False)).to_have_count(0)
            if n == 0:
                settled(page)
                page.wait_for_function(_DECISION_FOCUSED)
                page.keyboard.press("j")  # next
