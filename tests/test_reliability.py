"""The critic reliability card and the calibration gate of stored runs (issue 25 part 4), on
real SQLite files holding finished runs of simulated critics over HTTP on 127.0.0.1: the card
reads only blind labels (overrides chosen by contest never move it), counts each critic's
rates as its stored verdicts say, carries the pairwise panel's position bias and the verbosity
figure on the field the critics read (the rubric demo: `answer_a`, not the longer `answer_b`);
`jurybox reliability` prints it; calibration refuses below the reviewers' agreement threshold
and says so, on the library and on the Agreement page."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from judging.analysis.pairwise_stats import position_bias
from judging.errors import DataError
from judging.panel.panel_files import load_panel
from judging.runs.commands.cli import main
from judging.runs.stored.audit_run import draw_audit_sample
from judging.runs.stored.calibrate import calibration_gate, few_shot_panel, run_calibration
from judging.runs.stored.reliability import run_reliability
from judging.runs.stored.run_report import run_verbosity
from storage.datasets.dataset_store import text_field_lengths
from storage.db import open_db
from storage.results.calls import load_verdicts, order_answers
from storage.results.runs import get_run
from storage.reviewing.audit import audit_items
from storage.reviewing.overrides import add_override
from storage.reviewing.review_queue import gold_labels
from tests.fixtures_app import ROOT
from tests.fixtures_matrix import MatrixRun, all_text, widget
from tests.test_app_smoke import no_exception, open_page

DEMO = ROOT / "judging" / "demo"


def _label_blind(db: Any, run_id: int, items: list[str], labels: dict[str, str],
                 reviewer: str = "ann") -> None:
    for item in items:
        add_override(db, run_id, item, labels[item], "", reviewer, blind=True)


def _by_hand(db: Any, run_id: int, humans: dict[str, str], critic: str, label: str
             ) -> tuple[int, int, int, int, int]:
    """(TP, positives, TN, negatives, failed) of `critic` on `label`, from its stored verdicts
    loaded whole (the oracle for the narrow queries the card makes)."""
    said = {v.item_id: (None if v.failure is not None else v.label)
            for v in load_verdicts(db, run_id) if v.critic == critic and v.item_id in humans}
    valid = {i: s for i, s in said.items() if s is not None}
    pos = [i for i in valid if humans[i] == label]
    neg = [i for i in valid if humans[i] != label]
    return (sum(valid[i] == label for i in pos), len(pos), sum(valid[i] != label for i in neg),
            len(neg), len(said) - len(valid))


def test_the_card_reads_blind_labels_only_and_counts_as_the_verdicts_say(
    demo_db: tuple[pathlib.Path, int], capsys: pytest.CaptureFixture[str],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    assert "no item has a blind label yet" in (run_reliability(db, run_id).reason or "")
    gold = gold_labels(db, run_id)
    items = sorted(gold)
    draw_audit_sample(db, run_id, 30, seed=2)
    sampled = [str(r["item_id"]) for r in audit_items(db, run_id, {"unanimous": 1.0 - 1e-9,
                                                                   "majority": 0.5 + 1e-9})]
    blind = sorted(set(items[:140]) | set(sampled[:10]))
    _label_blind(db, run_id, blind, gold)
    card = run_reliability(db, run_id, resamples=300)
    assert card.reason is None and card.blind_items == len(blind)
    assert card.audit_items == len(set(sampled) & set(blind))
    assert [c.critic for c in card.critics] == get_run(db, run_id)["critics"]
    humans = {i: gold[i] for i in blind}
    for critic in card.critics:
        assert [row.label for row in critic.labels] == ["KEEP", "REJECT", "SPLIT", "MERGE"]
        for row in critic.labels:
            tp, pos, tn, neg, failed = _by_hand(db, run_id, humans, critic.critic, row.label)
            assert (row.tpr.agree, row.tpr.n, row.tnr.agree, row.tnr.n) == (tp, pos, tn, neg)
            assert critic.missing == failed
        assert critic.kappa.low is not None and critic.kappa.high is not None
        assert critic.kappa.low <= critic.kappa.value <= critic.kappa.high  # type: ignore[operator]
    assert not card.position_measured and "have no order" in (card.verbosity_reason or "")

    # Trusted exactly where both low ends clear the threshold.
    careful = card.critics[0]
    keep = careful.labels[0]
    edge = min(keep.tpr.low, keep.tnr.low)  # type: ignore[type-var]
    assert "KEEP" in careful.trusted_labels(edge)
    assert "KEEP" not in careful.trusted_labels(edge + 1e-6)
    assert all(not c.trusted_labels(0.99) for c in card.critics)

    # Reviews chosen by contest: wrong, non-blind overrides elsewhere, and a later non-blind
    # change of a blind-labelled item. The card does not move.
    for item in items[200:230]:
        add_override(db, run_id, item, "MERGE" if gold[item] != "MERGE" else "KEEP", "", "bo")
    add_override(db, run_id, blind[0], "SPLIT" if gold[blind[0]] != "SPLIT" else "KEEP", "",
                 "ann")
    assert run_reliability(db, run_id, resamples=300) == card

    assert main(["reliability", str(run_id), "--db", str(path), "--resamples", "300",
                 "--trusted-at", f"{edge:.6f}"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == card.to_text(float(f"{edge:.6f}")).strip()
    assert f"Against {len(blind)} items labelled blind" in out
    assert "careful: " in out and "Cohen's kappa with the humans: " in out
    assert main(["reliability", str(run_id), "--db", str(path), "--trusted-at", "80"]) == 2


@pytest.mark.parametrize("kind", ["pairwise"])
def test_a_pairwise_card_carries_each_critics_position_bias(kind: str, matrix_db: MatrixRun) -> None:
    db, run_id = matrix_db.db, matrix_db.run_id
    gold = gold_labels(db, run_id)
    _label_blind(db, run_id, sorted(gold), gold)
    card = run_reliability(db, run_id, resamples=200)
    panel = load_panel(get_run(db, run_id)["panel_yaml"])
    expected = {b.critic: b for b in position_bias(order_answers(db, run_id), panel.pairwise)}
    assert card.position_measured
    assert {c.critic: c.position for c in card.critics} == expected
    assert all(c.position is not None and c.position.pairs > 0 for c in card.critics)
    assert "Position bias: changed on" in card.to_text()


@pytest.mark.parametrize("kind", ["score"])
def test_a_score_panel_has_no_card_and_says_why(kind: str, matrix_db: MatrixRun) -> None:
    card = run_reliability(matrix_db.db, matrix_db.run_id)
    assert card.critics == [] and "this panel gives scores" in (card.reason or "")


# -- the verbosity probe on the rubric demo --------------------------------------------------


@pytest.fixture(scope="session")
def rubric_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, int]:
    """The rubric demo as its panel file says to run it: every support answer of
    `pairwise_answers.csv` (60), judged by the three simulated critics."""
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from judging.simulator.sim_vendor import shared_simulator
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset

    path = tmp_path_factory.mktemp("rubric") / "rubric.db"
    shared_simulator().reset_stats()  # the same answers whichever tests ran before
    db = open_db(path)
    try:
        parsed = read_dataset(DEMO / "pairwise_answers.csv", id_column="id")
        dataset = save_dataset(db, parsed, name="Support answers")
        run_id = prepare_run(db, dataset_id=dataset.id,
                             panel=load_panel(DEMO / "rubric_panel.yaml"))
        assert JobRegistry().start_run(str(path), run_id).wait(120)
        assert get_run(db, run_id)["status"] == "done"
    finally:
        db.close()
    return path, run_id


def test_verbosity_on_the_rubric_demo_measures_the_answer_the_critics_read(
    rubric_demo: tuple[pathlib.Path, int],
) -> None:
    path, run_id = rubric_demo
    db = open_db(path)
    run = get_run(db, run_id)
    means = text_field_lengths(db, int(run["dataset_id"]))
    # The longest field of the dataset is answer_b, which no critic's prompt shows.
    assert max(means, key=lambda name: means[name]) == "answer_b"
    assert all(set(c.placeholders) == {"question", "answer_a"}
               for c in load_panel(run["panel_yaml"]).critics)
    probe = run_verbosity(db, run_id)
    assert probe.measured == "answer_a" and probe.reason is None
    assert [r.critic for r in probe.rows] == ["careful", "lenient", "strict"]
    assert all(r.rho is not None and r.n == 60 for r in probe.rows)
    # Asked for answer_b, the probe says no critic could be swayed by it.
    other = run_verbosity(db, run_id, "answer_b")
    assert all(r.rho is None and "does not show answer_b" in (r.reason or "")
               for r in other.rows)


# -- the calibration gate ------------------------------------------------------------------


def _two_reviewers(db: Any, run_id: int, gold: dict[str, str], items: list[str],
                   *, disagree: bool) -> None:
    """ann labels `items` with the gold label, bo the same items: the same label, or (when
    `disagree`) another one on two items in three. With a note, so few-shot has examples."""
    labels = ["KEEP", "REJECT", "SPLIT", "MERGE"]
    for n, item in enumerate(items):
        add_override(db, run_id, item, gold[item], "gold", "ann")
        other = labels[(labels.index(gold[item]) + 1) % 4] if disagree and n % 3 else gold[item]
        add_override(db, run_id, item, other, "second look", "bo")


@pytest.mark.parametrize("disagree", [False, True])
def test_calibration_uses_the_labels_only_once_the_reviewers_agree(
    demo_db: tuple[pathlib.Path, int], disagree: bool,
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    gold = gold_labels(db, run_id)
    # Before any overlap, a threshold refuses: their agreement is unknown.
    add_override(db, run_id, sorted(gold)[0], gold[sorted(gold)[0]], "gold", "ann")
    with pytest.raises(DataError, match="no item has been labelled by two reviewers"):
        run_calibration(db, run_id, min_reviewer_alpha=0.667)
    run_calibration(db, run_id)  # no threshold: used as they are
    _two_reviewers(db, run_id, gold, sorted(gold)[1:31], disagree=disagree)
    gate = calibration_gate(db, run_id, 0.667)
    assert gate.n_items == 30 and gate.alpha is not None
    if disagree:
        assert not gate.open and gate.alpha < 0.667
        for call in (lambda: run_calibration(db, run_id, min_reviewer_alpha=0.667),
                     lambda: few_shot_panel(db, run_id, "strict", min_reviewer_alpha=0.667)):
            with pytest.raises(DataError) as refused:
                call()
            assert str(refused.value) == gate.sentence()
            assert "Calibration does not use the human labels yet" in str(refused.value)
        # A threshold the disagreement clears opens it.
        assert calibration_gate(db, run_id, gate.alpha).open
        run_calibration(db, run_id, min_reviewer_alpha=gate.alpha)
    else:
        assert gate.open and gate.alpha == pytest.approx(1.0)
        calibration = run_calibration(db, run_id, min_reviewer_alpha=0.667)
        assert calibration.from_humans > 0
        examples, _ = few_shot_panel(db, run_id, "strict", min_reviewer_alpha=0.667)
        assert examples


def test_the_agreement_page_refuses_calibration_below_the_threshold_and_shows_the_card(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    gold = gold_labels(db, run_id)
    _two_reviewers(db, run_id, gold, sorted(gold)[:30], disagree=True)
    _label_blind(db, run_id, sorted(gold)[100:220], gold, reviewer="cy")
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    text = all_text(at)
    assert "Critic reliability against blind labels" in text
    assert "Against 120 items labelled blind" in text
    assert len(at.table) == len(get_run(db, run_id)["critics"])  # one table per critic
    assert "Calibration: what the reviews teach the panel" in text
    assert "suggested weight" in text  # the gate is off: calibration shown
    gate_toggle = widget(at, "toggle", "Use the human labels only when the reviewers agree")
    gate_toggle.set_value(True).run()
    no_exception(at)
    refused = [i.value for i in at.info]
    assert any("Calibration does not use the human labels yet" in str(v) for v in refused)
    assert "suggested weight" not in all_text(at)
    widget(at, "number_input", "Reviewers' alpha at least").set_value(-1.0).run()
    no_exception(at)
    text = all_text(at)
    assert "The human labels are used: the reviewers' alpha on the 30 items" in text
    assert "suggested weight" in text


