"""Storage figures: writing verdicts, reading the review table at 100,000 items, and the
throughput run with storage on.

Figures:
    storage_write_100k_verdicts_s   100,000 verdicts (with raw request/response) written through
                                    `write_verdicts` in batches of 200, as a job's writer does,
                                    into a fresh file (median of 3; target <= 2 s); also its CPU
                                    time and the MB handed to write() (WAL + checkpoints: a
                                    figure the machine's load does not move)
    storage_write_100k_verdicts_template_s  the same verdicts with their requests left to the
                                    run's request template (`judging.engine.calls.template`), side by
                                    side; storage_write_template_speedup is the ratio
    storage_write_floor_100k_s      the floor under those figures: the very rows the template write
                                    stored, read back and inserted into a copy of `calls` with no
                                    index, no upsert, no cache index, in one transaction (one
                                    `executemany`: what SQLite and Python's sqlite3 charge for
                                    the row itself)
    storage_bytes_per_verdict       the demo run (300 items x 4 critics on the simulator): its
                                    calls, their indexes and templates over its calls, after
                                    VACUUM (target <= 600 B)
    storage_review_page_100k_s      review table over 100,000 items x 3 critics: disagreements
                                    only, most contested first, one page of 50 (median)
    storage_review_search_100k_s    the same with a text search across items and reasons
    storage_review_all_100k_s       every one of the 100,000 rows with its critic columns
                                    (target <= 1 s for each review figure)
    storage_throughput_wall_s       1000 items x 3 critics at 100 ms, concurrency 64, simulator
                                    in a subprocess, through a background job writing SQLite
    storage_throughput_ratio        wall / ideal (calls x latency / concurrency), target <= 1.3
    storage_throughput_engine_ratio the engine alone (no storage), side by side, for comparison
    storage_throughput_cpu_ms_per_call  client CPU per call with storage on (engine alone:
                                    storage_throughput_engine_cpu_ms_per_call)
    storage_calibration_loop_s      a fixed pure-Python loop (3 million additions), median of
                                    before and after: the machine is shared, and this says how
                                    loaded it was while the figures above were taken
"""

from __future__ import annotations

import hashlib
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.figures import bench_line, median_seconds
from judging.engine.panel_runner import judge_many
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict, VoteOutcome

N_VERDICTS = 100_000
N_REVIEW_ITEMS = 100_000
CRITICS = ("careful", "lenient", "strict")
LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]


class _Parsed:
    def __init__(self, items: list[Item], tag: str) -> None:
        self.items = items
        self.columns = ["id", "text", "parent"]
        self.fields = ["text", "parent"]
        self.id_column = "id"
        self.gold_column = None
        self.filename = f"{tag}.csv"
        self.format = "csv"
        self.content_hash = hashlib.sha256(tag.encode()).hexdigest()


def _items(n: int) -> list[Item]:
    return [
        Item(id=f"i{i:06d}", fields={"text": f"Candidate class number {i}", "parent": f"Parent {i % 17}"})
        for i in range(n)
    ]


def _verdict(rng: random.Random, item_id: str, critic: str) -> Verdict:
    if rng.random() < 0.03:
        return Verdict(critic=critic, item_id=item_id, failure=FailureKind.PARSE_FAIL,
                       message="the reply holds no verdict", raw_response="I think it is fine.",
                       attempts=1)
    label = rng.choice(LABELS)
    return Verdict(
        critic=critic, item_id=item_id, label=label, confidence=round(rng.random(), 3),
        reasoning=f"The class {item_id} looks like a {label.lower()} case to {critic}.",
        raw_request={"url": "http://127.0.0.1:1/v1/chat/completions",
                     "body": {"model": f"sim-{critic}", "messages": [
                         {"role": "system", "content": "You are a careful taxonomist. " * 4},
                         {"role": "user", "content": f"Judge <item>{item_id}</item>. " * 6}]}},
        raw_response=f'{{"label": "{label}", "confidence": 0.8, "reasoning": "..."}}',
        latency_ms=100.0, attempts=1, tokens_in=180, tokens_out=30, cost_usd=0.0,
        cache_key=hashlib.sha256(f"{item_id}{critic}".encode()).hexdigest(),
        vendor="simulated", model=f"sim-{critic}", simulated=True,
    )


def _seed_run(db: Any, n_items: int, tag: str) -> tuple[int, list[Item]]:
    from storage.datasets.dataset_store import save_dataset
    from storage.panels import save_panel
    from storage.results.runs import create_run

    items = _items(n_items)
    dataset_id = save_dataset(db, _Parsed(items, tag)).id
    panel_hash = hashlib.sha256(tag.encode()).hexdigest()[:16]
    save_panel(db, panel_hash=panel_hash, name=tag, yaml_text="name: bench\n")
    run_id = create_run(db, dataset_id=dataset_id, panel_hash=panel_hash, critics=list(CRITICS))
    return run_id, items


def _bytes_written() -> int | None:
    """Bytes this process has handed to write() so far (Linux), else None."""
    try:
        with open("/proc/self/io", encoding="ascii") as fh:
            fields = dict(line.split(": ") for line in fh.read().splitlines())
        return int(fields["wchar"])
    except (OSError, KeyError, ValueError):
        return None


def _insert_floor(db: Any) -> float:
    """Seconds to insert the run's stored `calls` rows again into an unindexed copy of the
    table, in one transaction: no write path can store these rows for less."""
    rows = db.execute("SELECT * FROM calls").fetchall()
    db.execute("CREATE TABLE calls_floor AS SELECT * FROM calls WHERE 0")
    marks = ", ".join("?" for _ in rows[0])
    start = time.perf_counter()
    db.conn.execute("BEGIN")
    db.conn.executemany(f"INSERT INTO calls_floor VALUES ({marks})", rows)
    db.conn.execute("COMMIT")
    return time.perf_counter() - start


def bench_write(workdir: Path, repeats: int = 3) -> None:
    from storage.db import open_db
    from storage.results.calls import write_verdicts
    from storage.results.runs import refresh_run_totals

    n_items = N_VERDICTS // len(CRITICS) + 1
    rng = random.Random(1)
    verdicts = [_verdict(rng, item.id, c) for item in _items(n_items) for c in CRITICS]
    verdicts = verdicts[:N_VERDICTS]
    walls, cpus, written, templated, floors = [], [], [], [], []
    rebuilt = [True] * 200
    for n in range(repeats):
        # Side by side: requests stored whole (the figure kept from before), then left to the
        # run's request template (what a job's writer does for a plain call it checked).
        for whole in (True, False):
            # A fresh file each time: the figure is a run's verdicts going into a new database.
            path = workdir / f"write-{n}-{whole}.db"
            db = open_db(path)
            run_id, _ = _seed_run(db, n_items, f"write-{n}-{whole}")
            before = _bytes_written()
            start, cpu = time.perf_counter(), time.process_time()
            for offset in range(0, len(verdicts), 200):
                write_verdicts(db, run_id, verdicts[offset : offset + 200], refresh_totals=False,
                               rebuilt=None if whole else rebuilt)
            refresh_run_totals(db, run_id)
            if not whole:
                templated.append(time.perf_counter() - start)
                floors.append(_insert_floor(db))
            else:
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - cpu)
                after = _bytes_written()
                if before is not None and after is not None:
                    written.append((after - before) / 2**20)
            db.close()
            for leftover in workdir.glob(f"write-{n}-{whole}.db*"):
                leftover.unlink()
    bench_line("storage_write_100k_verdicts_s", statistics.median(walls), "s")
    bench_line("storage_write_100k_verdicts_template_s", statistics.median(templated), "s")
    bench_line("storage_write_floor_100k_s", statistics.median(floors), "s")
    bench_line("storage_write_template_over_floor", statistics.median(templated)
               / statistics.median(floors), "x")
    bench_line("storage_write_template_speedup", statistics.median(walls)
               / statistics.median(templated), "x")
    bench_line("storage_write_100k_verdicts_cpu_s", statistics.median(cpus), "s")
    if written:
        # Independent of how loaded the shared machine is: WAL frames + checkpoints.
        bench_line("storage_write_100k_verdicts_written_mb", statistics.median(written), "MB")


def bench_footprint(workdir: Path) -> None:
    """Bytes per verdict of the demo run: its 1,200 calls with their indexes, cache index,
    request templates and reply dictionaries, after VACUUM, over the number of calls (SQLite's
    dbstat table)."""
    from judging.demo import demo_dataset_path, demo_panel_path
    from judging.panel.panel_files import load_panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db

    path = workdir / "footprint.db"
    db = open_db(path)
    dataset = save_dataset(db, read_dataset(demo_dataset_path(), id_column="id",
                                            gold_column="gold"), name="demo")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(demo_panel_path()))
    if not JobRegistry().start_run(str(path), run_id, concurrency=64).wait(300):
        raise RuntimeError("the demo run of the footprint benchmark did not finish")
    db.execute("VACUUM")
    sizes = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
    calls = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    used = sum(size for name, size in sizes.items()
               if name.startswith("call") or "request_templates" in name
               or "reply_dictionaries" in name)
    db.close()
    bench_line("storage_bytes_per_verdict", used / calls, "B")


def bench_review(workdir: Path) -> None:
    from storage.db import open_db
    from storage.results.calls import write_verdicts
    from storage.results.consensus import set_item_alpha, write_consensus
    from storage.reviewing.review_filter import ReviewFilter
    from storage.reviewing.review_queue import review_table

    db = open_db(workdir / "review.db")
    run_id, items = _seed_run(db, N_REVIEW_ITEMS, "review")
    rng = random.Random(2)
    panel_verdicts = []
    for item in items:
        vs = [_verdict(rng, item.id, c) for c in CRITICS]
        ok = [v.label for v in vs if v.ok]
        counts = {label: ok.count(label) for label in set(ok)}
        top = max(counts, key=lambda k: counts[k]) if counts else None
        outcome = VoteOutcome(
            consensus=top, agreement=(counts[top] / 3 if top else None),
            disagreement=len(counts) > 1 or len(ok) < 3, counts=counts, failed=3 - len(ok),
        )
        panel_verdicts.append(PanelVerdict(item.id, outcome, vs, "plurality"))
    write_verdicts(db, run_id, [v for pv in panel_verdicts for v in pv.verdicts])
    write_consensus(db, run_id, panel_verdicts)
    set_item_alpha(db, run_id, {item.id: rng.uniform(-1, 1) for item in items})

    def page() -> None:
        review_table(db, run_id, ReviewFilter(disagreements_only=True), sort="contested", limit=50)

    def search() -> None:
        review_table(db, run_id, ReviewFilter(search="number 4242"), sort="contested", limit=50)

    def everything() -> None:
        frame, total = review_table(db, run_id, limit=None, sort="item")
        assert total == len(frame) == N_REVIEW_ITEMS

    bench_line("storage_review_page_100k_s", median_seconds(page, 5), "s")
    bench_line("storage_review_search_100k_s", median_seconds(search, 3), "s")
    bench_line("storage_review_all_100k_s", median_seconds(everything, 3), "s")
    db.close()


def bench_throughput(workdir: Path, repeats: int = 3) -> None:
    from benchmarks.bench_throughput import (
        CONCURRENCY,
        ITEMS,
        LATENCY_MS,
        SimulatorProcess,
        make_items,
        make_panel,
    )
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.db import open_db

    calls = ITEMS * 3
    ideal = calls * LATENCY_MS / 1000.0 / CONCURRENCY
    sim = SimulatorProcess(LATENCY_MS)
    try:
        panel = make_panel(sim.base_url)
        raw = make_items()
        items = [Item(id=r["id"], fields={k: v for k, v in r.items() if k != "id"}) for r in raw]
        judge_many(panel, raw[:100], concurrency=CONCURRENCY)  # warm-up
        walls, engine_walls, cpus, engine_cpus = [], [], [], []
        for n in range(repeats):
            # A fresh database each time: otherwise every call would be a cache hit.
            path = workdir / f"throughput-{n}.db"
            db = open_db(path)
            dataset_id = save_dataset(db, _Parsed(items, f"throughput-{n}")).id
            run_id = prepare_run(db, dataset_id=dataset_id, panel=panel)
            sim.reset()
            start, cpu = time.perf_counter(), time.process_time()
            job = JobRegistry().start_run(path, run_id, concurrency=CONCURRENCY)
            job.wait()
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
            progress = job.progress()
            stored = db.execute(
                "SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NULL", [run_id]
            ).fetchone()[0]
            if progress.status != "done" or stored != calls or sim.stats()["total"] != calls:
                raise RuntimeError(f"the run did not store {calls} clean calls: {progress}")
            db.close()
            sim.reset()
            start, cpu = time.perf_counter(), time.process_time()
            judge_many(panel, raw, concurrency=CONCURRENCY)
            engine_walls.append(time.perf_counter() - start)
            engine_cpus.append(time.process_time() - cpu)
        wall = statistics.median(walls)
        bench_line("storage_throughput_wall_s", wall, "s")
        bench_line("storage_throughput_ratio", wall / ideal, "x")
        bench_line("storage_throughput_engine_ratio", statistics.median(engine_walls) / ideal, "x")
        bench_line("storage_throughput_cpu_ms_per_call", statistics.median(cpus) / calls * 1000, "ms")
        bench_line("storage_throughput_engine_cpu_ms_per_call",
                   statistics.median(engine_cpus) / calls * 1000, "ms")
    finally:
        sim.stop()


def calibration_loop() -> float:
    """Seconds for a fixed pure-Python workload: how busy the shared machine is right now."""

    def work() -> None:
        total = 0
        for i in range(3_000_000):
            total += i

    return median_seconds(work, 3)


def run() -> None:
    before = calibration_loop()
    with tempfile.TemporaryDirectory(prefix="jurybox-bench-") as tmp:
        workdir = Path(tmp)
        bench_write(workdir)
        bench_footprint(workdir)
        bench_review(workdir)
        bench_throughput(workdir)
    bench_line("storage_calibration_loop_s", statistics.median([before, calibration_loop()]), "s")


if __name__ == "__main__":
    run()
