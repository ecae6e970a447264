"""A real run of the demo panel of juries (`judging/demo/juries_panel.yaml`) over the demo
dataset: every call over HTTP to the built-in simulator on 127.0.0.1, one real SQLite file.
Each jury's stored decision is computed again by hand from the stored verdicts; the export's
jury columns, the per-jury agreement figures (against `krippendorff` and our own functions)
and the run's verifiable record are checked on the same run."""

from __future__ import annotations

import pathlib
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator
from typing import Any

import krippendorff
import numpy as np
import pytest

from judging.agreement import cohen_kappa, fleiss_kappa
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import prepare_run
from judging.runs.stored.jury_report import run_jury_report
from storage.db import open_db
from storage.results.consensus import load_panel_verdicts
from storage.results.export_files import export_frame, jury_column
from storage.results.jury_decisions import item_jury_decisions
from storage.results.runs import get_run
from storage.reviewing.record_chain import verify_run

PANEL = pathlib.Path(__file__).resolve().parent.parent / "judging" / "demo" / "juries_panel.yaml"
PRIORITY = ["REJECT", "SPLIT", "MERGE", "KEEP"]  # the demo's tie priority, most cautious first


@pytest.fixture
def juries_run(juries_run_template: tuple[pathlib.Path, int],
               tmp_path: pathlib.Path) -> Iterator[tuple[Any, int, pathlib.Path]]:
    template, run_id = juries_run_template
    path = tmp_path / "juries.db"
    shutil.copyfile(template, path)
    db = open_db(path)
    try:
        yield db, run_id, path
    finally:
        db.close()


def _pick(tally: dict[str, float]) -> str | None:
    """The label with the largest tally; a tie to the most cautious by the demo's priority."""
    if not tally:
        return None
    best = max(tally.values())
    return min((label for label, n in tally.items() if n == best), key=PRIORITY.index)


def _by_hand(labels: dict[str, str | None], panel: Panel) -> dict[str, str | None]:
    """The demo's juries decided by hand: quality by weighted vote (careful weighs 1.5),
    safety REJECT if either critic says it, else its plurality; then all-of KEEP."""
    weight = {c.name: c.weight for c in panel.critics}
    quality: dict[str, float] = Counter()
    for critic in ("careful", "lenient"):
        if labels.get(critic) is not None:
            quality[str(labels[critic])] += weight[critic]
    safety_said = [labels[c] for c in ("strict", "flaky") if labels.get(c) is not None]
    safety = "REJECT" if "REJECT" in safety_said else _pick(dict(Counter(safety_said)))
    decided = {"quality": _pick(dict(quality)), "safety": safety}
    objections = [d for d in decided.values() if d is not None and d != "KEEP"]
    if objections:
        top = objections[0]  # the first jury (panel order) that objects decides
    elif None in decided.values():
        top = None  # an abstaining jury never accepts
    else:
        top = "KEEP"
    return {**decided, "top": top}


def test_each_jury_and_the_panel_decide_as_computed_by_hand(juries_run: Any) -> None:
    db, run_id, _ = juries_run
    panel = load_panel(get_run(db, run_id)["panel_yaml"])
    decided = load_panel_verdicts(db, run_id)
    assert len(decided) == 300
    seen: Counter[str] = Counter()
    for pv in decided:
        labels = {v.critic: (v.label if v.ok else None) for v in pv.verdicts}
        assert set(labels) == {"careful", "lenient", "strict", "flaky"}
        expected = _by_hand(labels, panel)
        rows = item_jury_decisions(db, run_id, pv.item_id)
        assert [row["jury"] for row in rows] == ["quality", "safety"]
        for row in rows:
            jury = row["jury"]
            assert row["consensus"] == expected[jury], (pv.item_id, jury, labels)
            critics = next(j.critics for j in panel.juries if j.name == jury)
            backing = sum(1 for c in critics if labels[c] is not None
                          and labels[c] == expected[jury])
            assert row["agreement"] == pytest.approx(backing / len(critics))
            assert row["failed"] == sum(1 for c in critics if labels[c] is None)
            # The decision read back through the PanelVerdict is the same row.
            assert pv.outcome.juries[jury].consensus == row["consensus"]
        assert pv.consensus == expected["top"], (pv.item_id, labels)
        assert pv.outcome.failed == sum(1 for value in labels.values() if value is None)
        seen[str(pv.consensus)] += 1
        seen[f"objected:{expected['quality'] != 'KEEP'}/{expected['safety'] != 'KEEP'}"] += 1
    # The run exercises the combination: items kept by both, and objections by each jury.
    assert seen["KEEP"] and seen["objected:True/False"] and seen["objected:False/True"]


def test_the_export_has_a_column_per_jury(juries_run: Any) -> None:
    db, run_id, _ = juries_run
    frame = export_frame(db, run_id)
    columns = list(frame.columns)
    for jury in ("quality", "safety"):
        assert jury_column(jury) in columns and jury_column(jury, "agreement") in columns
    # Juries before critics, in panel order.
    assert columns.index(jury_column("quality")) < columns.index(jury_column("safety")) \
        < columns.index("careful: label")
    for _, row in frame.sample(40, random_state=1).iterrows():
        stored = {r["jury"]: r for r in item_jury_decisions(db, run_id, row["item_id"])}
        for jury, r in stored.items():
            assert row[jury_column(jury)] == r["consensus"]
            assert row[jury_column(jury, "agreement")] == pytest.approx(r["agreement"])


def _nominal(matrix: list[list[Any]]) -> np.ndarray:
    """raters x units for `krippendorff.alpha`: labels as codes, missing as NaN."""
    codes = {label: n for n, label in enumerate(PRIORITY)}
    return np.array([[np.nan if v is None else codes[v] for v in row] for row in matrix],
                    dtype=float)


def test_agreement_per_jury_and_between_juries(juries_run: Any) -> None:
    db, run_id, _ = juries_run
    report = run_jury_report(db, run_id, resamples=50)
    assert report is not None
    decided = load_panel_verdicts(db, run_id)
    labels = [{v.critic: (v.label if v.ok else None) for v in pv.verdicts} for pv in decided]
    for figures in report.juries:
        ratings = [[item[c] for item in labels] for c in figures.critics]
        assert figures.report.alpha.value == pytest.approx(krippendorff.alpha(
            reliability_data=_nominal(ratings), level_of_measurement="nominal"))
        pair = figures.report.kappa
        assert pair is not None
        assert pair.values[0, 1] == pytest.approx(cohen_kappa(*ratings))
        assert figures.report.fleiss is not None
        assert figures.report.fleiss.value == pytest.approx(
            fleiss_kappa([list(row) for row in zip(*ratings, strict=True)]))
        jury_decided = [pv.outcome.juries[figures.jury] for pv in decided]
        assert figures.split == sum(1 for o in jury_decided
                                    if o.disagreement and o.consensus is not None)
        same = sum(1 for o, pv in zip(jury_decided, decided, strict=True)
                   if o.consensus is not None and pv.consensus is not None
                   and o.consensus == pv.consensus)
        assert figures.with_panel == (same, sum(1 for o, pv in zip(jury_decided, decided,
                                                                     strict=True)
                                                if o.consensus is not None
                                                and pv.consensus is not None))
        # Each critic against its own jury's decision.
        for critic in figures.critics:
            agree = sum(1 for item, o in zip(labels, jury_decided, strict=True)
                        if item[critic] is not None and o.consensus is not None
                        and item[critic] == o.consensus)
            assert figures.report.vs_consensus[critic].agree == agree
    between = [[pv.outcome.juries[j].consensus for pv in decided] for j in ("quality", "safety")]
    assert report.between.critics == ["quality", "safety"]
    assert report.between.alpha.value == pytest.approx(krippendorff.alpha(
        reliability_data=_nominal(between), level_of_measurement="nominal"))
    assert report.between.kappa is not None
    assert report.between.kappa.values[0, 1] == pytest.approx(cohen_kappa(*between))


def test_a_flat_run_has_no_jury_report(juries_run: Any) -> None:
    db, run_id, path = juries_run
    flat = load_panel(pathlib.Path(PANEL).parent / "demo_panel.yaml")
    dataset_id = int(get_run(db, run_id)["dataset_id"])
    other = prepare_run(db, dataset_id=dataset_id, panel=flat)
    assert run_jury_report(db, other) is None
    assert not [c for c in export_frame(db, other).columns if c.startswith("jury ")]


def test_jury_decisions_are_in_the_verifiable_record(juries_run: Any) -> None:
    db, run_id, path = juries_run
    found = verify_run(db, run_id)
    assert found.intact, found.first
    assert found.by_kind["jury_decision"] == 600  # two juries x 300 items
    item = load_panel_verdicts(db, run_id)[7].item_id
    conn = sqlite3.connect(path)  # behind the app's back
    with conn:
        conn.execute("UPDATE jury_decisions SET consensus = 'MERGE', agreement = 0.01"
                     " WHERE run_id = ? AND item_id = ? AND jury = 'safety'", [run_id, item])
    conn.close()
    first = verify_run(db, run_id).first
    assert first is not None and first.table == "jury_decisions"
    assert item in first.key and "safety" in first.key
    assert "changed since it was recorded" in first.what


def test_the_cli_jsonl_carries_each_jury(juries_run: Any, tmp_path: pathlib.Path) -> None:
    import json

    from judging.runs.commands.summary import write_jsonl

    db, run_id, _ = juries_run
    decided = load_panel_verdicts(db, run_id)[:20]
    out = tmp_path / "out.jsonl"
    assert write_jsonl(out, decided) == 20
    for pv, line in zip(decided, out.read_text(encoding="utf-8").splitlines(), strict=True):
        row = json.loads(line)
        assert list(row["juries"]) == ["quality", "safety"]
        for name, jury in row["juries"].items():
            assert jury["consensus"] == pv.outcome.juries[name].consensus
