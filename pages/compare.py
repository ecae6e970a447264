"""Compare: two runs over the same dataset, version against version (flipped items, paired
accuracy with intervals and McNemar's test, cost side by side)."""

import streamlit as st

from judging.runs.stored.compare_runs import compare_runs
from pages.ui.compare_view import pick_other_run, render_comparison
from pages.ui.error_notes import user_errors
from pages.ui.run_picker import pick_run
from pages.ui.shell import ensure_app_shell
from pages.ui.state import db

ensure_app_shell()
st.title("Compare")
run = pick_run()
if run is None:
    st.stop()
other = pick_other_run(run)
if other is None:
    st.stop()
with user_errors():
    render_comparison(compare_runs(db(), int(run["id"]), other))
