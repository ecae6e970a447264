"""Verdicts made outside Jurybox become a run: tables (wide and long), the imported critics'
replay (both orders of a pair, repeats), bad files refused with a sentence, and a public
benchmark (LLMBar: 419 pairs, five real LLM judges in both orders, gold labels) imported end to
end with its authors' own figures as the oracle."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from judging.errors import DataError
from judging.runs.intake.verdict_import import ImportChoices, import_verdicts, imported_panel, only_judges
from judging.verdicts import ImportedAnnotation, ImportedVerdict, Item, VerdictSet
from storage.datasets.dataset_store import save_dataset
from storage.datasets.imported import (
    LongMapping,
    WideMapping,
    guess_long,
    guess_wide,
    imported_judges,
    verdicts_from_long,
    verdicts_from_wide,
)
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.calls import order_answers
from storage.results.runs import get_run

LLMBAR = pathlib.Path(__file__).parent / "data" / "llmbar"


def _csv(tmp_path: pathlib.Path, text: str, name: str = "v.csv") -> pathlib.Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _calls(db_path: pathlib.Path, run_id: int) -> dict[tuple[str, str], tuple[str | None, str | None, str | None]]:
    db = open_db(db_path)
    try:
        return {(item, critic): (label, failure, reasoning) for item, critic, label, failure, reasoning
                in db.execute("SELECT item_id, critic, label, failure, reasoning FROM calls"
                              " WHERE run_id = ?", [run_id])}
    finally:
        db.close()


def test_a_wide_table_guessed_confirmed_and_imported_is_a_run_of_its_judges(tmp_path):
    path = _csv(tmp_path, "id,text,gold,gpt,gpt_reasoning,claude,claude_confidence,notes\n"
                          "a,first,yes,yes,clear,yes,0.9,x\n"
                          "b,second,no,yes,looks fine,no,0.6,y\n"
                          "c,third,no,,,no,0.8,z\n")
    parsed = read_dataset(path, id_column="id", gold_column="gold")
    rows = [item.fields | {"gold": item.gold} for item in parsed.items]
    mapping = guess_wide(parsed.columns, rows, id_column="id", gold_column="gold")
    assert mapping == WideMapping(judges={"gpt": "gpt", "claude": "claude"},
                                  reasoning={"gpt": "gpt_reasoning"},
                                  confidence={"claude": "claude_confidence"})
    vset = verdicts_from_wide(parsed.items, mapping, numeric=False, source="v.csv")
    # The verdict columns leave the items; the other columns stay their fields.
    assert [sorted(i.fields) for i in vset.items] == [["notes", "text"]] * 3
    assert len(vset.verdicts) == 5  # gpt said nothing on c
    db_path = tmp_path / "j.db"
    made = import_verdicts(db_path, vset, ImportChoices(name="mine"))
    assert made.status == "done" and made.judges == ["gpt", "claude"]
    calls = _calls(db_path, made.run_id)
    assert calls[("b", "gpt")] == ("yes", None, "looks fine")
    assert calls[("c", "gpt")][1] == "item_error"  # no verdict: a missing value, said so
    db = open_db(db_path)
    try:
        run = get_run(db, made.run_id)
        assert not run["simulated"]
        consensus = dict(db.execute("SELECT item_id, consensus FROM consensus WHERE run_id = ?",
                                    [made.run_id]).fetchall())
        assert consensus == {"a": "yes", "c": "no"} | {"b": consensus["b"]}
        judges = imported_judges(db, made.dataset_id)
        assert [(j.judge, j.verdicts, j.format) for j in judges] == [
            ("gpt", 2, "table-wide"), ("claude", 3, "table-wide")]
        confidence = db.execute("SELECT confidence FROM calls WHERE run_id = ? AND item_id = 'a'"
                                " AND critic = 'claude'", [made.run_id]).fetchone()[0]
        assert confidence == pytest.approx(0.9)
    finally:
        db.close()


def test_a_long_table_with_repeats_gives_each_judge_its_samples(tmp_path):
    path = _csv(tmp_path, "item_id,judge,label,text\n"
                          "1,j1,good,t1\n1,j1,good,t1\n1,j1,bad,t1\n"
                          "1,j2,bad,t1\n2,j1,bad,t2\n2,j2,bad,t2\n")
    parsed = read_dataset(path)
    mapping = guess_long(parsed.columns)
    assert mapping == LongMapping(item="item_id", judge="judge", verdict="label")
    vset = verdicts_from_long(parsed.items, mapping, numeric=False, source="v.csv")
    assert [(v.item_id, v.judge, v.sample) for v in vset.verdicts][:3] == [
        ("1", "j1", 0), ("1", "j1", 1), ("1", "j1", 2)]
    panel = imported_panel(vset, ImportChoices(name="x"))
    assert {c.name: c.samples for c in panel.critics} == {"j1": 3, "j2": 1}
    made = import_verdicts(tmp_path / "j.db", vset, ImportChoices(name="x"))
    calls = _calls(tmp_path / "j.db", made.run_id)
    assert calls[("1", "j1")][0] == "good"  # two of its three samples
    # One sample of three: the vote of the samples it gave (the missing ones count as failed).
    assert calls[("2", "j1")][:2] == ("bad", None)


def test_scores_import_on_a_score_scale_from_their_range(tmp_path):
    vset = VerdictSet(source="s", format="table-wide",
                      items=[Item(id=str(i), fields={"t": i}) for i in range(3)],
                      verdicts=[ImportedVerdict(item_id=str(i), judge=j, score=float(i + k))
                                for i in range(3) for k, j in enumerate(["a", "b"])])
    panel = imported_panel(vset, ImportChoices(name="s"))
    assert (panel.scale.kind, panel.scale.min, panel.scale.max) == ("score", 0.0, 3.0)
    made = import_verdicts(tmp_path / "j.db", vset, ImportChoices(name="s"))
    assert made.status == "done"


def test_annotators_enter_as_blind_reviewers_or_as_critics(tmp_path):
    vset = VerdictSet(
        source="ls", format="label-studio",
        items=[Item(id="t1", fields={"text": "a"}), Item(id="t2", fields={"text": "b"})],
        verdicts=[ImportedVerdict(item_id=i, judge="model-v1", label="pos") for i in ("t1", "t2")],
        annotations=[ImportedAnnotation(item_id="t1", annotator="ann", label="neg"),
                     ImportedAnnotation(item_id="t1", annotator="bob", label="pos"),
                     ImportedAnnotation(item_id="t2", annotator="ann", label="pos")])
    made = import_verdicts(tmp_path / "a.db", vset, ImportChoices(name="ls"))
    db = open_db(tmp_path / "a.db")
    try:
        rows = db.execute("SELECT item_id, reviewer, label, blind FROM overrides WHERE run_id = ?"
                          " ORDER BY id", [made.run_id]).fetchall()
    finally:
        db.close()
    assert rows == [("t1", "ann", "neg", 1), ("t1", "bob", "pos", 1), ("t2", "ann", "pos", 1)]
    as_critics = import_verdicts(tmp_path / "b.db", vset,
                                 ImportChoices(name="ls", people="critics"))
    assert as_critics.judges == ["model-v1", "ann", "bob"] and as_critics.annotations == 0


@pytest.mark.parametrize(("verdicts", "items", "said"), [
    ([ImportedVerdict(item_id="1", judge="j", label="maybe")], ["1"],
     "'maybe' on item '1', which is not on the scale"),
    ([ImportedVerdict(item_id="9", judge="j", label="yes")], ["1"],
     "not items of the dataset, e.g. '9'"),
    ([ImportedVerdict(item_id="1", judge="j", label="yes"),
      ImportedVerdict(item_id="1", judge="j", label="no")], ["1"],
     "two verdicts on item '1'"),
])
def test_bad_verdicts_are_named_and_nothing_is_stored(tmp_path, verdicts, items, said):
    db_path = tmp_path / "j.db"
    db = open_db(db_path)
    try:
        parsed = read_dataset(_csv(tmp_path, "id,t\n" + "".join(f"{i},x\n" for i in items)),
                              id_column="id")
        dataset_id = save_dataset(db, parsed).id
    finally:
        db.close()
    vset = VerdictSet(source="f", format="table-long", verdicts=verdicts)
    scale = None if "scale" not in said else imported_panel(
        VerdictSet(source="f", format="x", verdicts=[
            ImportedVerdict(item_id="1", judge="j", label="yes"),
            ImportedVerdict(item_id="1", judge="k", label="no")]), ImportChoices(name="s")).scale
    with pytest.raises(DataError, match=re.escape(said)):
        import_verdicts(db_path, vset, ImportChoices(name="bad", scale=scale),
                        dataset_id=dataset_id)
    db = open_db(db_path)
    try:
        assert db.execute("SELECT count(*) FROM imported_verdicts").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    finally:
        db.close()


def test_a_judge_named_without_verdicts_is_refused(tmp_path):
    with pytest.raises(DataError, match="The judge 'ghost' has no verdicts"):
        import_verdicts(tmp_path / "j.db", VerdictSet(
            source="f", format="table-wide", items=[Item(id="1", fields={"t": 1})],
            verdicts=[ImportedVerdict(item_id="1", judge="j", label="yes"),
                      ImportedVerdict(item_id="1", judge="k", label="no")],
            judges={"j": "", "k": "", "ghost": ""}), ImportChoices(name="x"))


def test_a_bad_order_or_confidence_cell_is_named(tmp_path):
    parsed = read_dataset(_csv(tmp_path, "item,judge,label,order\n1,j,A,sideways\n"))
    with pytest.raises(DataError, match="Row 1, column 'order' holds the order 'sideways'"):
        verdicts_from_long(parsed.items, guess_long(parsed.columns), numeric=False, source="f")
    parsed = read_dataset(_csv(tmp_path, "id,j,j_confidence\n1,yes,80\n", "w.csv"),
                          id_column="id")
    with pytest.raises(DataError, match="confidence 80, outside 0 to 1"):
        verdicts_from_wide(parsed.items, WideMapping({"j": "j"}, {}, {"j": "j_confidence"}),
                           numeric=False, source="f")


# -- a public benchmark, end to end ----------------------------------------------------------


def _authors_counts() -> dict[str, dict[str, int]]:
    """The LLMBar authors' statistics.json, summed over the five subsets, per judge."""
    figures = json.loads((LLMBAR / "statistics.json").read_text())
    counts: dict[str, dict[str, int]] = {}
    for key, stats in figures.items():
        judge = key.split("/")[1]
        into = counts.setdefault(judge, {"n": 0, "correct_False": 0, "correct_True": 0,
                                         "equal": 0})
        for name in ("correct_False", "correct_True", "equal"):
            hit, n = re.match(r"(\d+) / (\d+)", stats[name]).groups()
            into[name] += int(hit)
        into["n"] += int(n)
    return counts


def test_llmbar_each_judges_accuracy_in_each_order_equals_the_authors(llmbar_run):
    db_path, run_id = llmbar_run
    db = open_db(db_path)
    try:
        answers = order_answers(db, run_id)
        gold = dict(db.execute("SELECT item_id, gold FROM items").fetchall())
    finally:
        db.close()
    authors = _authors_counts()
    for judge, expected in authors.items():
        pairs = {item: pair[0] for item, pair in answers[judge].items()}
        assert len(pairs) == expected["n"] == 419
        # The swapped answer as given, read back in the item's order (A <-> B).
        flip = {"1": "2", "2": "1"}
        ab = sum(forward == gold[item] for item, (forward, _) in pairs.items())
        ba = sum(flip.get(backward) == gold[item] for item, (_, backward) in pairs.items())
        same = sum((f is None and b is None) or (f is not None and flip.get(b) == f)
                   for f, b in pairs.values())
        assert (ab, ba, same) == (expected["correct_False"], expected["correct_True"],
                                  expected["equal"]), judge


def test_an_imported_run_sent_nothing_and_costs_nothing_here(tmp_path):
    from judging.engine.ledger import Ledger

    vset = VerdictSet(source="f", format="table-wide",
                      items=[Item(id=str(i), fields={"t": i}) for i in range(4)],
                      verdicts=[ImportedVerdict(item_id=str(i), judge=j, label="yes" if i else "no")
                                for i in range(4) for j in ("a", "b")])
    made = import_verdicts(tmp_path / "j.db", vset, ImportChoices(name="x"))
    db = open_db(tmp_path / "j.db")
    try:
        ledger = Ledger.from_mapping(get_run(db, made.run_id)["ledger"])
    finally:
        db.close()
    assert (ledger.replayed, ledger.sent_calls, ledger.rule_evaluations) == (8, 0, 0)
    assert ledger.sent_text() == "8 imported verdicts replayed (nothing sent)"
    assert ledger.cost_text() == "none here (imported)"


def _people_set() -> VerdictSet:
    labels = ["KEEP", "REJECT"]
    items = [Item(id=f"c{n}", fields={"text": f"class {n}"}, gold=labels[n % 2])
             for n in range(10)]
    verdicts = [ImportedVerdict(item_id=f"c{n}", judge=j, label=labels[(n + k) % 2])
                for n in range(10) for k, j in enumerate(["old-judge", "other"])]
    annotations = [ImportedAnnotation(item_id=f"c{n}", annotator=who,
                                      label=labels[(n + (who == "bo" and n < 3)) % 2])
                   for n in range(10) for who in ("ann", "bo")]
    return VerdictSet(source="export.json", format="label-studio", items=items,
                      verdicts=verdicts, annotations=annotations)


def test_team_agreement_and_conflicts_work_on_imported_annotators(tmp_path):
    from judging.analysis.team_review import reviewer_agreement
    from storage.reviewing.assignments import reviewer_labels

    made = import_verdicts(tmp_path / "j.db", _people_set(), ImportChoices(name="people"))
    db = open_db(tmp_path / "j.db")
    try:
        labels = reviewer_labels(db, made.run_id)
    finally:
        db.close()
    team = reviewer_agreement(labels)
    assert team.reviewers == ["ann", "bo"] and team.n_items == 10
    assert sorted(team.conflicts) == ["c0", "c1", "c2"]  # where bo said otherwise


def test_an_imported_run_compares_with_a_run_of_a_jurybox_panel_on_its_items(tmp_path, simulator):
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from judging.runs.stored.compare_runs import compare_runs
    from tests.fixtures_storage import tiny_panel

    db_path = tmp_path / "j.db"
    made = import_verdicts(db_path, _people_set(), ImportChoices(name="people"))
    panel = tiny_panel(simulator.base_url)
    panel = panel.model_copy(update={"scale": panel.scale.model_copy(
        update={"labels": ["KEEP", "REJECT", "SPLIT", "MERGE"]})})
    db = open_db(db_path)
    try:
        new = prepare_run(db, dataset_id=made.dataset_id, panel=panel, name="new panel")
    finally:
        db.close()
    JobRegistry().start_run(db_path, new).wait()
    db = open_db(db_path)
    try:
        result = compare_runs(db, made.run_id, new)
    finally:
        db.close()
    assert result.common == 10 and result.only_a == result.only_b == 0
    assert result.vs_gold is not None
    assert result.changes  # the imported critics were replaced by model critics, said in words


# -- every page on an imported run -------------------------------------------------------------

PAGES = ["home", "datasets", "panel", "run", "review", "agreement", "team", "compare", "export"]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_on_an_imported_run_and_none_calls_it_simulated(app_db, page):
    from tests.test_app_smoke import all_text, no_exception, open_page

    vset = VerdictSet(
        source="judges.csv", format="table-wide",
        items=[Item(id=f"i{n}", fields={"text": f"t{n}"}, gold="yes" if n % 2 else "no")
               for n in range(12)],
        verdicts=[ImportedVerdict(item_id=f"i{n}", judge=judge,
                                  label="yes" if (n + k) % 3 else "no", reasoning=f"why {n}")
                  for n in range(12) for k, judge in enumerate(["gpt", "claude", "gemini"])])
    made = import_verdicts(app_db, vset, ImportChoices(name="imported"))
    at = open_page(page, query={"run": str(made.run_id)})
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    text = all_text(at)
    assert "is simulated" not in text and "is chance" not in text
    if page in ("run", "review", "agreement", "export"):  # the banner says what judged it
        assert re.search(r"verdicts \W*imported\W* from judges", text), text


# -- decisions flow back ------------------------------------------------------------------------


def test_an_inspect_log_round_trips_through_a_run_and_inspect_applies_the_decisions(
        tmp_path, inspect_logs, inspect_home):
    """A log written by inspect_ai becomes a run (each scorer a critic, epochs as repeats); a
    reviewer overrides one sample; the decisions written back are applied by Inspect's own
    `precomputed_scores`, the reviewer's where there is one, else the panel's consensus."""
    from inspect_ai import score
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import precomputed_scores

    from judging.runs.intake.verdict_import import decisions_back
    from storage.datasets.readers.eval_logs import read_inspect_log
    from storage.reviewing.overrides import add_override

    vset = read_inspect_log(inspect_logs["eval"])
    judges = [j for j in vset.judges if all(
        v.label is not None for v in vset.verdicts if v.judge == j)]
    vset = only_judges(vset, judges)  # the graders of labels (C/I); match() gives them too
    db_path = tmp_path / "j.db"
    made = import_verdicts(db_path, vset, ImportChoices(name="inspect", people="none"))
    assert made.status == "done"
    db = open_db(db_path)
    try:
        samples = dict(db.execute("SELECT critic, max(sample) FROM call_steps WHERE run_id = ?"
                                  " GROUP BY critic", [made.run_id]).fetchall())
        assert set(samples.values()) == {1}  # two epochs: each critic's two repeats
        item = vset.items[0].id
        add_override(db, made.run_id, item, "I", "wrong on reflection", "ana")
        data, count = decisions_back(db, made.run_id, "inspect-scores")
    finally:
        db.close()
    path = inspect_home / "back.jsonl"
    path.write_bytes(data)
    log = score(read_eval_log(str(inspect_logs["eval"])), precomputed_scores(str(path)),
                action="overwrite", display="none")
    applied = {str(s.id): s.scores["precomputed_scores"] for s in log.samples}
    assert applied[item].value == "I" and applied[item].explanation == "wrong on reflection"
    assert applied[item].metadata["reviewer"] == "ana"
    assert count == len({s.id for s in log.samples})


def test_label_studio_decisions_go_back_onto_the_original_tasks(tmp_path):
    from judging.runs.intake.verdict_import import decisions_back
    from storage.datasets.readers.eval_logs import read_label_studio_export
    from tests.tool_documented import LABEL_STUDIO_EXPORT

    raw = json.dumps(LABEL_STUDIO_EXPORT).encode()
    vset = read_label_studio_export(raw, "export.json")
    made = import_verdicts(tmp_path / "j.db", vset, ImportChoices(name="ls"))
    db = open_db(tmp_path / "j.db")
    try:
        data, count = decisions_back(db, made.run_id, "label-studio", tasks=raw,
                                     humans_only=True)
    finally:
        db.close()
    back = read_label_studio_export(data, "back.json")
    truth = {item.id: item.gold for item in back.items}
    assert count == len([g for g in truth.values() if g is not None]) > 0


def test_the_datasets_page_imports_a_label_studio_export_and_export_writes_it_back(app_db):
    from tests.test_app_smoke import all_text, no_exception, open_page
    from tests.tool_documented import LABEL_STUDIO_EXPORT

    raw = json.dumps(LABEL_STUDIO_EXPORT).encode()
    at = open_page("datasets")
    at.file_uploader(key="dataset_upload").upload("export.json", raw, "application/json").run()
    no_exception(at)
    assert re.search(r"Label Studio export export\W+json", all_text(at))
    at.button(key="tool.import").click().run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert re.search(r"Imported \d+ verdicts of 2 judges .* as run #1", all_text(at))
    at = open_page("export", query={"run": "1"})
    no_exception(at)
    assert at.subheader and "Decisions back to the tool" in [s.value for s in at.subheader]
    assert at.radio(key="back_format").value == "inspect-scores"
    at.radio(key="back_format").set_value("long").run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
