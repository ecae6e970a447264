"""Team: assign a run's items to several reviewers (some to two), follow their progress, see how
far they agree with each other, and adjudicate where they conflict."""

import pandas as pd
import streamlit as st

from judging.analysis.team_review import plan_assignment, reviewer_agreement
from pages.ui.error_notes import user_errors
from pages.ui.review import review_evidence as ev
from pages.ui.review import review_filter_bar as fb
from pages.ui.review.decision_form import checked_decision, curation_fields, unactionable_hint
from pages.ui.run_picker import RUN_PARAM, pick_run
from pages.ui.shell import ensure_app_shell
from pages.ui.state import db
from pages.ui.team_view import reviewer_field, visitor
from pages.ui.text_format import count_of, plain
from storage.results.runs import get_run
from storage.reviewing.assignments import (
    PACE_BREAK_SECONDS,
    adjudicated_items,
    assignment,
    clear_assignment,
    reviewer_decisions,
    reviewer_labels,
    reviewer_pace,
    reviewer_progress,
    save_assignment,
)
from storage.reviewing.overrides import add_override
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table

ensure_app_shell()
st.title("Team")
person = visitor()
run = pick_run()
if run is None:
    st.stop()
run_id = int(run["id"])
panel = fb.run_panel(get_run(db(), run_id)["panel_yaml"])
k = f"team{run_id}."
# A lead decides who reviews what and settles conflicts; alone on 127.0.0.1, that is you.
may_lead = not person.signed_in or person.lead
if k + "flash" in st.session_state:
    st.success(st.session_state.pop(k + "flash"), icon=":material/check:")

# -- who reviews what ---------------------------------------------------------------------------
st.subheader("Assignment")
plan = assignment(db(), run_id)
if plan:
    doubled = sum(len(names) > 1 for names in plan.values())
    st.write(f"{count_of(len(plan), 'item')} assigned, {doubled:,} of them to two "
             "reviewers. Each reviewer finds theirs on Review under **Only the items assigned "
             "to me**.")
    with st.popover("Clear the assignment", icon=":material/delete:", disabled=not may_lead):
        st.write("The labels given so far stay; only who reviews what is forgotten.")
        if st.button("Yes, clear it", type="primary", key=k + "clear") and may_lead:
            clear_assignment(db(), run_id)
            st.rerun()
elif not may_lead:
    st.info("No assignment yet: a lead of this team makes it here.")
else:
    with st.form(k + "assign"):
        known = sorted({r for by in reviewer_labels(db(), run_id).values() for r in by}
                       | ({person.email} if person.email else set()))
        names = st.text_area("Reviewers, one per line (names, or emails on a team server)",
                             value="\n".join(known), height=100)
        cols = st.columns(2)
        scope = cols[0].radio("Items", ["contested items", "all items"], horizontal=True)
        overlap = cols[1].slider("Seen by two reviewers (%)", 0, 100, 20, step=5,
                                 help="Their agreement on these items is measured below.")
        go = st.form_submit_button("Assign", type="primary")
    if go:
        with user_errors("Nothing was assigned"):
            items, _ = review_table(
                db(), run_id, ReviewFilter(disagreements_only=scope == "contested items"),
                sort="item", limit=None)
            reviewers = [n.strip() for n in names.splitlines() if n.strip()]
            pairs = save_assignment(db(), run_id, plan_assignment(
                [str(i) for i in items["item_id"]], reviewers, overlap / 100, seed=run_id))
            st.session_state[k + "flash"] = (
                f"Assigned {count_of(len(items), 'item')} to {len(reviewers)} reviewers "
                f"({pairs:,} reviews).")
            st.rerun()

# -- progress -----------------------------------------------------------------------------------
progress = reviewer_progress(db(), run_id)
if progress:
    st.subheader("Progress")
    st.dataframe(
        [{"reviewer": p["reviewer"], "assigned": p["assigned"], "labelled": p["labelled"],
          "done": p["labelled"] / p["assigned"] if p["assigned"] else 0.0} for p in progress],
        hide_index=True,
        column_config={"reviewer": st.column_config.TextColumn(),
                       "done": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                               format="percent")},
    )

# -- pace (issue 23: labels per hour, median seconds per item) ----------------------------------
pace = reviewer_pace(db(), run_id)
if pace:
    st.subheader("Pace")
    st.dataframe(
        [{"reviewer": p["reviewer"], "labels": p["labels"],
          "labels per hour": p["labels_per_hour"],
          "median seconds per item": p["median_seconds"]} for p in pace],
        hide_index=True,
        column_config={"reviewer": st.column_config.TextColumn(),
                       "labels per hour": st.column_config.NumberColumn(format="%.0f"),
                       "median seconds per item": st.column_config.NumberColumn(format="%.0f")},
    )
    st.caption(f"Timed from one label to the reviewer's next; a pause over "
               f"{PACE_BREAK_SECONDS // 60} minutes is a break, not time on an item. Empty "
               "until a reviewer has given two labels in a row.")

# -- agreement between reviewers ------------------------------------------------------------
st.subheader("Agreement between reviewers")
labels = reviewer_labels(db(), run_id)
# A curation decision is more than its label: two splits into different classes conflict.
decisions = reviewer_decisions(db(), run_id) if panel.curation.active else labels
agreement = reviewer_agreement(labels, level=panel.scale.level, order=panel.scale.labels or None,
                               decisions=decisions)
if agreement.n_items == 0:
    st.caption("Appears once two reviewers have labelled the same item (the assignment's "
               "overlap). Each reviewer's own label counts: their blind label if they gave one, "
               "else their latest.")
else:
    cols = st.columns(3)
    cols[0].metric("Items labelled by two or more", f"{agreement.n_items:,}")
    alpha = agreement.alpha
    cols[1].metric("Krippendorff's alpha", "—" if alpha.value is None else f"{alpha.value:.3f}")
    cols[2].metric("In conflict", f"{len(agreement.conflicts):,}")
    if alpha.value is None and alpha.reason:
        st.caption(f"Alpha is undefined: {plain(alpha.reason)}")
    if len(agreement.reviewers) >= 2:
        st.caption("Cohen's kappa for each pair of reviewers (on the items both labelled):")
        st.dataframe(agreement.kappa.to_frame(), column_config={
            name: st.column_config.NumberColumn(format="%.3f") for name in agreement.reviewers})

# -- conflicts ----------------------------------------------------------------------------------
settled_items = adjudicated_items(db(), run_id)
open_conflicts = [item for item in agreement.conflicts if item not in settled_items]
if agreement.conflicts:
    st.subheader("Conflicts")
    st.caption(f"{count_of(len(open_conflicts), 'item')} where reviewers disagree and no lead "
               f"has decided yet ({len(settled_items & set(agreement.conflicts)):,} adjudicated).")
if open_conflicts:
    st.dataframe(pd.DataFrame([{"item": item, **decisions[item]} for item in open_conflicts]),
                 hide_index=True, column_config={"item": st.column_config.TextColumn()})
    item_id = st.selectbox("Adjudicate", open_conflicts, key=k + "conflict")
    detail = item_detail(db(), run_id, item_id)
    ev.item_fields(detail, panel.pairwise)
    st.text(ev.consensus_line(detail))
    if panel.curation.active:  # what each reviewer decided, with a split's children and a
        # merge's target: the lead settles between those, not between bare labels
        st.dataframe(
            [{"reviewer": o["reviewer"], "label": o["label"],
              "children": ", ".join(o["children"]), "merge into": o["merge_into"],
              "note": o["note"]} for o in detail["overrides"]],
            hide_index=True, column_config={"reviewer": st.column_config.TextColumn()})
    said = sorted(set(labels[item_id].values()))
    options = list(panel.scale.labels) or said
    # Outside the form, and no button until a decision is picked: the lead decides, nothing is
    # preselected, and a click on Adjudicate always has a decision to save (inside the form a
    # first click with none picked saved nothing).
    label = st.radio("Decision", options, horizontal=True, index=None, format_func=plain,
                     key=f"{k}label.{item_id}")
    if label is None:
        st.caption("Pick the decision above: the reviewers' labels are in the table. "
                   "**Adjudicate** appears once a decision is picked.")
    else:
        with st.form(k + "adjudicate"):
            hint = unactionable_hint(panel, detail)
            if hint:
                st.caption(hint)
            # Asked as Review asks: a split's new child classes, a merge's target (prefilled
            # from the latest reviewer's decision, so their children are not lost).
            children_text, merge_into = curation_fields(panel, int(run["dataset_id"]), detail,
                                                        k, item_id)
            note = st.text_area("Note (why)", key=f"{k}note.{item_id}", height=68)
            lead = reviewer_field(k + "lead", person)
            decided = st.form_submit_button("Adjudicate", type="primary",
                                            disabled=not may_lead, key=k + "adjudicate_go")
    if label is not None and decided and may_lead:
        with user_errors("The decision was not saved"):
            parts = checked_decision(panel, detail, label, children_text, merge_into)
            add_override(db(), run_id, item_id, label, note, lead, adjudication=True, **parts)
            st.session_state[k + "flash"] = f"Adjudicated {plain(item_id)}: {plain(label)}."
            st.rerun()
    st.page_link("pages/review.py", label=f"Open {plain(item_id)} on Review",
                 icon=":material/rate_review:",
                 query_params={RUN_PARAM: str(run_id), "item": str(item_id)})
