"""Browser test of the audit on Review (issue 25 parts 1 and 2): draw an audit sample, label the
label-next queue's head blind, keep the label, and the item opened next is the queue's new head,
its row ticked in the table; Agreement then shows the estimate from those labels.

Every check waits for what it checks (Playwright's `expect`).
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest

from judging.runs.stored.audit_run import run_audit
from storage.db import open_db
from storage.reviewing.audit import queue_ranks
from storage.reviewing.overrides import blind_labels
from tests.fixtures_app import (
    BROWSER_TIMEOUT_MS,
    as_shown,
    name_the_reviewer,
    running_app,
    settled,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def test_label_next_walks_the_queue_in_a_real_browser(
    app_page: Any, demo_db: tuple[pathlib.Path, int],
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    path, run_id = demo_db
    db = open_db(path)
    with running_app(path) as app:
        app_page.goto(f"{app['url']}/review?run={run_id}")
        main = app_page.get_by_test_id("stMain")
        name_the_reviewer(app_page, "eve")
        main.get_by_role("button", name="Audit sample").click()
        app_page.get_by_test_id("stPopoverBody").get_by_role(
            "button", name="Draw an audit sample of 100 items").click()
        expect(main.get_by_text(as_shown("Drew 100 items for the audit"))).to_be_visible()
        settled(app_page)
        for step in range(3):
            # The head as the page names it (refreshing the queue again from here could draw
            # more items than the page did): the open item and the ticked row must be it, and
            # it must be an audit item still waiting for its blind label.
            caption = main.get_by_text(re.compile(r"Next to label:"))
            expect(caption).to_be_visible()
            found = re.search(r"item\W*(TX\W*-\W*\d+)", caption.inner_text())
            assert found is not None, caption.inner_text()
            head = re.sub(r"[^\w-]", "", found.group(1))
            assert head in queue_ranks(db, run_id) and head not in blind_labels(db, run_id)
            expect(main.get_by_text(as_shown(f"Next to label: item {head},"))).to_be_visible()
            expect(main.get_by_role("heading", name=f"Item {head}", exact=True)).to_be_visible()
            ticked = main.get_by_test_id("stDataFrame").locator("tr[aria-selected='true'] td")
            expect(ticked.first).to_have_text(head)
            settled(app_page)
            main.get_by_test_id("stRadio").get_by_text("REJECT", exact=True).click()
            main.get_by_role("button", name="Save and show the critics").click()
            expect(main.get_by_text(as_shown("Your blind label: REJECT"))).to_be_visible()
            settled(app_page)
            # Revealed on the same item: the table has re-ordered (the labelled item keeps its
            # row), the open item has not moved.
            expect(main.get_by_role("heading", name=f"Item {head}", exact=True)).to_be_visible()
            main.get_by_role("button", name="Keep my blind label and go to the next item").click()
            expect(main.get_by_role("heading", name=f"Item {head}", exact=True)).to_have_count(0)
            settled(app_page)
            assert blind_labels(db, run_id)[head] == "REJECT", step

        app_page.goto(f"{app['url']}/agreement?run={run_id}")
        expect(app_page.get_by_test_id("stMain").get_by_text(
            as_shown("From 3 audited items with a blind label"))).to_be_visible()
    audit = run_audit(db, run_id)
    assert audit.estimate is not None and audit.estimate.accuracy.n == 3
