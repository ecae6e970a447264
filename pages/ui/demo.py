""""Try the demo": import a demo dataset, load its panel, start its run — one click; and
recognising the demos' datasets and runs afterwards. Two demos: taxonomy curation, and a
pairwise comparison of support answers."""

from __future__ import annotations

import functools
import hashlib
import pathlib
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from judging.demo import (
    demo_dataset_path,
    demo_panel_path,
    pairwise_dataset_path,
    pairwise_panel_path,
)
from judging.panel.panel_files import load_panel, panel_hash
from judging.runs.background.jobs import prepare_run
from pages.ui.state import db, db_path, registry, worker_key_lookup
from storage.datasets.dataset_store import list_datasets, save_dataset
from storage.datasets.importing import read_dataset
from storage.results.runs import list_runs


@dataclass(frozen=True)
class Demo:
    """One demo: its files, the name its dataset is imported under, and what it shows."""

    key: str  # widget keys: "try_demo" / "open_demo" / "new_demo" for the taxonomy demo
    dataset_path: pathlib.Path
    panel_path: pathlib.Path
    dataset_name: str
    summary: str  # "four simulated critics over 300 taxonomy-curation items"
    # The columns items carry (None: every column but the id and gold). The pairwise demo
    # leaves out each answer's hidden quality: the simulator's truth, not something to show.
    fields: tuple[str, ...] | None = None

    @functools.cached_property
    def file_hash(self) -> str:
        """The sha256 of the demo CSV's bytes: what a dataset imported from it records as its
        `file_hash`, whatever its name or column mapping."""
        return hashlib.sha256(self.dataset_path.read_bytes()).hexdigest()

    @functools.cached_property
    def panel_hash(self) -> str:
        """The content hash of the demo panel (the version a demo run snapshots)."""
        return panel_hash(load_panel(self.panel_path))


TAXONOMY = Demo("demo", demo_dataset_path(), demo_panel_path(), "Demo: taxonomy candidates",
                "four simulated critics over 300 taxonomy-curation items")
PAIRWISE = Demo("pairwise_demo", pairwise_dataset_path(), pairwise_panel_path(),
                "Demo: support answers, pairwise",
                "three simulated critics comparing 60 pairs of support answers in both orders",
                fields=("question", "system_a", "answer_a", "system_b", "answer_b"))
DEMOS = (TAXONOMY, PAIRWISE)
DEMO_DATASET_NAME = TAXONOMY.dataset_name


def demo_file_hashes() -> set[str]:
    """The file hashes of every demo dataset (data the simulator knows the answers to)."""
    return {demo.file_hash for demo in DEMOS}


def demo_dataset_ids(database: sqlite_utils.Database, demo: Demo = TAXONOMY) -> set[int]:
    """Ids of the datasets imported from a demo's file."""
    return {d["id"] for d in list_datasets(database) if d.get("file_hash") == demo.file_hash}


def latest_demo_run(database: sqlite_utils.Database,
                    demo: Demo = TAXONOMY) -> dict[str, Any] | None:
    """The newest run of a demo's panel over its dataset (as in `list_runs`), or None."""
    demo_sets = demo_dataset_ids(database, demo)
    return next(
        (r for r in list_runs(database)
         if r["dataset_id"] in demo_sets and r["panel_hash"] == demo.panel_hash),
        None,
    )


def start_demo(demo: Demo = TAXONOMY) -> int:
    """Import a demo's dataset (once: the same content is recognised), create a run of its
    panel on the simulated vendor, and start it in the background.

    Returns:
        The new run's id.

    Raises:
        JuryboxError: the demo files cannot be read, or the run cannot start.
    """
    parsed = read_dataset(demo.dataset_path, id_column="id", gold_column="gold",
                          fields=list(demo.fields) if demo.fields else None)
    saved = save_dataset(db(), parsed, name=demo.dataset_name)
    panel = load_panel(demo.panel_path)
    run_id = prepare_run(db(), dataset_id=saved.id, panel=panel, name="Demo run")
    registry().start_run(str(db_path()), run_id, key_lookup=worker_key_lookup())
    return run_id
