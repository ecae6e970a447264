"""The Run page's "Start a new run" box: a dataset and a panel (the Panel page's draft or a saved
one), the calls in flight, a budget cap, the estimate, a word on twin runs, the critic check and
Start.

Starting a run prepares it (`judging.runs.background.jobs.prepare_run`), hands it to the process's job
registry, writes its id into the URL (`?run=`) and folds the box, so the page below follows it.
"""

from __future__ import annotations

from typing import Any

import pydantic
import streamlit as st

from judging.engine.context_guard import OverLong, over_long
from judging.engine.estimate import RunEstimate, estimate_run
from judging.engine.ledger import format_usd
from judging.errors import JuryboxError
from judging.panel.context_limits import ContextGuard
from judging.panel.panel_files import load_panel, panel_hash
from judging.panel.panel_model import Panel
from judging.panel.web_policy import refuse_python_critics
from judging.run_status import RunStatus
from judging.runs.background.jobs import prepare_run
from pages.ui.error_notes import user_errors
from pages.ui.panel import panel_draft as drafts
from pages.ui.panel.critic_check_view import check_button, start_warning
from pages.ui.run.budget_view import budget_inputs
from pages.ui.run_picker import RUN_PARAM, dataset_for_panel, query_run_id
from pages.ui.state import db, db_path, registry, worker_key_lookup
from storage.datasets.dataset_store import list_datasets, load_items
from storage.panels import list_panels
from storage.results.runs import list_runs

# Widget keys of the "Start a new run" box.
NEW_RUN_BOX = "new_run_box"
NEW_RUN_DATASET = "new_run_dataset"
NEW_RUN_PANEL = "new_run_panel"
FOLD_NEW_RUN_BOX = "new_run_box_fold"


def new_run_box() -> None:
    """The box, open on arrival when no run is asked for, and then as the user leaves it: its
    open state is its own (a key), so a rerun (the slider, the URL's ?run= written below) never
    folds it."""
    if NEW_RUN_BOX not in st.session_state:
        st.session_state[NEW_RUN_BOX] = query_run_id() is None
    if st.session_state.pop(FOLD_NEW_RUN_BOX, False):  # a run was just started: follow it below
        st.session_state[NEW_RUN_BOX] = False
    with st.expander("Start a new run", icon=":material/add:", key=NEW_RUN_BOX,
                     on_change="rerun"):
        _new_run_form()


def _draft_panel() -> Panel | None:
    """The Panel page's draft as a panel, or None (no draft, or one not finished)."""
    if drafts.DRAFT_KEY not in st.session_state:
        return None
    try:
        return drafts.build_panel(drafts.get_draft())
    except (JuryboxError, pydantic.ValidationError):
        # An unfinished draft is simply not offered; the Panel page says what is wrong.
        return None


def _new_run_form() -> None:
    datasets = list_datasets(db())
    panels = {p["hash"]: p for p in list_panels(db())}
    draft_panel = _draft_panel()
    # The draft is offered as "unsaved" only while it is: once saved, it is that saved panel
    # (one panel, one name), preselected as the one the user just built.
    draft_hash = panel_hash(draft_panel) if draft_panel is not None else None
    unsaved = draft_panel is not None and draft_hash not in panels
    choices = (["draft"] if unsaved else []) + list(panels)
    first_choice = choices.index(draft_hash) if draft_hash in panels else 0
    # A link that names a saved panel (a calibrated version, "Run this panel") opens with it.
    if st.query_params.get(drafts.RUN_PANEL_PARAM) in panels:
        first_choice = choices.index(st.query_params[drafts.RUN_PANEL_PARAM])
    if not datasets or not choices:
        st.info("A run needs a dataset (Datasets page) and a panel (Panel page). Or click "
                "**Try the demo** on Home.")
        return
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
        if panel is None:  # "draft" is offered only while the draft builds: it stopped since
            st.info("The Panel page's draft is not a complete panel any more: finish it there, "
                    "or choose a saved panel.")
            return
        refuse_python_critics(panel)  # listed (a CLI user saved it), never run here
        dataset = by_id[dataset_id]
        panel.check_fields(list(dataset["fields"]))
        panel = _context_guard_choice(panel, dataset_id)
        _estimate(estimate_run(panel, load_items(db(), dataset_id, limit=20),
                               dataset["n_items"]))
        working = _twin_runs(panel, dataset_id)
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


@st.cache_data(max_entries=8, show_spinner="Measuring the prompts against the context windows...")
def _over_long(dataset_id: int, version: str, _panel: Panel) -> list[OverLong]:
    # Every item rendered for every critic: keyed by the dataset and the panel's version, so
    # a rerun of the page does not measure again.
    return over_long(_panel.critics, load_items(db(), dataset_id), _panel.scale)


def _context_guard_choice(panel: Panel, dataset_id: int) -> Panel:
    """Name the items too long for a critic's context window and let the user choose what
    the run does with them (send, skip, judge a window): the panel the run will use."""
    found = _over_long(dataset_id, panel_hash(panel), panel)
    if not found:
        return panel
    items = sorted({o.item_id for o in found})
    st.warning(f"{len(items):,} item{'s are' if len(items) != 1 else ' is'} too long for a "
               "critic's context window (prompt tokens estimated at 4 characters a token, "
               "plus the reply's max_tokens). Nothing is cut unless you choose so.",
               icon=":material/straighten:")
    st.dataframe([{"item": o.item_id, "critic": o.critic, "tokens (est.)": o.tokens,
                   "window": o.window} for o in found[:200]], hide_index=True)
    guard = panel.context_guard
    choices = {"send": "Send them whole anyway", "skip": "Skip them (no call, noted)",
               "window": "Judge a window: the last k messages of context and thread"}
    over = st.radio("Items too long for the window", list(choices), key="new_run_over_long",
                    index=list(choices).index(guard.over_long), format_func=choices.__getitem__)
    window = guard.window
    if over == "window":
        window = int(st.number_input("k: messages kept", 1, 1000, guard.window,
                                     key="new_run_window"))
    if (over, window) == (guard.over_long, guard.window):
        return panel
    chosen = ContextGuard.model_validate({"over_long": over, "window": window})
    return panel.model_copy(update={"context_guard": chosen})


def _estimate(estimate: RunEstimate) -> None:
    """The run's calls, tokens and cost as estimated, in total and per critic."""
    cols = st.columns(4)
    # Verdicts, the unit the run's progress line counts; the calls behind them beside it.
    cols[0].metric("Verdicts", f"{estimate.verdicts:,}",
                   help="One per item and critic, as the progress line counts them.")
    cols[1].metric("Input tokens (est.)", f"{estimate.tokens_in:,}")
    cols[2].metric("Output tokens (est.)", f"{estimate.tokens_out:,}")
    cols[3].metric("Cost (est.)", "unknown" if estimate.cost_usd is None
                   else format_usd(estimate.cost_usd))
    st.caption(f"{estimate.counted()}. {estimate.note}")
    st.dataframe(
        [{"critic": r.critic, "calls": r.calls, "input tokens": r.tokens_in,
          "output tokens": r.tokens_out,
          "cost": "unknown (no price)" if r.cost_usd is None else format_usd(r.cost_usd)}
         for r in estimate.per_critic],
        hide_index=True,
    )


def _twin_runs(panel: Panel, dataset_id: int) -> dict[str, Any] | None:
    """Say when this exact panel already ran (or runs now) on this dataset, with a link to that
    run; return the twin that is working now (Start is then off), else None."""
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
    return working
