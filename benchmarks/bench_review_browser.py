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

import hashlib
import pathlib
import random
import statistics
import tempfile
import time
from typing import Any

from benchmarks.report import bench_line
from judging.critics import Critic
from judging.panel import Panel
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict, VoteOutcome

N_ITEMS = 100_000
SMALL_ITEMS = 300  # the reference size: the demo's
CRITICS = ("careful", "lenient", "strict")
LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]
BATCH = 5_000
CHROMIUM = pathlib.Path("/usr/bin/chromium")
TIMEOUT_MS = 120_000


class _Parsed:
    """What `storage.datasets.save_dataset` reads from an import, built in memory."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.columns = ["id", "name", "parent"]
        self.fields = ["name", "parent"]
        self.id_column = "id"
        self.gold_column = None
        self.filename = "bench-100k.csv"
        self.format = "csv"
        self.content_hash = hashlib.sha256(b"bench-review-browser-100k").hexdigest()


def _panel() -> Panel:
    prompt = "Should the candidate class {name} (under {parent}) be kept, rejected, split or merged?"
    return Panel(
        name="Bench panel (simulated)",
        scale=Scale(kind="nominal", labels=LABELS),
        critics=[Critic(name=c, vendor="simulated", model=f"sim-{c}", prompt_template=prompt)
                 for c in CRITICS],
    )


def _verdict(rng: random.Random, item_id: str, critic: str, lean: str) -> Verdict:
    if rng.random() < 0.02:
        return Verdict(critic=critic, item_id=item_id, failure=FailureKind.PARSE_FAIL,
                       message="the reply holds no verdict", raw_response="I think it is fine.",
                       attempts=1, vendor="simulated", model=f"sim-{critic}", simulated=True)
    label = lean if rng.random() < 0.75 else rng.choice(LABELS)
    return Verdict(
        critic=critic, item_id=item_id, label=label, confidence=round(rng.random(), 3),
        reasoning=f"The class {item_id} reads as a {label.lower()} case to {critic}.",
        raw_request={"url": "http://127.0.0.1:1/v1/chat/completions",
                     "body": {"model": f"sim-{critic}", "messages": [
                         {"role": "user", "content": f"Judge <item>{item_id}</item>."}]}},
        raw_response=f'{{"label": "{label}", "confidence": 0.8}}',
        latency_ms=100.0, attempts=1, tokens_in=120, tokens_out=20, cost_usd=0.0,
        cache_key=hashlib.sha256(f"{item_id}{critic}".encode()).hexdigest(),
        vendor="simulated", model=f"sim-{critic}", simulated=True,
    )


def _outcome(verdicts: list[Verdict]) -> VoteOutcome:
    ok = [v.label for v in verdicts if v.ok]
    counts = {label: ok.count(label) for label in set(ok)}
    top = max(sorted(counts), key=lambda k: counts[k]) if counts else None
    return VoteOutcome(
        consensus=top,
        agreement=(counts[top] / len(verdicts)) if top else None,
        disagreement=len(counts) > 1 or len(ok) < len(verdicts),
        counts=counts,
        failed=len(verdicts) - len(ok),
    )


def build_run(path: pathlib.Path, n_items: int = N_ITEMS) -> tuple[int, int]:
    """A finished run of 3 simulated critics over `n_items` items, through the storage API.

    Returns:
        (run id, how many items the panel disagreed on).
    """
    from judging.runs.jobs import prepare_run
    from storage.calls import write_verdicts
    from storage.consensus import set_item_alpha, write_consensus
    from storage.datasets import save_dataset
    from storage.db import open_db
    from storage.runs import refresh_run_totals, set_run_status

    db = open_db(path)
    rng = random.Random(7)
    items = [Item(id=f"C-{i:06d}", fields={"name": f"Candidate class {i}",
                                          "parent": f"Parent group {i % 97}"})
             for i in range(n_items)]
    dataset_id = save_dataset(db, _Parsed(items), name="Bench: 100k candidates").id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=_panel(), name="Bench 100k")
    set_run_status(db, run_id, "running")
    contested = 0
    for start in range(0, n_items, BATCH):
        batch = []
        for item in items[start : start + BATCH]:
            lean = rng.choice(LABELS)
            verdicts = [_verdict(rng, item.id, c, lean) for c in CRITICS]
            batch.append(PanelVerdict(item.id, _outcome(verdicts), verdicts, "plurality"))
        write_verdicts(db, run_id, [v for pv in batch for v in pv.verdicts], refresh_totals=False)
        write_consensus(db, run_id, batch)
        set_item_alpha(db, run_id, {pv.item_id: (1.0 if not pv.outcome.disagreement
                                                 else round(rng.uniform(-1, 0.9), 3))
                                    for pv in batch})
        contested += sum(pv.outcome.disagreement for pv in batch)
    refresh_run_totals(db, run_id)
    set_run_status(db, run_id, "done")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return run_id, contested


def _open_review(page: Any, url: str) -> float:
    """Seconds from navigation until the table and the first item's cards are visible."""
    start = time.perf_counter()
    page.goto(url)
    page.get_by_test_id("stDataFrame").first.wait_for(state="visible")
    page.get_by_role("heading", name="Item C-").first.wait_for(state="visible")
    # The critics' cards sit under the heading: the last critic's name drawn means all are.
    # (visible ones only: the table's hidden accessibility header holds the same names)
    page.get_by_test_id("stMain").get_by_text(CRITICS[-1], exact=True).filter(
        visible=True).first.wait_for(state="visible")
    return time.perf_counter() - start


def _wait_caption(page: Any, text: str) -> None:
    page.get_by_text(text).first.wait_for(state="visible")
    page.get_by_test_id("stDataFrame").first.wait_for(state="visible")


def _new_tab(browser: Any, context: Any | None = None) -> tuple[Any, Any]:
    context = context or browser.new_context(viewport={"width": 1500, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    return context, context.new_page()


def measure(url: str, run_id: int, contested: int, n_items: int) -> dict[str, float]:
    """Drive Chromium against a running app; returns the figures in seconds, keyed
    "render_cold", "render_fresh_browser", "render", "home", "filter", "next_page"."""
    from playwright.sync_api import sync_playwright

    from tests.fixtures_app import CHROMIUM_ARGS

    figures: dict[str, float] = {}
    review = f"{url}/review?run={run_id}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            # A browser that never saw the app: Streamlit's JavaScript is fetched too.
            fresh = []
            for _ in range(4):
                context, tab = _new_tab(browser)
                fresh.append(_open_review(tab, review))
                context.close()
            figures["render_cold"] = fresh[0]  # the server's first script run (imports)
            figures["render_fresh_browser"] = statistics.median(fresh[1:])

            # A returning user: the browser has the app's JavaScript cached; a new tab each time.
            context, tab = _new_tab(browser)
            _open_review(tab, review)
            warm = []
            for _ in range(3):
                tab.close()
                _, tab = _new_tab(browser, context)
                warm.append(_open_review(tab, review))
            figures["render"] = statistics.median(warm)

            # The floor on this machine: the lightest page (Home) opened the same way.
            home = []
            for _ in range(3):
                _, home_tab = _new_tab(browser, context)
                start = time.perf_counter()
                home_tab.goto(f"{url}/")
                home_tab.get_by_role("button", name="Try the demo").wait_for(state="visible")
                home.append(time.perf_counter() - start)
                home_tab.close()
            figures["home"] = statistics.median(home)

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
