"""The one output format of every benchmark."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def bench_line(name: str, value: float, unit: str) -> None:
    """Print a figure as `bench: NAME VALUE UNIT`."""
    print(f"bench: {name} {value:.4g} {unit}", flush=True)


def median_seconds(fn: Callable[[], object], repeats: int = 5) -> float:
    """Median wall time of `fn()` over `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
