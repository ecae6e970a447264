"""Run: pick a dataset and a panel, see the estimate, start; live progress; cancel, resume."""

from typing import Any

import pydantic
import streamlit as st

from judging.engine.estimate import estimate_run
from judging.engine.ledger import Ledger, format_usd
from judging.errors import JuryboxError
from judging.panel.panel_files import load_panel, panel_hash
from judging.panel.web_policy import refuse_python_critics
from judging.run_status import RunStatus
from judging.runs.jobs import prepare_run
from pages.ui import panel_form as pf
from pages.ui.budget_view import budget_inputs
from pages.ui.critic_check_view import check_button, start_warning
from pages.ui.error_notes import user_errors
from pages.ui.progress import (
    batch_rows,
    critic_rows,
    progress_text,
    run_summary_line,
    status_text,
    stored_critic_rows,
)
from pages.ui.run_picker import RUN_PARAM, dataset_for_panel, pick_run, query_run_id
from pages.ui.runs_table import working_runs_table
from pages.ui.shell import ensure_app_shell
from pages.ui.state import db, db_path, registry, worker_key_lookup
from storage.calls import call_counts
from storage.dataset_store import list_datasets, load_items
from storage.panels import list_panels
from storage.runs import get_run, list_runs
from storage.vendor_batches import run_batches

# Widget keys of the "Start a new run" box.
NEW_RUN_BOX = "new_run_box"
NEW_RUN_DATASET = "new_run_dataset"
NEW_RUN_PANEL = "new_run_panel"
FOLD_NEW_RUN_BOX = "new_run_box_fold"

ensure_app_shell()
st.title("Run")

# -- a new run ---------------------------------------------------------------------------------
# Open on arrival when no run is asked for, and then as the user leaves it: its open state is
# its own (a key), so a rerun (the slider, the URL's ?run= written below) never folds it.
if NEW_RUN_BOX not in st.session_state:
    st.session_state[NEW_RUN_BOX] = query_run_id() is None
if st.session_state.pop(FOLD_NEW_RUN_BOX, False):  # a run was just started: follow it below
    st.session_state[NEW_RUN_BOX] = False
with st.expander("Start a new run", icon=":material/add:", key=NEW_RUN_BOX, on_change="rerun"):
    datasets = list_datasets(db())
    panels = {p["hash"]: p for p in list_panels(db())}
    draft_panel = None
    if pf.DRAFT_KEY in st.session_state:
        try:
            draft_panel = pf.build_panel(pf.get_draft())
        except (JuryboxError, pydantic.ValidationError):
            # An unfinished draft is simply not offered; the Panel page says what is wrong.
            draft_panel = None
    # The draft is offered as "unsaved" only while it is: once saved, it is that saved panel
    # (one panel, one name), preselected as the one the user just built.
    draft_hash = panel_hash(draft_panel) if draft_panel is not None else None
    unsaved = draft_panel is not None and draft_hash not in panels
    choices = (["draft"] if unsaved else []) + list(panels)
    first_choice = choices.index(draft_hash) if draft_hash in panels else 0
    # A link that names a saved panel (a calibrated version, "Run this panel") opens with it.
    if st.query_params.get(pf.RUN_PANEL_PARAM) in panels:
        first_choice = choices.index(st.query_params[pf.RUN_PANEL_PARAM])
    if not datasets or not choices:
        st.info("A run needs a dataset (Datasets page) and a panel (Panel page). Or click "
                "**Try the demo** on Home.")
    else:
        by_id = {d["id"]: d for d in datasets}

        def preselect_dataset() -> None:
            """Choose the dataset the chosen panel was built for (its newest run's, else the
            newest one its prompts fit), not merely the newest: on arrival and when the
            panel changes. A dataset the user picks by hand stays until the panel changes."""
            key = st.session_state.get(NEW_RUN_PANEL, choices[first_choice])
            if key not in choices:
                key = choices[first_choice]
            try:
                chosen = draft_panel if key == "draft" else load_panel(panels[key]["yaml"])
            except (JuryboxError, pydantic.ValidationError):
                return  # an old snapshot the model no longer reads: the estimate says why
            if chosen is not None:
                preferred = dataset_for_panel(chosen, datasets, list_runs(db()))
                if preferred is not None:
                    st.session_state[NEW_RUN_DATASET] = preferred

        if st.session_state.get(NEW_RUN_DATASET) not in by_id:
            preselect_dataset()
        left, right = st.columns(2)
        dataset_id = left.selectbox("Dataset", list(by_id), key=NEW_RUN_DATASET,
                                    format_func=lambda i: f"#{i} {by_id[i]['name']} "
                                    f"({by_id[i]['n_items']:,} items)")
        panel_key = right.selectbox(
            "Panel", choices, index=first_choice, key=NEW_RUN_PANEL,
            format_func=lambda h: "The panel on the Panel page (unsaved)" if h == "draft"
            else f"{panels[h]['name']} · {h[:8]}", on_change=preselect_dataset,
        )
        concurrency = st.slider("Calls in flight at once", 1, 128, 32, key="new_run_concurrency")
        with user_errors("This run cannot start"):
            budget = budget_inputs("new_run")
            panel = draft_panel if panel_key == "draft" else load_panel(panels[panel_key]["yaml"])
            refuse_python_critics(panel)  # listed (a CLI user saved it), never run here
            dataset = by_id[dataset_id]
            for critic in panel.critics:
                critic.check_fields(list(dataset["fields"]))
            estimate = estimate_run(panel, load_items(db(), dataset_id, limit=20),
                                    dataset["n_items"])
            cols = st.columns(4)
            cols[0].metric("Calls", f"{estimate.calls:,}")
            cols[1].metric("Input tokens (est.)", f"{estimate.tokens_in:,}")
            cols[2].metric("Output tokens (est.)", f"{estimate.tokens_out:,}")
            cols[3].metric("Cost (est.)", "unknown" if estimate.cost_usd is None
                           else format_usd(estimate.cost_usd))
            st.caption(estimate.note)
            st.dataframe(
                [{"critic": r.critic, "calls": r.calls, "input tokens": r.tokens_in,
                  "output tokens": r.tokens_out,
                  "cost": "unknown (no price)" if r.cost_usd is None else format_usd(r.cost_usd)}
                 for r in estimate.per_critic],
                hide_index=True,
            )
            same = [r for r in list_runs(db(), dataset_id=dataset_id)
                    if r["panel_hash"] == panel_hash(panel)]
            # A twin that is working now: a second run would send (and pay for) the same calls
            # at the same time, before either has stored a reply to share. Follow it instead.
            working = next((r for r in same if r["status"] == RunStatus.RUNNING), None)
            if working is not None:
                st.warning(f"Run #{working['id']} is running this exact panel on this dataset "
                           "now: follow it instead. A second run started now would pay for the "
                           "same calls again.", icon=":material/sync:")
                st.page_link("pages/run.py", label=f"Follow run #{working['id']}",
                             icon=":material/arrow_forward:",
                             query_params={RUN_PARAM: str(working["id"])})
            elif same:
                earlier = same[0]
                st.info(f"Run #{earlier['id']} ({earlier['status']}) already judged this dataset "
                        "with this exact panel. A new run answers from its stored replies "
                        "(nothing paid again) — open that run instead if you only want to "
                        "review it.", icon=":material/content_copy:")
                st.page_link("pages/review.py", label=f"Review run #{earlier['id']}",
                             icon=":material/rate_review:",
                             query_params={RUN_PARAM: str(earlier["id"])})
            check_button(panel, load_items(db(), dataset_id, limit=1)[0], key="check_run_critics",
                         budget=budget)
            start_warning(panel)  # warns, never blocks: the user may know better
            if st.button("Start the run", type="primary", icon=":material/play_arrow:",
                         key="start_run", disabled=working is not None):
                run_id = prepare_run(db(), dataset_id=dataset_id, panel=panel, budget=budget)
                registry().start_run(str(db_path()), run_id, concurrency=concurrency,
                                     key_lookup=worker_key_lookup())
                st.query_params[RUN_PARAM] = str(run_id)
                st.session_state[FOLD_NEW_RUN_BOX] = True
                st.rerun()


# -- the chosen run ----------------------------------------------------------------------------
# One status line per run: while a job of this process works, its live line (the job's pace,
# the run's stored ledger); otherwise the run's stored line. Never both: a resumed run's job
# counts only its own part, and two lines for one run disagreed ("115 stored" beside "150").
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


def stored_progress(run: dict[str, Any]) -> None:
    """The run's stored line and each critic's stored calls."""
    st.text(run_summary_line(run))
    st.dataframe(stored_critic_rows(run, call_counts(db(), int(run["id"]))), hide_index=True)


@st.fragment(run_every=1.0)
def elsewhere_progress(run_id: int) -> None:
    """A run another process works on (the CLI, another app): its stored figures, re-read every
    second (they froze at the page's first draw); a full rerun when its status changes."""
    run = get_run(db(), run_id)
    stored_progress(run)
    if run["status"] != RunStatus.RUNNING:
        st.rerun()


st.subheader("Progress")
run = pick_run(empty_hint="No run yet: start one above, or click **Try the demo** on Home.")
if run is not None:
    run_id = int(run["id"])
    status = RunStatus(run["status"])
    job = registry().get(run_id)
    # One test of "is it working" for the whole page: the job's own status (a job that has
    # written its final status is finished, even in the instant before its thread ends).
    live = job is not None and not job.progress().finished
    if run["simulated"]:
        st.caption("All critics of this run are on the **simulated** vendor: no call left this "
                   "machine and no money was spent (any cost shown uses the panel's example "
                   "prices).")
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
    vendor_batches = run_batches(db(), run_id)
    if vendor_batches:
        with st.expander(f"Vendor batches ({len(vendor_batches)})",
                         expanded=status_text(run) == "submitted to vendor"):
            st.caption("Critics in batch mode: their requests went to the vendor's batch API "
                       "(results within 24 h, at batch prices). Resume collects what has ended.")
            st.dataframe(batch_rows(vendor_batches), hide_index=True)

    # A row of only the actions that apply now (fixed columns left gaps between them).
    actions = st.container(horizontal=True)
    if live and actions.button("Cancel", icon=":material/stop:", key="cancel_run"):
        registry().cancel(run_id)
        st.rerun()
    can_resume = not live and status.resumable
    if can_resume and run.get("stop_reason") == "budget":
        # Stopped by its cap: go on only with a higher one (the same cap would stop at once).
        with st.form("resume_budget"):
            st.caption("Resume with a higher cap (what was spent so far counts against it):")
            new_cap = None
            with user_errors("The cap is not valid"):
                new_cap = budget_inputs("resume", usd=run["budget_usd"], tokens=run["budget_tokens"])
            go = st.form_submit_button("Resume with this cap", icon=":material/play_arrow:")
        if go and new_cap is not None:
            with user_errors("The run did not resume"):
                registry().resume(str(db_path()), run_id, key_lookup=worker_key_lookup(),
                                  budget=new_cap)
                st.rerun()
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

all_runs = list_runs(db())
if all_runs:  # with no run, the hint above says what to do
    st.subheader("All runs")
    working_runs_table(all_runs)
