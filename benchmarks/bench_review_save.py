"""Save -> next item on Review at 100,000 items, in a real browser (issue 23, "What to build" 6:
under 0.3 s).

Figures:
    review_save_next_100k_s         median of 20 saves: from the click on "Save and go to the
                                    next item" until the next item's heading is drawn and the
                                    script run is over (the page takes input again)
    review_save_next_100k_p90_s     the 90th percentile of the same saves
    review_save_next_load_1min      the machine's 1-minute load average around the saves (the
                                    machine is shared: read the figures with it)
    review_save_next_100k_before_s  with JURYBOX_BENCH_BEFORE=<git revision>: the same saves,
                                    same database, same browser, served by that revision's code
                                    (extracted with `git archive`), measured first in this run;
                                    then review_save_next_100k_vs_before_ratio

Each save picks the label with a click and saves with a click (mouse, not keys), so a revision
without the keyboard loop is timed doing the same thing. The next item is the next row of the
default list ("Disagreements only", most contested first), read from storage beforehand.

Skipped (with a line saying why) when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.figures import bench_line, revision_tree
from benchmarks.pages_browser import CHROMIUM, LABELS, build_run, launch, new_tab

N_ITEMS = 100_000
SAVES = 20
ROOT = pathlib.Path(__file__).resolve().parent.parent
REVIEWER = "bench"


@contextlib.contextmanager
def serve(root: pathlib.Path, db_path: pathlib.Path) -> Iterator[str]:
    """`streamlit run app.py` from `root` on a free 127.0.0.1 port; yields its base URL."""
    from tests.fixtures_app import free_port, wait_healthy

    port = free_port()
    env = {**os.environ, "JURYBOX_DB": str(db_path), "PYTHONPATH": str(root)}
    for name in [n for n in env if n.endswith("_API_KEY")]:
        env.pop(name)
    log = open(db_path.with_suffix(f".{root.name}.log"), "wb")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        log.close()


def _settled(page: Any) -> None:
    page.wait_for_function("() => document.querySelector('[data-testid=\"stApp\"]')"
                           ".getAttribute('data-test-script-state') === 'notRunning'")


def measure_saves(url: str, run_id: int, order: list[str], saves: int = SAVES) -> list[float]:
    """Seconds of each of `saves` saves, walking `order` (the list's items, in order)."""
    from playwright.sync_api import sync_playwright

    times: list[float] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            context, tab = new_tab(browser)
            tab.goto(f"{url}/review?run={run_id}")
            main = tab.get_by_test_id("stMain")
            main.get_by_role("heading", name=f"Item {order[0]}", exact=True).wait_for()
            field = main.get_by_role("textbox", name="Reviewer")
            field.fill(REVIEWER)
            field.press("Enter")
            main.get_by_test_id("stForm").first.wait_for()
            _settled(tab)
            for n in range(saves):
                form = main.get_by_test_id("stForm").first
                form.get_by_test_id("stRadio").get_by_text(LABELS[n % len(LABELS)],
                                                           exact=True).click()
                start = time.perf_counter()
                form.get_by_role("button", name="Save and go to the next item").click()
                main.get_by_role("heading", name=f"Item {order[n + 1]}", exact=True).wait_for()
                _settled(tab)
                times.append(time.perf_counter() - start)
            context.close()
        finally:
            browser.close()
    return times


def run() -> None:
    """Seed a 100,000-item run, then time 20 saves in Chromium (and, with
    JURYBOX_BENCH_BEFORE, the same saves served by an earlier revision first)."""
    if not CHROMIUM.exists():
        print(f"# bench_review_save skipped: {CHROMIUM} is missing (apt-get install -y chromium)")
        return
    from storage.db import open_db
    from storage.reviewing.review_filter import ReviewFilter
    from storage.reviewing.review_queue import review_table

    before = os.environ.get("JURYBOX_BENCH_BEFORE")
    with tempfile.TemporaryDirectory(prefix="jurybox-bench-save-") as tmp:
        work = pathlib.Path(tmp)
        template = work / "template.db"
        run_id, _ = build_run(template, N_ITEMS)
        frame, _ = review_table(open_db(template), run_id, ReviewFilter(disagreements_only=True),
                                limit=SAVES + 1)
        order = [str(i) for i in frame["item_id"]]
        load = [os.getloadavg()[0]]
        figures: dict[str, list[float]] = {}
        for name, root in ((("before", revision_tree(before, work)),) if before else ()) \
                + (("after", ROOT),):
            db_path = work / f"{name}.db"  # a fresh copy each: nothing decided yet
            db_path.write_bytes(template.read_bytes())
            with serve(root, db_path) as url:
                figures[name] = measure_saves(url, run_id, order)
            load.append(os.getloadavg()[0])
        after = figures["after"]
        bench_line("review_save_next_100k_s", statistics.median(after), "s")
        bench_line("review_save_next_100k_p90_s", statistics.quantiles(after, n=10)[-1], "s")
        bench_line("review_save_next_load_1min", statistics.mean(load), "load")
        if before:
            old = statistics.median(figures["before"])
            bench_line("review_save_next_100k_before_s", old, "s")
            bench_line("review_save_next_100k_vs_before_ratio",
                       statistics.median(after) / old, "x")


if __name__ == "__main__":
    run()
