"""Home: what Jurybox does, the one-click demo, recent runs, and which vendor keys are set."""

import streamlit as st

from pages.ui.demo import latest_demo_run, start_demo
from pages.ui.errors import user_errors
from pages.ui.runs_table import runs_table
from pages.ui.shell import ensure_app_shell
from pages.ui.simulated import simulated_notice
from pages.ui.state import db, vendor_key_status
from storage.runs import list_runs

ensure_app_shell()
st.title("Jurybox")
st.write(
    "Jurybox runs a panel of LLM judges over your dataset and shows you where they disagree. "
    "You review the contested items side by side, override the verdict with a note, and watch "
    "each judge's agreement with you and with the others move as you go."
)


def _run_page(run: dict) -> str:
    """Where a run is best looked at: its disagreements once done, else its progress."""
    return "pages/review.py" if run["status"] == "done" else "pages/run.py"


def _start_demo_run() -> None:
    with user_errors("The demo could not start"):
        with st.spinner("Importing the demo dataset and starting the run..."):
            run_id = start_demo()
        st.switch_page("pages/run.py", query_params={"run": str(run_id)})


demo = latest_demo_run(db())
if demo is None:
    if st.button("Try the demo", type="primary", icon=":material/rocket_launch:", key="try_demo"):
        _start_demo_run()
    st.caption("The demo imports 300 taxonomy-curation items and runs four simulated critics on "
               "them: no API key needed, nothing leaves this machine.")
else:
    # The demo was tried already: its run is the thing to open, not a new copy of it.
    left, right = st.columns([1, 1])
    if left.button(f"Open the demo run #{demo['id']}", type="primary",
                   icon=":material/rocket_launch:", key="open_demo", width="stretch"):
        st.switch_page(_run_page(demo), query_params={"run": str(demo["id"])})
    if right.button("Start a new demo run", icon=":material/replay:", key="new_demo",
                    width="stretch"):
        _start_demo_run()
    st.caption(f"Demo run #{demo['id']} is {demo['status']}: four simulated critics over 300 "
               "taxonomy-curation items. Open it, or start another run of the same panel on the "
               "same items.")

st.subheader("Recent runs")
runs = list_runs(db())
if runs:
    runs_table(runs[:10])
    latest = runs[0]
    st.page_link(_run_page(latest), icon=":material/arrow_forward:",
                 query_params={"run": str(latest["id"])},
                 label=(f"Review the disagreements of run #{latest['id']}"
                        if latest["status"] == "done" else f"Follow run #{latest['id']}"))
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
