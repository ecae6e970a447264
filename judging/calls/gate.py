"""The per-run register of critics stopped after a fatal error (bad key, no model, no quota)."""

from __future__ import annotations

import threading


class CriticGate:
    """Critics stopped for the rest of a run after a fatal error (bad key, no model, no quota).

    One per run: `Panel.judge_many` makes a fresh one, so a fixed key works on the next run.
    """

    def __init__(self) -> None:
        self._reasons: dict[str, str] = {}
        # Parameters a vendor refused for a critic during this run, and what is sent instead:
        # {critic: {parameter: replacement name, or None to drop it}} (`judging.calls.adjust`).
        self._adjusted: dict[str, dict[str, str | None]] = {}
        self._adjust_notes: dict[str, list[str]] = {}
        self._probes: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def enter(self, critic: str) -> bool:
        """Called before a critic's request is sent. The first call of a critic in the run is
        its probe and goes at once (returns True); the others wait until the probe has
        finished, so a bad key or a missing model costs exactly one request, not one per
        worker already in flight. Afterwards this is one dict lookup."""
        probe = self._probes.get(critic)
        if probe is None:
            with self._lock:
                probe = self._probes.get(critic)
                if probe is None:
                    self._probes[critic] = threading.Event()
                    return True
        if not probe.is_set():  # is_set reads a flag; wait() would take the event's lock
            probe.wait()  # bounded: the probe's own deadline and retry budget end it
        return False

    def probe_done(self, critic: str) -> None:
        """The probe call of a critic has finished (whatever its outcome)."""
        self._probes[critic].set()

    def reason(self, critic: str) -> str | None:
        """Why a critic was stopped, or None if it may be called."""
        return self._reasons.get(critic)  # a dict read is atomic; no lock on the hot path

    def stop(self, critic: str, reason: str) -> None:
        """Stop a critic (the first reason wins)."""
        with self._lock:
            self._reasons.setdefault(critic, reason)

    @property
    def stopped(self) -> dict[str, str]:
        """Every stopped critic with its reason."""
        with self._lock:
            return dict(self._reasons)

    def adjust(self, critic: str, parameter: str, replacement: str | None, note: str) -> bool:
        """Remember for the rest of the run that the vendor refused `parameter` for `critic`:
        send it as `replacement` (a new name) or not at all (None). Returns False when that
        parameter was already adjusted (a second refusal is not adjusted again)."""
        with self._lock:
            done = self._adjusted.setdefault(critic, {})
            if parameter in done:
                return False
            done[parameter] = replacement
            self._adjust_notes.setdefault(critic, []).append(note)
            return True

    def adjusted(self, critic: str) -> dict[str, str | None]:
        """The run's adjustments of a critic's parameters ({} when none)."""
        return self._adjusted.get(critic, {})

    def adjustments(self, critic: str) -> list[str]:
        """Sentences saying which parameters were dropped or renamed for a critic this run."""
        with self._lock:
            return list(self._adjust_notes.get(critic, ()))
