"""Making sure every page runs inside app.py's navigation and sidebar.

Why this exists: Streamlit decides per process whether an app follows the old `pages/` folder
convention, and starts out assuming it does whenever a `pages/` folder sits next to the main
script. Until some script run has called `st.navigation`, a request for a deep link (say
`/review?run=3` as the first request after a restart; AppTest does it on every run) executes
`pages/review.py` ALONE: no sidebar, and an auto-generated navigation listing `app` and every
file. app.py marks each run it drives; a page that finds no mark switches the old convention
off and runs app.py right there, in the same script run, so the page is drawn once, inside the
shell, and any widget event of this run (a click, an upload) is still delivered.
"""

from __future__ import annotations

import pathlib
import threading

import streamlit as st

_marks = threading.local()
APP_PATH = pathlib.Path(__file__).resolve().parents[2] / "app.py"


def mark_app_run() -> None:
    """Called by app.py (through the sidebar) before it runs the page."""
    _marks.driven_by_app = True


def ensure_app_shell() -> None:
    """First line of every page: if Streamlit ran this page on its own, run app.py around it."""
    if getattr(_marks, "driven_by_app", False):
        _marks.driven_by_app = False  # one mark per run: the next run must set it again
        return
    # A private switch, but the one `st.navigation` itself flips (streamlit/commands/
    # navigation.py); flipping it early only skips the legacy mode we never want.
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    code = compile(APP_PATH.read_text(encoding="utf-8"), str(APP_PATH), "exec")
    # app.py resolves the same page (page identity is its URL path) and runs it, marked.
    exec(code, {"__name__": "__main__", "__file__": str(APP_PATH)})  # noqa: S102
    st.stop()  # the copy Streamlit started on its own draws nothing more
