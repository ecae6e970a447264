"""The call cache over the database: successes by cache key, from many threads."""

from __future__ import annotations

import threading

import pytest

import storage.results.calls as calls_module
from judging.verdicts import FailureKind, Verdict
from storage.results.calls import CallCacheStore, write_verdicts
from tests.fixtures_storage import seed_run


def test_hits_only_stored_successes(db, db_path):
    run = seed_run(db, 3, fail_rate=0.0)
    ok = Verdict(critic="alpha", item_id="item-000000", label="SPLIT", cache_key="key-ok",
                 raw_response='{"label": "SPLIT"}', tokens_in=7, attempts=1)
    bad = Verdict(critic="beta", item_id="item-000000", failure=FailureKind.ERROR,
                  message="HTTP 500", cache_key="key-bad", attempts=3)
    write_verdicts(db, run.run_id, [ok, bad], replace_success=True)
    cache = CallCacheStore(db_path)
    try:
        hit = cache.get("key-ok")
        assert hit is not None and hit.cached and hit.label == "SPLIT" and hit.tokens_in == 7
        assert cache.get("key-bad") is None  # a failure is never served
        assert cache.get("never-seen") is None
        assert (cache.hits, cache.misses) == (1, 2)
    finally:
        cache.close()


def test_put_serves_the_same_run_before_the_writer_stored_it(db_path):
    cache = CallCacheStore(db_path)
    try:
        cache.put(Verdict(critic="a", item_id="x", label="KEEP", cache_key="k1"))
        cache.put(Verdict(critic="a", item_id="y", failure=FailureKind.PARSE_FAIL, cache_key="k2"))
        got = cache.get("k1")
        assert got is not None and got.label == "KEEP" and got.cached
        assert cache.get("k2") is None
    finally:
        cache.close()


def test_many_threads_each_use_their_own_connection(db, db_path):
    run = seed_run(db, 20, fail_rate=0.0)
    keys = [v.cache_key for v in run.verdicts.values()]
    cache = CallCacheStore(db_path)
    errors: list[BaseException] = []
    found: list[int] = []

    def worker() -> None:
        try:
            found.append(sum(cache.get(key) is not None for key in keys))
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cache.close()
    assert errors == []
    assert found == [len(keys)] * 8
    assert len(cache._connections) == 0  # closed


def _stored(db, run_id, item_id, critic):
    return db.execute(
        "SELECT label, failure FROM calls WHERE run_id = ? AND item_id = ? AND critic = ?",
        [run_id, item_id, critic],
    ).fetchone()


def test_a_failure_never_overwrites_a_stored_success_and_cancelled_is_skipped(db):
    run = seed_run(db, 2, fail_rate=0.0)
    item = run.items[0].id
    assert _stored(db, run.run_id, item, "alpha")[1] is None
    before = _stored(db, run.run_id, item, "alpha")
    later = [
        Verdict(critic="alpha", item_id=item, failure=FailureKind.ERROR, message="HTTP 500"),
        Verdict(critic="beta", item_id=item, failure=FailureKind.CANCELLED, message="cancelled"),
    ]
    assert write_verdicts(db, run.run_id, later) == 1  # the cancelled one is not even offered
    assert _stored(db, run.run_id, item, "alpha") == before
    assert _stored(db, run.run_id, item, "beta")[1] is None  # still its old success
    # A failure may be replaced by a later success (resume / re-run of failures).
    write_verdicts(db, run.run_id, [Verdict(critic="delta", item_id=item,
                                            failure=FailureKind.ERROR, message="x")])
    write_verdicts(db, run.run_id, [Verdict(critic="delta", item_id=item, label="KEEP")])
    assert _stored(db, run.run_id, item, "delta") == ("KEEP", None)
    # On purpose (re-judging), a success is replaced.
    write_verdicts(db, run.run_id, [Verdict(critic="alpha", item_id=item, label="MERGE")],
                   replace_success=True)
    assert _stored(db, run.run_id, item, "alpha") == ("MERGE", None)


@pytest.mark.parametrize("merge_at", [1, 3, 10_000])
def test_the_cache_finds_successes_in_both_index_levels(db, db_path, monkeypatch, merge_at):
    """Entries live in the small level until a merge moves them: lookups see them either way,
    including a failure that later succeeded, and never a re-judged call's old key."""
    monkeypatch.setattr(calls_module, "CACHE_MERGE_AT", merge_at)
    run = seed_run(db, 2, fail_rate=0.0)
    items = [item.id for item in run.items]
    first = [Verdict(critic="c", item_id=i, label="KEEP", cache_key=f"k-{i}") for i in items]
    write_verdicts(db, run.run_id, first)
    write_verdicts(db, run.run_id, [Verdict(critic="d", item_id=items[0], failure=FailureKind.ERROR,
                                            message="HTTP 500", cache_key="k-late")])
    write_verdicts(db, run.run_id, [Verdict(critic="d", item_id=items[0], label="SPLIT",
                                            cache_key="k-late")])
    write_verdicts(db, run.run_id, [Verdict(critic="c", item_id=items[1], label="MERGE",
                                            cache_key="k-new")], replace_success=True)
    recent = db.execute("SELECT count(*) FROM call_cache_recent").fetchone()[0]
    merged = db.execute("SELECT count(*) FROM call_cache").fetchone()[0]
    if merge_at == 10_000:
        assert merged == 0 and recent >= 4  # nothing merged yet: all in the small level
    else:
        assert merged >= 3  # merges happened
    cache = CallCacheStore(db_path)
    try:
        assert cache.get(f"k-{items[0]}").label == "KEEP"
        assert cache.get("k-late").label == "SPLIT"
        assert cache.get("k-new").label == "MERGE"
        assert cache.get(f"k-{items[1]}") is None  # that call was re-judged under a new key
    finally:
        cache.close()
