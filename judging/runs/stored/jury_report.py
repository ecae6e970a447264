"""The per-jury agreement of a stored run of a panel of juries: storage's tables in,
`judging.analysis.jury_stats.JuryReport` out (the Agreement page and tests call it; no SQL here)."""

from __future__ import annotations

from typing import Any

from judging.analysis.jury_stats import JuryReport, jury_agreement
from judging.runs.stored.stored_run import load_run
from storage.results.consensus import consensus_values
from storage.results.jury_decisions import jury_decision_frame
from storage.reviewing.review_queue import ratings_grid


def run_jury_report(db: Any, run_id: int, *, resamples: int = 1000,
                    seed: int | None = 0) -> JuryReport | None:
    """Agreement within each jury and between the juries of run `run_id` (None: the run's
    panel has no juries).

    Raises:
        storage.db.NotFoundError: no run has this id.
    """
    stored = load_run(db, run_id)
    panel = stored.panel
    if not panel.juries:
        return None
    numeric = panel.scale.is_numeric
    ratings = ratings_grid(db, run_id, list(stored.record.critics), numeric=numeric)
    long = jury_decision_frame(db, run_id, numeric=numeric)
    decisions = long.pivot(index="item_id", columns="jury", values="decision")
    decisions = decisions.reindex(index=ratings.index).astype(object)
    decisions = decisions.where(decisions.notna(), None)
    split = long[long["disagreement"] & long["decision"].notna()].groupby("jury").size()
    return jury_agreement(
        ratings, decisions, split.to_dict(), consensus_values(db, run_id, numeric=numeric),
        panel.juries, panel.scale, resamples=resamples, seed=seed)
