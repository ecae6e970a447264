"""Moving through the Review list: Next, Previous, Skip, Keep my blind label, and the move a
save makes. These are button callbacks: they run before the list's fragment reruns, so the
rerun draws the item moved to at once, with a one-time line saying what was done.
"""

from __future__ import annotations

import streamlit as st

from pages.ui.review import review_filter_bar as fb
from pages.ui.review import review_list as rl
from pages.ui.review.review_context import ReviewRun
from pages.ui.text_format import plain


def page_size(review: ReviewRun) -> int:
    """Rows per page as the list's selectbox has it (its default before it is drawn)."""
    return int(st.session_state.get(review.k + "size") or rl.PAGE_SIZES[1])


def count_move(review: ReviewRun) -> None:
    """One more move of the loop (the keyboard script refocuses on each), and the audit queue
    to be recomputed (its line is drawn outside the loop's fragment)."""
    st.session_state[review.move_key] = int(st.session_state.get(review.move_key) or 0) + 1
    st.session_state[review.k + "queue_moved"] = True


def open_item(review: ReviewRun, following: str | None, filters: fb.Filters, done: str) -> None:
    """Open `following` (None: there is none: say so and stay), with a one-time line saying
    what was `done`. Called from the loop's buttons (before the fragment reruns)."""
    count_move(review)
    if following is None:
        st.session_state[review.flash_key] = f"{done}: that was the last item of this list."
        return
    # The saved item may have left the list (e.g. "Overridden: not yet"): find the next one
    # where it sits now.
    position = filters.position(review.run_id, following)
    st.session_state[review.item_key] = following
    if position is not None:
        st.session_state[review.goto_key] = position // page_size(review) + 1
    st.session_state[review.flash_key] = f"{done}."


def step(review: ReviewRun, item_id: str, filters: fb.Filters, who: str, where: str) -> None:
    """Next, Previous or Skip (`where`): open that item without saving anything."""
    if where == "previous":
        target = rl.previous_item(review.run_id, item_id, filters)
        if target is None:
            st.session_state[review.flash_key] = "That is the first item of this list."
            return
        open_item(review, target, filters, f"Back to {plain(target)}")
        return
    undecided = where == "skip"
    target = rl.next_item(review.run_id, item_id, filters, who, undecided=undecided)
    done = (f"Skipped {plain(item_id)}, left undecided" if undecided
            else f"Left {plain(item_id)} as it was")
    open_item(review, target, filters, done)


def keep_blind_label(review: ReviewRun, item_id: str, filters: fb.Filters, who: str) -> None:
    """Keep the blind label saved for `item_id` as it is and open the next item."""
    open_item(review, rl.next_item(review.run_id, item_id, filters, who, undecided=True),
              filters, f"Kept your blind label for {plain(item_id)}")
