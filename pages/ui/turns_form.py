"""The Datasets page's "Judge this conversation field per turn" choice: which field holds the
conversations (those whose first rows read as conversations, `judging.panel.conversation.
conversation_fields`) and what each turn's `context` holds. Drawn inside the mapping form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from judging.panel.conversation import ContextChoice, ContextKind, conversation_fields

_KINDS: dict[ContextKind, str] = {"before": "The thread up to the turn",
                                  "last": "The last k messages before it",
                                  "alone": "The turn alone (no context)"}


def turn_choice(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ContextChoice] | None:
    """The field to judge per turn and the context chosen; None when no field looks like a
    conversation or the user leaves it at "(no)"."""
    found = conversation_fields(rows)
    if not found:
        return None
    field = st.selectbox(
        "Judge this conversation field per turn", [None, *found], index=1,
        format_func=lambda f: "(no: judge each row as one item)" if f is None else f,
        help="Each assistant turn becomes one item (id thread#t1, #t2 ...) with the fields "
             "turn, context, thread, thread_id and turn_index: prompts name {turn}, "
             "{context} and {thread}.")
    kind = st.radio("Each turn's {context} holds", list(_KINDS), format_func=_KINDS.__getitem__,
                    horizontal=True, key="turns_context")
    left, right = st.columns(2)
    k = left.number_input("k (for the last k messages)", min_value=1, max_value=200, value=4,
                          key="turns_k")
    tools = right.checkbox("Tool calls and results in the context", value=True,
                           key="turns_tools")
    if field is None or kind is None:
        return None
    return field, ContextChoice(kind=kind, k=int(k), tools=tools)
