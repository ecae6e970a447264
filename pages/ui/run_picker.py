"""Choosing the run a page shows (the choice lives in the URL, `?run=ID`, so reloads keep it),
and the dataset a new run of a panel is preselected on."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.errors import JuryboxError
from judging.panel.panel_files import panel_hash
from judging.panel.panel_model import Panel
from pages.ui.state import db
from storage.results.runs import list_runs

RUN_PARAM = "run"


def run_label(run: dict[str, Any]) -> str:
    """"#7 · Demo dataset × Demo panel · simulated" — plain text for menus.

    No status in it: a selectbox keeps the label it first drew for a keyed option, so a run
    that finished while the page was open would go on reading "running" (seen in Chromium).
    """
    text = f"#{run['id']} · {run['dataset_name']} × {run['panel_name']}"
    return text + (" · simulated" if run.get("simulated") else "")


def query_run_id() -> int | None:
    """The run id in the URL, or None when absent or not a number."""
    value = st.query_params.get(RUN_PARAM)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


NO_RUN_HINT = "No run yet. Start one on the **Run** page, or click **Try the demo** on Home."


def pick_run(*, key: str = "run_picker", empty_hint: str = NO_RUN_HINT) -> dict[str, Any] | None:
    """A run selector, defaulting to `?run=`, else the newest run; keeps the URL in step.

    Args:
        key: the selectbox's widget key.
        empty_hint: what to tell the user when there is no run yet (markdown).

    Returns:
        The chosen run (as `storage.results.runs.list_runs` gives it), or None when there is no run.
    """
    runs = list_runs(db())
    if not runs:
        st.info(empty_hint, icon=":material/info:")
        return None
    by_id = {run["id"]: run for run in runs}
    ids = list(by_id)
    wanted = query_run_id()
    if wanted is not None and wanted not in by_id:
        st.warning(f"There is no run #{wanted}; showing the newest run instead.")
    # The URL is the one place the chosen run lives. The widget is set from it before it is
    # drawn (a value set through session state reaches the browser too, where dropping the
    # key did not: the browser sent its old choice back and the page fell back to it), and a
    # choice made in the widget is written to the URL by the callback, before the next run.
    if wanted in by_id:
        st.session_state[key] = wanted
    elif st.session_state.get(key) not in by_id:
        st.session_state[key] = ids[0]

    def follow_choice() -> None:
        st.query_params[RUN_PARAM] = str(st.session_state[key])

    chosen = st.selectbox("Run", ids, format_func=lambda i: run_label(by_id[i]), key=key,
                          on_change=follow_choice)
    if query_run_id() != chosen:
        st.query_params[RUN_PARAM] = str(chosen)
    return by_id[chosen]


def dataset_for_panel(
    panel: Panel, datasets: list[dict[str, Any]], runs: list[dict[str, Any]]
) -> int | None:
    """The dataset a new run of `panel` should start on: the one its newest run judged, else
    the newest dataset whose fields every critic's prompt finds, else None (no preference).

    "Run this panel" used to land on the newest dataset, whatever the panel was written for.

    Args:
        panel: the panel about to run.
        datasets: as `storage.datasets.dataset_store.list_datasets` gives them (newest first).
        runs: as `storage.results.runs.list_runs` gives them (newest first).
    """
    ids = {int(d["id"]) for d in datasets}
    version = panel_hash(panel)
    for run in runs:
        if run["panel_hash"] == version and int(run["dataset_id"]) in ids:
            return int(run["dataset_id"])
    for dataset in datasets:
        try:
            panel.check_fields(list(dataset["fields"] or []))
        except JuryboxError:
            continue
        return int(dataset["id"])
    return None
