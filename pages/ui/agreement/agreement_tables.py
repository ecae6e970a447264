"""The Agreement page's sections for one kind of panel or one question each: rubric criteria,
pairwise wins and position bias, stability over repeated samples, each critic against the
humans, and the verbosity probe.

Each draws nothing when its figures do not apply to the run (the stability section says how to
get them instead). The page loads the figures (`pages.ui.agreement.agreement_data`) and hands them here.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.analysis.agreement_report import AgreementReport
from judging.analysis.pairwise_stats import PairwiseReport
from judging.analysis.rubric_stats import RubricReport
from judging.analysis.stability import CriticStability
from pages.ui.agreement import charts
from pages.ui.agreement.agreement_data import run_verbosity_probe
from pages.ui.error_notes import user_errors
from pages.ui.review.review_filter_bar import UNSTABLE_PARAM
from pages.ui.run_picker import RUN_PARAM
from pages.ui.state import db
from pages.ui.text_format import plain
from storage.datasets.dataset_store import get_dataset

STABILITY_HOW = (
    "No stability figures: each critic answered each item once. To see how often a critic "
    "contradicts itself, set **samples** above 1 on that critic (Panel page, its advanced "
    "settings) and run the panel again; the repeats are asked at the critic's temperature.")


def rubric_section(run: dict[str, Any], rubric: RubricReport | None) -> None:
    """Agreement per rubric criterion, and Cohen's kappa on the criterion picked."""
    if rubric is None:
        return
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


# Every percentage of the pairwise tables in one format: a figure times 100 with one decimal
# (Streamlit's "percent" format drops trailing zeros: 29% beside 20.41%).
_PERCENT_FORMAT = "%.1f%%"
PERCENT_COLUMNS = {name: st.column_config.NumberColumn(format=_PERCENT_FORMAT) for name in (
    "changed", "right in both orders", "mean of the two orders' accuracies",
    "right with A first", "right when swapped")}


def _percent(rate: float | None) -> float | None:
    """A share as the pairwise tables show it (times 100, see `PERCENT_COLUMNS`)."""
    return None if rate is None else 100 * rate


# What a critic's verdict is on a swap run, and so what its agreement with gold measures.
SWAP_VERDICT = ("an answer that changed with the order counts as a tie (or is flagged and left "
                "out), so it is near right in both orders, not the mean of the two orders.")


def pairwise_section(pairwise: PairwiseReport | None) -> None:
    """Wins, ties and losses per system with Bradley-Terry strengths, then position bias."""
    if pairwise is None:
        return
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
            [{"critic": b.critic, "changed": _percent(b.rate), "pairs": b.pairs,
              "to the first shown both times": b.to_first} for b in pairwise.bias],
            hide_index=True, column_config={
                "critic": st.column_config.TextColumn(), **PERCENT_COLUMNS})
        st.caption("Each critic was asked twice per item, the second time with the responses "
                   "swapped. A critic swayed by the order says A both times: its answer "
                   "changes with the position, not the content.")
    if pairwise.vs_gold:
        st.markdown("**Against the gold labels, asked in both orders**")
        st.dataframe(
            [{"critic": g.critic, "right in both orders": _percent(g.both_rate),
              "mean of the two orders' accuracies": _percent(g.mean_rate),
              "right with A first": _percent(g.first / g.pairs if g.pairs else None),
              "right when swapped": _percent(g.swapped / g.pairs if g.pairs else None),
              "pairs": g.pairs} for g in pairwise.vs_gold],
            hide_index=True, column_config={
                "critic": st.column_config.TextColumn(), **PERCENT_COLUMNS})
        st.caption("Over the pairs each critic answered in both orders. Right in both orders: "
                   "both of its answers match the gold label. The mean of the two orders' "
                   "accuracies scores each order on its own, then averages them: the figure "
                   "LLM-as-a-judge papers report. The agreement with the gold labels under "
                   f"Per critic scores each critic's verdict, its two answers combined: "
                   f"{SWAP_VERDICT}")


def stability_section(run: dict[str, Any], report: AgreementReport,
                      stable: list[CriticStability]) -> None:
    """Each critic against itself over repeated samples (beside alpha between critics), with a
    link to the unstable items; without repeats, how to get them."""
    if not stable:
        st.caption(STABILITY_HOW)
        return
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


def against_humans_section(report: AgreementReport) -> None:
    """One confusion matrix per critic against the humans' labels, three to a row."""
    if not report.confusion_vs_humans:
        return
    st.subheader("Each critic against the humans")
    names = list(report.confusion_vs_humans)
    for start in range(0, len(names), 3):
        row = st.columns(3)
        for col, name in zip(row, names[start : start + 3]):
            col.altair_chart(charts.confusion_heatmap(name, report.confusion_vs_humans[name]))


def verbosity_section(run: dict[str, Any]) -> None:
    """Spearman's rho between a field's length and each critic's verdict, on the field picked."""
    st.subheader("Verbosity: do verdicts follow the response's length?")
    fields = list(get_dataset(db(), int(run["dataset_id"]))["fields"])
    if not fields:
        return
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
                [{"critic": r.critic, "Spearman's rho": r.rho, "95% low": r.low,
                  "95% high": r.high, "items": r.n, "note": r.reason or ""} for r in probe.rows],
                hide_index=True, column_config={
                    "critic": st.column_config.TextColumn(),
                    **{c: st.column_config.NumberColumn(format="%+.3f")
                       for c in ("Spearman's rho", "95% low", "95% high")}})
            st.caption("Rank correlation between the field's length in characters and each "
                       "critic's verdict (its score, or its label's place in the scale's order). "
                       "An interval clear of 0 means the critic leans with length.")
