"""Fixtures of the juries tests: a finished run of the demo panel of juries
(`judging/demo/juries_panel.yaml`) over the demo dataset, judged over real HTTP by the built-in
simulator on 127.0.0.1, in one real SQLite file (about 5 s, once per session)."""

from __future__ import annotations

import pathlib

import pytest

from judging.demo import demo_dataset_path
from judging.panel.panel_files import load_panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.runs import get_run

JURIES_PANEL = (pathlib.Path(__file__).resolve().parent.parent / "judging" / "demo"
                / "juries_panel.yaml")


def make_juries_db(path: pathlib.Path) -> int:
    """The demo dataset and a finished run of the demo panel of juries in `path`; the run id."""
    db = open_db(path)
    try:
        parsed = read_dataset(demo_dataset_path(), id_column="id", gold_column="gold")
        dataset = save_dataset(db, parsed, name="Demo: taxonomy candidates")
        run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(JURIES_PANEL))
        job = JobRegistry().start_run(str(path), run_id)
        assert job.wait(120), "the juries run did not finish in 120 s"
        assert get_run(db, run_id)["status"] == "done", get_run(db, run_id)["error"]
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a file copy is the whole database
    finally:
        db.close()
    return run_id


@pytest.fixture(scope="session")
def juries_run_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, int]:
    path = tmp_path_factory.mktemp("juries") / "juries.db"
    return path, make_juries_db(path)


