""""Try the demo": import the demo dataset, load the demo panel, start its run — one click."""

from __future__ import annotations

from judging.demo import demo_dataset_path, demo_panel_path
from judging.panel_files import load_panel
from judging.runs.jobs import prepare_run
from pages.ui.state import db, db_path, registry, worker_key_lookup
from storage.datasets import save_dataset
from storage.importing import read_dataset

DEMO_DATASET_NAME = "Demo: taxonomy candidates"


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
