"""Pairwise panels (issue 10 part 2): both orders asked and read back, an inconsistent pair as a
tie or flagged, position bias per critic, win rates with intervals, and Bradley-Terry strengths
checked against an independent fit; end to end against the simulator over real HTTP."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from judging.analysis.pairwise_stats import (
    bradley_terry,
    order_accuracy,
    position_bias,
    win_rates,
)
from judging.demo import demo_gold, pairwise_dataset_path, pairwise_panel_path
from judging.engine.chains import both_orders
from judging.errors import ConfigError
from judging.panel.critics import Critic
from judging.panel.pairwise import PairwiseConfig
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.cli import main as cli_main
from judging.runs.stored.run_report import run_pairwise
from judging.simulator.sim_server import Profile
from judging.verdicts import FailureKind, Item, Verdict
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.calls import order_answers
from storage.results.runs import get_run

CONFIG = PairwiseConfig(first_field="answer_a", second_field="answer_b")
CRITIC = Critic(name="c", model="m", prompt_template="{answer_a} {answer_b}")
ITEM = Item(id="i1", fields={"answer_a": "short", "answer_b": "long", "q": "?"})


def _said(label: str | None, failure: FailureKind | None = None) -> Verdict:
    return Verdict("c", "i1", label=label, failure=failure, attempts=1,
                   message="HTTP 500 x3" if failure else None)


# -- both orders ----------------------------------------------------------------------------


def test_the_swapped_item_trades_its_responses_and_the_answer_is_read_back():
    swapped = CONFIG.swapped(ITEM)
    assert swapped.fields == {"answer_a": "long", "answer_b": "short", "q": "?"}
    assert [CONFIG.flip(label) for label in ("A", "B", "TIE")] == ["B", "A", "TIE"]
    # B with A first, then A on the swapped pair: the same response both times.
    verdict = both_orders(CONFIG, CRITIC, ITEM, _said("B"), _said("A"))
    assert verdict.ok and verdict.label == "B"
    assert [(s.role, s.swapped) for s in verdict.steps] == [("A first", False), ("B first", True)]


def test_an_answer_that_follows_the_position_is_a_tie_or_flagged():
    tie = both_orders(CONFIG, CRITIC, ITEM, _said("A"), _said("A"))
    assert tie.label == "TIE"
    assert tie.reasoning.startswith("Inconsistent when the order was swapped: said A with A "
                                    "first and B with B first")
    flag = both_orders(CONFIG.model_copy(update={"inconsistent": "flag"}), CRITIC, ITEM,
                       _said("A"), _said("A"))
    assert flag.failure is FailureKind.INCONSISTENT and flag.label is None
    assert "inconsistent when the order was swapped" in flag.message


def test_a_failed_order_fails_the_critic_and_says_which():
    verdict = both_orders(CONFIG, CRITIC, ITEM, _said("A"), _said(None, FailureKind.ERROR))
    assert verdict.failure is FailureKind.ERROR
    assert verdict.message == "with B first: HTTP 500 x3"
    assert verdict.attempts == 2  # both calls were paid


# -- the statistics -------------------------------------------------------------------------


def test_win_rates_count_a_tie_as_half_and_give_a_reproducible_interval():
    outcomes = [("x", "y", "A")] * 6 + [("y", "x", "A")] * 2 + [("x", "y", "TIE")] * 2
    rows = {r.system: r for r in win_rates(outcomes, CONFIG, seed=3)}
    x, y = rows["x"], rows["y"]
    assert (x.wins, x.ties, x.losses, x.win_rate) == (6, 2, 2, pytest.approx(0.7))
    assert (y.wins, y.ties, y.losses, y.win_rate) == (2, 2, 6, pytest.approx(0.3))
    assert x.low < 0.7 < x.high and y.low < 0.3 < y.high
    assert win_rates(outcomes, CONFIG, seed=3) == win_rates(outcomes, CONFIG, seed=3)


def _newton_fit(outcomes, systems):
    """An independent Bradley-Terry fit: Newton-Raphson on log-strengths (the first fixed at
    0), ties as half a win each way; strengths scaled to sum to 1."""
    index = {s: n for n, s in enumerate(systems)}
    theta = np.zeros(len(systems))
    for _ in range(100):
        gradient = np.zeros(len(systems))
        hessian = np.zeros((len(systems), len(systems)))
        for first, second, label in outcomes:
            i, j = index[first], index[second]
            points_i = 1.0 if label == "A" else 0.0 if label == "B" else 0.5
            chance = 1 / (1 + np.exp(theta[j] - theta[i]))
            gradient[i] += points_i - chance
            gradient[j] -= points_i - chance
            weight = chance * (1 - chance)
            hessian[i, i] -= weight
            hessian[j, j] -= weight
            hessian[i, j] += weight
            hessian[j, i] += weight
        step = np.linalg.solve(hessian[1:, 1:], -gradient[1:])
        theta[1:] += step
        if np.max(np.abs(step)) < 1e-13:
            break
    strengths = np.exp(theta)
    return dict(zip(systems, strengths / strengths.sum(), strict=True))


def test_bradley_terry_matches_an_independent_fit_and_known_values():
    # Two systems, 3 wins to 1: the maximum-likelihood strengths are 3/4 and 1/4.
    two = bradley_terry([("x", "y", "A")] * 3 + [("x", "y", "B")], CONFIG)
    assert two.values == pytest.approx({"x": 0.75, "y": 0.25})
    # A perfect cycle: equal strengths.
    cycle = [("a", "b", "A"), ("b", "c", "A"), ("c", "a", "A")] * 2
    assert bradley_terry(cycle, CONFIG).values == pytest.approx({s: 1 / 3 for s in "abc"})
    # Four systems, uneven schedules, ties: the MM fit equals a Newton fit of the likelihood.
    rng = np.random.default_rng(11)
    truth = {"w": 4.0, "x": 2.0, "y": 1.0, "z": 0.5}
    outcomes = []
    for _ in range(400):
        first, second = rng.choice(list(truth), size=2, replace=False)
        p = truth[first] / (truth[first] + truth[second])
        draw = rng.random()
        outcomes.append((str(first), str(second),
                         "TIE" if draw < 0.1 else "A" if draw < 0.1 + 0.9 * p else "B"))
    fitted = bradley_terry(outcomes, CONFIG)
    assert fitted.reason is None
    assert fitted.values == pytest.approx(_newton_fit(outcomes, sorted(truth)), abs=1e-8)
    assert sorted(fitted.values, key=fitted.values.get) == ["z", "y", "x", "w"]


def test_bradley_terry_says_why_there_are_no_strengths():
    unbeaten = bradley_terry([("x", "y", "A"), ("x", "z", "A"), ("y", "z", "TIE")], CONFIG)
    assert unbeaten.values == {} and unbeaten.reason.startswith("x won every comparison")


def test_position_bias_counts_changed_answers_and_those_that_went_to_the_first_shown():
    answers = {"fair": {"i1": [("A", "B")], "i2": [("B", "A")]},
               "swayed": {"i1": [("A", "A")], "i2": [("B", "A")], "i3": [("TIE", None)]}}
    rows = {r.critic: r for r in position_bias(answers, CONFIG)}
    assert (rows["fair"].pairs, rows["fair"].changed, rows["fair"].rate) == (2, 0, 0.0)
    # i3 was answered in one order only: not a pair.
    assert (rows["swayed"].pairs, rows["swayed"].changed, rows["swayed"].to_first) == (2, 1, 1)


# -- the panel ------------------------------------------------------------------------------


@pytest.mark.parametrize(("pairwise", "message"), [
    ({"first_field": "a"}, "pairwise.second_field: a comparison needs the field of response B"),
    ({"first_field": "a", "second_field": "b", "first_system": "s"},
     "pairwise.first_system / second_system: name the system field of both"),
    ({"first_field": "a", "second_field": "b", "tie_label": "SAME"},
     "pairwise: the scale needs the labels A, B, SAME"),
    ({"first_field": "a", "second_field": "c"},
     r"critics\[0\].prompt_template: a pairwise critic must show both responses"),
])
def test_the_panel_refuses_a_comparison_it_cannot_make(pairwise, message):
    with pytest.raises(ConfigError, match=message):
        Panel.model_validate({"name": "p", "scale": {"kind": "nominal", "labels": ["A", "B", "TIE"]},
                    "pairwise": pairwise,
                    "critics": [{"name": "c", "model": "m", "prompt_template": "{a} vs {b}"}]})


def test_a_pairwise_field_that_is_no_column_is_named_with_the_columns(tmp_path, capsys):
    """`first_field: output1` on data without that column: the answer names the column and the
    columns there are (it said "use {output1} and {output2} in its prompt"), from the panel
    file on the command line, and from a built panel checked against the data."""
    from judging.runs.commands.cli import main

    data = tmp_path / "pairs.csv"
    data.write_text("id,question,response_a,response_b\np1,q?,one,two\n", encoding="utf-8")
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        "name: p\nscale: {kind: nominal, labels: [A, B, TIE]}\n"
        "pairwise: {first_field: output1, second_field: output2}\n"
        "critics:\n  - {name: c, model: sim-careful, prompt_template: '{question} A: "
        "{response_a} B: {response_b}'}\n", encoding="utf-8")
    assert main(["judge", "--data", str(data), "--panel", str(panel), "--quiet",
                 "--db", str(tmp_path / "p.db")]) == 2
    said = capsys.readouterr().err
    assert ("pairwise.first_field: the items have no column 'output1'; name the column that "
            "holds response A. Columns available: question, response_a, response_b.") in said
    assert "use {output1}" not in said

    built = Panel.model_validate({
        "name": "p", "scale": {"kind": "nominal", "labels": ["A", "B", "TIE"]},
        "pairwise": {"first_field": "output1", "second_field": "output2"},
        "critics": [{"name": "c", "model": "m", "prompt_template": "{output1} vs {output2}"}]})
    with pytest.raises(ConfigError, match=r"pairwise.first_field: the items have no column "
                                          r"'output1'.*Columns available: question, response_a"):
        built.check_fields(["question", "response_a", "response_b"])
    with pytest.raises(ConfigError, match=r"pairwise.first_field is 'output1' and "
                                          r"pairwise.second_field is 'output2', neither of which "
                                          r"the prompt shows \(it shows \{question\}"):
        Panel.model_validate({
            "name": "p", "scale": {"kind": "nominal", "labels": ["A", "B", "TIE"]},
            "pairwise": {"first_field": "output1", "second_field": "output2"},
            "critics": [{"name": "c", "model": "m",
                         "prompt_template": "{question} {response_a} {response_b}"}]})


# -- end to end -----------------------------------------------------------------------------


def test_a_position_biased_critic_is_caught_and_a_fair_one_is_not(tmp_path, simulator_factory,
                                                                   capsys):
    data = tmp_path / "pairs.csv"
    rows = [("p1", "excellent answer", "poor answer", "A"),
            ("p2", "poor reply", "excellent reply", "B"),
            ("p3", "fine answer", "fine answer too", "TIE")]
    data.write_text("id,question,answer_a,answer_b,gold\n" + "".join(
        f"{i},q?,{a},{b},{g}\n" for i, a, b, g in rows), encoding="utf-8")
    server = simulator_factory(
        profiles={"fair": Profile(accuracy=1.0), "swayed": Profile(accuracy=1.0,
                                                                   position_bias=1.0)},
        gold={"excellent answer": "0.9", "poor answer": "0.2", "poor reply": "0.2",
              "excellent reply": "0.9", "fine answer": "0.5", "fine answer too": "0.52"})
    prompt = "Q: {question} A: {answer_a} B: {answer_b}"
    panel = Panel.model_validate({
        "name": "pairs", "scale": {"kind": "nominal", "labels": ["A", "B", "TIE"]},
        "pairwise": {"first_field": "answer_a", "second_field": "answer_b"},
        "critics": [{"name": n, "vendor": "custom", "base_url": server.base_url, "model": n,
                     "prompt_template": prompt} for n in ("fair", "swayed")]})
    db_path = tmp_path / "p.db"
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(data, id_column="id", gold_column="gold"),
                           name="pairs")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(str(db_path), run_id, concurrency=4).wait(60)
    assert server.stats()["total"] == 2 * 2 * 3  # two critics, two orders, three items

    verdicts = {(v["critic"], v["item_id"]): v["label"] for v in db.query(
        "SELECT critic, item_id, label FROM calls WHERE run_id = ?", [run_id])}
    assert [verdicts[("fair", i)] for i in ("p1", "p2", "p3")] == ["A", "B", "TIE"]
    # Always "A", whichever answer came first: never consistent, so a tie every time.
    assert [verdicts[("swayed", i)] for i in ("p1", "p2", "p3")] == ["TIE", "TIE", "TIE"]
    swapped = db.execute("SELECT raw_request FROM call_steps WHERE run_id = ? AND critic = 'fair'"
                         " AND item_id = 'p1' AND swapped", [run_id]).fetchone()[0]
    assert swapped.index("poor answer") < swapped.index("excellent answer")  # B shown first

    report = run_pairwise(db, run_id)
    bias = {b.critic: b for b in report.bias}
    assert (bias["fair"].rate, bias["swayed"].rate, bias["swayed"].to_first) == (0.0, 1.0, 3)
    assert order_answers(db, run_id)["swayed"]["p1"] == [("A", "A")]

    # Against gold A, B, TIE. Fair: right in both orders on all three. Swayed says A both
    # times: p1 right only with A first, p2 only when swapped (A there is B here), p3 never:
    # right in both orders 0 of 3, the two orders' accuracies 1/3 and 1/3, their mean 1/3.
    gold = {g.critic: g for g in report.vs_gold}
    assert (gold["fair"].pairs, gold["fair"].both_rate, gold["fair"].mean_rate) == (3, 1.0, 1.0)
    assert (gold["swayed"].both, gold["swayed"].first, gold["swayed"].swapped) == (0, 1, 1)
    assert (gold["swayed"].both_rate, gold["swayed"].mean_rate) == (0.0, pytest.approx(1 / 3))
    assert cli_main(["stats", str(run_id), "--resamples", "10", "--db", str(db_path)]) == 0
    out = capsys.readouterr().out
    assert "right in both orders" in out and "mean of the two orders" in out
    rows = {line.split()[0]: line.split()[1:] for line in
            out.split("Against the gold labels, asked in both orders:")[1].splitlines()[2:4]}
    assert rows == {"fair": ["100.0%", "100.0%", "3"], "swayed": ["0.0%", "33.3%", "3"]}
    assert "    swayed           100.0% of 3 pairs" in out  # position bias, in the same format


def test_the_pairwise_demo_ranks_its_systems_by_their_hidden_quality(tmp_path):
    db_path = tmp_path / "demo.db"
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(pairwise_dataset_path(), id_column="id",
                                            gold_column="gold"), name="pairwise demo")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(pairwise_panel_path()))
    assert JobRegistry().start_run(str(db_path), run_id).wait(120)
    assert get_run(db, run_id)["status"] == "done"
    report = run_pairwise(db, run_id)
    assert report.comparisons == 60
    assert [r.system for r in report.systems] == ["atlas", "breeze", "comet"]
    strengths = report.strengths.values
    assert strengths["atlas"] > strengths["breeze"] > strengths["comet"]
    bias = {b.critic: b.rate for b in report.bias}
    assert bias["biased"] > bias["careful"]  # the demo's sim-biased reads the first answer
    assert pathlib.Path(pairwise_dataset_path()).read_text(encoding="utf-8").count("\n") == 61
    assert len([v for v in demo_gold().values() if v.replace(".", "").isdigit()]) >= 60


def test_each_critic_against_gold_in_both_orders_by_hand():
    # i1 gold A: said A, then B on the swapped pair (A read back): right in both.
    # i2 gold B: said A both times (B, then A read back): right only when swapped.
    # i3 gold TIE: TIE, then B (A read back): right only with A first.
    # i4 no gold; i5 gold A answered in one order only: both left out.
    answers = {"c": {"i1": [("A", "B")], "i2": [("A", "A")], "i3": [("TIE", "B")],
                     "i4": [("A", "B")], "i5": [("A", None)]}}
    gold = {"i1": "A", "i2": "B", "i3": "TIE", "i5": "A"}
    (row,) = order_accuracy(answers, gold, CONFIG)
    assert (row.pairs, row.both, row.first, row.swapped) == (3, 1, 2, 2)
    assert row.both_rate == pytest.approx(1 / 3)
    assert row.mean_rate == pytest.approx(4 / 6)  # (2/3 + 2/3) / 2
    assert order_accuracy(answers, {}, CONFIG) == []
