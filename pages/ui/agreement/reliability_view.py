"""The Agreement page's critic reliability card (issue 25 part 4): per critic and per label,
the true-positive and true-negative rates against the blind human labels with their Wilson
intervals, kappa with its bootstrap interval, the bias figures the run measured, and a
"trusted" mark where both intervals' low ends clear the threshold the user sets.

Each critic's rows are an `st.table` (HTML), not an `st.dataframe` (a canvas): a few rows per
critic, and the text can be read, selected and found by a browser test.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.analysis.reliability_stats import (
    TRUSTED_AT,
    CriticReliability,
    ReliabilityCard,
    kappa_text,
    position_text,
    rate_text,
    trust_sentence,
    verbosity_text,
)
from judging.analysis.verbosity import VerbosityProbe
from judging.runs.stored.reliability import run_reliability
from pages.ui.agreement.agreement_data import Stamp, calls_stamp, run_verbosity_probe
from pages.ui.state import db, db_path
from pages.ui.text_format import plain
from storage.reviewing.overrides import overrides_stamp

TRUSTED_KEY = "reliability_trusted_at"


@st.cache_data(max_entries=8, show_spinner=False)
def _card(path: str, run_id: int, stamp: Stamp, reviews: tuple[int, int],
          _probe: VerbosityProbe) -> ReliabilityCard:
    # The bootstrap (2,000 resamples per critic) is redone only when the verdicts or the
    # reviews change: they are the key (the probe follows the verdicts: `stamp`).
    del path, stamp, reviews  # part of the cache key only
    return run_reliability(db(), run_id, verbosity=_probe)


def _critic(card: CriticReliability, field: str | None, threshold: float) -> None:
    trusted = card.trusted_labels(threshold)
    with st.container(border=True):
        left, right = st.columns([1, 2], vertical_alignment="center")
        left.markdown(f"**{plain(card.critic)}**")
        if trusted:
            right.badge(plain(f"Trusted on {', '.join(trusted)}"), icon=":material/verified:",
                        color="green")
        else:
            right.badge(plain(f"Not trusted on any label at {threshold:.0%}"), color="gray")
        lines = [f"{card.n:,} items with a blind label and a verdict"
                 + (f" ({card.missing:,} more where it failed, left out)" if card.missing else "")
                 + f"; {trust_sentence(card, threshold)}.",
                 f"Cohen's kappa with the humans: {kappa_text(card.kappa)}."]
        if card.position is not None:
            lines.append(f"Position bias: {position_text(card.position)}.")
        if card.verbosity is not None:
            lines.append(f"Verbosity, length of {field}: {verbosity_text(card.verbosity)}.")
        st.caption("  \n".join(plain(line) for line in lines))
        st.table([{"label": row.label, "labelled blind": row.tpr.n,
                   "true-positive rate": rate_text(row.tpr),
                   "true-negative rate": rate_text(row.tnr),
                   "trusted": "trusted" if row.label in trusted else ""}
                  for row in card.labels], hide_index=True)


def reliability_section(run: dict[str, Any]) -> None:
    """Draw the card of `run` (a `storage.results.runs.list_runs` row), or say what it needs."""
    run_id = int(run["id"])
    st.subheader("Critic reliability against blind labels")
    threshold = float(st.number_input(
        "Trusted when both intervals' low ends reach", min_value=0.5, max_value=0.99,
        value=TRUSTED_AT, step=0.05, format="%.2f", key=TRUSTED_KEY,
        help="A critic is marked trusted on a label only when the low ends of both its "
        "true-positive and true-negative rates' 95% intervals are at this share or above: a "
        "high rate on a few items is not enough."))
    probe = run_verbosity_probe(run, None)  # on the field the critics' prompts show
    card = _card(str(db_path()), run_id, calls_stamp(run), overrides_stamp(db(), run_id), probe)
    if card.reason is not None:
        st.caption(plain(card.reason[0].upper() + card.reason[1:] + "."))
        return
    st.caption(plain(card.source_sentence()))
    for critic in card.critics:
        _critic(critic, card.verbosity_field, threshold)
    notes = []
    if not card.position_measured:
        notes.append("Position bias is not measured: only a pairwise panel asks each pair in "
                     "both orders.")
    if card.verbosity_reason:
        notes.append(f"Verbosity: {card.verbosity_reason}.")
    if notes:
        st.caption(plain(" ".join(notes)))
