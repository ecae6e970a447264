"""`make bench`: runs every `benchmarks/bench_*.py` module's `run()` in name order.

Each benchmark prints one line per figure, `bench: NAME VALUE UNIT`, so results can be grepped
and compared across runs. Figures are medians of repeated runs where a run is cheap, and ratios
are measured side by side in the same process, because the machine is shared and noisy.
"""

from __future__ import annotations

import importlib
import pathlib
import sys


def main(argv: list[str]) -> int:
    wanted = set(argv)
    here = pathlib.Path(__file__).parent
    for path in sorted(here.glob("bench_*.py")):
        if wanted and path.stem not in wanted and path.stem.removeprefix("bench_") not in wanted:
            continue
        print(f"# {path.stem}", flush=True)
        importlib.import_module(f"benchmarks.{path.stem}").run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
