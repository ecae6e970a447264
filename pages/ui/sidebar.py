"""The sidebar every page shares: which database, and whether verdicts are simulated."""

from __future__ import annotations

import streamlit as st

from pages.ui.shell import mark_app_run
from pages.ui.state import any_real_key, db_path


def render_sidebar() -> None:
    """Draw the shared sidebar (database path, simulated-vendor notice); marks the run as
    driven by app.py (see `pages.ui.shell`)."""
    mark_app_run()
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
