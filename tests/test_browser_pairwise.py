"""Browser test: the pairwise demo from Home to Review and Agreement (issue 10), in Debian's
Chromium against `streamlit run app.py`. Every check waits for exactly what it asserts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from storage.db import open_db
from tests.fixtures_app import Watch
from tests.test_browser import DEMO_TIMEOUT_MS, goto, main

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]


def test_the_pairwise_demo_walks_to_review_and_agreement(app_page: Any,
                                                         app_server: dict[str, Any]) -> None:
    from judging.runs.stored.run_report import run_pairwise
    from storage.reviewing.review_queue import item_detail

    watch = Watch(app_page, app_server["url"])
    goto(app_page, app_server, "/")
    app_page.get_by_role("button", name="Try the pairwise demo").click()
    app_page.wait_for_url(re.compile(r"/run\?run=\d+"))
    run_id = int(re.search(r"run=(\d+)", app_page.url).group(1))
    expect(main(app_page).get_by_text(f"Run #{run_id} · done")).to_be_visible(
        timeout=DEMO_TIMEOUT_MS)

    # Review: the open item shows its two answers side by side, named by their systems, and
    # each critic's two calls, one per order.
    goto(app_page, app_server, f"/review?run={run_id}")
    app_page.wait_for_url(re.compile(r"item="))
    item = re.search(r"item=([^&]+)", app_page.url).group(1)
    fields = item_detail(open_db(app_server["db"]), run_id, item)["fields"]
    for side in "ab":
        expect(main(app_page).get_by_text(
            f"Response {side.upper()} · {fields[f'system_{side}']}")).to_be_visible()
    expect(main(app_page).get_by_text("How careful decided: 2 calls")).to_be_visible()

    # Agreement: the systems ranked by win rate, and each critic's position bias.
    report = run_pairwise(open_db(app_server["db"]), run_id)
    goto(app_page, app_server, f"/agreement?run={run_id}")
    expect(app_page.get_by_role("heading", name="Pairwise: which system wins")).to_be_visible()
    expect(main(app_page).get_by_text(
        f"Over {report.comparisons:,} comparisons, by each item's final label")).to_be_visible()
    expect(main(app_page).get_by_text("Position bias", exact=True)).to_be_visible()
    assert report.systems[0].system == "atlas"
    assert watch.troubles() == {"dialogs": [], "elsewhere": [], "failed": [], "console": []}
