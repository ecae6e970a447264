"""Saving on Review while `jurybox judge` writes a run into the same database, and what the
team's shared queue costs at 100,000 items.

A save is what the Review page writes for one: the override (`storage.reviewing.overrides.add_override`),
the claim of the next item (`storage.reviewing.leases.claim_next`) and the lease renewed as that item is
drawn (`storage.reviewing.leases.take_lease`); its reads do not wait for a writer (WAL). The saves come
one every `THINK_S` seconds, first with the database quiet, then while `jurybox judge` runs
20,000 items x 3 critics against `jurybox simulator` (no latency), both in their own processes,
into the same file.

Figures:
    review_save_quiet_p50_s, _p90_s         a save with nothing else writing
    review_save_with_judge_p50_s, _p90_s    a save while the judge run writes
    review_save_with_judge_max_s            the slowest of those saves
    review_save_judge_calls_per_s           calls the judge run stored per second meanwhile
    review_save_load_1min                   the machine's 1-minute load average at the end
    review_save_with_judge_before_p50_s, _p90_s, _max_s, review_save_judge_before_calls_per_s
                                            with JURYBOX_BENCH_BEFORE=<git revision>: the same,
                                            the judge run served by that revision's code
                                            (extracted with `git archive`), measured first
    review_claim_100k_s                     the next undecided item claimed, 2,000 items of
                                            the list decided before it (median of 20)
    review_walk_not_yet_100k_s              the same item found as the page did before the
                                            shared queue: its place, then the next rows of
                                            "Overridden: not yet" (median of 20)
"""

from __future__ import annotations

import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.figures import bench_line, large_import_env, median_seconds, revision_tree

N_REVIEW = 100_000  # the run reviewed
N_JUDGE = 20_000  # the run `jurybox judge` writes meanwhile
SAVES = 60
THINK_S = 0.2  # between saves: a reviewer's pace, sped up
DECIDED = 2_000
ROOT = pathlib.Path(__file__).resolve().parent.parent
REVIEWER = "bench"


def _saves(db_path: pathlib.Path, run_id: int, start: str, n: int) -> tuple[list[float], str]:
    """Seconds of each of `n` saves walking the queue from `start`; the item reached."""
    from storage.db import open_db
    from storage.reviewing.leases import claim_next, take_lease
    from storage.reviewing.overrides import add_override

    db = open_db(db_path, migrate=False)
    times: list[float] = []
    item: str | None = start
    try:
        for _ in range(n):
            time.sleep(THINK_S)
            assert item is not None
            began = time.perf_counter()
            add_override(db, run_id, item, "KEEP", "bench", REVIEWER)
            item = claim_next(db, run_id, REVIEWER, after=item)
            if item is not None:
                take_lease(db, run_id, item, REVIEWER)
            times.append(time.perf_counter() - began)
    finally:
        db.close()
    assert item is not None
    return times, item


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def _judge_files(work: pathlib.Path, base_url: str, tag: str
                 ) -> tuple[pathlib.Path, pathlib.Path]:
    """A dataset and a panel for a judge run; items of their own per `tag` (no call of one
    run is a cache hit for another)."""
    data, panel = work / f"items-{tag}.csv", work / f"panel-{tag}.yaml"
    with data.open("w", encoding="utf-8") as out:
        out.write("id,candidate_class,parent\n")
        for i in range(N_JUDGE):
            out.write(f"{tag}{i:06d},Candidate class {tag} number {i},Parent {i % 97}\n")
    critics = "".join(
        f"  - name: {name}\n    vendor: custom\n    base_url: {base_url}\n"
        f"    model: sim-{name}\n    max_tokens: 100\n"
        "    prompt_template: 'Judge the class {candidate_class} under {parent}.'\n"
        for name in ("careful", "lenient", "strict"))
    panel.write_text("name: contention\nscale:\n  kind: nominal\n"
                     "  labels: [KEEP, REJECT, SPLIT, MERGE]\ncritics:\n" + critics,
                     encoding="utf-8")
    return data, panel


def _stored_calls(db_path: pathlib.Path, reviewed: int) -> int:
    from storage.db import open_db

    db = open_db(db_path, migrate=False)
    try:
        return int(db.execute("SELECT count(*) FROM calls WHERE run_id != ?",
                              [reviewed]).fetchone()[0])
    finally:
        db.close()


def _with_judge(work: pathlib.Path, db_path: pathlib.Path, run_id: int, start: str,
                root: pathlib.Path = ROOT, tag: str = "a") -> tuple[list[float], float, str]:
    """The saves while `jurybox judge` (the code in `root`) writes into `db_path`; its calls
    stored per second; the item the saves reached."""
    env = {**large_import_env(N_JUDGE), "PYTHONPATH": str(root)}
    simulator = subprocess.Popen(
        [sys.executable, "-m", "judging.runs.commands.cli", "simulator", "--plain", "--latency-ms", "0"],
        cwd=root, env=env, stdout=subprocess.PIPE, text=True)
    judge = None
    stored_before = _stored_calls(db_path, run_id)
    try:
        line = simulator.stdout.readline() if simulator.stdout else ""
        found = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
        if found is None:
            raise RuntimeError(f"the simulator did not start: {line!r}")
        data, panel = _judge_files(work, found.group(1), tag)
        judge = subprocess.Popen(
            [sys.executable, "-m", "judging.runs.commands.cli", "judge", "--data", str(data),
             "--panel", str(panel), "--db", str(db_path), "--quiet", "--concurrency", "64"],
            cwd=root, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        # Saves start once the import is over and the run is writing.
        while _stored_calls(db_path, run_id) < stored_before + 3_000:
            if judge.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("jurybox judge did not start writing: "
                                   + (judge.stderr.read().decode()[-500:] if judge.stderr
                                      else ""))
            time.sleep(0.2)
        calls_before, began = _stored_calls(db_path, run_id), time.perf_counter()
        times, reached = _saves(db_path, run_id, start, SAVES)
        rate = (_stored_calls(db_path, run_id) - calls_before) / (time.perf_counter() - began)
        if judge.poll() is not None:
            print("# the judge run ended before the saves did: raise N_JUDGE", flush=True)
        return times, rate, reached
    finally:
        for process in (judge, simulator):
            if process is not None:
                process.terminate()
                process.wait(60)


def _claim_cost(db_path: pathlib.Path, run_id: int) -> tuple[float, float]:
    """Median seconds of a claim past `DECIDED` decided items, and of the walk it replaced."""
    from storage.db import open_db
    from storage.reviewing.leases import claim_next
    from storage.reviewing.overrides import accept_consensus
    from storage.reviewing.review_filter import ReviewFilter
    from storage.reviewing.review_queue import item_position, review_table

    db = open_db(db_path, migrate=False)
    try:
        listed = ReviewFilter(disagreements_only=True)
        frame, _ = review_table(db, run_id, listed, limit=DECIDED + 1)
        order = [str(i) for i in frame["item_id"]]
        accept_consensus(db, run_id, order[:DECIDED], "someone else")
        claim = median_seconds(lambda: claim_next(db, run_id, REVIEWER, listed), repeats=20)
        not_yet = ReviewFilter(disagreements_only=True, overridden=False)

        def walk() -> None:  # what next_item read, on a list filtered "Overridden: not yet"
            item_position(db, run_id, order[DECIDED - 1], not_yet)
            review_table(db, run_id, not_yet, limit=4, offset=0)

        return claim, median_seconds(walk, repeats=20)
    finally:
        db.close()


def run() -> None:
    """Seed a 100,000-item run; time saves quiet and beside a judge run (and beside one of
    JURYBOX_BENCH_BEFORE's code); time a claim."""
    from benchmarks.pages_browser import build_run
    from storage.db import open_db
    from storage.reviewing.leases import claim_next

    before = os.environ.get("JURYBOX_BENCH_BEFORE")
    with tempfile.TemporaryDirectory(prefix="jurybox-bench-contention-") as tmp:
        work = pathlib.Path(tmp)
        db_path = work / "review.db"
        run_id, _ = build_run(db_path, N_REVIEW)
        first = claim_next(open_db(db_path), run_id, REVIEWER)
        assert first is not None
        quiet, reached = _saves(db_path, run_id, first, SAVES)
        old: tuple[list[float], float, str] | None = None
        if before:
            old = _with_judge(work, db_path, run_id, reached, revision_tree(before, work), "b")
            reached = old[2]
        busy, rate, _ = _with_judge(work, db_path, run_id, reached)
        load = os.getloadavg()[0]
        claim, walk = _claim_cost(db_path, run_id)
    bench_line("review_save_quiet_p50_s", statistics.median(quiet), "s")
    bench_line("review_save_quiet_p90_s", _p90(quiet), "s")
    bench_line("review_save_with_judge_p50_s", statistics.median(busy), "s")
    bench_line("review_save_with_judge_p90_s", _p90(busy), "s")
    bench_line("review_save_with_judge_max_s", max(busy), "s")
    bench_line("review_save_judge_calls_per_s", rate, "calls/s")
    if old is not None:
        bench_line("review_save_with_judge_before_p50_s", statistics.median(old[0]), "s")
        bench_line("review_save_with_judge_before_p90_s", _p90(old[0]), "s")
        bench_line("review_save_with_judge_before_max_s", max(old[0]), "s")
        bench_line("review_save_judge_before_calls_per_s", old[1], "calls/s")
    bench_line("review_save_load_1min", load, "load")
    bench_line("review_claim_100k_s", claim, "s")
    bench_line("review_walk_not_yet_100k_s", walk, "s")


if __name__ == "__main__":
    run()
