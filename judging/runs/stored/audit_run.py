"""A stored run's audit: draw the sample, keep the label-next queue, estimate the accuracy.

The statistics are `judging.analysis.audit_stats` (pure); the sample and its design live in
`storage.reviewing.audit`; the human labels are the first blind labels of the sampled items
(`storage.reviewing.overrides`). A sample keeps the design it was drawn with
(`judging.analysis.audit_design`): a new one is stratified by the panel's confidence and queued
by plan, one drawn before that by agreement and queued adaptively, and every figure here
follows the sample's design. Nothing here reads an override of an item outside the sample: those
items were chosen for review by contest, and would bias the estimate.

The label-next queue is kept in the sample's `queue_rank` column so the Review table can sort
by it (`storage.reviewing.review_queue.SORTS["label_next"]`): first the audit items already labelled blind, in
the order they were labelled, then the items to label next, in order. Why the labelled ones stay
on top: Review walks its list by position ("next item" is the row after the open one, and the
table's selection is kept by row). Labelling the head leaves every row above it where it was,
so the row after it is the new head and the open item never slides away under the reviewer.
`refresh_label_next` recomputes the queue from the labels given so far and is cheap to call on
every rerun (it reads the sample, a few hundred rows, and counts items per stratum).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlite_utils

from judging.analysis.audit_design import (
    AGREEMENT,
    NEW_SAMPLE_DESIGN,
    check_design,
    design_cuts,
    design_sentence,
    planned,
    predicted_accuracy,
    queue_plan,
    strata_names,
)
from judging.analysis.audit_stats import (
    EPSILON,
    STRATA,
    AuditEstimate,
    AuditPopulation,
    AuditSample,
    audit_estimate,
    draw_within,
    proportional_allocation,
)
from judging.errors import ConfigError, StorageError
from judging.panel.panel_model import Panel
from judging.run_status import RunStatus
from judging.runs.stored.kept_figures import consensus_confidence, verdicts_stamp
from judging.runs.stored.stored_run import load_run
from storage.results.runs import get_run
from storage.reviewing import audit as store

QUEUE_AHEAD = 10
"""How many items the label-next queue proposes ahead (recomputed after every label)."""


def _auditable(db: sqlite_utils.Database, run_id: int) -> tuple[dict[str, Any], Panel]:
    """The run and its panel, when items can be drawn from it for an audit."""
    run = get_run(db, run_id)
    panel = load_run(db, run_id).panel
    if panel.scale.is_numeric:
        raise ConfigError("The audit compares the panel's labels with a reviewer's, and this "
                          "panel gives scores: it needs a panel with a label scale.")
    if not RunStatus(run["status"]).finished:
        raise StorageError(f"Run #{run_id} is {run['status']}: draw the audit sample once it "
                           "has finished, so every item can be drawn.")
    return run, panel


def _sizes(by_code: dict[int, int]) -> np.ndarray:
    return np.array([by_code.get(h, 0) for h in range(len(STRATA))], dtype=np.int64)


def sample_design(db: sqlite_utils.Database, run_id: int) -> str:
    """The design of the run's audit sample, or of the sample a first draw would make
    (`audit_design.NEW_SAMPLE_DESIGN`)."""
    return store.sample_design(db, run_id) or NEW_SAMPLE_DESIGN


def design_cuts_now(db: sqlite_utils.Database, run: dict[str, Any], design: str
                    ) -> dict[str, float]:
    """The design's cut points, once the strata they cut are current: for "confidence", the
    kept posteriors of the run's verdicts as they are now (fitted again when stale)."""
    if planned(design):
        consensus_confidence(db, int(run["id"]), verdicts_stamp(run))
    return design_cuts(design)


def predicted_of(db: sqlite_utils.Database, run_id: int, design: str, cuts: dict[str, float],
                 sizes: np.ndarray, population: dict[str, Any] | None = None) -> np.ndarray | None:
    """Each stratum's predicted accuracy for a planned queue (None for the adaptive one): from
    the population when it holds the sums, else one count over the run."""
    if not planned(design):
        return None
    sums = (population or {}).get("predicted")
    if sums is None:
        sums = store.confidence_sums(db, run_id, cuts)
    return predicted_accuracy([sums.get(h, 0.0) for h in range(len(sizes))], sizes)


@dataclass(frozen=True)
class Drawn:
    """What a draw added to the audit sample, per stratum name."""

    added: dict[str, int]
    design: str = AGREEMENT

    def sentence(self) -> str:
        """What was drawn, in one sentence for the page."""
        total = sum(self.added.values())
        if not total:
            return "Every item of this run is in the audit sample already: nothing to draw."
        parts = ", ".join(f"{n:,} {name}" for name, n in self.added.items() if n)
        return (f"Drew {total:,} item{'' if total == 1 else 's'} for the audit ({parts}). Label "
                "them blind, in the order of the sort \"Label next\".")


def draw_audit_sample(db: sqlite_utils.Database, run_id: int, n: int, *,
                      seed: int | None = None, design: str | None = None) -> Drawn:
    """Add `n` items drawn at random to the run's audit sample, stratified by its design's
    strata in proportion to the items not yet drawn (at least 2 per stratum while `n` allows).

    Args:
        design: None: the sample's design, or "confidence" for the run's first draw; a name
            ("agreement", "confidence") draws a first sample by it, and must be the sample's
            design when one is drawn.

    Raises:
        NotFoundError: no such run.
        StorageError: the run is still pending or running, `n` is below 1, or `design` is not
            the design of the sample already drawn.
        ConfigError: the panel gives scores, not labels; or an unknown design.
    """
    if int(n) < 1:
        raise StorageError(f"An audit sample needs at least one item; {n} was asked for.")
    run, _ = _auditable(db, run_id)
    kept = store.sample_design(db, run_id)
    try:
        chosen = check_design(design or kept or NEW_SAMPLE_DESIGN)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if kept is not None and chosen != kept:
        raise StorageError(f"Run #{run_id}'s audit sample was drawn by {kept}: its items are "
                           f"weighted by those strata, so it cannot grow by {chosen}.")
    names = strata_names(chosen)
    cuts = design_cuts_now(db, run, chosen)
    sizes = _sizes(store.stratum_sizes(db, run_id, cuts))
    candidates = store.unsampled_items(db, run_id, cuts)
    codes = np.array([code for _, code in candidates], dtype=np.int64)
    available = np.bincount(codes, minlength=len(STRATA))
    take = proportional_allocation(available, int(n))
    picked = draw_within(codes, take, np.random.default_rng(seed))
    already = sizes - available
    rows = []
    for index in picked:
        item_id, code = candidates[int(index)]
        rows.append({"item_id": item_id, "stratum": names[code],
                     "stratum_size": int(sizes[code]),
                     # The design weight once this draw is in: items of the stratum per draw.
                     "weight": float(sizes[code]) / float(already[code] + take[code])})
    store.add_audit_items(db, run_id, rows, source="draw", design=chosen)
    return Drawn({names[h]: int(take[h]) for h in range(len(names))}, chosen)


def usable_labels(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The audit items whose blind labels the estimate may use, and how many labelled ones wait.

    Per stratum, the items in draw order up to the first one without a blind label. Why a
    prefix: the draw order is random within a stratum, so its first k items are a uniform
    sample of it whichever k; the labelled items are not, when some were labelled before the
    draw (a blind pass over contested items) or out of order. A label after a gap waits until
    the gap is labelled (the queue labels in draw order, so none wait when it is followed).

    Args:
        items: `storage.reviewing.audit.audit_items` rows, in draw order.

    Returns:
        (the usable items, how many labelled items wait behind an unlabelled one).
    """
    usable: list[dict[str, Any]] = []
    gap: set[int] = set()
    waiting = 0
    for item in items:
        code = int(item["code"])
        if item["human"] is None:
            gap.add(code)
        elif code in gap:
            waiting += 1
        else:
            usable.append(item)
    return usable, waiting


@dataclass(frozen=True)
class Queue:
    """The label-next queue after a refresh.

    Attributes:
        ranks: item_id -> place: the labelled audit items first (in the order they were
            labelled), then the items to label, the next one first.
        head: the next item to label (None: every item is labelled).
        stratum: the head's stratum.
        greedy: True when the head's stratum is the one whose label narrows the interval most;
            False when it is one of the random picks (`audit_stats.EPSILON`).
        drawn: items the refresh drew into the sample (a stratum whose drawn items ran out).
        design: the sample's design (`audit_design`): for "confidence" the greedy pick is
            planned from the strata's predicted accuracies and the counts of labels given.
    """

    ranks: dict[str, int]
    head: str | None
    stratum: str | None
    greedy: bool
    drawn: int = 0
    design: str = AGREEMENT

    def sentence(self) -> str:
        """Why the head comes next, for the page."""
        if self.head is None:
            return "Every item of this run has a blind label: the queue is empty."
        why = ("its stratum is the one where one more label is expected to narrow the "
               "accuracy's interval most, planned from how sure the panel is and how many "
               "labels each stratum has (never from what they said)"
               if self.greedy and planned(self.design) else
               "its stratum is the one where one more label narrows the accuracy's interval "
               "most" if self.greedy else
               "a random pick: one in five is drawn uniformly, so the sample never rests on the "
               "queue's guesses alone")
        return f"Next to label: item {self.head}, a {self.stratum} item ({why})."


def refresh_label_next(db: sqlite_utils.Database, run_id: int, *, ahead: int = QUEUE_AHEAD,
                       epsilon: float = EPSILON) -> Queue:
    """Recompute the run's label-next queue from the blind labels given so far (see the
    module's doc) and store it when it changed.

    Each place is a stratum chosen by the sample's design (`audit_design.queue_plan`: planned
    from the strata's predicted accuracies and the counts of usable labels for "confidence",
    `audit_stats.next_strata` on the labels' values for "agreement"), filled by that stratum's first
    unlabelled sample item in draw order, or, when the stratum's sampled items are all labelled,
    by an item drawn uniformly from the stratum into the sample (source "next"). The random
    picks are seeded by the run and the number of labels, so the queue stays put across
    reruns until the next label.

    Raises:
        NotFoundError: no such run.
        StorageError: the run is still pending or running (the queue may draw items).
        ConfigError: the panel gives scores, not labels.
    """
    run, _ = _auditable(db, run_id)
    design = sample_design(db, run_id)
    cuts = design_cuts_now(db, run, design)
    items = store.audit_items(db, run_id, cuts)
    sizes = _sizes(store.stratum_sizes(db, run_id, cuts))
    usable, _ = usable_labels(items)
    values = np.array([float(i["panel"] is not None and i["panel"] == i["human"])
                       for i in usable])
    codes = np.array([i["code"] for i in usable], dtype=np.int64)
    k = len(sizes)
    n = np.bincount(codes, minlength=k).astype(np.float64)
    total = np.bincount(codes, weights=values, minlength=k).astype(np.float64)
    rng = np.random.default_rng([run_id, len(usable)])
    plan, gains = queue_plan(n, total, total, sizes, ahead, rng=rng, epsilon=epsilon,
                             predicted=predicted_of(db, run_id, design, cuts, sizes))
    waiting = _unlabelled(items)
    fresh = Counter(h for h, n in Counter(plan).items()
                    for _ in range(max(0, n - len(waiting[h]))))
    drawn = _draw_fresh(db, run_id, fresh, sizes, items, rng, design, cuts) if fresh else 0
    if drawn:  # read again: a fresh item may carry a blind label already
        items = store.audit_items(db, run_id, cuts)
        waiting = _unlabelled(items)
    order = [(h, waiting[h].pop(0)) for h in plan if waiting[h]]
    labelled = [i for i in items if i["human"] is not None]
    ranks = {str(i["item_id"]): place for place, i in
             enumerate(sorted(labelled, key=lambda i: int(i["human_id"])))}
    for place, (_, item_id) in enumerate(order, start=len(ranks)):
        ranks[item_id] = place
    if ranks != store.queue_ranks(db, run_id):
        store.set_queue(db, run_id, ranks)
    if not order:
        return Queue(ranks, None, None, False, drawn, design)
    head_stratum, head = order[0]
    return Queue(ranks, head, strata_names(design)[head_stratum],
                 bool(gains[head_stratum] == gains.max()), drawn, design)


def _unlabelled(items: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Stratum code -> its sample items without a blind label, in draw order (the order to
    label them in: see `usable_labels`)."""
    waiting: dict[int, list[str]] = {h: [] for h in range(len(STRATA))}
    for item in items:
        if item["human"] is None:
            waiting[int(item["code"])].append(str(item["item_id"]))
    return waiting


def _draw_fresh(db: sqlite_utils.Database, run_id: int, wanted: Counter[int], sizes: np.ndarray,
                items: list[dict[str, Any]], rng: np.random.Generator, design: str,
                cuts: dict[str, float]) -> int:
    """Draw `wanted[h]` more items uniformly from stratum h into the sample (source "next");
    returns how many were drawn."""
    names = strata_names(design)
    candidates = store.unsampled_items(db, run_id, cuts)
    codes = np.array([code for _, code in candidates], dtype=np.int64)
    available = np.bincount(codes, minlength=len(STRATA))
    take = np.array([min(wanted.get(h, 0), int(available[h])) for h in range(len(STRATA))])
    picked = draw_within(codes, take, rng)
    sampled = Counter(int(i["code"]) for i in items)
    rows = []
    for index in picked:
        item_id, code = candidates[int(index)]
        sampled[code] += 1
        rows.append({"item_id": item_id, "stratum": names[code],
                     "stratum_size": int(sizes[code]),
                     "weight": float(sizes[code]) / float(sampled[code])})
    if rows:
        store.add_audit_items(db, run_id, rows, source="next", design=design)
    return len(rows)


@dataclass(frozen=True)
class RunAudit:
    """A run's audit: the estimate and what it was computed from.

    Attributes:
        estimate: the figures (None when there is nothing to estimate from: see `reason`).
        sampled: stratum name -> items in the audit sample.
        labelled: stratum name -> sample items whose blind label is used (`usable_labels`).
        stratum_sizes: stratum name -> items of the run.
        contest_reviews: items reviewed outside the sample (never used).
        waiting: sample items labelled blind but not used yet: an item drawn before them in
            their stratum has no blind label (`usable_labels`).
        reason: why there is no estimate.
        design: the sample's design (`audit_design`): which strata the names above are.
    """

    estimate: AuditEstimate | None
    sampled: dict[str, int] = field(default_factory=dict)
    labelled: dict[str, int] = field(default_factory=dict)
    stratum_sizes: dict[str, int] = field(default_factory=dict)
    contest_reviews: int = 0
    waiting: int = 0
    reason: str | None = None
    design: str = AGREEMENT

    def design_sentence(self) -> str:
        """How the sample is stratified and queued, in one plain sentence."""
        return design_sentence(self.design)

    def used_sentence(self) -> str:
        """Which labels the estimate used, in one sentence."""
        used = sum(self.labelled.values())
        sampled = sum(self.sampled.values())
        parts = ", ".join(f"{self.labelled.get(name, 0):,} of {self.stratum_sizes.get(name, 0):,}"
                          f" {name}" for name in strata_names(self.design)
                          if self.stratum_sizes.get(name))
        text = (f"From {used:,} audited item{'' if used == 1 else 's'} with a blind label "
                f"({parts}), of {sampled:,} drawn at random for the audit.")
        if self.waiting:
            text += (f" {self.waiting:,} more blind label{' waits' if self.waiting == 1 else 's wait'}"
                     " for an item drawn before it in its stratum to be labelled (labels are "
                     "used in draw order, so they stay a random sample).")
        if self.contest_reviews:
            text += (f" The {self.contest_reviews:,} item"
                     f"{'' if self.contest_reviews == 1 else 's'} reviewed outside the sample "
                     f"{'is' if self.contest_reviews == 1 else 'are'} left out: chosen because "
                     "the critics disagreed, they would bias it.")
        return text


def run_population(db: sqlite_utils.Database, run_id: int) -> dict[str, Any]:
    """What is known of every item of the run per stratum of its sample's design
    (`storage.reviewing.audit.audit_population`, with `predicted` for "confidence"): it changes with the
    run's verdicts only, not with reviews, so a caller may keep it."""
    run = get_run(db, run_id)
    design = sample_design(db, run_id)
    return _read_population(db, run_id, design, design_cuts_now(db, run, design))


def _read_population(db: sqlite_utils.Database, run_id: int, design: str,
                     cuts: dict[str, float]) -> dict[str, Any]:
    population = store.audit_population(db, run_id, cuts)
    if planned(design):
        population["predicted"] = store.confidence_sums(db, run_id, cuts)
    return population


def run_audit(db: sqlite_utils.Database, run_id: int, *, confidence: float = 0.95,
              population: dict[str, Any] | None = None) -> RunAudit:
    """The panel's accuracy on every item of the run, per label and per critic, and each
    label's corrected share, from the run's audit sample (`audit_stats.audit_estimate`), over
    the strata of the sample's design.

    Args:
        population: `run_population(db, run_id)` when the caller kept it (it reads every call
            of the run: about 2 s at 100,000 items x 3 critics); read afresh when None.

    Raises:
        NotFoundError: no such run.
    """
    run = get_run(db, run_id)
    panel = load_run(db, run_id).panel
    if panel.scale.is_numeric:
        return RunAudit(None, reason="the audit compares labels, and this panel gives scores")
    kept = store.sample_design(db, run_id)
    design = kept or NEW_SAMPLE_DESIGN
    if kept is None:
        # Nothing to estimate: the population (a pass over every call) is not read for it.
        return RunAudit(None, contest_reviews=store.contest_reviews(db, run_id),
                        reason="no audit sample yet: draw one on the Review page and label its "
                        "items in a blind first pass", design=design)
    cuts = design_cuts_now(db, run, design)
    names = strata_names(design)
    items = store.audit_items(db, run_id, cuts)
    contest = store.contest_reviews(db, run_id)
    if population is None:
        population = _read_population(db, run_id, design, cuts)
    sizes = _sizes(population["sizes"])
    by_name = {names[h]: int(sizes[h]) for h in range(len(names))}
    sampled = Counter(names[int(i["code"])] for i in items)
    labelled_items, waiting = usable_labels(items)
    labelled = Counter(names[int(i["code"])] for i in labelled_items)
    meta: dict[str, Any] = {"sampled": dict(sampled), "labelled": dict(labelled),
                            "stratum_sizes": by_name, "contest_reviews": contest,
                            "waiting": waiting, "design": design}
    if not labelled_items:
        return RunAudit(None, **meta, reason=f"none of the {len(items):,} audit items has a "
                        "usable blind label yet: label them on the Review page with the sort "
                        "\"Label next\" and Blind first pass on")
    critics = list(run["critics"])
    said = store.critic_labels(db, run_id, [str(i["item_id"]) for i in labelled_items])
    sample = AuditSample(
        strata=np.array([int(i["code"]) for i in labelled_items], dtype=np.int64),
        panel=[i["panel"] for i in labelled_items],
        human=[str(i["human"]) for i in labelled_items],
        critics={critic: [said[str(i["item_id"])].get(critic) for i in labelled_items]
                 for critic in critics},
    )
    return RunAudit(audit_estimate(stats_population(run, panel, population, design), sample,
                                   confidence=confidence), **meta)


def stats_population(run: dict[str, Any], panel: Panel, population: dict[str, Any],
                     design: str = AGREEMENT) -> AuditPopulation:
    """The statistics' view of `storage.reviewing.audit.audit_population` under the design's strata:
    labels in the scale's order (then any other label the panel gave), critics in the run's
    order, and for a planned queue each stratum's predicted accuracy."""
    sizes = _sizes(population["sizes"])
    labels = list(panel.scale.labels)
    labels += sorted({label for _, label in population["panel"] if label not in labels})
    predicted = None
    if planned(design):
        sums = population.get("predicted") or {}
        predicted = predicted_accuracy([sums.get(h, 0.0) for h in range(len(sizes))], sizes)
    return AuditPopulation(
        sizes=sizes,
        panel_counts={label: np.array([population["panel"].get((h, label), 0)
                                       for h in range(len(STRATA))]) for label in labels},
        critic_counts={critic: np.array([population["critics"].get((critic, h), 0)
                                         for h in range(len(STRATA))])
                       for critic in run["critics"]},
        strata=strata_names(design),
        predicted=predicted,
    )
