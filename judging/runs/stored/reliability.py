"""A stored run's critic reliability card: storage's tables in, `ReliabilityCard` out.

The statistics are `judging.analysis.reliability_stats` (pure). The human labels are each item's first
blind label (`storage.reviewing.overrides.blind_labels`: a blind first pass on Review, or the audit
sample's labels, which are given blind); an override given after the critics were shown never
enters. The bias figures are the run's own: the position bias of a pairwise panel (each pair
asked in both orders) and the verbosity probe (`judging.runs.stored.run_report.run_verbosity`, on the
field the critics' prompts show). The Agreement page and `jurybox reliability RUN` both call
`run_reliability`.
"""

from __future__ import annotations

from typing import Any

from judging.analysis.audit_stats import stratum_cuts
from judging.analysis.pairwise_stats import position_bias
from judging.analysis.reliability_stats import RESAMPLES, ReliabilityCard, critic_reliability
from judging.analysis.verbosity import VerbosityProbe
from judging.runs.stored.run_report import run_verbosity
from judging.runs.stored.stored_run import load_run
from storage.results.calls import order_answers
from storage.reviewing.audit import audit_items, critic_labels
from storage.reviewing.overrides import blind_labels


def run_reliability(db: Any, run_id: int, *, resamples: int = RESAMPLES, seed: int | None = 0,
                    confidence: float = 0.95,
                    verbosity: VerbosityProbe | None = None) -> ReliabilityCard:
    """Every critic's reliability against the run's blind human labels.

    Args:
        db: this thread's connection.
        run_id: the run.
        resamples, seed, confidence: the kappa bootstrap.
        verbosity: the run's verbosity probe on its default field, when the caller has it
            (the page caches it); read afresh when None.

    Raises:
        NotFoundError: no such run.
    """
    stored = load_run(db, run_id)
    panel = stored.panel
    if panel.scale.is_numeric:
        return ReliabilityCard(reason="the card compares labels, and this panel gives scores: "
                               "its critics' agreement with the humans is under Per critic")
    humans = blind_labels(db, run_id)
    if not humans:
        return ReliabilityCard(reason=(
            "no item has a blind label yet. Label items with Blind first pass on Review (or "
            "draw an audit sample and label it): a label given after reading the critics "
            "leans towards them, so it is not used here"))
    in_audit = {str(row["item_id"]) for row in audit_items(db, run_id, stratum_cuts())}
    said = critic_labels(db, run_id, list(humans))
    labels = list(panel.scale.labels)
    labels += sorted({label for label in humans.values() if label not in labels})
    bias = ({b.critic: b for b in position_bias(order_answers(db, run_id), panel.pairwise)}
            if panel.pairwise.active and panel.pairwise.swap else {})
    probe = verbosity if verbosity is not None else run_verbosity(db, run_id)
    rows = {row.critic: row for row in probe.rows}
    cards = []
    for critic in stored.record.critics:
        mine = {item: by[critic] for item, by in said.items() if critic in by}
        cards.append(critic_reliability(
            critic, mine, humans, labels, resamples=resamples, seed=seed, confidence=confidence,
            position=bias.get(critic), verbosity=rows.get(critic)))
    return ReliabilityCard(
        critics=cards,
        blind_items=len(humans),
        audit_items=len(in_audit & set(humans)),
        verbosity_field=probe.measured,
        verbosity_reason=probe.reason,
        position_measured=bool(bias),
    )
