"""How the suite runs: in parallel workers (pytest-xdist), longest files first, and with few or
many stress trials.

- Parallel: `make test` runs `pytest -n 2`, and pyproject's `--dist loadfile` sends each test
  file whole to one worker: the tests of a file run in their order, in one process, as they do
  without -n, so a module-scoped fixture (a running app and its Chromium, a database the
  file's tests build up) is made once and seen by every test of its file. Each worker is its
  own process with its own session fixtures, environment, temp folders and
  `st.cache_resource`: files never share those.
- Order: the files holding browser tests (the longest, up to minutes each) are handed out
  first, so the last file a worker gets is a short one and both workers finish close together.
  The tests of a file keep their order.
- Stress: `trials(few, many)` is how many times a race or a kill is repeated. `few` by default
  (the bug shows in a handful), `many` with `JURYBOX_STRESS=1`, which CI sets.
"""

from __future__ import annotations

import os

import pytest

STRESS = os.environ.get("JURYBOX_STRESS", "") not in ("", "0")


def trials(few: int, many: int) -> int:
    """How often a stress test repeats its race: `many` under JURYBOX_STRESS=1 (CI), else `few`."""
    return many if STRESS else few


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a browser test first; otherwise the order pytest collected (a stable sort)."""
    slow_files = {item.path for item in items if item.get_closest_marker("browser")}
    items.sort(key=lambda item: item.path not in slow_files)
