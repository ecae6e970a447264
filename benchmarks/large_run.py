"""A large run from the outside, as a user starts it: `jurybox judge` over N items x 3 critics,
against `jurybox simulator` (no latency) in its own process.

Not a `bench_*` module (`make bench` does not run it): it takes minutes to hours, so it sits
behind `make bench-large`. `JURYBOX_BENCH_ITEMS` sets N (default 1,000,000).

Figures:
    run_<n>_wall_s          the judge command from start to exit: import, run, summary
    run_<n>_peak_rss_mb     its peak resident memory (the simulator's is not counted)
    run_<n>_calls_per_s     item x critic calls per second of that wall time
    run_<n>_db_mb           the database file afterwards (after a checkpoint), in MB
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

from benchmarks.figures import bench_line, large_import_env, size_tag

CRITICS = ("careful", "lenient", "strict")


def _dataset(path: pathlib.Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write("id,candidate_class,parent\n")
        for i in range(n):
            out.write(f"c{i:07d},Candidate class number {i},Parent {i % 97}\n")


def _panel(path: pathlib.Path, base_url: str) -> None:
    critics = "".join(
        f"  - name: {name}\n    vendor: custom\n    base_url: {base_url}\n"
        f"    model: sim-{name}\n    max_tokens: 100\n    prompt_template: *prompt\n"
        for name in CRITICS[1:])
    path.write_text(
        "name: large run\nscale:\n  kind: nominal\n  labels: [KEEP, REJECT, SPLIT, MERGE]\n"
        "critics:\n"
        f"  - name: {CRITICS[0]}\n    vendor: custom\n    base_url: {base_url}\n"
        f"    model: sim-{CRITICS[0]}\n    max_tokens: 100\n"
        "    prompt_template: &prompt 'Judge the class {candidate_class} under {parent}.'\n"
        + critics, encoding="utf-8")


def measure(n: int, workdir: pathlib.Path) -> None:
    data, panel, db = workdir / "items.csv", workdir / "panel.yaml", workdir / "large.db"
    _dataset(data, n)
    simulator = subprocess.Popen(
        [sys.executable, "-m", "judging.runs.commands.cli", "simulator", "--plain", "--latency-ms", "0"],
        stdout=subprocess.PIPE, text=True)
    try:
        line = simulator.stdout.readline() if simulator.stdout else ""
        found = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
        if found is None:
            raise RuntimeError(f"the simulator did not start: {line!r}")
        _panel(panel, found.group(1))
        env = large_import_env(n)
        start = time.perf_counter()
        judge = subprocess.Popen(
            [sys.executable, "-m", "judging.runs.commands.cli", "judge", "--data", str(data),
             "--panel", str(panel), "--db", str(db), "--quiet", "--concurrency", "64"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(judge.pid, 0)
        wall = time.perf_counter() - start
        out = (judge.stdout.read() if judge.stdout else "")
        err = (judge.stderr.read() if judge.stderr else "")
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"jurybox judge failed: {err.strip()[-500:]}")
    finally:
        simulator.terminate()
        simulator.wait(30)
    tag = f"run_{size_tag(n)}"
    bench_line(f"{tag}_wall_s", wall, "s")
    bench_line(f"{tag}_peak_rss_mb", usage.ru_maxrss / 1024, "MB")  # Linux: kilobytes
    bench_line(f"{tag}_calls_per_s", n * len(CRITICS) / wall, "calls/s")
    bench_line(f"{tag}_db_mb", sum(p.stat().st_size for p in workdir.glob("large.db*")) / 2**20,
               "MB")
    print(out.strip().splitlines()[-8:] and "\n".join(out.strip().splitlines()[:4]), flush=True)


def run() -> None:
    n = int(os.environ.get("JURYBOX_BENCH_ITEMS", "1000000"))
    with tempfile.TemporaryDirectory(prefix="jurybox-large-") as tmp:
        measure(n, pathlib.Path(tmp))


if __name__ == "__main__":
    run()
