"""An audit sample's design (`judging.analysis.audit_design`), on a real SQLite file holding the
finished demo run: a new sample is stratified by the panel's confidence (the Dawid-Skene
posterior of its consensus, from the critics' labels only) and queued by plan, never by the
labels' values; a sample drawn the old way, by agreement, keeps its estimate and its adaptive
queue exactly; the kept posteriors are recomputed when the verdicts change."""

from __future__ import annotations

import pathlib
import shutil
from collections import Counter

import numpy as np
import pytest

from judging.analysis.audit_design import design_cuts, queue_plan
from judging.analysis.audit_stats import (
    STRATA,
    AuditSample,
    audit_estimate,
    draw_within,
    next_strata,
    proportional_allocation,
    stratified_mean,
    stratum_codes,
)
from judging.analysis.audit_strata import (
    CONFIDENCE_STRATA,
    confidence_codes,
    confidence_from_labels,
)
from judging.errors import StorageError
from judging.panel.panel_files import load_panel
from judging.runs.stored import kept_figures as figures
from judging.runs.stored.audit_live import LiveAudit
from judging.runs.stored.audit_run import (
    draw_audit_sample,
    refresh_label_next,
    run_audit,
    run_population,
    stats_population,
)
from storage.db import open_db
from storage.results.item_confidence import confidence_of
from storage.results.run_figures import load_figures, save_figures
from storage.results.runs import get_run
from storage.reviewing import audit as store
from storage.reviewing.overrides import add_override
from storage.reviewing.review_queue import gold_labels, ratings_grid, review_table
from tests.fixtures_app import shown

AGREEMENT_CUTS = design_cuts("agreement")
CONFIDENCE_CUTS = design_cuts("confidence")


def _posterior_by_hand(db, run_id: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Each item's posterior, computed apart from the app's path: the critics' labels as the
    agreement report reads them, the consensus from the review table."""
    run = get_run(db, run_id)
    grid = ratings_grid(db, run_id, list(run["critics"]), numeric=False)
    table, _ = review_table(db, run_id, limit=None)
    consensus = dict(zip(table["item_id"], table["consensus"], strict=True))
    ids = [str(i) for i in grid.index]
    posterior = confidence_from_labels(
        grid.to_numpy().tolist(), [consensus.get(i) for i in ids],
        list(load_panel(run["panel_yaml"]).scale.labels))
    return dict(zip(ids, posterior.tolist(), strict=True))


def test_a_new_sample_is_stratified_by_confidence_with_weights_that_sum_to_the_run(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    drawn = draw_audit_sample(db, run_id, 60, seed=1)
    assert drawn.design == "confidence" and sum(drawn.added.values()) == 60
    rows = store.audit_items(db, run_id, CONFIDENCE_CUTS)
    assert {r["design"] for r in rows} == {"confidence"}
    # Each item's stratum is its posterior's, cut at 0.95 and 0.80, computed apart here.
    posterior = _posterior_by_hand(db, run_id)
    kept = confidence_of(db, run_id)
    assert set(kept) == {i for i, q in posterior.items() if q == q}
    for item_id, q in kept.items():
        assert q == pytest.approx(posterior[item_id], abs=1e-12)
    codes = confidence_codes(np.array(list(posterior.values())))
    sizes = Counter(CONFIDENCE_STRATA[c] for c in codes)
    n_items = len(review_table(db, run_id, limit=None)[0])
    assert sum(sizes.values()) == n_items
    per_stratum = Counter(r["stratum"] for r in rows)
    for row in rows:
        assert row["stratum"] == CONFIDENCE_STRATA[row["code"]]
        assert row["stratum"] == CONFIDENCE_STRATA[codes[list(posterior).index(row["item_id"])]]
        assert row["stratum_size"] == sizes[row["stratum"]]
    # Every item of the sample stands for its stratum's items: the weights sum to the run.
    assert sum(r["weight"] for r in rows) == pytest.approx(n_items)
    for name in per_stratum:
        assert sum(r["weight"] for r in rows if r["stratum"] == name) == \
            pytest.approx(sizes[name])
    # More draws keep the design; another one is refused (the weights depend on it).
    assert draw_audit_sample(db, run_id, 10, seed=2).design == "confidence"
    with pytest.raises(StorageError, match="drawn by confidence"):
        draw_audit_sample(db, run_id, 10, seed=3, design="agreement")
    audit = run_audit(db, run_id)
    assert audit.design == "confidence"
    assert "how sure the panel is of its label" in shown(audit.design_sentence())


def test_the_posterior_never_reads_a_human_label_and_is_recomputed_when_stale(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    stamp = figures.verdicts_stamp(get_run(db, run_id))
    before = confidence_of(db, run_id)
    assert before, "the worker keeps the posteriors when the run finishes"
    # Reviews of every kind, then the verdicts' state moves on: fitted again, the same.
    gold = gold_labels(db, run_id)
    for n, item_id in enumerate(list(gold)[:40]):
        add_override(db, run_id, item_id, "MERGE", "", "ann", blind=n % 2 == 0)
    other = (*stamp[:-1], stamp[-1] + 1)
    db.execute("UPDATE item_confidence SET confidence = 0.5 WHERE run_id = ?", [run_id])
    db.conn.commit()
    figures.consensus_confidence(db, run_id, stamp)  # kept for this stamp: not fitted again
    assert set(confidence_of(db, run_id).values()) == {0.5}
    figures.consensus_confidence(db, run_id, other)  # stale for that one: fitted again
    assert confidence_of(db, run_id) == pytest.approx(before)
    assert load_figures(db, run_id, "consensus_confidence", ",".join(map(str, other)))
    # The audit reads them through the run's current stamp: a stale mark is fitted again.
    save_figures(db, run_id, "consensus_confidence", "stale", b"{}")
    db.execute("UPDATE item_confidence SET confidence = 0.5 WHERE run_id = ?", [run_id])
    db.conn.commit()
    draw_audit_sample(db, run_id, 5, seed=4)
    assert confidence_of(db, run_id) == pytest.approx(before)


def _copy(path: pathlib.Path, to: pathlib.Path) -> pathlib.Path:
    import sqlite3

    source, target = sqlite3.connect(path), sqlite3.connect(to)
    source.backup(target)
    source.close()
    target.close()
    return to


def test_the_planned_queue_never_reads_what_the_labels_said(
    demo_db: tuple[pathlib.Path, int], tmp_path: pathlib.Path,
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    draw_audit_sample(db, run_id, 30, seed=5)
    other = open_db(_copy(path, tmp_path / "other.db"))
    gold = gold_labels(db, run_id)
    heads = []
    for _ in range(15):
        queue = refresh_label_next(db, run_id)
        mirror = refresh_label_next(other, run_id)
        # The same item labelled in both, right in one and wrong in the other: the same
        # counts and seed give the same queue, stratum by stratum and item by item.
        assert (queue.ranks, queue.head, queue.stratum, queue.greedy) == \
            (mirror.ranks, mirror.head, mirror.stratum, mirror.greedy)
        head = queue.head
        assert head is not None
        heads.append(queue.stratum)
        add_override(db, run_id, head, gold[head], "", "ann", blind=True)
        wrong = "REJECT" if gold[head] != "REJECT" else "KEEP"
        add_override(other, run_id, head, wrong, "", "ann", blind=True)
    assert run_audit(db, run_id).estimate != run_audit(other, run_id).estimate
    assert LiveAudit(run_id).refresh_queue(db).ranks == \
        LiveAudit(run_id).refresh_queue(other).ranks
    # The plan itself, on made-up sums: only the counts matter (with a prediction).
    sizes, counts, predicted = [300, 100, 50], [30.0, 10.0, 5.0], [0.99, 0.9, 0.5]
    for right in ([30.0, 10.0, 5.0], [15.0, 10.0, 5.0], [30.0, 5.0, 2.0]):
        plan, gains = queue_plan(counts, right, right, sizes, 8,
                                 rng=np.random.default_rng(7), epsilon=0.2,
                                 predicted=predicted)
        first = queue_plan(counts, counts, counts, sizes, 8, rng=np.random.default_rng(7),
                           epsilon=0.2, predicted=predicted)
        assert plan == first[0] and np.array_equal(gains, first[1])
    # Without one (the agreement design's adaptive queue) the values do matter.
    adaptive = {tuple(queue_plan(counts, right, right, sizes, 8, rng=np.random.default_rng(7),
                                 epsilon=0.0, predicted=None)[0])
                for right in ([30.0, 10.0, 5.0], [15.0, 10.0, 5.0])}
    assert len(adaptive) == 2


def _old_sample(db, run_id: int, n: int, seed: int) -> None:  # type: ignore[no-untyped-def]
    """An audit sample drawn the way the app drew before the design was recorded: strata by
    agreement, allocated in proportion, rows written without a design (the column's default,
    as migration 0030 gives the rows it finds)."""
    candidates = store.unsampled_items(db, run_id, AGREEMENT_CUTS)
    sizes = np.bincount([code for _, code in candidates], minlength=3)
    codes = np.array([code for _, code in candidates], dtype=np.int64)
    take = proportional_allocation(sizes, n)
    picked = draw_within(codes, take, np.random.default_rng(seed))
    with db.atomic():
        for order, index in enumerate(picked):
            item_id, code = candidates[int(index)]
            db.execute(
                "INSERT INTO audit_items (run_id, item_id, stratum, stratum_size, weight, source,"
                " draw_order, created_at) VALUES (?, ?, ?, ?, ?, 'draw', ?, '2026-11-01')",
                [run_id, item_id, STRATA[code], int(sizes[code]),
                 float(sizes[code]) / float(take[code]), order])


def test_a_sample_drawn_by_agreement_keeps_its_estimate_and_its_adaptive_queue(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    _old_sample(db, run_id, 40, seed=6)
    assert store.sample_design(db, run_id) == "agreement"
    live = LiveAudit(run_id, stamp=figures.verdicts_stamp(get_run(db, run_id)))
    gold = gold_labels(db, run_id)
    table, _ = review_table(db, run_id, limit=None)
    table = table.set_index("item_id")
    codes_of = dict(zip(table.index, stratum_codes(table["agreement"].astype(float)),
                        strict=True))
    sizes = np.bincount(list(codes_of.values()), minlength=3)
    labelled: list[str] = []
    given: list[str] = []
    for step in range(20):
        queue = refresh_label_next(db, run_id)
        assert live.refresh_queue(db) == queue
        # The old queue, by hand: `next_strata` on the labels' right/wrong, seeded as ever.
        right = np.array([float(table.loc[i, "consensus"] == label)
                          for i, label in zip(labelled, given, strict=True)])
        strata = np.array([codes_of[i] for i in labelled], dtype=np.int64)
        plan = next_strata(right, strata, sizes, 10,
                           rng=np.random.default_rng([run_id, len(labelled)]), epsilon=0.2)
        assert queue.stratum == STRATA[plan[0]] and queue.design == "agreement"
        head = queue.head
        assert head is not None and codes_of[head] == plan[0]
        label = gold[head] if step % 4 else "REJECT"  # some wrong, so the values matter
        given.append(label)
        add_override(db, run_id, head, label, "", "ann", blind=True)
        labelled.append(head)
    # The estimate: the stratified mean over the agreement strata, as before.
    audit = run_audit(db, run_id)
    assert audit.design == "agreement" and live.audit(db) == audit
    right = np.array([float(table.loc[i, "consensus"] == label)
                      for i, label in zip(labelled, given, strict=True)])
    strata = np.array([codes_of[i] for i in labelled], dtype=np.int64)
    assert audit.estimate is not None
    assert audit.estimate.accuracy == stratified_mean(right, strata, sizes, names=list(STRATA))
    run = get_run(db, run_id)
    population = stats_population(run, load_panel(run["panel_yaml"]),
                                  run_population(db, run_id), "agreement")
    assert population.predicted is None and population.strata == STRATA
    said = store.critic_labels(db, run_id, labelled)
    expected = audit_estimate(population, AuditSample(
        strata, [table.loc[i, "consensus"] for i in labelled], list(given),
        {c: [said[i].get(c) for i in labelled] for c in run["critics"]}))
    assert audit.estimate == expected
    assert "unanimous / majority / contested" in shown(audit.design_sentence())
    # It grows by agreement, and never by confidence.
    assert draw_audit_sample(db, run_id, 6, seed=7).design == "agreement"
    with pytest.raises(StorageError, match="drawn by agreement"):
        draw_audit_sample(db, run_id, 6, seed=8, design="confidence")


def test_a_copy_of_the_old_file_is_migrated_with_its_samples_by_agreement(
    demo_db: tuple[pathlib.Path, int], tmp_path: pathlib.Path,
) -> None:
    """The column's default is the old samples' design: a row written without it reads as
    agreement, and a run's sample never mixes designs."""
    path, run_id = demo_db
    db = open_db(path)
    _old_sample(db, run_id, 10, seed=9)
    copy = tmp_path / "copy.db"
    db.close()
    shutil.copyfile(path, copy)
    again = open_db(copy)
    assert {r["design"] for r in store.audit_items(again, run_id, AGREEMENT_CUTS)} == \
        {"agreement"}
    with pytest.raises(StorageError, match="cannot grow by confidence"):
        store.add_audit_items(again, run_id, [{"item_id": "x", "stratum": "sure",
                                               "stratum_size": 1, "weight": 1.0}],
                              source="draw", design="confidence")
