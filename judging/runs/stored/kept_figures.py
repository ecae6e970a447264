"""A run's figures computed once, at the end of the run, and kept in its database.

Why: at 1,000,000 items x 3 critics, the Agreement page's first load computed the critics'
report (reading 3,000,000 ratings, a bootstrap, Dawid-Skene, leave-one-out) and the audit's
population (a pass over every call): seconds of work, every time the app started. Both depend
on the verdicts alone, so the worker computes them once when a run finishes
(`precompute_figures`) and the pages read them (`critics_report`, `audit_population`). So is
each item's posterior that its consensus label is right (`consensus_confidence`: the audit's
"confidence" strata), fitted on the critics' labels alone. The stamp of the verdicts they came
from is kept with them: after a re-judge or a resume they no longer match, and the first reader
computes and keeps them again.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np
import sqlite_utils

from judging.analysis.agreement_report import AgreementReport
from judging.analysis.audit_design import AGREEMENT, CONFIDENCE, NEW_SAMPLE_DESIGN, design_cuts
from judging.analysis.audit_strata import confidence_from_labels
from judging.analysis.report_codec import CodecError, decode_report, encode_report
from judging.runs.stored.run_report import run_agreement_report
from judging.runs.stored.stored_run import load_run
from storage.results.item_confidence import confidence_inputs, save_confidence
from storage.results.run_figures import has_figures, load_figures, save_figures
from storage.results.runs import get_run
from storage.reviewing.audit import audit_population as read_population
from storage.reviewing.audit import confidence_sums, sample_design

log = logging.getLogger(__name__)

RESAMPLES = 1000
"""Bootstrap resamples of the kept report (the Agreement page's)."""
SEED = 0

Stamp = tuple[int, ...]


def verdicts_stamp(run: dict[str, Any]) -> Stamp:
    """What changes whenever a run's stored verdicts do (a run from `storage.results.runs`): the counts
    of stored successes and failures, and the ledger's count of calls made (a re-judged item
    replaces its verdicts without changing the counts, but its calls are counted)."""
    ledger = run.get("ledger") or {}
    return (int(run.get("ok_calls") or 0), int(run.get("failed_calls") or 0),
            int(ledger.get("calls") or 0), int(ledger.get("cache_hits") or 0))


def _key(stamp: Stamp) -> str:
    return ",".join(str(part) for part in stamp)


def critics_report(db: sqlite_utils.Database, run_id: int, stamp: Stamp) -> AgreementReport:
    """The run's critics' report (`run_agreement_report` without the humans), read when kept
    for `stamp`, else computed and kept."""
    data = load_figures(db, run_id, "report", _key(stamp))
    if data is not None:
        try:
            return decode_report(data)
        except CodecError:
            log.info("run %s: its kept report is unreadable; computing it again", run_id)
    report = run_agreement_report(db, run_id, resamples=RESAMPLES, seed=SEED, humans={})
    save_figures(db, run_id, "report", _key(stamp), encode_report(report))
    return report


def consensus_confidence(db: sqlite_utils.Database, run_id: int, stamp: Stamp) -> None:
    """Make the run's kept posteriors (`storage.results.item_confidence`) those of its verdicts at
    `stamp`: nothing to do when they are; else fitted again on the critics' labels (never a
    human's: `audit_strata.confidence_from_labels`) and kept, with the stamp, in one
    transaction."""
    if has_figures(db, run_id, "consensus_confidence", _key(stamp)):
        return
    stored = load_run(db, run_id)
    panel = stored.panel
    ids, votes, consensus = confidence_inputs(db, run_id, list(stored.record.critics))
    posterior = confidence_from_labels(votes, consensus, list(panel.scale.labels or ()))
    with db.atomic():
        save_confidence(db, run_id, ids, posterior.tolist())
        known = posterior[~np.isnan(posterior)]
        summary = {"items": len(ids), "with_consensus": int(len(known)),
                   "mean": float(known.mean()) if len(known) else None}
        save_figures(db, run_id, "consensus_confidence", _key(stamp),
                     json.dumps(summary).encode("utf-8"))


def audit_population(db: sqlite_utils.Database, run_id: int, stamp: Stamp,
                     design: str = AGREEMENT) -> dict[str, Any]:
    """`storage.reviewing.audit.audit_population` of the run under the design's strata, read when kept
    for `stamp`, else read from the calls and kept. The "confidence" design's also holds
    `predicted`: stratum code -> the sum of its items' posteriors (`storage.reviewing.audit.
    confidence_sums`), whose mean is the accuracy its queue is planned from."""
    kind = "audit_population" if design == AGREEMENT else f"audit_population_{design}"
    data = load_figures(db, run_id, kind, _key(stamp))
    if data is not None:
        kept = json.loads(data.decode("utf-8"))
        population: dict[str, Any] = {
            "sizes": {int(k): v for k, v in kept["sizes"]},
            "panel": {(int(h), str(label)): n for h, label, n in kept["panel"]},
            "critics": {(str(c), int(h)): n for c, h, n in kept["critics"]}}
        if "predicted" in kept:
            population["predicted"] = {int(h): float(v) for h, v in kept["predicted"]}
        return population
    cuts = design_cuts(design)
    if design == CONFIDENCE:
        consensus_confidence(db, run_id, stamp)
    population = read_population(db, run_id, cuts)
    payload: dict[str, Any] = {
        "sizes": list(population["sizes"].items()),
        "panel": [[h, label, n] for (h, label), n in population["panel"].items()],
        "critics": [[c, h, n] for (c, h), n in population["critics"].items()]}
    if design == CONFIDENCE:
        population["predicted"] = confidence_sums(db, run_id, cuts)
        payload["predicted"] = list(population["predicted"].items())
    save_figures(db, run_id, kind, _key(stamp), json.dumps(payload).encode("utf-8"))
    return population


def precompute_figures(db: sqlite_utils.Database, run_id: int) -> None:
    """Compute and keep the finished run's figures (a label panel's report, the posteriors of
    its consensus labels and the audit population of its sample's design, or of a new sample's
    when none is drawn; a score panel's report), unless kept already for its verdicts."""
    run = get_run(db, run_id)
    if not int(run.get("ok_calls") or 0):
        return  # no verdict: the page says so without figures
    stamp = verdicts_stamp(run)
    if not has_figures(db, run_id, "report", _key(stamp)):
        critics_report(db, run_id, stamp)
    if not load_run(db, run_id).panel.scale.is_numeric:
        consensus_confidence(db, run_id, stamp)
        audit_population(db, run_id, stamp, sample_design(db, run_id) or NEW_SAMPLE_DESIGN)
