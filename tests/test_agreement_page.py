"""AppTest: the Agreement page keeps a run's critics' figures once computed, and shows a new
review or a changed verdict at its next rerun (issue 13 part 2: no stale cached aggregate).

The critics' figures are the expensive part (every rating read into pandas, a bootstrap,
Dawid-Skene); the figures against the humans are redone from them after an override. Each
test compares what the page shows with the report computed afresh from the database.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

import pages.ui.agreement.agreement_data as agreement_data
from judging.runs.stored.run_report import run_agreement_report
from pages.ui.agreement import charts
from storage.db import open_db
from storage.results.calls import write_verdicts
from storage.results.runs import add_to_ledger
from storage.reviewing.overrides import add_override, human_labels
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table
from tests.test_app_smoke import all_text, no_exception, open_page


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The runs whose critics' figures were computed (a cache hit, or a report kept in the
    database by the worker when the run finished, adds nothing)."""
    from judging.runs.stored import kept_figures as figures

    runs: list[int] = []
    real: Callable[..., Any] = figures.run_agreement_report

    def counting(db: Any, run_id: int, **kwargs: Any) -> Any:
        runs.append(run_id)
        return real(db, run_id, **kwargs)

    monkeypatch.setattr(figures, "run_agreement_report", counting)
    return runs


def _shown_table(at: AppTest) -> Any:
    return next(d.value for d in at.dataframe if "Dawid-Skene accuracy" in d.value.columns)


def _fresh_table(path: pathlib.Path, run_id: int) -> Any:
    db = open_db(path)
    report = run_agreement_report(db, run_id, resamples=agreement_data.RESAMPLES, seed=0,
                                  humans=human_labels(db, run_id))
    return charts.critic_summary_frame(report), report


def _caption(at: AppTest, words: str) -> str:
    return next(c.value for c in at.caption if words in c.value)


def test_an_override_shows_at_the_next_rerun_without_reading_the_ratings_again(
    demo_db: tuple[pathlib.Path, int], computed: list[int],
) -> None:
    path, run_id = demo_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert "0 items reviewed by humans" in _caption(at, "reviewed by humans")
    assert "agreement with the humans" not in _shown_table(at).columns
    assert computed == []  # kept by the worker when the run finished: read, not computed

    # A reviewer's decision, recorded as the Review page records it, in another session.
    db = open_db(path)
    item = str(review_table(db, run_id, ReviewFilter(disagreements_only=True), limit=1)[0]["item_id"].iloc[0])
    add_override(db, run_id, item, "MERGE", "belongs with its sibling", "ana")
    at.run()
    no_exception(at)
    assert "1 item reviewed by humans" in _caption(at, "reviewed by humans")
    table, _ = _fresh_table(path, run_id)
    assert _shown_table(at).equals(table)  # every figure, humans' column included
    assert any(s.value == "Each critic against the humans" for s in at.subheader)
    assert computed == []  # the critics' figures were kept, not computed again

    # A second decision on the same item: the humans' figures follow the latest one.
    add_override(db, run_id, item, "KEEP", "on second thoughts", "ana")
    at.run()
    assert _shown_table(at).equals(_fresh_table(path, run_id)[0])
    assert computed == []


def test_a_re_judged_item_gives_fresh_critics_figures(
    demo_db: tuple[pathlib.Path, int], computed: list[int],
) -> None:
    path, run_id = demo_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    before = next(m.value for m in at.metric if m.label.startswith("Krippendorff"))

    # What a re-judge writes: the item's verdicts replaced (the counts of stored successes
    # and failures unchanged), and its calls added to the run's ledger by the writer.
    db = open_db(path)
    from pages.ui.review.review_evidence import verdict_from_row

    # Ten items, so the change shows in the three decimals the page prints (one item moved
    # alpha by 0.0005 on some demo runs).
    flipped = []
    for item in review_table(db, run_id, sort="item", limit=10)[0]["item_id"]:
        detail = item_detail(db, run_id, str(item))
        flipped += [dataclasses.replace(verdict_from_row({**v, "item_id": str(item)}),
                                        label="SPLIT" if v["label"] != "SPLIT" else "KEEP")
                    for v in detail["verdicts"] if v["failure"] is None]
    write_verdicts(db, run_id, flipped, replace_success=True)
    add_to_ledger(db, run_id, {"calls": len(flipped)})
    at.run()
    no_exception(at)
    _, fresh = _fresh_table(path, run_id)
    shown = next(m.value for m in at.metric if m.label.startswith("Krippendorff"))
    assert shown == f"{fresh.alpha.value:.3f}" != before
    assert computed == [run_id]  # the kept figures are stale: computed once, and kept


def test_calibration_shows_without_a_switch(demo_db: tuple[pathlib.Path, int]) -> None:
    """Calibration no longer waits for a click on a large run (it reads code matrices): once
    humans have labelled items, the section shows its table at the first load."""
    path, run_id = demo_db
    db = open_db(path)
    for n, item in enumerate(review_table(db, run_id, limit=5)[0]["item_id"]):
        add_override(db, run_id, str(item), "REJECT", f"why {n}", "ana")
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert not any(t.label == "Compute calibration" for t in at.toggle)
    assert any("suggested weight" in d.value.columns for d in at.dataframe)


def test_alpha_is_explained_and_stability_says_how_to_get_it(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Alpha in plain words: 1 means") and "below 0" in c
               for c in captions)
    # The demo's critics answer once per item: the page says how to get stability figures.
    assert any("set **samples** above 1" in c for c in captions)
    assert "D_o" not in all_text(at)
    # The charts' axes too (they are no text element): the per-item alpha's axis in words,
    # not "1 - D_o(item) / D_e(dataset)".
    specs = [str(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    assert specs and not [s for s in specs if "D_o" in s or "D_e" in s]
    assert any("alpha of the item (1: the critics agree" in s for s in specs)


def test_an_undefined_figure_shows_its_reason_not_a_big_undefined(
    demo_db: tuple[pathlib.Path, int], monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = agreement_data.run_report

    def no_alpha(run: dict[str, Any]) -> Any:
        report = real(run)
        reason = "every valid verdict in the run is the same label"
        return dataclasses.replace(
            report,
            alpha=dataclasses.replace(report.alpha, value=None, reason=reason),
            bootstrap=dataclasses.replace(report.bootstrap, low=None, high=None,
                                          distribution=[], reason="alpha is undefined"),
        )

    monkeypatch.setattr(agreement_data, "run_report", no_alpha)
    path, run_id = demo_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert "undefined" not in [m.value for m in at.metric]
    assert not any(m.label.startswith("Krippendorff") for m in at.metric)
    captions = [c.value for c in at.caption]
    assert "Undefined: every valid verdict in the run is the same label." in captions
    assert "Undefined: alpha is undefined." in captions


def test_a_saved_calibration_links_to_running_that_version(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from storage.panels import list_panels

    path, run_id = demo_db
    db = open_db(path)
    for n, item in enumerate(review_table(db, run_id, limit=12)[0]["item_id"]):
        add_override(db, run_id, str(item), "REJECT", f"why {n}", "ana")
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    # The projected agreement is text that wraps, never a metric cut short.
    assert not any("n=" in str(m.value) for m in at.metric)
    assert any("Consensus vs humans now" in m.value and "n=12" in m.value for m in at.markdown)
    at.button(key=f"cal{run_id}.save").click().run()
    no_exception(at)
    saved = next(p for p in list_panels(db) if p["name"].endswith("(calibrated)"))
    at.run()  # another rerun (any click elsewhere) keeps the confirmation and its link
    assert any(f"version {saved['hash']}" in s.value for s in at.success)
    link = next(p for p in at.get("page_link") if p.proto.label.startswith("Run "))
    assert "run" in link.proto.page
    assert f"panel={saved['hash']}" in link.proto.query_string


def test_the_run_page_opens_with_the_panel_a_link_names(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from judging.demo import demo_panel_path
    from judging.panel.panel_files import dump_panel, load_panel, panel_hash
    from pages.ui.panel.panel_draft import RUN_PANEL_PARAM
    from storage.panels import save_panel

    path, _ = demo_db
    db = open_db(path)
    older, newer = (load_panel(demo_panel_path()).model_copy(update={"name": name})
                    for name in ("an older version", "a newer version"))
    for panel in (older, newer):  # listed newest first: the linked one is not the default
        save_panel(db, panel_hash=panel_hash(panel), name=panel.name, yaml_text=dump_panel(panel))
    at = open_page("run", query={RUN_PANEL_PARAM: panel_hash(older)})
    no_exception(at)
    assert at.selectbox(key="new_run_panel").value == panel_hash(older)


def test_a_swap_run_shows_each_percentage_in_one_format_and_both_gold_figures(
    app_db: pathlib.Path,
) -> None:
    """The pairwise demo (three critics, both orders, gold labels): the position-bias table and
    the against-gold table give every percentage as one format, and the two gold figures are
    the report's."""
    import json

    from judging.demo import pairwise_dataset_path, pairwise_panel_path
    from judging.panel.panel_files import load_panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from judging.runs.stored.run_report import run_pairwise
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset

    db = open_db(app_db)
    dataset = save_dataset(db, read_dataset(pairwise_dataset_path(), id_column="id",
                                            gold_column="gold"), name="pairwise demo")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(pairwise_panel_path()))
    assert JobRegistry().start_run(str(app_db), run_id).wait(120)
    report = run_pairwise(db, run_id)
    assert report is not None and report.vs_gold

    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    bias = next(d for d in at.dataframe if "to the first shown both times" in d.value.columns)
    gold = next(d for d in at.dataframe if "right in both orders" in d.value.columns)
    for table, columns in ((bias, ["changed"]), (gold, [
            "right in both orders", "mean of the two orders' accuracies", "right with A first",
            "right when swapped"])):
        config = json.loads(table.proto.columns)
        assert {c: config[c]["type_config"]["format"] for c in columns} == {
            c: "%.1f%%" for c in columns}
    shown = gold.value.set_index("critic")
    for row in report.vs_gold:
        assert shown.loc[row.critic, "right in both orders"] == pytest.approx(100 * row.both_rate)
        assert shown.loc[row.critic, "mean of the two orders' accuracies"] == pytest.approx(
            100 * row.mean_rate)
    rates = bias.value.set_index("critic")["changed"]
    assert {c: rates[c] for c in rates.index} == pytest.approx(
        {b.critic: 100 * b.rate for b in report.bias})
    assert any("its two answers combined" in str(c.value) for c in at.caption)
