"""The Review page's list and open item, as one fragment (`review_loop`): a save, Next,
Previous, Skip, a row picked or a page turned reruns that fragment only, never the run picker,
the filters or the reviewer's row above it (at 100,000 items a save that reran the whole page
took 0.9 s to open the next item).
"""

from __future__ import annotations

import math

import streamlit as st

from judging.runs.stored.evidence import fill_requests
from judging.runs.stored.stored_run import decision_rule
from pages.ui.agreement import audit_view
from pages.ui.error_notes import user_errors
from pages.ui.review import review_filter_bar as fb
from pages.ui.review import review_list as rl
from pages.ui.review.review_context import ReviewRun
from pages.ui.review.review_item import item_panel
from pages.ui.review.review_moves import open_item
from pages.ui.state import db
from pages.ui.text_format import count_of, plain
from storage.reviewing.leases import claim_next, held_by_others
from storage.reviewing.review_queue import item_detail


def _give_way(review: ReviewRun, filters: fb.Filters, reviewer: str) -> None:
    """The open item was chosen by the page under another name (none, on arrival, when it
    could not tell who holds what): if someone else holds it, open the next free item instead
    and say who has it. An item the reviewer chose (a link, a tick, Previous) stays, its holder
    named above it and Save off."""
    chosen = st.session_state.get(review.chosen_key)
    current = st.session_state.get(review.item_key)
    if not reviewer or chosen is None or chosen[0] != current or chosen[1] == reviewer:
        return
    st.session_state[review.chosen_key] = (current, reviewer)
    holder = held_by_others(db(), review.run_id, [str(current)], reviewer).get(str(current))
    if holder is None:
        return
    # The shared queue's next item after it, leased at once (`storage.reviewing.leases.claim_next`).
    following = None
    with user_errors():
        following = claim_next(db(), review.run_id, reviewer, filters.where, sort=filters.sort,
                               after=str(current))
    if following is not None:  # else it stays, with the holder named and Save off
        open_item(review, following, filters, f"{plain(holder.reviewer)} has {plain(current)} "
                  "open: this is the next item nobody else has")


@st.fragment
def review_loop(review: ReviewRun, filters: fb.Filters, reviewer: str, blind: bool) -> None:
    """The list (one page), the open item, its decision and the ways to move on."""
    run_id, k = review.run_id, review.k
    item_key, page_key, sig_key = review.item_key, review.page_key, review.sig_key
    goto_key = review.goto_key
    # The audit queue's line ("Next to label") is drawn outside this fragment: once a label
    # moves the queue, the whole page is drawn again, or the line would name a done item.
    moved = st.session_state.pop(k + "queue_moved", False)
    if moved and filters.sort == audit_view.LABEL_NEXT:
        st.rerun()
    size_col, page_col, count_col = st.columns([1, 1, 3], vertical_alignment="bottom")
    page_size = size_col.selectbox("Rows per page", rl.PAGE_SIZES, index=1, key=k + "size")
    # Only one page of rows is read: a 100,000-item run costs what a 300-item one does.
    _, total = filters.table(run_id, limit=0)
    pages = max(1, math.ceil(total / page_size))

    if item_key not in st.session_state:  # first visit of this run: a shared link opens its item
        st.session_state[item_key] = st.query_params.get("item")
    signature = repr((filters.where, filters.sort, filters.rule, page_size))
    if st.session_state.get(sig_key) != signature:
        # New filters, search or sort: keep the open item if it still matches (on its page),
        # else start at the top of the new list.
        st.session_state[sig_key] = signature
        current = st.session_state.get(item_key)
        position = None
        if current is not None:
            with user_errors():
                position = filters.position(run_id, str(current))
        if position is None:
            st.session_state[item_key] = None
        st.session_state[page_key] = 1 if position is None else position // page_size + 1
    if st.session_state.get(item_key) is None and reviewer and total:
        # Nothing open yet (a first visit, a new list): the team's shared queue hands this
        # reviewer the first item nobody has decided or holds, leased to them at once.
        claimed = None
        with user_errors():
            claimed = claim_next(db(), run_id, reviewer, filters.where, sort=filters.sort)
            if claimed is not None:
                st.session_state[item_key] = claimed
                position = filters.position(run_id, claimed) or 0
                st.session_state[goto_key] = position // page_size + 1
    _give_way(review, filters, reviewer)
    if goto_key in st.session_state:  # a save moved on to an item of another page
        st.session_state[page_key] = st.session_state.pop(goto_key)
    st.session_state[page_key] = min(max(1, int(st.session_state.get(page_key) or 1)), pages)
    page = int(page_col.number_input("Page", 1, pages, key=page_key))
    count_col.caption(f"{count_of(total, 'item matches', 'items match')} · page {page} of "
                      f"{pages}")
    frame, _ = filters.table(run_id, limit=page_size, offset=(page - 1) * page_size)

    # The open item is always a row of the page shown: after a filter, a search or a page
    # change that leaves it out, the first row opens (never an item from an earlier filter).
    page_ids = [str(i) for i in frame["item_id"]]
    if st.session_state.get(item_key) not in page_ids:
        # The first row nobody else has open (a teammate walking the same list has the
        # first one), else the first row.
        held = held_by_others(db(), run_id, page_ids, reviewer) if reviewer else {}
        free = [i for i in page_ids if i not in held]
        st.session_state[item_key] = next(iter(free or page_ids), None)
        st.session_state[review.chosen_key] = (st.session_state[item_key], reviewer)
    current = st.session_state[item_key]

    # The table keeps its key while the list and the page stay, and its tick is moved to the
    # open item through session state: re-keying it by item (as before) rebuilt the whole grid
    # in the browser on every save. A tick the user moved since the last run opens that row.
    table_key = f"{k}table.{page}.{hash(signature)}"
    state = st.session_state.get(table_key)
    picked = list(state["selection"]["rows"]) if state else None
    # A stale save's message ticks the item it was made for: the browser's old tick, not a pick.
    stale = st.session_state.pop(review.stale_key, False)
    if picked and not stale and st.session_state.get(k + "tick") != (table_key, picked) \
            and picked[0] < len(page_ids):
        current = st.session_state[item_key] = page_ids[picked[0]]
    wanted = [page_ids.index(current)] if current in page_ids else []
    if state is not None and picked != wanted:
        st.session_state[table_key] = {"selection": {"rows": wanted, "columns": []}}
    st.session_state[k + "tick"] = (table_key, wanted)

    shown, column_config = rl.table_columns(frame, blind=blind)
    st.dataframe(
        rl.table_frame(frame, shown),
        hide_index=True,
        height=min(38 + 35 * len(frame), 420),
        on_select="rerun",
        selection_mode="single-row",
        selection_default={"selection": {"rows": wanted}},
        key=table_key,
        column_config=column_config,
        placeholder="—",  # an undefined alpha, a missing figure: never "None"
    )
    st.caption("Tick a row to open that item below (or walk the list with the keys under the "
               "decision); saving a decision moves on to the next item of this list.")

    if current is None or total == 0:  # no match: no stale item from an earlier filter either
        st.info("No item matches these filters. Loosen one above: for instance turn off "
                "**Disagreements only**, or clear the search.",
                icon=":material/filter_alt_off:")
        return
    item_id = str(current)
    if st.query_params.get("item") != item_id:
        st.query_params["item"] = item_id
    st.session_state[review.url_item_key] = item_id  # see pages/ui/review/review_link.py

    detail = None
    with user_errors():
        detail = fill_requests(db(), run_id, item_detail(db(), run_id, item_id,
                                                         decision_rule(review.panel)))
    if detail is None:
        st.session_state[item_key] = None
        return
    item_panel(review, detail, item_id, filters, reviewer, blind, total)
