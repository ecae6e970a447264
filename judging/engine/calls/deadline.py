"""The per-attempt wall-clock deadline: one thread that cuts a reply still arriving too late.

httpx bounds each socket read but not the whole body, so a server trickling one byte at a time
would hold a call forever. Both transports expose a response's socket as
`response.extensions["network_stream"].get_extra_info("socket")` (httpcore does, and so does
`judging.engine.transport.ThreadLocalTransport`); the watchdog shuts that socket down when the
deadline passes and the reading thread sees the connection end.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from typing import Any

import httpx


class DeadlineExceededError(Exception):
    """The reply was not complete within the call's deadline (raised by the reader)."""


class Watchdog:
    """One thread that cuts the socket of any response still being read past its deadline.

    `shutdown()` (not `close()`) is what wakes a thread blocked in `recv` on Linux. Entries are
    released by dropping their response (O(1)); stale entries are popped when the thread
    wakes, so a finished call holds no response in memory. The thread starts on first use.
    """

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []  # [deadline, sequence, response or None]
        # A plain Lock (not the default RLock): taken twice per call by every worker thread.
        self._cond = threading.Condition(threading.Lock())
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, deadline: float, response: httpx.Response) -> list[Any]:
        """Cut `response`'s socket at `deadline` (monotonic seconds) unless released first.

        Returns:
            The entry to hand to `release`.
        """
        entry = [deadline, next(self._ids), response]
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="jurybox-deadlines", daemon=True
                )
                self._thread.start()
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:  # a new earliest deadline: re-arm the timer
                self._cond.notify()
        return entry

    def release(self, entry: list[Any]) -> None:
        """The response was read (or abandoned): never cut it."""
        # Under the lock: once this returns, the loop can no longer cut this response's socket,
        # which is about to go back to the pool for another request.
        with self._cond:
            entry[2] = None

    def close(self) -> None:
        """Stop the thread (pending entries are dropped)."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _loop(self) -> None:
        with self._cond:
            while not self._closed:
                while self._heap and self._heap[0][2] is None:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                response = heapq.heappop(self._heap)[2]
                _cut(response)


def _cut(response: httpx.Response) -> None:
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        try:
            # The plain socket's shutdown even for TLS: SSLSocket.shutdown also drops its SSL
            # object under the feet of the thread still reading from it.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: nothing left to cut
