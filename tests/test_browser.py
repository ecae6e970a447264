"""Browser tests: Debian's Chromium (through Playwright) against `streamlit run app.py`.

They walk what a newcomer does: click "Try the demo", watch the run finish, open the contested
items, override one, see the Agreement figures move, download the result; a malformed upload
is refused; every page is visited without a request leaving the machine. The tests of this
module share one server and run in order: each starts from the state the previous one left
(as a user would).

Every check waits for what it checks (Playwright's `expect` retries until the page shows it or
the timeout ends): Streamlit draws in steps, so reading the page once after some other element
appeared races the rest of the script run.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pandas as pd
import pytest
from playwright.sync_api import expect

from storage.db import open_db
from tests.fixtures_app import Watch, name_the_reviewer, running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

DEMO_TIMEOUT_MS = 90_000
CRITICS = ("careful", "lenient", "strict", "flaky")
# `pages.ui.text_format.plain` puts this invisible joiner into text from data (it breaks autolinks).
JOINER = "\u2060"


def goto(page: Any, server: dict[str, Any], path: str) -> None:
    """Open a page of the app and wait until Streamlit has drawn its title."""
    page.goto(server["url"] + path)
    expect(page.get_by_test_id("stHeading").first).to_be_visible()


def main(page: Any) -> Any:
    return page.get_by_test_id("stMain")


def first_run_id(server: dict[str, Any]) -> int:
    from storage.results.runs import list_runs

    runs = list_runs(open_db(server["db"]))
    assert runs, "the demo test must run first"
    return int(runs[-1]["id"])


def test_demo_click_runs_to_completion(app_page: Any, app_server: dict[str, Any]) -> None:
    from storage.results.runs import get_run

    goto(app_page, app_server, "/")
    app_page.get_by_role("button", name="Try the demo").click()
    app_page.wait_for_url(re.compile(r"/run\?run=\d+"))
    run_id = int(re.search(r"run=(\d+)", app_page.url).group(1))
    # The live fragment draws progress while the job works...
    expect(app_page.get_by_test_id("stProgress").first).to_be_visible()
    # ...and a full rerun shows the stored, finished state.
    expect(main(app_page).get_by_text(f"Run #{run_id} · done")).to_be_visible(
        timeout=DEMO_TIMEOUT_MS)
    expect(main(app_page)).to_contain_text("simulated")
    run = get_run(open_db(app_server["db"]), run_id)
    assert run["status"] == "done" and run["simulated"]
    assert run["ok_calls"] + run["failed_calls"] == run["total_calls"] == 1200


def test_home_offers_the_demo_run_it_already_has(app_page: Any, app_server: dict[str, Any]) -> None:
    from storage.results.runs import list_runs

    run_id = first_run_id(app_server)
    goto(app_page, app_server, "/")
    open_demo = app_page.get_by_role("button", name=f"Open the demo run #{run_id}")
    expect(open_demo).to_be_visible()
    settled(app_page)  # an absence is only worth checking once the page is complete
    expect(app_page.get_by_role("button", name="Try the demo")).to_have_count(0)
    open_demo.click()
    app_page.wait_for_url(re.compile(rf"/review\?run={run_id}"))
    expect(app_page.get_by_role("heading", name="Review", exact=True)).to_be_visible()
    assert len(list_runs(open_db(app_server["db"]))) == 1


def test_review_shows_the_contested_items(app_page: Any, app_server: dict[str, Any]) -> None:
    from storage.reviewing.review_filter import ReviewFilter
    from storage.reviewing.review_queue import review_table

    run_id = first_run_id(app_server)
    goto(app_page, app_server, f"/review?run={run_id}")
    db = open_db(app_server["db"])
    contested, total = review_table(db, run_id, ReviewFilter(disagreements_only=True), sort="contested", limit=1)
    assert total > 0
    expect(main(app_page).get_by_text(f"{total:,} items match")).to_be_visible()
    # The most contested item is open in detail, with every critic's card (a card is drawn
    # after the item's heading, so each one is waited for, not read once).
    top = contested["item_id"].iloc[0]
    expect(app_page.get_by_role("heading", name=f"Item {top}")).to_be_visible()
    for critic in CRITICS:
        card_title = main(app_page).locator("strong").filter(has_text=re.compile(rf"^{critic}$"))
        expect(card_title).to_be_visible()
    expect(main(app_page).get_by_text("Raw request and reply")).to_have_count(len(CRITICS))
    expect(main(app_page)).to_contain_text("simulated")


def test_override_is_saved_survives_a_reload_and_moves_agreement(
    app_page: Any, app_server: dict[str, Any]
) -> None:
    from storage.reviewing.overrides import override_history

    run_id = first_run_id(app_server)
    goto(app_page, app_server, f"/agreement?run={run_id}")
    expect(main(app_page).get_by_text("0 items reviewed by humans")).to_be_visible()
    settled(app_page)
    expect(app_page.get_by_role("heading", name="Each critic against the humans")).to_have_count(0)

    goto(app_page, app_server, f"/review?run={run_id}")
    app_page.wait_for_url(re.compile(r"item="))
    item = re.search(r"item=([^&]+)", app_page.url).group(1)
    name_the_reviewer(app_page, "browser-test")
    form = app_page.get_by_test_id("stForm")
    form.get_by_test_id("stRadio").get_by_text("REJECT", exact=True).click()
    form.get_by_label("Note (why)").fill("duplicates an existing sibling")
    form.get_by_role("button", name="Save and go to the next item").click()
    # On to the next contested item.
    app_page.wait_for_url(lambda url: f"item={item}" not in url)
    (saved,) = override_history(open_db(app_server["db"]), run_id, item)
    assert (saved["label"], saved["reviewer"]) == ("REJECT", "browser-test")

    # A reload of that item shows the saved decision in its history.
    goto(app_page, app_server, f"/review?run={run_id}&item={item}")
    # The history table is a canvas grid: its accessible cells exist in the DOM, hidden.
    expect(app_page.get_by_text("duplicates an existing sibling").first).to_be_attached()

    goto(app_page, app_server, f"/agreement?run={run_id}")
    expect(main(app_page).get_by_text("1 item reviewed by humans")).to_be_visible()
    expect(app_page.get_by_role("heading", name="Each critic against the humans")).to_be_visible()


def test_kappa_heatmap_click_opens_those_items_in_review(
    app_page: Any, app_server: dict[str, Any]
) -> None:
    run_id = first_run_id(app_server)
    goto(app_page, app_server, f"/agreement?run={run_id}")
    heatmap = app_page.get_by_test_id("stVegaLiteChart").filter(
        has_text="Pairwise Cohen's kappa"
    ).first
    heatmap.scroll_into_view_if_needed()
    # Click only once the chart is drawn: its box is not final before.
    expect(heatmap.locator("canvas, svg").first).to_be_visible()
    # A cell off the diagonal (the first row's second cell), found by the chart's own marks
    # (sized to their content since issue 23: no fixed pixel offset holds).
    cells = heatmap.locator("g.mark-rect path")
    expect(cells.nth(1)).to_be_visible()
    cells.nth(1).click()
    app_page.wait_for_url(re.compile(r"/review\?.*critic_a=.*critic_b="))
    expect(main(app_page).get_by_text("opened from the Agreement heatmap")).to_be_visible()


def test_export_downloads_the_rows_of_the_database(
    app_page: Any, app_server: dict[str, Any]
) -> None:
    from storage.reviewing.overrides import final_labels

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
    for critic in CRITICS:
        assert {f"{critic}: label", f"{critic}: failure"} <= set(exported.columns)
        assert not exported[f"{critic}: label"].str.startswith("failed").any()


def test_malformed_upload_shows_its_error_and_adds_nothing(
    app_page: Any, app_server: dict[str, Any]
) -> None:
    from storage.datasets.dataset_store import list_datasets

    before = len(list_datasets(open_db(app_server["db"])))
    goto(app_page, app_server, "/datasets")
    app_page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(
        files=[{"name": "broken.csv", "mimeType": "text/csv",
                "buffer": b"id,text\n1,fine\n2,too,many,cells\n"}]
    )
    alert = app_page.get_by_test_id("stAlertContentError").first
    expect(alert).to_contain_text(re.compile(f"broken{JOINER}?\\.csv"))
    settled(app_page)
    expect(main(app_page)).not_to_contain_text("Traceback")
    assert len(list_datasets(open_db(app_server["db"]))) == before


def test_hostile_names_in_an_upload_stay_text(app_page: Any, app_server: dict[str, Any]) -> None:
    hostile = "[win](http://evil.test) ![img](http://evil.test/i.png) <img src=x onerror=alert(1)>"
    watch = Watch(app_page, app_server["url"])
    goto(app_page, app_server, "/datasets")
    body = f'id,"{hostile}",text\n1,a,"{hostile}"\n2,b,c,d\n'.encode()
    app_page.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(
        files=[{"name": f"{hostile}.csv", "mimeType": "text/csv", "buffer": body}])
    alert = app_page.get_by_test_id("stAlertContentError").first
    expect(alert).to_contain_text("[win](http:")  # the name, as typed, in the message
    settled(app_page)
    from_data = "a[href*='evil'], img[src*='evil'], img[src='x']"
    expect(main(app_page).locator(from_data)).to_have_count(0)
    assert (watch.dialogs, watch.elsewhere) == ([], [])


def test_every_page_keeps_to_this_machine(app_page: Any, app_server: dict[str, Any]) -> None:
    run_id = first_run_id(app_server)
    watch = Watch(app_page, app_server["url"])

    # Through the sidebar, as a user moves around (no document reload).
    goto(app_page, app_server, f"/?run={run_id}")
    nav = app_page.get_by_test_id("stSidebarNav")
    for title in ("Datasets", "Panel", "Run", "Review", "Agreement", "Team", "Compare", "Export",
                  "Home"):
        nav.get_by_role("link", name=title).click()
        expect(app_page.get_by_role("heading", name="Jurybox" if title == "Home" else title,
                                    exact=True)).to_be_visible()
        expect(app_page.get_by_test_id("stSidebar").get_by_text("Database")).to_be_visible()
        settled(app_page)
    # Every page by its URL (a bookmark, a shared link), a deep link into Review included.
    for path in ("/datasets", "/panel", f"/run?run={run_id}", f"/agreement?run={run_id}",
                 f"/team?run={run_id}", f"/compare?run={run_id}", f"/export?run={run_id}",
                 f"/review?run={run_id}&item=TX-0001", "/"):
        goto(app_page, app_server, path)
        expect(app_page.get_by_test_id("stSidebar").get_by_text("Database")).to_be_visible()
        settled(app_page)

    assert watch.troubles() == {"dialogs": [], "elsewhere": [], "failed": [], "console": []}


def test_a_deep_link_after_a_restart_is_drawn_inside_the_app(
    app_page: Any, tmp_path: pathlib.Path
) -> None:
    # A fresh process whose first request is a page's URL: Streamlit's legacy pages/ mode
    # would run the page bare (see pages/ui/shell.py).
    with running_app(tmp_path / "deep.db") as server:
        app_page.goto(server["url"] + "/datasets?x=1")
        expect(app_page.get_by_role("heading", name="Datasets", exact=True)).to_be_visible()
        settled(app_page)
        expect(app_page.get_by_role("heading", name="Datasets", exact=True)).to_have_count(1)
        expect(app_page.get_by_test_id("stSidebar").get_by_text("Database")).to_be_visible()
        nav = app_page.get_by_test_id("stSidebarNav")
        expect(nav.get_by_role("link", name="Agreement")).to_be_visible()
        expect(nav.get_by_role("link", name="app", exact=True)).to_have_count(0)
        assert "x=1" in app_page.url  # the query string survived
