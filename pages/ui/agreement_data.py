"""The agreement report of a run, computed from storage and cached until the run changes.

Why a cache: the bootstrap makes the report cost far more than a rerun of the page, and the
report only changes when verdicts or overrides do. The cache key includes the run's call count
and the humans' labels, so a new override (or more verdicts) gives fresh figures at once.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from judging.panel_files import load_panel
from judging.report import AgreementReport, agreement_report
from pages.ui.state import db, db_path
from storage.consensus import load_consensus
from storage.overrides import human_labels
from storage.review import gold_labels, ratings_frame
from storage.runs import get_run

RESAMPLES = 1000


def ratings_long(frame: pd.DataFrame, numeric: bool) -> pd.DataFrame:
    """Storage's calls table as (item_id, critic, value): failures become missing values."""
    value = frame["score"] if numeric else frame["label"]
    value = value.astype(object).where(frame["failure"].isna(), None)
    value = value.where(value.notna(), None)
    return pd.DataFrame({"item_id": frame["item_id"], "critic": frame["critic"], "value": value})


@st.cache_data(max_entries=16, show_spinner="Computing agreement...")
def _report(path: str, run_id: int, calls_done: int, humans: tuple[tuple[str, str], ...]) -> AgreementReport:
    del path, calls_done  # part of the cache key only
    database = db()
    run = get_run(database, run_id)
    panel = load_panel(run["panel_yaml"])
    ratings = ratings_long(ratings_frame(database, run_id), panel.scale.is_numeric)
    consensus = {
        row["item_id"]: (row["score"] if panel.scale.is_numeric else row["consensus"])
        for row in load_consensus(database, run_id)
        if (row["score"] if panel.scale.is_numeric else row["consensus"]) is not None
    }
    overrides: dict[str, Any] = dict(humans)
    if panel.scale.is_numeric:
        # Overrides are stored as text; on a score scale the humans' figures are numbers.
        overrides = {item: _number(label) for item, label in overrides.items()}
        overrides = {item: value for item, value in overrides.items() if value is not None}
    return agreement_report(
        ratings,
        scale=panel.scale,
        consensus=consensus,
        overrides=overrides,
        gold=gold_labels(database, run_id),
        critics=list(run["critics"]),
        resamples=RESAMPLES,
        seed=0,
    )


def _number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def run_report(run: dict[str, Any]) -> AgreementReport:
    """The agreement report of `run` (a `storage.runs.list_runs` row), fresh after any change."""
    humans = tuple(sorted(human_labels(db(), int(run["id"])).items()))
    done = int(run.get("ok_calls") or 0) + int(run.get("failed_calls") or 0)
    return _report(str(db_path()), int(run["id"]), done, humans)
