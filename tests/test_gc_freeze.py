"""pages/ui/gc_freeze.py: the server's long-lived objects leave the post-run collection once,
and again only when a run loaded new modules; nothing alive is lost, garbage still goes."""

from __future__ import annotations

import gc
import sys
import types
import weakref
from collections.abc import Iterator

import pytest

from pages.ui import gc_freeze


@pytest.fixture
def server_like(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """As in a Streamlit server (post-run collection on), with full collections counted."""
    monkeypatch.setattr(gc_freeze, "post_run_collection", lambda: True)
    monkeypatch.setattr(gc_freeze, "_modules_at_freeze", 0)
    collections: list[int] = []
    real_collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: collections.append(1) or real_collect(*a))
    yield collections
    gc.unfreeze()


def test_a_freeze_happens_once_per_set_of_loaded_modules(server_like: list[int]) -> None:
    gc_freeze.freeze_loaded_modules()
    assert gc.get_freeze_count() > 0 and server_like == [1]
    gc_freeze.freeze_loaded_modules()  # nothing new loaded: not even a collection
    assert server_like == [1]
    sys.modules["jurybox_gc_probe"] = types.ModuleType("jurybox_gc_probe")
    try:
        gc_freeze.freeze_loaded_modules()
    finally:
        del sys.modules["jurybox_gc_probe"]
    assert server_like == [1, 1]


def test_garbage_made_before_the_freeze_is_collected_not_frozen(server_like: list[int]) -> None:
    class Node:
        pass

    cycle = Node()
    cycle.me = cycle  # type: ignore[attr-defined]
    gone = weakref.ref(cycle)
    del cycle  # garbage, reachable only from itself
    gc_freeze.freeze_loaded_modules()
    assert gone() is None


def test_cycles_made_after_the_freeze_are_still_collected(server_like: list[int]) -> None:
    gc_freeze.freeze_loaded_modules()

    class Node:
        pass

    cycle = Node()
    cycle.me = cycle  # type: ignore[attr-defined]
    gone = weakref.ref(cycle)
    del cycle
    gc.collect(2)  # what Streamlit runs after each script run
    assert gone() is None


def test_nothing_is_frozen_without_a_server_collecting_after_each_run() -> None:
    gc.unfreeze()
    gc_freeze.freeze_loaded_modules()  # pytest: no Streamlit runtime
    assert gc.get_freeze_count() == 0
