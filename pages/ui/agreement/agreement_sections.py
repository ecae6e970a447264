"""The Agreement page's panel-wide sections, top to bottom: the run with verdicts, the headline
figures (alpha with its interval, Fleiss' kappa, percent agreement), the tie line, the per-item
and bootstrap histograms, agreement per critic, and Cohen's kappa between critics.

The page (`pages/agreement.py`) loads the report (`pages.ui.agreement.agreement_data`) and hands it here:
these functions draw, they do not compute.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from judging.analysis.agreement_report import AgreementReport
from judging.panel.panel_model import Panel
from judging.voting.strategies import tie_rule_text
from pages.ui.agreement import charts
from pages.ui.agreement.agreement_data import run_panel_choice_report
from pages.ui.agreement.agreement_tables import SWAP_VERDICT
from pages.ui.review.review_filter_bar import TIES_PARAM
from pages.ui.run_picker import RUN_PARAM, pick_run
from pages.ui.simulated import simulated_notice, what_ran
from pages.ui.state import db
from pages.ui.text_format import plain
from storage.reviewing.overrides import blind_labels
from storage.reviewing.review_queue import tie_breaks

ALPHA_IN_WORDS = (
    "Alpha in plain words: 1 means the critics always agree; 0 means they agree no more than "
    "chance would (as if each answered at random with its usual mix of labels); below 0 means "
    "they disagree more than chance, in a systematic way.")


def pick_run_with_verdicts() -> dict[str, Any]:
    """The run picked, or stop the page: no run, or a run no critic has answered yet."""
    run = pick_run()
    if run is None:
        st.stop()
    if run["ok_calls"] == 0:
        st.info("This run has no verdicts yet: figures appear once critics have answered.")
        st.stop()
    return run


def simulated_lines(run: dict[str, Any]) -> str | None:
    """Say what judged the run (the simulator, checks, vendors); return the notice shown next
    to the figures against the user's gold labels when simulated critics judged data they
    cannot read (None when there is none)."""
    ran = what_ran(db(), run)
    if ran:
        st.caption(ran)
    notice = simulated_notice(db(), run)  # next to the figures against the user's gold labels
    if notice:
        st.warning(plain(notice), icon=":material/smart_toy:")
    return notice


def _figure(col: DeltaGenerator, title: str, value: float | None,
            reason: str | None, *, shown: str | None = None) -> None:
    """A figure as a metric when it is defined; else its title and why it is undefined, in
    words that wrap (an "undefined" in large type told the reader nothing)."""
    if value is not None and math.isfinite(value):
        col.metric(title, shown or f"{value:.3f}")
        return
    col.markdown(f"**{title}**")
    col.caption(f"Undefined: {plain(reason or 'too few valid verdicts')}.")


def headline_figures(report: AgreementReport) -> None:
    """Alpha, its interval, Fleiss' kappa and percent agreement; what alpha means; how many
    items the figures rest on."""
    a, boot = report.alpha, report.bootstrap
    cols = st.columns(4)
    _figure(cols[0], f"Krippendorff's alpha ({report.level})", a.value, a.reason)
    interval = (f"{boot.low:.3f} – {boot.high:.3f}"
                if boot.low is not None and boot.high is not None else None)
    _figure(cols[1], f"{boot.confidence:.0%} interval", boot.low if interval else None,
            boot.reason or ("alpha is undefined" if a.value is None else None), shown=interval)
    for col, title, stat in ((cols[2], "Fleiss' kappa", report.fleiss),
                             (cols[3], "Percent agreement", report.percent)):
        _figure(col, title, stat.value if stat else None,
                stat.reason if stat else "not computed for this scale")
    st.caption(ALPHA_IN_WORDS)
    reviewed = max((p.n + p.missing for p in report.vs_humans.values()), default=0)
    st.caption(
        f"{a.n_pairable_units:,} of {a.n_units:,} items have two or more valid verdicts; failed "
        f"verdicts count as missing values, never as a label. {reviewed:,} item"
        f"{'' if reviewed == 1 else 's'} reviewed by humans."
    )


def tie_line(run: dict[str, Any], panel: Panel) -> None:
    """How many items a tie rule decided, and a link to them (nothing without ties)."""
    breaks = tie_breaks(db(), int(run["id"]))
    if not breaks:
        return
    # A tie is the panel's rule speaking, not the critics: say so, and how it went.
    tied = sum(breaks.values())
    how = ", ".join(f"{label} for {n:,}" for label, n in breaks.items())
    text_col, link_col = st.columns([3, 1], vertical_alignment="center")
    text_col.caption(plain(
        f"{tied:,} item{'' if tied == 1 else 's'} had a tied vote, decided by the panel's tie "
        f"rule, not by a majority: {how}. {tie_rule_text(panel.voting, panel.scale) or ''}"))
    link_col.page_link("pages/review.py", label="Review the tied items", icon=":material/balance:",
                       query_params={RUN_PARAM: str(run["id"]), TIES_PARAM: "1"})


def alpha_histograms(report: AgreementReport) -> None:
    """Per-item alpha and the bootstrap distribution of alpha, side by side."""
    left, right = st.columns(2)
    with left:
        per_item = charts.per_item_alpha_histogram(report)
        if per_item is not None:
            st.altair_chart(per_item, width="stretch")
        else:
            st.info("No item has two or more valid verdicts, so there is no per-item alpha.")
    with right:
        boot = charts.bootstrap_histogram(report)
        if boot is not None:
            st.altair_chart(boot, width="stretch")
        else:
            st.info("No bootstrap distribution: "
                    f"{plain(report.bootstrap.reason or 'alpha is undefined')}.")


def per_critic_section(run: dict[str, Any], report: AgreementReport, notice: str | None,
                       *, swap: bool = False) -> None:
    """Each critic's agreement (bars and table), what the humans are compared by, leave-one-out
    alpha and Dawid-Skene accuracy. `swap`: a pairwise run that asks both orders (what its
    agreement with the gold labels measures is said)."""
    st.subheader("Per critic")
    if notice:
        st.caption("Agreement with gold and with humans below: " + plain(notice.split(":", 1)[0])
                   + ".")
    if swap and report.vs_gold:
        st.caption("Each critic was asked both orders; its verdict is its two answers combined: "
                   + SWAP_VERDICT + " Both figures are under Pairwise below.")
    chart = charts.critic_agreement_bars(report)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
    table = charts.critic_summary_frame(report)
    if not table.empty:
        st.dataframe(table, hide_index=True, column_config={
            "critic": st.column_config.TextColumn(),
            "Dawid-Skene accuracy": st.column_config.NumberColumn(format="%.3f"),
            "alpha without it": st.column_config.NumberColumn(format="%.3f"),
        })
    if not report.vs_humans:
        st.caption("Agreement with the humans appears once items are overridden on the Review "
                   "page.")
    else:
        blind = len(blind_labels(db(), int(run["id"])))
        st.caption(
            f"Against the humans: {blind:,} item{'' if blind == 1 else 's'} by the label given in a "
            "blind first pass (before the critics were shown), the others by their latest "
            "override, which was given after reading every critic and so leans towards them."
            if blind else
            "Against the humans: each item's latest override, given after reading every critic "
            "(it leans towards them). Turn on **Blind first pass** on Review for unanchored "
            "labels.")

    left, right = st.columns(2)
    with left:
        leave_one_out = charts.leave_one_out_bars(report)
        if leave_one_out is not None:
            st.altair_chart(leave_one_out, width="stretch")
    with right:
        dawid_skene = charts.dawid_skene_bars(report)
        if dawid_skene is not None:
            st.altair_chart(dawid_skene, width="stretch")
        elif report.dawid_skene_reason:
            st.caption(f"Dawid-Skene: {plain(report.dawid_skene_reason)}.")


def between_critics_section(run: dict[str, Any], report: AgreementReport) -> None:
    """Cohen's kappa of every pair of critics; a click on a cell (or the two menus under it)
    opens Review on the items where that pair differs."""
    st.subheader("Between critics")
    chart = charts.kappa_heatmap(report.kappa)
    if chart is None:
        st.caption(plain(report.kappa_reason or "No pairwise kappa."))
        return
    chart_key = f"kappa.{run['id']}"

    def _remember_pair() -> None:
        # A callback fires once per click, so coming back to this page does not jump again.
        state = st.session_state.get(chart_key)
        picked = (state.selection.get(charts.KAPPA_SELECTION) or []) if state else []
        if picked and picked[0].get("critic_a") != picked[0].get("critic_b"):
            st.session_state["open_pair"] = (picked[0]["critic_a"], picked[0]["critic_b"])

    st.altair_chart(chart, on_select=_remember_pair, key=chart_key,
                    selection_mode=charts.KAPPA_SELECTION)
    pair = st.session_state.pop("open_pair", None)
    if pair:
        st.switch_page("pages/review.py", query_params={
            RUN_PARAM: str(run["id"]), "critic_a": pair[0], "critic_b": pair[1]})
    # Without a mouse (or for a keyboard user): the same thing from two menus.
    cols = st.columns([1, 1, 1], vertical_alignment="bottom")
    first = cols[0].selectbox("Critic", report.critics, key="pair_a")
    others = [c for c in report.critics if c != first] or report.critics
    second = cols[1].selectbox("and critic", others, key="pair_b")
    cols[2].page_link("pages/review.py", label="Review where they differ",
                      icon=":material/compare_arrows:",
                      query_params={RUN_PARAM: str(run["id"]), "critic_a": first,
                                    "critic_b": second})


def panel_choice_section(run: dict[str, Any]) -> None:
    """How many independent votes the critics cast, which err together, and the cheapest panel
    that decides as well (`judging.analysis.panel_choice`)."""
    found = run_panel_choice_report(run)
    st.subheader("Which critics do you need?")
    if found is None:
        st.caption("Needs a label panel of two or more critics and at least 10 items with a "
                   "gold label or a human label.")
        return
    choice, priced = found
    effective = choice.effective
    st.markdown(plain(f"Over {choice.items:,} items with {choice.basis}: "
                      f"{effective.sentence()}."))
    st.caption("Critics that err together cancel fewer of each other's errors: the effective "
               "number of votes is the panel's size over its design effect, n / (1 + (n - 1) "
               "rho), from the mean correlation of the critics' errors; the interval is a "
               "bootstrap over items.")
    st.dataframe([{"critics": f"{link.a} · {link.b}",
                   "error correlation": None if link.rho is None else round(link.rho, 2),
                   "interval": "" if link.low is None else f"{link.low:.2f} to {link.high:.2f}",
                   "agree": f"{link.agree:.0%}",
                   "err together": "" if link.together is None else f"{link.together:.0%}"}
                  for link in choice.links], hide_index=True)
    for sentence in choice.redundant:
        st.info(plain(f"{sentence}: one of them adds little beyond the other."),
                icon=":material/content_copy:")
    unit = "cost per item (USD)" if priced else "critics"
    st.markdown("**Cost against accuracy** (the sub-panels no cheaper one matches)")
    st.dataframe([{"panel": ", ".join(p.critics),
                   unit: round(p.cost, 6) if priced else len(p.critics),
                   "accuracy": f"{p.accuracy:.1%}",
                   "95% interval": f"{p.low:.1%} to {p.high:.1%}"} for p in choice.front],
                 hide_index=True)
    held, low, high = choice.held_out
    whole = max(choice.panels, key=lambda p: len(p.critics))
    st.success(plain(
        f"Recommended: {', '.join(choice.recommended.critics)} "
        f"({choice.recommended.accuracy:.1%}; the whole panel {whole.accuracy:.1%}). Picking "
        f"this way, scored on items it was not picked on: {held:.1%} [{low:.1%}, {high:.1%}]."
        + ("" if priced else " No critic's cost is known here: the fewest critics count as "
           "cheapest.")), icon=":material/savings:")
