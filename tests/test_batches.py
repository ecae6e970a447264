"""Batch mode (issue 13 part 3): critics whose calls go through a vendor's batch API.

Everything runs against the simulator over real HTTP on 127.0.0.1: its OpenAI-style Batch API
(files + /v1/batches) and Anthropic-style Message Batches, with a fast clock.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from judging.engine.anthropic_messages import messages_params
from judging.engine.batches import lines as batch_lines
from judging.engine.batches.batch_results import parse_results
from judging.engine.batches.lines import batch_line, chunked
from judging.engine.calls.prepare import prepare_call
from judging.engine.estimate import estimate_run
from judging.engine.parsing import parse_reply
from judging.errors import ConfigError
from judging.panel.critics import Critic
from judging.panel.panel_checks import check_panel
from judging.panel.panel_files import save_panel
from judging.panel.panel_model import Panel
from judging.panel.vendors import cost_usd
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.scales import Scale
from judging.simulator.sim_server import SimulatorServer
from judging.verdicts import Item
from storage.datasets.dataset_store import save_dataset
from storage.db import open_db
from storage.results.calls import load_verdicts
from storage.results.runs import get_run
from storage.results.vendor_batches import run_batches
from tests.fixtures_network import Reply
from tests.fixtures_storage import LABELS, assert_secret_stored_nowhere, make_parsed

SCALE = Scale(kind="nominal", labels=LABELS)
PLANTED_KEY = "sk-proj-PLANTED-batch-key-000111222333"


@pytest.fixture
def batch_sim() -> Iterator[Any]:
    servers: list[SimulatorServer] = []

    def make(**options: Any) -> SimulatorServer:
        options.setdefault("batch_seconds", 0.3)
        server = SimulatorServer(latency_ms=1, **options).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def _critic(name: str, base_url: str, **changes: Any) -> Critic:
    fields: dict[str, Any] = dict(
        name=name, vendor="simulated", model=f"m-{name}", base_url=base_url,
        system_prompt="You curate a product taxonomy.",
        prompt_template="Judge this candidate class: {text}", max_tokens=100, timeout_s=10,
        price_in_per_mtok=2.0, price_out_per_mtok=8.0,
    )
    fields.update(changes)
    return Critic(**fields)


def _panel(base_url: str, *critics: tuple[str, dict[str, Any]]) -> Panel:
    return Panel(name="batch", scale=SCALE,
                 critics=[_critic(name, base_url, **changes) for name, changes in critics])


MIXED = (("opus", {"mode": "batch"}), ("haiku", {"mode": "batch", "batch_api": "anthropic"}),
         ("live", {}))


def _run(db: Any, db_path: str, panel: Panel, n_items: int, **start: Any) -> tuple[int, Any]:
    dataset_id = save_dataset(db, make_parsed(n_items)).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel)
    job = JobRegistry().start_run(db_path, run_id, concurrency=8, **start)
    assert job.wait(60), "the run did not finish"
    return run_id, job


def _calls(db: Any, run_id: int) -> dict[tuple[str, str], dict[str, Any]]:
    rows = db.query("SELECT * FROM calls WHERE run_id = ?", [run_id])
    return {(row["item_id"], row["critic"]): row for row in rows}


# -- request lines and result lines ------------------------------------------------------------


def test_a_batch_line_carries_the_very_request_a_live_call_sends() -> None:
    critic = _critic("a", "http://127.0.0.1:9/v1", json_mode=True, extra={"seed": 7})
    prepared = prepare_call(critic, Item(id="1", fields={"text": "Lamps"}), SCALE)
    line = batch_line("openai", prepared)
    assert line == {"custom_id": prepared.cache_key, "method": "POST",
                    "url": "/v1/chat/completions", "body": prepared.body}
    assert len(line["custom_id"]) == 64  # within Anthropic's 64-character limit
    params = batch_line("anthropic", prepared)["params"]
    # The Messages API takes the system prompt apart and refuses OpenAI-only parameters.
    assert params["system"] == [{"type": "text",
                                 "text": prepared.body["messages"][0]["content"]}]
    assert params["system"][0]["text"].startswith("You curate a product taxonomy.")
    assert [m["role"] for m in params["messages"]] == ["user"]
    assert params["messages"][0]["content"] == prepared.body["messages"][1]["content"]
    assert "response_format" not in params and "seed" not in params
    assert params["max_tokens"] == 100 and params["model"] == "m-a"
    assert messages_params({"model": "x", "messages": [{"role": "user", "content": "hi"}],
                             "max_tokens": 5}) == {
        "model": "x", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


def test_requests_are_deduplicated_and_chunked_within_the_vendor_limit(monkeypatch) -> None:
    critic = _critic("a", "http://127.0.0.1:9/v1")
    items = [Item(id=str(i), fields={"text": f"class {i % 5}"}) for i in range(12)]
    monkeypatch.setitem(batch_lines.MAX_REQUESTS, "openai", 2)
    chunks = list(chunked("openai", (prepare_call(critic, item, SCALE) for item in items)))
    # 12 items ask 5 distinct things: 5 requests, at most 2 to a batch.
    assert [len(chunk.lines) for chunk in chunks] == [2, 2, 1]
    ids = [json.loads(text)["custom_id"] for chunk in chunks for text in chunk.lines]
    assert len(set(ids)) == 5
    assert all(chunk.n_bytes == sum(len(t.encode()) + 1 for t in chunk.lines) for chunk in chunks)


def test_result_lines_of_both_apis_read_as_live_replies() -> None:
    body = {"choices": [{"message": {"content": '{"label": "KEEP", "confidence": 0.9}'},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9}}
    openai = [
        json.dumps({"custom_id": "a", "response": {"status_code": 200, "body": body}}),
        json.dumps({"custom_id": "b", "response": {"status_code": 429, "body": {
            "error": {"message": "slow down"}}}}),
        json.dumps({"custom_id": "c", "response": None,
                    "error": {"code": "batch_expired", "message": "expired"}}),
        "not json at all",
        "",
    ]
    read = {r.custom_id: r for r in parse_results("openai", openai)}
    assert set(read) == {"a", "b", "c"}
    parsed = parse_reply(read["a"].status, read["a"].body, SCALE)
    assert (parsed.label, parsed.confidence, parsed.tokens_in, parsed.tokens_out) == (
        "KEEP", 0.9, 40, 9)
    assert read["b"].status == 429
    assert read["c"].not_run is not None and "expired" in read["c"].not_run

    message = {"id": "msg_1", "content": [{"type": "text", "text": '{"label": "MERGE"}'}],
               "stop_reason": "end_turn", "usage": {"input_tokens": 31, "output_tokens": 4}}
    anthropic = [
        json.dumps({"custom_id": "a", "result": {"type": "succeeded", "message": message}}),
        json.dumps({"custom_id": "b", "result": {"type": "errored", "error": {
            "type": "error", "error": {"type": "overloaded_error", "message": "busy"}}}}),
        json.dumps({"custom_id": "c", "result": {"type": "canceled"}}),
        json.dumps({"custom_id": "d", "result": {"type": "succeeded", "message": {
            **message, "stop_reason": "max_tokens"}}}),
    ]
    read = {r.custom_id: r for r in parse_results("anthropic", anthropic)}
    parsed = parse_reply(read["a"].status, read["a"].body, SCALE)
    assert (parsed.label, parsed.tokens_in, parsed.tokens_out) == ("MERGE", 31, 4)
    assert read["a"].raw == anthropic[0]  # the evidence is the line as the vendor wrote it
    assert read["b"].status == 529 and "busy" in read["b"].body
    assert read["c"].not_run is not None and "cancelled" in read["c"].not_run
    # stop_reason max_tokens reads as a cut-off reply, as live (its JSON was complete here).
    assert parse_reply(read["d"].status, read["d"].body, SCALE).finish_reason == "length"


# -- whole runs --------------------------------------------------------------------------------


def test_a_batch_run_gives_the_live_answers_at_the_batch_price(batch_sim, db, db_path) -> None:
    batched = batch_sim(seed=3)
    live = batch_sim(seed=3)
    run_id, job = _run(db, db_path, _panel(batched.base_url, *MIXED), 24)
    assert job.progress().status == "done" and job.progress().error is None
    live_panel = _panel(live.base_url, *((name, {}) for name, _ in MIXED))
    live_id, _ = _run(db, db_path, live_panel, 24)

    got, expected = _calls(db, run_id), _calls(db, live_id)
    assert len(got) == len(expected) == 72
    for pair, row in got.items():
        twin = expected[pair]
        assert row["failure"] is None and (row["label"], row["confidence"]) == (
            twin["label"], twin["confidence"])
        assert (row["tokens_in"], row["tokens_out"]) == (twin["tokens_in"], twin["tokens_out"])
        factor = 0.5 if pair[1] != "live" else 1.0  # the simulator prices batches as vendors do
        assert row["cost_usd"] == pytest.approx(twin["cost_usd"] * factor)
        assert row["cached"] == 0 and row["attempts"] == 1

    # One batch per batch critic, each request sent once; the live critic's calls live.
    batches = run_batches(db, run_id)
    assert [(b["critic"], b["api"], b["state"], b["requests"], b["succeeded"]) for b in batches] == [
        ("opus", "openai", "collected", 24, 24), ("haiku", "anthropic", "collected", 24, 24)]
    assert batched.batches.submitted == 2
    stats = batched.stats()
    assert stats["total"] == 72 and stats["duplicate_successes"] == 0
    assert db.execute("SELECT count(*) FROM batch_results").fetchone()[0] == 0

    # The run's one ledger counts every call as sent once and paid at its own price.
    ledger = get_run(db, run_id)["ledger"]
    assert ledger["sent_calls"] == 72 and ledger["cache_hits"] == 0
    assert ledger["cost_usd"] == pytest.approx(sum(row["cost_usd"] for row in got.values()))

    # The evidence is what the vendor got and said: the Messages API form for Anthropic.
    (evidence,) = [v for v in load_verdicts(db, run_id, "item-000003") if v.critic == "haiku"]
    assert evidence.raw_request["batch_api"] == "anthropic"
    assert evidence.raw_request["body"]["system"]
    assert json.loads(evidence.raw_response)["result"]["type"] == "succeeded"


def test_a_second_run_on_the_same_items_takes_batch_answers_from_the_cache(
        batch_sim, db, db_path) -> None:
    sim = batch_sim()
    panel = _panel(sim.base_url, ("opus", {"mode": "batch"}))
    first, _ = _run(db, db_path, panel, 10)
    second, job = _run(db, db_path, panel, 10)
    assert job.progress().status == "done"
    assert sim.batches.submitted == 1  # nothing left to ask the vendor
    assert get_run(db, second)["ledger"]["cache_hits"] == 10
    assert get_run(db, second)["ledger"]["sent_calls"] == 0


def _jurybox(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "judging.runs.commands.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(pathlib.Path.cwd())})


def test_no_wait_leaves_the_batches_with_the_vendor_and_a_resume_in_another_process_collects(
        batch_sim, tmp_path) -> None:
    sim = batch_sim(batch_seconds=1.0)
    panel_path = tmp_path / "panel.yaml"
    save_panel(_panel(sim.base_url, *MIXED), panel_path)
    data = tmp_path / "items.csv"
    data.write_text("id,text\n" + "".join(f"c{i},candidate class {i}\n" for i in range(15)))
    db_file = str(tmp_path / "cli.db")

    submitted = _jurybox("judge", "--data", str(data), "--panel", str(panel_path), "--no-wait",
                         "--quiet", "--db", db_file, cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    assert "Submitted to the vendor: batch_" in submitted.stdout
    assert "jurybox resume 1" in submitted.stdout

    listed = _jurybox("batches", "1", "--db", db_file, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count(" submitted ") == 2 and "anthropic" in listed.stdout
    runs = _jurybox("runs", "--db", db_file, cwd=tmp_path)
    assert "interrupted" in runs.stdout and "Submitted to the vendor" in runs.stdout

    resumed = _jurybox("resume", "1", "--quiet", "--db", db_file, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    stored = open_db(db_file)
    try:
        run = get_run(stored, 1)
        assert run["status"] == "done" and run["ok_calls"] == 45
        assert run["ledger"]["sent_calls"] == 45
    finally:
        stored.close()
    listed = _jurybox("batches", "1", "--db", db_file, cwd=tmp_path)
    assert listed.stdout.count(" collected ") == 2
    stats = sim.stats()
    assert stats["total"] == 45 and stats["duplicate_successes"] == 0
    assert sim.batches.submitted == 2  # the resume polled the same batches, submitted none


def test_expired_requests_fail_unpaid_and_a_resume_submits_only_them(
        batch_sim, db, db_path, monkeypatch) -> None:
    import judging.runs.background.batch_phase

    # What is missing is looked up 3 items at a time (2,000 in a real run): the resume must
    # still find exactly the 5 expired requests across the pages.
    monkeypatch.setattr(judging.runs.background.batch_phase, "PAGE_ITEMS", 3)
    sim = batch_sim(batch_expire_every=4)
    panel = _panel(sim.base_url, ("opus", {"mode": "batch"}), ("live", {}))
    run_id, job = _run(db, db_path, panel, 20)
    assert job.progress().status == "done"
    failed = [row for row in _calls(db, run_id).values() if row["failure"]]
    assert len(failed) == 5 and {row["critic"] for row in failed} == {"opus"}
    assert all("expired" in row["message"] and row["attempts"] == 0 and not row["cost_usd"]
               for row in failed)
    assert get_run(db, run_id)["ledger"]["sent_calls"] == 35  # 15 batch answers + 20 live

    job = JobRegistry().rerun_failures(db_path, run_id, concurrency=8)
    assert job.wait(60) and job.progress().status == "done"
    second = run_batches(db, run_id)[-1]
    assert len(run_batches(db, run_id)) == 2 and second["requests"] == 5
    still = [row for row in _calls(db, run_id).values() if row["failure"]]
    assert len(still) == 1  # every 4th request of a batch expires: 1 of these 5


def test_cancel_while_the_vendor_works_cancels_its_batch(batch_sim, db, db_path) -> None:
    sim = batch_sim(batch_seconds=120)
    panel = _panel(sim.base_url, ("opus", {"mode": "batch"}), ("live", {}))
    dataset_id = save_dataset(db, make_parsed(8)).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel)
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=4)
    deadline = time.monotonic() + 30
    while not (job.progress().vendor or "").startswith("submitted to vendor"):
        assert time.monotonic() < deadline and not job.progress().finished
        time.sleep(0.05)
    assert "0 of 8 answered" in job.progress().vendor
    job.cancel()
    assert job.wait(15)
    assert job.progress().status == "cancelled"
    assert "asked to stop" in (job.progress().error or "")
    (batch,) = sim.batches.batches.values()
    assert batch.status == "cancelled"
    assert db.execute("SELECT count(*) FROM calls WHERE run_id = ?", [run_id]).fetchone()[0] == 0

    # The resume collects the cancelled batch: its requests never ran, and say so; the batch
    # critic gave no verdict, so the run is failed, saying why (tests/test_run_failed.py).
    job = registry.resume(db_path, run_id, concurrency=4)
    assert job.wait(60) and job.progress().status == "failed"
    assert "Critic 'opus' gave no verdict" in (job.progress().error or "")
    opus = [row for row in _calls(db, run_id).values() if row["critic"] == "opus"]
    assert len(opus) == 8 and all("cancelled before this request ran" in row["message"]
                                  for row in opus)


def test_a_batch_the_vendor_refuses_is_reported_with_its_reason(batch_sim, db, db_path) -> None:
    sim = batch_sim(batch_refusal="line 3: the model m-opus does not exist")
    panel = _panel(sim.base_url, ("opus", {"mode": "batch"}), ("live", {}))
    run_id, job = _run(db, db_path, panel, 6)
    progress = job.progress()
    # Every call of the batch critic failed: the run is failed, with the vendor's words.
    assert progress.status == "failed"
    assert "Critic 'opus' gave no verdict" in (progress.error or "")
    assert "the model m-opus does not exist" in (progress.error or "")
    (batch,) = run_batches(db, run_id)
    assert batch["state"] == "failed" and "does not exist" in batch["error"]
    opus = [row for row in _calls(db, run_id).values() if row["critic"] == "opus"]
    assert len(opus) == 6 and all("resume the run" in row["message"] for row in opus)


def test_anthropic_refusing_at_submission_fails_the_run_with_the_vendor_words(
        batch_sim, db, db_path) -> None:
    sim = batch_sim(batch_refusal="requests: too many requests in one batch")
    panel = _panel(sim.base_url, ("haiku", {"mode": "batch", "batch_api": "anthropic"}))
    run_id, job = _run(db, db_path, panel, 4)
    # The run is not crashed: each of the critic's calls carries the vendor's words.
    assert job.progress().error is None or "too many requests" in job.progress().error
    calls = _calls(db, run_id)
    assert len(calls) == 4 and all(
        "too many requests in one batch" in row["message"] for row in calls.values())
    assert [(b["state"], b["vendor_status"]) for b in run_batches(db, run_id)] == [
        ("failed", "refused")]


def test_a_missing_key_stops_the_run_before_anything_is_sent(batch_sim, db, db_path) -> None:
    sim = batch_sim()
    panel = _panel(sim.base_url, ("gpt", {"vendor": "openai", "mode": "batch"}))
    dataset_id = save_dataset(db, make_parsed(3)).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel)
    job = JobRegistry().start_run(db_path, run_id, key_lookup=lambda name: None)
    assert job.wait(30)
    assert job.progress().status == "failed" and "OPENAI_API_KEY" in job.progress().error
    assert sim.batches.submitted == 0 and sim.stats()["total"] == 0


def test_the_key_goes_to_the_vendor_and_nowhere_else(batch_sim, db, db_path, tmp_path) -> None:
    sim = batch_sim()
    panel = _panel(sim.base_url, ("gpt", {"vendor": "openai", "mode": "batch"}),
                   ("claude", {"vendor": "openai", "mode": "batch"}))
    dataset_id = save_dataset(db, make_parsed(5)).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel)
    job = JobRegistry().start_run(db_path, run_id, key_lookup=lambda name: PLANTED_KEY)
    assert job.wait(60) and job.progress().status == "done"
    assert sim.batches.submitted == 2
    assert_secret_stored_nowhere(db_path, PLANTED_KEY)


# -- the panel says what batch mode cannot do --------------------------------------------------


@pytest.mark.parametrize(("critics", "words"), [
    ((("ds", {"vendor": "deepseek", "mode": "batch"}),), "has no batch API"),
    ((("a", {"mode": "batch", "kind": "self-verify"}),), "one request per item"),
    ((("a", {"mode": "batch", "samples": 3, "temperature": 0.7}),), "one request per item"),
    ((("a", {"batch_api": "anthropic"}),), "only a critic with mode: batch"),
    ((("a", {"vendor": "anthropic", "mode": "batch", "batch_api": "openai"}),),
     "speaks the anthropic batch API"),
    ((("a", {"mode": "batch"}), ("b", {"tier": 1})), "cascade"),
])
def test_the_panel_refuses_what_batch_mode_cannot_do(critics, words) -> None:
    with pytest.raises(ConfigError, match=words):
        check_panel(_panel("http://127.0.0.1:9/v1", *critics))


def test_the_estimate_prices_batch_critics_at_the_batch_price() -> None:
    items = [Item(id=str(i), fields={"text": f"class {i}"}) for i in range(3)]
    live = estimate_run(_panel("http://127.0.0.1:9/v1", ("a", {"vendor": "openai"})), items, 100)
    batched = estimate_run(_panel("http://127.0.0.1:9/v1", ("a", {"vendor": "openai",
                                                                  "mode": "batch"})), items, 100)
    assert batched.per_critic[0].cost_usd == pytest.approx(live.per_critic[0].cost_usd * 0.5)
    critic = _critic("a", "http://127.0.0.1:9/v1", vendor="openai")
    assert cost_usd(critic, 1000, 100, batched=True) == pytest.approx(
        cost_usd(critic, 1000, 100) / 2)


def test_waiting_results_are_found_among_a_page_of_keys(db) -> None:
    from storage.results.vendor_batches import result_keys, store_results

    dataset_id = save_dataset(db, make_parsed(2)).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=_panel("http://127.0.0.1:9/v1",
                                                                 ("opus", {"mode": "batch"})))
    store_results(db, run_id, "anthropic", [("k1", "{}"), ("k2", "{}"), ("k3", "{}")])
    assert result_keys(db, run_id) == {"k1", "k2", "k3"}
    assert result_keys(db, run_id, among=["k3", "k1", "k9"]) == {"k1", "k3"}
    assert result_keys(db, run_id, among=[]) == set()


def test_a_refused_batch_submission_fails_only_its_critic_with_the_reason(
        batch_sim, local_vendor, db, db_path) -> None:
    """An Anthropic batch answered with HTTP 400 (its documented error shape): the run is not
    crashed, the other critic's batch is submitted and collected, the refused critic's calls
    say what the vendor answered (never "no result from the vendor's batch"), and a resume
    submits them again."""
    refusal = json.dumps({"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "requests.0.params.response_format: Extra inputs are not permitted"},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}).encode()
    refusing = local_vendor(lambda seen: Reply(400, refusal))
    sim = batch_sim(seed=5)
    panel = Panel(name="batch", scale=SCALE, critics=[
        _critic("opus", sim.base_url, mode="batch"),
        _critic("haiku", refusing.base_url, mode="batch", batch_api="anthropic")])
    run_id, job = _run(db, db_path, panel, 6)
    # The run ends failed (a critic gave no verdict at all), naming the critic and the cause.
    error = job.progress().error or ""
    assert job.progress().status == "failed" and "haiku" in error and "refused" in error
    calls = _calls(db, run_id)
    answered = [row for (item, critic), row in calls.items() if critic == "opus"]
    assert len(answered) == 6 and all(row["failure"] is None for row in answered)
    refused = [row for (item, critic), row in calls.items() if critic == "haiku"]
    assert len(refused) == 6
    for row in refused:
        assert row["failure"] == "error" and row["attempts"] == 0
        assert "refused the batch submission" in row["message"]
        assert "Extra inputs are not permitted" in row["message"]
        assert "no result from the vendor's batch" not in row["message"]
    states = [(b["critic"], b["state"]) for b in run_batches(db, run_id)]
    assert ("opus", "collected") in states and ("haiku", "failed") in states
    assert len(refusing.seen) == 1 and refusing.seen[0].path == "/v1/messages/batches"
