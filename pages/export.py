"""Export: final labels (one column per critic) as CSV, JSONL or Parquet, with optional curation
columns; the override history; the panel YAML; for a taxonomy curation panel, the curated
taxonomy and what changed."""

import dataclasses
from functools import partial

import streamlit as st

from judging.panel.panel_files import load_panel
from judging.runs.stored.kept_figures import verdicts_stamp
from judging.runs.stored.stored_run import export_options
from judging.runs.stored.taxonomy import TAXONOMY_FORMATS, curated_taxonomy, taxonomy_bytes
from judging.runs.stored.threads import run_threads, threads_csv
from pages.ui.error_notes import user_errors
from pages.ui.run_picker import pick_run
from pages.ui.shell import ensure_app_shell
from pages.ui.simulated import simulated_notice, what_ran
from pages.ui.state import db, db_path
from pages.ui.verdicts_form import decisions_back_section
from storage.results.export_files import (
    CSV_STYLES,
    FORMATS,
    ExportOptions,
    escaped_cells,
    export_bytes,
    export_frame,
    override_history_bytes,
)
from storage.results.runs import get_run
from storage.reviewing.overrides import overrides_stamp

MIME = {"csv": "text/csv", "jsonl": "application/x-ndjson",
        "parquet": "application/vnd.apache.parquet"}


CSV_STYLE_TITLES = {"spreadsheet": "Spreadsheet-safe", "exact": "Exact (RFC 4180)"}


def _export_file(run_id: int, fmt: str, options: ExportOptions) -> bytes:
    # Runs when the button is clicked, maybe on another thread: its own connection (`db()`).
    return export_bytes(db(), run_id, fmt, options)


# Cached per state of the run (its verdicts and reviews): the count needs the whole export
# built, which is seconds at 100,000 items, not something to redo on every rerun.
@st.cache_data(max_entries=8, show_spinner="Counting the cells a spreadsheet would run...")
def _escaped(path: str, run_id: int, extra: tuple[bool, bool, bool],
             stamp: tuple[int, ...]) -> int:
    del path, stamp  # part of the cache key only
    fields, reasoning, history = extra
    options = export_options(db(), run_id, ExportOptions(
        fields=fields, reasoning=reasoning, history=history))
    return escaped_cells(export_frame(db(), run_id, options))


ensure_app_shell()
st.title("Export")
run = pick_run()
if run is not None:
    run_id = run["id"]
    with user_errors("The export could not be built"):
        st.caption(
            f"{run['n_items']:,} items: the final label (latest override, else the consensus), "
            "the consensus (and whether a tie decided it), agreement, gold, the latest override "
            "and, per critic, its label, confidence and failure kind (a failed call has no "
            "label). JSONL and Parquet hold the data exactly; a CSV is spreadsheet-safe or "
            "exact, your choice below."
        )
        ran = what_ran(db(), run)
        if ran:
            st.caption(ran)
        notice = simulated_notice(db(), run)
        if notice:
            st.warning(notice, icon=":material/science:")
        st.markdown("**For curation, also include**")
        cols = st.columns(3)
        options = export_options(db(), run_id, ExportOptions(
            fields=cols[0].checkbox("The item's fields", key="export_fields",
                                    help="One `field: <name>` column per field of the item."),
            reasoning=cols[1].checkbox("Each critic's reasoning", key="export_reasoning",
                                       help="One `<critic>: reasoning` column per critic."),
            history=cols[2].checkbox("The full override history", key="export_history",
                                     help="Every override of the item, oldest first, in "
                                          "`override_history` (a list in JSONL and Parquet, "
                                          "JSON text in CSV)."),
        ))
        if options.curation:
            st.caption("A curation run also has each split's new classes (`children`) and "
                       "each merge's target class (`merge_into`): lists in JSONL and Parquet, "
                       "\"A; B\" in CSV.")
        # Behind a toggle: building the whole export for 100,000 items on every rerun is slow.
        if st.toggle("Show the first rows", key="export_preview"):
            st.dataframe(export_frame(db(), run_id, options).head(20), hide_index=True)
        fmt = st.radio("Format", FORMATS, horizontal=True, key="export_format")
        if fmt == "csv":
            style = st.radio(
                "CSV style", CSV_STYLES, format_func=CSV_STYLE_TITLES.__getitem__,
                horizontal=True, key="export_csv_style",
                help="Spreadsheet-safe: a cell whose first character is = + - @, a tab or CR "
                     "gets a single quote in front, so a spreadsheet shows it instead of "
                     "running it. Exact: every cell as the data says.")
            options = dataclasses.replace(options, csv_style=style)
            if style == "spreadsheet":
                escaped = _escaped(
                    str(db_path()), run_id,
                    (options.fields, options.reasoning, options.history),
                    (*verdicts_stamp(run), *overrides_stamp(db(), run_id)))
                cells = f"{escaped:,} cell{'' if escaped == 1 else 's'}"
                st.caption(
                    f"This CSV puts a single quote before {cells} whose first character is "
                    "= + - @, a tab or CR: those differ from the data, nothing else does. "
                    "Choose Exact for a CSV that is the data." if escaped else
                    "No cell starts with = + - @, a tab or CR: this CSV is the data exactly.")
            else:
                st.caption("Every cell as the data says (RFC 4180). A spreadsheet runs a cell "
                           "that starts with = + - @ as a formula: open this file in one only "
                           "if you trust every text in it.")
        # Built when clicked (a callable): a 100k-item Parquet file is not rebuilt on every
        # rerun. The format is bound now: a lambda reading `fmt` when clicked got whatever a
        # later loop of this script had left in it (every format downloaded as CSV).
        st.download_button(
            f"Download {fmt.upper()}", partial(_export_file, run_id, fmt, options),
            file_name=f"jurybox-run-{run_id}.{fmt}", mime=MIME[fmt], type="primary",
            icon=":material/download:", key="download_export", on_click="ignore",
        )
        st.download_button(
            "Download the override history (JSONL)", lambda: override_history_bytes(db(), run_id),
            file_name=f"jurybox-run-{run_id}-overrides.jsonl", mime=MIME["jsonl"],
            icon=":material/history:", key="download_history", on_click="ignore",
            help="Every override of the run in the order they were made, one per line.",
        )
        panel_yaml = get_run(db(), run_id)["panel_yaml"]
        st.download_button(
            "Download the panel YAML", panel_yaml, file_name=f"jurybox-run-{run_id}-panel.yaml",
            mime="application/x-yaml", icon=":material/description:", key="download_panel",
        )

    with user_errors("The decisions could not be written back"):
        decisions_back_section(run_id, load_panel(panel_yaml))
    threads, _ = run_threads(db(), run_id)
    if threads:
        st.subheader("Threads")
        st.caption("The run's items are turns of conversations (one row per turn above, with "
                   "`field: thread_id` and `field: turn_index` among the item's fields). A "
                   "thread fails when any of its turns' final decisions fails; the first "
                   "failing turn is where it went wrong.")
        st.dataframe([{"thread": t.thread_id, "verdict": t.verdict,
                       "first failing turn": t.first_failing, "turns": t.turns,
                       "decided": t.decided} for t in threads], hide_index=True)
        st.download_button(
            "Download the threads (CSV)", partial(threads_csv, threads),
            file_name=f"jurybox-run-{run_id}-threads.csv", mime=MIME["csv"],
            icon=":material/forum:", key="download_threads", on_click="ignore")

    if load_panel(panel_yaml).curation.active:
        st.subheader("Curated taxonomy")
        with user_errors("The curated taxonomy could not be built"):
            taxonomy = curated_taxonomy(db(), run_id)
            counts = st.columns(5)
            for col, (title, group) in zip(counts, (
                    ("kept", taxonomy.kept), ("removed", taxonomy.removed),
                    ("split", taxonomy.split), ("merged", taxonomy.merged),
                    ("needs a decision", taxonomy.needs_decision))):
                col.metric(title, f"{len(group):,}")
            st.caption("Each class by its final decision: a reviewer's latest, else the panel's "
                       "consensus (decided by: panel consensus). What changed:")
            if taxonomy.changes:
                st.dataframe(
                    [{**row, "children": ", ".join(row["children"])}
                     for row in (d.as_row() for d in taxonomy.changes)],
                    hide_index=True,
                    column_order=("class", "parent", "decision", "children", "merge_into",
                                  "note", "decided_by", "item_id"))
            else:
                st.caption("Nothing: every class is kept (or needs a decision).")
            for tax_fmt in TAXONOMY_FORMATS:
                st.download_button(
                    f"Download the curated taxonomy ({tax_fmt.upper()})",
                    lambda f=tax_fmt: taxonomy_bytes(curated_taxonomy(db(), run_id), f),
                    file_name=f"jurybox-run-{run_id}-taxonomy.{tax_fmt}",
                    mime="application/json" if tax_fmt == "json" else MIME["csv"],
                    icon=":material/account_tree:", key=f"download_taxonomy_{tax_fmt}",
                    on_click="ignore",
                )
