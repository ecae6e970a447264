"""Browser tests of the Run page and the Review loop as a user clicks through them: Start then
Cancel at once cancels that run; three overrides in a row with a filter on all land."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest

from judging.demo import demo_dataset_path
from judging.panel.panel_files import dump_panel, load_panel, panel_hash
from judging.simulator.sim_server import Profile
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.panels import save_panel
from storage.results.runs import get_run
from storage.reviewing.overrides import override_history
from tests.fixtures_app import choose_option, name_the_reviewer, running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


@pytest.fixture
def slow_vendor_app(tmp_path: pathlib.Path, simulator_factory: Any) -> Any:
    """An app over a database holding the demo dataset and a panel whose two critics sit on a
    local vendor that takes 1.5 s per reply: a run that is still working when Cancel is hit."""
    server = simulator_factory(profiles={"slow-a": Profile(accuracy=0.9),
                                         "slow-b": Profile(accuracy=0.9)},
                               gold=None, latency_ms=1500)
    db_path = tmp_path / "slow.db"
    db = open_db(db_path)
    save_dataset(db, read_dataset(demo_dataset_path(), id_column="id", gold_column="gold"),
                 name="taxonomy")
    panel = load_panel(
        "schema_version: 1\nname: slow panel\nscale: {kind: nominal, labels: [KEEP, REJECT]}\n"
        "critics:\n"
        + "".join(f"  - {{name: {m}, vendor: custom, base_url: '{server.base_url}', model: {m},"
                  " prompt_template: 'Keep {candidate_class}?'}\n" for m in ("slow-a", "slow-b"))
    )
    save_panel(db, panel_hash=panel_hash(panel), name="slow panel", yaml_text=dump_panel(panel))
    db.close()
    with running_app(db_path) as app:
        yield {**app, "vendor": server}


def test_start_then_cancel_at_once_cancels_that_run(app_page: Any, slow_vendor_app: Any) -> None:
    expect = _expect()
    app_page.goto(slow_vendor_app["url"] + "/run")
    app_page.get_by_role("button", name="Start the run").click()
    app_page.wait_for_url(re.compile(r"/run\?run=\d+"))
    run_id = int(re.search(r"run=(\d+)", app_page.url).group(1))
    app_page.get_by_role("button", name="Cancel").click()  # at once: no wait for the page
    # The page shows the run that was started, and it ends cancelled (not the previous run,
    # not "running" with a Cancel button left over).
    expect(app_page.get_by_text(f"Run #{run_id} · cancelled")).to_be_visible(timeout=60_000)
    expect(app_page.get_by_role("button", name="Cancel")).to_have_count(0)
    assert re.search(rf"run={run_id}\b", app_page.url)
    run = get_run(open_db(slow_vendor_app["db"]), run_id)
    assert run["status"] == "cancelled"
    # Nothing beyond what was in flight when Cancel came: far fewer than the 600 calls planned.
    sent = slow_vendor_app["vendor"].stats()["total"]
    assert sent <= 64, sent
    assert run["ledger"]["sent_calls"] == sent


def test_three_overrides_in_a_row_with_a_filter_on(app_page: Any, demo_db: Any) -> None:
    from storage.reviewing.review_filter import ReviewFilter
    from storage.reviewing.review_queue import review_table

    expect = _expect()
    path, run_id = demo_db
    # What the page must walk: the contested SPLIT items, in the table's order.
    frame, total = review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True, consensus_label="SPLIT"), limit=None)
    expected = list(frame["item_id"][:3])
    assert len(expected) == 3
    with running_app(path) as app:
        app_page.goto(f"{app['url']}/review?run={run_id}")
        main = app_page.get_by_test_id("stMain")
        expect(main.get_by_text("items match").first).to_be_visible()
        settled(app_page)
        choose_option(app_page, main.get_by_test_id("stSelectbox").filter(has_text="Consensus"),
                      "SPLIT")
        expect(main.get_by_text(f"{total:,} items match")).to_be_visible()
        name_the_reviewer(app_page, "carla")  # typed once
        reviewer = main.get_by_label("Reviewer")
        for n, item in enumerate(expected):
            # The item panel shows the n-th item of the filtered list (never a stale one), and
            # the run that drew it is over (no element of the previous item is left to click).
            expect(main.get_by_role("heading", name=f"Item {item}", exact=True)).to_be_visible()
            settled(app_page)
            main.get_by_test_id("stRadio").get_by_text("REJECT", exact=True).click()
            main.get_by_label("Note (why)").fill(f"browser note {n}")
            expect(reviewer).to_have_value("carla")  # kept for every save
            main.get_by_role("button", name="Save and go to the next item").click()
            expect(main.get_by_text(f"Saved REJECT for {item}.")).to_be_visible()
        expect(main.get_by_role("heading", name=f"Item {frame['item_id'].iloc[3]}",
                                exact=True)).to_be_visible()
    for n, item in enumerate(expected):
        (override,) = override_history(open_db(path), run_id, item)
        assert (override["label"], override["note"], override["reviewer"]) == \
            ("REJECT", f"browser note {n}", "carla")


def test_a_loaded_panel_survives_the_next_click_and_saves_as_itself(app_page: Any,
                                                                    app_db: pathlib.Path) -> None:
    """The browser keeps widget values too: after "Load a panel", the next click once sent the
    old widgets' values back and the demo panel was saved as "my panel", yes/no."""
    from judging.demo import demo_panel_path
    from storage.panels import list_panels

    expect = _expect()
    with running_app(app_db) as app:
        app_page.goto(app["url"] + "/panel")
        main = app_page.get_by_test_id("stMain")
        expect(main.get_by_label("Panel name", exact=True).first).to_have_value("my panel")
        settled(app_page)
        main.get_by_role("button", name="Load a panel").click()
        app_page.get_by_role("button", name="Load into the editor").click()
        expect(main.get_by_label("Panel name", exact=True).first).to_have_value(
            "Taxonomy curation (demo)")
        settled(app_page)
        main.get_by_role("button", name="Add critic").click()  # the next click
        expect(main.get_by_text("critic-5 · simulated")).to_be_visible()
        settled(app_page)
        expect(main.get_by_label("Panel name", exact=True).first).to_have_value(
            "Taxonomy curation (demo)")
        main.get_by_role("button", name="Save panel").click()
        expect(main.get_by_text("Saved 'Taxonomy curation (demo)'")).to_be_visible()
    (saved,) = list_panels(open_db(app_db))
    panel = load_panel(saved["yaml"])
    demo = load_panel(demo_panel_path())
    assert (panel.name, panel.scale, panel.voting) == (demo.name, demo.scale, demo.voting)
    assert [c.name for c in panel.critics] == [*(c.name for c in demo.critics), "critic-5"]
