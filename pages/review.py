"""Review: filter to contested items, read every critic side by side, override with a note.

The list, the open item and its decision are one fragment (`review_loop`): a save, Next,
Previous, Skip, a row picked or a page turned reruns that fragment only, never the run picker,
the filters or the reviewer's row above it (at 100,000 items a save that reran the whole page
took 0.9 s to open the next item).
"""

import dataclasses
import math
from typing import Any

import streamlit as st

from judging.run_status import RunStatus
from judging.runs.evidence import fill_requests
from judging.runs.final_decisions import decision_rule
from judging.runs.messages import EXPECTED, sentence_for
from pages.ui import audit_view
from pages.ui import review_keys as keys
from pages.ui import review_view as rv
from pages.ui.decision_form import (
    checked_decision,
    curation_fields,
    preselected_label,
    unactionable_hint,
)
from pages.ui.error_notes import user_errors
from pages.ui.jury_view import jury_tree
from pages.ui.rubric_view import criterion_mark_form, rubric_grid
from pages.ui.run_picker import pick_run
from pages.ui.shell import ensure_app_shell
from pages.ui.simulated import simulated_notice
from pages.ui.state import db, db_path, registry, worker_key_lookup
from pages.ui.team_view import reviewer_field, visitor
from pages.ui.text_format import plain
from storage.db import StorageError
from storage.jury_decisions import item_jury_decisions
from storage.leases import held_by_others, release_lease, take_lease
from storage.overrides import accept_consensus, add_override, blind_label
from storage.review_queue import item_detail
from storage.runs import get_run

ensure_app_shell()
st.title("Review")
person = visitor()  # the reviewer of every override when signed in
run = pick_run()
if run is None:
    st.stop()
run_id = int(run["id"])
critics = list(run["critics"])
panel = rv.run_panel(get_run(db(), run_id)["panel_yaml"])
if run["simulated"]:
    st.caption("Verdicts of this run come from the **simulated** vendor.")
notice = simulated_notice(db(), run)
if notice:
    st.warning(plain(notice), icon=":material/smart_toy:")
if not RunStatus(run["status"]).finished:
    st.info(f"Run #{run_id} is {run['status']}: items appear here as the critics answer.")

k = f"rv{run_id}."
# Who is reviewing, in one field above the list (not inside the decision form, where a name
# only counts once saved): the signed-in email, else the name typed (kept across saves, runs,
# reloads and deep links: this browser remembers it). Blind labels, the assignment, the item
# reserved and every save are this reviewer's. Drawn before the filters: a blind first pass
# hides the filters that would tell what the critics said.
keys.recall_reviewer()
who_col, blind_col, mine_col = st.columns([2, 1, 2], vertical_alignment="bottom")
with who_col:
    reviewer = reviewer_field(k + "reviewer", person).strip()
with blind_col:
    blind = rv.blind_toggle(run_id)
with mine_col:
    only_mine = rv.assigned_toggle(run_id, reviewer)
filters = rv.filter_bar(run_id, rv.filter_labels(run, str(db_path())), critics, panel,
                        blind=blind)
if only_mine:
    filters.where = dataclasses.replace(filters.where, assigned_to=reviewer)
    st.caption(f"This list holds only the items assigned to {plain(reviewer)} (switch off "
               "**Only the items assigned** above to see every item).")
# -- The audit sample (issue 25): "Draw an audit sample of N items", and the "Label next"
# queue recomputed before the table is read. Everything of it lives in pages/ui/audit_view.py.
audit_view.review_hook(run, filters, blind)
# -- end of the audit block
# What the user is looking at lives in one place: session state keyed by run (the open item,
# the page, the filters' widgets, the reviewer), the open item mirrored in the URL for sharing.
item_key, page_key, sig_key = k + "item", k + "page", k + "filters_seen"
goto_key = k + "goto_page"  # the page widget can only be set before it is drawn
flash_key, error_key = k + "flash", k + "save_error"
move_key = k + "moves"  # counts the loop's moves: the keyboard script refocuses on each
decision_key = k + "decision"


def _page_size() -> int:
    return int(st.session_state.get(k + "size") or rv.PAGE_SIZES[1])


def open_item(following: str | None, filters: rv.Filters, done: str) -> None:
    """Open `following` (None: there is none: say so and stay), with a one-time line saying
    what was `done`. Called from the loop's buttons (before the fragment reruns)."""
    st.session_state[move_key] = int(st.session_state.get(move_key) or 0) + 1
    st.session_state[k + "queue_moved"] = True
    if following is None:
        st.session_state[flash_key] = f"{done}: that was the last item of this list."
        return
    # The saved item may have left the list (e.g. "Overridden: not yet"): find the next one
    # where it sits now.
    position = filters.position(run_id, following)
    st.session_state[item_key] = following
    if position is not None:
        st.session_state[goto_key] = position // _page_size() + 1
    st.session_state[flash_key] = f"{done}."


def _score_key(draft: str, detail: dict[str, Any]) -> str:
    """The score widget's key: the draft's, and the rule's score it starts from. A criterion
    mark saved below rescores the item: a widget keyed by the item only kept offering the old
    score, and Save as it stood recorded it over the reviewer's mark."""
    rule_score = (detail.get("decision") or {}).get("final_score")
    return f"{k}score.{draft}.{rule_score}"


def _decision_values(draft: str, detail: dict[str, Any]
                     ) -> tuple[str | None, str, str, str | None]:
    """The decision form's label, note, children text and merge target, as submitted."""
    state = st.session_state
    if panel.scale.is_numeric:
        score = state.get(_score_key(draft, detail))
        label = None if score is None else str(score)
    else:
        label = state.get(f"{k}label.{draft}")
    return (label, str(state.get(f"{k}note.{draft}") or ""),
            str(state.get(f"{k}children.{draft}") or ""), state.get(f"{k}merge.{draft}"))


def save_decision(item_id: str, hidden: bool, filters: rv.Filters, who: str,
                  detail: dict[str, Any]) -> None:
    """The decision form's Save (a callback: it runs before the fragment reruns, so the rerun
    draws the next item at once, in one run). A refusal is kept for the rerun to show."""
    draft = f"{item_id}.blind" if hidden else item_id
    label, note, children_text, merge_into = _decision_values(draft, detail)
    try:
        if label is None:
            raise StorageError("Pick a label first: the decision is what gets saved.")
        decided = checked_decision(panel, detail, label, children_text, merge_into)
        if hidden:
            # Stay on the item: the critics are revealed, and the reviewer may revise.
            add_override(db(), run_id, item_id, label, note, who, blind=True, **decided)
            st.session_state[flash_key] = (f"Saved your blind label {plain(label)} for "
                                           f"{plain(item_id)}. The critics are shown now.")
            st.session_state[move_key] = int(st.session_state.get(move_key) or 0) + 1
            st.session_state[k + "queue_moved"] = True
            return
        following = rv.next_item(run_id, item_id, filters, who)
        add_override(db(), run_id, item_id, label, note, who, **decided)
        release_lease(db(), run_id, who)
        open_item(following, filters, f"Saved {plain(label)} for {plain(item_id)}")
    except EXPECTED as error:
        text = sentence_for(error) or str(error)
        st.session_state[error_key] = plain(f"The override was not saved: {text}")


def step(item_id: str, filters: rv.Filters, who: str, where: str) -> None:
    """Next, Previous or Skip (`where`): open that item without saving anything."""
    if where == "previous":
        target = rv.previous_item(run_id, item_id, filters)
        if target is None:
            st.session_state[flash_key] = "That is the first item of this list."
            return
        open_item(target, filters, f"Back to {plain(target)}")
        return
    undecided = where == "skip"
    target = rv.next_item(run_id, item_id, filters, who, undecided=undecided)
    done = (f"Skipped {plain(item_id)}, left undecided" if undecided
            else f"Left {plain(item_id)} as it was")
    open_item(target, filters, done)


def keep_blind_label(item_id: str, filters: rv.Filters, who: str) -> None:
    open_item(rv.next_item(run_id, item_id, filters, who), filters,
              f"Kept your blind label for {plain(item_id)}")


@st.fragment
def review_loop(filters: rv.Filters, reviewer: str, blind: bool) -> None:
    """The list (one page), the open item, its decision and the ways to move on."""
    # The audit queue's line ("Next to label") is drawn outside this fragment: once a label
    # moves the queue, the whole page is drawn again, or the line would name a done item.
    moved = st.session_state.pop(k + "queue_moved", False)
    if moved and filters.sort == audit_view.LABEL_NEXT:
        st.rerun()
    size_col, page_col, count_col = st.columns([1, 1, 3], vertical_alignment="bottom")
    page_size = size_col.selectbox("Rows per page", rv.PAGE_SIZES, index=1, key=k + "size")
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
    if goto_key in st.session_state:  # a save moved on to an item of another page
        st.session_state[page_key] = st.session_state.pop(goto_key)
    st.session_state[page_key] = min(max(1, int(st.session_state.get(page_key) or 1)), pages)
    page = int(page_col.number_input("Page", 1, pages, key=page_key))
    count_col.caption(f"{rv.count_of(total, 'item matches', 'items match')} · page {page} of "
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
        st.session_state[item_key] = (free or page_ids or [None])[0]
    current = st.session_state[item_key]

    # The table keeps its key while the list and the page stay, and its tick is moved to the
    # open item through session state: re-keying it by item (as before) rebuilt the whole grid
    # in the browser on every save. A tick the user moved since the last run opens that row.
    table_key = f"{k}table.{page}.{hash(signature)}"
    state = st.session_state.get(table_key)
    picked = list(state["selection"]["rows"]) if state else None
    if picked and st.session_state.get(k + "tick") != (table_key, picked) \
            and picked[0] < len(page_ids):
        current = st.session_state[item_key] = page_ids[picked[0]]
    wanted = [page_ids.index(current)] if current in page_ids else []
    if state is not None and picked != wanted:
        st.session_state[table_key] = {"selection": {"rows": wanted, "columns": []}}
    st.session_state[k + "tick"] = (table_key, wanted)

    shown, column_config = rv.table_columns(frame, blind=blind)
    st.dataframe(
        rv.table_frame(frame, shown),
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

    detail = None
    with user_errors():
        detail = fill_requests(db(), run_id, item_detail(db(), run_id, item_id,
                                                         decision_rule(panel)))
    if detail is None:
        st.session_state[item_key] = None
        return
    item_panel(detail, item_id, filters, reviewer, blind, total)


def item_panel(detail: dict[str, Any], item_id: str, filters: rv.Filters, reviewer: str,
               blind: bool, total: int) -> None:
    """The open item: its fields, the decision and the keys, then (once the reviewer may see
    them) the critics, the history and the bulk acceptance."""
    # The item is reserved for this reviewer while it is open (`storage.leases`): another
    # reviewer walking the same list is handed the next one instead.
    holder = None
    if reviewer:
        lease = take_lease(db(), run_id, item_id, reviewer)
        holder = lease if lease.reviewer != reviewer else None
    # What the last save did, shown once on the page it led to (a toast does not survive the
    # rerun that moves on to the next item).
    if flash_key in st.session_state:
        st.success(st.session_state.pop(flash_key), icon=":material/check:")
    title_col, nav_col = st.columns([3, 2], vertical_alignment="center")
    # No anchor: its slug would be made of the item id (data) and add a link to the page.
    title_col.subheader(f"Item {plain(item_id)}", anchor=False)
    with nav_col, st.container(horizontal=True, horizontal_alignment="right"):
        args = (item_id, filters, reviewer)
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
        st.text(rv.consensus_line(detail))
        for line in rv.cascade_lines(detail):  # what each cascade tier made of the item
            st.text(line)
        if mine is not None:
            st.info(f"Your blind label: {plain(mine['label'])}. It is the one Agreement compares "
                    "the critics with; revise below if they change your mind, or keep it and "
                    "move on.", icon=":material/visibility:")
    fields_col, form_col = st.columns([3, 2])
    with fields_col:
        rv.item_fields(detail, panel.pairwise, show_gold=not hidden)
    with form_col:
        if not reviewer:
            # A decision says who made it, so the name comes first, on its own: typed just
            # before a click on Save, the name's change and the click race and the browser
            # drops the click. Once given, it stays for every save.
            st.info("Type your name in **Reviewer** above to record decisions: each one says "
                    "who made it.", icon=":material/person:")
        else:
            decision_form(detail, item_id, filters, reviewer, hidden, mine, holder is not None)

    if hidden:
        return  # nothing of the critics' until the blind label is in
    if panel.rubric.active:
        # Full width, one under the other: side by side the reviewer's marks ran off the
        # right edge. The marks of single criteria are a second way to decide, said so.
        rubric_grid(detail, panel.rubric, critics, decision_rule(panel))
        with st.expander("Mark single criteria instead (the score follows the marks)"):
            criterion_mark_form(run_id, item_id, panel.rubric, reviewer, k, flash_key)
    if panel.juries:  # a panel of juries: jury -> its critics -> its decision -> the panel's
        jury_tree(detail, panel, item_jury_decisions(db(), run_id, item_id))
    else:
        st.markdown("**Critics**")
        rv.critic_cards(detail, scale=panel.scale)
    # Re-judging is for an item whose verdicts look wrong for a passing reason (an outage, a
    # fixed prompt): every critic is called afresh, bypassing the cache, and its old verdicts
    # replaced.
    if st.button("Re-judge this item with every critic", icon=":material/refresh:",
                 key=f"{k}rejudge.{item_id}", disabled=not RunStatus(run["status"]).finished):
        with user_errors("The item was not re-judged"):
            job = registry().rejudge_item(str(db_path()), run_id, str(item_id),
                                          key_lookup=worker_key_lookup())
            with st.spinner(f"Asking every critic about {plain(item_id)} again…"):
                job.wait(timeout=max(c.timeout_s for c in panel.critics) * 4)
            st.rerun()

    if detail["overrides"]:
        st.markdown("**History of this item**")
        st.dataframe(
            [{"when": o["created_at"][:19], "label": o["label"], "reviewer": o["reviewer"],
              "blind": o["blind"], "note": o["note"],
              **({"children": ", ".join(o["children"]), "merge into": o["merge_into"]}
                 if panel.curation.active else {})}
             for o in reversed(detail["overrides"])],
            hide_index=True,
        )
    if not blind:  # accepting the consensus is the opposite of a blind pass
        bulk_accept(filters, reviewer, total)


def decision_form(detail: dict[str, Any], item_id: str, filters: rv.Filters, reviewer: str,
                  hidden: bool, mine: dict[str, Any] | None, held: bool) -> None:
    """The reviewer's decision on the open item, its keys, and Keep (after a blind label)."""
    if error_key in st.session_state:  # a refused save: its sentence, the draft kept
        st.error(st.session_state.pop(error_key), icon=":material/error:")
    # No clear_on_submit: a refused save keeps what was typed. The label and note widgets are
    # keyed by item (and by blind pass or revision), so moving on opens a blank draft.
    draft = f"{item_id}.blind" if hidden else item_id
    options: list[str] = []
    # The decision and its keys in one container: the keyboard script finds it by its key.
    decision = st.container(key=decision_key)
    with decision, st.form(k + "override", border=True):
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
                            key=_score_key(draft, detail))
        else:
            options = list(panel.scale.labels)
            # No hint in a blind pass; never a label that Save would then refuse.
            final = None if hidden else preselected_label(panel, detail, options)
            st.radio("Label", options, horizontal=True,
                     index=options.index(final) if final in options else None,
                     format_func=plain,  # option labels are markdown: a scale's
                     key=f"{k}label.{draft}")  # labels are data
        # A SPLIT's children and a MERGE's target, prefilled from the latest decision.
        curation_fields(panel, int(run["dataset_id"]), {} if hidden else detail, k, draft)
        st.text_area("Note (why)", key=f"{k}note.{draft}", height=80)
        st.form_submit_button(
            "Save and show the critics" if hidden else "Save and go to the next item",
            type="primary", shortcut=keys.SAVE_KEY, disabled=held,
            on_click=save_decision, args=(item_id, hidden, filters, reviewer, detail))
    decision.caption(keys.shortcuts_caption(options))
    # Signed in: the name comes from the sign-in, nothing to remember in the browser.
    keys.keyboard(decision_key, int(st.session_state.get(move_key) or 0),
                  "" if person.signed_in else reviewer)
    if mine is not None:
        st.button("Keep my blind label and go to the next item", icon=":material/skip_next:",
                  key=f"{k}keep.{item_id}", on_click=keep_blind_label,
                  args=(item_id, filters, reviewer))


def bulk_accept(filters: rv.Filters, reviewer: str, total: int) -> None:
    """Accept the panel's consensus for every item of the list as filtered."""
    with st.popover(f"Accept the consensus for {rv.count_of(total, 'filtered item')}",
                    icon=":material/done_all:"):
        st.write(f"Each item's consensus label is recorded as an override by "
                 f"{plain(reviewer) or 'the reviewer (type your name above)'}. Items whose "
                 "vote abstained are skipped, and so is a consensus that needs a decision of "
                 "yours (a split without its new classes, a merge without its target).")
        sure = st.checkbox(f"Yes, accept the consensus for {rv.count_of(total, 'item')}",
                           key=k + "bulk_sure")
        if st.button("Accept", type="primary", disabled=not sure, key=k + "bulk_go"):
            with user_errors("Nothing was accepted"):
                ids = list(filters.table(run_id, limit=None)[0]["item_id"])
                accepted = accept_consensus(db(), run_id, ids, reviewer,
                                            rule=decision_rule(panel))
                st.session_state[flash_key] = plain(accepted.sentence())
                st.rerun()


review_loop(filters, reviewer, blind)
