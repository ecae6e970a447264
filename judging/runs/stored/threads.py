"""A per-turn run's threads: each thread's verdict as a rule over its turns' final decisions
(`judging.panel.conversation.thread_verdicts`: it fails when any turn fails, and names the first
failing turn), read from a stored run. Review shows the open turn's thread; Export writes one
row per thread beside the row per turn."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from judging.panel.conversation import ThreadVerdict, failing_labels, thread_verdicts
from judging.runs.stored.stored_run import load_run
from storage.datasets.dataset_store import get_dataset, load_items, load_items_of
from storage.results.export_files import rows_csv_bytes


def run_threads(db: Any, run_id: int, *, item_ids: Collection[str] | None = None
                ) -> tuple[list[ThreadVerdict], list[str]]:
    """The threads of a per-turn run with their verdicts, and the labels counted as a failed
    turn (the scale's labels that read as one: FAIL, no, bad...). Empty lists when the run's
    items are not turns (no `thread_id` / `turn_index`) or no label reads as a failure. A turn
    not decided yet (not judged, or no consensus) leaves its thread open unless another fails.

    Args:
        item_ids: only these turns (Review: the open turn's thread); None: every item.

    Raises:
        NotFoundError: no such run.
    """
    run = load_run(db, run_id)
    failing = failing_labels(run.panel.scale.labels)
    # The dataset's field list says whether its items are turns, before any item is read.
    if not failing or not {"thread_id", "turn_index"} <= set(
            get_dataset(db, run.dataset_id)["fields"]):
        return [], failing
    items = (load_items(db, run.dataset_id) if item_ids is None
             else load_items_of(db, run.dataset_id, item_ids))
    decisions = run.decisions(db)
    final = dict(zip(decisions["item_id"].astype(str), decisions["final_label"], strict=True))
    rows = []
    for item in items:
        fields = item.fields
        if "thread_id" in fields and "turn_index" in fields:
            label = final.get(item.id)
            decided = None if label is None or label != label else str(label)  # NaN: open
            rows.append((str(fields["thread_id"]), int(fields["turn_index"]), decided))
    return thread_verdicts(rows, failing), failing


def threads_csv(threads: list[ThreadVerdict]) -> bytes:
    """One CSV row per thread: its id, verdict, first failing turn, failing turns, turns and
    turns decided (cells a spreadsheet would run as a formula escaped, as the export's)."""
    return rows_csv_bytes([
        {"thread_id": t.thread_id, "thread_verdict": t.verdict,
         # "" rather than None: a missing number would turn the column into floats (3.0)
         "first_failing_turn": "" if t.first_failing is None else t.first_failing,
         "failing_turns": " ".join(map(str, t.failing)),
         "turns": t.turns, "decided": t.decided} for t in threads])
