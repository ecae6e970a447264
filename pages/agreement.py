"""Agreement: alpha with its interval, per-item alpha, per-critic agreement, kappa, confusion."""

import math

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from judging.panel.panel_files import load_panel
from judging.voting.strategies import tie_rule_text
from pages.ui import charts
from pages.ui.agreement_data import (
    run_pairwise_report,
    run_report,
    run_rubric_report,
    run_stability_figures,
    run_verbosity_probe,
)
from pages.ui.audit_view import audit_section
from pages.ui.calibration_view import calibration_section
from pages.ui.error_notes import user_errors
from pages.ui.expected_view import expected_section
from pages.ui.jury_agreement_view import jury_section
from pages.ui.reliability_view import reliability_section
from pages.ui.review_view import TIES_PARAM, UNSTABLE_PARAM
from pages.ui.run_picker import RUN_PARAM, pick_run
from pages.ui.shell import ensure_app_shell
from pages.ui.simulated import simulated_notice
from pages.ui.state import db
from pages.ui.text_format import plain
from storage.dataset_store import get_dataset
from storage.overrides import blind_labels
from storage.review_queue import tie_breaks
from storage.runs import get_run

ensure_app_shell()
st.title("Agreement")
run = pick_run()
if run is None:
    st.stop()
if run["ok_calls"] == 0:
    st.info("This run has no verdicts yet: figures appear once critics have answered.")
    st.stop()
if run["simulated"]:
    st.caption("Figures of this run come from **simulated** critics.")
notice = simulated_notice(db(), run)  # next to the figures against the user's gold labels
if notice:
    st.warning(plain(notice), icon=":material/smart_toy:")

report = run_report(run)
a, boot = report.alpha, report.bootstrap
STABILITY_HOW = (
    "No stability figures: each critic answered each item once. To see how often a critic "
    "contradicts itself, set **samples** above 1 on that critic (Panel page, its advanced "
    "settings) and run the panel again; the repeats are asked at the critic's temperature.")
ALPHA_IN_WORDS = (
    "Alpha in plain words: 1 means the critics always agree; 0 means they agree no more than "
    "chance would (as if each answered at random with its usual mix of labels); below 0 means "
    "they disagree more than chance, in a systematic way.")


def _figure(col: DeltaGenerator, title: str, value: float | None,
            reason: str | None, *, shown: str | None = None) -> None:
    """A figure as a metric when it is defined; else its title and why it is undefined, in
    words that wrap (an "undefined" in large type told the reader nothing)."""
    if value is not None and math.isfinite(value):
        col.metric(title, shown or f"{value:.3f}")
        return
    col.markdown(f"**{title}**")
    col.caption(f"Undefined: {plain(reason or 'too few valid verdicts')}.")


cols = st.columns(4)
_figure(cols[0], f"Krippendorff's alpha ({report.level})", a.value, a.reason)
interval = (f"{boot.low:.3f} – {boot.high:.3f}" if boot.low is not None and boot.high is not None
            else None)
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
panel = load_panel(get_run(db(), int(run["id"]))["panel_yaml"])  # read once for the page
breaks = tie_breaks(db(), int(run["id"]))
if breaks:  # a tie is the panel's rule speaking, not the critics: say so, and how it went
    tied = sum(breaks.values())
    how = ", ".join(f"{label} for {n:,}" for label, n in breaks.items())
    text_col, link_col = st.columns([3, 1], vertical_alignment="center")
    text_col.caption(plain(
        f"{tied:,} item{'' if tied == 1 else 's'} had a tied vote, decided by the panel's tie "
        f"rule, not by a majority: {how}. {tie_rule_text(panel.voting, panel.scale) or ''}"))
    link_col.page_link("pages/review.py", label="Review the tied items", icon=":material/balance:",
                       query_params={RUN_PARAM: str(run["id"]), TIES_PARAM: "1"})

left, right = st.columns(2)
with left:
    chart = charts.per_item_alpha_histogram(report)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
    else:
        st.info("No item has two or more valid verdicts, so there is no per-item alpha.")
with right:
    chart = charts.bootstrap_histogram(report)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
    else:
        st.info(f"No bootstrap distribution: {plain(boot.reason or 'alpha is undefined')}.")

# The panel's accuracy on every item, from the audit sample (issue 25: pages/ui/audit_view.py).
audit_section(run)

st.subheader("Per critic")
if notice:
    st.caption("Agreement with gold and with humans below: " + plain(notice.split(":", 1)[0])
               + ".")
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
    st.caption("Agreement with the humans appears once items are overridden on the Review page.")
else:
    blind = len(blind_labels(db(), int(run["id"])))
    st.caption(
        f"Against the humans: {blind:,} item{'' if blind == 1 else 's'} by the label given in a "
        "blind first pass (before the critics were shown), the others by their latest "
        "override, which was given after reading every critic and so leans towards them."
        if blind else
        "Against the humans: each item's latest override, given after reading every critic (it "
        "leans towards them). Turn on **Blind first pass** on Review for unanchored labels.")

left, right = st.columns(2)
with left:
    chart = charts.leave_one_out_bars(report)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
with right:
    chart = charts.dawid_skene_bars(report)
    if chart is not None:
        st.altair_chart(chart, width="stretch")
    elif report.dawid_skene_reason:
        st.caption(f"Dawid-Skene: {plain(report.dawid_skene_reason)}.")

st.subheader("Between critics")
chart = charts.kappa_heatmap(report.kappa)
if chart is None:
    st.caption(plain(report.kappa_reason or "No pairwise kappa."))
else:
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
                      query_params={RUN_PARAM: str(run["id"]), "critic_a": first, "critic_b": second})

# A panel of juries: agreement within each jury and between the juries' decisions.
if panel.juries:
    jury_section(run)

rubric = run_rubric_report(run)
if rubric is not None:
    st.subheader("Rubric: agreement per criterion")
    st.dataframe(
        [{"criterion": c.criterion, "weight": c.weight, "items": c.items,
          "in dispute": c.disputed, "alpha": c.alpha.value,
          **{f"{critic} = panel": share for critic, share in c.with_panel.items()}}
         for c in rubric.criteria],
        hide_index=True, column_config={
            "criterion": st.column_config.TextColumn(),
            "weight": st.column_config.NumberColumn(format="%g"),
            "alpha": st.column_config.NumberColumn(format="%.3f"),
            **{f"{critic} = panel": st.column_config.NumberColumn(format="percent")
               for critic in run["critics"]}})
    st.caption("Per criterion: Krippendorff's alpha of the critics' marks (MET, UNMET, "
               "CANNOT_ASSESS), the items where the critics' marks differ, and how often each "
               "critic's mark is the panel's. On Review, **Criterion in dispute** opens those "
               "items. The figures above are on the items' scores.")
    picked = st.selectbox("Cohen's kappa between the critics on", [c.criterion for c in
                          rubric.criteria], key="rubric_kappa_criterion")
    chosen = next(c for c in rubric.criteria if c.criterion == picked)
    heatmap = charts.kappa_heatmap(chosen.kappa, title=f"Cohen's kappa on {picked}")
    if heatmap is not None:
        st.altair_chart(heatmap)

pairwise = run_pairwise_report(run)
if pairwise is not None:
    st.subheader("Pairwise: which system wins")
    st.dataframe(
        [{"system": r.system, "wins": r.wins, "ties": r.ties, "losses": r.losses,
          "win rate": r.win_rate, "95% low": r.low, "95% high": r.high,
          "Bradley-Terry strength": pairwise.strengths.values.get(r.system)}
         for r in pairwise.systems],
        hide_index=True, column_config={
            "system": st.column_config.TextColumn(),
            **{c: st.column_config.NumberColumn(format="%.2f")
               for c in ("win rate", "95% low", "95% high")},
            "Bradley-Terry strength": st.column_config.NumberColumn(format="%.3f")})
    st.caption(
        f"Over {pairwise.comparisons:,} comparisons, by each item's final label (a reviewer's, "
        "else the consensus); a tie counts half. The interval is a bootstrap over the "
        "comparisons. A Bradley-Terry strength is a system's share of wins against all others "
        "fitted together: the chance that i beats j is s_i / (s_i + s_j)."
        + (f" No strengths: {pairwise.strengths.reason}." if pairwise.strengths.reason else ""))
    if pairwise.bias:
        st.markdown("**Position bias**: answers that changed when A and B were swapped")
        st.dataframe(
            [{"critic": b.critic, "changed": b.rate, "pairs": b.pairs,
              "to the first shown both times": b.to_first} for b in pairwise.bias],
            hide_index=True, column_config={
                "critic": st.column_config.TextColumn(),
                "changed": st.column_config.NumberColumn(format="percent")})
        st.caption("Each critic was asked twice per item, the second time with the responses "
                   "swapped. A critic swayed by the order says A both times: its answer "
                   "changes with the position, not the content.")

stable = run_stability_figures(run)
if stable:
    st.subheader("Within each critic: stability over repeated samples")
    st.dataframe(
        [{"critic": r.critic, "items": r.items, "flip rate": r.flip_rate,
          "agreement with itself": r.agreement,
          "alpha with itself": r.alpha.value if r.alpha is not None else None}
         for r in stable]
        + [{"critic": "(between critics)", "items": None, "flip rate": None,
            "agreement with itself": None, "alpha with itself": report.alpha.value}],
        hide_index=True, column_config={
            "critic": st.column_config.TextColumn(),
            "flip rate": st.column_config.NumberColumn(format="percent"),
            "agreement with itself": st.column_config.NumberColumn(format="percent"),
            "alpha with itself": st.column_config.NumberColumn(format="%.3f")})
    unstable = sorted({item for r in stable for item in r.unstable})
    st.caption(
        "Each critic asked the same item several times: the flip rate is the share of items "
        "whose samples did not all agree. A critic that disagrees with itself this often "
        "explains part of the disagreement between critics (the last row).")
    if unstable:
        st.page_link("pages/review.py", label=f"Review the {len(unstable):,} unstable items",
                     icon=":material/shuffle:",
                     query_params={RUN_PARAM: str(run["id"]), UNSTABLE_PARAM: "1"})
else:
    st.caption(STABILITY_HOW)

expected_section(run)

if report.confusion_vs_humans:
    st.subheader("Each critic against the humans")
    names = list(report.confusion_vs_humans)
    for start in range(0, len(names), 3):
        row = st.columns(3)
        for col, name in zip(row, names[start : start + 3]):
            col.altair_chart(charts.confusion_heatmap(name, report.confusion_vs_humans[name]))

st.subheader("Verbosity: do verdicts follow the response's length?")
fields = list(get_dataset(db(), int(run["dataset_id"]))["fields"])
if fields:
    with user_errors("No verbosity probe"):
        # The field picked, else the longest one the critics' prompts show (the response).
        picked = st.session_state.get("verbosity_field")
        probe = run_verbosity_probe(run, picked if picked in fields else None)
        st.selectbox("Length of", fields, key="verbosity_field",
                     index=fields.index(probe.measured) if probe.measured in fields else 0)
        if probe.reason:
            st.caption(plain(probe.reason[0].upper() + probe.reason[1:] + "."))
        else:
            st.dataframe(
                [{"critic": r.critic, "Spearman's rho": r.rho, "95% low": r.low, "95% high": r.high,
                  "items": r.n, "note": r.reason or ""} for r in probe.rows],
                hide_index=True, column_config={
                    "critic": st.column_config.TextColumn(),
                    **{c: st.column_config.NumberColumn(format="%+.3f")
                       for c in ("Spearman's rho", "95% low", "95% high")}})
            st.caption("Rank correlation between the field's length in characters and each "
                       "critic's verdict (its score, or its label's place in the scale's order). "
                       "An interval clear of 0 means the critic leans with length.")

# Each critic against the blind labels, trusted or not (issue 25: pages/ui/reliability_view.py).
reliability_section(run)

# Calibration learns from reviews and compares labels: shown once humans have labelled items.
if report.vs_humans and not panel.scale.is_numeric:
    calibration_section(run)
