"""The call cache over the database: successes by cache key, from many threads."""

from __future__ import annotations

import threading

from judging.verdicts import FailureKind, Verdict
from storage.calls import CallCacheStore, write_verdicts
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
