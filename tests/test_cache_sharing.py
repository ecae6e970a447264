"""Identical requests share one cache entry whatever step produced them (issue 22, item 7).

A self-verify critic's first step sends exactly the request of a single critic with the same
model and prompt. Both were paid in one run: the two calls of an item go out together, both
miss the cache, and both are sent. Now a request identical to one in flight waits for its
answer (`judging.engine.calls.single_flight`) and is served from the cache.
"""

from __future__ import annotations

import pathlib
import threading

import httpx
import pytest
import yaml

from judging.engine.calls import CallRunner, MemoryCache
from judging.engine.calls.single_flight import SingleFlight
from judging.engine.ledger import Ledger
from judging.engine.panel_runner import judge_many
from judging.panel.critics import Critic
from judging.panel.panel_files import load_panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.scales import Scale
from judging.simulator.sim_server import Profile
from judging.verdicts import Item
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.runs import get_run
from tests.fixtures_simulator import SimulatorFactory

N_ITEMS = 10


def test_a_self_verify_first_step_and_the_same_single_critic_are_paid_once(
        tmp_path: pathlib.Path, simulator_factory: SimulatorFactory) -> None:
    # Latency long enough that both calls of an item are in flight together, as in any run.
    server = simulator_factory(profiles={"judge": Profile(accuracy=0.9)}, latency_ms=40)
    same = {"vendor": "custom", "base_url": server.base_url, "model": "judge",
            "prompt_template": "Judge {text}", "timeout_s": 10}
    panel = load_panel(yaml.safe_dump({
        "schema_version": 1, "name": "shared", "scale": {"kind": "yesno"},
        "critics": [{"name": "single", **same},
                    {"name": "checked", "kind": "self-verify", **same}]}))
    data = tmp_path / "d.csv"
    data.write_text("id,text\n" + "".join(f"i{n},item {n}\n" for n in range(N_ITEMS)),
                    encoding="utf-8")
    db_path = tmp_path / "runs.db"
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="d")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    job = JobRegistry().start_run(str(db_path), run_id, concurrency=32)
    assert job.wait(60) and job.progress().status == "done"

    # Distinct requests: each item's shared judging request once, and each verify step once.
    stats = server.stats()
    assert stats["total"] == 2 * N_ITEMS, stats
    ledger = Ledger.from_mapping(get_run(db, run_id)["ledger"])
    assert ledger.sent_calls == 2 * N_ITEMS
    assert ledger.cache_hits == N_ITEMS  # the other half of each shared request
    # Both critics still give every item a verdict.
    assert get_run(db, run_id)["ok_calls"] == 2 * N_ITEMS


@pytest.mark.parametrize("concurrency", [32, 1])
def test_judge_many_without_a_cache_sends_a_self_verify_first_step_once(
        simulator_factory: SimulatorFactory, concurrency: int) -> None:
    # The library path, no cache given: the run keeps each item's answers while the item is
    # judged, so the self-verify critic's first step takes the single critic's answer (or the
    # other way round), whether the two calls overlap (32 threads) or follow each other (1).
    server = simulator_factory(profiles={"judge": Profile(accuracy=0.9)})
    same = {"vendor": "custom", "base_url": server.base_url, "model": "judge",
            "prompt_template": "Judge {text}", "timeout_s": 10}
    panel = load_panel(yaml.safe_dump({
        "schema_version": 1, "name": "shared", "scale": {"kind": "yesno"},
        "critics": [{"name": "single", **same},
                    {"name": "checked", "kind": "self-verify", **same}]}))
    items = [{"id": f"i{n}", "text": f"item {n}"} for n in range(N_ITEMS)]
    verdicts = judge_many(panel, items, concurrency=concurrency)
    stats = server.stats()
    assert stats["total"] == 2 * N_ITEMS, stats  # the judging request once, the verify once
    assert all(v.ok for pv in verdicts for v in pv.verdicts)
    shared = [(pv.verdicts[0], pv.verdicts[1].steps[0]) for pv in verdicts]
    # Each item's two uses of the one request carry the one answer.
    assert all(a.label == b.label and a.cache_key == b.cache_key for a, b in shared)
    assert sum(a.cached or b.cached for a, b in shared) == N_ITEMS


def test_identical_calls_in_flight_at_once_send_one_request() -> None:
    """The same call from 16 threads at once: one request, 15 answers from the cache."""
    sent: list[bytes] = []
    release = threading.Event()

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        release.wait(5)  # hold the first request until every thread has asked
        return httpx.Response(200, json={
            "choices": [{"message": {"content": '{"label": "yes", "confidence": 0.9}'},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

    critic = Critic(name="c", vendor="custom", base_url="http://127.0.0.1:9/v1", model="m",
                    prompt_template="Judge {text}")
    item = Item(id="1", fields={"text": "x"})
    results = []
    with CallRunner(cache=MemoryCache(), transport=httpx.MockTransport(reply)) as runner:
        threads = [threading.Thread(target=lambda: results.append(
            runner.call(critic, item, Scale(kind="yesno")))) for _ in range(16)]
        for thread in threads:
            thread.start()
        while not sent:  # the leader's request has reached the vendor
            threading.Event().wait(0.005)
        release.set()
        for thread in threads:
            thread.join(10)
    assert len(sent) == 1
    assert len(results) == 16 and all(v.label == "yes" for v in results)
    assert sorted(v.cached for v in results) == [False] + [True] * 15


def test_a_failed_leader_lets_the_next_caller_send() -> None:
    """A failure is never cached: a waiter then sends the request itself."""
    flights = SingleFlight()
    store: dict[str, str] = {}
    assert flights.lead_or_wait("k", store.get) is None  # leads
    answers: list[str | None] = []
    waiter = threading.Thread(target=lambda: answers.append(flights.lead_or_wait("k", store.get)))
    waiter.start()
    waiter.join(0.1)
    assert waiter.is_alive()  # waiting for the leader
    flights.done("k")  # the leader failed: nothing stored
    waiter.join(5)
    assert answers == [None]  # it leads now: its own request goes out
    store["k"] = "answer"
    flights.done("k")
    assert flights.lead_or_wait("k", store.get) == "answer"


@pytest.mark.parametrize("hit", [True, False])
def test_no_flight_is_left_behind(hit: bool) -> None:
    flights = SingleFlight()
    store = {"k": "answer"} if hit else {}
    first = flights.lead_or_wait("k", store.get)
    assert (first == "answer") is hit
    if not hit:
        flights.done("k")
    assert flights.in_flight() == 0
