"""Fixtures of the version-against-version tests: the demo run and a second panel version's run
over the same dataset, both judged over real HTTP by the built-in simulator on 127.0.0.1, in
one real SQLite file."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from judging.demo import demo_panel_v2_path
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from storage.db import open_db
from storage.results.runs import get_run


def demo_panel_v2() -> Panel:
    """The demo panel's second version as shipped (`judging/demo/demo_panel_v2.yaml`): its
    `lenient` critic (sim-lenient, about 78% right and leaning to KEEP) replaced by `second` on
    sim-biased (about 85% right). The other three critics are unchanged, so their calls are
    answered from the first run's cache."""
    return load_panel(demo_panel_v2_path())


def run_panel(path: pathlib.Path, dataset_id: int, panel: Panel, **options: object) -> int:
    """Create and run `panel` over a stored dataset to its end (or its budget); the run id."""
    db = open_db(path)
    try:
        run_id = prepare_run(db, dataset_id=dataset_id, panel=panel, **options)  # type: ignore[arg-type]
        job = JobRegistry().start_run(str(path), run_id)
        assert job.wait(120), f"run {run_id} did not finish in 120 s"
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a file copy is the whole database
    finally:
        db.close()
    return run_id


@pytest.fixture(scope="session")
def two_runs_template(
    demo_db_template: tuple[pathlib.Path, int], tmp_path_factory: pytest.TempPathFactory
) -> tuple[pathlib.Path, int, int]:
    """The finished demo run (A) and a finished run of `demo_panel_v2` (B) over the demo
    dataset, once per session. Returns (path, run A, run B)."""
    template, run_a = demo_db_template
    path = tmp_path_factory.mktemp("compare") / "two_runs.db"
    shutil.copyfile(template, path)
    db = open_db(path)
    try:
        dataset_id = int(get_run(db, run_a)["dataset_id"])
    finally:
        db.close()
    run_b = run_panel(path, dataset_id, demo_panel_v2())
    return path, run_a, run_b


@pytest.fixture
def two_runs(
    two_runs_template: tuple[pathlib.Path, int, int], app_db: pathlib.Path
) -> tuple[pathlib.Path, int, int]:
    """A private copy of `two_runs_template` as the app's database (JURYBOX_DB)."""
    template, run_a, run_b = two_runs_template
    shutil.copyfile(template, app_db)
    return app_db, run_a, run_b
