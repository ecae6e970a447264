"""Comparisons made from a dataset holding several systems' responses side by side (issue 10
part 2, "a list of systems' responses compared in pairs"): every pair per item, the order
drawn with a seed, clear refusals; through the library, `jurybox pairs` and the Datasets page,
then judged by a pairwise panel with more than two systems (Bradley-Terry)."""

from __future__ import annotations

import contextlib
import csv
import io
import pathlib

import pytest

from judging.errors import DataError
from judging.panel.pairwise import compared_in_pairs
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.cli import main
from judging.runs.intake.pairs import pairs_dataset
from judging.runs.stored.run_report import run_pairwise
from judging.simulator.sim_server import Profile
from judging.verdicts import Item
from storage.datasets.dataset_store import list_datasets, load_items, save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from tests.test_app_smoke import no_exception, open_page

WIDE = ("id,question,atlas,breeze,comet\n"
        "q1,How do I reset it?,Hold reset for ten seconds then log in again,Press reset,Ask us\n"
        "q2,How do I descale it?,Boil vinegar and water then rinse twice,Use vinegar,Ask us\n")


def test_every_pair_of_responses_becomes_one_comparison_in_a_seeded_order():
    items = [Item("q1", {"question": "?", "a": "A1", "b": "B1", "c": "C1"})]
    pairs = compared_in_pairs(items, ["a", "b", "c"], seed=1)
    assert len(pairs) == 3
    systems = [frozenset((p.fields["system_a"], p.fields["system_b"])) for p in pairs]
    assert set(systems) == {frozenset("ab"), frozenset("bc"), frozenset("ac")}
    for pair in pairs:
        first, second = pair.fields["system_a"], pair.fields["system_b"]
        assert pair.id == f"q1:{first}-vs-{second}"
        assert pair.fields["response_a"] == f"{first.upper()}1"
        assert pair.fields["response_b"] == f"{second.upper()}1"
        assert pair.fields["question"] == "?" and "a" not in pair.fields
    assert compared_in_pairs(items, ["a", "b", "c"], seed=1) == pairs
    orders = {tuple(p.id for p in compared_in_pairs(items, ["a", "b", "c"], seed=s))
              for s in range(8)}
    assert len(orders) > 1  # the seed decides which response goes first


def test_the_gold_label_follows_which_response_is_a():
    """A gold naming the winning column becomes A or B as drawn (None in a pair without the
    winner); a tie stays a tie; with keep_order, A is the column listed first."""
    items = [Item("q1", {"a": "A1", "b": "B1", "c": "C1"}, gold="b"),
             Item("q2", {"a": "A2", "b": "B2", "c": "C2"}, gold="TIE")]
    for seed in range(8):
        for pair in compared_in_pairs(items, ["a", "b", "c"], seed=seed):
            first, second = pair.fields["system_a"], pair.fields["system_b"]
            if pair.id.startswith("q2"):
                assert pair.gold == "TIE"
            else:
                assert pair.gold == {first: "A", second: "B"}.get("b")
    kept = compared_in_pairs(items, ["b", "a"], keep_order=True)
    assert [(p.fields["system_a"], p.fields["system_b"], p.gold) for p in kept] == [
        ("b", "a", "A"), ("b", "a", "TIE")]


def test_a_positional_gold_is_refused_where_the_positions_are_drawn():
    items = [Item("q1", {"x": "X1", "y": "Y1"}, gold="A")]
    with pytest.raises(DataError, match="gold label 'A', a position.*name of the winning column"):
        compared_in_pairs(items, ["x", "y"])
    assert [p.gold for p in compared_in_pairs(items, ["x", "y"], keep_order=True)] == ["A"]


@pytest.mark.parametrize(("responses", "fields", "message"), [
    (["a"], {"a": "x"}, "Pick at least two different response columns"),
    (["a", "a"], {"a": "x"}, "Pick at least two different response columns"),
    (["a", "b"], {"a": "x"}, "Item 'q1' has no field 'b'"),
    (["a", "b"], {"a": "x", "b": "y", "system_a": "z"}, "already have a field 'system_a'"),
])
def test_comparisons_that_cannot_be_made_are_refused_with_a_sentence(responses, fields, message):
    with pytest.raises(DataError, match=message):
        compared_in_pairs([Item("q1", fields)], responses)


def test_the_cli_writes_comparisons_that_a_pairwise_panel_ranks(tmp_path, simulator_factory):
    wide = tmp_path / "wide.csv"
    wide.write_text(WIDE, encoding="utf-8")
    out = tmp_path / "pairs.csv"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["pairs", "--data", str(wide), "--responses", "atlas,breeze,comet",
                     "--out", str(out)]) == 0
    assert "Wrote 6 comparisons" in printed.getvalue()
    assert "drawn at random for each pair with seed 0" in printed.getvalue()
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 6 and set(rows[0]) == {"id", "question", "system_a", "response_a",
                                               "system_b", "response_b"}

    # Judged by a pairwise panel on the simulator: the fullest answers are the best.
    gold = {"Hold reset for ten seconds then log in again": "0.9", "Press reset": "0.5",
            "Ask us": "0.1", "Boil vinegar and water then rinse twice": "0.9",
            "Use vinegar": "0.5"}
    server = simulator_factory(profiles={"judge": Profile(accuracy=1.0)}, gold=gold)
    panel = Panel.model_validate({
        "name": "three systems", "scale": {"kind": "nominal", "labels": ["A", "B", "TIE"]},
        "pairwise": {"first_field": "response_a", "second_field": "response_b",
                     "first_system": "system_a", "second_system": "system_b"},
        "critics": [{"name": "judge", "vendor": "custom", "base_url": server.base_url,
                     "model": "judge", "prompt_template": "{question} A: {response_a} "
                                                          "B: {response_b}"}]})
    db_path = tmp_path / "p.db"
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(out, id_column="id"), name="pairs")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(str(db_path), run_id).wait(60)
    report = run_pairwise(db, run_id)
    assert [r.system for r in report.systems] == ["atlas", "breeze", "comet"]
    assert [(r.wins, r.losses) for r in report.systems] == [(4, 0), (2, 2), (0, 4)]
    assert report.strengths.reason  # atlas won every comparison: no finite strengths
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["pairs", "--data", str(wide), "--responses", "atlas,nope",
                     "--out", str(out)]) == 2


def test_the_cli_keeps_the_gold_in_the_order_it_says(tmp_path):
    """`jurybox pairs` writes the gold read in each comparison's order and says how A and B
    were assigned; --keep-order keeps the columns' order."""
    wide = tmp_path / "wide.csv"
    wide.write_text(WIDE.replace("comet\n", "comet,gold\n").replace("Ask us\n", "Ask us,atlas\n"),
                    encoding="utf-8")
    out = tmp_path / "pairs.csv"
    for options, said in (([], "drawn at random for each pair with seed 3"),
                          (["--keep-order"], "A is always the column listed first")):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main(["pairs", "--data", str(wide), "--responses", "comet,atlas,breeze",
                         "--out", str(out), "--seed", "3", *options]) == 0
        assert said in printed.getvalue() and "The gold column 'gold' follows" in printed.getvalue()
        rows = list(csv.DictReader(out.open(encoding="utf-8")))
        golds = {(r["system_a"], r["system_b"]): r["gold"] for r in rows if r["id"][:2] == "q1"}
        assert len(golds) == 3
        for (first, second), gold in golds.items():
            assert gold == {first: "A", second: "B"}.get("atlas", "")
        if options:
            assert set(golds) == {("comet", "atlas"), ("comet", "breeze"), ("atlas", "breeze")}


def test_importing_the_same_file_as_the_same_pairs_is_recognised(tmp_path):
    wide = tmp_path / "wide.csv"
    wide.write_text(WIDE, encoding="utf-8")
    db = open_db(tmp_path / "d.db")
    parsed = read_dataset(wide, id_column="id")
    first = save_dataset(db, pairs_dataset(parsed, ["atlas", "breeze", "comet"]), name="p")
    again = save_dataset(db, pairs_dataset(parsed, ["atlas", "breeze", "comet"]), name="p")
    other = save_dataset(db, pairs_dataset(parsed, ["atlas", "comet"]), name="p2")
    assert first.created and not again.created and again.id == first.id
    assert other.created and other.id != first.id


def test_the_datasets_page_imports_a_file_as_comparisons(app_db: pathlib.Path) -> None:
    at = open_page("datasets")
    at.file_uploader(key="dataset_upload").upload("wide.csv", WIDE.encode(), "text/csv").run()
    no_exception(at)
    at.multiselect[-1].set_value(["atlas", "breeze", "comet"])
    at.button(key="FormSubmitter:mapping-Import").click().run()
    no_exception(at)
    assert any("Imported 6 comparisons" in s.value for s in at.success)
    assert any("drawn at random for each pair with seed 0" in s.value for s in at.success)
    (dataset,) = list_datasets(open_db(app_db))
    assert dataset["n_items"] == 6
    assert dataset["fields"] == ["question", "system_a", "response_a", "system_b", "response_b"]


def test_the_datasets_page_keeps_the_gold_and_the_order_when_asked(app_db: pathlib.Path) -> None:
    at = open_page("datasets")
    wide = WIDE.replace("comet\n", "comet,gold\n").replace("Ask us\n", "Ask us,breeze\n")
    at.file_uploader(key="dataset_upload").upload("wide.csv", wide.encode(), "text/csv").run()
    no_exception(at)
    at.multiselect[-1].set_value(["atlas", "breeze"])
    at.checkbox[-1].check()
    at.button(key="FormSubmitter:mapping-Import").click().run()
    no_exception(at)
    assert any("A is always the column listed first" in s.value for s in at.success)
    assert any("The gold column 'gold' follows" in s.value for s in at.success)
    (dataset,) = list_datasets(open_db(app_db))
    items = load_items(open_db(app_db), dataset["id"])
    assert [(i.fields["system_a"], i.fields["system_b"], i.gold) for i in items] == [
        ("atlas", "breeze", "B"), ("atlas", "breeze", "B")]
