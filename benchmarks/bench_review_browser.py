"""The Review page over a 100,000-item run, in a real browser (Debian's Chromium, Playwright).

The issue's target: Review renders in about 2 s in a real browser at 100,000 items.

Figures:
    review_seed_100k_s          building the run through the storage API (100,000 items,
                                3 critics, consensus and per-item alpha), for context
    review_render_100k_s        `/review?run=N` opened in a new tab until the table and the
                                first item's detail (its heading and the critics' cards) are
                                visible; median of 3 loads in a browser that has opened the app
                                before (Streamlit's JavaScript cached, as for a returning user)
    review_render_fresh_browser_100k_s  the same in a brand-new browser context each time
                                (the JavaScript bundle fetched and parsed too); median of 3
    review_render_cold_100k_s   the very first load, on a freshly started server
    review_filter_100k_s        after flipping "Disagreements only", until the new count and
                                the table are drawn; median of 4 flips (two each way)
    review_next_page_100k_s     after typing another page number (2, 3, 2) until its caption is
                                drawn (median of 3)
    home_render_s               the Home page opened the same way: the floor of any page here
                                (Streamlit's client booting, the websocket, the first rerun)
    review_render_100k_vs_home_ratio  what the Review page costs above that floor
    review_render_300_s         review_render for a 300-item run served the same way
    review_render_100k_vs_300_ratio, review_filter_100k_vs_300_ratio
                                what the size itself costs (1.0: nothing)

Skipped (with a line saying why) when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import pathlib
import statistics
import tempfile
import time
from typing import Any

from benchmarks.figures import bench_line
from benchmarks.pages_browser import (
    CHROMIUM,
    build_run,
    launch,
    new_tab,
    open_home,
    open_review,
    warm_median,
)

N_ITEMS = 100_000
SMALL_ITEMS = 300  # the reference size: the demo's


def _wait_caption(page: Any, text: str) -> None:
    page.get_by_text(text).first.wait_for(state="visible")
    page.get_by_test_id("stDataFrame").first.wait_for(state="visible")


def measure(url: str, run_id: int, contested: int, n_items: int) -> dict[str, float]:
    """Drive Chromium against a running app; returns the figures in seconds, keyed
    "render_cold", "render_fresh_browser", "render", "home", "filter", "next_page"."""
    from playwright.sync_api import sync_playwright

    figures: dict[str, float] = {}
    review = f"{url}/review?run={run_id}"
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            # A browser that never saw the app: Streamlit's JavaScript is fetched too.
            fresh = []
            for _ in range(4):
                context, tab = new_tab(browser)
                fresh.append(open_review(tab, review))
                context.close()
            figures["render_cold"] = fresh[0]  # the server's first script run (imports)
            figures["render_fresh_browser"] = statistics.median(fresh[1:])

            # A returning user: the browser has the app's JavaScript cached; a new tab each time.
            context, tab = new_tab(browser)
            open_review(tab, review)
            figures["render"] = warm_median(browser, context, open_review, review)
            # The floor on this machine: the lightest page (Home) opened the same way.
            figures["home"] = warm_median(browser, context, open_home, f"{url}/")

            flips = []
            toggle = tab.get_by_test_id("stCheckbox").filter(has_text="Disagreements only")
            for expected in (n_items, contested, n_items, contested):
                start = time.perf_counter()
                toggle.locator("label").first.click()
                _wait_caption(tab, f"{expected:,} items match · page 1 of")
                flips.append(time.perf_counter() - start)
            figures["filter"] = statistics.median(flips)

            pages = []
            number = tab.get_by_test_id("stNumberInput").filter(has_text="Page").locator("input")
            for page_no in (2, 3, 2):
                start = time.perf_counter()
                number.fill(str(page_no))
                number.press("Enter")
                _wait_caption(tab, f"· page {page_no} of")
                pages.append(time.perf_counter() - start)
            figures["next_page"] = statistics.median(pages)
            context.close()
        finally:
            browser.close()
    return figures


def _measure_size(workdir: pathlib.Path, n_items: int) -> tuple[float, dict[str, float]]:
    """Seed a run of `n_items`, serve it, measure it. Returns (seed seconds, figures)."""
    from tests.fixtures_app import running_app

    path = workdir / f"review{n_items}.db"
    start = time.perf_counter()
    run_id, contested = build_run(path, n_items)
    seeded = time.perf_counter() - start
    with running_app(path) as server:
        return seeded, measure(server["url"], run_id, contested, n_items)


def run() -> None:
    """Seed a 100,000-item run, serve the app on a free 127.0.0.1 port, time Review in Chromium;
    then the same for a 300-item run, side by side, to show what the size itself costs."""
    if not CHROMIUM.exists():
        print(f"# bench_review_browser skipped: {CHROMIUM} is missing (apt-get install -y chromium)")
        return
    with tempfile.TemporaryDirectory(prefix="jurybox-bench-review-") as tmp:
        seeded, big = _measure_size(pathlib.Path(tmp), N_ITEMS)
        bench_line("review_seed_100k_s", seeded, "s")
        for name, value in big.items():
            if name != "home":
                bench_line(f"review_{name}_100k_s", value, "s")
        bench_line("home_render_s", big["home"], "s")
        bench_line("review_render_100k_vs_home_ratio", big["render"] / big["home"], "x")
        _, small = _measure_size(pathlib.Path(tmp), SMALL_ITEMS)
        bench_line("review_render_300_s", small["render"], "s")
        bench_line("review_render_100k_vs_300_ratio", big["render"] / small["render"], "x")
        bench_line("review_filter_100k_vs_300_ratio", big["filter"] / small["filter"], "x")


if __name__ == "__main__":
    run()
