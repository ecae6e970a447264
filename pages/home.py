"""Home: what Jurybox does, the one-click demo, recent runs, and which vendor keys are set."""

import streamlit as st

from judging.run_status import RunStatus
from pages.ui.demo import PAIRWISE, TAXONOMY, Demo, latest_demo_run, start_demo
from pages.ui.error_notes import user_errors
from pages.ui.run.runs_table import working_runs_table
from pages.ui.shell import ensure_app_shell
from pages.ui.simulated import simulated_notice
from pages.ui.state import db, vendor_key_status
from storage.results.runs import list_runs

ensure_app_shell()
st.title("Jurybox")
st.write(
    "Jurybox runs a panel of LLM judges over your dataset and shows you where they disagree. "
    "You review the contested items side by side, override the verdict with a note, and watch "
    "each judge's agreement with you and with the others move as you go."
)


def _run_page(run: dict) -> str:
    """Where a run is best looked at: its disagreements once done, else its progress."""
    return "pages/review.py" if run["status"] == RunStatus.DONE else "pages/run.py"


def _start_demo_run(demo: Demo) -> None:
    with user_errors("The demo could not start"):
        with st.spinner("Importing the demo dataset and starting the run..."):
            run_id = start_demo(demo)
        st.switch_page("pages/run.py", query_params={"run": str(run_id)})


def demo_buttons(demo: Demo, title: str) -> None:
    """Try a demo, or open its latest run (it was tried already) or start another."""
    latest = latest_demo_run(db(), demo)
    if latest is None:
        if st.button(title, type="primary" if demo is TAXONOMY else "secondary",
                     icon=":material/rocket_launch:", key=f"try_{demo.key}"):
            _start_demo_run(demo)
        st.caption(f"Imports its data and runs {demo.summary}: no API key needed, nothing "
                   "leaves this machine.")
        return
    # The demo was tried already: its run is the thing to open, not a new copy of it.
    if not RunStatus(latest["status"]).finished:
        # Working (or about to): follow it. A second copy beside it only splits the figures.
        if st.button(f"Follow the {title[8:]} run #{latest['id']}",
                     type="primary" if demo is TAXONOMY else "secondary",
                     icon=":material/rocket_launch:", key=f"open_{demo.key}"):
            st.switch_page("pages/run.py", query_params={"run": str(latest["id"])})
        st.caption(f"Run #{latest['id']} is {latest['status']}: {demo.summary}. Follow it on the "
                   "Run page; another run of it can start once it has ended.")
        return
    left, right = st.columns([1, 1])
    if left.button(f"Open the {title[8:]} run #{latest['id']}",
                   type="primary" if demo is TAXONOMY else "secondary",
                   icon=":material/rocket_launch:", key=f"open_{demo.key}", width="stretch"):
        st.switch_page(_run_page(latest), query_params={"run": str(latest["id"])})
    if right.button(f"Start a new {title[8:]} run", icon=":material/replay:", key=f"new_{demo.key}",
                    width="stretch"):
        _start_demo_run(demo)
    st.caption(f"Run #{latest['id']} is {latest['status']}: {demo.summary}. Open it, or start "
               "another run of the same panel on the same items.")


demo_buttons(TAXONOMY, "Try the demo")
demo_buttons(PAIRWISE, "Try the pairwise demo")

st.subheader("Recent runs")
runs = list_runs(db())
if runs:
    working_runs_table(runs[:10], limit=10)
    latest = runs[0]
    st.page_link(_run_page(latest), icon=":material/arrow_forward:",
                 query_params={"run": str(latest["id"])},
                 label=(f"Review the disagreements of run #{latest['id']}"
                        if latest["status"] == RunStatus.DONE else f"Follow run #{latest['id']}"))
    notice = simulated_notice(db(), latest)
    if notice:
        st.warning(notice, icon=":material/science:")
else:
    st.caption("No run yet: **Try the demo** above, or import a dataset on the Datasets page.")

st.subheader("Vendor keys")
st.caption("Whether each vendor's key variable is set in the environment or in the `[jurybox]` "
           "table of Streamlit secrets. Values are never shown or stored.")
st.dataframe(
    [{"vendor": row["title"], "key variable": row["variable"] or "—", "status": row["status"]}
     for row in vendor_key_status()],
    hide_index=True,
)
