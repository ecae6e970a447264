"""The agreement report of a run, computed from storage and cached until the run changes.

Why a cache: at 1,000,000 items x 3 critics the report takes about half a minute (3,000,000
ratings read into pandas, a bootstrap, Dawid-Skene), and it only changes when verdicts or
reviews do. It is cached in two floors:

- the critics' figures (everything but the figures against the humans), once per run and
  per state of its verdicts (`calls_stamp`): computed by the worker when the run finished and
  kept in the database (`judging.runs.stored.kept_figures`), so even the first load after a start reads
  them rather than computing them;
- the figures against the humans (`judging.analysis.agreement_report.with_humans`), redone
  from the first floor's encoded ratings whenever the humans' labels change: an override
  shows on the page at its next rerun, without reading the run's ratings again.

Both are `st.cache_resource` entries, not `st.cache_data`: a 1M-item report is hundreds of MB
to pickle, and `cache_data` unpickles a copy on every rerun. They are shared, so nothing here
or in the page changes a report (the pages only read). The report itself is assembled by
`judging.runs.stored.run_report`, the same code `jurybox stats RUN` runs.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.analysis.agreement_report import AgreementReport, as_numbers, with_humans
from judging.analysis.expected_stats import ExpectedScoreReport
from judging.analysis.pairwise_stats import PairwiseReport
from judging.analysis.panel_choice import PanelChoice
from judging.analysis.rubric_stats import RubricReport
from judging.analysis.stability import CriticStability
from judging.analysis.verbosity import VerbosityProbe
from judging.runs.stored.kept_figures import RESAMPLES as FIGURE_RESAMPLES
from judging.runs.stored.kept_figures import critics_report, verdicts_stamp
from judging.runs.stored.run_report import (
    run_expected_scores,
    run_pairwise,
    run_panel_choice,
    run_rubric,
    run_stability,
    run_verbosity,
)
from judging.runs.stored.stored_run import run_human_labels
from pages.ui.state import db, db_path

RESAMPLES = FIGURE_RESAMPLES
Stamp = tuple[int, ...]


def calls_stamp(run: dict[str, Any]) -> Stamp:
    """What changes whenever a run's stored verdicts do (`judging.runs.stored.kept_figures.verdicts_stamp`).
    Part of every cache key below, so a change gives fresh figures at once."""
    return verdicts_stamp(run)


@st.cache_resource(max_entries=4, show_spinner="Computing agreement...")
def _critics_report(path: str, run_id: int, stamp: Stamp) -> AgreementReport:
    del path  # part of the cache key only
    # Kept in the database when the run finished (`judging.runs.stored.kept_figures`): read, not computed.
    return critics_report(db(), run_id, stamp)


# Few entries: each shares (and so keeps alive) its critics' report, hundreds of MB at 1M items.
@st.cache_resource(max_entries=4, show_spinner=False)
def _report(path: str, run_id: int, stamp: Stamp, humans: tuple[tuple[str, str], ...],
            numeric: bool) -> AgreementReport:
    labels: dict[str, Any] = dict(humans)
    # As `run_agreement_report` reads them: on a score scale a human's label is a figure.
    return with_humans(_critics_report(path, run_id, stamp),
                       as_numbers(labels) if numeric else labels)


def run_report(run: dict[str, Any]) -> AgreementReport:
    """The agreement report of `run` (a `storage.results.runs.list_runs` row), fresh after any change
    of its verdicts (`calls_stamp`) or of its humans' labels."""
    humans = tuple(sorted(run_human_labels(db(), int(run["id"])).items()))
    base = _critics_report(str(db_path()), int(run["id"]), calls_stamp(run))
    numeric = base.level in ("interval", "ratio")
    return _report(str(db_path()), int(run["id"]), calls_stamp(run), humans, numeric)


@st.cache_data(max_entries=16, show_spinner=False)
def _stability(path: str, run_id: int, stamp: Stamp) -> list[CriticStability]:
    del path, stamp  # part of the cache key only
    return run_stability(db(), run_id)


def run_stability_figures(run: dict[str, Any]) -> list[CriticStability]:
    """Each repeated critic's stability (`judging.analysis.stability`), until more verdicts come."""
    return _stability(str(db_path()), int(run["id"]), calls_stamp(run))


@st.cache_data(max_entries=16, show_spinner=False)
def _expected(path: str, run_id: int, stamp: Stamp,
              humans: tuple[tuple[str, str], ...]) -> ExpectedScoreReport | None:
    del path, stamp, humans  # part of the cache key only
    return run_expected_scores(db(), run_id)


def run_expected_figures(run: dict[str, Any]) -> ExpectedScoreReport | None:
    """Statistics on the run's logprob scores (None without any), fresh after any change of
    its verdicts or of its humans' labels (the calibration is against them)."""
    humans = tuple(sorted(run_human_labels(db(), int(run["id"])).items()))
    return _expected(str(db_path()), int(run["id"]), calls_stamp(run), humans)


@st.cache_data(max_entries=16, show_spinner=False)
def _verbosity(path: str, run_id: int, stamp: Stamp, field: str | None) -> VerbosityProbe:
    del path, stamp  # part of the cache key only
    return run_verbosity(db(), run_id, field)


def run_verbosity_probe(run: dict[str, Any], field: str | None) -> VerbosityProbe:
    """The verbosity probe of `run` over `field` (it reads every item's text: cached until
    more verdicts come)."""
    return _verbosity(str(db_path()), int(run["id"]), calls_stamp(run), field)


@st.cache_data(max_entries=16, show_spinner=False)
def _pairwise(path: str, run_id: int, stamp: Stamp,
              humans: tuple[tuple[str, str], ...]) -> PairwiseReport | None:
    del path, stamp, humans  # part of the cache key only
    return run_pairwise(db(), run_id, resamples=RESAMPLES, seed=0)


def run_pairwise_report(run: dict[str, Any]) -> PairwiseReport | None:
    """A pairwise run's win rates, strengths and position bias (None for other panels); fresh
    after more verdicts or a reviewer's new label (final labels count)."""
    humans = tuple(sorted(run_human_labels(db(), int(run["id"])).items()))
    return _pairwise(str(db_path()), int(run["id"]), calls_stamp(run), humans)


@st.cache_data(max_entries=16, show_spinner=False)
def _rubric(path: str, run_id: int, stamp: Stamp) -> RubricReport | None:
    del path, stamp  # part of the cache key only
    return run_rubric(db(), run_id)


def run_rubric_report(run: dict[str, Any]) -> RubricReport | None:
    """A rubric run's agreement per criterion (None for other panels), until more verdicts."""
    return _rubric(str(db_path()), int(run["id"]), calls_stamp(run))


@st.cache_data(max_entries=16, show_spinner="Weighing the critics against each other...")
def _panel_choice(path: str, run_id: int, stamp: Stamp,
                  humans: tuple[tuple[str, str], ...]) -> tuple[PanelChoice, bool] | None:
    del path, stamp, humans  # part of the cache key only
    return run_panel_choice(db(), run_id)


def run_panel_choice_report(run: dict[str, Any]) -> tuple[PanelChoice, bool] | None:
    """Which of the run's critics it needs (None: no reference, a score panel, one critic);
    fresh after more verdicts or a reviewer's new label (they may be the reference)."""
    humans = tuple(sorted(run_human_labels(db(), int(run["id"])).items()))
    return _panel_choice(str(db_path()), int(run["id"]), calls_stamp(run), humans)
