"""The agreement report of a run, computed from storage and cached until the run changes.

Why a cache: the bootstrap makes the report cost far more than a rerun of the page, and the
report only changes when verdicts or overrides do. The cache key includes the run's call count
and the humans' labels, so a new override (or more verdicts) gives fresh figures at once. The
report itself is assembled by `judging.runs.report`, the same code `jurybox stats RUN` runs.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.pairwise_stats import PairwiseReport
from judging.report import AgreementReport
from judging.rubric_stats import RubricReport
from judging.runs.report import (
    run_agreement_report,
    run_pairwise,
    run_rubric,
    run_stability,
    run_verbosity,
)
from judging.stability import CriticStability
from judging.verbosity import VerbosityProbe
from pages.ui.state import db, db_path
from storage.overrides import human_labels

RESAMPLES = 1000


@st.cache_data(max_entries=16, show_spinner="Computing agreement...")
def _report(path: str, run_id: int, calls_done: int, humans: tuple[tuple[str, str], ...]) -> AgreementReport:
    del path, calls_done  # part of the cache key only
    return run_agreement_report(db(), run_id, resamples=RESAMPLES, seed=0, humans=dict(humans))


def run_report(run: dict[str, Any]) -> AgreementReport:
    """The agreement report of `run` (a `storage.runs.list_runs` row), fresh after any change."""
    humans = tuple(sorted(human_labels(db(), int(run["id"])).items()))
    return _report(str(db_path()), int(run["id"]), _calls_done(run), humans)


def _calls_done(run: dict[str, Any]) -> int:
    return int(run.get("ok_calls") or 0) + int(run.get("failed_calls") or 0)


@st.cache_data(max_entries=16, show_spinner=False)
def _stability(path: str, run_id: int, calls_done: int) -> list[CriticStability]:
    del path, calls_done  # part of the cache key only
    return run_stability(db(), run_id)


def run_stability_figures(run: dict[str, Any]) -> list[CriticStability]:
    """Each repeated critic's stability (`judging.stability`), until more verdicts come."""
    return _stability(str(db_path()), int(run["id"]), _calls_done(run))


@st.cache_data(max_entries=16, show_spinner=False)
def _verbosity(path: str, run_id: int, calls_done: int, field: str | None) -> VerbosityProbe:
    del path, calls_done  # part of the cache key only
    return run_verbosity(db(), run_id, field)


def run_verbosity_probe(run: dict[str, Any], field: str | None) -> VerbosityProbe:
    """The verbosity probe of `run` over `field` (it reads every item's text: cached until
    more verdicts come)."""
    return _verbosity(str(db_path()), int(run["id"]), _calls_done(run), field)


@st.cache_data(max_entries=16, show_spinner=False)
def _pairwise(path: str, run_id: int, calls_done: int,
              humans: tuple[tuple[str, str], ...]) -> PairwiseReport | None:
    del path, calls_done, humans  # part of the cache key only
    return run_pairwise(db(), run_id, resamples=RESAMPLES, seed=0)


def run_pairwise_report(run: dict[str, Any]) -> PairwiseReport | None:
    """A pairwise run's win rates, strengths and position bias (None for other panels); fresh
    after more verdicts or a reviewer's new label (final labels count)."""
    humans = tuple(sorted(human_labels(db(), int(run["id"])).items()))
    return _pairwise(str(db_path()), int(run["id"]), _calls_done(run), humans)


@st.cache_data(max_entries=16, show_spinner=False)
def _rubric(path: str, run_id: int, calls_done: int) -> RubricReport | None:
    del path, calls_done  # part of the cache key only
    return run_rubric(db(), run_id)


def run_rubric_report(run: dict[str, Any]) -> RubricReport | None:
    """A rubric run's agreement per criterion (None for other panels), until more verdicts."""
    return _rubric(str(db_path()), int(run["id"]), _calls_done(run))
