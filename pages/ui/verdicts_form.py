"""The Datasets page's import of verdicts: a file whose columns are judges' verdicts (wide: a
column per judge) or whose rows are verdicts (long: item, judge, verdict), confirmed column by
column, then made a run (`judging.runs.verdict_import`)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.panel.pairwise import PairwiseConfig
from judging.runs.verdict_import import ImportChoices, ImportedRun, import_verdicts
from judging.verdicts import VerdictSet
from pages.ui.state import db, db_path, registry
from pages.ui.text_format import plain
from storage.dataset_store import get_dataset, list_datasets
from storage.imported import (
    LongMapping,
    WideMapping,
    guess_long,
    guess_wide,
    verdicts_from_long,
    verdicts_from_wide,
)
from storage.importing import read_dataset

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
