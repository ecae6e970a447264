"""Browser test of the critic reliability card (issue 25 part 4): on the demo run with blind
labels, Agreement draws one card per critic; at a threshold the first critic clears on some
labels it carries the trusted mark naming exactly those labels (badge and table), and at 99%
no critic is trusted.

Every check waits for what it checks (Playwright's `expect`).
"""

from __future__ import annotations

import math
import pathlib
from typing import Any

import pytest

from judging.runs.stored.reliability import run_reliability
from storage.db import open_db
from storage.reviewing.overrides import add_override
from storage.reviewing.review_queue import gold_labels
from tests.fixtures_app import BROWSER_TIMEOUT_MS, as_shown, running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

THRESHOLD = "Trusted when both intervals' low ends reach"


def test_the_card_marks_a_critic_trusted_where_its_intervals_clear_the_threshold(
    app_page: Any, demo_db: tuple[pathlib.Path, int],
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    path, run_id = demo_db
    db = open_db(path)
    gold = gold_labels(db, run_id)
    for item in sorted(gold)[:200]:  # a reviewer's blind first pass gives the gold label
        add_override(db, run_id, item, gold[item], "", "ann", blind=True)
    # The card as the page computes it (same resamples and seed); the threshold: the first
    # critic's best label's edge, rounded down to the input's two decimals.
    card = run_reliability(db, run_id)
    first = card.critics[0]
    edge = max(min(r.tpr.low or 0.0, r.tnr.low or 0.0) for r in first.labels)
    threshold = math.floor(edge * 100) / 100
    assert threshold >= 0.5, f"the demo critic is weaker than the test expects: {edge}"
    trusted = first.trusted_labels(threshold)
    assert trusted

    with running_app(path) as app:
        app_page.goto(f"{app['url']}/agreement?run={run_id}")
        main = app_page.get_by_test_id("stMain")
        expect(main.get_by_role("heading", name="Critic reliability against blind labels")
               ).to_be_visible()
        expect(main.get_by_text(as_shown("Against 200 items labelled blind"))).to_be_visible()
        settled(app_page)
        field = main.get_by_role("spinbutton", name=THRESHOLD)
        field.fill(f"{threshold:.2f}")
        field.press("Enter")
        mark = as_shown(f"Trusted on {', '.join(trusted)}")
        expect(main.get_by_text(mark).first).to_be_visible()
        # The first critic's card holds the badge, and its table marks those labels only.
        # The innermost block holding the critic's name, the badge and a table: its box (a
        # `has` locator is matched inside each block, so the name pins the critic).
        box = main.get_by_test_id("stVerticalBlock").filter(
            has=app_page.get_by_text(first.critic, exact=True)).filter(
            has=app_page.get_by_test_id("stTable")).filter(has=app_page.get_by_text(mark)).last
        expect(box.get_by_text(first.critic, exact=True)).to_be_visible()
        expect(box.get_by_test_id("stTable")).to_have_count(1)
        rows = box.get_by_test_id("stTable").locator("tbody tr")
        expect(rows).to_have_count(len(first.labels))
        for row in first.labels:
            line = rows.filter(has=app_page.locator("th, td").get_by_text(row.label, exact=True))
            expect(line.locator("td").last).to_have_text("trusted" if row.label in trusted else "")
        settled(app_page)

        field.fill("0.99")
        field.press("Enter")
        expect(main.get_by_text(as_shown("Not trusted on any label at 99%"))).to_have_count(
            len(card.critics))
        expect(main.get_by_text(as_shown("Trusted on "), exact=False)).to_have_count(0)
