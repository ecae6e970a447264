"""The "Check critics" button of the Panel and Run pages, and the Run page's warning.

Every critic judges one sample item (`judging.runs.stored.critic_check`); each gets a green or red
line with its sentence. The last check of each panel version is kept in the session, so the
Run page can warn before a start when a critic could not answer (without refusing the start).
"""

from __future__ import annotations

import streamlit as st

from judging.engine.budget import BudgetCap
from judging.engine.calls import CallRunner, MemoryCache
from judging.panel.panel_files import panel_hash
from judging.panel.panel_model import Panel
from judging.panel.request_rules import request_notes
from judging.runs.stored.critic_check import (
    CriticCheck,
    LayeredCache,
    check_budget,
    check_critics,
    failed_checks,
)
from judging.verdicts import Item
from pages.ui.state import db_path, worker_key_lookup
from pages.ui.text_format import plain
from storage.results.calls import CallCacheStore

_LAST_CHECK = "critic_check."  # + panel hash: that version's last check (list[CriticCheck])


@st.cache_resource(show_spinner=False)
def _checked_answers() -> MemoryCache:
    # One per process: checking the same panel again costs nothing, from any session.
    return MemoryCache()


def _run_check(panel: Panel, item: Item, budget: BudgetCap | None) -> list[CriticCheck]:
    stored = CallCacheStore(str(db_path()))  # calls an earlier run already paid for
    guard = None if budget is None else check_budget(budget.usd, tokens=budget.tokens)
    try:
        # Keys read now, on the script thread: the check's call threads must not touch st.
        with CallRunner(key_lookup=worker_key_lookup(), python_critics=False,
                        cache=LayeredCache(_checked_answers(), stored)) as runner:
            return check_critics(panel, item, runner, budget=guard)
    finally:
        stored.close()


def show_checks(checks: list[CriticCheck]) -> None:
    """One line per critic: green when it can answer, red with the cause and the fix."""
    for check in checks:
        if check.ok:
            st.success(plain(check.sentence), icon=":material/check_circle:")
        else:
            st.error(plain(check.sentence), icon=":material/error:")


def request_notes_view(panel: Panel) -> None:
    """What is sent differently for each critic's model (`judging.panel.request_rules`), one caption
    per critic that has any: known when the panel is built, before any call."""
    for critic in panel.critics:
        notes = request_notes(critic)
        if notes:
            st.caption(plain(f"{critic.name}: {' '.join(notes)}"))


def check_button(panel: Panel, item: Item, *, key: str, budget: BudgetCap | None = None) -> None:
    """What is sent for each model, the "Check critics" button, and the last check of this
    panel version below it."""
    request_notes_view(panel)
    state = _LAST_CHECK + panel_hash(panel)
    if st.button("Check critics", icon=":material/fact_check:", key=key,
                 help=f"Every critic judges item {item.id!r} once (one real request each, "
                      "priced, under the budget cap; answers already stored are free): one "
                      "line each says what would fail and how to fix it."):
        with st.spinner(f"Asking {len(panel.critics)} critics to judge item {item.id!r}..."):
            st.session_state[state] = _run_check(panel, item, budget)
    if state in st.session_state:
        show_checks(st.session_state[state])


def start_warning(panel: Panel) -> None:
    """Before Start: a warning naming the critics the last check of this panel found unable
    to answer (nothing when it was not checked, or every critic answered)."""
    failed = failed_checks(st.session_state.get(_LAST_CHECK + panel_hash(panel), ()))
    if failed:
        names = ", ".join(repr(check.critic) for check in failed)
        st.warning(plain(f"The last check found that {names} cannot answer: a run would send "
                         "their calls and they would fail. Fix them on the Panel page and check "
                         "again, or start anyway."), icon=":material/warning:")
