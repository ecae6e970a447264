"""Per-vendor limits: requests in flight (a semaphore) and requests per minute (a pace)."""

from __future__ import annotations

import threading

from judging.errors import ConfigError
from judging.panel.vendors import get_preset


class Pace:
    """Requests-per-minute pacing for one vendor: each request takes the next free slot."""

    def __init__(self, rpm: float) -> None:
        self.interval = 60.0 / rpm
        self.next_slot: float | None = None
        self.lock = threading.Lock()

    def reserve(self, now: float) -> float:
        """Seconds to wait before sending."""
        with self.lock:
            slot = now if self.next_slot is None else max(now, self.next_slot)
            self.next_slot = slot + self.interval
            return slot - now


class VendorLimiter:
    """Per-vendor caps: requests in flight (a semaphore) and requests per minute (a pace).

    A `CallRunner` holds one for its own limits; `run_panel` makes one per run from the panel's
    `limits` and hands it to every `CallRunner.call`, so a panel's limits hold whichever runner
    sends its calls. Safe to share between threads.

    Args:
        max_concurrency: max requests in flight per vendor name, e.g. {"openai": 8}.
        requests_per_minute: pace per vendor name, e.g. {"openai": 500}: each request takes the
            next free slot 60/rpm seconds after the previous one (no bursts).
        preset_defaults: a vendor without a `max_concurrency` entry gets its preset's
            `VendorPreset.max_concurrency` (e.g. ollama's 4) instead of no cap.

    Raises:
        ConfigError: a limit below or equal to 0.
    """

    def __init__(
        self,
        max_concurrency: dict[str, int] | None = None,
        requests_per_minute: dict[str, float] | None = None,
        *,
        preset_defaults: bool = True,
    ) -> None:
        for what, limits in (("max_concurrency", max_concurrency),
                             ("requests_per_minute", requests_per_minute)):
            for vendor, value in (limits or {}).items():
                if isinstance(value, bool) or not value > 0:
                    raise ConfigError(
                        f"limits.{vendor}.{what}: must be more than 0 (got {value!r})"
                    )
        self.max_concurrency = dict(max_concurrency or {})
        self.requests_per_minute = dict(requests_per_minute or {})
        self.preset_defaults = preset_defaults
        self._semaphores: dict[str, threading.BoundedSemaphore | None] = {}
        self._paces: dict[str, Pace | None] = {}
        self._lock = threading.Lock()

    def concurrency_for(self, vendor: str) -> int | None:
        """The cap on requests in flight to a vendor (None: no cap).

        Raises:
            CriticCallError: `vendor` is not a known preset (and has no explicit entry).
        """
        limit = self.max_concurrency.get(vendor)
        if limit is None and self.preset_defaults:
            limit = get_preset(vendor).max_concurrency
        return limit

    def semaphore(
        self, vendor: str, *, with_default: bool = True
    ) -> threading.BoundedSemaphore | None:
        """The vendor's in-flight semaphore, or None when nothing caps it.

        `with_default=False` ignores the preset default (the caller applies its own cap): an
        explicit entry still returns the same shared semaphore.
        """
        if not with_default and vendor not in self.max_concurrency:
            return None
        if vendor in self._semaphores:  # a dict read is atomic: no lock on the hot path
            return self._semaphores[vendor]
        with self._lock:
            if vendor not in self._semaphores:
                limit = self.concurrency_for(vendor)
                self._semaphores[vendor] = threading.BoundedSemaphore(limit) if limit else None
            return self._semaphores[vendor]

    def pace(self, vendor: str) -> Pace | None:
        """The vendor's requests-per-minute pace, or None when it is not paced."""
        if vendor in self._paces:
            return self._paces[vendor]
        with self._lock:
            if vendor not in self._paces:
                rpm = self.requests_per_minute.get(vendor)
                self._paces[vendor] = Pace(rpm) if rpm else None
            return self._paces[vendor]
