"""A run's status: the one list of them and the one rule for which are finished.

A leaf (stdlib only), so storage, the jobs and the pages read the same rule. The values are the
strings stored in `runs.status`; a `RunStatus` compares equal to its string, so rows read from
the database need no conversion to be compared (`RunStatus(row["status"]).finished` to ask).

Two statuses live only in a job's progress, never in the database: `starting` (the job exists,
its run not yet claimed) and `cancelling` (cancel pressed, calls in flight finishing).
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """Where a run (or the job working on it) stands."""

    PENDING = "pending"  # created, never started
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"  # by the user or by the run's budget cap; resumable
    INTERRUPTED = "interrupted"  # its process stopped, or it waits on a vendor batch; resumable
    FAILED = "failed"
    # A job's progress only (not stored):
    STARTING = "starting"
    CANCELLING = "cancelling"

    @property
    def finished(self) -> bool:
        """True once no job works on it any more: done, cancelled, interrupted or failed.

        An interrupted run is finished (nothing works on it) though it may be resumed, like a
        cancelled or failed one."""
        return self in _FINISHED

    @property
    def stored(self) -> bool:
        """True for the statuses the database holds (all but `starting` and `cancelling`)."""
        return self not in _JOB_ONLY

    @property
    def resumable(self) -> bool:
        """True when a resume may pick the run up: never started, or stopped short."""
        return self in _RESUMABLE


_FINISHED = frozenset({RunStatus.DONE, RunStatus.CANCELLED, RunStatus.INTERRUPTED,
                       RunStatus.FAILED})
_JOB_ONLY = frozenset({RunStatus.STARTING, RunStatus.CANCELLING})
_RESUMABLE = frozenset({RunStatus.PENDING, RunStatus.CANCELLED, RunStatus.INTERRUPTED,
                       RunStatus.FAILED})

# The statuses a run row may hold, in the order of the schema's CHECK constraint.
STORED_STATUSES: tuple[RunStatus, ...] = tuple(s for s in RunStatus if s.stored)


def is_finished(status: str) -> bool:
    """The `finished` rule for a status read as a plain string (a database row).

    Raises:
        ValueError: not a run status.
    """
    return RunStatus(status).finished
