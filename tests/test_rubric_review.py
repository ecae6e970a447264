"""Rubric review (issue 23, major defect 8): a reviewer's criterion marks rescore the item, its
final label follows by the panel's thresholds (Review, the export, the CLI), and the item counts
as reviewed by a human in the Agreement report and page."""

from __future__ import annotations

import csv
import io
import pathlib
import shutil

import pytest

from judging.demo import pairwise_dataset_path
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.panel.rubric import MET, UNMET, rubric_score
from judging.runs.stored.run_report import run_agreement_report
from judging.runs.stored.stored_run import export_options, run_decisions
from judging.voting.strategies import band
from storage.db import open_db
from storage.results.export_files import export_bytes
from storage.reviewing.criteria import add_criterion_override, final_marks
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table
from tests.fixtures_app import ROOT
from tests.test_app_smoke import all_text, no_exception, open_page

THRESHOLDS = {"good": 0.75, "fair": 0.5, "poor": 0.0}


@pytest.fixture(scope="module")
def banded_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, int]:
    """One finished run of the rubric demo panel with thresholds that band its score."""
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.results.runs import get_run

    path = tmp_path_factory.mktemp("banded") / "template.db"
    db = open_db(path)
    try:
        dataset = save_dataset(db, read_dataset(pairwise_dataset_path(), id_column="id",
                                                gold_column="gold"), name="Support answers")
        spec = load_panel(ROOT / "judging" / "demo" / "rubric_panel.yaml").model_dump(
            mode="json")
        spec["voting"]["thresholds"] = THRESHOLDS
        run_id = prepare_run(db, dataset_id=dataset.id, panel=Panel.model_validate(spec))
        assert JobRegistry().start_run(str(path), run_id).wait(120)
        assert get_run(db, run_id)["status"] == "done", get_run(db, run_id)["error"]
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return path, run_id


@pytest.fixture
def banded_db(banded_template: tuple[pathlib.Path, int],
              app_db: pathlib.Path) -> tuple[pathlib.Path, int]:
    template, run_id = banded_template
    shutil.copyfile(template, app_db)
    return app_db, run_id


def _flip(path: pathlib.Path, run_id: int, item: str) -> tuple[str, float, str] | None:
    """The mark of "answers" (weight 2 of 4) that moves `item`'s score into another band, with
    the new score and that band; None when flipping it leaves the item in its band."""
    detail = item_detail(open_db(path), run_id, item)
    marks = {c: v["mark"] for c, v in detail["consensus"]["marks"].items()}
    flipped = UNMET if marks["answers"] == MET else MET
    rubric = load_panel(ROOT / "judging" / "demo" / "rubric_panel.yaml").rubric
    score = rubric_score({**marks, "answers": flipped}, rubric)
    label = None if score is None else band(score, THRESHOLDS)
    if score is None or label is None or label == detail["consensus"]["consensus"]:
        return None
    return flipped, score, label


def _flippable(path: pathlib.Path, run_id: int, filters: ReviewFilter | None = None,
               sort: str = "contested") -> tuple[str, str, float, str]:
    """The first item of the review list (`filters`) whose "answers" flip changes its band."""
    frame, _ = review_table(open_db(path), run_id, filters or ReviewFilter(), sort=sort,
                            limit=None)
    for item in map(str, frame["item_id"]):
        flip = _flip(path, run_id, item)
        if flip is not None:
            return (item, *flip)
    raise AssertionError("no item of the demo changes band with its main criterion")


def test_the_consensus_label_is_the_score_s_band(banded_db):
    path, run_id = banded_db
    final = run_decisions(open_db(path), run_id)
    assert set(final["consensus"]) <= set(THRESHOLDS)
    assert all(label == band(score, THRESHOLDS)
               for label, score in zip(final["consensus"], final["consensus_score"], strict=True))


def test_a_reviewer_s_marks_give_the_final_label_by_the_thresholds_everywhere(banded_db):
    path, run_id = banded_db
    db = open_db(path)
    item, flipped, score, label = _flippable(path, run_id, sort="item")
    add_criterion_override(db, run_id, item, "answers", flipped, "read it twice", "ana")

    row = run_decisions(db, run_id).set_index("item_id").loc[item]
    assert (row["final_score"], row["final_label"], row["decided_by"]) == \
        (pytest.approx(score), label, "human")
    exported = {r["item_id"]: r for r in csv.DictReader(io.StringIO(
        export_bytes(db, run_id, "csv", export_options(db, run_id)).decode()))}[item]
    # The export's label and score are one decision: the marks' score and its band.
    assert (float(exported["final_score"]), exported["final_label"]) == \
        (pytest.approx(score), label)


def test_a_rubric_review_counts_as_reviewed_by_a_human(banded_db):
    path, run_id = banded_db
    db = open_db(path)
    assert run_agreement_report(db, run_id, resamples=50).vs_humans == {}
    item, flipped, _, _ = _flippable(path, run_id, sort="item")
    add_criterion_override(db, run_id, item, "answers", flipped, "", "ana")
    report = run_agreement_report(db, run_id, resamples=50)
    assert report.vs_humans  # every critic is now compared with the human's score
    assert max(p.n + p.missing for p in report.vs_humans.values()) == 1

    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert "1 item reviewed by humans." in all_text(at)


def test_review_s_mark_form_shows_the_label_the_marks_give(banded_db):
    path, run_id = banded_db
    k = f"rv{run_id}."
    item, flipped, score, label = _flippable(path, run_id, ReviewFilter(disagreements_only=True))
    at = open_page("review", query={"run": str(run_id), "item": item})
    at.text_input(key=k + "reviewer").input("ana").run()
    assert at.session_state[k + "item"] == item
    at.selectbox(key=f"{k}criterion_id.{item}").set_value("answers")
    at.radio(key=f"{k}criterion_mark.{item}").set_value(flipped)
    at.button(key=f"FormSubmitter:{k}criterion.{item}-Save this criterion's mark").click().run()
    no_exception(at)
    assert final_marks(open_db(path), run_id)[item]["answers"] == flipped
    assert f"{score:.2f}, label {label} (by the panel" in all_text(at).replace("\\", "")
    # The item's line and the list say the same final label.
    assert f"final {label} (a reviewer's criterion marks)" in [t.value for t in at.text][0]
    table = next(f.value for f in at.dataframe if "final_label" in f.value.columns)
    assert table.set_index("item_id").loc[item, "final_label"] == label
