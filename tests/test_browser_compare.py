"""Browser test of the Compare page: a flipped item opens in Review from its link, in a new tab
(a new session, as a shared link would), on the demo run and its second panel version."""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

import pytest

from judging.runs.stored.compare_runs import compare_runs
from storage.db import open_db
from tests.fixtures_app import Watch, choose_option, running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def test_a_flipped_item_opens_in_review_from_compare(
    app_page: Any, two_runs_template: tuple[pathlib.Path, int, int], tmp_path: pathlib.Path
) -> None:
    from playwright.sync_api import expect

    template, run_a, run_b = two_runs_template
    path = tmp_path / "compare.db"
    shutil.copyfile(template, path)
    db = open_db(path)
    flipped = compare_runs(db, run_a, run_b).flipped
    db.close()
    second = flipped[1].item_id  # not the one the picker starts on: the pick must carry over

    with running_app(path) as app:
        watch = Watch(app_page, app["url"])
        app_page.goto(f"{app['url']}/compare?run={run_a}&vs={run_b}")
        main = app_page.get_by_test_id("stMain")
        expect(main.get_by_role("heading", name="Final decisions that flipped")).to_be_visible()
        picker = main.get_by_test_id("stSelectbox").filter(has_text="Flipped item")
        settled(app_page)
        choose_option(app_page, picker, second)
        link = main.get_by_role("link", name=f"Open in Review (run #{run_b})")
        expect(link).to_have_attribute("href", f"/review?run={run_b}&item={second}")
        settled(app_page)
        with app_page.context.expect_page() as opened:
            link.click()
        review = opened.value
        expect(review.get_by_test_id("stMain").get_by_role(
            "heading", name=f"Item {second}")).to_be_visible()
        assert f"run={run_b}" in review.url and f"item={second}" in review.url
        assert watch.troubles() == {"dialogs": [], "elsewhere": [], "failed": [], "console": []}
