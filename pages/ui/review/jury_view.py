"""Review of a panel of juries (`judging.voting.juries`): the item's decision as a tree.

    jury quality (weighted)        its critics' cards
                                   -> "quality decided KEEP · agreement 1.00"
    jury safety (any REJECT)       its critics' cards
                                   -> "safety decided REJECT · agreement 0.50 · split"
    panel (all-of KEEP over the juries) -> "REJECT ..."

The lines are plain text built by pure functions (tested without a page); the cards are
`pages.ui.review.review_evidence.critic_cards`, given only the jury's own critics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from judging.panel.panel_model import Panel
from judging.voting.juries import JuryConfig
from judging.voting.strategies import VotingConfig
from pages.ui.review import review_evidence as ev
from pages.ui.review import review_list as rl
from pages.ui.text_format import plain

NO_DECISION = "no decision (abstained)"


def strategy_text(voting: VotingConfig) -> str:
    """"all-of KEEP", "any REJECT", "weighted": a strategy with the label it looks for."""
    if voting.strategy in ("any", "all-of") and voting.target_label is not None:
        return f"{voting.strategy} {voting.target_label}"
    return voting.strategy


def jury_heading(jury: JuryConfig) -> str:
    """"Jury safety · any REJECT · weight 2 · 2 critics" (markdown-safe through `plain`)."""
    parts = [f"Jury {jury.name}", strategy_text(jury.voting)]
    if jury.weight != 1.0:
        parts.append(f"weight {jury.weight:g}")
    parts.append(f"{len(jury.critics)} critic{'' if len(jury.critics) == 1 else 's'}")
    return " · ".join(parts)


def jury_decision_line(jury: str, row: Mapping[str, Any] | None) -> str:
    """"→ safety decided REJECT · agreement 0.50 · split · 1 failed · <note>" for a stored
    jury decision (`storage.results.jury_decisions.item_jury_decisions` row); None: not decided yet."""
    if row is None:
        return f"→ {jury} has not decided yet"
    value = row.get("consensus")
    parts = [f"→ {jury} decided {NO_DECISION if value is None else rl.shown_value(value)}"]
    if row.get("agreement") is not None:
        parts.append(f"agreement {row['agreement']:.2f}")
    if row.get("disagreement") and value is not None:
        parts.append("split")
    if row.get("failed"):
        parts.append(f"{row['failed']} failed")
    if row.get("note"):
        parts.append(str(row["note"]))
    return " · ".join(parts)


def top_line(panel: Panel, consensus: Mapping[str, Any] | None) -> str:
    """"⇒ Panel decision (all-of KEEP over 2 juries): REJECT · 1 of 2 juries back it"."""
    how = f"{strategy_text(panel.voting)} over {len(panel.juries)} juries"
    if consensus is None:
        return f"⇒ Panel decision ({how}): not decided yet"
    value = consensus.get("consensus")
    parts = [f"⇒ Panel decision ({how}): "
             f"{NO_DECISION if value is None else rl.shown_value(value)}"]
    if value is not None and consensus.get("agreement") is not None:
        backing = round(consensus["agreement"] * len(panel.juries))
        parts.append(f"{backing} of {len(panel.juries)} juries back it")
    if consensus.get("note"):
        parts.append(str(consensus["note"]))
    return " · ".join(parts)


def jury_tree(detail: dict[str, Any], panel: Panel, rows: list[dict[str, Any]]) -> None:
    """Each jury with its critics' verdicts and its decision, then the panel's decision.

    Args:
        detail: the item (`storage.reviewing.review_queue.item_detail`).
        panel: the run's panel (it has juries).
        rows: the item's jury decisions (`storage.results.jury_decisions.item_jury_decisions`).
    """
    by_jury = {row["jury"]: row for row in rows}
    st.markdown("**Juries**")
    for jury in panel.juries:
        with st.container(border=True):
            st.markdown(f"**{plain(jury_heading(jury))}**")
            if jury.description:
                st.caption(plain(jury.description))
            mine = [v for v in detail["verdicts"] if v["critic"] in jury.critics]
            ev.critic_cards({**detail, "verdicts": mine}, scale=panel.scale)
            st.text(jury_decision_line(jury.name, by_jury.get(jury.name)))
    st.text(top_line(panel, detail.get("consensus")))
