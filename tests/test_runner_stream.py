"""Runs that stream their items: a bounded window of items in flight, nothing kept per item
when the caller keeps nothing, cancel and callback errors with the lazy feeder."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from judging.agreement import dataset_disagreement, per_item_alpha, per_item_alpha_in
from judging.engine.panel_runner import _WINDOW_PER_THREAD, judge_many, run_panel
from judging.verdicts import FailureKind, Item, PanelVerdict
from tests.fixtures_calls import Script
from tests.test_panel_run import MakeRunner, Vendor, always, answer, critic, panel_of


class CountedItems:
    """A sized collection that counts how many items the run has pulled, and checks at each
    pull how many are started and not finished (what the window bounds)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pulled = 0
        self.finished = 0
        self.most_open = 0
        self.lock = threading.Lock()
        self.on_pull: Any = None

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Item]:
        for k in range(self.n):
            with self.lock:
                self.pulled = k + 1  # per pass: the field check reads the first item apart
                self.most_open = max(self.most_open, self.pulled - self.finished)
            if self.on_pull is not None:
                self.on_pull(self.pulled)
            yield Item(id=f"i{k:05d}", fields={"text": f"class {k}"})

    def finish(self, pv: PanelVerdict) -> int:
        with self.lock:
            self.finished += 1
            return self.finished


def test_the_window_bounds_items_in_flight(make_runner: MakeRunner) -> None:
    concurrency = 2
    window = concurrency * _WINDOW_PER_THREAD
    gate = threading.Event()
    vendor = Vendor({"a": always("KEEP"), "b": always("REJECT")})

    def slow(request: httpx.Request) -> httpx.Response:
        assert gate.wait(30), "the feeder never filled the window"
        return vendor(request)

    items = CountedItems(120)
    # No call returns until the feeder has pulled one item past a full window: it then waits
    # for room, so the window is measured full, and never exceeded afterwards.
    items.on_pull = lambda pulled: gate.set() if pulled == window + 1 else None
    result = run_panel(panel_of(critic("a"), critic("b")), items, concurrency=concurrency,
                       runner=make_runner(Script(slow)), keep_verdicts=False,
                       on_item=items.finish)
    assert result.verdicts == []
    assert result.progress.items_done == items.finished == 120
    assert items.most_open == window + 1  # the one pulled waits for room before it is queued
    assert sum(vendor.calls.values()) == 240


def test_cancel_at_once_feeds_nothing_when_verdicts_are_not_kept(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": always("KEEP")})
    cancel = threading.Event()
    cancel.set()
    items = CountedItems(50_000)
    seen: list[PanelVerdict] = []
    result = run_panel(panel_of(critic("a"), critic("b")), items, concurrency=4,
                       runner=make_runner(Script(vendor)), cancel=cancel, keep_verdicts=False,
                       on_item=seen.append)
    assert sum(vendor.calls.values()) == 0
    assert items.pulled <= 1  # the feeder's first look
    assert result.verdicts == [] and seen == [] and result.progress.items_done == 0
    assert result.progress.items_total == 50_000


def test_cancel_at_once_still_gives_every_item_when_verdicts_are_kept(
    make_runner: MakeRunner,
) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": always("KEEP")})
    cancel = threading.Event()
    cancel.set()
    results = judge_many(panel_of(critic("a"), critic("b")),
        [{"id": f"i{k}", "text": str(k)} for k in range(300)], concurrency=4,
        runner=make_runner(Script(vendor)), cancel=cancel)
    assert sum(vendor.calls.values()) == 0
    assert [pv.item_id for pv in results] == [f"i{k}" for k in range(300)]
    assert all(v.failure == FailureKind.CANCELLED for pv in results for v in pv.verdicts)


def test_a_callback_error_mid_stream_stops_feeding_and_is_raised(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": always("REJECT")})
    items = CountedItems(5_000)
    concurrency = 2

    def on_item(pv: PanelVerdict) -> None:
        if items.finish(pv) == 30:  # the count this call made: exactly one call raises
            raise RuntimeError("decision store on fire (injected)")

    with pytest.raises(RuntimeError, match="on fire"):
        run_panel(panel_of(critic("a"), critic("b")), items, concurrency=concurrency,
                  runner=make_runner(Script(vendor)), keep_verdicts=False, on_item=on_item)
    # Fed no further than the window past the failing item.
    assert items.pulled <= 30 + concurrency * _WINDOW_PER_THREAD + 1
    assert sum(vendor.calls.values()) <= 2 * items.pulled


def test_on_item_gets_every_decision_in_about_input_order(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": lambda text: answer(
        "KEEP" if text.endswith("even") else "REJECT")})
    items = [{"id": f"i{k:03d}", "text": f"class {k} {'odd' if k % 2 else 'even'}"}
             for k in range(200)]
    got: list[PanelVerdict] = []
    lock = threading.Lock()

    def on_item(pv: PanelVerdict) -> None:
        with lock:
            got.append(pv)

    kept = run_panel(panel_of(critic("a"), critic("b")), items, concurrency=3,
                     runner=make_runner(Script(vendor)), on_item=on_item).verdicts
    assert sorted(pv.item_id for pv in got) == [pv.item_id for pv in kept]
    by_id = {pv.item_id: pv for pv in got}
    assert all(by_id[pv.item_id] is pv for pv in kept)  # the same decisions, not copies
    # In flight at most a window: no item finishes more than a window after a later one.
    position = [int(pv.item_id[1:]) for pv in got]
    assert max(p - n for n, p in enumerate(position)) <= 3 * _WINDOW_PER_THREAD


def test_a_generator_is_read_once_and_sized_from_its_items(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP")})
    result = run_panel(panel_of(critic("a")), ({"id": str(k), "text": "x"} for k in range(7)),
                       concurrency=2, runner=make_runner(Script(vendor)))
    assert result.progress.items_total == 7 and len(result.verdicts) == 7


# -- per-item alpha a chunk at a time ---------------------------------------------------------


def _aggregates(rows: list[list[Any]]) -> tuple[list[Any], dict[Any, int], int]:
    present = sorted({v for row in rows for v in row if v is not None})
    counts: dict[Any, int] = {}
    pairable = 0
    for row in rows:
        valid = [v for v in row if v is not None]
        if len(valid) >= 2:
            pairable += 1
            for v in valid:
                counts[v] = counts.get(v, 0) + 1
    return present, counts, pairable


@pytest.mark.parametrize(("level", "order", "values"), [
    ("nominal", ["KEEP", "REJECT", "SPLIT", "MERGE"], ["KEEP", "REJECT", "SPLIT", "MERGE"]),
    ("ordinal", ["low", "mid", "high"], ["low", "mid", "high"]),
    ("interval", None, [1.0, 2.0, 3.5, 5.0, 7.25]),
    ("ratio", None, [0.0, 0.5, 1.0, 2.0, 10.0]),
])
@pytest.mark.parametrize("chunk", [1, 3, 17])
def test_per_item_alpha_in_chunks_is_the_whole_tables_to_the_bit(
    level: str, order: list[str] | None, values: list[Any], chunk: int
) -> None:
    rng = np.random.default_rng(11)
    rows = [[None if rng.random() < 0.2 else values[int(rng.integers(len(values)))]
             for _ in range(3)] for _ in range(61)]
    whole = per_item_alpha(rows, level, order=order)
    dataset = dataset_disagreement(*_aggregates(rows), level, order=order)
    parts = np.concatenate([per_item_alpha_in(rows[i:i + chunk], dataset)
                            for i in range(0, len(rows), chunk)])
    assert np.array_equal(whole, parts, equal_nan=True)
    assert not np.isnan(whole).all()


def test_per_item_alpha_in_is_undefined_without_variation() -> None:
    rows: list[list[Any]] = [["KEEP", "KEEP"], ["KEEP", None]]
    dataset = dataset_disagreement(*_aggregates(rows), "nominal", order=["KEEP", "REJECT"])
    assert np.isnan(per_item_alpha_in(rows, dataset)).all()
