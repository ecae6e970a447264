"""The per-run register of critics stopped after a fatal error (bad key, no model, no quota),
or after the same error on K items in a row, and of parameters a vendor refused."""

from __future__ import annotations

import re
import threading

# What varies between two reports of one error: request ids, numbers, quoted ids.
_VARYING = re.compile(r"req_[A-Za-z0-9]+|[0-9a-f]{8,}|\d+(?:\.\d+)?")


def error_signature(message: str) -> str:
    """A failure message with what varies between requests (ids, numbers) taken out, so the
    same error on two items reads the same."""
    return _VARYING.sub("#", message)[:300]


class CriticGate:
    """Critics stopped for the rest of a run after a fatal error (bad key, no model, no quota).

    One per run: `Panel.judge_many` makes a fresh one, so a fixed key works on the next run.

    Args:
        repeated_errors: stop a critic after the same error on this many items in a row
            (`Panel.stop_after_repeated_errors`; 0 never). An error that recurs on every request
            (a refused parameter, an out-of-credit 400) would otherwise be paid and waited for
            on every item of the run.
    """

    def __init__(self, repeated_errors: int = 3) -> None:
        self.repeated_errors = repeated_errors
        self._streaks: dict[str, tuple[str, int]] = {}
        self._reasons: dict[str, str] = {}
        # Parameters a vendor refused for a critic during this run, and what is sent instead:
        # {critic: {parameter: replacement name, or None to drop it}} (`judging.engine.calls.adjust`).
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

    def outcome(self, critic: str, error: str | None) -> bool:
        """Record how one of a critic's items ended: None for an answer (a verdict, a refusal,
        anything the model said), else the error's message. Returns True when this error made
        the same error on `repeated_errors` items in a row: the critic is then stopped, with a
        sentence naming the error."""
        if error is None:
            if critic in self._streaks:
                with self._lock:
                    self._streaks.pop(critic, None)
            return False
        if self.repeated_errors <= 0:
            return False
        signature = error_signature(error)
        with self._lock:
            last, count = self._streaks.get(critic, ("", 0))
            count = count + 1 if last == signature else 1
            self._streaks[critic] = (signature, count)
            if count < self.repeated_errors or critic in self._reasons:
                return False
            self._reasons[critic] = (
                f"critic {critic!r}: the same error on {count} items in a row, so it was stopped "
                f"for the rest of the run: {error}. Fix the cause (the critic's model, "
                "parameters or account) and resume the run."
            )
            return True

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
