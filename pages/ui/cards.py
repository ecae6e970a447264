"""A critic's verdict as a card: label, confidence, reasoning, cost, raw exchange on demand.

Model text (reasoning, raw replies) is shown with `st.text` / `st.code` / `st.json`, never as
markdown or HTML: a reply could hold markup or links meant to fool the reviewer.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from judging.verdicts import Verdict
from pages.ui.text import plain

FAILURE_TEXT = {
    "error": "error",
    "item_error": "error for this item",
    "critic_error": "critic stopped",
    "refusal": "refused",
    "truncated": "truncated",
    "parse_fail": "unreadable reply",
    "cancelled": "not called (cancelled)",
}


def verdict_headline(verdict: Verdict) -> str:
    """A short plain-text line: the label (or failure), confidence, and "simulated" when it is."""
    if verdict.ok:
        value = verdict.label if verdict.label is not None else f"{verdict.score:g}"
        text = str(value)
        if verdict.confidence is not None:
            text += f" · confidence {verdict.confidence:.2f}"
    else:
        kind = verdict.failure.value if verdict.failure else "error"
        text = f"no verdict: {FAILURE_TEXT.get(kind, kind)}"
    if verdict.simulated:
        text += " · simulated"
    return text


def _raw_request(verdict: Verdict) -> Any:
    request = verdict.raw_request
    if isinstance(request, str):
        try:
            return json.loads(request)
        except ValueError:
            return request
    return request


def verdict_card(verdict: Verdict, *, show_raw: bool = False, key: str | None = None) -> None:
    """Draw one verdict in a bordered container.

    Args:
        verdict: the verdict to show.
        show_raw: show the raw request and reply at once (otherwise behind a toggle).
        key: a unique key for the toggle when several cards share a page.
    """
    with st.container(border=True):
        st.markdown(f"**{plain(verdict.critic)}**")
        if verdict.ok:
            st.text(verdict_headline(verdict))
        else:
            st.warning(verdict_headline(verdict), icon=":material/warning:")
            if verdict.message:
                st.text(verdict.message)
        if verdict.reasoning:
            st.text(verdict.reasoning)
        facts = []
        if verdict.model:
            facts.append(f"{verdict.vendor or '?'} / {verdict.model}")
        if verdict.latency_ms is not None:
            facts.append(f"{verdict.latency_ms:,.0f} ms")
        if verdict.attempts:
            facts.append(f"{verdict.attempts} attempt{'s' if verdict.attempts != 1 else ''}")
        if verdict.tokens_in is not None or verdict.tokens_out is not None:
            facts.append(f"{verdict.tokens_in or 0} + {verdict.tokens_out or 0} tokens")
        if verdict.cost_usd is not None:
            facts.append(f"${verdict.cost_usd:.5f}")
        if verdict.cached:
            facts.append("from cache")
        if facts:
            st.caption(" · ".join(plain(f) for f in facts))
        if show_raw or st.toggle("Raw request and reply", key=key or f"raw.{verdict.critic}"):
            request = _raw_request(verdict)
            if request is not None:
                st.caption("Request (the API key is never stored)")
                if isinstance(request, (dict, list)):
                    st.json(request, expanded=False)
                else:
                    st.code(str(request), language=None, wrap_lines=True)
            st.caption("Reply as received")
            st.code(verdict.raw_response or "(nothing came back)", language=None, wrap_lines=True)
