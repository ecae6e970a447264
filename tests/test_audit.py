"""The audit sample of a stored run (issue 25 parts 1 and 2), on a real SQLite file holding the
finished demo run: drawing the sample keeps its design, blind labels of sample items give the
estimate, reviews chosen by contest never reach it, and the label-next queue orders Review.
Also the pages: Agreement shows the corrected accuracy with what it used; Review draws a
sample and opens the queue."""

from __future__ import annotations

import pathlib
from collections import Counter

import numpy as np
import pytest

from judging.analysis.audit_design import design_sentence, saving_sentence
from judging.analysis.audit_stats import STRATA, stratified_mean, stratum_codes
from judging.analysis.audit_strata import CONFIDENCE_STRATA
from judging.errors import StorageError
from judging.runs.stored.audit_run import draw_audit_sample, refresh_label_next, run_audit, usable_labels
from storage.db import open_db
from storage.results.runs import set_run_status
from storage.reviewing.audit import audit_items
from storage.reviewing.overrides import add_override
from storage.reviewing.review_queue import gold_labels, item_position, review_table
from tests.fixtures_app import shown
from tests.test_app_smoke import all_text, no_exception, open_page, save_button

CUTS = {"unanimous": 1.0 - 1e-9, "majority": 0.5 + 1e-9}


def _consensus(db, run_id: int):  # type: ignore[no-untyped-def]
    frame, _ = review_table(db, run_id, limit=None)
    return frame.set_index("item_id")


def test_a_draw_keeps_the_stratum_its_size_and_the_weight_of_each_item(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    # The design of samples drawn before "confidence" (test_audit_design.py has the new one).
    drawn = draw_audit_sample(db, run_id, 60, seed=1, design="agreement")
    assert sum(drawn.added.values()) == 60
    rows = audit_items(db, run_id, CUTS)
    assert len(rows) == 60 and len({r["item_id"] for r in rows}) == 60
    table = _consensus(db, run_id)
    sizes = Counter(STRATA[c] for c in stratum_codes(table["agreement"].astype(float)))
    per_stratum = Counter(r["stratum"] for r in rows)
    assert per_stratum == Counter({k: v for k, v in drawn.added.items() if v})
    for row in rows:
        # Drawn from the stratum its agreement puts it in; the stratum's size and the weight
        # (items of the stratum per sampled item) kept with it.
        assert STRATA[row["code"]] == row["stratum"]
        assert row["stratum_size"] == sizes[row["stratum"]]
        assert row["weight"] == pytest.approx(sizes[row["stratum"]] / per_stratum[row["stratum"]])
        assert row["source"] == "draw" and row["human"] is None
    # Proportional: each stratum's share of the sample is its share of the run, to one item.
    for name, n in per_stratum.items():
        assert abs(n - 60 * sizes[name] / len(table)) <= 1
    # A second draw adds other items only.
    draw_audit_sample(db, run_id, 20, seed=2)
    again = audit_items(db, run_id, CUTS)
    assert len({r["item_id"] for r in again}) == 80
    assert [r["draw_order"] for r in again] == list(range(80))


def test_a_draw_is_refused_while_the_run_is_running_or_for_no_items(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    with pytest.raises(StorageError, match="at least one item"):
        draw_audit_sample(db, run_id, 0)
    set_run_status(db, run_id, "running")
    with pytest.raises(StorageError, match="draw the audit sample once it has finished"):
        draw_audit_sample(db, run_id, 10)
    with pytest.raises(StorageError, match="draw the audit sample once it has finished"):
        refresh_label_next(db, run_id)  # the queue draws items too
    assert audit_items(db, run_id, CUTS) == []


def test_blind_labels_of_the_sample_give_the_estimate_and_contest_reviews_never_enter(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    assert run_audit(db, run_id).estimate is None  # nothing drawn yet: a reason instead
    assert "no audit sample yet" in (run_audit(db, run_id).reason or "")
    draw_audit_sample(db, run_id, 90, seed=3, design="agreement")
    gold = gold_labels(db, run_id)
    sample = audit_items(db, run_id, CUTS)
    labelled = sample[:70]
    for row in labelled:  # the reviewer's blind label is the gold label
        add_override(db, run_id, row["item_id"], gold[row["item_id"]], "", "ann", blind=True)
    table = _consensus(db, run_id)
    before = run_audit(db, run_id)
    assert before.estimate is not None
    # By hand: per stratum, the audited items' share of consensus == blind label, weighted by
    # the strata's sizes in the run.
    codes = stratum_codes(table["agreement"].astype(float))
    sizes = np.bincount(codes, minlength=3)
    right = np.array([float(table.loc[r["item_id"], "consensus"] == gold[r["item_id"]])
                      for r in labelled])
    strata = np.array([r["code"] for r in labelled])
    expected = sum(sizes[h] * right[strata == h].mean() for h in range(3)) / sizes.sum()
    assert before.estimate.accuracy.estimate == pytest.approx(expected)
    assert before.estimate.accuracy == stratified_mean(right, strata, sizes,
                                                       names=list(STRATA))
    assert sum(before.labelled.values()) == 70 and sum(before.sampled.values()) == 90
    assert before.contest_reviews == 0
    # The panel's true accuracy (the demo's gold) lies in the interval.
    truth = float(np.mean([table.loc[i, "consensus"] == gold[i] for i in table.index]))
    low, high = before.estimate.accuracy.low, before.estimate.accuracy.high
    assert low is not None and high is not None and low <= truth <= high

    # Reviews chosen by contest: wrong labels on contested items outside the sample (blind or
    # not), and a later non-blind override of a sampled item. None of them moves the estimate.
    in_sample = {r["item_id"] for r in sample}
    contested = [i for i in table.index[table["disagreement"]] if i not in in_sample][:15]
    for n, item_id in enumerate(contested):
        wrong = "REJECT" if table.loc[item_id, "consensus"] != "REJECT" else "KEEP"
        add_override(db, run_id, item_id, wrong, "contest", "bo", blind=n % 2 == 0)
    add_override(db, run_id, labelled[0]["item_id"], "SPLIT", "changed my mind", "ann")
    # A sampled item reviewed only after the critics were shown is not audited either.
    add_override(db, run_id, sample[80]["item_id"], "MERGE", "not blind", "ann")
    after = run_audit(db, run_id)
    assert after.estimate == before.estimate
    assert after.contest_reviews == len(contested)
    text = after.used_sentence()
    assert "From 70 audited items with a blind label" in text
    assert f"The {len(contested)} items reviewed outside the sample are left out" in text
    for name in STRATA:
        if sizes[STRATA.index(name)]:
            assert f"{after.labelled.get(name, 0)} of {sizes[STRATA.index(name)]} {name}" in text


def test_labels_are_used_in_draw_order_within_each_stratum() -> None:
    """A label after an unlabelled item of its stratum waits: the used items stay a prefix of
    the random draw order, a uniform sample, however the labels came."""
    rows = [{"item_id": name, "code": code, "human": human} for name, code, human in [
        ("a", 0, "KEEP"), ("b", 1, None), ("c", 0, None), ("d", 1, "KEEP"), ("e", 0, "KEEP"),
        ("f", 2, "REJECT")]]
    usable, waiting = usable_labels(rows)
    assert [r["item_id"] for r in usable] == ["a", "f"]
    assert waiting == 2  # d waits for b, e for c


def test_a_label_out_of_draw_order_waits_for_the_items_before_it(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    # An item labelled blind before the draw, in a blind pass over contested items: chosen by
    # contest, so it must not enter the estimate ahead of the items drawn before it.
    table = _consensus(db, run_id)
    contested = [str(i) for i in table.index[table["disagreement"]]]
    for item_id in contested[::2]:
        add_override(db, run_id, item_id, "REJECT", "", "bo", blind=True)
    draw_audit_sample(db, run_id, 40, seed=5, design="agreement")
    sample = audit_items(db, run_id, CUTS)
    early = [r for r in sample if r["human"] is not None]
    # Usable: labelled with every item drawn before it in its stratum labelled too.
    usable = [r for n, r in enumerate(sample) if r["human"] is not None and all(
        o["human"] is not None for o in sample[:n] if o["code"] == r["code"])]
    assert len(usable) < len(early), "the draw should put a pre-labelled item behind a gap"
    audit = run_audit(db, run_id)
    assert audit.waiting == len(early) - len(usable)
    assert sum(audit.labelled.values()) == len(usable)
    assert "wait for an item drawn before" in shown(audit.used_sentence())
    # Labelled in the queue's order (which fills each stratum's gaps first), the waiting
    # labels join.
    gold = gold_labels(db, run_id)
    original = {r["item_id"] for r in sample}
    for _ in range(200):
        rows = audit_items(db, run_id, CUTS)
        if all(r["human"] is not None for r in rows if r["item_id"] in original):
            break
        head = refresh_label_next(db, run_id).head
        assert head is not None
        add_override(db, run_id, head, gold[head], "", "ann", blind=True)
    audit = run_audit(db, run_id)
    rows = audit_items(db, run_id, CUTS)
    usable = [r["item_id"] for n, r in enumerate(rows) if r["human"] is not None and all(
        o["human"] is not None for o in rows[:n] if o["code"] == r["code"])]
    assert original <= set(usable)  # every drawn item's label is used now
    assert sum(audit.labelled.values()) == len(usable)
    # (Items the queue drew later may still wait, behind its proposals not labelled yet.)
    assert audit.waiting == sum(r["human"] is not None for r in rows) - len(usable)


def test_the_label_next_queue_orders_review_and_next_follows_it(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    # No sample drawn: the queue draws its own items, one stratum at a time.
    queue = refresh_label_next(db, run_id)
    assert queue.head is not None and len(queue.ranks) == 10
    assert sorted(queue.ranks.values()) == list(range(10))
    drawn = audit_items(db, run_id, CUTS)
    assert {r["source"] for r in drawn} == {"next"} and len(drawn) == 10
    frame, _ = review_table(db, run_id, sort="label_next", limit=10)
    assert list(frame["item_id"]) == sorted(queue.ranks, key=queue.ranks.__getitem__)
    # Every stratum is in the queue (none labelled: each one's label is needed first); a
    # sample the queue starts is a new one, stratified by the panel's confidence.
    assert {r["stratum"] for r in drawn} == set(CONFIDENCE_STRATA)
    assert {r["design"] for r in drawn} == {"confidence"}

    gold = gold_labels(db, run_id)
    done: list[str] = []
    for step in range(12):
        head = queue.head
        assert head is not None
        add_override(db, run_id, head, gold[head], "", "ann", blind=True)
        done.append(head)
        queue = refresh_label_next(db, run_id)
        # The labelled items stay on top in the order labelled, so the item just labelled
        # keeps its row, and the new head is the row right after it: Review's "next item"
        # after a blind label is the queue's head.
        assert [item for item, rank in sorted(queue.ranks.items(), key=lambda x: x[1])
                ][: step + 1] == done
        assert item_position(db, run_id, head, sort="label_next") == step
        page, _ = review_table(db, run_id, sort="label_next", offset=step + 1, limit=1)
        assert page["item_id"].iloc[0] == queue.head != head
    # Stable between labels: a rerun without a new label keeps the order.
    assert refresh_label_next(db, run_id).ranks == queue.ranks
    audit = run_audit(db, run_id)
    assert audit.estimate is not None and audit.estimate.accuracy.n == 12


# -- the pages ---------------------------------------------------------------------------------


def test_agreement_shows_the_corrected_accuracy_its_interval_and_what_it_used(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert "No corrected accuracy: no audit sample yet" in shown(all_text(at))

    db = open_db(path)
    draw_audit_sample(db, run_id, 60, seed=4)
    gold = gold_labels(db, run_id)
    for row in audit_items(db, run_id, CUTS)[:50]:
        add_override(db, run_id, row["item_id"], gold[row["item_id"]], "", "ann", blind=True)
    audit = run_audit(db, run_id)
    accuracy = audit.estimate.accuracy if audit.estimate else None
    assert accuracy is not None and accuracy.low is not None and accuracy.high is not None

    at.run()
    no_exception(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Panel accuracy, all items (audit)"] == f"{accuracy.estimate:.1%}"
    assert metrics["95% interval"] == f"{accuracy.low:.1%} – {accuracy.high:.1%}"
    assert metrics["Audited items used"] == "50"
    assert "From 50 audited items with a blind label" in shown(all_text(at))
    # The sample's design, in words: a new sample is stratified by the panel's confidence.
    assert audit.design == "confidence"
    assert design_sentence("confidence") in shown(all_text(at))
    # What "Label next" saves, and on which panels, in plain words.
    saving = saving_sentence("confidence")
    assert saving in shown(all_text(at))
    assert "42-45% fewer labels" in saving and "27-29% fewer on three critics" in saving
    # The headline: the label the panel gives most, with its corrected share.
    keep = max(audit.estimate.labels, key=lambda f: f.panel_share)
    corrected = keep.corrected
    assert corrected.estimate is not None and corrected.low is not None
    assert corrected.high is not None
    assert (f"The panel says {keep.panel_share:.1%} {keep.label}; corrected "
            f"{corrected.estimate:.1%} "
            f"[{100 * corrected.low:.1f}, {100 * corrected.high:.1f}].") in shown(all_text(at))
    labels = next(d.value for d in at.dataframe if "corrected share" in d.value.columns)
    assert set(labels["label"]) == {"KEEP", "REJECT", "SPLIT", "MERGE"}
    critics = next(d.value for d in at.dataframe if "accuracy (audit)" in d.value.columns)
    assert list(critics["critic"]) == ["careful", "lenient", "strict", "flaky"]


def test_review_draws_an_audit_sample_and_opens_the_label_next_queue(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id)})
    no_exception(at)
    at.number_input(key=k + "audit_count").set_value(30).run()
    at.button(key=k + "audit_draw").click().run()
    no_exception(at)
    db = open_db(path)
    assert len(audit_items(db, run_id, CUTS)) >= 30  # the 30 drawn, and any the queue added
    assert any("Drew 30 items for the audit" in s.value for s in at.success)
    # The draw turns on the queue's sort and the blind pass, shows every item (the sample
    # holds unanimous ones), and opens the queue's head.
    # (A blind pass draws only the filters that follow from no critic: no "Disagreements
    # only" at all, and a sort of its own.)
    assert at.selectbox(key=k + "blind_sort").value == "label_next"
    assert at.toggle(key=k + "blind").value
    assert not [t for t in at.toggle if t.key == k + "disagree"]
    queue = refresh_label_next(db, run_id)
    assert at.query_params["item"] == queue.head
    assert any(f"Next to label: item {queue.head}" in shown(c.value) for c in at.caption)


def test_on_review_a_blind_label_then_next_opens_the_queues_new_head(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    """The whole loop on the page: label the head blind, keep the label, and the item opened
    next is the head of the queue as recomputed from that label (or after a revision)."""
    path, run_id = demo_db
    k = f"rv{run_id}."
    db = open_db(path)
    gold = gold_labels(db, run_id)
    at = open_page("review", query={"run": str(run_id)})
    at.text_input(key=k + "reviewer").set_value("eve").run()
    assert not at.error
    at.button(key=k + "audit_draw").click().run()  # 100 items, the default
    for step in range(3):
        item = at.query_params["item"]
        assert item == refresh_label_next(db, run_id).head
        # KEEP or REJECT: on this curation panel a split or a merge also needs its classes.
        mine = gold[item] if gold[item] in ("KEEP", "REJECT") else "REJECT"
        at.radio(key=f"{k}label.{item}.blind").set_value(mine)
        save_button(at, "Save and show the critics").click().run()
        no_exception(at)
        assert at.query_params["item"] == item  # revealed on the same item
        if step == 1:  # a revision after the reveal: not an audit label, same walk
            at.radio(key=f"{k}label.{item}").set_value("KEEP" if mine != "KEEP" else "REJECT")
            save_button(at).click().run()
        else:
            at.button(key=f"{k}keep.{item}").click().run()
        no_exception(at)
        queue = refresh_label_next(db, run_id)
        assert queue.ranks[item] == step  # kept its row
        assert at.query_params["item"] == queue.head
    audit = run_audit(db, run_id)
    assert audit.estimate is not None and audit.estimate.accuracy.n == 3
