"""Jurybox's storage: SQLite through sqlite-utils, the only package that knows SQL.

Open a connection per thread with `open_db(path)`; every function takes that `db` first and
returns plain dicts, dataclasses or DataFrames. At the top: `db` (opening, pragmas, the write
transaction), `migrations` (the schema), `faults`, `keys`, `panels`, `drafts`. Grouped:
`datasets` (files read, datasets and items, imported verdicts), `results` (a run, its calls,
decisions, figures and exports), `reviewing` (the review table, overrides, final decisions,
leases, the audit sample, the verifiable record).
"""

from storage.datasets.dataset_store import (
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
from storage.panels import get_panel, list_panels, save_panel
from storage.results.calls import (
    CallCacheStore,
    call_counts,
    failure_summary,
    load_verdicts,
    successful_pairs,
    write_verdicts,
)
from storage.results.consensus import (
    consensus_summary,
    load_consensus,
    load_panel_verdicts,
    set_item_alpha,
    write_consensus,
)
from storage.results.export_files import export_bytes, export_frame, export_run
from storage.results.runs import (
    add_to_ledger,
    create_run,
    get_run,
    list_runs,
    mark_interrupted,
    set_run_status,
)
from storage.reviewing.decisions import DecisionRule, final_decisions
from storage.reviewing.overrides import (
    accept_consensus,
    add_override,
    final_labels,
    human_labels,
    latest_overrides,
    override_history,
)
from storage.reviewing.review_queue import (
    gold_labels,
    item_detail,
    item_position,
    ratings_frame,
    ratings_grid,
    review_labels,
    review_table,
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
