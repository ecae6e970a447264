"""A critic's verdict as a card: label, confidence, reasoning, cost, raw exchange on demand.

Model text (reasoning, raw replies) is shown with `st.text` / `st.code` / `st.json`, never as
markdown or HTML: a reply could hold markup or links meant to fool the reviewer.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from judging.engine.context_guard import likely_truncated
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS, Verdict
from judging.voting.logprobs import verdict_probabilities
from pages.ui.text_format import plain

FAILURE_TEXT = {
    "error": "error",
    "item_error": "error for this item",
    "critic_error": "critic stopped",
    "refusal": "refused",
    "truncated": "truncated",
    "parse_fail": "unreadable reply",
    "cancelled": "not called (cancelled)",
    "inconsistent": "changed its answer when A and B were swapped",
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
    if verdict.vendor == "imported":  # a judge's verdict given outside Jurybox, replayed
        text += " · imported verdict"
    elif verdict.vendor in PLUGIN_KINDS:  # judged by a check, not a model: say which
        text += f" · {verdict.vendor} check ({verdict.model})"
    return text


# A raw reply or request taller than this scrolls inside its code block.
RAW_HEIGHT_PX = 360
_RAW_SCROLL_LINES = 16


def _parsed(raw: Any) -> Any:
    """`raw` as JSON data when it is JSON text (or already data), else the text itself."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _model_text(reply: Any) -> str | None:
    """The text the model wrote (`choices[0].message.content`) in a chat-completions reply."""
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) and content.strip() else None


def _code_block(value: Any) -> None:
    """JSON data pretty-printed, other text as is; a tall block scrolls at a fixed height.

    `st.code` shows text, never markdown or HTML: a reply could hold markup meant to fool the
    reviewer.
    """
    if isinstance(value, (dict, list)):
        text, language = json.dumps(value, indent=2, ensure_ascii=False), "json"
    else:
        text, language = str(value), None
    tall = text.count("\n") >= _RAW_SCROLL_LINES or len(text) > 80 * _RAW_SCROLL_LINES
    st.code(text, language=language, wrap_lines=True,
            height=RAW_HEIGHT_PX if tall else "content")


def raw_exchange(verdict: Verdict) -> None:
    """What was sent to the vendor and what came back, formatted: the model's text, the reply
    as pretty JSON and the request, each in a scrollable code block.

    Meant for a wide container (below the critics' cards, not inside one): a raw reply is a
    long JSON document.
    """
    reply = _parsed(verdict.raw_response)
    request = _parsed(verdict.raw_request)
    tabs = st.tabs(["Reply as received", "Request (the API key is never stored)"])
    with tabs[0]:
        if reply is None or reply == "":
            st.caption("Nothing came back.")
        else:
            said = _model_text(reply)
            if said is not None:
                answer = _parsed(said) if said.lstrip().startswith(("{", "[")) else said
                st.caption("The model's answer (JSON, formatted)" if answer is not said
                           else "The model's text")
                _code_block(answer)
                st.caption("The whole reply")
            _code_block(reply)
    with tabs[1]:
        if request is None:
            st.caption("No request was kept for this call.")
        else:
            _code_block(request)


def verdict_card(verdict: Verdict, *, show_raw: bool = False, key: str | None = None,
                 scale: Scale | None = None, calls: int = 1) -> bool:
    """Draw one verdict in a bordered container.

    Args:
        verdict: the verdict to show.
        show_raw: show the raw request and reply in the card at once (for a card as wide as the
            page). Otherwise the card has a "Raw request and reply" toggle and the caller draws
            `raw_exchange` where there is room for it.
        key: a unique key for the toggle when several cards share a page.
        scale: the panel's scale; with it, a reply that carries logprobs shows each label's
            probability (`judging.voting.logprobs`).
        calls: how many calls the verdict took (a compound or repeated critic, a pairwise
            critic's two orders): their attempts are summed, so the card says both.

    Returns:
        True when the reviewer asked for the raw exchange (the toggle is on) and it is not
        drawn in the card.
    """
    with st.container(border=True):
        st.markdown(f"**{plain(verdict.critic)}**")
        if verdict.ok:
            st.text(verdict_headline(verdict))
            if verdict.message:  # a note on a verdict given, e.g. judged on a window
                st.caption(plain(verdict.message))
            cut = likely_truncated(verdict)
            if cut is not None:
                st.warning(cut, icon=":material/content_cut:")
        else:
            st.warning(verdict_headline(verdict), icon=":material/warning:")
            if verdict.message:
                st.text(verdict.message)
        probs = verdict_probabilities(verdict, scale) if scale is not None else None
        if probs is not None:
            st.caption("Label probabilities (logprobs): " + plain(probs.text()))
        if verdict.reasoning:
            st.text(verdict.reasoning)
        facts = []
        if verdict.model:
            facts.append(f"{verdict.vendor or '?'} / {verdict.model}")
        if verdict.latency_ms is not None:
            facts.append(f"{verdict.latency_ms:,.0f} ms")
        attempts = f"{verdict.attempts} attempt{'s' if verdict.attempts != 1 else ''}"
        if calls > 1:
            facts.append(f"{calls} calls ({attempts})")
        elif verdict.attempts:
            facts.append(attempts)
        if verdict.tokens_in is not None or verdict.tokens_out is not None:
            facts.append(f"{verdict.tokens_in or 0} + {verdict.tokens_out or 0} tokens")
        if verdict.cost_usd is not None:
            facts.append(f"${verdict.cost_usd:.5f}")
        if verdict.cached:
            facts.append("from cache")
        if facts:
            st.caption(" · ".join(plain(f) for f in facts))
        if show_raw:
            raw_exchange(verdict)
            return False
        return bool(st.toggle("Raw request and reply", key=key or f"raw.{verdict.critic}"))
