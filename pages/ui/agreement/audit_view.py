"""The audit on the pages: the corrected accuracy on Agreement, the sample and its queue on Review.

Agreement shows what `judging.runs.stored.audit_run.run_audit` estimates from the audit sample: the
panel's accuracy on every item with its interval, per label (with the label's corrected share)
and per critic, and which labels it used. Review gets a button that draws an audit sample and,
with the sort "Label next", the queue kept fresh before the table is read.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.analysis.audit_design import design_sentence, saving_sentence
from judging.analysis.audit_stats import Interval
from judging.runs.messages import EXPECTED, sentence_for
from judging.runs.stored.audit_live import LiveAudit
from judging.runs.stored.audit_run import (
    RunAudit,
    draw_audit_sample,
    sample_design,
)
from pages.ui.agreement.agreement_data import Stamp, calls_stamp
from pages.ui.error_notes import user_errors
from pages.ui.review.review_filter_bar import Filters
from pages.ui.run_picker import RUN_PARAM
from pages.ui.state import db, db_path
from pages.ui.text_format import plain

LABEL_NEXT = "label_next"  # the Review sort (`storage.reviewing.review_queue.SORTS`)


# One live audit per run and state of its verdicts, shared by every session: it reads the sample
# once, then only the labels and draws that came since (`judging.runs.stored.audit_live`), so a label
# on Review updates the estimate and the queue without reading the run again.
@st.cache_resource(max_entries=8, show_spinner=False)
def _live(path: str, run_id: int, verdicts: Stamp) -> LiveAudit:
    del path  # part of the cache key only
    return LiveAudit(run_id, stamp=verdicts)


def live_audit(run: dict[str, Any]) -> LiveAudit:
    """The run's live audit (the one the pages share)."""
    return _live(str(db_path()), int(run["id"]), calls_stamp(run))


def _cached_audit(run: dict[str, Any]) -> RunAudit:
    return live_audit(run).audit(db())


def _percent(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.1%}"


def interval_text(interval: Interval) -> str:
    """"71.5% [68.4, 74.6]", or "undefined (why)"."""
    if interval.estimate is None or interval.low is None or interval.high is None:
        return f"undefined ({interval.reason})" if interval.reason else "undefined"
    return (f"{interval.estimate:.1%} [{100 * interval.low:.1f}, "
            f"{100 * interval.high:.1f}]")


def audit_section(run: dict[str, Any]) -> None:
    """Agreement's audit section: the corrected accuracy, per label and per critic, and what it
    was computed from."""
    st.subheader("How good are the labels: the audit sample")
    audit = None
    with user_errors("No audit estimate"):
        audit = _cached_audit(run)
    if audit is None:
        return
    if audit.estimate is None:
        st.caption(plain(f"No corrected accuracy: {audit.reason}."))
        if audit.sampled:
            st.caption(plain(audit.design_sentence()))
            st.caption(plain(audit.used_sentence()))
        st.page_link("pages/review.py", label="Draw or label the audit sample on Review",
                     icon=":material/fact_check:", query_params={RUN_PARAM: str(run["id"])})
        return
    estimate = audit.estimate
    accuracy = estimate.accuracy
    cols = st.columns(3)
    cols[0].metric("Panel accuracy, all items (audit)", _percent(accuracy.estimate))
    cols[1].metric("95% interval", "undefined" if accuracy.low is None or accuracy.high is None
                   else f"{accuracy.low:.1%} – {accuracy.high:.1%}")
    cols[2].metric("Audited items used", f"{accuracy.n:,}")
    if accuracy.reason:
        st.warning(plain(f"The accuracy is undefined: {accuracy.reason}. Label at least one "
                         "item of every stratum (the sort \"Label next\" does)."))
    st.caption(plain(audit.design_sentence()))
    st.caption(plain(saving_sentence(audit.design)))
    st.caption(plain(audit.used_sentence()))
    headline = max(estimate.labels, key=lambda f: f.panel_share, default=None)
    if headline is not None and headline.corrected.estimate is not None:
        st.markdown(plain(f"The panel says {headline.panel_share:.1%} {headline.label}; "
                          f"corrected {interval_text(headline.corrected)}."))
    st.dataframe(
        [{"label": f.label, "panel's share": f.panel_share,
          "corrected share": f.corrected.estimate, "share 95% low": f.corrected.low,
          "share 95% high": f.corrected.high, "accuracy of its items": f.accuracy.estimate,
          "accuracy 95% low": f.accuracy.low, "accuracy 95% high": f.accuracy.high,
          "audited": f.accuracy.n, "note": f.accuracy.reason or f.corrected.reason or ""}
         for f in estimate.labels],
        hide_index=True, column_config={
            "label": st.column_config.TextColumn(),
            **{c: st.column_config.NumberColumn(format="percent") for c in (
                "panel's share", "corrected share", "share 95% low", "share 95% high",
                "accuracy of its items", "accuracy 95% low", "accuracy 95% high")}})
    st.dataframe(
        [{"critic": critic, "accuracy (audit)": i.estimate, "95% low": i.low, "95% high": i.high,
          "audited": i.n, "note": i.reason or ""} for critic, i in estimate.critics.items()],
        hide_index=True, column_config={
            "critic": st.column_config.TextColumn(),
            **{c: st.column_config.NumberColumn(format="percent")
               for c in ("accuracy (audit)", "95% low", "95% high")}})
    st.caption(
        "The audit sample is drawn at random within strata fixed before any human label (see "
        "above) and labelled blind; each stratum's audited items stand for all of its items (a "
        "stratified estimate, weighted by the stratum's size). A label's corrected "
        "share is the panel's share plus the audit's correction (prediction-powered "
        "inference). A label's accuracy is over the items the panel gave it; a critic's over "
        "the items where it gave a valid label. An item the panel left without a label counts "
        "as wrong.")


# -- Review ------------------------------------------------------------------------------------


def _draw(run_id: int, count: int, message_key: str) -> None:
    # A callback: it runs before the page is drawn again, so it may set the sort, the blind
    # switch and "Disagreements only" (widgets already drawn in this run cannot be set): the
    # sample holds unanimous items too.
    try:
        drawn = draw_audit_sample(db(), run_id, count)
    except EXPECTED as error:
        st.session_state[message_key] = ("error", sentence_for(error) or str(error))
        return
    st.session_state[message_key] = ("success", drawn.sentence())
    k = f"rv{run_id}."
    st.session_state[k + "sort"] = LABEL_NEXT
    st.session_state[k + "blind_sort"] = LABEL_NEXT  # the blind pass has a sort of its own
    st.session_state[k + "blind"] = True
    st.session_state[k + "disagree"] = False


def review_hook(run: dict[str, Any], filters: Filters, blind: bool) -> None:
    """Review's audit block: "Draw an audit sample of N items" and, under the sort "Label
    next", the queue recomputed from the labels given so far (before the table is read).

    Args:
        filters: the review table's query as the filter bar set it.
        blind: whether the blind first pass is on.
    """
    run_id = int(run["id"])
    k = f"rv{run_id}."
    message_key = k + "audit_message"
    draw_col, queue_col = st.columns([1, 3], vertical_alignment="center")
    design = design_sentence(sample_design(db(), run_id))
    with draw_col.popover("Audit sample", icon=":material/fact_check:"):
        st.caption(plain("Items drawn at random within each stratum, to be labelled blind: "
                         f"Agreement estimates the panel's accuracy on every item from them. "
                         f"{design}"))
        count = int(st.number_input("Items to draw", 1, 100_000, 100, step=10,
                                    key=k + "audit_count"))
        st.button(f"Draw an audit sample of {count:,} items", key=k + "audit_draw",
                  type="primary", on_click=_draw,
                  args=(run_id, count, message_key))
    if message_key in st.session_state:
        kind, text = st.session_state.pop(message_key)
        (st.error if kind == "error" else st.success)(plain(text))
    sort = filters.sort
    was_queue = st.session_state.get(k + "audit_sorted") == LABEL_NEXT
    st.session_state[k + "audit_sorted"] = sort
    if sort != LABEL_NEXT:
        return
    with user_errors("No label-next queue"):
        queue = live_audit(run).refresh_queue(db())
        notes = []
        listed = queue.head is not None and filters.position(run_id, queue.head) is not None
        if queue.head is not None and not listed:
            notes.append("The filters hide it: turn off Disagreements only and the other "
                         "filters to follow the queue.")
        elif not was_queue and queue.head is not None:
            # Just switched to the queue: open its head (the page keeps the open item
            # otherwise, wherever it sits in the new order).
            st.session_state[k + "item"] = queue.head
        if not blind:
            notes.append("Turn on Blind first pass: only blind labels count for the audit.")
        queue_col.caption(plain(" ".join([queue.sentence(), *notes, design])))
