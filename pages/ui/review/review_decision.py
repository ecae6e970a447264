"""The Review page's decision on the open item: the form (a label or a score, a SPLIT's children
and a MERGE's target, a note), its keys, Keep my blind label, and Save.

Save is a callback: it runs before the list's fragment reruns, so the rerun draws the next item
at once, in one run. A refused save keeps its sentence for the rerun to show, and the draft.

One save per form drawn: the form records its draft (the item, and the pass) as the one open,
Save is keyed by that draft and takes it. A submit that arrives late, after its item was saved
and the next one opened (a second Ctrl+Enter, a double click), finds its draft no longer open
and is dropped: it can never be recorded on an item the reviewer was not looking at.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.runs.messages import EXPECTED, sentence_for
from pages.ui.review import review_filter_bar as fb
from pages.ui.review import review_keys as keys
from pages.ui.review import review_list as rl
from pages.ui.review.decision_form import (
    checked_decision,
    curation_fields,
    preselected_label,
    unactionable_hint,
)
from pages.ui.review.review_context import ReviewRun
from pages.ui.review.review_moves import count_move, keep_blind_label, open_item
from pages.ui.state import db
from pages.ui.text_format import plain
from storage.db import StorageError
from storage.reviewing.overrides import add_override


def _score_key(review: ReviewRun, draft: str, detail: dict[str, Any]) -> str:
    """The score widget's key: the draft's, and the rule's score it starts from. A criterion
    mark saved below rescores the item: a widget keyed by the item only kept offering the old
    score, and Save as it stood recorded it over the reviewer's mark."""
    rule_score = (detail.get("decision") or {}).get("final_score")
    return f"{review.k}score.{draft}.{rule_score}"


def _decision_values(review: ReviewRun, draft: str, detail: dict[str, Any]
                     ) -> tuple[str | None, str, str, str | None]:
    """The decision form's label, note, children text and merge target, as submitted."""
    state = st.session_state
    k = review.k
    if review.panel.scale.is_numeric:
        score = state.get(_score_key(review, draft, detail))
        label = None if score is None else str(score)
    else:
        label = state.get(f"{k}label.{draft}")
    return (label, str(state.get(f"{k}note.{draft}") or ""),
            str(state.get(f"{k}children.{draft}") or ""), state.get(f"{k}merge.{draft}"))


def save_decision(review: ReviewRun, item_id: str, hidden: bool, filters: fb.Filters, who: str,
                  detail: dict[str, Any]) -> None:
    """The decision form's Save (a callback: it runs before the fragment reruns, so the rerun
    draws the next item at once, in one run). A refusal is kept for the rerun to show."""
    run_id = review.run_id
    draft = f"{item_id}.blind" if hidden else item_id
    if st.session_state.get(review.open_draft_key) != draft:
        # A stale submit: its form was saved already, another item is open now.
        st.session_state[review.stale_key] = True
        return
    # Taken before the save: a second submit of this form, handled before the next form is
    # drawn, is stale too. A refused save draws the form again, which opens the draft again.
    del st.session_state[review.open_draft_key]
    label, note, children_text, merge_into = _decision_values(review, draft, detail)
    try:
        if label is None:
            raise StorageError("Pick a label first: the decision is what gets saved.")
        decided = checked_decision(review.panel, detail, label, children_text, merge_into)
        if hidden:
            # Stay on the item: the critics are revealed, and the reviewer may revise.
            add_override(db(), run_id, item_id, label, note, who, blind=True, **decided)
            st.session_state[review.flash_key] = (f"Saved your blind label {plain(label)} for "
                                                  f"{plain(item_id)}. The critics are shown now.")
            count_move(review)
            return
        add_override(db(), run_id, item_id, label, note, who, **decided)
        # Saved first, then the next undecided item claimed (which frees this one's lease):
        # the item stays held until it is decided, and the claim passes it over once it is.
        following = rl.next_item(run_id, item_id, filters, who, undecided=True)
        open_item(review, following, filters, f"Saved {plain(label)} for {plain(item_id)}")
    except EXPECTED as error:
        text = sentence_for(error) or str(error)
        st.session_state[review.error_key] = plain(f"The override was not saved: {text}")


def decision_form(review: ReviewRun, detail: dict[str, Any], item_id: str, filters: fb.Filters,
                  reviewer: str, hidden: bool, mine: dict[str, Any] | None, held: bool) -> None:
    """The reviewer's decision on the open item, its keys, and Keep (after a blind label)."""
    k, panel = review.k, review.panel
    if review.error_key in st.session_state:  # a refused save: its sentence, the draft kept
        st.error(st.session_state.pop(review.error_key), icon=":material/error:")
    # No clear_on_submit: a refused save keeps what was typed. The label and note widgets are
    # keyed by item (and by blind pass or revision), so moving on opens a blank draft.
    draft = f"{item_id}.blind" if hidden else item_id
    options: list[str] = []
    st.session_state[review.open_draft_key] = draft  # the one draft Save may record
    # The decision and its keys in one container: the keyboard script finds it by its key.
    decision = st.container(key=review.decision_key)
    # No Enter-to-submit: a text area in a form submits it on Ctrl+Enter by itself, and Save's
    # own shortcut is Ctrl+Enter too; with both, one key press sent two saves. The text area
    # still commits what was typed before Save's shortcut submits it (seen in Chromium).
    with decision, st.form(k + "override", border=True, enter_to_submit=False):
        st.markdown("**Your label** (the critics are hidden)" if hidden else "**Your decision**")
        hint = None if hidden else unactionable_hint(panel, detail)
        if hint:
            st.caption(hint)
        if panel.scale.is_numeric:
            # The rule's score (a band is no number), else the label as a figure.
            rule_score = (detail.get("decision") or {}).get("final_score")
            default = None if hidden else (detail.get("final_label") if rule_score is None
                                           else rule_score)
            try:
                default_score = float(default) if default is not None else None
            except ValueError:
                default_score = None
            if default_score is None and not hidden:
                default_score = panel.scale.min
            st.number_input("Score", panel.scale.min, panel.scale.max, default_score,
                            key=_score_key(review, draft, detail))
        else:
            options = list(panel.scale.labels)
            # No hint in a blind pass; never a label that Save would then refuse.
            final = None if hidden else preselected_label(panel, detail, options)
            st.radio("Label", options, horizontal=True,
                     index=options.index(final) if final in options else None,
                     format_func=plain,  # option labels are markdown: a scale's
                     key=f"{k}label.{draft}")  # labels are data
        # A SPLIT's children and a MERGE's target, prefilled from the latest decision.
        curation_fields(panel, int(review.run["dataset_id"]), {} if hidden else detail, k, draft)
        st.text_area("Note (why)", key=f"{k}note.{draft}", height=80)
        st.form_submit_button(
            "Save and show the critics" if hidden else "Save and go to the next item",
            type="primary", shortcut=keys.SAVE_KEY, disabled=held, key=f"{k}save.{draft}",
            on_click=save_decision, args=(review, item_id, hidden, filters, reviewer, detail))
    decision.caption(keys.shortcuts_caption(options))
    # Signed in: the name comes from the sign-in, nothing to remember in the browser.
    keys.keyboard(review.decision_key, int(st.session_state.get(review.move_key) or 0),
                  "" if review.person.signed_in else reviewer, review.reviewer_key)
    if mine is not None:
        st.button("Keep my blind label and go to the next item", icon=":material/skip_next:",
                  key=f"{k}keep.{item_id}", on_click=keep_blind_label,
                  args=(review, item_id, filters, reviewer))
