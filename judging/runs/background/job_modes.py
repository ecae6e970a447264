"""What a job does differently when it judges a run's items and when it re-judges one item.

The worker (`judging.runs.background.worker.Worker`) runs one sequence for every job and asks its mode
at each point where the two differ, instead of branching on the job's kind:

- `JudgeItems` (start, resume, rerun_failures): reuses the run's stored successes and the call
  cache, hands batch critics to the vendor's batch API first, and ends the run failed when a
  critic gave no verdict at all.
- `RejudgeItem` (rejudge): asks every critic again, live and uncached; its new outcomes
  replace the stored ones, the outcomes of critics not called this time are dropped, and the
  run's status stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from judging.engine.panel_runner import RunResult
from judging.verdicts import FailureKind, Item
from storage.results.calls import CallCacheStore, delete_item_calls, stored_critics
from storage.results.runs import critics_without_verdict, refresh_run_totals, set_stop_reason
from storage.reviewing.record_chain import seal_deleted_calls, sealing

PageHook = Callable[[list[Item]], None]


class JudgeItems:
    """Start, resume or re-run the failures of a run (see the module docstring)."""

    replace_success = False  # a stored success stands; a cached one is checked against it
    keep_verdicts = False  # verdicts go to the writer only: a run may hold millions
    uses_vendor_batches = True

    def begin(self, db: Any, run_id: int) -> None:
        """A new start: why the run stopped last time no longer holds."""
        set_stop_reason(db, run_id, None)

    def on_page(self, load_successes: PageHook) -> PageHook | None:
        """What to do with each page of items read: load their stored successes."""
        return load_successes

    def cache(self, db_path: str) -> CallCacheStore | None:
        return CallCacheStore(db_path)

    def after(self, db: Any, run_id: int, result: RunResult) -> None:
        """Once the new verdicts are stored: nothing more to tidy."""

    def silent_critics(self, db: Any, run_id: int) -> dict[str, tuple[int, str]]:
        """Critics with no verdict on any item: the run then ends failed, naming them."""
        return critics_without_verdict(db, run_id)


class RejudgeItem(JudgeItems):
    """Re-judge one item of a run (see the module docstring)."""

    replace_success = True
    keep_verdicts = True  # one item: which critics it called, for `after`
    uses_vendor_batches = False  # a day's wait for one item helps no one

    def __init__(self, item_id: str) -> None:
        self.item_id = item_id

    def begin(self, db: Any, run_id: int) -> None:
        """The run's stop reason stays: one item re-judged does not restart the run."""

    def on_page(self, load_successes: PageHook) -> PageHook | None:
        return None  # every critic is asked again: earlier successes are not reused

    def cache(self, db_path: str) -> CallCacheStore | None:
        return None

    def after(self, db: Any, run_id: int, result: RunResult) -> None:
        """Only now that the new verdicts are safely stored: drop outcomes of critics that
        were not called this time (e.g. a later cascade tier no longer needed)."""
        called = {v.critic for pv in result.verdicts for v in pv.verdicts
                  if v.failure != FailureKind.CANCELLED}
        for old in set(stored_critics(db, run_id, self.item_id)) - called:
            with sealing(db):  # the deletion is part of the run's record
                delete_item_calls(db, run_id, self.item_id, critic=old)
                seal_deleted_calls(db, run_id, [(self.item_id, old)])
        refresh_run_totals(db, run_id)

    def silent_critics(self, db: Any, run_id: int) -> dict[str, tuple[int, str]]:
        """One item re-judged leaves the run's status as it was: not judged by that rule."""
        return {}


def job_mode(kind: str, item_id: str | None) -> JudgeItems:
    """The mode of a job of this kind (`judging.runs.background.job.JobKind`)."""
    return RejudgeItem(item_id or "") if kind == "rejudge" else JudgeItems()
