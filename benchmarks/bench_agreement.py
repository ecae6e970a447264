"""Agreement statistics at scale: 100,000 items x 5 critics, nominal labels.

Figures (medians of a few runs; the machine is shared):
    agreement_encode          labels -> integer codes (list of lists of strings, 3% missing)
    agreement_core            encode + alpha + per-item alpha + pairwise kappa matrix +
                              1000-resample bootstrap, together (target <= 3 s)
    agreement_bootstrap_1000  the bootstrap alone
    agreement_dawid_skene     Dawid-Skene EM fit (target <= 2 s)
    agreement_report          the whole report (pivot of a long table, references, everything)
    agreement_core_peak_mem   peak traced memory of agreement_core
    *_cpu                     process CPU time of the same work (robust to a busy machine;
                              BLAS threads can make it exceed the wall time)
    agreement_alpha_vs_krippendorff_pkg  alpha speed-up over the `krippendorff` package, same
                              data, side by side (only when the package is installed)
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import pandas as pd

from benchmarks.figures import bench_line, median_seconds
from judging.agreement import (
    alpha_with_reason,
    bootstrap_alpha,
    encode_ratings,
    pairwise_kappa,
    per_item_alpha,
)
from judging.analysis.agreement_report import agreement_report
from judging.voting.dawid_skene import dawid_skene

N_ITEMS = 100_000
N_CRITICS = 5
LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]


def _panel(seed: int = 0) -> tuple[list[list[str | None]], np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.choice(len(LABELS), N_ITEMS, p=[0.4, 0.3, 0.2, 0.1])
    accuracy = np.array([0.9, 0.8, 0.75, 0.65, 0.6])
    noise = rng.integers(0, len(LABELS), (N_ITEMS, N_CRITICS))
    codes = np.where(rng.random((N_ITEMS, N_CRITICS)) < accuracy, truth[:, None], noise)
    grid = np.array(LABELS, dtype=object)[codes]
    grid[rng.random(grid.shape) < 0.03] = None
    return grid.tolist(), truth


def _core(data: list[list[str | None]]) -> None:
    matrix = encode_ratings(data)
    alpha_with_reason(matrix)
    per_item_alpha(matrix)
    pairwise_kappa(matrix)
    bootstrap_alpha(matrix, resamples=1000, seed=0)


def _median_cpu(fn: Callable[[], object], repeats: int = 3) -> float:
    """Median process CPU time of `fn()` (all threads of this process)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def run() -> None:
    data, truth = _panel()
    matrix = encode_ratings(data)

    bench_line("agreement_encode", median_seconds(lambda: encode_ratings(data), 3), "s")
    bench_line("agreement_core", median_seconds(lambda: _core(data), 3), "s")
    # CPU time of the same work: robust to other processes sharing the 2 cores.
    bench_line("agreement_core_cpu", _median_cpu(lambda: _core(data)), "s")
    bench_line(
        "agreement_bootstrap_1000",
        median_seconds(lambda: bootstrap_alpha(matrix, resamples=1000, seed=0), 3),
        "s",
    )
    bench_line("agreement_dawid_skene", median_seconds(lambda: dawid_skene(matrix), 3), "s")
    bench_line("agreement_dawid_skene_cpu", _median_cpu(lambda: dawid_skene(matrix)), "s")

    items = [f"item-{i}" for i in range(N_ITEMS)]
    critics = [f"critic-{c}" for c in range(N_CRITICS)]
    long = pd.DataFrame({
        "item_id": np.repeat(items, N_CRITICS),
        "critic": np.tile(critics, N_ITEMS),
        "value": np.array(data, dtype=object).ravel(),
    })
    gold = {item: LABELS[t] for item, t in zip(items, truth, strict=True)}
    humans = {item: gold[item] for item in items[::50]}

    def report() -> None:
        agreement_report(long, order=LABELS, consensus=gold, overrides=humans, gold=gold,
                         resamples=1000)

    bench_line("agreement_report", median_seconds(report, 3), "s")
    bench_line("agreement_report_cpu", _median_cpu(report), "s")

    tracemalloc.start()
    _core(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    bench_line("agreement_core_peak_mem", peak / 2**20, "MiB")

    try:
        import krippendorff
    except ImportError:  # a test-only dependency: skip the comparison without it
        return
    numeric = np.where(matrix.codes >= 0, matrix.codes, np.nan).astype(float).T
    theirs = median_seconds(
        lambda: krippendorff.alpha(numeric, level_of_measurement="nominal"), 3
    )
    ours = median_seconds(lambda: alpha_with_reason(matrix), 3)
    bench_line("agreement_alpha_vs_krippendorff_pkg", theirs / ours, "x")


if __name__ == "__main__":
    run()
