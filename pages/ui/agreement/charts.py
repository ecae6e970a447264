"""Altair charts of an agreement report. Pure functions: a report in, a chart (or None) out.

Every chart is built from aggregated data (a histogram's bins, one row per critic), never from
one mark per item, so a 100,000-item run draws as fast as a small one.

Why every chart is `sized`: Streamlit gives a chart without `autosize` the type "fit", which
makes the `height` the whole chart's, title and axes included. A height of `28 * rows` then
left a few pixels for the marks (bars of 0.2-1.3 px in a 128 px chart, names printed over each
other). Here the height is the plotting area's, from the number of rows, and Vega adds the
room its title and axes need ("fit-x": the width still follows the column).
"""

from __future__ import annotations

import math
from typing import TypeVar

import altair as alt
import numpy as np
import pandas as pd

from judging.agreement import KappaMatrix
from judging.analysis.agreement_report import AgreementReport

KAPPA_SELECTION = "kappa_cell"
REFERENCES = {"consensus": "the consensus", "humans": "the humans", "gold": "the gold labels"}


# Pixels per row of a chart whose rows are critics or labels: a bar or cell stays well above the
# 8 px a reader needs (a band keeps 90% of its step) and a 12 px label fits in its row.
ROW_PX = 28
HISTOGRAM_PX = 180  # the plotting area of a histogram (its bars' height is the figure)
# Bins of a histogram in half the page (about 300 px of plot): 20 keep each bar 12 px or more
# wide (40 drew 6-7 px slivers); on -1..1 a bin is 0.1 of alpha.
HISTOGRAM_BINS = 20
FIT_WIDTH = alt.AutoSizeParams(type="fit-x", contains="padding")
AnyChart = TypeVar("AnyChart", alt.Chart, alt.LayerChart)


def sized(chart: AnyChart, *, plot_height: int) -> AnyChart:
    """`chart` with a plotting area `plot_height` px high, its width fitted to the column."""
    return chart.properties(height=plot_height, autosize=FIT_WIDTH)


def _label_angle(labels: list[str], *, plot_width: int) -> int:
    """0 (level) when the labels fit side by side in `plot_width`, else -40 (slanted, so long
    or many labels do not print over each other)."""
    widest = max((len(label) for label in labels), default=0) * 7 + 8  # about 7 px a letter
    return 0 if widest * len(labels) <= plot_width else -40


def _histogram(values: np.ndarray, *, bins: int, domain: tuple[float, float] | None) -> pd.DataFrame:
    values = values[np.isfinite(values)]
    if domain is None:
        domain = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    low, high = domain
    if high <= low:
        high = low + 1e-9
    counts, edges = np.histogram(values, bins=bins, range=(low, high))
    return pd.DataFrame({"start": edges[:-1], "end": edges[1:], "items": counts})


def per_item_alpha_histogram(report: AgreementReport) -> alt.Chart | None:
    """Histogram of per-item alpha (items with fewer than two ratings are left out)."""
    values = report.per_item_alpha.to_numpy(dtype=float)
    if not np.isfinite(values).any():
        return None
    finite = values[np.isfinite(values)]
    low = min(-1.0, math.floor(float(finite.min()) * 4) / 4)
    data = _histogram(values, bins=HISTOGRAM_BINS, domain=(low, 1.0 + 1e-9))
    chart = (
        alt.Chart(data, title="Per-item alpha")
        .mark_bar()
        .encode(
            # In words, not the formula: the item's disagreement against the dataset's usual.
            x=alt.X("start:Q", bin="binned",
                    title="alpha of the item (1: the critics agree; 0 or less: as split as chance)"),
            x2="end:Q",
            y=alt.Y("items:Q", title="items"),
            tooltip=[alt.Tooltip("start:Q", format=".2f"), alt.Tooltip("end:Q", format=".2f"),
                     "items:Q"],
        )
    )
    return sized(chart, plot_height=HISTOGRAM_PX)


def bootstrap_histogram(report: AgreementReport) -> alt.LayerChart | None:
    """The bootstrap distribution of alpha, with the interval and the point estimate as rules."""
    boot = report.bootstrap
    dist = np.asarray(boot.distribution, dtype=float)
    if dist.size == 0:
        return None
    data = _histogram(dist, bins=HISTOGRAM_BINS, domain=None)
    bars = (
        alt.Chart(data, title=f"Bootstrap distribution of alpha ({boot.resamples} resamples)")
        .mark_bar(opacity=0.8)
        .encode(
            x=alt.X("start:Q", bin="binned", title="alpha", scale=alt.Scale(zero=False)),
            x2="end:Q",
            y=alt.Y("items:Q", title="resamples"),
        )
    )
    marks = [("estimate", report.alpha.value), ("low", boot.low), ("high", boot.high)]
    rules_data = pd.DataFrame([{"what": w, "alpha": v} for w, v in marks if v is not None])
    rules = (
        alt.Chart(rules_data)
        .mark_rule(strokeWidth=2)
        .encode(
            x="alpha:Q",
            strokeDash=alt.condition(alt.datum.what == "estimate", alt.value([1, 0]), alt.value([4, 3])),
            color=alt.value("#d62728"),
            tooltip=["what:N", alt.Tooltip("alpha:Q", format=".3f")],
        )
    )
    return sized(bars + rules, plot_height=HISTOGRAM_PX)


def critic_agreement_frame(report: AgreementReport) -> pd.DataFrame:
    """Long table: critic, reference, value, low, high, n (defined figures only)."""
    rows = []
    for ref, table in (("consensus", report.vs_consensus), ("humans", report.vs_humans),
                       ("gold", report.vs_gold)):
        for critic, prop in table.items():
            if prop.value is None:
                continue
            rows.append({"critic": critic, "reference": REFERENCES[ref], "value": prop.value,
                         "low": prop.low, "high": prop.high, "n": prop.n})
    return pd.DataFrame(rows, columns=["critic", "reference", "value", "low", "high", "n"])


def critic_agreement_bars(report: AgreementReport) -> alt.LayerChart | None:
    """Per critic, agreement with each reference as a bar with its Wilson interval."""
    data = critic_agreement_frame(report)
    if data.empty:
        return None
    base = alt.Chart(data).encode(
        y=alt.Y("critic:N", title=None, sort=report.critics),
        yOffset=alt.YOffset("reference:N"),
        color=alt.Color("reference:N", title="agreement with"),
        tooltip=["critic:N", "reference:N", alt.Tooltip("value:Q", format=".3f"),
                 alt.Tooltip("low:Q", format=".3f"), alt.Tooltip("high:Q", format=".3f"), "n:Q"],
    )
    bars = base.mark_bar().encode(
        x=alt.X("value:Q", title="share of items agreeing", scale=alt.Scale(domain=[0, 1]))
    )
    errors = base.mark_rule(color="black").encode(x="low:Q", x2="high:Q")
    # One row per critic and reference: each bar gets a row of its own, not a share of 60 px.
    rows = len(data["critic"].unique()) * len(data["reference"].unique())
    return sized((bars + errors).properties(title="Per-critic agreement (95% Wilson intervals)"),
                 plot_height=ROW_PX * rows)


def kappa_frame(k: KappaMatrix | None) -> pd.DataFrame:
    """Long table of a pairwise kappa matrix: critic_a, critic_b, kappa (NaN undefined), n."""
    if k is None:
        return pd.DataFrame(columns=["critic_a", "critic_b", "kappa", "n", "label"])
    rows = []
    for i, a in enumerate(k.critics):
        for j, b in enumerate(k.critics):
            value = float(k.values[i, j])
            rows.append({
                "critic_a": a, "critic_b": b,
                "kappa": value if math.isfinite(value) else None,
                "n": int(k.n[i, j]),
                "label": f"{value:.2f}" if math.isfinite(value) else "–",
            })
    return pd.DataFrame(rows)


def kappa_heatmap(k: KappaMatrix | None, *,
                  title: str = "Pairwise Cohen's kappa (click a cell to review where the two "
                  "differ)") -> alt.LayerChart | None:
    """Pairwise Cohen's kappa as a heatmap; clicking a cell selects that pair of critics."""
    data = kappa_frame(k)
    if data.empty or k is None:
        return None
    pick = alt.selection_point(name=KAPPA_SELECTION, fields=["critic_a", "critic_b"],
                               on="click", clear="dblclick")
    order = list(k.critics)
    base = alt.Chart(data).encode(
        x=alt.X("critic_b:N", title=None, sort=order),
        y=alt.Y("critic_a:N", title=None, sort=order),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("kappa:Q", title="kappa", scale=alt.Scale(domain=[-1, 1], scheme="redblue")),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.5)),
        tooltip=["critic_a:N", "critic_b:N", alt.Tooltip("kappa:Q", format=".3f"), "n:Q"],
    ).add_params(pick)
    text = base.mark_text(fontSize=13).encode(text="label:N")
    size = max(200, 70 * len(order))
    return sized((cells + text).properties(title=title, width=size), plot_height=size)


def leave_one_out_bars(report: AgreementReport) -> alt.Chart | alt.LayerChart | None:
    """Alpha without each critic, against the full panel's alpha as a rule."""
    rows = [{"critic": c, "alpha": r.value} for c, r in report.leave_one_out.items()
            if r.value is not None]
    if not rows:
        return None
    bars = alt.Chart(pd.DataFrame(rows)).mark_bar().encode(
        y=alt.Y("critic:N", title="without critic", sort=report.critics),
        x=alt.X("alpha:Q", title="alpha"),
        tooltip=["critic:N", alt.Tooltip("alpha:Q", format=".3f")],
    )
    title = "Leave-one-critic-out alpha (red: the whole panel)"
    # A height from the rows, not alt.Step: a stretched chart with a step height logs a Vega
    # warning.
    if report.alpha.value is None:
        return sized(bars.properties(title=title), plot_height=ROW_PX * len(rows))
    rule = alt.Chart(pd.DataFrame([{"alpha": report.alpha.value}])).mark_rule(
        color="#d62728", strokeWidth=2
    ).encode(x="alpha:Q")
    return sized((bars + rule).properties(title=title), plot_height=ROW_PX * len(rows))


def dawid_skene_bars(report: AgreementReport) -> alt.Chart | None:
    """Dawid-Skene's estimate of each critic's accuracy (no gold labels needed)."""
    acc = report.dawid_skene_accuracies
    if not acc:
        return None
    data = pd.DataFrame([{"critic": c, "accuracy": v} for c, v in acc.items()])
    chart = alt.Chart(data, title="Dawid-Skene estimated accuracy").mark_bar().encode(
        y=alt.Y("critic:N", title=None, sort=report.critics),
        x=alt.X("accuracy:Q", scale=alt.Scale(domain=[0, 1])),
        tooltip=["critic:N", alt.Tooltip("accuracy:Q", format=".3f")],
    )
    return sized(chart, plot_height=ROW_PX * len(data))  # from the rows, as above


def confusion_heatmap(critic: str, table: pd.DataFrame) -> alt.LayerChart:
    """One critic's labels against the humans' (rows: human label; columns: the critic's)."""
    long = table.stack().rename("items").reset_index()
    long.columns = ["human", "critic_said", "items"]
    long["human"] = long["human"].astype(str)
    long["critic_said"] = long["critic_said"].astype(str)
    said = [str(c) for c in table.columns]
    base = alt.Chart(long).encode(
        # A third of the page is about 260 px of plot: labels that do not fit level are slanted.
        x=alt.X("critic_said:N", title=f"{critic} said", sort=said,
                axis=alt.Axis(labelAngle=_label_angle(said, plot_width=260))),
        y=alt.Y("human:N", title="human label", sort=[str(i) for i in table.index]),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("items:Q", scale=alt.Scale(scheme="blues"), legend=None),
        tooltip=["human:N", "critic_said:N", "items:Q"],
    )
    text = base.mark_text().encode(text="items:Q")
    # No chart title: the x axis names the critic (a title squeezed the plot in a column).
    # Sizes from the rows, not alt.Step: Streamlit fits the chart to its column and Vega warns.
    return sized((rect + text).properties(width=48 * len(table.columns)),
                 plot_height=ROW_PX * len(table.index))


def critic_summary_frame(report: AgreementReport) -> pd.DataFrame:
    """The per-critic table as a reader wants it: one readable column per reference that has
    any figure ("0.907 (0.868–0.935, n=300)"), then Dawid-Skene, alpha without it, failures.

    References with no figure yet (no human override, no gold label) are left out rather than
    shown as columns of "None".
    """
    table = report.critic_table()
    if table.empty:
        return pd.DataFrame()

    def cell(row: pd.Series, ref: str) -> str:
        value = row[f"vs_{ref}"]
        if value is None or not math.isfinite(value):
            return "undefined"
        low, high = row[f"vs_{ref}_low"], row[f"vs_{ref}_high"]
        interval = (f"{low:.3f}–{high:.3f}, " if low is not None and math.isfinite(low)
                    and high is not None and math.isfinite(high) else "")
        return f"{value:.3f} ({interval}n={int(row[f'vs_{ref}_n']):,})"

    out = pd.DataFrame(index=table.index)
    for ref, title in REFERENCES.items():
        if table[f"vs_{ref}"].notna().any():
            out[f"agreement with {title}"] = [cell(row, ref) for _, row in table.iterrows()]
    out["Dawid-Skene accuracy"] = table["ds_accuracy"].round(3)
    out["alpha without it"] = table["alpha_without"].round(3)
    out["failed calls"] = table["failed"]
    return out.reset_index()
