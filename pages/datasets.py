"""Datasets: upload with a preview and column mapping; list, inspect and delete."""

import pandas as pd
import streamlit as st

from judging.runs.intake.pairs import pairs_dataset, pairs_note
from judging.runs.intake.turn_dataset import turns_dataset
from judging.runs.intake.verdict_import import ImportedRun
from pages.ui.error_notes import user_errors
from pages.ui.run_picker import RUN_PARAM
from pages.ui.shell import ensure_app_shell
from pages.ui.state import db
from pages.ui.team_view import visitor
from pages.ui.text_format import plain
from pages.ui.turns_form import turn_choice
from pages.ui.verdicts_form import holds_choice, tool_file_form, verdicts_form
from storage.datasets.column_guess import GUESS_ROWS, guess_columns
from storage.datasets.dataset_store import delete_dataset, items_frame, list_datasets, save_dataset
from storage.datasets.importing import (
    SUPPORTED_EXTENSIONS,
    preview_dataset,
    read_dataset,
)
from storage.datasets.readers.eval_logs import tool_format

# Rows read for the preview; the id guess checks uniqueness over them (the table shows fewer).
# The same rows as `jurybox judge` reads to guess, so both guess the same column.
PREVIEW_ROWS = GUESS_ROWS
SHOWN_ROWS = 20
# After an import the uploader gets a fresh key (an empty widget), and the page shows what was
# imported with the next steps until the next upload.
UPLOADS = "datasets.uploads"
IMPORTED = "datasets.imported"

ensure_app_shell()
st.title("Datasets")
person = visitor()


@st.cache_data(max_entries=4, show_spinner="Reading the file...")
def _preview(_data: bytes, file_id: str, filename: str) -> tuple[pd.DataFrame, str]:
    # Keyed by the upload's id, not its bytes: hashing a 200 MB file on every rerun is slow.
    return preview_dataset(_data, filename=filename, n=PREVIEW_ROWS)


def _next_steps(message: str, run_id: int | None = None) -> None:
    """What was imported, and where to go from here: the run its verdicts made, else a panel
    and a run for the dataset (the newest dataset is preselected there)."""
    st.success(message, icon=":material/check_circle:")
    left, right = st.columns(2)
    if run_id is not None:
        left.page_link("pages/review.py", label=f"Review run #{run_id}",
                       icon=":material/rate_review:", query_params={RUN_PARAM: str(run_id)})
        right.page_link("pages/agreement.py", label="See the judges' agreement",
                        icon=":material/insights:", query_params={RUN_PARAM: str(run_id)})
        return
    left.page_link("pages/panel.py", label="Build a panel for it", icon=":material/groups:")
    right.page_link("pages/run.py", label="Run a panel on it", icon=":material/play_arrow:")


def _imported_run(made: ImportedRun) -> None:
    """A file's verdicts were made a run: say so (with links to it) on a fresh uploader."""
    st.session_state[IMPORTED] = (made.sentence(), made.run_id)
    st.session_state[UPLOADS] = st.session_state.get(UPLOADS, 0) + 1
    st.rerun()


st.subheader("Import a file")
generation = st.session_state.get(UPLOADS, 0)
upload = st.file_uploader(
    "CSV, TSV, JSONL, JSON array, Parquet or XLSX; or judges' verdicts: an Inspect log "
    "(.eval, .json), promptfoo results.json, a Label Studio JSON export",
    type=[*SUPPORTED_EXTENSIONS, "eval"],
    key="dataset_upload" if generation == 0 else f"dataset_upload.{generation}",
)
if upload is None and IMPORTED in st.session_state:
    _next_steps(*st.session_state[IMPORTED])
# Only a .eval or .json file can be another tool's verdicts: a table is never parsed twice.
tool = (tool_format(upload.getvalue(), upload.name)
        if upload is not None and upload.name.lower().endswith((".eval", ".json")) else None)
if upload is not None and tool is not None:
    # Another tool's verdict file (an Inspect log, promptfoo results, a Label Studio export).
    st.session_state.pop(IMPORTED, None)
    made = None
    with user_errors(f"The verdicts in {upload.name} were not imported"):
        made = tool_file_form(upload.getvalue(), upload.file_id, upload.name, tool)
    if made is not None:
        _imported_run(made)
elif upload is not None:
    st.session_state.pop(IMPORTED, None)
    data = upload.getvalue()
    preview = None
    with user_errors(f"{upload.name} cannot be imported"):
        preview = _preview(data, upload.file_id, upload.name)
    if preview is not None:
        frame, fmt = preview
        columns = [str(c) for c in frame.columns]
        st.caption(plain(f"Preview of {upload.name} ({fmt}): {len(columns)} columns, first rows."))
        # Dataset text is shown as table cells only, never as HTML.
        st.dataframe(frame.head(SHOWN_ROWS), hide_index=True, height=240)
        sample = {str(c): list(frame[c]) for c in frame.columns}
        guess = guess_columns(columns, sample)
        guess_id, guess_gold = guess["id"], guess["gold"]
        holds = holds_choice(columns)
        if holds != "items":
            rows = [dict(zip(columns, values, strict=True))
                    for values in frame.itertuples(index=False)]
            made = None
            with user_errors(f"The verdicts in {upload.name} were not imported"):
                made = verdicts_form(data, upload.name, holds, columns, rows, guess_id,
                                     guess_gold)
            if made is not None:
                _imported_run(made)
        else:
            with st.form("mapping"):
                st.markdown("**Column mapping**")
                name = st.text_input("Dataset name", value=upload.name.rsplit(".", 1)[0])
                id_column = st.selectbox(
                    "Item id column", [None, *columns], index=([None, *columns].index(guess_id)),
                    format_func=lambda c: "(generate stable ids)" if c is None else c,
                    help="Guessed from the column names (id, key, *_id) and from unique values.",
                )
                gold_column = st.selectbox(
                    "Gold label column (optional)", [None, *columns],
                    index=([None, *columns].index(guess_gold)),
                    format_func=lambda c: "(none)" if c is None else c,
                )
                fields = st.multiselect(
                    "Fields prompts may use as {placeholders}",
                    columns,
                    default=[c for c in columns if c not in (guess_id, guess_gold)],
                )
                responses = st.multiselect(
                    "Compare these response columns in pairs (optional)", columns,
                    help="For a pairwise panel, when each row holds several systems' "
                         "responses, one column each: every pair of them becomes one "
                         "comparison item, with system_a, response_a, system_b and response_b. "
                         "Which response is A is drawn at random with seed 0 unless the order "
                         "is kept below; a gold label naming the winning column becomes A or "
                         "B in each comparison.")
                keep_order = st.checkbox(
                    "Keep the column order in each pair (no draw)",
                    help="The column picked first of each pair is always A. Without this, "
                         "which is A is drawn at random (seed 0), so the first position "
                         "carries no hint.")
                per_turn = turn_choice([dict(zip(columns, values, strict=True))
                                        for values in frame.itertuples(index=False)])
                submitted = st.form_submit_button("Import", type="primary")
            if submitted:
                with user_errors(f"{upload.name} was not imported"):
                    with st.spinner("Importing..."):
                        parsed = read_dataset(
                            data, filename=upload.name, id_column=id_column,
                            gold_column=gold_column, fields=fields or None,
                        )
                        if responses:
                            parsed = pairs_dataset(parsed, responses, keep_order=keep_order)
                        if per_turn is not None:
                            parsed = turns_dataset(parsed, per_turn[0], context=per_turn[1])
                        saved = save_dataset(db(), parsed, name=name.strip() or upload.name)
                    kind = ("comparisons" if responses else "turns" if per_turn is not None
                            else "items")
                    message = (f"Imported {len(parsed.items):,} {kind} as dataset #{saved.id}."
                               if saved.created else
                               f"This file's content was already imported as dataset #{saved.id}.")
                    if responses:
                        message += " " + pairs_note(responses, seed=0, keep_order=keep_order,
                                                    gold_column=parsed.gold_column)
                    st.session_state[IMPORTED] = (message, None)
                    st.session_state[UPLOADS] = generation + 1
                    st.rerun()

st.subheader("Saved datasets")
datasets = list_datasets(db())
if not datasets:
    st.info("No dataset yet. Import a file above, or use **Try the demo** on the Home page.")
else:
    st.dataframe(
        [
            {"id": d["id"], "name": d["name"], "file": d["filename"], "format": d["format"],
             "items": d["n_items"], "fields": ", ".join(d["fields"]), "gold": d["gold_column"],
             "runs": d["n_runs"], "created": d["created_at"][:19]}
            for d in datasets
        ],
        hide_index=True,
    )
    by_id = {d["id"]: d for d in datasets}
    chosen = st.selectbox(
        "Inspect", list(by_id), format_func=lambda i: f"#{i} {by_id[i]['name']}", key="inspect_ds"
    )
    if chosen is not None:
        st.dataframe(items_frame(db(), chosen, limit=500), hide_index=True, height=300)
        st.caption("First 500 items.")
        with st.popover("Delete this dataset", icon=":material/delete:"):
            st.write(f"Delete dataset #{chosen} and its {by_id[chosen]['n_items']:,} items?")
            if not person.may_delete:
                st.caption("Only a lead of this team may delete a dataset.")
            # Checked again on the click: a disabled button is only a hint in the browser.
            if st.button("Yes, delete it", type="primary", key="confirm_delete_ds",
                         disabled=not person.may_delete) and person.may_delete:
                with user_errors("Not deleted"):
                    delete_dataset(db(), chosen)
                    st.rerun()
