"""A run's audit kept up to date label by label: the estimate and the label-next queue after
each label, without reading the run (or the sample) again.

`judging.runs.stored.audit_run.run_audit` and `refresh_label_next` recompute from the database: the whole
sample, every item's stratum, and (for the estimate) a pass over every call of the run. That is
right once, and too much after every label at 1,000,000 items. `LiveAudit` reads all of it
once, then only what came after its cursors (overrides by id, audit items by draw order:
`storage.reviewing.audit_delta`), and keeps the estimate's running sums per stratum
(`judging.analysis.audit_tally`). Its figures and its queue are those of the full recompute, label for
label (the tests check it, and count the rows it reads).

One `LiveAudit` belongs to one state of the run's verdicts: when they change (a re-judge), the
strata change, and the caller starts a new one (the pages key it by `calls_stamp`). It follows
the design of the run's sample (`judging.analysis.audit_design`), read when it is built: the
strata, and a queue planned from the strata's predicted accuracies ("confidence") or read from
the labels' values ("agreement").
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np
import sqlite_utils

from judging.analysis.audit_design import (
    NEW_SAMPLE_DESIGN,
    design_cuts,
    planned,
    predicted_accuracy,
    queue_plan,
    strata_names,
)
from judging.analysis.audit_stats import EPSILON, STRATA, draw_within
from judging.analysis.audit_tally import AuditTally
from judging.runs.stored.audit_run import (
    QUEUE_AHEAD,
    Queue,
    RunAudit,
    _auditable,
    design_cuts_now,
    sample_design,
    stats_population,
)
from judging.runs.stored.kept_figures import audit_population as kept_population
from judging.runs.stored.stored_run import load_run
from storage.results.runs import get_run
from storage.reviewing import audit as store
from storage.reviewing import audit_delta as delta


@dataclass
class _Item:
    """One audit item as the live audit follows it."""

    item_id: str
    code: int
    panel: str | None
    human: str | None = None
    human_id: int | None = None
    usable: bool = False


@dataclass
class _Stratum:
    """One stratum's audit items in draw order, and how far its labelled prefix reaches."""

    items: list[_Item] = field(default_factory=list)
    frontier: int = 0  # items[:frontier] are labelled and used
    unlabelled: dict[str, None] = field(default_factory=dict)  # in draw order


class LiveAudit:
    """The audit of one run, kept by its running sums (see the module's doc). Thread-safe: the
    pages share one per run across sessions."""

    def __init__(self, run_id: int, *, stamp: tuple[int, ...] | None = None) -> None:
        """Args:
            run_id: the run.
            stamp: the state of its verdicts (`judging.runs.stored.kept_figures.verdicts_stamp`): the
                population is then read from the figures kept for it (computed and kept when
                missing); None reads it from the calls.
        """
        self.run_id = run_id
        self._stamp = stamp
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        """Nothing read yet (also after a build that failed half-way)."""
        self._built = False
        self._numeric = False
        self._design = NEW_SAMPLE_DESIGN
        self._design_fixed = False  # True once read from a drawn sample
        self._cuts = design_cuts(NEW_SAMPLE_DESIGN)
        self._critics: list[str] = []
        self._population: dict[str, Any] | None = None
        self._tally: AuditTally | None = None
        self._items: dict[str, _Item] = {}
        self._strata = [_Stratum() for _ in STRATA]
        self._labelled: list[tuple[int, str]] = []  # (human_id, item_id), sorted
        self._reviewed: set[str] = set()
        self._last_override = 0
        self._last_draw = -1
        self._written: dict[str, int] = {}
        self._positions: np.ndarray | None = None
        self._codes: np.ndarray | None = None

    # -- reading -------------------------------------------------------------------------------

    def sync(self, db: sqlite_utils.Database) -> None:
        """Catch up with the database: on the first call, read the sample and the reviews; on
        later ones, only the overrides and audit items added since."""
        with self._lock:
            self._sync(db)

    def _sync(self, db: sqlite_utils.Database) -> None:
        if not self._built:
            try:
                self._build(db)
            except BaseException:
                # Half a build must not stay behind in a shared object: start afresh next time.
                self._reset()
                raise
            return
        fresh = delta.audit_items_after(db, self.run_id, self._cuts, self._last_draw)
        if fresh and not self._design_fixed:
            # Built before any draw, with the design a first draw makes: a first sample drawn
            # by another design (named explicitly) is read again under its own strata.
            if store.sample_design(db, self.run_id) != self._design:
                self._reset()
                self._sync(db)
                return
            self._design_fixed = True
        news = delta.overrides_after(db, self.run_id, self._last_override)
        for row in fresh:
            self._add_item(str(row["item_id"]), int(row["code"]), row["panel"], None, None)
            self._last_draw = max(self._last_draw, int(row["draw_order"]))
        if fresh:
            # An item drawn now may have been labelled blind before: its first blind label.
            labels = delta.first_blind_labels(db, self.run_id, [str(r["item_id"]) for r in fresh])
            for item_id, (human_id, label) in labels.items():
                self._label(item_id, label, human_id)
        for override_id, item_id, label, blind in news:
            self._last_override = max(self._last_override, override_id)
            self._reviewed.add(item_id)
            if blind:
                self._label(item_id, label, override_id)
        self._use(db)

    def _build(self, db: sqlite_utils.Database) -> None:
        stored = load_run(db, self.run_id)
        self._numeric = stored.panel.scale.is_numeric
        self._critics = list(stored.record.critics)
        self._built = True
        if self._numeric:
            return
        self._design = sample_design(db, self.run_id)
        self._design_fixed = store.sample_design(db, self.run_id) is not None
        self._cuts = design_cuts_now(db, get_run(db, self.run_id), self._design)
        # The cursor first: what comes after it is read again later, and applying it twice
        # changes nothing (an item's first blind label is set once).
        self._last_override = delta.last_override_id(db)
        items = store.audit_items(db, self.run_id, self._cuts)
        for row in items:
            self._add_item(str(row["item_id"]), int(row["code"]), row["panel"],
                           row["human"], row["human_id"])
            self._last_draw = max(self._last_draw, int(row["draw_order"]))
            if row["queue_rank"] is not None:
                self._written[str(row["item_id"])] = int(row["queue_rank"])
        self._reviewed.update(delta.reviewed_items(db, self.run_id, self._last_override))
        self._use(db)

    def _add_item(self, item_id: str, code: int, panel: str | None, human: str | None,
                  human_id: int | None) -> None:
        if item_id in self._items:
            return
        item = _Item(item_id, code, None if panel is None else str(panel))
        self._items[item_id] = item
        stratum = self._strata[code]
        stratum.items.append(item)
        stratum.unlabelled[item_id] = None
        if human is not None and human_id is not None:
            self._label(item_id, str(human), int(human_id))

    def _label(self, item_id: str, label: str, human_id: int) -> None:
        """An item's blind label: used once every item drawn before it in its stratum is."""
        item = self._items.get(item_id)
        if item is None or item.human is not None:
            return  # outside the sample (a contest review), or labelled already
        item.human, item.human_id = label, human_id
        self._strata[item.code].unlabelled.pop(item_id, None)
        bisect.insort(self._labelled, (human_id, item_id))

    def _use(self, db: sqlite_utils.Database) -> None:
        """Move each stratum's frontier over its newly labelled prefix, adding those items to
        the running sums (their critics' labels read for them alone)."""
        ready: list[_Item] = []
        reach = []
        for stratum in self._strata:
            end = stratum.frontier
            while end < len(stratum.items) and stratum.items[end].human is not None:
                ready.append(stratum.items[end])
                end += 1
            reach.append(end)
        if not ready:
            return
        # Read first, then move: a failed read leaves the frontiers where they were.
        tally = self._ensure_tally(db)
        said = store.critic_labels(db, self.run_id, [i.item_id for i in ready])
        for stratum, end in zip(self._strata, reach, strict=True):
            stratum.frontier = end
        for item in ready:
            item.usable = True
            tally.add(item.code, item.panel, str(item.human), said.get(item.item_id, {}))

    def _ensure_tally(self, db: sqlite_utils.Database) -> AuditTally:
        """The running sums, started at the first usable label: the population behind them
        (a pass over the run's calls) is read only once there is something to estimate."""
        if self._tally is None:
            run = get_run(db, self.run_id)
            panel = load_run(db, self.run_id).panel
            if self._population is None:
                self._population = self._read_population(db)
            self._tally = AuditTally(stats_population(run, panel, self._population,
                                                      self._design))
        return self._tally

    def _read_population(self, db: sqlite_utils.Database) -> dict[str, Any]:
        """The population under the sample's design: kept with the run's figures when a stamp
        was given, else read from the calls (with the predicted sums of a planned queue)."""
        if self._stamp is not None:
            return kept_population(db, self.run_id, self._stamp, self._design)
        population = store.audit_population(db, self.run_id, self._cuts)
        if planned(self._design):
            population["predicted"] = store.confidence_sums(db, self.run_id, self._cuts)
        return population

    # -- the estimate --------------------------------------------------------------------------

    def audit(self, db: sqlite_utils.Database, *, confidence: float = 0.95) -> RunAudit:
        """What `judging.runs.stored.audit_run.run_audit` gives now, from the running sums."""
        with self._lock:
            self._sync(db)
            if self._numeric:
                return RunAudit(None, reason="the audit compares labels, and this panel gives "
                                "scores")
            names = strata_names(self._design)
            sampled = Counter(names[i.code] for i in self._items.values())
            labelled = Counter(names[i.code] for i in self._items.values() if i.usable)
            waiting = sum(1 for i in self._items.values() if i.human is not None and not i.usable)
            contest = sum(1 for item in self._reviewed if item not in self._items)
            meta: dict[str, Any] = {"sampled": dict(sampled), "labelled": dict(labelled),
                                    "contest_reviews": contest, "waiting": waiting,
                                    "design": self._design}
            if not self._items:
                return RunAudit(None, **meta, reason="no audit sample yet: draw one on the Review page and "
                                "label its items in a blind first pass")
            if self._tally is None:
                return RunAudit(None, **meta, stratum_sizes=self._sizes_by_name(db),
                                reason=f"none of the {len(self._items):,} audit items has a "
                                "usable blind label yet: label them on the Review page with "
                                "the sort \"Label next\" and Blind first pass on")
            estimate = self._tally.estimate(confidence=confidence)
            return RunAudit(estimate, **meta, stratum_sizes=self._sizes_by_name(db))

    def _sizes_by_name(self, db: sqlite_utils.Database) -> dict[str, int]:
        sizes = self._stratum_sizes(db)
        names = strata_names(self._design)
        return {names[h]: int(sizes[h]) for h in range(len(names))}

    def _stratum_sizes(self, db: sqlite_utils.Database) -> np.ndarray:
        """Items per stratum: from the population once it is read (kept with the run's
        figures when a stamp was given), else one count over the run's consensus rows."""
        if self._tally is not None:
            return np.asarray(self._tally.population.sizes, dtype=np.int64)
        if self._population is None and self._stamp is not None:
            self._population = kept_population(db, self.run_id, self._stamp, self._design)
        if self._population is not None:
            sizes = self._population["sizes"]
        else:
            sizes = store.stratum_sizes(db, self.run_id, self._cuts)
        return np.array([sizes.get(h, 0) for h in range(len(STRATA))], dtype=np.int64)

    # -- the label-next queue ------------------------------------------------------------------

    def refresh_queue(self, db: sqlite_utils.Database, *, ahead: int = QUEUE_AHEAD,
                      epsilon: float = EPSILON) -> Queue:
        """What `judging.runs.stored.audit_run.refresh_label_next` gives and stores now: the same plan
        from the same seeded draws, written as the few ranks that changed."""
        _auditable(db, self.run_id)
        with self._lock:
            self._sync(db)
            sizes = self._stratum_sizes(db)
            tally = self._tally
            usable = tally.labelled if tally is not None else 0
            rng = np.random.default_rng([self.run_id, usable])
            if tally is not None:
                plan, gains = tally.queue(ahead, rng=rng, epsilon=epsilon)
            else:  # nothing labelled: the same call as the full recompute, on no values
                none = np.zeros(len(sizes))
                plan, gains = queue_plan(none, none, none, sizes, ahead, rng=rng,
                                         epsilon=epsilon, predicted=self._predicted(db, sizes))
            wanted = Counter(plan)
            fresh = Counter(h for h, n in wanted.items()
                            for _ in range(max(0, n - len(self._strata[h].unlabelled))))
            drawn = self._draw_fresh(db, fresh, sizes, rng) if fresh else 0
            if drawn:
                self._sync(db)
            taken: dict[int, list[str]] = {h: list(islice(self._strata[h].unlabelled, n))
                                           for h, n in wanted.items()}
            order = [(h, taken[h].pop(0)) for h in plan if taken[h]]
            ranks = {item_id: place for place, (_, item_id) in enumerate(self._labelled)}
            for place, (_, item_id) in enumerate(order, start=len(ranks)):
                ranks[item_id] = place
            if ranks != self._written:
                changed = {i: r for i, r in ranks.items() if self._written.get(i) != r}
                cleared = [i for i in self._written if i not in ranks]
                delta.update_queue(db, self.run_id, changed, cleared)
                self._written = ranks
            if not order:
                return Queue(dict(ranks), None, None, False, drawn, self._design)
            head_stratum, head = order[0]
            return Queue(dict(ranks), head, strata_names(self._design)[head_stratum],
                         bool(gains[head_stratum] == gains.max()), drawn, self._design)

    def _predicted(self, db: sqlite_utils.Database, sizes: np.ndarray) -> np.ndarray | None:
        """Each stratum's predicted accuracy for a planned queue before any usable label (None:
        the adaptive queue): from the population (kept, or read once) as the tally's is."""
        if not planned(self._design):
            return None
        if self._population is None and self._stamp is not None:
            self._population = self._read_population(db)
        sums = (self._population.get("predicted") if self._population is not None
                else store.confidence_sums(db, self.run_id, self._cuts)) or {}
        return predicted_accuracy([sums.get(h, 0.0) for h in range(len(sizes))], sizes)

    def _load_strata(self, db: sqlite_utils.Database) -> None:
        """Every item's stratum by file position (one pass, once): fresh draws then need no
        further read of the run."""
        positions, codes = delta.stratum_by_position(db, self.run_id, self._cuts)
        self._positions = np.asarray(positions, dtype=np.int64)
        self._codes = np.asarray(codes, dtype=np.int64)

    def _draw_fresh(self, db: sqlite_utils.Database, wanted: Counter[int], sizes: np.ndarray,
                    rng: np.random.Generator) -> int:
        """As `judging.runs.stored.audit_run._draw_fresh`: `wanted[h]` more items drawn uniformly from
        the items of stratum h not in the sample, in file order, with the same generator."""
        if self._codes is None:
            self._load_strata(db)
        assert self._codes is not None and self._positions is not None
        sampled_positions = delta.positions_of(db, self.run_id, list(self._items))
        mask = np.zeros(len(self._positions), dtype=bool)
        mask[np.searchsorted(self._positions, np.asarray(sampled_positions, dtype=np.int64))] \
            = True
        candidates = np.flatnonzero(~mask)
        codes = self._codes[candidates]
        available = np.bincount(codes, minlength=len(STRATA))
        take = np.array([min(wanted.get(h, 0), int(available[h])) for h in range(len(STRATA))])
        picked = draw_within(codes, take, rng)
        if not len(picked):
            return 0
        chosen = self._positions[candidates[picked]].tolist()
        names = delta.items_at(db, self.run_id, chosen)
        strata = strata_names(self._design)
        counts = Counter(i.code for i in self._items.values())
        rows = []
        for position, index in zip(chosen, picked.tolist(), strict=True):
            code = int(codes[index])
            counts[code] += 1
            rows.append({"item_id": names[position], "stratum": strata[code],
                         "stratum_size": int(sizes[code]),
                         "weight": float(sizes[code]) / float(counts[code])})
        return store.add_audit_items(db, self.run_id, rows, source="next", design=self._design)
