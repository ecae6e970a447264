"""Shared by the page benchmarks: a finished 3-critic run seeded through the storage API, and
the Review, Agreement and Home pages timed in Debian's Chromium (Playwright).

`bench_review_browser` (100,000 items, part of `make bench`) and `large_pages` (1,000,000 items,
behind `make bench-large`) both use it, so the two measure the same pages the same way.

A page counts as rendered when exactly the elements that show it are visible:
    Review      the table, the first item's heading and the last critic's card
    Agreement   the alpha figure, the per-item alpha chart and the per-critic table
    Home        the "Try the demo" button (the floor of any page here)
"""

from __future__ import annotations

import hashlib
import pathlib
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.figures import size_tag
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict, VoteOutcome

CRITICS = ("careful", "lenient", "strict")
LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]
BATCH = 5_000
CHROMIUM = pathlib.Path("/usr/bin/chromium")
TIMEOUT_MS = 180_000


class _Parsed:
    """What `storage.datasets.dataset_store.save_dataset` reads from an import, built in memory."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.columns = ["id", "name", "parent"]
        self.fields = ["name", "parent"]
        self.id_column = "id"
        self.gold_column = None
        self.filename = f"bench-{size_tag(len(items))}.csv"
        self.format = "csv"
        self.content_hash = hashlib.sha256(f"bench-pages-{len(items)}".encode()).hexdigest()


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


def build_run(path: pathlib.Path, n_items: int) -> tuple[int, int]:
    """A finished run of 3 simulated critics over `n_items` items, through the storage API
    (the functions a real run writes with), in batches of 5,000 items.

    Returns:
        (run id, how many items the panel disagreed on).
    """
    from judging.runs.background.jobs import prepare_run
    from judging.runs.stored.kept_figures import precompute_figures
    from storage.datasets.dataset_store import save_dataset
    from storage.db import open_db
    from storage.results.calls import write_verdicts
    from storage.results.consensus import set_item_alpha, write_consensus
    from storage.results.runs import refresh_run_totals, set_run_status

    db = open_db(path)
    rng = random.Random(7)
    items = [Item(id=f"C-{i:06d}", fields={"name": f"Candidate class {i}",
                                          "parent": f"Parent group {i % 97}"})
             for i in range(n_items)]
    tag = size_tag(n_items)
    dataset_id = save_dataset(db, _Parsed(items), name=f"Bench: {tag} candidates").id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=_panel(), name=f"Bench {tag}")
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
    # What the worker does when a run finishes: keep the figures the pages read.
    precompute_figures(db, run_id)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return run_id, contested


# -- the pages in Chromium ------------------------------------------------------------------------


def launch(playwright: Any) -> Any:
    """Debian's Chromium, as the browser tests launch it."""
    from tests.fixtures_app import CHROMIUM_ARGS

    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def new_tab(browser: Any, context: Any | None = None) -> tuple[Any, Any]:
    """A new tab, in `context` (a returning user: the app's JavaScript cached) or in a new one."""
    context = context or browser.new_context(viewport={"width": 1500, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    return context, context.new_page()


def open_review(page: Any, url: str) -> float:
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


def open_agreement(page: Any, url: str) -> float:
    """Seconds from navigation until alpha's figure, the per-item alpha chart (drawn: its
    canvas) and the per-critic table are visible."""
    start = time.perf_counter()
    page.goto(url)
    main = page.get_by_test_id("stMain")
    main.get_by_test_id("stMetric").filter(has_text="Krippendorff's alpha").first.wait_for(
        state="visible")
    main.get_by_test_id("stVegaLiteChart").first.locator("canvas, svg").first.wait_for(
        state="visible")
    main.get_by_test_id("stDataFrame").first.wait_for(state="visible")
    return time.perf_counter() - start


def open_home(page: Any, url: str) -> float:
    """Seconds from navigation until Home's "Try the demo" button is visible."""
    start = time.perf_counter()
    page.goto(url)
    page.get_by_role("button", name="Try the demo").wait_for(state="visible")
    return time.perf_counter() - start


def settle(page: Any) -> None:
    """Wait until the page's script run is over (Streamlit marks its root for tests). A page
    is drawn top down: its figures can be visible while the script still computes a section
    below them, and that work would slow whatever is measured next on the shared cores."""
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
        state="attached")


def warm_median(browser: Any, context: Any, opener: Callable[[Any, str], float], url: str,
                repeats: int = 3) -> float:
    """Median of `repeats` loads of `url`, each in a new tab of `context` (the browser has
    opened the app before: Streamlit's JavaScript cached, as for a returning user)."""
    times = []
    for _ in range(repeats):
        _, tab = new_tab(browser, context)
        times.append(opener(tab, url))
        settle(tab)  # not timed: only so that the next load starts on an idle server
        tab.close()
    return statistics.median(times)
