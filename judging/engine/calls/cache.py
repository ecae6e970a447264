"""Where validated successes are kept, so a resumed run does not pay twice for a call."""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from judging.verdicts import Verdict


@runtime_checkable
class CallCache(Protocol):
    """Where validated successes are kept so a resumed run does not pay twice.

    `storage` provides one backed by SQLite; `MemoryCache` is the in-process one.
    Implementations must be safe to call from many threads.
    """

    def get(self, key: str) -> Verdict | None:
        """The stored successful verdict for a cache key, or None."""
        ...

    def put(self, verdict: Verdict) -> None:
        """Store a successful verdict under `verdict.cache_key`."""
        ...


class MemoryCache:
    """A thread-safe in-memory `CallCache` (for notebooks, tests and one-process runs)."""

    def __init__(self) -> None:
        self._store: dict[str, Verdict] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Verdict | None:
        """The stored successful verdict for a cache key, or None."""
        with self._lock:
            return self._store.get(key)

    def put(self, verdict: Verdict) -> None:
        """Store a successful verdict (failures and verdicts without a key are ignored)."""
        if verdict.cache_key is None or not verdict.ok:
            return
        with self._lock:
            self._store[verdict.cache_key] = verdict

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)


class ItemAnswers:
    """The successful answers of a run without a `CallCache`, kept while their item is judged.

    A compound critic's first step and a single critic with the same model and prompt send the
    very same request for an item. With a cache the second is served from it (or waits for the
    first in flight: `judging.engine.calls.single_flight`); without one, both were sent and
    paid. A run with no cache keeps its answers here instead, so an identical request is sent
    once either way. Only while the item is being judged (`forget` when it is done): a run of
    a million items holds the answers of its items in flight, not of every call, and two runs,
    or two `judge()` calls, never share an answer the caller did not ask to keep.

    Thread-safe: a `CallCache` for the run's worker threads.
    """

    def __init__(self) -> None:
        self._store: dict[str, Verdict] = {}
        self._keys: dict[str, list[str]] = {}  # item id -> the keys its calls put
        self._lock = threading.Lock()

    def get(self, key: str) -> Verdict | None:
        """The answer to an identical request of an item in flight, or None."""
        with self._lock:
            return self._store.get(key)

    def put(self, verdict: Verdict) -> None:
        """Keep a successful verdict until its item is done (failures are never kept, as a
        cache keeps none: the next identical request is sent)."""
        if verdict.cache_key is None or not verdict.ok:
            return
        with self._lock:
            self._store[verdict.cache_key] = verdict
            self._keys.setdefault(verdict.item_id, []).append(verdict.cache_key)

    def forget(self, item_id: str) -> None:
        """Drop the answers of an item that is done."""
        with self._lock:
            for key in self._keys.pop(item_id, ()):
                self._store.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)
