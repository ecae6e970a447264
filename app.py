"""Jurybox's map: page config, who may enter, navigation over pages/, and the shared sidebar.

`streamlit run app.py` executes this file on every rerun: it draws the frame and runs the page
the URL names. `pages/ui/shell.py` imports it to draw the same frame around a page that
Streamlit started without it (the first request after a restart; see there).
"""

from __future__ import annotations

import pathlib

import streamlit as st

from pages.ui.gc_freeze import freeze_loaded_modules
from pages.ui.sidebar import render_sidebar
from pages.ui.team_view import barrier_screen, visitor

# Served by this app (a media URL on its own host): a `:material/...:` page icon makes the
# browser fetch the icon from fonts.gstatic.com on every page load.
FAVICON = pathlib.Path(__file__).resolve().parent / "static" / "favicon.png"


def app_pages() -> list[st.Page]:
    """Every page of the app, in navigation order (fresh objects: one set per script run)."""
    return [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("pages/datasets.py", title="Datasets", icon=":material/table:"),
        st.Page("pages/panel.py", title="Panel", icon=":material/groups:"),
        st.Page("pages/run.py", title="Run", icon=":material/play_arrow:"),
        st.Page("pages/review.py", title="Review", icon=":material/rate_review:"),
        st.Page("pages/agreement.py", title="Agreement", icon=":material/insights:"),
        st.Page("pages/team.py", title="Team", icon=":material/diversity_3:"),
        st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page("pages/export.py", title="Export", icon=":material/download:"),
    ]


def draw_frame() -> st.Page:
    """Page config, the sign-in gate (team mode only), navigation and the shared sidebar.

    Returns:
        The page the URL asks for (the default page for an unknown path). A visitor who must
        sign in first, or who is not on the team list, gets that screen and the run stops.
    """
    st.set_page_config(page_title="Jurybox", page_icon=str(FAVICON), layout="wide")
    person = visitor()
    if person.barrier is not None:
        # Navigation still runs (it takes the process out of Streamlit's legacy pages/ mode,
        # see pages/ui/shell.py), hidden: a visitor kept out sees no page and no link.
        st.navigation(app_pages(), position="hidden")
        barrier_screen(person)
    page = st.navigation(app_pages())
    render_sidebar(person)
    return page


def run_page(page: st.Page) -> None:
    """Run the page inside the frame, then freeze what the run loaded (pages/ui/gc_freeze.py)."""
    page.run()
    freeze_loaded_modules()


if __name__ == "__main__":  # run by Streamlit; importing this module draws nothing
    run_page(draw_frame())
