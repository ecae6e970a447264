""""Try the demo": import the demo dataset, load the demo panel, start its run — one click; and
recognising the demo's dataset and runs afterwards."""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import sqlite_utils

from judging.demo import demo_dataset_path, demo_panel_path
from judging.panel_files import load_panel, panel_hash
from judging.runs.jobs import prepare_run
from pages.ui.state import db, db_path, registry, worker_key_lookup
from storage.datasets import list_datasets, save_dataset
from storage.importing import read_dataset
from storage.runs import list_runs

DEMO_DATASET_NAME = "Demo: taxonomy candidates"


@functools.cache
def demo_file_hash() -> str:
    """The sha256 of the demo CSV's bytes: what a dataset imported from it records as its
    `file_hash`, whatever its name or column mapping."""
    return hashlib.sha256(demo_dataset_path().read_bytes()).hexdigest()


@functools.cache
def demo_panel_hash() -> str:
    """The content hash of the demo panel (the version a demo run snapshots)."""
    return panel_hash(load_panel(demo_panel_path()))


def demo_dataset_ids(database: sqlite_utils.Database) -> set[int]:
    """Ids of the datasets imported from the demo file."""
    return {d["id"] for d in list_datasets(database) if d.get("file_hash") == demo_file_hash()}


def latest_demo_run(database: sqlite_utils.Database) -> dict[str, Any] | None:
    """The newest run of the demo panel over the demo dataset (as in `list_runs`), or None."""
    demo_sets = demo_dataset_ids(database)
    return next(
        (r for r in list_runs(database)
         if r["dataset_id"] in demo_sets and r["panel_hash"] == demo_panel_hash()),
        None,
    )


def start_demo() -> int:
    """Import the demo dataset (once: the same content is recognised), create a run of the demo
    panel on the simulated vendor, and start it in the background.

    Returns:
        The new run's id.

    Raises:
        JuryboxError: the demo files cannot be read, or the run cannot start.
    """
    path = demo_dataset_path()
    parsed = read_dataset(path, id_column="id", gold_column="gold")
    saved = save_dataset(db(), parsed, name=DEMO_DATASET_NAME)
    panel = load_panel(demo_panel_path())
    run_id = prepare_run(db(), dataset_id=saved.id, panel=panel, name="Demo run")
    registry().start_run(str(db_path()), run_id, key_lookup=worker_key_lookup())
    return run_id
