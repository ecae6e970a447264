"""The analysis at a million items (issue 25 part 6), before and after side by side in one run.

Not a `bench_*` module (`make bench` does not run it): it needs the large seeded run of
`large_pages` (minutes to seed), so it sits behind `make bench-large`. `JURYBOX_BENCH_ITEMS`
sets N (default 1,000,000); `JURYBOX_BENCH_DB` names the seeded database to reuse (seeded when
missing; never changed: the figures are measured on a copy). `JURYBOX_BENCH_BEFORE` names a
checkout of the code to compare with (e.g. the commit before this change); without it only the
current figures are printed.

Figures (<n> is the size: 1m, 100k, ...):
    analysis_load_average, analysis_load_average_end   the machine's 1-minute load average at
                                        the start and the end (a shared machine: read the
                                        figures against it)
    figures_keep_<n>_s                  what the worker now spends when a run finishes,
                                        keeping the report and the audit's population
    agreement_first_load_<n>_s          Agreement's first load on a freshly started server, in
                                        Chromium, until alpha, the per-item chart and the
                                        per-critic table are drawn (`pages_browser`)
    agreement_later_load_<n>_s          the median of 3 loads after it
    home_first_load_s                   Home's first load on another freshly started server:
                                        the floor of any first load (Streamlit's imports, the
                                        browser's first fetch of the app), computing nothing
    calibration_<n>_s, calibration_<n>_peak_rss_mb     `run_calibration` in a fresh process
    audit_update_<n>_ms                 one blind label's update: the override saved, the
                                        label-next queue and the estimate brought up to date
                                        (median of 20 labels)
    ..._before_...                      the same figure with the code of JURYBOX_BENCH_BEFORE,
                                        measured in the same run on the same database
"""

from __future__ import annotations

import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.figures import bench_line, size_tag
from benchmarks.pages_browser import (
    CHROMIUM,
    build_run,
    launch,
    new_tab,
    open_agreement,
    open_home,
    settle,
)

ROOT = pathlib.Path(__file__).resolve().parent.parent
LABELS = 20
SLOW_MS = 1_800_000  # the code before computed the report on the page: minutes on a busy machine

# Run in a child, in the checkout measured: (wall seconds, peak MB) of one step. Peak from
# VmHWM (ru_maxrss would carry over the parent's size from before the exec).
_CHILD = """
import sys, time
from storage.db import open_db
db = open_db(sys.argv[2]); run_id = int(sys.argv[3])
start = time.perf_counter()
if sys.argv[1] == "calibration":
    from judging.runs.stored.calibrate import run_calibration
    run_calibration(db, run_id)
elif sys.argv[1] == "figures":
    from judging.runs.stored.kept_figures import precompute_figures
    precompute_figures(db, run_id)
wall = time.perf_counter() - start
with open("/proc/self/status", encoding="ascii") as status:
    peak_kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
print(wall, int(peak_kb) / 1024)
"""

# One label's update, the way each version's Review and Agreement pages do it after a label.
_LABELS = """
import random, statistics, sys, time
from storage.db import open_db
from storage.reviewing.overrides import add_override
db = open_db(sys.argv[1]); run_id = int(sys.argv[2]); count = int(sys.argv[3])
rng = random.Random(5)
try:
    from judging.runs.stored.audit_live import LiveAudit
    from judging.runs.stored.kept_figures import verdicts_stamp
    from storage.results.runs import get_run
    live = LiveAudit(run_id, stamp=verdicts_stamp(get_run(db, run_id)))
    queue = lambda: live.refresh_queue(db)
    audit = lambda: live.audit(db)
except ImportError:  # the code before: the full recompute, the population kept as its page did
    from judging.runs.stored.audit_run import refresh_label_next, run_audit, run_population
    population = run_population(db, run_id)
    queue = lambda: refresh_label_next(db, run_id)
    audit = lambda: run_audit(db, run_id, population=population)
head = queue().head
audit()
times = []
for _ in range(count):
    start = time.perf_counter()
    add_override(db, run_id, head, rng.choice(["KEEP", "REJECT", "SPLIT", "MERGE"]), "", "bench",
                 blind=True)
    head = queue().head
    audit()
    times.append(time.perf_counter() - start)
print(statistics.median(times) * 1000)
"""


def _env(checkout: pathlib.Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout)}


def _child(checkout: pathlib.Path, what: str, db: pathlib.Path, run_id: int) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", _CHILD, what, str(db), str(run_id)],
                         cwd=checkout, env=_env(checkout), check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[-2]), float(out[-1])


def _labels(checkout: pathlib.Path, db: pathlib.Path, run_id: int) -> float:
    out = subprocess.run([sys.executable, "-c", _LABELS, str(db), str(run_id), str(LABELS)],
                         cwd=checkout, env=_env(checkout), check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[-1])


@contextmanager
def _server(checkout: pathlib.Path, db: pathlib.Path) -> Iterator[str]:
    """`streamlit run app.py` of `checkout` on `db`, on a free 127.0.0.1 port."""
    from tests.fixtures_app import free_port, wait_healthy

    port = free_port()
    env = {**_env(checkout), "JURYBOX_DB": str(db)}
    for name in [n for n in env if n.endswith("_API_KEY")]:
        env.pop(name)
    log = db.with_suffix(f".{port}.log")
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false",
             "--secrets.files", str(db.with_suffix(".no-secrets.toml"))],
            cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, timeout=120)
        yield url
    finally:
        process.terminate()
        process.wait(30)


def _agreement(checkout: pathlib.Path, db: pathlib.Path, run_id: int,
               warm: bool) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    page = f"/agreement?run={run_id}"
    out: dict[str, float] = {}
    with _server(checkout, db) as url, sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            context, tab = new_tab(browser)
            context.set_default_timeout(SLOW_MS)
            out["first"] = open_agreement(tab, url + page)
            settle(tab)
            tab.close()
            if warm:
                times = []
                for _ in range(3):
                    _, tab = new_tab(browser, context)
                    times.append(open_agreement(tab, url + page))
                    settle(tab)
                    tab.close()
                out["later"] = statistics.median(times)
        finally:
            browser.close()
    return out


def _home(checkout: pathlib.Path, db: pathlib.Path) -> float:
    """Home's first load on a freshly started server of `checkout`, in a new browser."""
    from playwright.sync_api import sync_playwright

    with _server(checkout, db) as url, sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            _, tab = new_tab(browser)
            seconds = open_home(tab, url + "/")
            settle(tab)
            return seconds
        finally:
            browser.close()


def _seeded(path: pathlib.Path, n: int) -> int:
    from storage.db import open_db

    if not path.exists():
        start = time.perf_counter()
        run_id, _ = build_run(path, n)
        bench_line(f"analysis_seed_{size_tag(n)}_s", time.perf_counter() - start, "s")
        return run_id
    db = open_db(path)
    run_id = int(db.execute("SELECT max(id) FROM runs").fetchone()[0])
    db.close()
    return run_id


def _prepare(work: pathlib.Path, run_id: int) -> None:
    """The copy as a run finishes without kept figures (they are measured being kept), with an
    audit sample drawn."""
    from judging.runs.stored.audit_run import draw_audit_sample
    from storage.db import open_db

    db = open_db(work)
    db.execute("DELETE FROM run_figures")
    db.conn.commit()
    if not db.execute("SELECT 1 FROM audit_items WHERE run_id = ?", [run_id]).fetchone():
        draw_audit_sample(db, run_id, 300, seed=1)
    db.close()


def measure(seeded: pathlib.Path, n: int, before: pathlib.Path | None, tmp: pathlib.Path) -> None:
    tag = size_tag(n)
    bench_line("analysis_load_average", os.getloadavg()[0], "load")
    run_id = _seeded(seeded, n)
    work = tmp / "analysis.db"
    shutil.copyfile(seeded, work)
    _prepare(work, run_id)
    figures: dict[str, Any] = {}
    keep, _ = _child(ROOT, "figures", work, run_id)
    bench_line(f"figures_keep_{tag}_s", keep, "s")
    if CHROMIUM.exists():
        if before is not None:  # first: it must not find what the current code keeps... it
            # reads none of it (the table is unknown to it), so the order only spreads the load
            figures["agreement_before"] = _agreement(before, work, run_id, warm=False)
        figures["agreement"] = _agreement(ROOT, work, run_id, warm=True)
        figures["home"] = _home(ROOT, work)
    else:
        print(f"# agreement loads skipped: {CHROMIUM} is missing (apt-get install -y chromium)")
    if before is not None:
        figures["audit_before"] = _labels(before, work, run_id)
    figures["audit"] = _labels(ROOT, work, run_id)
    if before is not None:
        figures["calibration_before"] = _child(before, "calibration", work, run_id)
    figures["calibration"] = _child(ROOT, "calibration", work, run_id)

    for suffix, key in (("", "agreement"), ("_before", "agreement_before")):
        if key in figures:
            bench_line(f"agreement_first_load_{tag}{suffix}_s", figures[key]["first"], "s")
            if "later" in figures[key]:
                bench_line(f"agreement_later_load_{tag}{suffix}_s", figures[key]["later"], "s")
    if "home" in figures:
        bench_line("home_first_load_s", figures["home"], "s")
    for suffix, key in (("", "calibration"), ("_before", "calibration_before")):
        if key in figures:
            wall, peak = figures[key]
            bench_line(f"calibration_{tag}{suffix}_s", wall, "s")
            bench_line(f"calibration_{tag}{suffix}_peak_rss_mb", peak, "MB")
    for suffix, key in (("", "audit"), ("_before", "audit_before")):
        if key in figures:
            bench_line(f"audit_update_{tag}{suffix}_ms", figures[key], "ms")
    bench_line("analysis_load_average_end", os.getloadavg()[0], "load")


def run() -> None:
    n = int(os.environ.get("JURYBOX_BENCH_ITEMS", "1000000"))
    before_dir = os.environ.get("JURYBOX_BENCH_BEFORE")
    before = pathlib.Path(before_dir).resolve() if before_dir else None
    kept = os.environ.get("JURYBOX_BENCH_DB")
    with tempfile.TemporaryDirectory(prefix="jurybox-large-analysis-") as tmp:
        seeded = pathlib.Path(kept) if kept else pathlib.Path(tmp) / "seeded.db"
        measure(seeded, n, before, pathlib.Path(tmp))


if __name__ == "__main__":
    run()
