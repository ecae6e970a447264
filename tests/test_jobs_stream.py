"""A background run that reads its dataset a page at a time and computes per-item alpha a
chunk at a time stores what the whole-dataset computation gives; the CLI summary counted by
SQLite reads as the one counted from every loaded verdict."""

from __future__ import annotations

import math
from typing import Any

import pytest

import judging.runs.background.worker
from judging.agreement import per_item_alpha
from judging.engine.ledger import Ledger
from judging.panel.panel_files import load_panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.summary import format_summary, summarize, summarize_counts
from storage.datasets.dataset_store import DatasetItems, load_items, save_dataset
from storage.results.consensus import (
    decided_call_counts,
    decision_counts,
    iter_panel_verdicts,
    load_consensus,
    load_panel_verdicts,
    run_gold_labels,
)
from storage.results.runs import get_run
from storage.reviewing.review_queue import ratings_frame
from tests.fixtures_storage import make_parsed, tiny_panel


def _whole_table_alphas(panel: Any, ratings: Any) -> dict[str, float | None]:
    """Per-item alpha as the worker computed it before runs streamed: one pandas table."""
    critics = [c.name for c in panel.critics]
    valid = ratings[ratings["failure"].isna()].copy()
    valid["value"] = valid["label"]
    item_ids = list(dict.fromkeys(ratings["item_id"]))
    table = valid.pivot(index="item_id", columns="critic", values="value")
    table = table.reindex(index=item_ids, columns=critics)
    rows = [[None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in row]
            for row in table.itertuples(index=False)]
    alphas = per_item_alpha(rows, panel.scale.level, order=list(panel.scale.labels))
    return {i: (None if math.isnan(a) else float(a)) for i, a in zip(item_ids, alphas)}


@pytest.fixture
def paged_run(db: Any, db_path: str, simulator_factory: Any, monkeypatch: pytest.MonkeyPatch
              ) -> int:
    monkeypatch.setattr(judging.runs.background.worker, "ITEM_PAGE_SIZE", 3)
    monkeypatch.setattr(judging.runs.background.worker, "ALPHA_CHUNK_SIZE", 4)
    sim = simulator_factory(latency_ms=1)
    dataset_id = save_dataset(db, make_parsed(41)).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(sim.base_url))
    job = JobRegistry().start_run(db_path, run_id, concurrency=4)
    assert job.wait(60) and job.progress().status == "done"
    return run_id


def test_a_run_read_in_pages_stores_every_verdict_decision_and_alpha(db: Any, paged_run: int
                                                                      ) -> None:
    run = get_run(db, paged_run)
    panel = load_panel(run["panel_yaml"])
    assert db.execute("SELECT count(*) FROM calls WHERE run_id = ?", [paged_run]).fetchone()[0] \
        == 41 * 3
    decided = load_panel_verdicts(db, paged_run)
    assert [pv.item_id for pv in decided] == [i.id for i in load_items(db, run["dataset_id"])]
    order = {c.name: n for n, c in enumerate(panel.critics)}
    for pv in decided:  # each decision is the vote over that item's stored verdicts
        verdicts = sorted(pv.verdicts, key=lambda v: order[v.critic])
        assert panel.vote(verdicts).consensus == pv.consensus
    stored = {row["item_id"]: row["item_alpha"] for row in load_consensus(db, paged_run)}
    expected = _whole_table_alphas(panel, ratings_frame(db, paged_run))
    assert stored == expected  # to the bit: chunks of 4 items against the run's D_e
    assert any(a is not None and a < 1 for a in stored.values())  # some items disagree


def test_the_summary_counted_by_sqlite_reads_as_the_loaded_one(db: Any, paged_run: int) -> None:
    run = get_run(db, paged_run)
    panel = load_panel(run["panel_yaml"])
    ledger = Ledger.from_mapping(run["ledger"])
    loaded = summarize(panel, load_items(db, run["dataset_id"]),
                       load_panel_verdicts(db, paged_run), 1.5)
    loaded.ledger = ledger
    counted = summarize_counts(
        panel,
        [(label if score is None else score, gold, n, d)
         for label, score, gold, n, d in decision_counts(db, paged_run)],
        [(critic, failure, score if label is None else label, gold, *rest)
         for critic, failure, label, score, gold, *rest in decided_call_counts(db, paged_run)],
        run_gold_labels(db, paged_run), ledger, 1.5)
    assert format_summary(counted) == format_summary(loaded)
    assert counted.gold_items == 41 and counted.items == 41


def test_decisions_and_items_read_in_small_chunks_are_the_whole_ones(db: Any, paged_run: int
                                                                     ) -> None:
    run = get_run(db, paged_run)
    assert list(iter_panel_verdicts(db, paged_run, chunk_size=2)) == \
        load_panel_verdicts(db, paged_run)
    pages = DatasetItems(db, run["dataset_id"], page_size=4)
    assert len(pages) == 41
    assert list(pages) == load_items(db, run["dataset_id"])
    assert pages[40] == pages[-1] == load_items(db, run["dataset_id"])[-1]


def test_a_resume_read_in_pages_neither_pays_nor_counts_a_stored_success_again(
    db: Any, db_path: str, simulator_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judging.runs.background.worker, "ITEM_PAGE_SIZE", 2)
    sim = simulator_factory(latency_ms=20)
    dataset_id = save_dataset(db, make_parsed(40, salt="resume")).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(sim.base_url))
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=4)
    while job.progress().done < 30 and not job.wait(0.02):
        pass
    registry.cancel(run_id)
    assert job.wait(30) and job.progress().status == "cancelled"
    stored = db.execute("SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NULL",
                        [run_id]).fetchone()[0]
    assert 30 <= stored < 120
    assert registry.resume(db_path, run_id, concurrency=4).wait(60)
    run = get_run(db, run_id)
    assert run["status"] == "done" and run["ok_calls"] == 120
    assert sim.stats()["successes"] == 120  # each pair paid once
    # The stored successes were known page by page: none came back as a cache hit to count.
    assert Ledger.from_mapping(run["ledger"]).cache_hits == 0
    assert db.execute("SELECT count(*) FROM consensus WHERE run_id = ?", [run_id]).fetchone()[0] \
        == 40


def test_the_writer_makes_calls_wait_while_it_falls_behind(
    db: Any, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import judging.runs.background.writer
    from judging.runs.background.writer import Writer
    from judging.verdicts import Verdict

    items = make_parsed(30, salt="writer").items
    dataset_id = save_dataset(db, make_parsed(30, salt="writer")).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel())
    release, stuck = threading.Event(), threading.Event()
    real = judging.runs.background.writer.write_verdicts

    def slow_disk(*args: Any, **kwargs: Any) -> int:
        stuck.set()
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(judging.runs.background.writer, "write_verdicts", slow_disk)
    monkeypatch.setattr(judging.runs.background.writer, "MAX_QUEUED", 5)
    writer = Writer(db_path, run_id, already_ok=set(), replace_success=False, batch_size=2,
                    flush_interval_s=0.01)
    handed: list[str] = []

    def calls() -> None:
        for item in items:
            writer.add(Verdict(critic="critic_0", item_id=item.id, label="KEEP", attempts=1),
                       item)
            handed.append(item.id)

    thread = threading.Thread(target=calls)
    thread.start()
    assert stuck.wait(30)  # the writer took a first batch and is stuck writing it
    while len(writer._pending) < writer.max_queued:
        assert thread.is_alive(), "every verdict was queued: nothing waited"
        thread.join(0.01)
    # The queue is full: the call thread waits for room rather than queueing all 30.
    assert len(writer._pending) == 5 and len(handed) <= 5 + 5 < 30
    release.set()
    thread.join(30)
    writer.close()
    assert len(handed) == 30 and writer.written == 30
    assert db.execute("SELECT count(*) FROM calls WHERE run_id = ?", [run_id]).fetchone()[0] == 30


def test_the_writer_counts_totals_less_often_when_counting_is_slow(
    db: Any, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At millions of calls a recount of the run takes about a second: the writer spaces its
    recounts by ten times the last one's length instead of counting every 2 s, and the totals
    are exact once it closes."""
    import time

    import judging.runs.background.writer
    from judging.runs.background.writer import Writer
    from judging.verdicts import Verdict

    parsed = make_parsed(400, salt="totals")
    dataset_id = save_dataset(db, parsed).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel())
    real = judging.runs.background.writer.refresh_run_totals
    counted_at: list[float] = []

    def slow_count(*args: Any) -> None:
        counted_at.append(time.monotonic())
        time.sleep(0.2)  # a large run's scan
        real(*args)

    monkeypatch.setattr(judging.runs.background.writer, "refresh_run_totals", slow_count)
    monkeypatch.setattr(judging.runs.background.writer, "TOTALS_EVERY_S", 0.01)
    writer = Writer(db_path, run_id, already_ok=set(), replace_success=False, batch_size=5,
                    flush_interval_s=0.005)
    started = time.monotonic()
    for item in parsed.items:  # a verdict every 4 ms or more: the writer never runs dry
        writer.add(Verdict(critic="critic_0", item_id=item.id, label="KEEP", attempts=1), item)
        time.sleep(0.004)
    fed_for = time.monotonic() - started
    writer.close()
    during = counted_at[:-1]  # the last count is the one at close
    assert fed_for >= 1.6 and during, "the feed was too short to show the spacing"
    # At a fixed 0.01 s the 0.2 s counts would follow each other (7 or more in 1.6 s); spaced
    # by 10 x 0.2 s, a second count can only start 2.2 s after the first.
    gaps = [b - a for a, b in zip(during, during[1:], strict=False)]
    assert all(gap >= 2.0 for gap in gaps), gaps
    run = get_run(db, run_id)
    assert run["ok_calls"] == 400 and writer.written == 400


def test_the_writer_commits_in_short_parts_and_pauses_for_a_waiting_save(
    db: Any, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save on Review waits for the writer's lock, looking again every 100 ms: the writer
    commits at most `WRITE_ROWS` verdicts or decisions at a time, and before a part it leaves
    the lock free for `YIELD_S` once it has written for `YIELD_EVERY_S` without a pause."""
    import time
    import types

    import judging.runs.background.writer
    from judging.runs.background.writer import WRITE_ROWS, YIELD_S, Writer
    from judging.verdicts import PanelVerdict, Verdict, VoteOutcome

    parsed = make_parsed(4 * WRITE_ROWS, salt="parts")
    dataset_id = save_dataset(db, parsed).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel())
    events: list[tuple[str, float]] = []
    real_verdicts, real_consensus = (judging.runs.background.writer.write_verdicts,
                                     judging.runs.background.writer.write_consensus)

    def verdicts(db: Any, run: int, batch: list[Verdict], **how: Any) -> int:
        events.append(("verdicts", len(batch)))
        return real_verdicts(db, run, batch, **how)

    def consensus(db: Any, run: int, decided: list[PanelVerdict]) -> Any:
        events.append(("decisions", len(decided)))
        return real_consensus(db, run, decided)

    monkeypatch.setattr(judging.runs.background.writer, "write_verdicts", verdicts)
    monkeypatch.setattr(judging.runs.background.writer, "write_consensus", consensus)
    monkeypatch.setattr(judging.runs.background.writer, "YIELD_EVERY_S", 0.0)  # a pause before each part
    # The writer's clock only: its pauses are recorded, not slept.
    monkeypatch.setattr(judging.runs.background.writer, "time", types.SimpleNamespace(
        monotonic=time.monotonic, sleep=lambda s: events.append(("pause", s))))
    writer = Writer(db_path, run_id, already_ok=set(), replace_success=False,
                    batch_size=10 * len(parsed.items), flush_interval_s=60)  # all at close
    for item in parsed.items:
        verdict = Verdict(critic="critic_0", item_id=item.id, label="KEEP", attempts=1)
        writer.add(verdict, item)
        writer.decided(PanelVerdict(item.id, VoteOutcome("KEEP", 1.0, False), [verdict], "plurality"))
    writer.close()
    writes = [e for e in events if e[0] != "pause"]
    assert writes == [("verdicts", WRITE_ROWS)] * 4 + [("decisions", WRITE_ROWS)] * 4
    assert all(before == ("pause", YIELD_S) for before, e in zip(events, events[1:]) if e in writes)
    assert db.execute("SELECT count(*) FROM consensus WHERE run_id = ?", [run_id]).fetchone()[0] \
        == len(parsed.items)
