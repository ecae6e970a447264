"""The composition matrix, Review's features (issue 23 part 3): for every panel kind, an
override, a blind first pass, the filters, the search and (rubric) a criterion's mark, each
walked through Review's form in AppTest, then checked where the analyst reads it: the final
decision in storage, on Review, in Agreement's count of human-reviewed items, in every export
format and the override history."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from judging.panel.panel_files import load_panel
from judging.panel.rubric import rubric_score
from storage.results.runs import get_run
from storage.reviewing.decisions import NEEDS_DECISION
from storage.reviewing.review_queue import item_detail
from tests.fixtures_matrix import (
    FORMATS,
    KIND_NAMES,
    UI,
    MatrixRun,
    a_different_decision,
    agreement_reviewed,
    all_text,
    band_of,
    button,
    check_everywhere,
    decisions_by_item,
    exported_rows,
    maybe_widget,
    no_exception,
    open_app_page,
    open_item,
    open_review,
    replace,
    review_count,
    review_decide,
    review_frame,
    review_open,
    widget,
)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_an_override_saved_on_review_is_the_final_decision_everywhere(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    item = list(decisions_by_item(run))[2]
    decision = a_different_decision(run, item)
    at = open_review(run, item=item)
    review_decide(at, run, decision)
    assert open_item(at) not in (None, item)  # saved, and the next item opened
    check_everywhere(run, decision, reviewed=1, review_at=at)


# -- blind first pass -----------------------------------------------------------------------

def _blind_item(run: MatrixRun) -> tuple[Any, str, dict[str, Any]]:
    """Review in a blind first pass, the reviewer named; its open item and that item's detail."""
    at = open_review(run, blind=True)
    item = open_item(at)
    assert item is not None
    assert widget(at, "toggle", UI.BLIND).value
    return at, item, item_detail(run.db, run.run_id, item)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_a_blind_pass_shows_neither_the_consensus_nor_the_gold(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    at, item, detail = _blind_item(run)
    consensus = (detail["consensus"] or {}).get("consensus")
    texts = [str(t.value) for t in at.text]
    # Nothing of what the critics said: no consensus line, no reasons, no label column.
    assert not [t for t in texts if t.startswith("consensus ")], texts
    reasons = [v["reasoning"] for v in detail["verdicts"] if v["reasoning"]]
    page = all_text(at)
    assert reasons and not [r for r in reasons if r in page]
    table = review_frame(at)
    assert not {"consensus", "final_label", *run.kind.panel_critics()} & set(table.columns)
    assert consensus is not None and consensus not in set(table.astype(str).stack())
    # Nor the gold label: the reviewer's label is compared with it later.
    assert detail["gold"] is not None
    # (The page's blind-pass notice may say the gold label appears later: the field's
    # caption must not be there.)
    assert "gold label" not in [str(c.value) for c in at.caption]
    assert str(detail["gold"]) not in texts, texts


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_a_blind_pass_offers_no_filter_that_reveals_the_consensus(
        kind: str, matrix_db: MatrixRun) -> None:
    at, _, _ = _blind_item(matrix_db)
    for label in (UI.CONSENSUS, UI.CRITIC, UI.CRITIC_SAID):
        found = maybe_widget(at, "selectbox", label)
        assert found is None or found.disabled, f"{label} is offered in a blind pass"
    for label in (UI.DISAGREEMENTS, UI.NEEDS, UI.UNSTABLE):
        assert maybe_widget(at, "toggle", label) is None, f"{label} is offered in a blind pass"
    assert maybe_widget(at, "text_input", UI.SEARCH) is None  # it searches the reasons


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_a_blind_label_is_the_final_decision_and_flagged_blind_everywhere(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    at, item, _ = _blind_item(run)
    decision = a_different_decision(run, item, blind=True)
    review_decide(at, run, decision, blind=True)
    assert open_item(at) == item  # stays on the item, the critics revealed
    assert [t for t in at.text if str(t.value).startswith("consensus ")]
    check_everywhere(run, decision, reviewed=1, review_at=at)
    # Revised after the reveal: the revision is final, the blind label stays in the history
    # (flagged blind) and is the one Agreement compares the critics with.
    revised = replace(a_different_decision(run, item), label=decision.label,
                      final_label=decision.final_label, score=decision.score,
                      children=decision.children, merge_into=decision.merge_into)
    review_decide(at, run, revised)
    for fmt in FORMATS:
        history = exported_rows(run, fmt)[item]["override_history"]
        history = json.loads(history) if isinstance(history, str) else history
        assert [bool(h["blind"]) for h in history] == [True, False], fmt


# -- filters and search ---------------------------------------------------------------------


def _filtered_ids(at: Any) -> list[str]:
    if not at.dataframe:
        return []
    return [str(i) for i in review_frame(at)["item_id"]]


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_the_filters_list_what_storage_and_the_export_say(kind: str, matrix_db: MatrixRun
                                                          ) -> None:
    run = matrix_db
    decided = decisions_by_item(run)
    exported = exported_rows(run, "jsonl")
    at = open_review(run)
    assert review_count(at) == len(decided) == 16

    # Consensus = the first item's consensus: exactly the items with it.
    first = next(iter(decided.values()))
    widget(at, "selectbox", UI.CONSENSUS).set_value(first["consensus"]).run()
    no_exception(at)
    wanted = sorted(i for i, row in decided.items() if row["consensus"] == first["consensus"])
    assert review_count(at) == len(wanted) and sorted(_filtered_ids(at)) == wanted
    widget(at, "selectbox", UI.CONSENSUS).set_value("(any)").run()

    # Critic said X: the items whose export row says the critic said X.
    critic = run.kind.panel_critics()[0]
    said = exported[first["item_id"]][f"{critic}: label"]
    widget(at, "selectbox", UI.CRITIC).set_value(critic).run()
    widget(at, "selectbox", UI.CRITIC_SAID).set_value(str(said)).run()
    no_exception(at)
    wanted = sorted(i for i, row in exported.items() if row[f"{critic}: label"] == said)
    assert review_count(at) == len(wanted) and sorted(_filtered_ids(at)) == wanted
    widget(at, "selectbox", UI.CRITIC).set_value("(any)").run()

    # Needs a decision: the items the rule says need one (curation: the SPLITs and MERGEs).
    widget(at, "toggle", UI.NEEDS).set_value(True).run()
    no_exception(at)
    needs = sorted(i for i, row in decided.items() if row["status"] == NEEDS_DECISION)
    assert sorted(_filtered_ids(at)) == needs and review_count(at) == len(needs)
    if run.kind.curation:
        assert needs, "the curation run has no SPLIT or MERGE consensus to decide"
        item = open_item(at)
        assert item in needs
        assert UI.NEEDS in all_text(at)
        decision = a_different_decision(run, item)
        review_decide(at, run, decision)
        assert review_count(at) == len(needs) - 1 and item not in _filtered_ids(at)
    widget(at, "toggle", UI.NEEDS).set_value(False).run()

    # Overridden: exactly the items a human decided, each with its final label (curation:
    # the item just decided above; another kind: one decided now).
    if not run.kind.curation:
        item = list(decided)[4]
        review_open(at, item)
        decision = a_different_decision(run, item)
        review_decide(at, run, decision)
    widget(at, "selectbox", UI.OVERRIDDEN).set_value("overridden").run()
    no_exception(at)
    table = review_frame(at)
    assert list(table["item_id"]) == [item]
    assert str(table["final_label"].iloc[0]) == decision.final_label
    check_everywhere(run, decision, reviewed=1, review_at=at)


@pytest.mark.parametrize("kind", ["rubric"])
def test_the_criterion_in_dispute_filter_lists_the_disputed_items(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    disputed = sorted(i for i in decisions_by_item(run)
                      if any(m.get("disputed") for m in (item_detail(
                          run.db, run.run_id, i)["consensus"]["marks"] or {}).values()))
    at = open_review(run)
    widget(at, "selectbox", UI.DISPUTED).set_value("any criterion").run()
    no_exception(at)
    assert disputed and sorted(_filtered_ids(at)) == disputed


@pytest.mark.parametrize("kind", ["compound"])
def test_the_unstable_filter_lists_the_items_a_repeated_critic_answered_differently(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    unstable = sorted(i for i in decisions_by_item(run) if any(
        len({s["label"] for s in steps if s["final"] and not s["failure"]}) > 1
        for steps in item_detail(run.db, run.run_id, i)["steps"].values()))
    assert unstable, "no repeated critic changed its answer: nothing to filter"
    at = open_review(run)
    widget(at, "toggle", UI.UNSTABLE).set_value(True).run()
    no_exception(at)
    assert sorted(_filtered_ids(at)) == unstable


def _search_word(run: MatrixRun, item: str) -> str:
    """A word of the item's first field that few other items share."""
    fields = item_detail(run.db, run.run_id, item)["fields"]
    text = str(next(iter(fields.values())))
    return max(text.replace(",", " ").split(), key=len)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_the_search_finds_the_item_and_its_decision_is_final_everywhere(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    item = list(decisions_by_item(run))[6]
    word = _search_word(run, item)
    # What the search promises: the item id, its fields and every critic's reasoning.
    wanted = sorted(i for i in decisions_by_item(run) if word.lower() in json.dumps(
        [i, (d := item_detail(run.db, run.run_id, i))["fields"],
         [v["reasoning"] for v in d["verdicts"]]], ensure_ascii=False).lower())
    at = open_review(run)
    widget(at, "text_input", UI.SEARCH).set_value(word).run()
    no_exception(at)
    assert item in wanted and sorted(_filtered_ids(at)) == wanted
    assert review_count(at) == len(wanted)
    review_open(at, item)
    decision = a_different_decision(run, item)
    review_decide(at, run, decision)
    check_everywhere(run, decision, reviewed=1, review_at=at)


# -- a rubric's criterion mark ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rubric"])
def test_a_criterion_mark_rescores_the_item_everywhere(kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    rubric = load_panel(get_run(run.db, run.run_id)["panel_yaml"]).rubric
    item = list(decisions_by_item(run))[1]
    marks = {c: v.get("mark") for c, v in
             item_detail(run.db, run.run_id, item)["consensus"]["marks"].items()}
    new = "UNMET" if marks["answers"] == "MET" else "MET"
    score = rubric_score({**marks, "answers": new}, rubric)
    assert score is not None and score != rubric_score(marks, rubric)
    label = band_of(score)

    at = open_review(run, item=item)
    widget(at, "selectbox", UI.CRITERION).set_value("answers")
    widget(at, "radio", UI.MARK).set_value(new)
    widget(at, "text_input", UI.NOTE).set_value("it does not answer")
    button(at, "Save this criterion's mark").click().run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]

    final = decisions_by_item(run)[item]
    assert (final["final_label"], final["final_score"], final["decided_by"]) == (
        label, pytest.approx(score), "human")
    review_open(at, item)
    assert str(review_frame(at).set_index("item_id").loc[item, "final_label"]) == label
    line = [str(t.value) for t in at.text if str(t.value).startswith("consensus ")]
    assert line and f"final {label} (a reviewer's criterion marks)" in line[0]
    assert f"{score:.2f}, label {label}" in all_text(at)
    assert agreement_reviewed(run) == 1
    for fmt in FORMATS:
        row = exported_rows(run, fmt)[item]
        assert row["final_label"] == label, fmt
        assert float(row["final_score"]) == pytest.approx(score), fmt
        assert row["answers: final"] == new and row["answers: consensus"] == marks["answers"]


@pytest.mark.parametrize("kind", ["rubric"])
def test_after_a_criterion_mark_the_decision_form_offers_the_new_score(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    rubric = load_panel(get_run(run.db, run.run_id)["panel_yaml"]).rubric
    item = list(decisions_by_item(run))[1]
    marks = {c: v.get("mark") for c, v in
             item_detail(run.db, run.run_id, item)["consensus"]["marks"].items()}
    new = "UNMET" if marks["answers"] == "MET" else "MET"
    score = rubric_score({**marks, "answers": new}, rubric)
    at = open_review(run, item=item)
    widget(at, "selectbox", UI.CRITERION).set_value("answers")
    widget(at, "radio", UI.MARK).set_value(new)
    button(at, "Save this criterion's mark").click().run()
    no_exception(at)
    assert decisions_by_item(run)[item]["final_score"] == pytest.approx(score)
    review_open(at, item)
    assert widget(at, "number_input", UI.SCORE).value == pytest.approx(score)


@pytest.mark.parametrize("kind", ["rubric"])
def test_an_override_after_a_criterion_mark_is_the_final_score(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    item = list(decisions_by_item(run))[3]
    at = open_review(run, item=item)
    widget(at, "radio", UI.MARK).set_value("CANNOT_ASSESS")
    button(at, "Save this criterion's mark").click().run()
    no_exception(at)
    review_open(at, item)
    decision = a_different_decision(run, item)
    review_decide(at, run, decision)
    check_everywhere(run, decision, reviewed=1, review_at=at)
    for fmt in FORMATS:
        assert float(exported_rows(run, fmt)[item]["final_score"]) == pytest.approx(
            decision.score), fmt


@pytest.mark.parametrize("kind", ["compound"])
def test_the_link_to_the_unstable_items_opens_as_many_as_it_names(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    agreement = open_app_page("agreement", {"run": str(run.run_id)})
    no_exception(agreement)
    links = [str(link.proto.label) for link in agreement.get("page_link")
             if "unstable items" in str(link.proto.label)]
    assert links, "Agreement offers no link to the unstable items"
    named = int(re.search(r"Review the ([\d,]+) unstable items", links[0]).group(1))
    at = open_review(run, everything=False, reviewer=None, query={"unstable": "1"})
    assert widget(at, "toggle", UI.UNSTABLE).value
    assert review_count(at) == named


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_accepting_the_consensus_in_bulk_decides_only_what_can_be_acted_on(
        kind: str, matrix_db: MatrixRun) -> None:
    run = matrix_db
    before = decisions_by_item(run)
    needs = sorted(i for i, row in before.items() if row["status"] == NEEDS_DECISION)
    at = open_review(run)
    widget(at, "checkbox", "Yes, accept the consensus for 16 items").check().run()
    button(at, "Accept").click().run()
    no_exception(at)
    accepted = 16 - len(needs)
    assert f"Accepted the consensus for {accepted} items" in all_text(at)
    after = decisions_by_item(run)
    for item, row in after.items():
        # The decision is what the panel said, now a human's; what needs a decision still does.
        assert row["final_label"] == before[item]["final_label"]
        assert row["decided_by"] == ("panel" if item in needs else "human")
        assert (row["status"] == NEEDS_DECISION) is (item in needs)
        if run.kind.numeric:
            assert row["final_score"] == pytest.approx(before[item]["final_score"])
    assert agreement_reviewed(run) == accepted
    for fmt in FORMATS:
        rows = exported_rows(run, fmt)
        assert sorted(i for i, row in rows.items() if str(row["overridden"]).lower() == "true"
                      ) == sorted(set(before) - set(needs)), fmt
        assert all(rows[i]["final_label"] == before[i]["final_label"] for i in rows), fmt
