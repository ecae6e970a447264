"""Run: pick a dataset and a panel, see the estimate, start; live progress; cancel, resume.

One call per section, top to bottom; the sections live in `pages/ui/run/new_run_box.py` (the
"Start a new run" box) and `pages/ui/run/run_sections.py` (the chosen run and all runs).
"""

import streamlit as st

from pages.ui.run.new_run_box import new_run_box
from pages.ui.run.run_sections import (
    all_runs_section,
    is_live,
    progress_section,
    run_actions,
    vendor_batches_section,
)
from pages.ui.run_picker import pick_run
from pages.ui.shell import ensure_app_shell

ensure_app_shell()
st.title("Run")
new_run_box()
st.subheader("Progress")
run = pick_run(empty_hint="No run yet: start one above, or click **Try the demo** on Home.")
if run is not None:
    live = is_live(run)
    progress_section(run, live)
    vendor_batches_section(run)
    run_actions(run, live)
all_runs_section()
