"""Verdicts from elsewhere on the pages: the Datasets page's import (a file whose columns are
judges' verdicts, wide, or whose rows are verdicts, long, confirmed column by column; or another
tool's file) made a run (`judging.runs.intake.verdict_import`), and the Export page's decisions back
to the tool they came from."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.panel.pairwise import PairwiseConfig
from judging.panel.panel_model import Panel
from judging.runs.intake.verdict_import import (
    BACK_FORMATS,
    ImportChoices,
    ImportedRun,
    decisions_back,
    import_verdicts,
    only_judges,
)
from judging.verdicts import VerdictSet
from pages.ui.state import db, db_path, registry
from pages.ui.text_format import plain
from storage.datasets.dataset_store import get_dataset, list_datasets
from storage.datasets.imported import (
    LongMapping,
    WideMapping,
    guess_long,
    guess_wide,
    verdicts_from_long,
    verdicts_from_wide,
)
from storage.datasets.importing import read_dataset
from storage.datasets.readers.eval_logs import read_tool_file

HOLDS = {
    "items": "Items to judge",
    "wide": "Items and judges' verdicts (a column per judge)",
    "long": "Verdicts, a row each (item, judge, verdict)",
}
_NONE = "(none)"


def holds_choice(columns: list[str]) -> str:
    """What the uploaded file holds, guessed from its column names; the user confirms."""
    guessed = "long" if guess_long(columns) is not None else "items"
    return str(st.radio("The file holds", list(HOLDS), index=list(HOLDS).index(guessed),
                        format_func=HOLDS.get, horizontal=True, key="datasets.holds"))


def _pick(label: str, columns: list[str], guess: str | None, key: str,
          optional: bool = False) -> str | None:
    options: list[str | None] = [None, *columns] if optional else list(columns)
    index = options.index(guess) if guess in options else 0
    chosen = st.selectbox(label, options, index=index, key=key,
                          format_func=lambda c: _NONE if c is None else c)
    return None if chosen is None else str(chosen)


def _pairwise(fields: list[str]) -> PairwiseConfig | None:
    """The pair the judges compared, when they did."""
    if not st.checkbox("The judges compared two responses (pairwise)",
                       key="verdicts.pairwise"):
        return None
    left, right = st.columns(2)
    first = left.selectbox("Response A field", fields, key="verdicts.first")
    second = right.selectbox("Response B field", fields, index=min(1, len(fields) - 1),
                             key="verdicts.second")
    a, b, tie = st.columns(3)
    a_label = a.text_input("Label for 'A is better'", "A", key="verdicts.a")
    b_label = b.text_input("Label for 'B is better'", "B", key="verdicts.b")
    tie_label = tie.text_input("Label for a tie (empty: forced choice)", "TIE",
                               key="verdicts.tie").strip() or None
    return PairwiseConfig(first_field=first, second_field=second, a_label=a_label.strip(),
                          b_label=b_label.strip(), tie_label=tie_label,
                          inconsistent="tie" if tie_label else "flag")


def verdicts_form(data: bytes, filename: str, holds: str, columns: list[str],
                  sample: list[dict[str, Any]], guess_id: str | None,
                  guess_gold: str | None) -> ImportedRun | None:
    """The mapping of a verdict file, confirmed, and its import: the run made, or None."""
    name = st.text_input("Run name", value=filename.rsplit(".", 1)[0], key="verdicts.name")
    numeric = st.toggle("The verdicts are scores (numbers), not labels", key="verdicts.numeric")
    dataset_id: int | None = None
    if holds == "wide":
        id_column = _pick("Item id column", columns, guess_id, "verdicts.id", optional=True)
        gold_column = _pick("Gold label column", columns, guess_gold, "verdicts.gold",
                            optional=True)
        guessed = guess_wide(columns, sample, id_column=id_column, gold_column=gold_column)
        judges = st.multiselect("Judges' verdict columns", columns,
                                default=list(guessed.judges.values()), key="verdicts.judges",
                                help="Guessed: columns with a <name>_reasoning or "
                                     "<name>_confidence column beside them, or holding only "
                                     "gold labels.")
        wide = WideMapping(
            {c: c for c in judges}, {j: c for j, c in guessed.reasoning.items() if j in judges},
            {j: c for j, c in guessed.confidence.items() if j in judges})
        mapping: WideMapping | LongMapping = wide
        extras = [f"{j}: reasoning {c}" for j, c in wide.reasoning.items()] + [
            f"{j}: confidence {c}" for j, c in wide.confidence.items()]
        if extras:
            st.caption(plain("Read beside them: " + "; ".join(extras)))
        fields = [c for c in columns if c not in mapping.columns | {id_column, gold_column}]
    else:
        guessed_long = guess_long(columns) or LongMapping(columns[0], columns[0], columns[0])
        left, middle, right = st.columns(3)
        with left:
            item = _pick("Item column", columns, guessed_long.item, "verdicts.item")
        with middle:
            judge = _pick("Judge column", columns, guessed_long.judge, "verdicts.judge")
        with right:
            verdict = _pick("Verdict column", columns, guessed_long.verdict, "verdicts.verdict")
        left, middle, right = st.columns(3)
        with left:
            order = _pick("Order of the pair (AB/BA)", columns, guessed_long.order,
                          "verdicts.order", optional=True)
        with middle:
            reasoning = _pick("Reasoning", columns, guessed_long.reasoning,
                              "verdicts.reasoning", optional=True)
        with right:
            repeat = _pick("Repeat number", columns, guessed_long.repeat, "verdicts.repeat",
                           optional=True)
        mapping = LongMapping(item=str(item), judge=str(judge), verdict=str(verdict),
                              order=order, repeat=repeat, reasoning=reasoning)
        datasets = list_datasets(db())
        options: list[int | None] = [None, *(d["id"] for d in datasets)]
        names = {d["id"]: d["name"] for d in datasets}
        dataset_id = st.selectbox(
            "Items judged", options, index=1 if datasets else 0, key="verdicts.dataset",
            format_func=lambda i: "(the file's other columns)" if i is None
            else f"#{i} {names[i]}")
        fields = (list(get_dataset(db(), dataset_id)["fields"]) if dataset_id is not None
                  else [c for c in columns if c not in mapping.columns])
    as_critics = st.toggle("Treat annotators in the file as critics (default: each one a "
                           "reviewer, their labels blind decisions)", key="verdicts.people")
    pairwise = _pairwise(fields) if fields else None
    if not st.button("Import verdicts", type="primary", key="verdicts.import"):
        return None
    with st.spinner("Importing and replaying the verdicts..."):
        vset = _read(data, filename, holds, mapping, numeric,
                     id_column if holds == "wide" else None,
                     gold_column if holds == "wide" else None)
        return import_verdicts(str(db_path()), vset, ImportChoices(
            name=name.strip() or filename, pairwise=pairwise,
            people="critics" if as_critics else "reviewers"), dataset_id=dataset_id, registry=registry())


def _read(data: bytes, filename: str, holds: str, mapping: WideMapping | LongMapping,
          numeric: bool, id_column: str | None, gold_column: str | None) -> VerdictSet:
    if isinstance(mapping, WideMapping):
        parsed = read_dataset(data, filename=filename, id_column=id_column,
                              gold_column=gold_column)
        return verdicts_from_wide(parsed.items, mapping, numeric=numeric, source=filename)
    rows = read_dataset(data, filename=filename)
    return verdicts_from_long(rows.items, mapping, numeric=numeric, source=filename)


_BACK_TITLES = {"inspect-scores": "Inspect precomputed scores (JSONL)",
                "label-studio": "Label Studio tasks with the decisions (JSON)",
                "long": "Long table: every verdict and decision (CSV)"}
_BACK_FILES = {"inspect-scores": ("jsonl", "application/x-ndjson"),
               "label-studio": ("json", "application/json"), "long": ("csv", "text/csv")}


def decisions_back_section(run_id: int, panel: Panel) -> None:
    """For a run of imported verdicts: its final decisions in the shape the source tool reads
    (`judging.runs.intake.verdict_import.decisions_back`)."""
    if not any(c.kind == "imported" for c in panel.critics):
        return
    st.subheader("Decisions back to the tool")
    st.caption("The final decisions (a reviewer's latest, else the consensus) in the shape the "
               "tool the verdicts came from reads: apply Inspect's with `inspect score LOG "
               "--scorer precomputed_scores -S scores=FILE`, import Label Studio's into the "
               "project.")
    fmt = str(st.radio("Shape", BACK_FORMATS, format_func=_BACK_TITLES.__getitem__,
                       horizontal=True, key="back_format"))
    humans = st.checkbox("Only the items a person decided", key="back_humans")
    tasks = None
    if fmt == "label-studio":
        upload = st.file_uploader("The Label Studio export the verdicts were read from",
                                  type=["json"], key="back_tasks")
        if upload is None:
            st.caption("Its tasks get the decisions as ground-truth annotations.")
            return
        tasks = upload.getvalue()
    data, count = decisions_back(db(), run_id, fmt, tasks=tasks, humans_only=humans)
    ext, mime = _BACK_FILES[fmt]
    st.download_button(f"Download {count:,} decisions", data,
                       file_name=f"jurybox-run-{run_id}-decisions.{ext}", mime=mime,
                       icon=":material/reply:", key="download_back", on_click="ignore")


@st.cache_data(max_entries=2, show_spinner="Reading the file...")
def _tool_set(_data: bytes, file_id: str, filename: str, fmt: str,
              control: str | None) -> VerdictSet:
    # Keyed by the upload's id, not its bytes (a log of 10,000 samples is megabytes).
    del file_id
    return read_tool_file(_data, filename, fmt, control=control)


def tool_file_form(data: bytes, file_id: str, filename: str, fmt: str) -> ImportedRun | None:
    """Another tool's file (an Inspect log, promptfoo results, a Label Studio export): what it
    holds, the judges to import (a run has one scale), and its import: the run made, or None."""
    control = (st.text_input("Verdict control (from_name), when the export has several",
                             key="tool.control").strip() or None
               if fmt == "label-studio" else None)
    vset = _tool_set(data, file_id, filename, fmt, control)
    st.caption(plain(f"{vset.source}: {len(vset.items):,} items, {len(vset.verdicts):,} "
                     f"verdicts of {len(vset.judges)} judges, {len(vset.annotations):,} "
                     "annotations by people."))
    labels = [j for j in vset.judges if any(v.judge == j and v.label is not None
                                            for v in vset.verdicts)]
    default = labels or list(vset.judges)
    judges = st.multiselect("Judges to import (labels or scores, not both)", list(vset.judges),
                            default=default, key="tool.judges")
    name = st.text_input("Run name", value=filename.rsplit(".", 1)[0], key="tool.name")
    people = str(st.radio(
        "People's labels", ["reviewers", "critics", "none"], horizontal=True, key="tool.people",
        format_func={"reviewers": "each annotator a reviewer (blind)",
                     "critics": "each annotator a critic", "none": "leave them out"}.get))
    if not st.button("Import verdicts", type="primary", key="tool.import"):
        return None
    with st.spinner("Importing and replaying the verdicts..."):
        return import_verdicts(str(db_path()), only_judges(vset, judges), ImportChoices(
            name=name.strip() or filename,
            people="critics" if people == "critics" else "none" if people == "none"
            else "reviewers"), registry=registry())
