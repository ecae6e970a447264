"""The walk of issue 14's "Done when", in one browser session over one fresh database, as a new
analyst takes it: Home → Try the demo → Review (a filter, a search, three overrides in a row) →
Agreement → Export → Datasets (upload) → Panel (three critics) → Run → Review on the new run.

Each step checks what the issue saw go wrong there, and the whole walk is watched: no request
to another host, no failed request, no console error or warning, no dialog. The other browser
tests check each item in depth; this one checks that they hold together on the path a user
takes, each page starting from the state the previous one left.
"""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import pandas as pd
import pytest

from storage.db import open_db
from storage.results.runs import get_run, list_runs
from storage.reviewing.overrides import override_history
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import review_table
from tests.fixtures_app import Watch, choose_option, name_the_reviewer, running_app, script_run, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

DEMO_TIMEOUT_MS = 120_000
# The analyst's own file: ids in `review_id` (guessed by name), a gold column, two fields.
UPLOAD = "review_id,product,review_text,gold\n" + "".join(
    f'R-{n:03d},{product},"{text} (review {n})",{gold}\n'
    for n, (product, text, gold) in enumerate(
        [("kettle", "Boils fast and pours cleanly", "yes"),
         ("kettle", "Leaked after a week", "no"),
         ("lamp", "Warm light, sturdy base", "yes"),
         ("lamp", "Flickers constantly", "no"),
         ("chair", "Comfortable for long days", "yes"),
         ("chair", "One leg shorter than the others", "no")] * 4)
)


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def _heading(page: Any, name: str) -> Any:
    return page.get_by_role("heading", name=name, exact=True)


def _open_page(page: Any, title: str) -> None:
    """Move to a page through the sidebar, as a user does (no document reload)."""
    expect = _expect()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    expect(_heading(page, "Jurybox" if title == "Home" else title)).to_be_visible()
    settled(page)


def _walk_demo(page: Any, app: dict[str, Any]) -> int:
    """Home → Try the demo → the run's own live progress, to done, with one set of numbers."""
    expect = _expect()
    main = page.get_by_test_id("stMain")
    page.goto(app["url"] + "/")
    page.get_by_role("button", name="Try the demo").click()
    page.wait_for_url(re.compile(r"/run\?run=\d+"))
    run_id = int(re.search(r"run=(\d+)", page.url).group(1))
    expect(main.get_by_text(f"Run #{run_id} · done")).to_be_visible(timeout=DEMO_TIMEOUT_MS)
    settled(page)
    assert re.search(rf"run={run_id}\b", page.url)  # still that run, not an older one
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)  # finished: no Cancel
    # One line for the run, the stored one (the job's last progress is not drawn beside it).
    expect(main.get_by_text("1,200 / 1,200 verdicts stored")).to_be_visible()
    # (The live line reads "done · N / M verdicts"; the runs table says "done · simulated".)
    expect(main.get_by_text(re.compile(r"^done · [\d,]+ / [\d,]+ verdicts"))).to_have_count(0)
    expect(main).not_to_contain_text(re.compile(r"(^|[^\d,])0 / 1,200"))  # "0 / 1,200 stored"
    run = get_run(open_db(app["db"]), run_id)
    assert run["status"] == "done" and run["ok_calls"] + run["failed_calls"] == 1200
    return run_id


def _walk_review(page: Any, app: dict[str, Any], run_id: int) -> list[str]:
    """Review with a filter and a search on: three overrides in a row, each on the item the
    filtered table shows, the reviewer typed once. Returns the items overridden."""
    expect = _expect()
    main = page.get_by_test_id("stMain")
    db = open_db(app["db"])
    wanted, total = review_table(db, run_id, ReviewFilter(disagreements_only=True, search="with", consensus_label="SPLIT"), limit=None)
    walk = [str(i) for i in wanted["item_id"]]
    assert len(walk) >= 4, "the demo must have four contested SPLIT items mentioning 'with'"

    def open_item_is(item: str) -> None:
        # The item panel and the table's ticked row show the same item: never a stale one.
        expect(main.get_by_role("heading", name=f"Item {item}", exact=True)).to_be_visible()
        ticked = main.get_by_test_id("stDataFrame").locator("tr[aria-selected='true'] td")
        expect(ticked.first).to_have_text(item)
        settled(page)

    page.get_by_role("link", name="Review its disagreements").click()
    expect(_heading(page, "Review")).to_be_visible()
    expect(main.get_by_text("items match").first).to_be_visible()
    settled(page)
    choose_option(page, main.get_by_test_id("stSelectbox").filter(has_text="Consensus"),
                  "SPLIT")
    settled(page)
    main.get_by_label("Search items and reasons").fill("with")
    main.get_by_label("Search items and reasons").press("Enter")
    expect(main.get_by_text(f"{total:,} items match")).to_be_visible()
    name_the_reviewer(page, "carla")  # typed once
    reviewer = main.get_by_label("Reviewer")
    for n, item in enumerate(walk[:3]):
        open_item_is(item)
        main.get_by_test_id("stRadio").get_by_text("REJECT", exact=True).click()
        main.get_by_label("Note (why)").fill(f"walk note {n}")
        expect(reviewer).to_have_value("carla")  # kept for every save
        main.get_by_role("button", name="Save and go to the next item").click()
        expect(main.get_by_text(f"Saved REJECT for {item}.")).to_be_visible()
    open_item_is(walk[3])  # "next" walked the filtered, searched list
    for n, item in enumerate(walk[:3]):
        (saved,) = override_history(db, run_id, item)
        assert (saved["label"], saved["note"], saved["reviewer"]) == \
            ("REJECT", f"walk note {n}", "carla")
    return walk[:3]


def _walk_agreement(page: Any) -> None:
    """Agreement counts the three reviews (in good English) and marks ties as ties."""
    expect = _expect()
    main = page.get_by_test_id("stMain")
    _open_page(page, "Agreement")
    expect(main.get_by_text("3 items reviewed by humans")).to_be_visible()
    expect(_heading(page, "Each critic against the humans")).to_be_visible()
    expect(main.get_by_text(re.compile("had a tied vote"))).to_be_visible()
    expect(main.get_by_test_id("stVegaLiteChart").first).to_be_visible()
    settled(page)


def _walk_export(page: Any, run_id: int, overridden: list[str]) -> None:
    """Export for curation: the item's fields, each critic's reasoning, the tie marker, and the
    full override history as JSONL."""
    expect = _expect()
    main = page.get_by_test_id("stMain")
    _open_page(page, "Export")
    # Each option changes only what the next download builds: the server must have it before
    # the click on Download (a click during its script run fetches the previous run's file).
    for option in ("The item's fields", "Each critic's reasoning"):
        with script_run(page):
            main.get_by_text(option, exact=True).click()
        expect(main.get_by_role("checkbox", name=option)).to_be_checked()
    with page.expect_download() as info:
        main.get_by_role("button", name="Download CSV").click()
    exported = pd.read_csv(info.value.path(), dtype=str, keep_default_na=False)
    assert info.value.suggested_filename == f"jurybox-run-{run_id}.csv"
    assert {"field: candidate_class", "field: parent", "careful: reasoning", "tie"} <= \
        set(exported.columns)
    assert set(exported.loc[exported["overridden"] == "True", "item_id"]) == set(overridden)
    assert not exported["careful: label"].str.startswith("failed").any()
    with page.expect_download() as info:
        main.get_by_role("button", name="Download the override history (JSONL)").click()
    lines = pathlib.Path(info.value.path()).read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["item_id"] for line in lines) == sorted(overridden)


def _walk_upload(page: Any, app: dict[str, Any]) -> None:
    """Datasets: the id column is guessed by name; after the import, the next steps."""
    expect = _expect()
    main = page.get_by_test_id("stMain")
    _open_page(page, "Datasets")
    main.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(
        files=[{"name": "reviews.csv", "mimeType": "text/csv", "buffer": UPLOAD.encode()}])
    expect(main.get_by_role("combobox", name="Item id column")).to_have_value("review_id")
    settled(page)
    main.get_by_role("button", name="Import").click()
    expect(main.get_by_text("Imported 24 items as dataset #2.")).to_be_visible()
    expect(main.get_by_role("link", name="Build a panel for it")).to_be_visible()
    expect(main.get_by_role("link", name="Run a panel on it")).to_be_visible()
    settled(page)


def _critic_editor(page: Any, title: str) -> Any:
    return page.get_by_test_id("stExpander").filter(
        has=page.get_by_text(title, exact=True)).first


def _walk_panel(page: Any) -> None:
    """Panel: a fresh page fits the new dataset (no warning); three critics, each new one open
    with the prompt already there; a renamed model shows in its title at once; saved."""
    expect = _expect()
    main = page.get_by_test_id("stMain")
    main.get_by_role("link", name="Build a panel for it").click()
    expect(_heading(page, "Panel")).to_be_visible()
    settled(page)
    expect(main.get_by_text("does not fit")).to_have_count(0)
    prompt = _critic_editor(page, "critic-1 · simulated · sim-careful").get_by_label(
        re.compile("^Prompt$"))
    expect(prompt).to_have_value(re.compile(r"\{product\}[\s\S]*\{review_text\}"))
    for n, (copied, model) in enumerate((("sim-careful", "sim-lenient"),
                                        ("sim-lenient", "sim-strict")), start=2):
        main.get_by_role("button", name="Add critic", exact=True).click()
        # The new critic starts from the last one's settings, its editor open, its prompt
        # the one already written for this dataset.
        editor = _critic_editor(page, f"critic-{n} · simulated · {copied}")
        expect(editor.get_by_label(re.compile("^Prompt$"))).to_have_value(
            re.compile(r"\{review_text\}"))
        settled(page)
        editor.get_by_label("Model", exact=True).fill(model)
        editor.get_by_label("Model", exact=True).press("Enter")
        renamed = _critic_editor(page, f"critic-{n} · simulated · {model}")
        expect(renamed.get_by_label("Model", exact=True)).to_be_visible()  # still open
        settled(page)
    # No tie priority on this panel: the page says what a tie will do before any run.
    expect(main.get_by_text(re.compile("No tie priority is set"))).to_be_visible()
    main.get_by_role("button", name="Save panel").click()
    expect(main.get_by_text(re.compile(r"Saved 'my panel' as version"))).to_be_visible()
    expect(main.get_by_role("link", name="Run this panel")).to_be_visible()
    settled(page)


def _walk_new_run(page: Any, app: dict[str, Any]) -> int:
    """Run, from the Panel page's next step: the new dataset and the panel just saved are
    preselected (the saved draft is that panel, not an "unsaved" twin); the page follows the
    started run to done."""
    expect = _expect()
    main = page.get_by_test_id("stMain")
    main.get_by_role("link", name="Run this panel").click()
    expect(_heading(page, "Run")).to_be_visible()
    expect(main.get_by_role("combobox", name="Dataset")).to_have_value("#2 reviews (24 items)")
    expect(main.get_by_role("combobox", name="Panel")).to_have_value(re.compile(r"^my panel · "))
    # The estimate is of this dataset and this panel: 24 items x 3 critics.
    expect(main.get_by_test_id("stMetric").filter(has_text="Verdicts")).to_contain_text("72")
    settled(page)
    before = {int(r["id"]) for r in list_runs(open_db(app["db"]))}
    main.get_by_role("button", name="Start the run").click()
    page.wait_for_url(lambda url: re.search(r"run=(\d+)", url) is not None
                      and int(re.search(r"run=(\d+)", url).group(1)) not in before)
    run_id = int(re.search(r"run=(\d+)", page.url).group(1))
    expect(main.get_by_text(f"Run #{run_id} · done")).to_be_visible(timeout=DEMO_TIMEOUT_MS)
    settled(page)
    assert re.search(rf"run={run_id}\b", page.url)
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)
    run = get_run(open_db(app["db"]), run_id)
    assert (run["status"], run["n_items"], len(run["critics"])) == ("done", 24, 3)
    return run_id


def _walk_new_review(page: Any, run_id: int) -> None:
    """Review on the new run: simulated critics on the analyst's data are said to be blind."""
    expect = _expect()
    main = page.get_by_test_id("stMain")
    page.get_by_role("link", name="Review its disagreements").click()
    page.wait_for_url(re.compile(rf"/review\?run={run_id}\b"))
    expect(_heading(page, "Review")).to_be_visible()
    expect(main.get_by_text(re.compile("simulated critics do not read the items"))).to_be_visible()
    expect(main.get_by_text("items match").first).to_be_visible()
    settled(page)
    # The item panel, when one is open, belongs to this run's dataset (R-...), not the demo's.
    expect(main.get_by_role("heading", name=re.compile(r"^Item TX-"))).to_have_count(0)


def test_the_analyst_walk_of_issue_14(app_page: Any, app_db: pathlib.Path) -> None:
    with running_app(app_db) as app:
        watch = Watch(app_page, app["url"])
        demo_run = _walk_demo(app_page, app)
        overridden = _walk_review(app_page, app, demo_run)
        _walk_agreement(app_page)
        _walk_export(app_page, demo_run, overridden)
        _walk_upload(app_page, app)
        _walk_panel(app_page)
        new_run = _walk_new_run(app_page, app)
        _walk_new_review(app_page, new_run)
        assert watch.troubles() == {"dialogs": [], "elsewhere": [], "failed": [], "console": []}
