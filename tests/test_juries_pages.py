"""The pages on a run of the demo panel of juries, through AppTest: Review draws the tree (jury
-> its critics' verdicts -> its decision -> the panel's decision), Agreement has a row per jury
and one between juries, the Panel page edits the juries."""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from judging.runs.stored.jury_report import run_jury_report
from pages.ui.review.jury_view import jury_decision_line, jury_heading, top_line
from storage.db import open_db
from storage.results.consensus import load_consensus
from storage.results.jury_decisions import item_jury_decisions
from storage.results.runs import get_run
from tests.test_app_smoke import no_exception, open_page


@pytest.fixture
def juries_app(juries_run_template: tuple[pathlib.Path, int],
               app_db: pathlib.Path) -> tuple[pathlib.Path, int]:
    template, run_id = juries_run_template
    shutil.copyfile(template, app_db)
    return app_db, run_id


def _walk(node: Any) -> Iterator[Any]:
    """Every element under `node`, in the order the page draws them."""
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for key in sorted(children):
            yield from _walk(children[key])
    elif children is None:
        yield node


def _texts(at: AppTest) -> list[str]:
    return [str(e.value) for e in _walk(at.main)
            if getattr(e, "type", None) in ("markdown", "text") and e.value]


def test_review_draws_the_tree_of_juries(juries_app: tuple[pathlib.Path, int]) -> None:
    path, run_id = juries_app
    db = open_db(path)
    try:
        panel_yaml = get_run(db, run_id)["panel_yaml"]
        # An item the two juries decided differently: the tree has something to show.
        item = next(row["item_id"] for row in load_consensus(db, run_id)
                    if len({r["consensus"] for r in item_jury_decisions(
                        db, run_id, row["item_id"])}) == 2)
        rows = {r["jury"]: r for r in item_jury_decisions(db, run_id, item)}
        top = next(row for row in load_consensus(db, run_id) if row["item_id"] == item)
    finally:
        db.close()
    from judging.panel.panel_files import load_panel

    panel = load_panel(panel_yaml)
    at = open_page("review", query={"run": str(run_id), "item": item})
    no_exception(at)
    shown = _texts(at)
    expected = []
    for jury in panel.juries:
        expected.append(f"**{jury_heading(jury)}**")
        expected += [f"**{critic}**" for critic in jury.critics]
        expected.append(jury_decision_line(jury.name, rows[jury.name]))
    expected.append(top_line(panel, top))
    found = [text for text in shown if text in expected]
    assert found == expected, shown  # in this order: jury, its critics, its decision ... top
    assert f"→ quality decided {rows['quality']['consensus']}" in expected[3]
    assert top_line(panel, top).startswith(
        f"⇒ Panel decision (all-of KEEP over 2 juries): {top['consensus']}")


def test_agreement_has_a_row_per_jury(juries_app: tuple[pathlib.Path, int]) -> None:
    path, run_id = juries_app
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert "Per jury" in [s.value for s in at.subheader]
    frame = next(f.value for f in at.dataframe if "split items" in f.value.columns)
    assert list(frame["jury"]) == ["quality", "safety", "(between juries)"]
    db = open_db(path)
    try:
        report = run_jury_report(db, run_id, resamples=10)
    finally:
        db.close()
    assert report is not None
    for figures, alpha in zip(report.juries, frame["alpha"], strict=False):
        assert alpha == pytest.approx(figures.report.alpha.value)
    assert frame["alpha"].iloc[-1] == pytest.approx(report.between.alpha.value)


def test_the_panel_page_edits_the_juries(juries_app: tuple[pathlib.Path, int]) -> None:
    from pages.ui.panel.panel_draft import DRAFT_KEY
    from tests.fixtures_juries import JURIES_PANEL
    from tests.test_app_smoke import panel_key
    from tests.test_panel_page import _import

    # Imported as a user does, through the page's own YAML upload.
    at = _import(open_page("panel"), "juries", JURIES_PANEL.read_text(encoding="utf-8"))
    no_exception(at)
    draft = at.session_state[DRAFT_KEY]
    assert [j["name"] for j in draft["juries"]] == ["quality", "safety"]
    area = at.text_area(key=panel_key(at, "juries"))
    text = str(area.value)
    assert "name: quality" in text and "strategy: any" in text
    # Move flaky from the safety jury to the quality jury: the draft follows the text.
    area.set_value(text.replace("- strict\n  - flaky", "- strict").replace(
        "- careful\n  - lenient", "- careful\n  - lenient\n  - flaky")).run()
    no_exception(at)
    juries = at.session_state[DRAFT_KEY]["juries"]
    assert juries[0]["critics"] == ["careful", "lenient", "flaky"]
    assert juries[1]["critics"] == ["strict"]


def test_the_tree_lines_say_what_each_level_decided() -> None:
    from judging.panel.panel_files import panel_from_dict
    from tests.test_juries import _panel_data

    panel = panel_from_dict(_panel_data())
    assert jury_heading(panel.juries[1]) == "Jury quality · majority · 2 critics"
    assert jury_decision_line("safety", {"consensus": "no", "agreement": 0.5,
                                         "disagreement": True, "failed": 1, "note": None}) \
        == "→ safety decided no · agreement 0.50 · split · 1 failed"
    assert jury_decision_line("quality", {"consensus": None, "agreement": 0.5,
                                          "disagreement": True, "failed": 0,
                                          "note": "no label has more than half"}) \
        == "→ quality decided no decision (abstained) · agreement 0.50 · no label has more " \
           "than half"
    assert jury_decision_line("quality", None) == "→ quality has not decided yet"
    assert top_line(panel, {"consensus": "no", "agreement": 0.5, "note": None}) \
        == "⇒ Panel decision (all-of yes over 2 juries): no · 1 of 2 juries back it"
    assert top_line(panel, {"consensus": None, "agreement": 0.5, "note": "x"}) \
        == "⇒ Panel decision (all-of yes over 2 juries): no decision (abstained) · x"
