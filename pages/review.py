"""Review: filter to contested items, read every critic side by side, override with a note."""

import math

import streamlit as st

from pages.ui import review_view as rv
from pages.ui.cards import md_escape
from pages.ui.errors import user_errors
from pages.ui.run_picker import pick_run
from pages.ui.shell import ensure_app_shell
from pages.ui.state import db, db_path, registry, worker_key_lookup
from storage.overrides import accept_consensus, add_override
from storage.review import item_detail, review_table
from storage.runs import get_run

ensure_app_shell()
st.title("Review")
run = pick_run()
if run is None:
    st.stop()
run_id = int(run["id"])
critics = list(run["critics"])
panel = rv.run_panel(get_run(db(), run_id)["panel_yaml"])
if run["simulated"]:
    st.caption("Verdicts of this run come from the **simulated** vendor.")
if run["status"] in ("pending", "running"):
    st.info(f"Run #{run_id} is {run['status']}: items appear here as the critics answer.")

filters = rv.filter_bar(run_id, rv.filter_labels(run, str(db_path())), critics)
k = f"rv{run_id}."

size_col, page_col, count_col = st.columns([1, 1, 3], vertical_alignment="bottom")
page_size = size_col.selectbox("Rows per page", rv.PAGE_SIZES, index=1, key=k + "size")
# Only one page of rows is read: a 100,000-item run costs what a 300-item one does.
_, total = review_table(db(), run_id, limit=0, **filters.kwargs)
pages = max(1, math.ceil(total / page_size))
page = int(page_col.number_input("Page", 1, pages, 1, key=k + "page"))
count_col.caption(f"{total:,} items match · page {page} of {pages}")
frame, _ = review_table(db(), run_id, limit=page_size, offset=(page - 1) * page_size,
                        **filters.kwargs)

critic_cols = list(frame.attrs.get("critic_columns", {c: c for c in critics}).values())
# The item's text comes second: at the far right it was cut off on a laptop screen.
shown = ["item_id", "preview", "consensus", "final_label", *critic_cols, "agreement", "item_alpha",
         "failed", "overridden"]
selection = st.dataframe(
    frame[[c for c in shown if c in frame.columns]],
    hide_index=True,
    height=min(38 + 35 * len(frame), 420),
    on_select="rerun",
    selection_mode="single-row",
    key=f"{k}table.{page}.{hash(str(filters.kwargs))}",
    column_config={
        "item_id": st.column_config.TextColumn("item id", pinned=True),
        "preview": st.column_config.TextColumn("item", width="medium"),
        "final_label": st.column_config.TextColumn(
            "final label", help="The latest override, else the consensus"),
        "agreement": st.column_config.ProgressColumn(
            "agreement", min_value=0.0, max_value=1.0, format="%.2f",
            help="Share of the critics' votes that went to the consensus"),
        "item_alpha": st.column_config.NumberColumn(
            "per-item alpha", format="%.2f",
            help="1 - D_o(item) / D_e(dataset): 1 is full agreement, below 0 worse than chance"),
        "failed": st.column_config.NumberColumn("failed", help="Critics without a verdict"),
    },
)

st.caption("Tick a row to open that item below; saving a decision moves on to the next "
           "contested item.")

# The item in detail: a new table selection wins; else the remembered item; else the first row.
current_key = k + "item"
rows = selection.selection.rows if selection is not None else []
picked = frame.iloc[rows[0]]["item_id"] if rows else None
if picked is not None and picked != st.session_state.get(k + "last_pick"):
    st.session_state[current_key] = picked
st.session_state[k + "last_pick"] = picked
if current_key not in st.session_state and st.query_params.get("item"):
    st.session_state[current_key] = st.query_params["item"]
if st.session_state.get(current_key) is None and len(frame):
    st.session_state[current_key] = frame.iloc[0]["item_id"]
item_id = st.session_state.get(current_key)
if item_id is None or total == 0:  # no match: no stale item from an earlier filter either
    st.info("No item matches these filters. Loosen one above: for instance turn off "
            "**Disagreements only**, or clear the search.", icon=":material/filter_alt_off:")
    st.stop()
if st.query_params.get("item") != item_id:
    st.query_params["item"] = item_id

detail = None
with user_errors():
    detail = item_detail(db(), run_id, str(item_id))
if detail is None:
    st.session_state.pop(current_key, None)
    st.stop()

st.subheader(f"Item {md_escape(str(item_id))}")
st.text(rv.consensus_line(detail))
fields_col, form_col = st.columns([3, 2])
with fields_col:
    rv.item_fields(detail)
with form_col:
    with st.form(k + "override", clear_on_submit=True, border=True):
        st.markdown("**Your decision**")
        if panel.scale.is_numeric:
            default = detail.get("final_label")
            try:
                default_score = float(default) if default is not None else panel.scale.min
            except ValueError:
                default_score = panel.scale.min
            label = str(st.number_input("Score", panel.scale.min, panel.scale.max,
                                        default_score, key=f"{k}score.{item_id}"))
        else:
            options = list(panel.scale.labels)
            final = detail.get("final_label")
            label = st.radio("Label", options, horizontal=True,
                             index=options.index(final) if final in options else 0,
                             key=f"{k}label.{item_id}")
        note = st.text_area("Note (why)", key=f"{k}note.{item_id}", height=80)
        reviewer = st.text_input("Reviewer", value=st.session_state.get("reviewer", ""),
                                 key=k + "reviewer")
        saved = st.form_submit_button("Save and go to the next contested item", type="primary")
    if saved:
        with user_errors("The override was not saved"):
            add_override(db(), run_id, str(item_id), label, note, reviewer)
            st.session_state["reviewer"] = reviewer.strip()
            upcoming, _ = review_table(db(), run_id, disagreements_only=True, overridden=False,
                                       sort="contested", limit=2)
            following = [i for i in upcoming["item_id"] if i != item_id]
            st.session_state[current_key] = following[0] if following else None
            st.toast(f"Saved {label} for {item_id}.", icon=":material/check:")
            st.rerun()

st.markdown("**Critics**")
rv.critic_cards(detail)
# Re-judging is for an item whose verdicts look wrong for a passing reason (an outage, a fixed
# prompt): every critic is called afresh, bypassing the cache, and its old verdicts replaced.
if st.button("Re-judge this item with every critic", icon=":material/refresh:",
             key=f"{k}rejudge.{item_id}", disabled=run["status"] in ("pending", "running")):
    with user_errors("The item was not re-judged"):
        job = registry().rejudge_item(str(db_path()), run_id, str(item_id),
                                      key_lookup=worker_key_lookup())
        with st.spinner(f"Asking every critic about {item_id} again…"):
            job.wait(timeout=max(c.timeout_s for c in panel.critics) * 4)
        st.rerun()

if detail["overrides"]:
    st.markdown("**History of this item**")
    st.dataframe(
        [{"when": o["created_at"][:19], "label": o["label"], "reviewer": o["reviewer"],
          "note": o["note"]} for o in reversed(detail["overrides"])],
        hide_index=True,
    )

with st.popover(f"Accept the consensus for all {total:,} filtered items",
                icon=":material/done_all:"):
    st.write("Each item's consensus label is recorded as an override by the reviewer below. "
             "Items whose vote abstained are skipped.")
    bulk_reviewer = st.text_input("Reviewer", value=st.session_state.get("reviewer", ""),
                                  key=k + "bulk_reviewer")
    sure = st.checkbox(f"Yes, accept the consensus for {total:,} items", key=k + "bulk_sure")
    if st.button("Accept", type="primary", disabled=not sure, key=k + "bulk_go"):
        with user_errors("Nothing was accepted"):
            ids = list(review_table(db(), run_id, limit=None, **filters.kwargs)[0]["item_id"])
            added = accept_consensus(db(), run_id, ids, bulk_reviewer)
            st.session_state["reviewer"] = bulk_reviewer.strip()
            st.toast(f"Accepted the consensus for {added:,} items.", icon=":material/check:")
            st.rerun()
