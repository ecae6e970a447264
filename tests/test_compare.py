"""Version against version on two real runs: the demo panel (A) and its second version (B, one
critic changed) over the demo dataset, judged over HTTP by the simulator on 127.0.0.1 and stored
in a real SQLite file. `judging.runs.stored.compare_runs.compare_runs` and `jurybox compare`."""

from __future__ import annotations

import pathlib

import pytest

from judging.analysis.compare_stats import mcnemar_exact
from judging.demo import demo_dataset_path, demo_panel_path, demo_panel_v2_path
from judging.engine.budget import BudgetCap
from judging.engine.ledger import Ledger
from judging.errors import DataError
from judging.panel.panel_files import load_panel
from judging.runs.background.jobs import prepare_run
from judging.runs.commands.cli import main
from judging.runs.stored.compare_runs import changes_text, compare_runs
from storage.datasets.dataset_store import load_items, save_dataset
from storage.datasets.importing import read_dataset
from storage.db import NotFoundError, open_db
from storage.results.consensus import load_consensus
from storage.results.runs import get_run
from storage.reviewing.overrides import add_override, final_labels
from tests.fixtures_compare import demo_panel_v2, run_panel

Runs = tuple[pathlib.Path, int, int]


def finals(db: object, run_id: int) -> dict[str, str | None]:
    frame = final_labels(db, run_id)  # type: ignore[arg-type]
    return {str(i): (None if v is None or v != v else str(v))
            for i, v in zip(frame["item_id"], frame["final_label"])}


def consensus_of(db: object, run_id: int) -> dict[str, dict[str, object]]:
    return {str(row["item_id"]): row for row in load_consensus(db, run_id)}  # type: ignore[arg-type]


# -- flipped items -------------------------------------------------------------------------------


def test_flipped_items_are_those_whose_final_label_differs(two_runs: Runs) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    comparison = compare_runs(db, run_a, run_b)
    final_a, final_b = finals(db, run_a), finals(db, run_b)
    expected = [item for item in final_a if final_a[item] != final_b[item]]
    assert expected, "the second panel version should change some decisions"
    assert [f.item_id for f in comparison.flipped] == expected  # dataset order
    gold = {item.id: item.gold for item in load_items(db, int(get_run(db, run_a)["dataset_id"]))}
    for flip in comparison.flipped:
        assert (flip.final_a, flip.final_b) == (final_a[flip.item_id], final_b[flip.item_id])
        assert flip.gold == gold[flip.item_id]
        assert not flip.reviewed_a and not flip.reviewed_b and flip.human is None
    assert (comparison.common, comparison.only_a, comparison.only_b) == (300, 0, 0)


def test_an_override_unflips_one_item_and_flips_another(two_runs: Runs) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    before = compare_runs(db, run_a, run_b)
    settled = before.flipped[0]
    # The reviewer agrees with run A's decision on run B: the two final labels meet.
    add_override(db, run_b, settled.item_id, str(settled.final_a), "A was right", "ana")
    final_a, final_b = finals(db, run_a), finals(db, run_b)
    same = next(item for item in final_a if final_a[item] == final_b[item]
                and item != settled.item_id)
    other = next(label for label in ("KEEP", "REJECT", "SPLIT", "MERGE") if label != final_a[same])
    add_override(db, run_a, same, other, "changed my mind", "ana")

    after = compare_runs(db, run_a, run_b)
    ids = [f.item_id for f in after.flipped]
    assert settled.item_id not in ids
    flip = next(f for f in after.flipped if f.item_id == same)
    assert (flip.final_a, flip.final_b, flip.reviewed_a, flip.reviewed_b) == (
        other, final_b[same], True, False)
    assert flip.human == other  # the human label of the item, from the run it was given on
    assert len(after.flipped) == len(before.flipped)


def test_runs_over_different_datasets_are_refused_with_a_sentence(two_runs: Runs) -> None:
    path, run_a, _ = two_runs
    db = open_db(path)
    other = save_dataset(db, read_dataset(_small_csv(path.parent), id_column="id", gold_column="gold"), name="Another dataset")
    # A run over it need not be judged: the refusal comes first.
    run_c = prepare_run(db, dataset_id=other.id, panel=demo_panel_v2())
    with pytest.raises(DataError, match="a comparison needs two runs over the same dataset"):
        compare_runs(db, run_a, run_c)
    with pytest.raises(DataError, match="given twice"):
        compare_runs(db, run_a, run_a)
    with pytest.raises(NotFoundError, match="no run with id 99"):
        compare_runs(db, run_a, 99)


def _small_csv(folder: pathlib.Path) -> pathlib.Path:
    path = folder / "other.csv"
    path.write_text(
        "id,candidate_class,parent,description,example_members,existing_siblings,gold\n"
        "X1,Mugs,Kitchen,Cups with a handle,enamel mug,Plates,KEEP\n", encoding="utf-8")
    return path


def test_items_decided_by_only_one_run_are_counted_and_left_out(
    two_runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_a, _ = two_runs
    db = open_db(path)
    dataset_id = int(get_run(db, run_a)["dataset_id"])
    db.close()
    # A third version (its new critic on a model nothing has called yet) under a budget cap
    # that stops it early: it decides only some items.
    v2 = demo_panel_v2()
    critics = [c.model_copy(update={"model": "sim-new"}) if c.name == "second" else c
               for c in v2.critics]
    run_c = run_panel(path, dataset_id, v2.model_copy(update={"critics": critics}),
                      budget=BudgetCap(usd=0.002))
    db = open_db(path)
    decided = len(load_consensus(db, run_c))
    assert 0 < decided < 300
    comparison = compare_runs(db, run_a, run_c)
    assert (comparison.common, comparison.only_a, comparison.only_b) == (
        decided, 300 - decided, 0)
    assert comparison.backed.n == decided
    assert comparison.vs_gold is not None and comparison.vs_gold.n == decided

    assert main(["compare", str(run_a), str(run_c), "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert (f"{300 - decided:,} items decided only by run #{run_a} and 0 only by run #{run_c}: "
            "left out of every figure below.") in out


# -- the paired figures --------------------------------------------------------------------------


def test_gold_and_consensus_figures_count_what_the_runs_decided(two_runs: Runs) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    comparison = compare_runs(db, run_a, run_b, resamples=500, seed=3)
    gold = {item.id: item.gold for item in load_items(db, int(get_run(db, run_a)["dataset_id"]))}
    cons_a, cons_b = consensus_of(db, run_a), consensus_of(db, run_b)

    right_a = {i for i, row in cons_a.items() if row["consensus"] == gold[i]}
    right_b = {i for i, row in cons_b.items() if row["consensus"] == gold[i]}
    g = comparison.vs_gold
    assert g is not None and g.n == 300
    assert (g.correct_a, g.correct_b) == (len(right_a), len(right_b))
    assert g.mcnemar == mcnemar_exact(len(right_a - right_b), len(right_b - right_a))
    assert g.difference.estimate == pytest.approx((len(right_b) - len(right_a)) / 300)
    assert g.difference.low is not None and g.difference.high is not None
    assert g.difference.low <= g.difference.estimate <= g.difference.high
    assert (g.difference.resamples, g.difference.seed) == (500, 3)

    backed_a = {i for i, row in cons_a.items() if not row["disagreement"]}
    backed_b = {i for i, row in cons_b.items() if not row["disagreement"]}
    b = comparison.backed
    assert (b.correct_a, b.correct_b) == (len(backed_a), len(backed_b))
    assert b.mcnemar == mcnemar_exact(len(backed_a - backed_b), len(backed_b - backed_a))

    # No human has looked yet: the human comparison is undefined, and says why.
    humans = comparison.measures()[0]
    assert humans.result.n == 0 and humans.reason is not None
    assert "No item that both runs decided has a human label yet" in humans.reason


def test_human_labels_come_from_either_run_and_conflicts_are_left_out(two_runs: Runs) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    cons_a, cons_b = consensus_of(db, run_a), consensus_of(db, run_b)
    items = list(cons_a)[:4]
    # Item 0: labelled on A as A's panel said; item 1: labelled on B as B's panel said; item 2:
    # labelled as REJECT on A and as KEEP on B (a conflict); item 3: a blind label on B, then
    # a revision: the blind one counts.
    add_override(db, run_a, items[0], str(cons_a[items[0]]["consensus"]), "", "ana")
    add_override(db, run_b, items[1], str(cons_b[items[1]]["consensus"]), "", "bo")
    add_override(db, run_a, items[2], "REJECT", "", "ana")
    add_override(db, run_b, items[2], "KEEP", "", "bo")
    add_override(db, run_b, items[3], "SPLIT", "", "bo", blind=True)
    add_override(db, run_b, items[3], "MERGE", "", "bo")
    comparison = compare_runs(db, run_a, run_b)
    h = comparison.vs_humans
    assert (h.n, comparison.human_conflicts) == (3, 1)
    human = {items[0]: cons_a[items[0]]["consensus"], items[1]: cons_b[items[1]]["consensus"],
             items[3]: "SPLIT"}
    assert h.correct_a == sum(cons_a[i]["consensus"] == label for i, label in human.items())
    assert h.correct_b == sum(cons_b[i]["consensus"] == label for i, label in human.items())
    assert (comparison.a.human_labels, comparison.b.human_labels) == (2, 3)
    basis = comparison.measures()[0].basis
    assert "3 items both runs decided" in basis
    assert "1 item whose human labels differ between the two runs left out" in basis


# -- ledgers -------------------------------------------------------------------------------------


def test_ledgers_are_the_runs_own_and_the_unchanged_critics_were_not_paid_twice(
    two_runs: Runs,
) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    comparison = compare_runs(db, run_a, run_b)
    assert comparison.a.ledger == Ledger.from_mapping(get_run(db, run_a)["ledger"])
    assert comparison.b.ledger == Ledger.from_mapping(get_run(db, run_b)["ledger"])
    assert comparison.a.ledger.calls == comparison.b.ledger.calls == 300 * 4
    # Run B's three unchanged critics are answered by run A's successful calls.
    reused = db.execute(
        "SELECT count(*) FROM calls WHERE run_id = ? AND critic IN ('careful', 'strict', 'flaky')"
        " AND failure IS NULL", [run_a]).fetchone()[0]
    assert comparison.b.ledger.cache_hits == reused
    assert comparison.a.ledger.cache_hits == 0
    assert 0 < comparison.b.ledger.cost_usd < comparison.a.ledger.cost_usd


# -- the command line ----------------------------------------------------------------------------


def test_jurybox_compare_prints_flips_figures_and_ledgers(
    two_runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    comparison = compare_runs(db, run_a, run_b)
    db.close()
    code = main(["compare", str(run_a), str(run_b), "--db", str(path), "--flipped", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert (f"What run #{run_b} changed from run #{run_a}: critic 'lenient' removed; critic "
            "'second' added (simulated, sim-biased).") in out
    n = len(comparison.flipped)
    assert f"Final decisions (the latest override, else the consensus): {n} of 300 items flipped." in out
    first, second, *rest = comparison.flipped
    for flip in (first, second):
        line = next(line for line in out.splitlines() if line.strip().startswith(flip.item_id))
        assert line.split()[:3] == [flip.item_id, flip.final_a, flip.final_b]
    for flip in rest:
        assert flip.item_id not in out
    if rest:
        assert f"... and {len(rest)} more (--flipped N lists more)." in out
    g = comparison.vs_gold
    assert g is not None
    assert (f"run #{run_a} {g.accuracy_a:.1%}, run #{run_b} {g.accuracy_b:.1%}; difference "
            f"{(g.difference.estimate or 0) * 100:+.1f} points") in out
    assert "labels shipped with the data, not a review" in out
    assert "Accuracy against the humans:\n  undefined: No item" in out
    cost_line = next(line for line in out.splitlines() if line.strip().startswith("cost"))
    assert cost_line.split()[1:] == [comparison.a.ledger.cost_text(),
                                     comparison.b.ledger.cost_text()]


def test_jurybox_compare_refuses_different_datasets_and_unknown_runs(
    two_runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_a, _ = two_runs
    db = open_db(path)
    other = save_dataset(db, read_dataset(_small_csv(path.parent), id_column="id", gold_column="gold"), name="Another dataset")
    run_c = prepare_run(db, dataset_id=other.id, panel=demo_panel_v2())
    db.close()
    assert main(["compare", str(run_a), str(run_c), "--db", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jurybox: error: Run #{run_a} judged dataset #")
    assert "a comparison needs two runs over the same dataset" in err
    assert main(["compare", str(run_a), "99", "--db", str(path)]) == 1
    assert "There is no run with id 99." in capsys.readouterr().err


def test_the_demo_and_its_second_version_compare_from_the_command_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a user would: `jurybox demo`, then the shipped second version on the same file, then
    `jurybox compare` (the two runs land on one dataset)."""
    db_path = str(tmp_path / "cli.db")
    assert main(["demo", "--limit", "40", "--quiet", "--db", db_path]) == 0
    assert main(["judge", "--data", str(demo_dataset_path()), "--panel",
                 str(demo_panel_v2_path()), "--limit", "40", "--quiet", "--db", db_path]) == 0
    capsys.readouterr()
    assert main(["compare", "1", "2", "--db", db_path]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Run #2 against run #1 over dataset #1 'Demo: taxonomy candidates "
                          "(first 40 of 300)': 40 items decided by both.")
    assert "run #2: Taxonomy curation (demo, version 2)" in out
    assert "critic 'lenient' removed; critic 'second' added (simulated, sim-biased)." in out
    assert "Accuracy against gold labels:\n  run #1 " in out


def test_two_abstentions_are_not_a_flip(two_runs: Runs) -> None:
    """Two runs of one panel version that abstains when its critics disagree (unanimous voting,
    no fallback): an item without a label in both runs did not flip."""
    path, run_a, _ = two_runs
    db = open_db(path)
    dataset_id = int(get_run(db, run_a)["dataset_id"])
    db.close()
    demo = load_panel(demo_panel_path())
    strict = demo.model_copy(update={"voting": demo.voting.model_copy(
        update={"strategy": "unanimous", "fallback": None})})
    first = run_panel(path, dataset_id, strict)
    second = run_panel(path, dataset_id, strict)
    db = open_db(path)
    comparison = compare_runs(db, first, second)
    final_1, final_2 = finals(db, first), finals(db, second)
    both_none = [i for i in final_1 if final_1[i] is None and final_2[i] is None]
    assert both_none, "a unanimous panel without a fallback should abstain on contested items"
    assert not set(both_none) & {f.item_id for f in comparison.flipped}
    assert [f.item_id for f in comparison.flipped] == [
        i for i in final_1 if final_1[i] != final_2[i]]
    assert comparison.changes == []
    assert "ran the same panel version" in changes_text(comparison)
