"""The pages of a rubric run (issue 10 part 1), through the real widgets: Review's item x
criterion grid, the "criterion in dispute" filter and a reviewer's mark for one criterion;
Agreement per criterion; Export with a column per criterion and critic."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from judging.demo import pairwise_dataset_path
from judging.panel.rubric import MET, UNMET
from storage.db import open_db
from storage.reviewing.criteria import final_marks
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table
from tests.fixtures_app import ROOT
from tests.test_app_smoke import all_text, no_exception, open_page


@pytest.fixture(scope="module")
def rubric_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, int]:
    """One finished run of the rubric demo panel, copied by each test."""
    from judging.panel.panel_files import load_panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.results.runs import get_run

    path = tmp_path_factory.mktemp("rubric") / "template.db"
    db = open_db(path)
    try:
        parsed = read_dataset(pairwise_dataset_path(), id_column="id", gold_column="gold")
        dataset = save_dataset(db, parsed, name="Support answers")
        panel = load_panel(ROOT / "judging" / "demo" / "rubric_panel.yaml")
        run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
        assert JobRegistry().start_run(str(path), run_id).wait(120)
        assert get_run(db, run_id)["status"] == "done", get_run(db, run_id)["error"]
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return path, run_id


@pytest.fixture
def rubric_db(rubric_template: tuple[pathlib.Path, int],
              app_db: pathlib.Path) -> tuple[pathlib.Path, int]:
    template, run_id = rubric_template
    shutil.copyfile(template, app_db)
    return app_db, run_id


@pytest.mark.parametrize("page", ["review", "agreement", "export", "run"])
def test_every_page_opens_on_a_rubric_run(rubric_db: tuple[pathlib.Path, int], page: str) -> None:
    _, run_id = rubric_db
    no_exception(open_page(page, query={"run": str(run_id)}))


def test_review_shows_the_criteria_grid_and_saves_a_reviewers_mark(
    rubric_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = rubric_db
    db = open_db(path)
    frame, total = review_table(db, run_id, ReviewFilter(disputed="answers"), limit=None)
    assert total > 0
    at = open_page("review", query={"run": str(run_id)})
    key = f"rv{run_id}."
    at.selectbox(key=key + "disputed").set_value("answers").run()
    at.toggle(key=key + "disagree").set_value(False).run()
    no_exception(at)
    assert f"{total:,} item" in all_text(at)
    item = at.session_state[key + "item"]
    assert item in set(frame["item_id"])

    grid = next(f.value for f in at.dataframe if "criterion" in f.value.columns)
    assert list(grid["criterion"]) == ["answers", "steps", "polite", "deflects"]
    detail = item_detail(db, run_id, item)
    voted = detail["consensus"]["marks"]
    assert list(grid["panel"]) == [voted[c]["mark"] for c in grid["criterion"]]
    assert bool(grid.set_index("criterion").loc["answers", "in dispute"])
    for verdict in detail["verdicts"]:
        assert list(grid[verdict["critic"]]) == [verdict["marks"][c]["mark"]
                                                 for c in grid["criterion"]]

    at.text_input(key=key + "reviewer").input("ana").run()
    flipped = UNMET if voted["answers"]["mark"] == MET else MET
    at.selectbox(key=f"{key}criterion_id.{item}").set_value("answers")
    at.radio(key=f"{key}criterion_mark.{item}").set_value(flipped)
    at.text_input(key=f"{key}criterion_note.{item}").input("read it twice")
    at.button(key=f"FormSubmitter:{key}criterion.{item}-Save this criterion's mark").click().run()
    no_exception(at)
    assert final_marks(db, run_id)[item]["answers"] == flipped
    grid = next(f.value for f in at.dataframe if "criterion" in f.value.columns)
    assert grid.set_index("criterion").loc["answers", "reviewer"] == flipped
    assert [s.value.startswith(f"Saved {flipped} for answers of") for s in at.success] == [True]


def test_agreement_shows_each_criterion(rubric_db: tuple[pathlib.Path, int]) -> None:
    _, run_id = rubric_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert "Rubric: agreement per criterion" in all_text(at)
    table = next(f.value for f in at.dataframe if "in dispute" in f.value.columns)
    assert list(table["criterion"]) == ["answers", "steps", "polite", "deflects"]
    assert {"careful = panel", "lenient = panel", "strict = panel"} <= set(table.columns)
