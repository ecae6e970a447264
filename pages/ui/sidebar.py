"""The sidebar every page shares: who is signed in, which database, and whether verdicts are
simulated."""

from __future__ import annotations

import threading

import streamlit as st

from pages.ui.state import any_real_key, db_path
from pages.ui.team_view import Visitor
from pages.ui.text_format import plain

# Set when the sidebar is drawn, taken back by `pages.ui.shell` as the page starts. Thread-local:
# a script run happens on one thread (reruns may reuse it, hence the flag is taken, not read).
_mark = threading.local()


def render_sidebar(person: Visitor) -> None:
    """Draw the shared sidebar (who, database path, simulated-vendor notice)."""
    _mark.drawn = True
    with st.sidebar:
        if person.email is not None:
            role = " · lead" if person.lead else ""
            st.caption(f"Signed in as **{plain(person.email)}**{role}")
            if st.button("Sign out", icon=":material/logout:", key="sign_out"):
                st.logout()
        else:
            st.caption("Single-user: this app listens on 127.0.0.1 only. A team server needs "
                       "sign-in (`[auth]` and `[team]` in the secrets; see docs/operations.md).")
        st.caption("Database")
        # Wrapped, not cut at the sidebar's edge: the whole path, with the code box's copy button.
        st.code(str(db_path()), language=None, wrap_lines=True)
        if not any_real_key():
            st.info(
                "No vendor API key is set: only critics on the built-in **simulated vendor** "
                "can run (a critic on a real vendor stops with a missing-key error). "
                "Simulated verdicts are labelled *simulated* everywhere.",
                icon=":material/science:",
            )
        st.caption("API keys are read from environment variables or `[jurybox]` secrets only; "
                   "Jurybox never stores them.")


def take_sidebar_mark() -> bool:
    """True if `render_sidebar` ran on this thread since the last call; resets the mark."""
    drawn = bool(getattr(_mark, "drawn", False))
    _mark.drawn = False
    return drawn
