"""A link that names an item (`/review?run=R&item=I`: Compare's flipped items, Team's "Open X on
Review", a shared URL) opens that item, whatever the list's filters were.

Why: Review starts with "Disagreements only" on, so a link to an item every critic agreed on
opened another item (the first contested one), without a word; a same-tab link to a run visited
before in the session opened the item left open then. Here a followed link opens its item and,
when a filter leaves it out of the list, clears the filters once and says which were turned off.

A link is "followed" when the URL names an item the page did not put there itself: the list's
fragment mirrors the open item in the URL and records it (`ReviewRun.url_item_key`).
"""

from __future__ import annotations

import streamlit as st

from pages.ui.review import review_filter_bar as fb
from pages.ui.review.review_context import ReviewRun
from pages.ui.text_format import plain

# The filters as a link to one item leaves them: the defaults, with "Disagreements only" off
# (the item may be one every critic agreed on). The Review filters' one list of defaults is
# review_filter_bar's; it is read here rather than copied.
_CLEARED = {**fb.FILTER_DEFAULTS, "disagree": False, "blind_search": "", "mine": False}
# What the page calls each filter (its widget's label), for the sentence saying what was cleared.
_NAMES = {
    "disagree": "Disagreements only", "needs": "Needs a decision", "ties": "Tied votes only",
    "unstable": "Unstable items only", "consensus": "Consensus", "critic": "Critic",
    "critic_value": "That critic's verdict", "failures": "Failures", "overridden": "Overridden",
    "use_alpha": "Filter per-item alpha",
    "search": "Search items and reasons", "disputed": "Criterion in dispute",
    "blind_search": "Search items", "mine": "Only the items assigned",
}


def _reset_key(review: ReviewRun) -> str:
    return review.k + "link_reset"  # the linked item whose filters are to be cleared


def _note_key(review: ReviewRun) -> str:
    return review.k + "link_cleared"  # the filters cleared for it (their names)


def follow_item_link(review: ReviewRun) -> str | None:
    """The item a link just named (None when the URL names none, or the item the page itself
    mirrored there), opened. Call before the reviewer's row and the filters are drawn: when the
    last run found the item filtered out, the filters are cleared here, before their widgets."""
    wanted = st.query_params.get("item")
    if not wanted or wanted == st.session_state.get(review.url_item_key):
        return None
    st.session_state[review.item_key] = wanted
    st.session_state.pop(review.sig_key, None)  # the list then turns to the page it sits on
    if st.session_state.get(_reset_key(review)) == wanted:
        # (The alpha range only filters while "Filter per-item alpha" is on: not named.)
        cleared = [_NAMES[name] for name, value in _CLEARED.items()
                   if name in _NAMES and review.k + name in st.session_state
                   and st.session_state[review.k + name] != value]
        for name, value in _CLEARED.items():
            st.session_state[review.k + name] = value
        for param in fb.PAIR_PARAMS:  # two critics' disagreements, opened from Agreement
            if param in st.query_params:
                del st.query_params[param]
                cleared.append("the two critics' disagreements")
        st.session_state[_note_key(review)] = sorted(set(cleared), key=cleared.index)
    return wanted


def show_linked_item(review: ReviewRun, filters: fb.Filters, wanted: str | None) -> None:
    """Once the filters are drawn: if they leave the linked item out, clear them and draw the
    page again (once); then say which filters were turned off to show it, or that the run has
    no such item."""
    if wanted is None:
        return
    if filters.position(review.run_id, wanted) is None:
        if st.session_state.get(_reset_key(review)) != wanted:
            st.session_state[_reset_key(review)] = wanted
            st.rerun()
        # Cleared and still not there: the run has no such item. Not retried; the list opens
        # at its first item and the URL follows it.
        st.session_state.pop(_reset_key(review), None)
        st.session_state.pop(_note_key(review), None)
        st.session_state[review.url_item_key] = wanted
        st.warning(f"Run #{review.run_id} has no item {plain(wanted)} (the link named it): "
                   "the list opens at its first item.", icon=":material/link_off:")
        return
    st.session_state.pop(_reset_key(review), None)
    cleared = st.session_state.pop(_note_key(review), None)
    if cleared:
        st.info(f"Opened {plain(wanted)} from the link: "
                f"{', '.join(f'**{name}**' for name in cleared)} "
                f"{'was' if len(cleared) == 1 else 'were'} turned off, as "
                f"{'it' if len(cleared) == 1 else 'they'} left this item out of the list.",
                icon=":material/link:")
