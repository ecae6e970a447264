"""Jurybox's storage: SQLite through sqlite-utils, the only package that knows SQL.

Open a connection per thread with `open_db(path)`; every function takes that `db` first and
returns plain dicts, dataclasses or DataFrames. Modules: `db` (opening, pragmas), `migrations`
(the schema), `datasets`, `panels`, `runs`, `calls` (verdicts and the call cache), `consensus`,
`review` (the review table and item detail), `overrides`, `decisions` (the final decision of
an item, one rule for every panel kind), `export`, `importing` (reading files).
"""

from storage.calls import (
    CallCacheStore,
    call_counts,
    failure_summary,
    load_verdicts,
    successful_pairs,
    write_verdicts,
)
from storage.consensus import (
    consensus_summary,
    load_consensus,
    load_panel_verdicts,
    set_item_alpha,
    write_consensus,
)
from storage.dataset_store import (
    SavedDataset,
    delete_dataset,
    find_dataset_by_hash,
    get_dataset,
    get_item,
    items_frame,
    list_datasets,
    load_items,
    save_dataset,
)
from storage.db import NotFoundError, StorageError, default_db_path, open_db
from storage.decisions import DecisionRule, final_decisions
from storage.export_files import export_bytes, export_frame, export_run
from storage.overrides import (
    accept_consensus,
    add_override,
    final_labels,
    human_labels,
    latest_overrides,
    override_history,
)
from storage.panels import get_panel, list_panels, save_panel
from storage.review_queue import (
    gold_labels,
    item_detail,
    item_position,
    ratings_frame,
    ratings_grid,
    review_labels,
    review_table,
)
from storage.runs import (
    add_to_ledger,
    create_run,
    get_run,
    list_runs,
    mark_interrupted,
    set_run_status,
)

__all__ = [
    "CallCacheStore",
    "DecisionRule",
    "NotFoundError",
    "SavedDataset",
    "StorageError",
    "accept_consensus",
    "add_to_ledger",
    "add_override",
    "call_counts",
    "consensus_summary",
    "create_run",
    "default_db_path",
    "delete_dataset",
    "export_bytes",
    "export_frame",
    "export_run",
    "failure_summary",
    "final_decisions",
    "final_labels",
    "find_dataset_by_hash",
    "get_dataset",
    "get_item",
    "get_panel",
    "get_run",
    "gold_labels",
    "human_labels",
    "item_detail",
    "item_position",
    "items_frame",
    "latest_overrides",
    "list_datasets",
    "list_panels",
    "list_runs",
    "load_consensus",
    "load_items",
    "load_panel_verdicts",
    "load_verdicts",
    "mark_interrupted",
    "open_db",
    "override_history",
    "ratings_frame",
    "ratings_grid",
    "review_labels",
    "review_table",
    "save_dataset",
    "save_panel",
    "set_item_alpha",
    "set_run_status",
    "successful_pairs",
    "write_consensus",
    "write_verdicts",
]
