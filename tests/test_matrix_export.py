"""The composition matrix, exports (issue 23 part 3): for every panel kind and every export
format (CSV read with pandas, JSONL line by line, Parquet with pyarrow), the decided item says
what was decided, an undecided item says what the panel decided, each critic has its columns;
the override history (JSONL) says who decided what, in blind mode or not; the curated taxonomy
of a curation run puts each class where its final decision says."""

from __future__ import annotations

import json

import pytest

from judging.runs.stored.taxonomy import curated_taxonomy, taxonomy_bytes
from storage.reviewing.decisions import NEEDS_DECISION
from tests.fixtures_matrix import (
    FORMATS,
    KIND_NAMES,
    Decision,
    MatrixRun,
    a_different_decision,
    a_sibling,
    another_decision,
    as_list,
    as_number,
    decisions_by_item,
    export_shows,
    exported_rows,
    history_lines,
    no_exception,
    open_app_page,
    parse_export,
    record,
)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_the_export_holds_each_item_s_final_decision(kind: str, fmt: str,
                                                     matrix_db: MatrixRun) -> None:
    run = matrix_db
    items = list(decisions_by_item(run))
    decision = a_different_decision(run, items[0])
    record(run, decision)
    panel_row = decisions_by_item(run)[items[1]]
    rows = exported_rows(run, fmt)
    assert list(rows) == items  # every item once, in item order
    export_shows(run, decision, fmt)
    # An item no human decided: the panel's decision, and no override.
    undecided = rows[items[1]]
    assert undecided["final_label"] == panel_row["final_label"]
    assert undecided["consensus"] == panel_row["consensus"]
    assert str(undecided["overridden"]).lower() == "false"
    assert undecided["override_label"] is None and as_list(undecided["override_history"]) == []
    # Each critic: its label (or score), confidence and failure kind.
    for critic in run.kind.panel_critics():
        assert {f"{critic}: label", f"{critic}: confidence", f"{critic}: failure"} <= set(
            undecided)
    if run.kind.rubric:  # the score of the final marks, the reviewer's where given
        assert as_number(rows[items[0]]["final_score"]) == pytest.approx(decision.score)
        assert as_number(undecided["final_score"]) == pytest.approx(panel_row["final_score"])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["score"])
def test_a_score_panel_s_export_holds_the_final_score(kind: str, fmt: str,
                                                      matrix_db: MatrixRun) -> None:
    run = matrix_db
    items = list(decisions_by_item(run))
    decision = a_different_decision(run, items[0])
    record(run, decision)
    panel_score = decisions_by_item(run)[items[1]]["final_score"]
    rows = exported_rows(run, fmt)
    assert as_number(rows[items[0]].get("final_score")) == pytest.approx(decision.score)
    assert as_number(rows[items[1]].get("final_score")) == pytest.approx(panel_score)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["curation"])
def test_the_export_says_which_items_need_a_decision(kind: str, fmt: str,
                                                    matrix_db: MatrixRun) -> None:
    run = matrix_db
    decided = decisions_by_item(run)
    needs = [i for i, row in decided.items() if row["status"] == NEEDS_DECISION]
    assert needs
    rows = exported_rows(run, fmt)
    # The reason, as the rule gives it; empty for a decided item.
    assert {i: row.get("needs_decision") for i, row in rows.items()} == {
        i: row["why"] for i, row in decided.items()}
    assert [i for i, row in rows.items() if row["needs_decision"]] == needs
    # Decided by a reviewer (the split's children given): no longer needs a decision.
    item = needs[0]
    record(run, a_different_decision(run, item) if decided[item]["consensus"] != "SPLIT"
           else Decision(item, "SPLIT", "SPLIT", children=("Part one", "Part two")))
    assert exported_rows(run, fmt)[item]["needs_decision"] is None


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_the_override_history_says_who_decided_what_and_whether_blind(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    item = list(decisions_by_item(run))[3]
    blind = a_different_decision(run, item, reviewer="ana", blind=True)
    record(run, blind)
    seen = another_decision(run, blind, "ana")
    record(run, seen, note="after the reveal")
    lines = history_lines(run)
    assert [(h["item_id"], h["label"], h["reviewer"], h["blind"]) for h in lines] == [
        (item, blind.label, "ana", True), (item, seen.label, "ana", False)]
    assert [h["note"] for h in lines] == ["matrix", "after the reveal"]
    if run.kind.curation:
        assert [(h["children"], h["merge_into"]) for h in lines] == [
            (list(blind.children), blind.merge_into), (list(seen.children), seen.merge_into)]
    # The export's own history column says the same, in every format.
    for fmt in FORMATS:
        history = as_list(exported_rows(run, fmt)[item]["override_history"])
        assert [(h["label"], bool(h["blind"])) for h in history] == [
            (blind.label, True), (seen.label, False)], fmt


@pytest.mark.parametrize("kind", ["curation"])
def test_the_curated_taxonomy_puts_each_class_where_its_decision_says(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    before = decisions_by_item(run)
    needs = [i for i, row in before.items() if row["status"] == NEEDS_DECISION]
    assert len(needs) >= 2, "the curation run has too few SPLIT or MERGE consensus to decide"
    split, merge = needs[:2]
    decided = {split: Decision(split, "SPLIT", "SPLIT", children=("Part one", "Part two")),
               merge: Decision(merge, "MERGE", "MERGE", merge_into=a_sibling(run, merge))}
    for decision in decided.values():
        record(run, decision)
    taxonomy = curated_taxonomy(run.db, run.run_id)
    assert sorted(d.item_id for d in taxonomy.needs_decision) == sorted(
        set(needs) - {split, merge})
    as_json = json.loads(taxonomy_bytes(taxonomy, "json"))
    csv_rows = {row["item_id"]: row for row in parse_export(taxonomy_bytes(taxonomy, "csv"),
                                                            "csv")}
    assert len(csv_rows) == 16
    by_group = {group: {row["item_id"]: row for row in rows} for group, rows in as_json.items()}
    # The split, with its children; the merge, with its target; in JSON and CSV alike.
    assert by_group["split"][split]["children"] == list(decided[split].children)
    assert as_list(csv_rows[split]["children"]) == list(decided[split].children)
    assert csv_rows[split]["decision"] == "split"
    assert by_group["merged"][merge]["merge_into"] == decided[merge].merge_into
    assert csv_rows[merge]["merge_into"] == decided[merge].merge_into
    assert csv_rows[merge]["decision"] == "merge"
    # The rest as the rule says: the panel's consensus where it can be acted on, else listed
    # as needing a decision (with the reason), never as decided.
    for item in set(needs) - {split, merge}:
        assert item in by_group["needs_decision"] and csv_rows[item]["needs_a_decision"]
    kept = sorted(i for i, row in before.items() if row["final_label"] == "KEEP")
    assert sorted(by_group["kept"]) == kept
    assert all(csv_rows[i]["decided_by"] == "panel consensus" for i in kept)
    # The Export page counts the same groups.
    at = open_app_page("export", {"run": str(run.run_id)})
    no_exception(at)
    counts = {str(m.label): int(str(m.value).replace(",", "")) for m in at.metric}
    assert counts == {"kept": len(kept), "removed": len(by_group["removed"]), "split": 1,
                      "merged": 1, "needs a decision": len(needs) - 2}
