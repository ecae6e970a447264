"""The Run page's per-critic reads at scale (migration 0031_call_count_indexes): the counts come
from a covering index and the adjusted parameters from a partial one, so neither reads the
calls' rows (replies and all: 2.3 s and 1.5 s at 3,000,000 calls, every second while another
process runs the run). Checked on SQLite's own query plan, and the answers against the rows."""

from __future__ import annotations

import json

from storage.results.calls import adjusted_parameters, call_counts
from tests.fixtures_storage import seed_run


def _plans(db, read) -> str:
    """SQLite's plan of every statement `read()` runs (as run: parameters bound)."""
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    try:
        read()
    finally:
        db.conn.set_trace_callback(None)
    return " | ".join(row[3] for sql in statements
                      for row in db.execute("EXPLAIN QUERY PLAN " + sql))


def test_counts_are_read_from_the_covering_index_and_equal_the_rows(db) -> None:
    run = seed_run(db, 60, fail_rate=0.3)
    with db.conn:
        db.execute("UPDATE calls SET cached = 1 WHERE run_id = ? AND rowid % 5 = 0", [run.run_id])
    counts = call_counts(db, run.run_id)
    for critic in run.critics:
        rows = list(db.execute("SELECT failure, cached FROM calls WHERE run_id = ? AND critic = ?",
                               [run.run_id, critic]))
        assert counts[critic] == {"ok": sum(f is None for f, _ in rows),
                                  "failed": sum(f is not None for f, _ in rows),
                                  "cached": sum(bool(c) for _, c in rows)}
    plan = _plans(db, lambda: call_counts(db, run.run_id))
    assert "COVERING INDEX calls_counts" in plan, plan


def test_adjusted_parameters_are_found_through_the_partial_index(db) -> None:
    run = seed_run(db, 20)
    item = run.items[3].id
    note = ["temperature was not sent: the model refuses it"]
    with db.conn:
        db.execute("UPDATE calls SET raw_request = ? WHERE run_id = ? AND item_id = ?"
                   " AND critic = ?", [json.dumps({"body": {}, "adjusted": note}), run.run_id,
                                       item, run.critics[1]])
    assert adjusted_parameters(db, run.run_id) == {run.critics[1]: note}
    plan = _plans(db, lambda: adjusted_parameters(db, run.run_id))
    assert "INDEX calls_adjusted" in plan, plan
