"""Agreement of a panel of juries (`judging.analysis.jury_stats`): one row per jury (its critics'
alpha, interval, Fleiss' kappa, percent agreement, split items, agreement with the panel's
decision), then the juries' decisions against each other (alpha and Cohen's kappa)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.analysis.jury_stats import JuryReport
from judging.runs.stored.jury_report import run_jury_report
from pages.ui.agreement import charts
from pages.ui.agreement.agreement_data import RESAMPLES, Stamp, calls_stamp
from pages.ui.state import db, db_path
from pages.ui.text_format import plain


@st.cache_resource(max_entries=4, show_spinner="Computing agreement per jury...")
def _jury_report(path: str, run_id: int, stamp: Stamp) -> JuryReport | None:
    del path, stamp  # part of the cache key only
    return run_jury_report(db(), run_id, resamples=RESAMPLES, seed=0)


def jury_rows(report: JuryReport) -> list[dict[str, Any]]:
    """The per-jury table as the page shows it (one dict per jury, then the between row)."""
    rows = []
    for figures in report.juries:
        r = figures.report
        same, both = figures.with_panel
        rows.append({
            "jury": figures.jury, "critics": ", ".join(figures.critics),
            "alpha": r.alpha.value,
            "95% low": r.bootstrap.low, "95% high": r.bootstrap.high,
            "Fleiss' kappa": r.fleiss.value if r.fleiss else None,
            "percent agreement": r.percent.value if r.percent else None,
            "split items": figures.split,
            "= panel decision": same / both if both else None,
        })
    b = report.between
    rows.append({
        "jury": "(between juries)", "critics": ", ".join(b.critics), "alpha": b.alpha.value,
        "95% low": b.bootstrap.low, "95% high": b.bootstrap.high,
        "Fleiss' kappa": b.fleiss.value if b.fleiss else None,
        "percent agreement": b.percent.value if b.percent else None,
        "split items": None, "= panel decision": None,
    })
    return rows


def jury_section(run: dict[str, Any]) -> None:
    """The Agreement page's section for a panel of juries (nothing for a flat panel)."""
    report = _jury_report(str(db_path()), int(run["id"]), calls_stamp(run))
    if report is None:
        return
    st.subheader("Per jury")
    st.dataframe(jury_rows(report), hide_index=True, column_config={
        "jury": st.column_config.TextColumn(),
        **{c: st.column_config.NumberColumn(format="%.3f")
           for c in ("alpha", "95% low", "95% high", "Fleiss' kappa")},
        "percent agreement": st.column_config.NumberColumn(format="percent"),
        "= panel decision": st.column_config.NumberColumn(format="percent"),
    })
    st.caption(
        "Within each jury: Krippendorff's alpha of its own critics' verdicts, with its 95% "
        "interval, Fleiss' kappa and percent agreement; the items where the jury was split; "
        "how often its decision is the panel's. The last row treats each jury's decision as "
        "one rater: how far the juries agree with each other (an abstaining jury is a missing "
        "rating).")
    reasons = [f"{f.jury}: {f.report.alpha.reason}" for f in report.juries
               if f.report.alpha.value is None and f.report.alpha.reason]
    if reasons:
        st.caption(plain("Alpha undefined for " + "; ".join(reasons) + "."))
    left, right = st.columns(2)
    with left:
        chart = charts.kappa_heatmap(report.between.kappa,
                                     title="Cohen's kappa between the juries' decisions")
        if chart is not None:
            st.altair_chart(chart)
        else:
            st.caption(plain(report.between.kappa_reason or "No kappa between the juries."))
    with right:
        st.dataframe(
            [{"jury": name, "= panel decision": share.value, "items": share.n}
             for name, share in report.between.vs_consensus.items()],
            hide_index=True, column_config={
                "jury": st.column_config.TextColumn(),
                "= panel decision": st.column_config.NumberColumn(format="percent")})
