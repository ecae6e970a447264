"""A run's figures kept in its database (issue 25 part 6): the worker keeps the critics' report
and the audit's population when a run finishes; the Agreement page and the live audit read
them instead of computing them; the stored report is the computed one, figure for figure; a
stale stamp or unreadable bytes mean they are computed again."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from judging.analysis.agreement_report import with_humans
from judging.analysis.report_codec import CodecError, decode_report, encode_report
from judging.runs.stored import kept_figures as figures
from judging.runs.stored.audit_live import LiveAudit
from judging.runs.stored.run_report import run_agreement_report
from storage.db import open_db
from storage.results.run_figures import load_figures, save_figures
from storage.results.runs import get_run
from storage.reviewing.review_queue import gold_labels


def _same_report(a, b) -> None:  # type: ignore[no-untyped-def]
    assert a.to_text() == b.to_text()
    assert a.critic_table().equals(b.critic_table())
    assert a.per_item_alpha.equals(b.per_item_alpha) and a.items == b.items
    assert (a.alpha, a.fleiss, a.ac1, a.percent) == (b.alpha, b.fleiss, b.ac1, b.percent)
    assert np.array_equal(a.bootstrap.distribution, b.bootstrap.distribution)
    assert (a.bootstrap.low, a.bootstrap.high) == (b.bootstrap.low, b.bootstrap.high)
    assert np.array_equal(a.kappa.values, b.kappa.values, equal_nan=True)
    assert dict(a.kappa.reasons) == dict(b.kappa.reasons)
    assert np.array_equal(a.dawid_skene.posteriors, b.dawid_skene.posteriors)
    assert a.dawid_skene_accuracies == b.dawid_skene_accuracies
    assert np.array_equal(a.matrix.codes, b.matrix.codes) and a.matrix.labels == b.matrix.labels
    assert a.leave_one_out == b.leave_one_out and a.vs_consensus == b.vs_consensus


def test_a_finished_run_keeps_its_figures_and_the_kept_report_is_the_computed_one(
    demo_db: tuple[pathlib.Path, int], monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    stamp = figures.verdicts_stamp(get_run(db, run_id))
    key = ",".join(map(str, stamp))
    # The demo run was made by the worker: it kept both when the run finished.
    kept = load_figures(db, run_id, "report", key)
    # With no audit sample drawn, the population kept is that of a new sample's design, and the
    # posteriors its strata are cut from are kept with it.
    assert kept is not None
    assert load_figures(db, run_id, "audit_population_confidence", key) is not None
    assert load_figures(db, run_id, "consensus_confidence", key) is not None
    assert load_figures(db, run_id, "audit_population", key) is None
    computed = run_agreement_report(db, run_id, resamples=figures.RESAMPLES, seed=figures.SEED,
                                    humans={})
    _same_report(decode_report(kept), computed)
    # With the humans, from the kept encoded ratings: the figures of the computed report.
    humans = dict(list(gold_labels(db, run_id).items())[:25])
    assert with_humans(decode_report(kept), humans).vs_humans == \
        with_humans(computed, humans).vs_humans

    # Read, not computed: the page's path never calls the report's computation.
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the kept report should have been read")

    monkeypatch.setattr(figures, "run_agreement_report", refuse)
    _same_report(figures.critics_report(db, run_id, stamp), computed)
    from storage.reviewing import audit as store

    confidence_cuts = {"sure": 0.95, "likely": 0.80}
    expected = store.audit_population(db, run_id, confidence_cuts)
    expected["predicted"] = store.confidence_sums(db, run_id, confidence_cuts)
    assert figures.audit_population(db, run_id, stamp, "confidence") == expected
    # An agreement sample's population (an old sample) is computed on first read, then kept.
    assert figures.audit_population(db, run_id, stamp) == store.audit_population(
        db, run_id, {"unanimous": 1.0 - 1e-9, "majority": 0.5 + 1e-9})
    assert load_figures(db, run_id, "audit_population", key) is not None


def test_stale_or_unreadable_figures_are_computed_again(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    stamp = figures.verdicts_stamp(get_run(db, run_id))
    other = (*stamp[:-1], stamp[-1] + 1)  # the verdicts changed since
    assert load_figures(db, run_id, "report", ",".join(map(str, other))) is None
    report = figures.critics_report(db, run_id, other)
    assert load_figures(db, run_id, "report", ",".join(map(str, other))) is not None
    save_figures(db, run_id, "report", ",".join(map(str, other)), b"not a report")
    _same_report(figures.critics_report(db, run_id, other), report)


def test_bytes_that_are_not_a_report_are_refused_with_a_sentence(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    with pytest.raises(CodecError, match="not a stored agreement report"):
        decode_report(b"\x00\x01 garbage")
    path, run_id = demo_db
    db = open_db(path)
    data = encode_report(run_agreement_report(db, run_id, resamples=10, seed=0, humans={}))
    assert isinstance(decode_report(data).items, list)
    with pytest.raises(CodecError, match="does not store"):
        encode_report(object())  # type: ignore[arg-type]


def test_the_live_audit_reads_the_kept_population(
    demo_db: tuple[pathlib.Path, int], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from judging.runs.stored.audit_run import draw_audit_sample, run_audit
    from storage.reviewing import audit as store
    from storage.reviewing.overrides import add_override

    path, run_id = demo_db
    db = open_db(path)
    stamp = figures.verdicts_stamp(get_run(db, run_id))
    draw_audit_sample(db, run_id, 12, seed=2)
    gold = gold_labels(db, run_id)
    for row in store.audit_items(db, run_id, {"unanimous": 1.0 - 1e-9, "majority": 0.5 + 1e-9}):
        add_override(db, run_id, row["item_id"], gold[row["item_id"]], "", "ann", blind=True)
    expected = run_audit(db, run_id)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the kept population should have been read")

    monkeypatch.setattr(store, "audit_population", refuse)
    monkeypatch.setattr(figures, "read_population", refuse)
    assert LiveAudit(run_id, stamp=stamp).audit(db) == expected
