"""Browser tests: Debian's Chromium (through Playwright) against `streamlit run app.py`.

They walk what a newcomer does: click "Try the demo", watch the run finish, open the contested
items, override one, see the Agreement figures move, download the result; and a malformed
upload is refused. The tests of this module share one server and run in order: each starts
from the state the previous one left (as a user would).
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pandas as pd
import pytest

from storage.db import open_db
from tests.fixtures_app import running_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

DEMO_TIMEOUT_MS = 90_000


def goto(page: Any, server: dict[str, Any], path: str) -> None:
    """Open a page of the app and wait until Streamlit has drawn its title."""
    page.goto(server["url"] + path)
    page.get_by_test_id("stHeading").first.wait_for()


def main_text(page: Any) -> str:
    return page.get_by_test_id("stMain").inner_text()


def first_run_id(server: dict[str, Any]) -> int:
    from storage.runs import list_runs

    runs = list_runs(open_db(server["db"]))
    assert runs, "the demo test must run first"
    return int(runs[-1]["id"])


def test_demo_click_runs_to_completion(app_page: Any, app_server: dict[str, Any]) -> None:
    from storage.runs import get_run

    goto(app_page, app_server, "/")
    app_page.get_by_role("button", name="Try the demo").click()
    app_page.wait_for_url(re.compile(r"/run\?run=\d+"))
    run_id = int(re.search(r"run=(\d+)", app_page.url).group(1))
    # The live fragment draws progress while the job works...
    app_page.get_by_test_id("stProgress").first.wait_for()
    # ...and a full rerun shows the stored, finished state.
    app_page.get_by_text(f"Run #{run_id} · done").wait_for(timeout=DEMO_TIMEOUT_MS)
    run = get_run(open_db(app_server["db"]), run_id)
    assert run["status"] == "done" and run["simulated"]
    assert run["ok_calls"] + run["failed_calls"] == run["total_calls"] == 1200
    assert "simulated" in main_text(app_page)


def test_review_shows_the_contested_items(app_page: Any, app_server: dict[str, Any]) -> None:
    from storage.review import review_table

    run_id = first_run_id(app_server)
    goto(app_page, app_server, f"/review?run={run_id}")
    db = open_db(app_server["db"])
    contested, total = review_table(db, run_id, disagreements_only=True, sort="contested", limit=1)
    assert total > 0
    app_page.get_by_text(f"{total:,} items match").wait_for()
    # The most contested item is open in detail, with every critic's card.
    top = contested["item_id"].iloc[0]
    app_page.get_by_role("heading", name=f"Item {top}").wait_for()
    text = main_text(app_page)
    for critic in ("careful", "lenient", "strict", "flaky"):
        assert critic in text
    assert "simulated" in text


def test_override_is_saved_survives_a_reload_and_moves_agreement(
    app_page: Any, app_server: dict[str, Any]
) -> None:
    from storage.overrides import override_history

    run_id = first_run_id(app_server)
    goto(app_page, app_server, f"/agreement?run={run_id}")
    app_page.get_by_text("0 items reviewed by humans").wait_for()
    assert "Each critic against the humans" not in main_text(app_page)

    goto(app_page, app_server, f"/review?run={run_id}")
    app_page.wait_for_url(re.compile(r"item="))
    item = re.search(r"item=([^&]+)", app_page.url).group(1)
    form = app_page.get_by_test_id("stForm")
    form.get_by_test_id("stRadio").get_by_text("MERGE", exact=True).click()
    form.get_by_label("Note (why)").fill("duplicates an existing sibling")
    form.get_by_label("Reviewer").fill("browser-test")
    form.get_by_role("button", name="Save and go to the next item").click()
    # On to the next contested item.
    app_page.wait_for_url(lambda url: f"item={item}" not in url)
    (saved,) = override_history(open_db(app_server["db"]), run_id, item)
    assert (saved["label"], saved["reviewer"]) == ("MERGE", "browser-test")

    # A reload of that item shows the saved decision in its history.
    goto(app_page, app_server, f"/review?run={run_id}&item={item}")
    # The history table is a canvas grid: its accessible cells exist in the DOM, hidden.
    app_page.get_by_text("duplicates an existing sibling").first.wait_for(state="attached")

    goto(app_page, app_server, f"/agreement?run={run_id}")
    app_page.get_by_text("1 items reviewed by humans").wait_for()
    app_page.get_by_role("heading", name="Each critic against the humans").wait_for()


def test_kappa_heatmap_click_opens_those_items_in_review(
    app_page: Any, app_server: dict[str, Any]
) -> None:
    run_id = first_run_id(app_server)
    goto(app_page, app_server, f"/agreement?run={run_id}")
    heatmap = app_page.get_by_test_id("stVegaLiteChart").filter(
        has_text="Pairwise Cohen's kappa"
    ).first
    heatmap.scroll_into_view_if_needed()
    box = heatmap.bounding_box()
    # Four critics, 70 px per cell after the axis labels: this point is an off-diagonal cell.
    app_page.mouse.click(box["x"] + 200, box["y"] + 100)
    app_page.wait_for_url(re.compile(r"/review\?.*critic_a=.*critic_b="))
    app_page.get_by_text("opened from the Agreement heatmap").wait_for()


def test_export_downloads_the_rows_of_the_database(
    app_page: Any, app_server: dict[str, Any]
) -> None:
    from storage.overrides import final_labels

    run_id = first_run_id(app_server)
    goto(app_page, app_server, f"/export?run={run_id}")
    with app_page.expect_download() as info:
        app_page.get_by_role("button", name="Download CSV").click()
    download = info.value
    assert download.suggested_filename == f"jurybox-run-{run_id}.csv"
    exported = pd.read_csv(download.path(), dtype=str, keep_default_na=False)
    truth = final_labels(open_db(app_server["db"]), run_id)
    assert list(exported["item_id"]) == list(truth["item_id"])
    assert list(exported["final_label"]) == [v or "" for v in truth["final_label"]]
    assert (exported["overridden"] == "True").sum() == int(truth["overridden"].sum()) >= 1
    for critic in ("careful", "lenient", "strict", "flaky"):
        assert f"{critic}: label" in exported.columns


def test_malformed_upload_shows_its_error_and_adds_nothing(
    app_page: Any, app_server: dict[str, Any]
) -> None:
    from storage.datasets import list_datasets

    before = len(list_datasets(open_db(app_server["db"])))
    goto(app_page, app_server, "/datasets")
    app_page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(
        files=[{"name": "broken.csv", "mimeType": "text/csv",
                "buffer": b"id,text\n1,fine\n2,too,many,cells\n"}]
    )
    alert = app_page.get_by_test_id("stAlertContentError").first
    alert.wait_for()
    assert "broken.csv" in alert.inner_text()
    assert "Traceback" not in main_text(app_page)
    assert len(list_datasets(open_db(app_server["db"]))) == before


def test_a_deep_link_after_a_restart_is_drawn_inside_the_app(
    app_page: Any, tmp_path: pathlib.Path
) -> None:
    # A fresh process whose first request is a page's URL: Streamlit's legacy pages/ mode
    # would run the page bare (see pages/ui/shell.py).
    with running_app(tmp_path / "deep.db") as server:
        app_page.goto(server["url"] + "/datasets")
        app_page.get_by_role("heading", name="Datasets", exact=True).wait_for()
        sidebar = app_page.get_by_test_id("stSidebar")
        sidebar.get_by_text("Database").wait_for()
        nav = app_page.get_by_test_id("stSidebarNav").inner_text().split()
        assert "Agreement" in nav and "app" not in nav
