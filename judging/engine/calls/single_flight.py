"""One request in flight per cache key: an identical call waits for the first one's answer.

The cache alone cannot stop a run paying twice for the same request: the calls of an item go
out together, so a self-verify critic's first step and a single critic with the same model and
prompt (the very same bytes) both missed the cache and both were sent (10 duplicate paid
calls in a 10-item run). `SingleFlight` makes the second caller wait until the first one's
call has ended, then read the cache again: a success is served from it; after a failure (never
cached) the waiter sends the request itself, as its own call.

Waiting holds nothing: callers join a flight before they take a vendor-limit slot or a budget
reservation, and a leader always ends its flight (`done`) however its call ends.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Flights remembered after they end, so a caller can tell whether one of its key ended since it
# last read the cache (then it reads again; otherwise the read it made still holds).
_RECENT_ENDS = 4096


class SingleFlight:
    """The cache keys whose request is in flight, each with the event its waiters wait on.

    Thread-safe: shared by every thread of a `CallRunner`.
    """

    def __init__(self) -> None:
        self._flights: dict[str, threading.Event] = {}
        self._ended: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._ticks = 0  # flights ended so far
        self._lock = threading.Lock()

    def tick(self) -> int:
        """A mark to take before reading the cache, for `lead_or_wait`'s `since`."""
        with self._lock:
            return self._ticks

    def lead_or_wait(self, key: str, lookup: Callable[[str], T | None], *,
                     since: int | None = None) -> T | None:
        """The cached answer for `key`, waiting while an identical request is in flight; None
        when the caller is to send the request itself (it then leads the key's flight and must
        call `done(key)` once its call has ended, whatever the outcome).

        Args:
            key: the call's cache key.
            lookup: reads the cache (`CallCache.get`).
            since: `tick()` taken before the caller last read the cache and found nothing:
                that read is reused unless a flight of this key has ended since (a cache miss
                costs a query or two). None: read again.
        """
        while True:
            with self._lock:
                flight = self._flights.get(key)
                if flight is None:
                    self._flights[key] = threading.Event()
                    ended = self._ended.get(key)
                    stale = (since is None or self._ticks - since >= _RECENT_ENDS
                             or (ended is not None and ended > since))
            if flight is None:
                # Leading now. A flight of this key that ended after the caller's read has
                # stored its answer by then (`done` comes after the cache's `put`).
                found = lookup(key) if stale else None
                if found is not None:
                    self.done(key)
                return found
            flight.wait()
            since = self.tick()
            found = lookup(key)
            if found is not None:
                return found
            # The leader's call failed (a failure is never cached): lead the next flight.

    def done(self, key: str) -> None:
        """End the caller's flight of `key` and wake whoever waits for it."""
        with self._lock:
            flight = self._flights.pop(key, None)
            if flight is not None:
                self._ticks += 1
                self._ended[key] = self._ticks
                self._ended.move_to_end(key)
                if len(self._ended) > _RECENT_ENDS:
                    self._ended.popitem(last=False)
        if flight is not None:
            flight.set()

    def in_flight(self) -> int:
        """How many keys have a request in flight."""
        with self._lock:
            return len(self._flights)
