"""The audit kept label by label (issue 25 part 6): `LiveAudit`'s estimate and label-next queue
equal the full recompute (`run_audit`, `refresh_label_next`) after every label of a sequence
with out-of-order labels, contest reviews and fresh draws; and one label's update reads a
handful of rows where the full recompute reads the run."""

from __future__ import annotations

import pathlib
import random

import numpy as np
import pytest

from judging.analysis.audit_stats import AuditPopulation, AuditSample, audit_estimate
from judging.analysis.audit_strata import CONFIDENCE_STRATA
from judging.analysis.audit_tally import AuditTally
from judging.runs.stored.audit_live import LiveAudit
from judging.runs.stored.audit_run import draw_audit_sample, refresh_label_next, run_audit
from storage.db import open_db
from storage.reviewing.audit import audit_items, stratum_sizes
from storage.reviewing.overrides import add_override
from storage.reviewing.review_queue import gold_labels, review_table

CUTS = {"unanimous": 1.0 - 1e-9, "majority": 0.5 + 1e-9}
LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]


def test_running_sums_give_the_estimate_of_the_whole_sample() -> None:
    """Pure: items added one by one (in any order, with a label the panel never gave) give
    `audit_estimate` over the same items, figure for figure."""
    rng = random.Random(4)
    population = AuditPopulation(
        sizes=np.array([500, 300, 200]),
        panel_counts={"KEEP": np.array([300, 100, 50]), "REJECT": np.array([200, 200, 150])},
        critic_counts={"a": np.array([490, 290, 180]), "b": np.array([500, 280, 190])})
    tally = AuditTally(population)
    strata, panel, human, said_a, said_b = [], [], [], [], []
    for _ in range(120):
        h = rng.choice([0, 0, 1, 2])
        p = rng.choice(["KEEP", "REJECT", None])
        y = rng.choice(["KEEP", "REJECT", "REJECT", "OTHER"])
        a = rng.choice(["KEEP", "REJECT", None])
        b = rng.choice(["KEEP", "OTHER"])
        tally.add(h, p, y, {"a": a, "b": b})
        for seq, value in ((strata, h), (panel, p), (human, y), (said_a, a), (said_b, b)):
            seq.append(value)
        expected = audit_estimate(population, AuditSample(
            np.array(strata), panel, human, {"a": said_a, "b": said_b}))
        assert tally.estimate() == expected


def _full_queue_on_a_copy(db, run_id, path: pathlib.Path):  # type: ignore[no-untyped-def]
    """`refresh_label_next` on a copy of the database as it is now (it may draw items: the live
    queue, run next on the original, must draw the same ones)."""
    import sqlite3

    path.unlink(missing_ok=True)
    target = sqlite3.connect(path)
    db.conn.backup(target)
    target.close()
    copy = open_db(path)
    return refresh_label_next(copy, run_id), copy


def _design(rows):  # type: ignore[no-untyped-def]
    return [{k: v for k, v in row.items() if k != "created_at"} for row in rows]


@pytest.mark.parametrize("design", ["confidence", "agreement"])
def test_the_live_audit_equals_the_full_recompute_after_every_label(
    demo_db: tuple[pathlib.Path, int], tmp_path: pathlib.Path, design: str,
) -> None:
    """For a new sample (strata by confidence, the queue planned) and one drawn by agreement
    (the adaptive queue): after every label, the running sums give the full recompute's
    figures and queue."""
    path, run_id = demo_db
    db = open_db(path)
    live = LiveAudit(run_id)
    assert live.audit(db) == run_audit(db, run_id)  # nothing drawn yet
    gold = gold_labels(db, run_id)
    table, _ = review_table(db, run_id, limit=None)
    contested = [str(i) for i in table["item_id"][table["disagreement"]]]
    # Blind labels before any draw (a blind pass over contested items): once drawn, they
    # wait behind the unlabelled items drawn before them.
    for item_id in contested[:12:2]:
        add_override(db, run_id, item_id, "REJECT", "", "bo", blind=True)
    draw_audit_sample(db, run_id, 8, seed=8, design=design)
    assert live.audit(db) == run_audit(db, run_id)
    assert live.audit(db).design == design
    rng = random.Random(9)
    drew, waited = 0, 0
    for step in range(45):
        full, copy = _full_queue_on_a_copy(db, run_id, tmp_path / "copy.db")
        queue = live.refresh_queue(db)
        drew += queue.drawn
        assert queue == full
        # The same items drawn, with the same design, and the same ranks stored.
        assert _design(audit_items(db, run_id, CUTS)) == _design(audit_items(copy, run_id, CUTS))
        copy.close()
        if queue.head is None:
            break
        roll = rng.random()
        if roll < 0.15:  # out of the queue's order: a later item of the sample
            waiting = [r["item_id"] for r in audit_items(db, run_id, CUTS) if r["human"] is None]
            target = waiting[-1]
        else:
            target = queue.head
        label = gold[target] if rng.random() < 0.8 else rng.choice(LABELS)
        add_override(db, run_id, target, label, "", "ann", blind=True)
        if roll > 0.9:  # a review chosen by contest, and a later non-blind one of the sample
            outside = contested[12 + step]
            add_override(db, run_id, outside, "KEEP", "contest", "bo", blind=step % 2 == 0)
            add_override(db, run_id, target, "SPLIT", "changed my mind", "ann")
        if step % 7 == 3:  # a second draw, in the middle of the labelling
            draw_audit_sample(db, run_id, 5, seed=step)
        audit = live.audit(db)
        assert audit == run_audit(db, run_id)
        waited = max(waited, audit.waiting)
    # The sequence went through what makes an audit hard to keep by sums.
    assert drew > 0 and waited > 0
    final = live.audit(db)
    assert final.estimate is not None and final.estimate.accuracy.n > 20
    # A second live audit, started afresh on the same database, agrees with the first.
    assert LiveAudit(run_id).audit(db) == final


class _Reads:
    """Counts what SQLite does for a connection: statements and virtual-machine steps (one
    tick per 100 instructions: a read of every row of a run is thousands of ticks)."""

    def __init__(self, db) -> None:  # type: ignore[no-untyped-def]
        self.db, self.ticks, self.statements = db, 0, 0

    def _tick(self) -> int:
        self.ticks += 1
        return 0

    def _statement(self, _sql: str) -> None:
        self.statements += 1

    def __enter__(self) -> _Reads:
        self.db.conn.set_progress_handler(self._tick, 100)
        self.db.conn.set_trace_callback(self._statement)
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.conn.set_progress_handler(None, 0)
        self.db.conn.set_trace_callback(None)


def test_one_label_reads_a_handful_of_rows_not_the_run(tmp_path: pathlib.Path) -> None:
    from benchmarks.pages_browser import build_run

    run_id, _ = build_run(tmp_path / "big.db", 6_000)
    db = open_db(tmp_path / "big.db")
    draw_audit_sample(db, run_id, 40, seed=1)
    live = LiveAudit(run_id)
    with _Reads(db) as one_pass:
        stratum_sizes(db, run_id, CUTS)  # a single pass over the run's items
    assert one_pass.ticks > 200, "the yardstick must read the run"
    # Warm: the first refresh reads the sample, the strata and the population once.
    for _ in range(3):
        head = live.refresh_queue(db).head
        assert head is not None
        add_override(db, run_id, head, "KEEP", "", "ann", blind=True)
    live.audit(db)
    for _ in range(5):
        with _Reads(db) as update:
            queue = live.refresh_queue(db)
            audit = live.audit(db)
        assert queue.head is not None and audit.estimate is not None
        # One label's update: the new override, the new item's critics, a few ranks.
        assert update.ticks < one_pass.ticks / 5, (update.ticks, one_pass.ticks)
        assert update.statements < 30
        add_override(db, run_id, queue.head, "REJECT", "", "ann", blind=True)
    # The full recompute does read the run: this test would catch a live audit that did.
    with _Reads(db) as full:
        refresh_label_next(db, run_id)
        run_audit(db, run_id)
    assert full.ticks > one_pass.ticks
    assert live.audit(db) == run_audit(db, run_id)
    assert set(CONFIDENCE_STRATA) >= set(live.audit(db).sampled)  # a new sample's design
