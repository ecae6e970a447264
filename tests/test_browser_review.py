"""Browser tests of Review and Agreement: data is text on every page (issue 9 part 6); a search
and a filter move the item panel and the table's tick together, and saves walk the filtered
list; the review table fits 1,400 px with four critics; a raw reply is formatted and scrolls
(issue 14 items 1, 3, 4, 12).

Every check waits for what it checks (Playwright's `expect`, or `wait_for_function` for a
geometry), and absences are checked once Streamlit's script run is over.
"""

from __future__ import annotations

import csv
import pathlib
import re
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from storage.db import open_db
from storage.reviewing.overrides import override_history
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import review_table
from tests.fixtures_app import (
    BROWSER_TIMEOUT_MS,
    Watch,
    as_shown,
    choose_option,
    name_the_reviewer,
    running_app,
    settled,
)
from tests.fixtures_hostile import CRITICS, IMAGE, ITEM_IDS, LABELS, NOTE, REVIEWER, URL_ITEM

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

# What data could turn into besides a link: an image or a frame loading from the hostile host.
FROM_DATA = "img[src*='evil'], iframe, [src*='evil']"


def _expect() -> Any:
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    return expect


def no_links_from_data(page: Any, origin: str, *, timeout_ms: float | None = None) -> None:
    """No link made from data: every link on the page goes to the app itself, and none has a
    path or an anchor made of the hostile strings (a heading's anchor is its text's slug).

    The app's own links may carry data in their query string, percent-encoded (Agreement's
    "Review where they differ" names two critics): that is a parameter, not a link from data.
    """
    expect = _expect()
    settled(page)
    expect(page.locator(FROM_DATA)).to_have_count(0, timeout=timeout_ms)
    hrefs = page.locator("a[href]").evaluate_all("links => links.map(a => a.href)")
    made_from_data = []
    for href in hrefs:
        parts = urlsplit(href)
        if f"{parts.scheme}://{parts.netloc}" != origin or "evil" in parts.path + parts.fragment:
            made_from_data.append(href)
    assert made_from_data == []


@pytest.fixture
def hostile_app(hostile_db: tuple[pathlib.Path, int]) -> Any:
    path, run_id = hostile_db
    with running_app(path) as app:
        yield {**app, "run": run_id}


def test_hostile_data_stays_text_on_every_page(app_page: Any, hostile_app: Any) -> None:
    expect = _expect()
    url, run_id = hostile_app["url"], hostile_app["run"]
    watch = Watch(app_page, url)
    main = app_page.get_by_test_id("stMain")
    frame, _ = review_table(open_db(hostile_app["db"]), run_id, sort="item", limit=None)
    tied = str(frame.loc[frame["tie"], "item_id"].iloc[0])

    # Review: a tied item (its note names hostile labels), every critic's card and raw reply.
    app_page.goto(f"{url}/review?run={run_id}&item={quote(tied)}")
    expect(main.get_by_role("heading", name=as_shown(f"Item {tied}"))).to_be_visible()
    expect(main.get_by_text(as_shown("(tied vote: the panel's tie rule decided)"))).to_be_visible()
    for name, _ in CRITICS:
        expect(main.get_by_text(as_shown(name), exact=True).first).to_be_visible()
    toggles = main.get_by_text("Raw request and reply", exact=True)
    for n in range(len(CRITICS)):
        settled(app_page)  # act only once the script run is over (no stale element to click)
        toggles.nth(n).click()
        expect(main.get_by_text("Raw exchange of", exact=False)).to_have_count(n + 1)
    expect(main.get_by_text(as_shown(f"The item fits {LABELS[0]} best.")).first).to_be_visible()
    no_links_from_data(app_page, url)  # (waits for the script run to be over)
    # A decision with hostile label, note and reviewer: confirmed as text.
    name_the_reviewer(app_page, REVIEWER)
    main.get_by_test_id("stRadio").get_by_text(as_shown(LABELS[1])).click()
    main.get_by_label("Note (why)").fill(NOTE)
    main.get_by_role("button", name="Save and go to the next item").click()
    expect(main.get_by_text(as_shown(f"Saved {LABELS[1]} for {tied}."))).to_be_visible()
    no_links_from_data(app_page, url)
    assert override_history(open_db(hostile_app["db"]), run_id, tied)[-1]["note"] == NOTE

    # The link of issue 9 (an item that does not exist) and a hostile item id that does.
    for item in (URL_ITEM, ITEM_IDS[0]):
        app_page.goto(f"{url}/review?run={run_id}&item={quote(item)}")
        expect(main.get_by_text("items match")).to_be_visible()
        no_links_from_data(app_page, url)

    # Agreement (charts, tie counts, the heatmap's critic menus), then every other page.
    app_page.goto(f"{url}/agreement?run={run_id}")
    expect(main.get_by_text(re.compile("had a tied vote"))).to_be_visible()
    expect(main.get_by_test_id("stVegaLiteChart").first).to_be_visible()
    no_links_from_data(app_page, url)
    for path, heading in (("/", "Jurybox"), (f"/export?run={run_id}", "Export"),
                          ("/datasets", "Datasets"), ("/panel", "Panel"),
                          (f"/run?run={run_id}", "Run")):
        app_page.goto(url + path)
        expect(app_page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        no_links_from_data(app_page, url)

    assert (watch.dialogs, watch.elsewhere, watch.console) == ([], [], [])


def test_search_and_filter_move_the_panel_and_the_tick_and_saves_walk_the_list(
    app_page: Any, demo_db: tuple[pathlib.Path, int],
) -> None:
    expect = _expect()
    path, run_id = demo_db
    db = open_db(path)
    first = str(review_table(db, run_id, ReviewFilter(disagreements_only=True), limit=1)[0]["item_id"][0])
    split_only, _ = review_table(db, run_id, ReviewFilter(disagreements_only=True, consensus_label="SPLIT"), limit=None)

    def search_that_moves(word: str) -> bool:
        # A word the open item lacks, that leaves four SPLIT items in another order.
        nonlocal searched, wanted, total, walk
        searched, _ = review_table(db, run_id, ReviewFilter(disagreements_only=True, search=word), limit=None)
        wanted, total = review_table(db, run_id, ReviewFilter(disagreements_only=True, search=word, consensus_label="SPLIT"), limit=None)
        walk = [str(i) for i in wanted["item_id"]]
        return (first not in set(searched["item_id"]) and len(walk) >= 4
                and walk[:4] != [str(i) for i in split_only["item_id"][:4]])

    searched = wanted = walk = total = None
    # Words from the items (departments of the parent paths among them) and the reasons.
    word = next((w for w in ("with", "also", "Electronics", "Home", "Garden", "Clothing",
                             "Sports", "Pets") if search_that_moves(w)), None)
    assert word is not None, "the demo data has no search that moves the open item"

    def open_item_is(item: str) -> None:
        # The item panel and the table's ticked row show the same item.
        expect(main.get_by_role("heading", name=f"Item {item}", exact=True)).to_be_visible()
        ticked = main.get_by_test_id("stDataFrame").locator("tr[aria-selected='true'] td")
        expect(ticked.first).to_have_text(item)
        settled(app_page)  # the next action meets this run's elements, not the previous one's

    with running_app(path) as app:
        app_page.goto(f"{app['url']}/review?run={run_id}")
        main = app_page.get_by_test_id("stMain")
        open_item_is(first)
        main.get_by_label("Search items and reasons").fill(word)
        main.get_by_label("Search items and reasons").press("Enter")
        open_item_is(str(searched["item_id"].iloc[0]))  # no longer the item that did not match
        choose_option(app_page, main.get_by_test_id("stSelectbox").filter(has_text="Consensus"),
                      "SPLIT")
        expect(main.get_by_text(f"{total:,} items match")).to_be_visible()
        open_item_is(walk[0])
        name_the_reviewer(app_page, "dana")  # typed once
        reviewer = main.get_by_label("Reviewer")
        for n, item in enumerate(walk[:3]):
            open_item_is(item)
            main.get_by_test_id("stRadio").get_by_text("KEEP", exact=True).click()
            main.get_by_label("Note (why)").fill(f"walk {n}")
            expect(reviewer).to_have_value("dana")  # kept for every save
            main.get_by_role("button", name="Save and go to the next item").click()
            expect(main.get_by_text(f"Saved KEEP for {item}.")).to_be_visible()
        open_item_is(walk[3])
    for n, item in enumerate(walk[:3]):
        (saved,) = override_history(open_db(path), run_id, item)
        assert (saved["label"], saved["note"], saved["reviewer"]) == ("KEEP", f"walk {n}", "dana")


@pytest.fixture
def page_1400(chromium_browser: Any) -> Any:
    """A page of a 1,400 x 1,000 px window (a laptop), the width of issue 14's report."""
    _expect()
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def test_the_review_table_fits_1400_px_with_four_critics_and_the_raw_reply_is_formatted(
    page_1400: Any, demo_db: tuple[pathlib.Path, int],
) -> None:
    expect = _expect()
    path, run_id = demo_db
    with running_app(path) as app:
        page_1400.goto(f"{app['url']}/review?run={run_id}")
        main = page_1400.get_by_test_id("stMain")
        table = main.get_by_test_id("stDataFrame")
        for column in ("alpha", "failed", "overridden", "careful", "flaky"):
            # (The grid draws on a canvas; its table for screen readers names the columns.)
            expect(table.get_by_role("columnheader", name=column, exact=True,
                                     include_hidden=True)).to_have_count(1)
        # Nothing to scroll sideways: every column, the figures included, is in view.
        scroller = table.locator(".dvn-scroller").first
        scroller.wait_for()
        page_1400.wait_for_function("el => el.scrollWidth <= el.clientWidth",
                                    arg=scroller.element_handle())

        settled(page_1400)
        main.get_by_text("Raw request and reply", exact=True).first.click()
        # The innermost block holding a text is its bordered container.
        exchange = main.get_by_test_id("stVerticalBlock").filter(
            has=page_1400.get_by_text("Raw exchange of careful")).last
        expect(exchange).to_be_visible()
        reply = exchange.get_by_test_id("stCode").filter(has_text='"choices"')
        # Pretty JSON, one key per line (not one long line) ...
        expect(reply).to_contain_text(re.compile(r'\{\s*\n\s+"id": "chatcmpl'))
        # ... as wide as the page, not a card's width, and scrolling at a fixed height.
        card = main.get_by_test_id("stVerticalBlock").filter(
            has=page_1400.get_by_text(re.compile(r"^simulated / sim-careful"))).last
        page_1400.wait_for_function(
            "([code, card]) => code.getBoundingClientRect().width"
            " > 3 * card.getBoundingClientRect().width",
            arg=[reply.element_handle(), card.element_handle()])
        page_1400.wait_for_function(
            "code => { const pre = code.querySelector('pre');"
            " return pre && pre.scrollHeight > pre.clientHeight + 20 }",
            arg=reply.element_handle())


def test_a_loaded_hostile_panel_stays_text_on_the_panel_page(
    app_page: Any, hostile_app: Any,
) -> None:
    expect = _expect()
    url = hostile_app["url"]
    watch = Watch(app_page, url)
    app_page.goto(url + "/panel")
    main = app_page.get_by_test_id("stMain")
    expect(main.get_by_label("Panel name", exact=True).first).to_have_value("my panel")
    settled(app_page)
    main.get_by_role("button", name="Load a panel").click()
    app_page.get_by_test_id("stPopoverBody").get_by_test_id("stSelectbox").click()
    app_page.get_by_role("option", name=as_shown(f"{IMAGE} panel")).click()
    app_page.get_by_role("button", name="Load into the editor").click()
    expect(main.get_by_label("Panel name", exact=True).first).to_have_value(f"{IMAGE} panel")
    no_links_from_data(app_page, url, timeout_ms=2_000)  # expected to fail: fail fast
    assert (watch.dialogs, watch.elsewhere) == ([], [])


@pytest.fixture
def long_pair_db(app_db: pathlib.Path) -> tuple[pathlib.Path, int, str]:
    """A finished run of the pairwise demo panel over four of its comparisons, the first
    with an answer A of about 27,000 characters. Returns (path, run id, that item's id)."""
    from judging.demo import pairwise_dataset_path, pairwise_panel_path
    from judging.panel.panel_files import load_panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset

    with pairwise_dataset_path().open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[:4]
    rows[0]["answer_a"] = "\n\n".join(
        f"Step {n}: hold the reset button on the back for ten seconds, then wait. " * 6
        for n in range(60))
    source = app_db.with_suffix(".csv")
    with source.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    db = open_db(app_db)
    parsed = read_dataset(source, id_column="id", gold_column="gold",
                          fields=["question", "system_a", "answer_a", "system_b", "answer_b"])
    dataset = save_dataset(db, parsed, name="long pairs")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(pairwise_panel_path()))
    assert JobRegistry().start_run(str(app_db), run_id).wait(120)
    db.close()
    return app_db, run_id, rows[0]["id"]


def test_a_long_pairwise_answer_scrolls_in_its_box_beside_the_decision(
    page_1400: Any, long_pair_db: tuple[pathlib.Path, int, str],
) -> None:
    """At 1,400 x 1,000 px the two answers of a long pair scroll in boxes of one bounded
    height: the decision beside them is in the window with the top of both answers (a long
    answer ran to 3,700 px in a 254 px column, and the decision scrolled out of view)."""
    expect = _expect()
    path, run_id, item = long_pair_db
    with running_app(path) as app:
        page = page_1400
        page.goto(f"{app['url']}/review?run={run_id}&item={item}")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_role("heading", name=f"Item {item}", exact=True)).to_be_visible()
        name_the_reviewer(page, "dana")
        # Each answer's bordered box: the innermost block holding its title.
        boxes = [main.get_by_test_id("stVerticalBlock").filter(
            has=page.get_by_text(re.compile(f"^Response {side} · "))).last for side in "AB"]
        expect(boxes[0]).to_contain_text("Step 59:")
        save = main.get_by_role("button", name=re.compile("^Save and go to the next item"))
        save.scroll_into_view_if_needed()
        # The long answer scrolls inside its box; both boxes are one height, under 520 px.
        page.wait_for_function(
            "([a, b]) => [...a.querySelectorAll('*')].some(e => e.clientHeight > 100"
            " && e.scrollHeight > 3 * e.clientHeight)"
            " && a.getBoundingClientRect().height < 520"
            " && Math.abs(a.getBoundingClientRect().height"
            " - b.getBoundingClientRect().height) < 1",
            arg=[boxes[0].element_handle(), boxes[1].element_handle()])
        # With Save in the window, so are the tops of both answers: read, then decide.
        page.wait_for_function(
            "([save, a, b]) => [save, a, b].every(e => { const r = e.getBoundingClientRect();"
            " return r.top >= 0 && r.top < window.innerHeight; })"
            " && save.getBoundingClientRect().bottom <= window.innerHeight",
            arg=[save.element_handle(), boxes[0].element_handle(), boxes[1].element_handle()])
