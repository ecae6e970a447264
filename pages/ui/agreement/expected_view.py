"""The Agreement page's logprob section: agreement on the critics' expected scores and the
calibration of the panel's pooled label probabilities against the humans."""

from __future__ import annotations

from typing import Any

import streamlit as st

from pages.ui.agreement.agreement_data import run_expected_figures
from pages.ui.text_format import plain

HOW = (
    "Critics asked for logprobs give a probability per label. Their expected score (each "
    "label's value times its probability, as in G-Eval) is a number, so alpha can be taken at "
    "the interval level: two critics that both hesitated between 3 and 4 agree here even when "
    "their argmax labels differ. Calibration compares the panel's pooled probability of its "
    "top label with the humans' labels (a reviewer's, else the gold label): a calibrated "
    "panel is right 80% of the time when it says 0.8. ECE is the gap, weighted by items.")


def expected_section(run: dict[str, Any]) -> None:
    """Draw the section, or nothing for a run without label probabilities."""
    figures = run_expected_figures(run)
    if figures is None:
        return
    st.subheader("Logprob scores: agreement and calibration")
    left, right = st.columns(2)
    alpha = figures.alpha
    if alpha.value is not None:
        left.metric("Alpha on expected scores (interval)", f"{alpha.value:.3f}")
    else:
        left.markdown("**Alpha on expected scores (interval)**")
        left.caption(plain(f"Undefined: {alpha.reason}."))
    cal = figures.calibration
    if cal.ece is not None:
        right.metric("Calibration error (ECE)", f"{cal.ece:.3f}",
                     help=f"Over {cal.n:,} items with a human label.")
        st.dataframe(
            [{"top probability": f"{b.low:.1f}–{b.high:.1f}", "items": b.n,
              "mean probability": b.confidence, "share right": b.accuracy}
             for b in cal.bins if b.n],
            hide_index=True, column_config={
                "mean probability": st.column_config.NumberColumn(format="%.2f"),
                "share right": st.column_config.NumberColumn(format="percent")})
    else:
        right.markdown("**Calibration error (ECE)**")
        right.caption(plain(f"Not yet: {cal.reason}."))
    st.caption(HOW)
