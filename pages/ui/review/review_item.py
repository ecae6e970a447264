"""The open item on the Review page: its reservation, title and moves, the consensus (or the
blind first pass), its fields beside the decision, then (once the reviewer may see them) the
rubric grid, the critics or the jury tree, Re-judge, the history, and the bulk acceptance.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.run_status import RunStatus
from judging.runs.stored.stored_run import decision_rule
from pages.ui.error_notes import user_errors
from pages.ui.review import review_evidence as ev
from pages.ui.review import review_filter_bar as fb
from pages.ui.review import review_keys as keys
from pages.ui.review.jury_view import jury_tree
from pages.ui.review.review_context import ReviewRun
from pages.ui.review.review_decision import decision_form
from pages.ui.review.review_moves import step
from pages.ui.review.rubric_view import criterion_mark_form, rubric_grid
from pages.ui.state import db, db_path, registry, worker_key_lookup
from pages.ui.text_format import count_of, plain
from storage.results.jury_decisions import item_jury_decisions
from storage.reviewing.leases import take_lease
from storage.reviewing.overrides import accept_consensus, blind_label


def item_panel(review: ReviewRun, detail: dict[str, Any], item_id: str, filters: fb.Filters,
               reviewer: str, blind: bool, total: int) -> None:
    """The open item: its fields, the decision and the keys, then (once the reviewer may see
    them) the critics, the history and the bulk acceptance."""
    run_id, panel, k = review.run_id, review.panel, review.k
    # The item is reserved for this reviewer while it is open (`storage.reviewing.leases`): another
    # reviewer walking the same list is handed the next one instead.
    holder = None
    if reviewer:
        lease = take_lease(db(), run_id, item_id, reviewer)
        holder = lease if lease.reviewer != reviewer else None
    # What the last save did, shown once on the page it led to (a toast does not survive the
    # rerun that moves on to the next item).
    if review.flash_key in st.session_state:
        st.success(st.session_state.pop(review.flash_key), icon=":material/check:")
    title_col, nav_col = st.columns([3, 2], vertical_alignment="center")
    # No anchor: its slug would be made of the item id (data) and add a link to the page.
    title_col.subheader(f"Item {plain(item_id)}", anchor=False)
    with nav_col, st.container(horizontal=True, horizontal_alignment="right"):
        args = (review, item_id, filters, reviewer)
        st.button("Previous", icon=":material/arrow_back:", key=k + "previous",
                  shortcut=keys.PREVIOUS_KEY, on_click=step, args=(*args, "previous"))
        st.button("Next", icon=":material/arrow_forward:", key=k + "next",
                  shortcut=keys.NEXT_KEY, on_click=step, args=(*args, "next"))
        st.button("Skip", icon=":material/skip_next:", key=k + "skip",
                  shortcut=keys.SKIP_KEY, on_click=step, args=(*args, "skip"),
                  help="Leave this item undecided and open the next one nobody has decided")
    if holder is not None:
        st.warning(f"{plain(holder.reviewer)} has this item open (reserved until "
                   f"{holder.until}): press **Next** for one that is free. Saving is off "
                   "meanwhile, so the item is not decided twice.", icon=":material/lock:")
    # In a blind first pass the critics stay hidden until this reviewer has labelled the item.
    mine = blind_label(db(), run_id, item_id, reviewer) if blind and reviewer else None
    hidden = blind and mine is None
    if hidden:
        st.info("Blind first pass: give your label before the critics are shown. Their labels, "
                "reasons, the consensus and the gold label appear once you have saved it.",
                icon=":material/visibility_off:")
    else:
        st.text(ev.consensus_line(detail))
        for line in ev.cascade_lines(detail):  # what each cascade tier made of the item
            st.text(line)
        ev.thread_line(run_id, item_id, detail)  # a turn of a conversation: its thread's verdict
        if mine is not None:
            st.info(f"Your blind label: {plain(mine['label'])}. It is the one Agreement compares "
                    "the critics with; revise below if they change your mind, or keep it and "
                    "move on.", icon=":material/visibility:")
    fields_col, form_col = st.columns([3, 2])
    with fields_col:
        ev.item_fields(detail, panel.pairwise, show_gold=not hidden)
    with form_col:
        if not reviewer:
            # A decision says who made it, so the name comes first, on its own: typed just
            # before a click on Save, the name's change and the click race and the browser
            # drops the click. Once given, it stays for every save.
            st.info("Type your name in **Reviewer** above to record decisions: each one says "
                    "who made it.", icon=":material/person:")
            # The keys already: a number pressed just after the name waits for the decision.
            keys.keyboard(review.decision_key, int(st.session_state.get(review.move_key) or 0),
                          "", review.reviewer_key)
        else:
            decision_form(review, detail, item_id, filters, reviewer, hidden, mine,
                          holder is not None)

    if hidden:
        return  # nothing of the critics' until the blind label is in
    if panel.rubric.active:
        # Full width, one under the other: side by side the reviewer's marks ran off the
        # right edge. The marks of single criteria are a second way to decide, said so.
        rubric_grid(detail, panel.rubric, review.critics, decision_rule(panel))
        with st.expander("Mark single criteria instead (the score follows the marks)"):
            criterion_mark_form(run_id, item_id, panel.rubric, reviewer, k, review.flash_key)
    if panel.juries:  # a panel of juries: jury -> its critics -> its decision -> the panel's
        jury_tree(detail, panel, item_jury_decisions(db(), run_id, item_id))
    else:
        st.markdown("**Critics**")
        ev.critic_cards(detail, scale=panel.scale)
    _rejudge_button(review, item_id)
    _history(review, detail)
    if not blind:  # accepting the consensus is the opposite of a blind pass
        bulk_accept(review, filters, reviewer, total)


def _rejudge_button(review: ReviewRun, item_id: str) -> None:
    """Re-judging is for an item whose verdicts look wrong for a passing reason (an outage, a
    fixed prompt): every critic is called afresh, bypassing the cache, and its old verdicts
    replaced."""
    if st.button("Re-judge this item with every critic", icon=":material/refresh:",
                 key=f"{review.k}rejudge.{item_id}",
                 disabled=not RunStatus(review.run["status"]).finished):
        with user_errors("The item was not re-judged"):
            job = registry().rejudge_item(str(db_path()), review.run_id, str(item_id),
                                          key_lookup=worker_key_lookup())
            with st.spinner(f"Asking every critic about {plain(item_id)} again…"):
                job.wait(timeout=max(c.timeout_s for c in review.panel.critics) * 4)
            st.rerun()


def _history(review: ReviewRun, detail: dict[str, Any]) -> None:
    """Every override of the item, newest first (nothing before the first)."""
    if detail["overrides"]:
        st.markdown("**History of this item**")
        st.dataframe(
            [{"when": o["created_at"][:19], "label": o["label"], "reviewer": o["reviewer"],
              "blind": o["blind"], "note": o["note"],
              **({"children": ", ".join(o["children"]), "merge into": o["merge_into"]}
                 if review.panel.curation.active else {})}
             for o in reversed(detail["overrides"])],
            hide_index=True,
        )


def bulk_accept(review: ReviewRun, filters: fb.Filters, reviewer: str, total: int) -> None:
    """Accept the panel's consensus for every item of the list as filtered."""
    k = review.k
    with st.popover(f"Accept the consensus for {count_of(total, 'filtered item')}",
                    icon=":material/done_all:"):
        st.write(f"Each item's consensus label is recorded as an override by "
                 f"{plain(reviewer) or 'the reviewer (type your name above)'}. Items whose "
                 "vote abstained are skipped, and so is a consensus that needs a decision of "
                 "yours (a split without its new classes, a merge without its target).")
        sure = st.checkbox(f"Yes, accept the consensus for {count_of(total, 'item')}",
                           key=k + "bulk_sure")
        if st.button("Accept", type="primary", disabled=not sure, key=k + "bulk_go"):
            with user_errors("Nothing was accepted"):
                ids = list(filters.table(review.run_id, limit=None)[0]["item_id"])
                accepted = accept_consensus(db(), review.run_id, ids, reviewer,
                                            rule=decision_rule(review.panel))
                st.session_state[review.flash_key] = plain(accepted.sentence())
                st.rerun()
