"""`judging.runs.stored.run_report.run_agreement_report`: the report of a stored run, as the Agreement page
and `jurybox stats` show it, assembled from the database."""

from __future__ import annotations

import pytest

from judging.agreement import krippendorff_alpha
from judging.analysis.agreement_report import agreement_report, as_numbers
from judging.panel.panel_files import load_panel
from judging.runs.background.jobs import prepare_run
from judging.runs.stored.run_report import run_agreement_report
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict, VoteOutcome
from judging.voting.strategies import VotingConfig
from storage.datasets.dataset_store import save_dataset
from storage.db import NotFoundError
from storage.results.calls import write_verdicts
from storage.results.consensus import consensus_values, load_consensus, write_consensus
from storage.results.runs import get_run
from storage.reviewing.overrides import add_override, human_labels
from storage.reviewing.review_queue import gold_labels, ratings_frame
from tests.fixtures_storage import FakeParsed, tiny_panel

SCORES = {  # item -> (critic_0, critic_1, critic_2); None = a failed call
    "a": (0.9, 0.8, 0.9),
    "b": (0.1, 0.3, None),
    "c": (0.5, 0.9, 0.2),
    "d": (0.0, 0.0, 0.1),
}
GOLD = {"a": "0.9", "b": "0.1", "c": "0.5", "d": "zero"}  # "zero" is not a figure: not counted


def _score_run(db) -> int:
    items = [Item(id=i, fields={"text": f"item {i}"}, gold=GOLD[i]) for i in SCORES]
    parsed = FakeParsed(items=items, columns=["id", "text", "gold"], fields=["text"],
                        content_hash="score-run")
    dataset_id = save_dataset(db, parsed).id
    panel = tiny_panel("http://127.0.0.1:9/v1").model_copy(
        update={"scale": Scale(kind="score", min=0, max=1),
                "voting": VotingConfig(strategy="mean")}
    )
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel)
    decided = []
    for item_id, scores in SCORES.items():
        verdicts = [
            Verdict(critic=f"critic_{n}", item_id=item_id, score=s) if s is not None else
            Verdict(critic=f"critic_{n}", item_id=item_id, failure=FailureKind.ERROR,
                    message="HTTP 500")
            for n, s in enumerate(scores)
        ]
        valid = [s for s in scores if s is not None]
        outcome = VoteOutcome(consensus=sum(valid) / len(valid), agreement=1.0,
                              disagreement=len(set(valid)) > 1, counts={},
                              failed=len(scores) - len(valid))
        write_verdicts(db, run_id, verdicts)
        decided.append(PanelVerdict(item_id, outcome, verdicts, "mean"))
    write_consensus(db, run_id, decided)
    return run_id


def test_a_score_run_uses_its_scale_and_reads_text_labels_as_figures(db):
    run_id = _score_run(db)
    add_override(db, run_id, "c", "0.5", note="checked", reviewer="ana")

    report = run_agreement_report(db, run_id, resamples=50, seed=1)

    assert report.level == "interval"
    assert report.critics == ["critic_0", "critic_1", "critic_2"]
    expected = krippendorff_alpha([list(s) for s in SCORES.values()], level="interval")
    assert report.alpha.value == pytest.approx(expected)
    # Gold and overrides are stored as text; on a score scale they are compared as figures.
    assert report.vs_gold["critic_0"].n == 3  # "zero" is left out, not counted as a miss
    assert report.vs_gold["critic_0"].value == pytest.approx(1.0)
    assert report.vs_humans["critic_0"].n == 1 and report.vs_humans["critic_0"].value == 1.0
    assert report.failed["critic_2"] == 1
    assert report.bootstrap.resamples == 50 and report.bootstrap.seed == 1


def test_humans_given_by_the_caller_replace_the_stored_ones(db):
    run_id = _score_run(db)
    add_override(db, run_id, "c", "0.5", note="", reviewer="ana")
    report = run_agreement_report(db, run_id, resamples=20, humans={"a": "0.1", "b": "0.1"})
    assert report.vs_humans["critic_0"].n == 2
    assert report.vs_humans["critic_0"].value == pytest.approx(0.5)


def test_an_unknown_run_raises_not_found(db):
    with pytest.raises(NotFoundError, match="no run with id 42"):
        run_agreement_report(db, 42)


def test_the_decisions_the_report_reads_are_the_stored_ones(db):
    run_id = _score_run(db)
    scores = consensus_values(db, run_id, numeric=True)
    assert scores == {row["item_id"]: row["score"] for row in load_consensus(db, run_id)}
    assert scores["b"] == pytest.approx(0.2) and len(scores) == 4
    # The score run stores its decisions as scores: as labels there are none to read.
    assert consensus_values(db, run_id, numeric=False) == {
        row["item_id"]: row["consensus"] for row in load_consensus(db, run_id)
        if row["consensus"] is not None}


def _long_path_report(db, run_id: int, **kwargs):
    """The report as `run_agreement_report` assembled it before `ratings_grid`: every call read
    as a long table (`ratings_frame`), failures blanked, pivoted by `ratings_table`."""
    run = get_run(db, run_id)
    panel = load_panel(run["panel_yaml"])
    numeric = panel.scale.is_numeric
    frame = ratings_frame(db, run_id)
    value = (frame["score"] if numeric else frame["label"]).astype(object)
    value = value.where(frame["failure"].isna() & value.notna(), None)
    long = [(i, c, v) for i, c, v in zip(frame["item_id"], frame["critic"], value)]
    humans, gold = human_labels(db, run_id), gold_labels(db, run_id)
    if numeric:
        humans, gold = as_numbers(humans), as_numbers(gold)
    return agreement_report(long, scale=panel.scale, critics=list(run["critics"]),
                            consensus=consensus_values(db, run_id, numeric=numeric),
                            overrides=humans, gold=gold, **kwargs)


def _label_run(db) -> int:
    """Items stored in an order that is not their ids' order; a failure, a critic that never
    answered one item, a verdict from a critic the panel no longer lists, and an item never
    judged (q7: not a row of the report)."""
    ids = ["z9", "a1", "m5", "b2", "y8", "c3"]
    unjudged = Item(id="q7", fields={"text": "item q7"}, gold="KEEP")
    labels = ["KEEP", "REJECT", "SPLIT", "MERGE"]
    items = [Item(id=i, fields={"text": f"item {i}"}, gold=labels[n % 4])
             for n, i in enumerate(ids)]
    parsed = FakeParsed(items=[*items[:3], unjudged, *items[3:]], columns=["id", "text", "gold"],
                        fields=["text"], content_hash="label-run")
    dataset_id = save_dataset(db, parsed).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel("http://127.0.0.1:9/v1"))
    verdicts = []
    for n, item_id in enumerate(ids):
        for c in range(3):
            if (n, c) == (3, 2):
                continue  # never answered
            if (n, c) == (1, 0):
                verdicts.append(Verdict(critic="critic_0", item_id=item_id,
                                        failure=FailureKind.PARSE_FAIL, message="no label"))
                continue
            verdicts.append(Verdict(critic=f"critic_{c}", item_id=item_id,
                                    label=labels[(n + (c == 2) * (n % 2)) % 4]))
    verdicts.append(Verdict(critic="retired", item_id="c3", label="KEEP"))
    write_verdicts(db, run_id, verdicts)
    write_consensus(db, run_id, [
        PanelVerdict(item_id, VoteOutcome(consensus=labels[n % 4], agreement=1.0,
                                          disagreement=False, counts={}, failed=0), [], "x")
        for n, item_id in enumerate(ids)])
    return run_id


@pytest.mark.parametrize("make_run", [_label_run, _score_run])
def test_the_report_read_as_a_grid_is_the_report_read_call_by_call(db, make_run):
    run_id = make_run(db)
    add_override(db, run_id, "b2" if make_run is _label_run else "c",
                 "SPLIT" if make_run is _label_run else "0.5", note="", reviewer="ana")

    grid = run_agreement_report(db, run_id, resamples=200, seed=3)
    long = _long_path_report(db, run_id, resamples=200, seed=3)

    assert grid.items == long.items  # dataset order, not id order
    assert grid.critics == long.critics and grid.labels == long.labels
    assert grid.alpha == long.alpha
    assert (grid.bootstrap.low, grid.bootstrap.high) == (long.bootstrap.low, long.bootstrap.high)
    assert (grid.bootstrap.distribution == long.bootstrap.distribution).all()
    assert grid.per_item_alpha.equals(long.per_item_alpha)
    assert (grid.matrix.codes == long.matrix.codes).all()
    assert grid.failed == long.failed and grid.leave_one_out == long.leave_one_out
    assert (grid.vs_consensus, grid.vs_humans, grid.vs_gold) == \
        (long.vs_consensus, long.vs_humans, long.vs_gold)
    assert (grid.fleiss, grid.ac1, grid.percent) == (long.fleiss, long.ac1, long.percent)
    if make_run is _label_run:
        assert grid.items == ["z9", "a1", "m5", "b2", "y8", "c3"]
        assert grid.failed == {"critic_0": 1, "critic_1": 0, "critic_2": 1}
        assert grid.dawid_skene is not None and long.dawid_skene is not None
        assert (grid.dawid_skene.posteriors == long.dawid_skene.posteriors).all()
        assert grid.kappa is not None and long.kappa is not None
        assert (grid.kappa.values == long.kappa.values).all()
