"""One critic on one item, for the panel builder's "test this critic" button."""

from __future__ import annotations

import streamlit as st

from judging.calls import CallRunner
from judging.chains import judge_with
from judging.panel import Panel
from judging.verdicts import Item, Verdict
from pages.ui.state import key_lookup


@st.cache_resource(show_spinner=False)
def _runner() -> CallRunner:
    # One pooled runner per process: building an httpx client per click would redo TLS set-up.
    # No cache: a test call must really reach the vendor.
    return CallRunner(key_lookup=key_lookup)


def judge_one(panel: Panel, critic_name: str, item: Item) -> Verdict:
    """Send one real call: `critic_name` of `panel` judging `item`. Never raises.

    Returns:
        The verdict, with its raw request (no key) and raw reply, or a failure with its reason.
    """
    critics = {c.name: c for c in panel.critics}
    # The critic as the run would ask it: a compound critic's whole chain, every repeat.
    return judge_with(critics[critic_name], item, panel.scale, _runner().call, critics=critics,
                      pairwise=panel.pairwise, rubric=panel.rubric)
