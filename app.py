"""Jurybox's map: page config, navigation over pages/, and the shared sidebar. Nothing else."""

import streamlit as st

from pages.ui.sidebar import render_sidebar

st.set_page_config(page_title="Jurybox", page_icon=":material/gavel:", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/datasets.py", title="Datasets", icon=":material/table:"),
    st.Page("pages/panel.py", title="Panel", icon=":material/groups:"),
    st.Page("pages/run.py", title="Run", icon=":material/play_arrow:"),
    st.Page("pages/review.py", title="Review", icon=":material/rate_review:"),
    st.Page("pages/agreement.py", title="Agreement", icon=":material/insights:"),
    st.Page("pages/export.py", title="Export", icon=":material/download:"),
]

page = st.navigation(PAGES)
render_sidebar()
page.run()
