"""The agreement report of a stored run: storage's tables in, `AgreementReport` out.

The Agreement page and `jurybox stats RUN` both call `run_agreement_report`, so they show the
same figures from the same inputs. This module gathers those inputs (every critic outcome,
the consensus, the humans' latest labels, the gold labels and the scale of the panel the run
snapshot holds) and hands them to `judging.report.agreement_report`; it holds no statistics and
no SQL of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from judging.panel_files import load_panel
from judging.report import AgreementReport, agreement_report
from storage.consensus import load_consensus
from storage.overrides import human_labels
from storage.review import gold_labels, ratings_frame
from storage.runs import get_run

if TYPE_CHECKING:
    import sqlite_utils


def ratings_long(frame: pd.DataFrame, numeric: bool) -> pd.DataFrame:
    """Storage's long table of outcomes as (item_id, critic, value) for the statistics.

    Args:
        frame: `storage.review.ratings_frame` output (item_id, critic, label, score, failure).
        numeric: take the score (score scales) rather than the label.

    Returns:
        A DataFrame with columns item_id, critic, value; a failed outcome's value is None (a
        missing value to the statistics, never a label).
    """
    value = frame["score"] if numeric else frame["label"]
    value = value.astype(object).where(frame["failure"].isna(), None)
    value = value.where(value.notna(), None)
    return pd.DataFrame({"item_id": frame["item_id"], "critic": frame["critic"], "value": value})


def _number(text: Any) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _as_numbers(labels: Mapping[str, Any]) -> dict[str, float]:
    """Text labels read as numbers; ones that are not numbers are left out (not counted)."""
    out = {item: _number(label) for item, label in labels.items()}
    return {item: value for item, value in out.items() if value is not None}


def run_agreement_report(
    db: sqlite_utils.Database,
    run_id: int,
    *,
    resamples: int = 1000,
    seed: int | None = 0,
    humans: Mapping[str, str] | None = None,
) -> AgreementReport:
    """Every agreement figure of a stored run, computed from the database.

    Args:
        db: this thread's connection (`storage.db.open_db`).
        run_id: the run.
        resamples: bootstrap resamples for alpha's confidence interval.
        seed: bootstrap seed (the same seed gives the same interval).
        humans: item_id -> the humans' latest label, when the caller already read it (the page
            does, for its cache key); default: read from the database.

    Returns:
        The `AgreementReport` of the run, at the level of the run panel's scale, with the
        critics in panel order and agreement against the consensus, the humans (latest
        override per item) and the gold labels.

    Raises:
        storage.db.NotFoundError: no run has this id.
        ValueError: stored ratings that do not fit the panel's scale.
    """

    run = get_run(db, run_id)
    panel = load_panel(run["panel_yaml"])
    numeric = panel.scale.is_numeric
    ratings = ratings_long(ratings_frame(db, run_id), numeric)
    column = "score" if numeric else "consensus"
    consensus = {
        row["item_id"]: row[column]
        for row in load_consensus(db, run_id)
        if row[column] is not None
    }
    overrides: dict[str, Any] = dict(human_labels(db, run_id) if humans is None else humans)
    gold: dict[str, Any] = gold_labels(db, run_id)
    if numeric:
        # Overrides and gold labels are stored as text; on a score scale they are figures,
        # and compared as text they would never match a critic's score.
        overrides, gold = _as_numbers(overrides), _as_numbers(gold)
    return agreement_report(
        ratings,
        scale=panel.scale,
        consensus=consensus,
        overrides=overrides,
        gold=gold,
        critics=list(run["critics"]),
        resamples=resamples,
        seed=seed,
    )
