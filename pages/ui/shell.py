"""Every page is drawn inside app.py's frame (page config, navigation, sidebar), even when
Streamlit starts the page without app.py.

Why this exists: with a `pages/` folder next to the entrypoint, Streamlit runs its legacy
multipage mode until some script run of the process calls `st.navigation` ("As soon as any
session of your app executes the st.navigation command, your app will ignore the pages/
directory", st.navigation's docs). So the first request after a restart that names a page (a
deep link such as `/review?run=3&item=X`) runs `pages/review.py` alone; AppTest does so on
every run, as it resets that mode each time. Streamlit has no setting to turn the legacy mode
off while the folder is called `pages/`, which the project's layout names (Streamlit's own
advice is to rename the folder; no Streamlit issue tracks a switch, the closest being
streamlit/streamlit#6018, closed, and the maintainers' note in #10276).

The way round uses public API only. A page that finds the frame not drawn in this script run
calls app.py's `draw_frame()`, whose `st.navigation` (1) switches the whole process out of the
legacy mode and (2) returns this very page, which is then run inside the frame with
`StreamlitPage.run()`, exactly as app.py runs it; `st.stop()` ends the bare copy, which has
drawn nothing. Running the page through `run()` (not just carrying on) matters: widget ids
depend on the page running, so a click sent by the browser finds its button in both modes.
"""

from __future__ import annotations

import streamlit as st

import app
from pages.ui.sidebar import take_sidebar_mark


def ensure_app_shell() -> None:
    """First line of every page: unless app.py drew the frame in this run, draw it and run
    this page inside it (the bare run stops here)."""
    if take_sidebar_mark():
        return
    app.run_page(app.draw_frame())
    st.stop()
