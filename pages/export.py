"""Export: final labels (one column per critic) as CSV, JSONL or Parquet, and the panel YAML."""

import streamlit as st

from pages.ui.errors import user_errors
from pages.ui.run_picker import pick_run
from pages.ui.shell import ensure_app_shell
from pages.ui.state import db
from storage.export import FORMATS, export_bytes, export_frame
from storage.runs import get_run

MIME = {"csv": "text/csv", "jsonl": "application/x-ndjson", "parquet": "application/vnd.apache.parquet"}

ensure_app_shell()
st.title("Export")
run = pick_run()
if run is not None:
    run_id = run["id"]
    with user_errors("The export could not be built"):
        st.caption(
            f"{run['n_items']:,} items: the final label (latest override, else the consensus), "
            "the consensus, agreement, gold, the override note and one label and confidence "
            "column per critic. CSV cells that a spreadsheet would run as a formula are escaped."
        )
        if run["simulated"]:
            st.info("This run's verdicts come from the simulated vendor.", icon=":material/science:")
        # Behind a toggle: building the whole export for 100,000 items on every rerun is slow.
        if st.toggle("Show the first rows", key="export_preview"):
            st.dataframe(export_frame(db(), run_id).head(20), hide_index=True)
        fmt = st.radio("Format", FORMATS, horizontal=True, key="export_format")
        # Built when clicked (a callable): a 100k-item Parquet file is not rebuilt on every
        # rerun. The callable may run on another thread, so it opens its own connection.
        st.download_button(
            f"Download {fmt.upper()}", lambda: export_bytes(db(), run_id, fmt),
            file_name=f"jurybox-run-{run_id}.{fmt}", mime=MIME[fmt], type="primary",
            icon=":material/download:", key="download_export", on_click="ignore",
        )
        panel_yaml = get_run(db(), run_id)["panel_yaml"]
        st.download_button(
            "Download the panel YAML", panel_yaml, file_name=f"jurybox-run-{run_id}-panel.yaml",
            mime="application/x-yaml", icon=":material/description:", key="download_panel",
        )
