"""The sidebar every page shares: which database, and whether verdicts are simulated."""

from __future__ import annotations

import threading

import streamlit as st

from pages.ui.state import any_real_key, db_path

# Set when the sidebar is drawn, taken back by `pages.ui.shell` as the page starts. Thread-local:
# a script run happens on one thread (reruns may reuse it, hence the flag is taken, not read).
_mark = threading.local()


def render_sidebar() -> None:
    """Draw the shared sidebar (database path, simulated-vendor notice)."""
    _mark.drawn = True
    with st.sidebar:
        st.caption("Database")
        st.code(str(db_path()), language=None)
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
