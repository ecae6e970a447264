"""The Review page's top, above the list: the run under review (`ReviewRun`: the run, its panel,
the visitor, and the session-state keys of what the user looks at), the reviewer's row (name,
blind first pass, only the items assigned) and the filters.

What the user is looking at lives in one place: session state keyed by run (the open item, the
page, the filters' widgets, the reviewer), the open item mirrored in the URL for sharing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import streamlit as st

from judging.panel.panel_model import Panel
from judging.run_status import RunStatus
from pages.ui.review import review_filter_bar as fb
from pages.ui.review import review_keys as keys
from pages.ui.run_picker import pick_run
from pages.ui.simulated import simulated_notice, what_ran
from pages.ui.state import db, db_path
from pages.ui.team_view import Visitor, reviewer_field, visitor
from pages.ui.text_format import plain
from storage.results.runs import get_run


@dataclass(frozen=True)
class ReviewRun:
    """The run under review, read once per script run and handed to every part of the page
    (the list's fragment keeps the one of the last full run, as it kept the page's globals)."""

    run: dict[str, Any]
    panel: Panel
    person: Visitor  # the reviewer of every override when signed in

    @property
    def run_id(self) -> int:
        return int(self.run["id"])

    @property
    def critics(self) -> list[str]:
        return list(self.run["critics"])

    @property
    def k(self) -> str:
        """The prefix of every session-state key of this run's review."""
        return f"rv{self.run_id}."

    @property
    def item_key(self) -> str:
        return self.k + "item"

    @property
    def url_item_key(self) -> str:
        """The item the list last put in the URL, whatever the run (switching runs keeps the
        URL's item and is no link): another item there is a link followed."""
        return "rv.url_item"

    @property
    def reviewer_key(self) -> str:
        """The Reviewer field's key."""
        return self.k + "reviewer"

    @property
    def page_key(self) -> str:
        return self.k + "page"

    @property
    def sig_key(self) -> str:
        return self.k + "filters_seen"

    @property
    def goto_key(self) -> str:
        """The page to turn to: the page widget can only be set before it is drawn."""
        return self.k + "goto_page"

    @property
    def chosen_key(self) -> str:
        """(item, reviewer) when the page itself chose the open item, for that reviewer."""
        return self.k + "chosen_for"

    @property
    def flash_key(self) -> str:
        return self.k + "flash"

    @property
    def error_key(self) -> str:
        return self.k + "save_error"

    @property
    def move_key(self) -> str:
        """Counts the loop's moves: the keyboard script refocuses on each."""
        return self.k + "moves"

    @property
    def decision_key(self) -> str:
        return self.k + "decision"

    @property
    def open_draft_key(self) -> str:
        """The draft whose decision form is drawn, until a save of it is taken: a save made
        for any other draft (or a second one for the same) is stale and refused."""
        return self.k + "open_draft"

    @property
    def stale_key(self) -> str:
        """Set by a stale save: the message that carried it also carried the widgets as the
        browser had them then (the table ticked on the item just saved), not a choice."""
        return self.k + "stale_submit"


def open_review() -> ReviewRun:
    """The run picked (the page stops without one), and what to know before reviewing it: that
    what judged it, that it is still running."""
    person = visitor()
    run = pick_run()
    if run is None:
        st.stop()
    run_id = int(run["id"])
    panel = fb.run_panel(get_run(db(), run_id)["panel_yaml"])
    ran = what_ran(db(), run)
    if ran:
        st.caption(ran)
    notice = simulated_notice(db(), run)
    if notice:
        st.warning(plain(notice), icon=":material/smart_toy:")
    if not RunStatus(run["status"]).finished:
        st.info(f"Run #{run_id} is {run['status']}: items appear here as the critics answer.")
    return ReviewRun(run=run, panel=panel, person=person)


def reviewer_row(review: ReviewRun) -> tuple[str, bool, bool]:
    """Who is reviewing, whether in a blind first pass, whether only their assigned items:
    (reviewer, blind, only_mine).

    Who is reviewing, in one field above the list (not inside the decision form, where a name
    only counts once saved): the signed-in email, else the name typed (kept across saves, runs,
    reloads and deep links: this browser remembers it). Blind labels, the assignment, the item
    reserved and every save are this reviewer's. Drawn before the filters: a blind first pass
    hides the filters that would tell what the critics said.
    """
    keys.recall_reviewer()
    who_col, blind_col, mine_col = st.columns([2, 1, 2], vertical_alignment="bottom")
    with who_col:
        reviewer = reviewer_field(review.reviewer_key, review.person).strip()
    with blind_col:
        blind = fb.blind_toggle(review.run_id)
    with mine_col:
        only_mine = fb.assigned_toggle(review.run_id, reviewer)
    return reviewer, blind, only_mine


def filter_section(review: ReviewRun, reviewer: str, *, blind: bool,
                   only_mine: bool) -> fb.Filters:
    """The filter bar, narrowed to the reviewer's assigned items when asked (and said so)."""
    filters = fb.filter_bar(review.run_id, fb.filter_labels(review.run, str(db_path())),
                            review.critics, review.panel, blind=blind)
    if only_mine:
        filters.where = dataclasses.replace(filters.where, assigned_to=reviewer)
        st.caption(f"This list holds only the items assigned to {plain(reviewer)} (switch off "
                   "**Only the items assigned** above to see every item).")
    return filters
