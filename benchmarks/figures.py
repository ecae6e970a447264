"""The one output format of every benchmark, and the helpers several share."""

from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import tarfile
import time
from collections.abc import Callable


def bench_line(name: str, value: float, unit: str) -> None:
    """Print a figure as `bench: NAME VALUE UNIT`."""
    print(f"bench: {name} {value:.4g} {unit}", flush=True)


def size_tag(n: int) -> str:
    """100000 -> "100k", 1000000 -> "1m", 300 -> "300" (the figures' names)."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def large_import_env(n: int) -> dict[str, str]:
    """This process's environment with the import limits raised for an `n`-row file, as the
    manual (docs/storage.md, "Scaling") tells a user to raise them."""
    return {**os.environ, "JURYBOX_MAX_ROWS": str(max(n, 500_000)),
            "JURYBOX_MAX_DECODED_MB": "4096", "JURYBOX_MAX_FILE_MB": "4096"}


def median_seconds(fn: Callable[[], object], repeats: int = 5) -> float:
    """Median wall time of `fn()` over `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


_ROOT = pathlib.Path(__file__).resolve().parent.parent


def revision_tree(revision: str, into: pathlib.Path) -> pathlib.Path:
    """The files of `revision` of this repository, extracted under `into`."""
    archive = into / "before.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(_ROOT), "archive", revision], stdout=out, check=True)
    root = into / "before"
    root.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return root
