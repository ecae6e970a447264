"""The Run page's sections under "Progress": the chosen run's status (live while a job of this
process works on it, followed from the database while another process does, else as stored),
its vendor batches, the actions that apply now (cancel, resume, re-run failures, review), and
the table of all runs.

One status line per run: while a job of this process works, its live line (the job's pace, the
run's stored ledger); otherwise the run's stored line. Never both: a resumed run's job counts
only its own part, and two lines for one run disagreed ("115 stored" beside "150").
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.engine.ledger import Ledger
from judging.run_status import RunStatus
from judging.runs.stored.kept_figures import verdicts_stamp
from pages.ui.error_notes import user_errors
from pages.ui.run.budget_view import budget_inputs
from pages.ui.run.progress import (
    batch_rows,
    critic_rows,
    progress_text,
    run_summary_line,
    status_text,
    stored_critic_rows,
)
from pages.ui.run.runs_table import working_runs_table
from pages.ui.run_picker import RUN_PARAM
from pages.ui.simulated import what_ran
from pages.ui.state import db, db_path, registry, worker_key_lookup
from storage.results.calls import adjusted_parameters, call_counts
from storage.results.runs import get_run, list_runs
from storage.results.vendor_batches import run_batches


# Top-level fragments (called from the page, never from inside another fragment): nested
# `run_every` fragments have open bugs in Streamlit.
@st.fragment(run_every=0.5)
def live_progress(run_id: int) -> None:
    """Redrawn twice a second while the job works; a full rerun when it ends (the stored line
    and every table of the page then show the final figures)."""
    job = registry().get(run_id)
    if job is None:
        return
    progress = job.progress()
    if progress.finished:
        # Never drawn once the job has ended: the stored line replaces it on the full rerun
        # (a finished live line left beside it read as a second, disagreeing status).
        st.rerun()
    if progress.vendor:  # batch critics: the vendor is still working on the run's batches
        st.info(progress.vendor, icon=":material/schedule:")
    ledger = Ledger.from_mapping(get_run(db(), run_id)["ledger"])
    st.progress(progress.fraction, text=progress_text(progress, ledger))
    st.dataframe(critic_rows(progress), hide_index=True)


@st.cache_data(max_entries=16, show_spinner=False)
def _stored_counts(path: str, run_id: int, stamp: tuple[int, ...]
                   ) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Each critic's stored calls and adjusted parameters, once per state of the run's
    verdicts (`stamp`): at 3,000,000 calls the counts take 0.3-0.5 s even from their index,
    and a finished run's never change."""
    del path, stamp  # part of the cache key only
    return call_counts(db(), run_id), adjusted_parameters(db(), run_id)


def stored_progress(run: dict[str, Any]) -> None:
    """The run's stored line and each critic's stored calls."""
    st.text(run_summary_line(run))
    counts, adjusted = _stored_counts(str(db_path()), int(run["id"]), verdicts_stamp(run))
    st.dataframe(stored_critic_rows(run, counts, adjusted), hide_index=True)


@st.fragment(run_every=1.0)
def elsewhere_progress(run_id: int) -> None:
    """A run another process works on (the CLI, another app): its stored figures, re-read every
    second (they froze at the page's first draw); a full rerun when its status changes."""
    run = get_run(db(), run_id)
    if run["status"] != RunStatus.RUNNING:
        # Its end is drawn by the full rerun, once: drawn here as well, the ended line showed
        # twice while the page redrew (this fragment's, and the page's below it).
        st.rerun()
    stored_progress(run)


def is_live(run: dict[str, Any]) -> bool:
    """Whether a job of this process works on the run now. One test of "is it working" for the
    whole page: the job's own status (a job that has written its final status is finished, even
    in the instant before its thread ends)."""
    job = registry().get(int(run["id"]))
    return job is not None and not job.progress().finished


def progress_section(run: dict[str, Any], live: bool) -> None:
    """What judged the run, its one status line (live, followed or stored), and its
    error or stop reason."""
    run_id = int(run["id"])
    status = RunStatus(run["status"])
    ran = what_ran(db(), run)
    if ran:
        st.caption(ran)
    if live:
        live_progress(run_id)
    elif status is RunStatus.RUNNING:
        st.caption("Another process (`jurybox` on the command line, or another app) is working "
                   "on this run; its figures here follow what it stores.")
        elsewhere_progress(run_id)
    else:
        stored_progress(run)
    if run["error"]:
        (st.error if status is RunStatus.FAILED else st.info)(run["error"])


def vendor_batches_section(run: dict[str, Any]) -> None:
    """The run's batches at the vendor's batch API (nothing for a run without batch critics)."""
    vendor_batches = run_batches(db(), int(run["id"]))
    if vendor_batches:
        with st.expander(f"Vendor batches ({len(vendor_batches)})",
                         expanded=status_text(run) == "submitted to vendor"):
            st.caption("Critics in batch mode: their requests went to the vendor's batch API "
                       "(results within 24 h, at batch prices). Resume collects what has ended.")
            st.dataframe(batch_rows(vendor_batches), hide_index=True)


def run_actions(run: dict[str, Any], live: bool) -> None:
    """A row of only the actions that apply now (fixed columns left gaps between them): cancel,
    resume (with a higher cap after a budget stop), re-run the failed calls, review."""
    run_id = int(run["id"])
    status = RunStatus(run["status"])
    actions = st.container(horizontal=True)
    if live and actions.button("Cancel", icon=":material/stop:", key="cancel_run"):
        registry().cancel(run_id)
        st.rerun()
    can_resume = not live and status.resumable
    if can_resume and run.get("stop_reason") == "budget":
        _resume_with_cap(run)
        can_resume = False
    resume_label = ("Start" if status is RunStatus.PENDING else
                    "Collect the vendor's results" if status_text(run) == "submitted to vendor"
                    else "Resume")
    if can_resume and actions.button(resume_label, icon=":material/play_arrow:",
                                     key="resume_run"):
        with user_errors("The run did not resume"):
            registry().resume(str(db_path()), run_id, key_lookup=worker_key_lookup())
            st.rerun()
    if (not live and run["failed_calls"] and status is not RunStatus.RUNNING
            and actions.button(f"Re-run {run['failed_calls']:,} failed calls",
                               icon=":material/replay:", key="rerun_failures",
                               help="Calls that succeeded are read from the cache, not paid again.")):
        with user_errors("The failed calls were not re-run"):
            registry().rerun_failures(str(db_path()), run_id, key_lookup=worker_key_lookup())
            st.rerun()
    if status is RunStatus.DONE:
        actions.page_link("pages/review.py", label="Review its disagreements",
                          icon=":material/rate_review:", query_params={RUN_PARAM: str(run_id)})


def _resume_with_cap(run: dict[str, Any]) -> None:
    """A run stopped by its cap goes on only with a higher one (the same cap would stop at
    once): a form for the new cap and its Resume."""
    with st.form("resume_budget"):
        st.caption("Resume with a higher cap (what was spent so far counts against it):")
        new_cap = None
        with user_errors("The cap is not valid"):
            new_cap = budget_inputs("resume", usd=run["budget_usd"], tokens=run["budget_tokens"])
        go = st.form_submit_button("Resume with this cap", icon=":material/play_arrow:")
    if go and new_cap is not None:
        with user_errors("The run did not resume"):
            registry().resume(str(db_path()), int(run["id"]), key_lookup=worker_key_lookup(),
                              budget=new_cap)
            st.rerun()


def all_runs_section() -> None:
    """Every run, newest first (nothing without runs: the hint under Progress says what to do)."""
    all_runs = list_runs(db())
    if all_runs:
        st.subheader("All runs")
        working_runs_table(all_runs)
