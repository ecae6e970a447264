"""The Agreement page's calibration section: what the reviews teach the panel (suggested
weights and their projected effect; few-shot examples for one critic), each savable as a new
panel version."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.analysis.calibration import Calibration
from judging.analysis.few_shot import Example, render_examples
from judging.analysis.label_gate import REVIEWER_ALPHA
from judging.panel.panel_model import Panel
from judging.runs.stored.calibrate import (
    calibration_gate,
    few_shot_panel,
    run_calibration,
    save_panel_version,
    try_on_disputed,
)
from pages.ui.agreement.agreement_data import Stamp, calls_stamp
from pages.ui.error_notes import user_errors
from pages.ui.panel.panel_draft import RUN_PANEL_PARAM
from pages.ui.state import db, db_path, worker_key_lookup
from pages.ui.text_format import plain
from storage.reviewing.overrides import human_labels, overrides_stamp

# No switch for large runs: calibration reads the votes as integer arrays and votes each distinct
# pattern once (`judging.analysis.code_calibration`): 8.9 s and 860 MB at 1,000,000 items x 3 critics on
# the shared 2-core machine, where the `Verdict` objects took 262 s and 3.1 GB side by side
# (`benchmarks.large_analysis`).


def _percent(p: Any) -> str:
    if p.value is None:
        return "—"
    return f"{p.value:.0%} ({p.low:.0%}–{p.high:.0%}, n={p.n})"


def _saved_key(run_id: int, what: str) -> str:
    return f"cal{run_id}.{what}.saved"


def _remember_saved(run_id: int, what: str, name: str, version: str) -> None:
    # Kept in the session: the confirmation and its link stay through later reruns (the next
    # click elsewhere on the page used to wipe them).
    st.session_state[_saved_key(run_id, what)] = (name, version)


def _show_saved(run_id: int, what: str) -> None:
    """The saved version's confirmation, with a link that opens Run with that panel chosen."""
    saved = st.session_state.get(_saved_key(run_id, what))
    if not saved:
        return
    name, version = saved
    st.success(f"Saved {plain(repr(name))} as version {version}.")
    st.page_link("pages/run.py", label=f"Run {name}", icon=":material/play_arrow:",
                 query_params={RUN_PANEL_PARAM: version})


# A resource, not data: at 1,000,000 items the projection holds two million-entry dicts, and
# `cache_data` would unpickle a copy of them on every rerun. Shared and only read.
@st.cache_resource(max_entries=4, show_spinner="Calibrating...")
def _calibration(path: str, run_id: int, stamp: Stamp,
                 humans: tuple[tuple[str, str], ...], gate: float | None) -> Calibration:
    # Re-voting every stored verdict twice costs more than a rerun of the page: cached until
    # the verdicts or the human labels change (they are the key).
    del path, stamp, humans  # part of the cache key only
    return run_calibration(db(), run_id, min_reviewer_alpha=gate)


@st.cache_data(max_entries=8, show_spinner="Choosing examples...")
def _few_shot(path: str, run_id: int, stamp: Stamp, reviews: tuple[int, int], critic: str,
              k: int, gate: float | None) -> tuple[list[Example], Panel]:
    # Reads every verdict of the critic and every item's fields: cached until the verdicts or
    # the reviews (labels and notes: `overrides_stamp`) change, not redone on every rerun.
    del path, stamp, reviews  # part of the cache key only
    return few_shot_panel(db(), run_id, critic, k=k, min_reviewer_alpha=gate)


def _reviewer_gate(run_id: int) -> float | None:
    """The user's threshold on the reviewers' agreement, from the section's controls (None:
    the gate is off)."""
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    on = left.toggle("Use the human labels only when the reviewers agree",
                     key=f"cal{run_id}.gate",
                     help="Reviewers who disagree with each other teach the panel noise. On: "
                     "calibration and examples wait until the reviewers' Krippendorff's alpha "
                     "on the items two of them labelled (the Team page's figure) reaches the "
                     "threshold.")
    if not on:
        return None
    return float(right.number_input("Reviewers' alpha at least", min_value=-1.0,
                                    max_value=1.0, value=REVIEWER_ALPHA, step=0.05,
                                    format="%.3f", key=f"cal{run_id}.gate_alpha"))


def calibration_section(run: dict[str, Any]) -> None:
    """Draw the section for `run` (nothing to learn yet: a sentence saying what to do)."""
    run_id = int(run["id"])
    st.subheader("Calibration: what the reviews teach the panel")
    threshold = _reviewer_gate(run_id)
    if threshold is not None:
        # Not cached: it reads the reviewers' labels only (as the Team page does on every
        # rerun), so a new label on the overlap opens the gate at once.
        gate = calibration_gate(db(), run_id, threshold)
        if not gate.open:
            st.info(plain(gate.sentence()), icon=":material/group:")
            return
        st.caption(plain(gate.sentence()))
    calibration = None
    with user_errors("No calibration yet"):
        humans = tuple(sorted(human_labels(db(), run_id).items()))
        calibration = _calibration(str(db_path()), run_id, calls_stamp(run), humans, threshold)
    if calibration is None:
        return
    st.caption(
        f"Each critic against {calibration.from_humans:,} human labels and, where no human "
        f"looked, {calibration.from_dawid_skene:,} Dawid-Skene estimates. The suggested weight "
        "is log(p (K-1) / (1-p)) of its accuracy p among K labels (0 at chance or worse), with "
        "the weighted strategy.")
    st.dataframe(
        [{"critic": c.critic, "accuracy (95% CI)": _percent(c.accuracy), "weight now": c.weight,
          "suggested weight": c.suggested,
          "most frequent mistake": (f"said {c.top_confusion[0][0]} for {c.top_confusion[0][1]} "
                                    f"({c.top_confusion[1]}×)" if c.top_confusion else "none")}
         for c in calibration.critics],
        hide_index=True, column_config={"critic": st.column_config.TextColumn()})
    for note in calibration.notes:
        st.caption(plain(note))
    projection = calibration.projection
    # Text that wraps, not st.metric: a metric cut "33% (14%–61%, n=12)" to "33% (14%-61%, n...".
    cols = st.columns(3)
    for col, title, value in (
            (cols[0], "Final labels that would change", f"{len(projection.changed):,}"),
            (cols[1], "Consensus vs humans now", _percent(projection.vs_humans_before)),
            (cols[2], "With the suggestion", _percent(projection.vs_humans_after))):
        col.markdown(f"{title}  \n**{value}**")
    st.caption("Projected by voting the stored verdicts again: no call is made. Running the "
               "saved version answers from the cache, and decides exactly this.")
    if projection.changed:
        st.dataframe([{"item": item, "now": projection.before[item],
                       "with the suggestion": projection.after[item]}
                      for item in projection.changed], hide_index=True,
                     column_config={"item": st.column_config.TextColumn()})
    if st.button("Save the suggestion as a new panel version", icon=":material/save:",
                 key=f"cal{run_id}.save"):
        name = f"{calibration.suggested.name} (calibrated)"
        _remember_saved(run_id, "weights", name,
                        save_panel_version(db(), calibration.suggested, name))
    _show_saved(run_id, "weights")

    st.markdown("**Few-shot examples from the reviews**")
    worst = min(calibration.critics, key=lambda c: c.accuracy.value or 0.0).critic
    names = [c.critic for c in calibration.critics]
    left, right = st.columns([2, 1])
    critic = left.selectbox("For critic", names, index=names.index(worst), key=f"cal{run_id}.critic")
    k = int(right.number_input("Examples", 1, 8, 4, key=f"cal{run_id}.k"))
    with user_errors("No examples"):
        examples, panel = _few_shot(str(db_path()), run_id, calls_stamp(run),
                                    overrides_stamp(db(), run_id), critic, k, threshold)
        st.caption(f"{len(examples)} reviewed items with a note, the critic's mistakes first (one "
                   "per kind of mistake), added to its system prompt:")
        shown = next(c for c in panel.critics if c.name == critic).placeholders
        st.code(render_examples(examples, shown), language=None, wrap_lines=True)
        left, right = st.columns(2)
        if left.button("Try it on the items it got wrong", icon=":material/science:",
                       key=f"cal{run_id}.try", help="Asks the critic again, with the examples, "
                       "about up to 20 reviewed items where its label differed from the "
                       "human's: real calls, nothing stored."):
            with st.spinner(f"Asking {critic} again…"):
                rows = try_on_disputed(db(), run_id, panel, critic,
                                       key_lookup=worker_key_lookup(),
                                       min_reviewer_alpha=threshold)
            fixed = sum(r.after == r.human for r in rows)
            st.info(f"With the examples, {critic} now agrees with the human on {fixed} of "
                    f"{len(rows)} items it had got wrong.", icon=":material/science:")
            st.dataframe([{"item": r.item_id, "human": r.human, "before": r.before,
                           "with examples": r.after} for r in rows], hide_index=True,
                         column_config={"item": st.column_config.TextColumn()})
        if right.button("Save as a new panel version", icon=":material/save:",
                        key=f"cal{run_id}.few_shot"):
            name = f"{panel.name} ({critic} with {len(examples)} examples)"
            _remember_saved(run_id, "few_shot", name, save_panel_version(db(), panel, name))
        _show_saved(run_id, "few_shot")
