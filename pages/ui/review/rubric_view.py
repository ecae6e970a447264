"""Review of a rubric item: the item x criterion grid with every critic's mark and the panel's,
each critic's reason per criterion, and a reviewer's mark for one criterion."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.panel.rubric import MARKS, RubricConfig, rubric_score
from pages.ui.error_notes import user_errors
from pages.ui.state import db
from pages.ui.text_format import plain
from storage.db import StorageError
from storage.reviewing.criteria import add_criterion_override
from storage.reviewing.decisions import DecisionRule


def final_marks_of(detail: dict[str, Any]) -> dict[str, str | None]:
    """The item's final mark per criterion: a reviewer's latest, else the panel's vote."""
    marks = {c: v.get("mark") for c, v in ((detail.get("consensus") or {}).get("marks")
                                           or {}).items()}
    for row in detail.get("criterion_overrides", []):  # oldest first: the latest wins
        marks[row["criterion"]] = row["mark"]
    return marks


def rubric_grid(detail: dict[str, Any], rubric: RubricConfig, critics: list[str],
                rule: DecisionRule | None = None) -> None:
    """Every criterion as a row: its weight, each critic's mark, the panel's, whether it is in
    dispute, and a reviewer's mark; then each critic's reasons, and with the run's decision
    `rule` (`judging.runs.stored.stored_run.decision_rule`), the label the final marks give."""
    voted = (detail.get("consensus") or {}).get("marks") or {}
    said = {v["critic"]: v.get("marks") or {} for v in detail["verdicts"]}
    reviewed = {row["criterion"]: row["mark"] for row in detail.get("criterion_overrides", [])}
    rows = []
    for criterion in rubric.criteria:
        row: dict[str, Any] = {"criterion": criterion.id, "weight": criterion.weight}
        for critic in critics:
            row[critic] = (said.get(critic, {}).get(criterion.id) or {}).get("mark")
        vote = voted.get(criterion.id) or {}
        row["panel"] = vote.get("mark")
        row["in dispute"] = bool(vote.get("disputed"))
        row["reviewer"] = reviewed.get(criterion.id)
        rows.append(row)
    st.markdown("**Criteria**")
    st.dataframe(rows, hide_index=True, column_config={
        "criterion": st.column_config.TextColumn(), "weight": st.column_config.NumberColumn(
            format="%g"), **{c: st.column_config.TextColumn() for c in critics}})
    final = final_marks_of(detail)
    score = rubric_score(final, rubric)
    label = (f", label {plain(rule.label_of_score(score))} (by the panel's thresholds)"
             if rule is not None and score is not None else "")
    st.caption(
        "Score: the weight of the criteria met over the positive weight (negative weights are "
        f"penalties). With the final marks (a reviewer's where given): "
        f"{'none (nothing could be counted)' if score is None else f'{score:.2f}'}{label}.")
    with st.expander("Each critic's reasons, criterion by criterion"):
        for criterion in rubric.criteria:
            st.markdown(f"**{plain(criterion.id)}** · {plain(criterion.text)}")
            for critic in critics:
                entry = said.get(critic, {}).get(criterion.id) or {}
                if entry:
                    st.text(f"{critic}: {entry.get('mark')} · {entry.get('reasoning') or ''}")


def criterion_mark_form(run_id: int, item_id: str, rubric: RubricConfig, reviewer: str,
                        key: str, flash_key: str) -> None:
    """A reviewer's mark for one criterion, with a note (the history keeps every mark)."""
    if not reviewer.strip():
        return
    with st.form(f"{key}criterion.{item_id}", border=True):
        st.markdown("**Mark one criterion**")
        criterion = st.selectbox("Criterion", rubric.ids, key=f"{key}criterion_id.{item_id}")
        mark = st.radio("Mark", list(MARKS), horizontal=True, index=None,
                        key=f"{key}criterion_mark.{item_id}")
        note = st.text_input("Note (why)", key=f"{key}criterion_note.{item_id}")
        saved = st.form_submit_button("Save this criterion's mark")
    if saved:
        with user_errors("The mark was not saved"):
            if mark is None:
                raise StorageError("Pick a mark first: MET, UNMET or CANNOT_ASSESS.")
            add_criterion_override(db(), run_id, item_id, str(criterion), mark, note, reviewer)
            st.session_state[flash_key] = (f"Saved {plain(mark)} for {plain(str(criterion))} of "
                                           f"{plain(item_id)}.")
            st.rerun()
