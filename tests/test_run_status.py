"""One type for a run's status: the stored strings, and one rule for which are finished."""

from __future__ import annotations

import pytest
import sqlite_utils

from judging.run_status import STORED_STATUSES, RunStatus, is_finished
from judging.runs.background.job import JobProgress
from storage.db import StorageError
from storage.migrations import RUN_STATUSES
from storage.results.runs import claim_run, get_run, set_run_status
from tests.fixtures_storage import seed_run


@pytest.mark.parametrize(("status", "finished"), [
    ("pending", False), ("running", False), ("starting", False), ("cancelling", False),
    ("done", True), ("cancelled", True), ("interrupted", True), ("failed", True),
])
def test_one_finished_rule_for_every_status(status: str, finished: bool) -> None:
    assert RunStatus(status).finished is finished
    assert is_finished(status) is finished
    # A job's progress answers with the same rule, and its bar is full once it is finished,
    # an interrupted job with nothing planned included (it read 0 before).
    progress = JobProgress(run_id=1, kind="start", status=RunStatus(status))
    assert progress.finished is finished
    assert progress.fraction == (1.0 if finished else 0.0)


def test_the_stored_statuses_are_the_schemas() -> None:
    # The first migration's CHECK constraint is written out (a shipped migration never
    # changes); the enum must not drift from it.
    assert [str(s) for s in STORED_STATUSES] == list(RUN_STATUSES)
    assert RunStatus.DONE == "done" and f"{RunStatus.INTERRUPTED}" == "interrupted"


def test_storage_takes_the_enum_and_writes_the_plain_string(db: sqlite_utils.Database) -> None:
    run_id = seed_run(db, 4).run_id
    set_run_status(db, run_id, RunStatus.INTERRUPTED)
    run = get_run(db, run_id)
    assert type(run["status"]) is str and run["status"] == "interrupted"
    assert run["finished_at"] is not None  # finished: stamped
    assert claim_run(db, run_id, [RunStatus.INTERRUPTED], owner="t1")
    assert get_run(db, run_id)["status"] == RunStatus.RUNNING


@pytest.mark.parametrize("status", ["starting", "cancelling", "paused"])
def test_storage_refuses_a_status_a_run_row_cannot_hold(db: sqlite_utils.Database,
                                                        status: str) -> None:
    run_id = seed_run(db, 4).run_id
    with pytest.raises(StorageError, match=f"Unknown run status '{status}'; expected one of "
                                           "pending, running, done"):
        set_run_status(db, run_id, status)
    with pytest.raises(StorageError, match="Unknown run status"):
        claim_run(db, run_id, [status], owner="t1")
