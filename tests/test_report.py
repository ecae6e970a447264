"""The agreement report: one call over a run's ratings, overrides and gold labels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from judging.agreement import krippendorff_alpha, per_item_alpha
from judging.analysis.agreement_report import (
    FAILED_COLUMN,
    agreement_report,
    as_numbers,
    ratings_table,
    with_humans,
)
from judging.scales import Scale


def _long(panel, n_items: int = 400) -> pd.DataFrame:
    ratings = panel.ratings()[:n_items]
    rows = [
        (f"item-{i}", critic, value)
        for i, row in enumerate(ratings)
        for critic, value in zip(panel.critics, row, strict=True)
    ]
    return pd.DataFrame(rows, columns=["item_id", "critic", "value"])


@pytest.fixture
def panel_report(synthetic_panel):
    table = _long(synthetic_panel)
    truth = {f"item-{i}": synthetic_panel.labels[t]
             for i, t in enumerate(synthetic_panel.truth[:400])}
    consensus = {f"item-{i}": synthetic_panel.labels[p]
                 for i, p in enumerate(synthetic_panel.plurality()[:400])}
    humans = {item: label for n, (item, label) in enumerate(truth.items()) if n % 4 == 0}
    report = agreement_report(
        table, order=synthetic_panel.labels, consensus=consensus, overrides=humans, gold=truth,
        resamples=200, seed=3,
    )
    return report, table, consensus, humans, truth


def test_alpha_and_per_item_alpha_match_the_functions(panel_report, synthetic_panel):
    report, *_ = panel_report
    units = synthetic_panel.ratings()[:400]
    assert report.alpha.value == pytest.approx(krippendorff_alpha(units))
    assert report.per_item_alpha.index[0] == "item-0"
    assert np.allclose(report.per_item_alpha.to_numpy(), per_item_alpha(units), equal_nan=True)
    assert report.bootstrap.low < report.alpha.value < report.bootstrap.high
    assert len(report.bootstrap.distribution) == 200 - report.bootstrap.n_undefined


def test_per_critic_agreement_rests_on_the_right_items(panel_report, synthetic_panel):
    report, _, consensus, humans, truth = panel_report
    codes = synthetic_panel.codes[:400]
    for col, critic in enumerate(synthetic_panel.critics):
        rated = codes[:, col] >= 0
        gold = report.vs_gold[critic]
        assert gold.n == int(rated.sum())
        hits = (codes[:, col] == synthetic_panel.truth[:400]) & rated
        assert gold.agree == int(hits.sum())
        assert gold.low < gold.value < gold.high
        assert report.vs_humans[critic].n + report.vs_humans[critic].missing == len(humans)
        assert report.failed[critic] == int((~rated).sum())
    assert set(report.vs_consensus) == set(synthetic_panel.critics)


def test_confusion_against_humans_counts_failures_separately(panel_report, synthetic_panel):
    report, _, _, humans, _ = panel_report
    frame = report.confusion_vs_humans["lenient-a"]
    assert int(frame.to_numpy().sum()) == len(humans)
    assert list(frame.columns) == synthetic_panel.labels + [FAILED_COLUMN]
    # The lenient critic's errors pile up in the KEEP column.
    off_diagonal_keep = frame["KEEP"].sum() - frame.loc["KEEP", "KEEP"]
    off_diagonal_other = frame[["REJECT", "SPLIT", "MERGE"]].to_numpy().sum() - sum(
        frame.loc[label, label] for label in ["REJECT", "SPLIT", "MERGE"]
    )
    assert off_diagonal_keep > off_diagonal_other


def test_kappa_family_leave_one_out_and_dawid_skene(panel_report, synthetic_panel):
    report, *_ = panel_report
    assert report.kappa is not None and report.kappa.values.shape == (5, 5)
    assert report.fleiss.value is not None and report.ac1.value is not None
    assert 0 < report.percent.value < 1
    assert set(report.leave_one_out) == set(synthetic_panel.critics)
    acc = report.dawid_skene_accuracies
    assert acc["sharp"] > acc["lenient-a"]
    table = report.critic_table()
    assert list(table.index) == synthetic_panel.critics
    assert table.loc["sharp", "vs_gold_n"] == report.vs_gold["sharp"].n


def test_to_text_names_every_figure(panel_report):
    report, *_ = panel_report
    text = report.to_text()
    for needle in ("Krippendorff's alpha", "bootstrap CI", "Per-item alpha", "Fleiss' kappa",
                   "Gwet's AC1", "Percent agreement", "lenient-b", "Pairwise Cohen's kappa"):
        assert needle in text


def test_tuples_and_dataframe_give_the_same_report(synthetic_panel):
    table = _long(synthetic_panel, 60)
    from_frame = agreement_report(table, resamples=50)
    from_tuples = agreement_report(list(table.itertuples(index=False, name=None)), resamples=50)
    assert from_frame.alpha == from_tuples.alpha


def test_ratings_table_keeps_order_and_last_duplicate():
    table = ratings_table([("b", "x", "KEEP"), ("a", "x", "REJECT"), ("b", "y", None),
                           ("b", "x", "SPLIT")])
    assert list(table.index) == ["b", "a"] and list(table.columns) == ["x", "y"]
    assert table.loc["b", "x"] == "SPLIT"
    assert table.loc["a", "y"] is None


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="missing: critic"):
        agreement_report(pd.DataFrame({"item_id": [1], "value": ["a"]}))


def test_undefined_alpha_is_reported_as_undefined():
    report = agreement_report([("1", "a", "KEEP"), ("1", "b", "KEEP"), ("2", "a", "KEEP"),
                               ("2", "b", None)], resamples=20)
    assert report.alpha.value is None
    text = report.to_text()
    assert "undefined (no variation" in text
    assert report.bootstrap.low is None
    assert math.isnan(report.per_item_alpha["1"])


def test_score_scale_uses_interval_level_and_skips_label_statistics():
    rows = [(str(i), critic, score)
            for i in range(30)
            for critic, score in (("a", i / 30), ("b", i / 30 + 0.01), ("c", None if i % 5
                                                                         else 0.5))]
    consensus = {str(i): i / 30 for i in range(30)}
    report = agreement_report(rows, scale=Scale(kind="score", min=0, max=1),
                              consensus=consensus, tolerance=0.02, resamples=50)
    assert report.level == "interval"
    assert report.alpha.value > 0.8
    assert report.kappa is None and "labels" in report.kappa_reason
    assert report.fleiss.value is None and report.dawid_skene is None
    assert report.vs_consensus["b"].value == 1.0  # within the tolerance
    assert report.vs_consensus["c"].n == 6


def test_likert_scale_gives_ordinal_level_with_declared_order():
    scale = Scale(kind="likert", min=1, max=5)
    rows = [(str(i), c, str(v)) for i, vals in enumerate([(1, 2), (5, 4), (3, 3), (2, 1)])
            for c, v in zip("ab", vals, strict=True)]
    report = agreement_report(rows, scale=scale, resamples=20)
    assert report.level == "ordinal"
    assert report.labels == ["1", "2", "3", "4", "5"]
    expected = krippendorff_alpha([[1, 2], [5, 4], [3, 3], [2, 1]], "ordinal",
                                  order=[1, 2, 3, 4, 5])
    assert report.alpha.value == pytest.approx(expected)


@pytest.mark.parametrize("kind", ["nominal", "score"])
def test_with_humans_gives_the_figures_of_a_report_made_with_them(kind):
    # The Agreement page keeps a run's critics' figures and redoes only those against the
    # humans after an override: they must be the figures a full report gives.
    rng = np.random.default_rng(3)
    scale = (Scale(kind="nominal", labels=["a", "b", "c"]) if kind == "nominal"
             else Scale(kind="score", min=1, max=5))
    values = ["a", "b", "c", None] if kind == "nominal" else [1.0, 2.0, 4.0, 5.0, None]
    rows = [(f"i{i}", critic, values[int(rng.integers(len(values)))])
            for i in range(40) for critic in ("x", "y", "z")]
    humans = {f"i{i}": values[i % (len(values) - 1)] for i in range(0, 40, 3)}
    if kind == "score":
        humans = as_numbers({item: str(v) for item, v in humans.items()})
    full = agreement_report(rows, scale=scale, overrides=humans, resamples=50)
    kept = agreement_report(rows, scale=scale, resamples=50)
    assert kept.vs_humans == {} and kept.confusion_vs_humans == {}
    redone = with_humans(kept, humans)
    assert redone.vs_humans == full.vs_humans and redone.vs_humans
    assert redone.confusion_vs_humans.keys() == full.confusion_vs_humans.keys()
    for critic, table in full.confusion_vs_humans.items():
        assert redone.confusion_vs_humans[critic].equals(table)
    assert redone.alpha == full.alpha and redone.bootstrap is kept.bootstrap
    assert np.array_equal(redone.bootstrap.distribution, full.bootstrap.distribution)
    assert with_humans(redone, {}).vs_humans == {}
    assert kept.vs_humans == {}  # the kept report is not changed
