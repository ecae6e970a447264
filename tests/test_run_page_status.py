"""The Run and Home pages say one true thing per run: the new-run box stays open while it is
used, one status line per run that agrees after Cancel and Resume, no Start beside a twin that
is running, the dataset a panel was built for preselected, and no "simulated critics do not
read the items" on the demo's own items."""

from __future__ import annotations

import pathlib
import re
import time
from typing import Any

import pytest

from judging.panel.panel_files import dump_panel, panel_hash
from judging.runs.background.jobs import prepare_run
from storage.datasets.dataset_store import save_dataset
from storage.db import open_db
from storage.panels import save_panel
from storage.results.runs import get_run
from tests.fixtures_storage import make_parsed, tiny_panel
from tests.test_app_shell import SIMULATED_SAYS
from tests.test_app_smoke import all_text, no_exception, open_page

# "... 120 / 360 verdicts ..." in a status line: the run's figure of calls done or stored.
CALLS_LINE = re.compile(r"[\d,]+ / [\d,]+ verdicts")


def _status_lines(at: Any) -> list[str]:
    """Every line of the page that states a run's calls (text elements and progress bars)."""
    lines = [str(t.value) for t in at.text]
    lines += [str(p.proto.text) for p in at.get("progress")]
    return [line for line in lines if CALLS_LINE.search(line)]


def _slow_run(app_db: pathlib.Path, simulator_factory: Any, *, latency_ms: float,
              n_items: int = 60) -> tuple[Any, int]:
    sim = simulator_factory(latency_ms=latency_ms)
    db = open_db(app_db)
    dataset_id = save_dataset(db, make_parsed(n_items), name="mine").id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(sim.base_url))
    db.close()
    return sim, run_id


def _wait_until(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_concurrency_slider_keeps_the_new_run_box_open(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    at = open_page("run")  # no ?run=: the box opens (and the page then writes ?run= itself)
    no_exception(at)
    (box,) = [e for e in at.expander if e.label == "Start a new run"]
    assert box.proto.expanded
    at.slider(key="new_run_concurrency").set_value(8).run()
    no_exception(at)
    (box_after,) = [e for e in at.expander if e.label == "Start a new run"]
    # The same box (its identity unchanged, so the browser keeps it as it is), still open.
    assert box_after.proto.expanded and box_after.proto.id == box.proto.id


def test_cancel_on_the_page_shows_not_sent_and_no_time_left(
    app_db: pathlib.Path, simulator_factory: Any
) -> None:
    from pages.ui.state import registry

    _, run_id = _slow_run(app_db, simulator_factory, latency_ms=1500)
    at = open_page("run", query={"run": str(run_id)})
    job = registry().start_run(str(app_db), run_id, concurrency=4)
    _wait_until(lambda: job.progress().status == "running")
    at.run()
    at.button(key="cancel_run").click().run()  # calls are in flight for 1.5 s
    no_exception(at)
    (line,) = _status_lines(at)
    assert job.progress().status in ("cancelling", "cancelled")
    assert " left" not in line and not re.search(r"\d+ failed", line), line
    assert job.wait(30)
    at.run()
    no_exception(at)
    (line,) = _status_lines(at)
    text = all_text(at)
    assert f"Run #{run_id} · cancelled" in line
    assert not re.search(r"\d+ failed", text) and " left" not in line, text
    # No "Re-run N failed calls" for calls that were never sent.
    assert "rerun_failures" not in [b.key for b in at.button]


def test_after_cancel_and_resume_the_page_shows_one_line_that_agrees(
    app_db: pathlib.Path, simulator_factory: Any
) -> None:
    from pages.ui.state import registry

    sim, run_id = _slow_run(app_db, simulator_factory, latency_ms=30)
    jobs = registry()
    job = jobs.start_run(str(app_db), run_id, concurrency=4)
    _wait_until(lambda: job.progress().done >= 40)
    jobs.cancel(run_id)
    assert job.wait(30)
    job = jobs.resume(str(app_db), run_id, concurrency=8)
    assert job.wait(60) and job.progress().status == "done"
    at = open_page("run", query={"run": str(run_id)})
    no_exception(at)
    (line,) = _status_lines(at)  # one line for the run, not its last job's beside it
    assert f"Run #{run_id} · done" in line and "180 / 180 verdicts stored" in line
    run = get_run(open_db(app_db), run_id)
    sent = re.search(r"([\d,]+) calls sent", line)
    assert sent and int(sent.group(1).replace(",", "")) == sim.stats()["total"]
    cached = run["ledger"].get("cache_hits", 0)
    assert (f"{cached:,} from cache" in line) == bool(cached)
    # Each critic's row says what is stored for it.
    (rows,) = [d.value for d in at.dataframe if "stored" in d.value.columns]
    assert list(rows["stored"]) == [60, 60, 60]


def test_start_is_not_offered_beside_a_twin_that_is_running(
    app_db: pathlib.Path, simulator_factory: Any
) -> None:
    from pages.ui.state import registry

    _, run_id = _slow_run(app_db, simulator_factory, latency_ms=1500)
    job = registry().start_run(str(app_db), run_id, concurrency=2)
    try:
        at = open_page("run", query={"run": str(run_id)})
        no_exception(at)
        # The box offers the same dataset and panel (the ones the running run uses).
        assert at.selectbox(key="new_run_dataset").value == get_run(
            open_db(app_db), run_id)["dataset_id"]
        assert any(f"Run #{run_id} is running this exact panel" in w.value for w in at.warning)
        assert at.button(key="start_run").disabled
    finally:
        job.cancel()
        job.wait(30)


def test_a_new_run_preselects_the_dataset_its_panel_was_built_for(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, demo_run = demo_db
    db = open_db(path)
    demo_dataset = get_run(db, demo_run)["dataset_id"]
    newer = save_dataset(db, make_parsed(6), name="newer, other fields").id
    assert newer > demo_dataset
    at = open_page("run")
    no_exception(at)
    # The demo panel ran on the demo dataset: that one, not the newest dataset.
    assert at.selectbox(key="new_run_dataset").value == demo_dataset
    assert not at.error, [e.value for e in at.error]
    # A panel whose prompts use the newer dataset's fields brings that dataset along.
    panel = tiny_panel()
    save_panel(db, panel_hash=panel_hash(panel), name="tiny", yaml_text=dump_panel(panel))
    at.run()
    at.selectbox(key="new_run_panel").set_value(panel_hash(panel)).run()
    no_exception(at)
    assert at.selectbox(key="new_run_dataset").value == newer
    assert not at.error, [e.value for e in at.error]


def test_home_offers_no_new_demo_run_beside_one_that_is_running(app_db: pathlib.Path) -> None:
    from judging.demo import demo_dataset_path, demo_panel_path
    from judging.panel.panel_files import load_panel
    from storage.datasets.importing import read_dataset
    from storage.results.runs import set_run_status

    db = open_db(app_db)
    parsed = read_dataset(demo_dataset_path(), id_column="id", gold_column="gold")
    dataset_id = save_dataset(db, parsed, name="Demo: taxonomy candidates").id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=load_panel(demo_panel_path()))
    set_run_status(db, run_id, "running")  # this process owns it, its heartbeat fresh
    at = open_page("home")
    no_exception(at)
    keys = [b.key for b in at.button]
    assert "new_demo" not in keys, keys  # no "Start a new demo run" beside the running one
    assert at.button(key="open_demo").label == f"Follow the demo run #{run_id}"
    assert any(f"Run #{run_id} is running" in c.value for c in at.caption)
    at.button(key="open_demo").click().run()
    no_exception(at)
    assert at.title[0].value == "Run" and at.query_params["run"] == str(run_id)


@pytest.mark.parametrize("page", ["home", "review", "export"])
def test_no_simulated_warning_on_the_demos_own_items_after_demo_limit(
    app_db: pathlib.Path, page: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from judging.runs.commands.cli import main

    assert main(["demo", "--limit", "60", "--db", str(app_db), "--quiet"]) == 0
    assert "Gold agreement" in capsys.readouterr().out  # the critics read these items
    at = open_page(page, query={"run": "1"})
    no_exception(at)
    assert not any(SIMULATED_SAYS.search(w.value) for w in at.warning), \
        [w.value for w in at.warning]


# -- in a real browser ---------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_in_the_browser_the_box_stays_open_and_the_runs_table_follows_the_run(
    app_page: Any, tmp_path: pathlib.Path, simulator_factory: Any
) -> None:
    from playwright.sync_api import expect

    from judging.simulator.sim_server import Profile
    from tests.fixtures_app import running_app, settled

    sim = simulator_factory(profiles={"slow-a": Profile(accuracy=0.9),
                                      "slow-b": Profile(accuracy=0.9)},
                            gold=None, latency_ms=400)
    path = tmp_path / "browser.db"
    db = open_db(path)
    dataset_id = save_dataset(db, make_parsed(200), name="mine").id
    panel = tiny_panel(sim.base_url, models=("slow-a", "slow-b"))
    prepare_run(db, dataset_id=dataset_id, panel=panel)  # run #1, pending: the page opens it
    db.close()
    with running_app(path) as app:
        app_page.goto(app["url"] + "/run")
        main = app_page.get_by_test_id("stMain")
        app_page.wait_for_url(re.compile(r"run=1\b"))  # the page chose run #1 itself
        box = main.get_by_test_id("stExpander").filter(has_text="Start a new run").locator(
            "details")
        expect(box).to_have_attribute("open", "")
        settled(app_page)
        slider = main.get_by_role("slider", name="Calls in flight at once")
        slider.focus()
        slider.press("Home")  # 1 call in flight at once: the run is slow enough to watch
        expect(slider).to_have_attribute("aria-valuetext", "1")
        settled(app_page)
        expect(box).to_have_attribute("open", "")  # the slider did not fold the box...
        # ...so Start is there to click (it folded a moment later, hiding Start).
        main.get_by_role("button", name="Start the run").click()
        app_page.wait_for_url(re.compile(r"run=2\b"))
        expect(box).not_to_have_attribute("open", "")  # folded once the run started
        # "All runs" follows the working run: its stored calls move while it works (drawn once,
        # the table said "0 / 400" until the page was reloaded).
        table = main.get_by_test_id("stDataFrame").last
        expect(table.locator("td").filter(has_text=re.compile(r"^[1-9][\d,]* / 400$"))
               ).to_have_count(1, timeout=30_000)
        settled(app_page)
        main.get_by_role("button", name="Cancel").click()
        expect(main.get_by_text(re.compile(r"^Run #2 · cancelled"))).to_be_visible(timeout=30_000)
        expect(main.get_by_text(re.compile(r"\d+s left|unknown left"))).to_have_count(0)
        expect(main.get_by_text(re.compile(r"\d+ failed"))).to_have_count(0)


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_in_the_browser_a_run_of_another_process_is_followed_until_it_ends(
    app_page: Any, tmp_path: pathlib.Path, simulator_factory: Any
) -> None:
    from playwright.sync_api import expect

    from judging.runs.background.jobs import JobRegistry
    from tests.fixtures_app import running_app

    sim = simulator_factory(latency_ms=300)
    path = tmp_path / "elsewhere.db"
    db = open_db(path)
    dataset_id = save_dataset(db, make_parsed(200), name="mine").id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(sim.base_url))
    db.close()
    # This test's process works on the run, as `jurybox resume` would next to the app.
    job = JobRegistry().start_run(str(path), run_id, concurrency=1)
    try:
        with running_app(path) as app:
            app_page.goto(f"{app['url']}/run?run={run_id}")
            main = app_page.get_by_test_id("stMain")
            line = main.get_by_test_id("stText").filter(has_text=f"Run #{run_id} · running")
            expect(line).to_be_visible()
            first = re.search(r"([\d,]+) / 600 verdicts stored", line.inner_text())
            assert first is not None
            # The stored figures move on the page by themselves (drawn once, they froze).
            app_page.wait_for_function(
                """([prefix, before]) => {
                    const el = [...document.querySelectorAll('[data-testid="stText"]')]
                        .find(e => e.innerText.startsWith(prefix));
                    const m = el && el.innerText.match(/([\\d,]+) \\/ 600 verdicts stored/);
                    return m && parseInt(m[1].replace(/,/g, '')) > before;
                }""",
                arg=[f"Run #{run_id} · running", int(first.group(1).replace(",", ""))],
            )
            job.cancel()
            assert job.wait(30)
            # Its end shows without a reload, with the actions that now apply, and one status
            # line: the following fragment leaves the ended line to the page's full rerun (it
            # drew it too, and both showed while the page redrew).
            expect(main.get_by_role("button", name="Resume")).to_be_visible()
            ended = main.get_by_text(f"Run #{run_id} · cancelled")
            expect(ended).to_have_count(1)
            expect(ended).to_be_visible()
    finally:
        job.cancel()
        job.wait(30)
