"""The Review and Agreement pages over a 1,000,000-item, 3-critic run, in Debian's Chromium.

Not a `bench_*` module (`make bench` does not run it): seeding the run takes minutes, so it sits
behind `make bench-large`. `JURYBOX_BENCH_ITEMS` sets N (default 1,000,000);
`JURYBOX_BENCH_DB` names a database file to keep the seeded run in (seeded when missing, reused
as it is when present: for measuring a change without seeding again).

Issue 13's targets: Review's first render <= 2 s, Agreement's <= 3 s at 1,000,000 items.

Figures (<n> is the size: 1m, 100k, ...):
    pages_seed_<n>_s             building the run through the storage API, for context
    review_render_cold_<n>_s     the very first load of Review on a freshly started server
    agreement_render_cold_<n>_s  the first load of Agreement (the run's report is computed)
    review_render_<n>_s          Review opened in a new tab until its table and the first
                                 item's detail (heading, critics' cards) are visible; median of
                                 3 loads in a browser that has opened the app before
    agreement_render_<n>_s       Agreement the same way, until the alpha figure, the per-item
                                 alpha chart and the per-critic table are visible
    agreement_after_override_<n>_s  Agreement opened right after a reviewer's override (the
                                 humans' figures are new; the critics' figures are not)
    home_render_s                Home opened the same way: the floor of any page here
    review_render_<n>_vs_home_ratio, agreement_render_<n>_vs_home_ratio  above that floor

Skipped (with a line saying why) when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import time

from benchmarks.figures import bench_line, size_tag
from benchmarks.pages_browser import (
    CHROMIUM,
    build_run,
    launch,
    new_tab,
    open_agreement,
    open_home,
    open_review,
    settle,
    warm_median,
)


def _seeded(path: pathlib.Path, n: int) -> tuple[int, float | None]:
    """The run in `path` (seeded first when the file is missing). Returns (run id, seeding
    seconds, None when an existing file was reused)."""
    from storage.db import open_db

    if path.exists():
        db = open_db(path)  # migrates it, as the app would
        run_id = int(db.execute("SELECT max(id) FROM runs").fetchone()[0])
        db.close()
        return run_id, None
    start = time.perf_counter()
    run_id, _ = build_run(path, n)
    return run_id, time.perf_counter() - start


def _override(path: pathlib.Path, run_id: int) -> None:
    """A reviewer's decision on the run's first item, written as the Review page writes it."""
    from storage.db import open_db
    from storage.reviewing.overrides import add_override
    from storage.reviewing.review_queue import review_table

    db = open_db(path)
    try:
        first = str(review_table(db, run_id, sort="item", limit=1)[0]["item_id"].iloc[0])
        add_override(db, run_id, first, "MERGE", "bench: a reviewer's decision", "bench")
    finally:
        db.close()


def measure(path: pathlib.Path, n: int) -> None:
    """Seed (or reuse) the run in `path`, serve it on 127.0.0.1, time the pages, print."""
    from playwright.sync_api import sync_playwright

    from tests.fixtures_app import running_app

    tag = size_tag(n)
    run_id, seeded = _seeded(path, n)
    if seeded is not None:
        bench_line(f"pages_seed_{tag}_s", seeded, "s")
    review, figures = f"/review?run={run_id}", {}
    agreement = f"/agreement?run={run_id}"
    with running_app(path) as server, sync_playwright() as playwright:
        url = server["url"]
        browser = launch(playwright)
        try:
            context, tab = new_tab(browser)
            figures["review_render_cold"] = open_review(tab, url + review)
            settle(tab)
            figures["agreement_render_cold"] = open_agreement(tab, url + agreement)
            # The sections below the figures (the verbosity probe reads every item) go on
            # computing after the figures are drawn: the warm loads start once they are done.
            settle(tab)
            tab.close()
            # Side by side, so a busy moment of the shared machine weighs on all three.
            figures["home"] = warm_median(browser, context, open_home, url + "/")
            figures["review_render"] = warm_median(browser, context, open_review, url + review)
            figures["agreement_render"] = warm_median(browser, context, open_agreement,
                                                      url + agreement)
            _override(path, run_id)
            _, tab = new_tab(browser, context)
            figures["agreement_after_override"] = open_agreement(tab, url + agreement)
            context.close()
        finally:
            browser.close()
    for name in ("review_render_cold", "agreement_render_cold", "review_render",
                 "agreement_render", "agreement_after_override"):
        bench_line(f"{name}_{tag}_s", figures[name], "s")
    bench_line("home_render_s", figures["home"], "s")
    for page in ("review", "agreement"):
        bench_line(f"{page}_render_{tag}_vs_home_ratio",
                   figures[f"{page}_render"] / figures["home"], "x")


def run() -> None:
    if not CHROMIUM.exists():
        print(f"# large_pages skipped: {CHROMIUM} is missing (apt-get install -y chromium)")
        return
    n = int(os.environ.get("JURYBOX_BENCH_ITEMS", "1000000"))
    kept = os.environ.get("JURYBOX_BENCH_DB")
    if kept:
        measure(pathlib.Path(kept), n)
        return
    with tempfile.TemporaryDirectory(prefix="jurybox-large-pages-") as tmp:
        measure(pathlib.Path(tmp) / "pages.db", n)


if __name__ == "__main__":
    run()
