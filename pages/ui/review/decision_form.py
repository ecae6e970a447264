"""The parts of a decision form that Review and Team's adjudication share, so a lead is asked
for what a reviewer is asked for: a SPLIT's new child classes, a MERGE's target, and a label
preselected only when saving it as it stands would be accepted.

Draw them inside the caller's `st.form`; `checked_decision` turns what was typed into what
`storage.reviewing.overrides.add_override` records (or a sentence saying what is missing).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.panel.curation import check_decision, parse_children, unactionable
from judging.panel.panel_model import Panel
from pages.ui.state import db
from pages.ui.text_format import plain
from storage.datasets.dataset_store import field_values


def latest_decision(detail: dict[str, Any]) -> dict[str, Any]:
    """The item's latest override (`storage.reviewing.review_queue.item_detail`'s history), or {} if none."""
    history = detail.get("overrides") or []
    return history[-1] if history else {}


def preselected_label(panel: Panel, detail: dict[str, Any], options: list[str]) -> str | None:
    """The label to preselect: the item's final label, unless saving it as it stands would be
    refused (a SPLIT or MERGE consensus: the critics never name the children or the target,
    so the form would say "needs ..." after the reviewer only pressed Save)."""
    final = detail.get("final_label")
    if final not in options:
        return None
    latest = latest_decision(detail)
    if panel.curation.active and unactionable(
            panel.curation, final, latest.get("children"), latest.get("merge_into")):
        return None
    return str(final)


def unactionable_hint(panel: Panel, detail: dict[str, Any]) -> str | None:
    """Why the item's final decision needs one of yours, as markdown for `st.caption` (the
    reason escaped: it holds a label), or None."""
    if not panel.curation.active:
        return None
    latest = latest_decision(detail)
    final = detail.get("final_label")
    if final is not None and panel.curation.action_of(final) is None:
        return None  # a label with no curation meaning: nothing more to ask for
    why = unactionable(panel.curation, final, latest.get("children"), latest.get("merge_into"))
    return None if why is None else f"**Needs a decision**: {plain(why)}."


def curation_fields(panel: Panel, dataset_id: int, detail: dict[str, Any], prefix: str,
                    draft: str) -> tuple[str, str | None]:
    """A split's new child classes (one per line) and a merge's target, for a curation panel
    (nothing otherwise). Prefilled from the item's latest decision: reopening a SPLIT shows
    its children, a MERGE its target.

    Args:
        detail: the item (`storage.reviewing.review_queue.item_detail`); {} to prefill nothing (a blind pass).
        prefix, draft: the widgets' keys are `<prefix>children.<draft>` and
            `<prefix>merge.<draft>` (draft: the item, and the pass).

    Returns:
        (children as typed, the class to merge into or None).
    """
    curation = panel.curation
    children_text, merge_into = "", None
    if not curation.active:
        return children_text, merge_into
    latest = latest_decision(detail)
    if curation.split_label:
        children_text = st.text_area(
            f"If {plain(curation.split_label)}: the new child classes, one per line",
            value="\n".join(latest.get("children") or []), key=f"{prefix}children.{draft}", height=68)
    if curation.merge_label:
        classes = field_values(db(), dataset_id, curation.class_field or "")
        known = latest.get("merge_into")
        if known and known not in classes:
            classes = [known, *classes]
        merge_into = st.selectbox(
            f"If {plain(curation.merge_label)}: the class to merge into", classes,
            index=classes.index(known) if known else None, key=f"{prefix}merge.{draft}",
            placeholder="Type to search the classes")
    return children_text, merge_into


def checked_decision(panel: Panel, detail: dict[str, Any], label: str, children_text: str,
                     merge_into: str | None) -> dict[str, Any]:
    """The children and merge target to record with `label`, checked as Review checks them.

    Raises:
        DataError: a SPLIT without children, a MERGE without a target, or a part that does not
            go with the label (the sentence says what to do).
    """
    class_name = str(detail["fields"].get(panel.curation.class_field or "", detail["item_id"]))
    children, target = check_decision(panel.curation, label, parse_children(children_text),
                                      merge_into, class_name)
    return {"children": children, "merge_into": target}
