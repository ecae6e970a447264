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
