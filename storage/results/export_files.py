"""Export a run's final labels: CSV (safe to open in a spreadsheet, or exact), JSONL, Parquet.

One row per item: item_id, final_label, needs_decision (why the final decision cannot be acted
on, by the final-decision rule of `storage.reviewing.decisions`: no consensus, a split without its
children, a merge without its target, a score panel's item without a score; empty when decided),
consensus, tie, consensus_note, agreement, disagreement, failed, gold, overridden,
override_label, override_note, reviewer, overridden_at, then for each critic `<critic>: label`
(its label or score; empty when the call failed), `<critic>: confidence` and `<critic>: failure`
(the failure kind: error, parse_fail, refusal, truncated; empty on success). A curation run
adds, after the override columns, the final decision's new child classes (`children`) and the
class it merges into (`merge_into`). `ExportOptions` adds, for curation, the item's fields
(`field: <name>`), each critic's reasoning (`<critic>: reasoning`) and every override of the
item, oldest first (`override_history`). A rubric run adds, per criterion, each critic's mark
(`<criterion>: <critic>`), the panel's (`<criterion>: consensus`) and the final one, a
reviewer's else the panel's (`<criterion>: final`), and `final_score`; a score run adds
`final_score` too (a reviewer's score, else the panel's; both with `ExportOptions.rule`).
A run whose critics asked for logprobs adds the panel's pooled `expected_score`,
`expected_spread` (the standard deviation of the pooled label distribution) and
`consensus_probability` (the pooled probability of the consensus label), and per critic
`<critic>: expected_score` and `<critic>: expected_spread` (`storage.results.expected_scores`; empty
where a critic gave no probabilities); other runs keep their columns.
A run of a panel of juries (`judging.voting.juries`) adds, before the critics' columns, each jury's
decision (`jury <name>: decision`: its label, or its score's band else the score) and its
agreement (`jury <name>: agreement`), juries in panel order; `consensus` is then the panel's
top vote over them.
`override_history_bytes` gives the run's whole override history as JSONL, one decision per line,
each with the run's `chain_head`.

The export carries the head of the run's verifiable record (`storage.reviewing.record_chain`): Parquet
in its schema metadata (`jurybox_chain_head`), the override history on each line
(`chain_head`). CSV and JSONL rows do not: a constant column would change their shape, and they
have no header to put it in; `jurybox verify RUN` prints the head.

Lists stay lists where the format has them (JSONL, Parquet: `children` is a list of strings,
`override_history` a list of records). A CSV cell holds text: a list of names reads
"A; B", a list of records (the history) is JSON text.

Every CSV Jurybox writes goes through `csv_bytes`, in one of two styles (`CsvStyle`):

- "spreadsheet" (the default): a text cell whose first character a spreadsheet would run as a
  formula (= + - @ tab CR, the OWASP list) gets a leading single quote, and nothing else is
  changed: a line inside a cell is never touched (a spreadsheet evaluates a cell, not a line of
  it), nor is a plain number ("-0.5": a value, not a formula). `escaped_cells` counts the
  cells it prefixes, so the Export page can say so.
- "exact": RFC 4180 and nothing more; reading it back (`pandas.read_csv(..., dtype=str,
  keep_default_na=False)`) gives the texts byte for byte.

In both, a cell with a comma, a quote, CR or LF is quoted (quotes doubled), so a bare CR stays
inside its cell and its row.

No API key can appear: the rows come from items, labels, reasons, notes and numbers, never from
raw requests (keys are scrubbed from reasons when calls are stored).
"""

from __future__ import annotations

import io
import json
import math
import os
import pathlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, Literal

import pandas as pd
import sqlite_utils

from judging.verdicts import FailureKind, PanelVerdict, Verdict
from storage.db import StorageError, loads
from storage.results.consensus import iter_panel_verdicts
from storage.results.expected_scores import expected_columns
from storage.results.jury_decisions import jury_decision_frame, jury_names
from storage.reviewing.criteria import critic_marks, final_marks
from storage.reviewing.decisions import DecisionRule, final_decisions
from storage.reviewing.overrides import latest_overrides
from storage.reviewing.record_chain import chain_head
from storage.reviewing.review_queue import _run_meta

# 2: a failed call's kind moved from `<critic>: label` ("failed: truncated") to its own
# `<critic>: failure` column; tie and consensus_note columns; optional curation columns.
# 3: a curation run's `children` and `merge_into`; each history entry has them too; in Parquet
# `children` and `override_history` are lists, no longer JSON text.
# 4: a run with logprobs adds the pooled and per-critic expected score and spread columns.
EXPORT_SCHEMA_VERSION = 4
FORMATS = ("csv", "jsonl", "parquet")
ExportFormat = Literal["csv", "jsonl", "parquet"]

# How a CSV is written: "spreadsheet" prefixes a cell a spreadsheet would run as a formula with
# a single quote; "exact" writes every cell as the data says (RFC 4180 quoting only).
CsvStyle = Literal["spreadsheet", "exact"]
CSV_STYLES: tuple[CsvStyle, ...] = ("spreadsheet", "exact")
# A spreadsheet runs a cell whose FIRST character is one of these as a formula (OWASP, CSV
# injection). Only the first: a spreadsheet evaluates a cell, not each line inside it.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# A plain number ("-0.5", "+3", "1e-3") is a value, not a formula: left as it is.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# A CSV cell holding one of these must be quoted to stay one cell of one row.
_NEEDS_QUOTES = re.compile(r'[,"\r\n]')
HISTORY_COLUMN = "override_history"
# Parquet schema metadata: the head of the run's verifiable record when it was exported.
CHAIN_HEAD_KEY = "jurybox_chain_head"
FIELD_PREFIX = "field: "
CHILDREN_COLUMN = "children"
MERGE_COLUMN = "merge_into"
# Why the item's final decision cannot be acted on (`storage.reviewing.decisions`' reason), empty when
# it is decided: a SPLIT consensus without children is not a decided SPLIT.
NEEDS_COLUMN = "needs_decision"
# How a CSV cell joins a list of names (a split's children).
LIST_SEPARATOR = "; "


@dataclass(frozen=True)
class ExportOptions:
    """What to add to the export besides the labels.

    Attributes:
        fields: the item's fields, one `field: <name>` column each (the candidate class, its
            parent, ... as imported).
        reasoning: each critic's reasoning, `<critic>: reasoning`.
        history: every override of the item, oldest first, as `override_history` (a list of
            {label, note, reviewer, at, blind, children, merge_into} in JSONL and Parquet; the
            same list as JSON text in CSV; `blind`: given in a blind first pass, before the
            critics were shown).
        curation: the run curates a taxonomy: add the final decision's `children` (the new
            classes of a split) and `merge_into` (the class a merge goes into). Storage cannot
            tell a curation panel: `judging.runs.stored.stored_run.export_options` sets it.
    """

    fields: bool = False
    reasoning: bool = False
    history: bool = False
    curation: bool = False
    # A rubric run: the score of a set of marks (criterion -> mark), for the `final_score`
    # column (the marks with reviewers' criterion marks applied). Storage cannot score a rubric
    # itself: `judging.runs.stored.stored_run.export_options` fills this in.
    score_marks: Callable[[dict[str, str | None]], float | None] | None = None
    # The run's final-decision rule (`storage.reviewing.decisions`;
    # `judging.runs.stored.stored_run.export_options` fills it in): a rubric's rescored marks
    # and a score's band give final_label and final_score, as on every page.
    rule: DecisionRule | None = None
    # The CSV's style: "spreadsheet" (a cell a spreadsheet would run as a formula gets a leading
    # single quote) or "exact" (every cell as the data says). JSONL and Parquet are always exact.
    csv_style: CsvStyle = "spreadsheet"


def _runs_as_formula(text: str) -> bool:
    return text.startswith(_FORMULA_START) and _NUMBER.fullmatch(text) is None


def escape_cell(value: Any) -> Any:
    """A text cell whose first character a spreadsheet would run as a formula, with a single
    quote in front; any other value as it is (lines inside the text are left alone, and so is
    a plain number such as "-0.5")."""
    if isinstance(value, str) and _runs_as_formula(value):
        return "'" + value
    return value


def _is_missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _cell_text(value: Any) -> str:
    """A value as the text of one CSV cell: "" when missing, a list of names as "A; B", a list
    of records or a mapping as JSON text."""
    if _is_missing(value):
        return ""
    if isinstance(value, (list, tuple)) and not any(isinstance(v, (list, dict)) for v in value):
        return LIST_SEPARATOR.join("" if _is_missing(v) else str(v) for v in value)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value.item() if hasattr(value, "item") else value)  # numpy scalars


def csv_cell(value: Any, style: CsvStyle = "spreadsheet") -> str:
    """One CSV cell of `style` (see the module docstring), quoted when it holds a comma, a
    quote, CR or LF."""
    text = _cell_text(value)
    if style == "spreadsheet":
        text = escape_cell(text)
    if _NEEDS_QUOTES.search(text):
        return '"' + text.replace('"', '""') + '"'
    return text


def escaped_cells(frame: pd.DataFrame) -> int:
    """How many cells of `frame` (its header included) a "spreadsheet" CSV prefixes with a
    single quote: the count of texts that differ from the data in that file."""
    header = sum(_runs_as_formula(str(name)) for name in frame.columns)
    body = 0
    for n in range(frame.shape[1]):
        column = frame.iloc[:, n]
        if column.dtype.kind in "biufcmM":  # numbers, booleans and times never start a formula
            continue
        if isinstance(column.dtype, pd.StringDtype):  # text only: vectorised, same rule
            starts = column.str.startswith(_FORMULA_START, na=False)
            body += int((starts & ~column.str.fullmatch(_NUMBER.pattern, na=False)).sum())
            continue
        body += sum(_runs_as_formula(_cell_text(v)) for v in column.tolist())
    return int(header + body)


def csv_bytes(frame: pd.DataFrame, style: CsvStyle = "spreadsheet") -> bytes:
    """A frame as CSV (UTF-8, LF between rows, header first), every cell through `csv_cell`.

    Why not `DataFrame.to_csv`: Python's csv writer quotes only the characters of its line
    terminator, so a bare CR inside a cell went out unquoted and split the row in two.

    Raises:
        StorageError: an unknown style.
    """
    if style not in CSV_STYLES:
        raise StorageError(f"Unknown CSV style {style!r}; choose one of {', '.join(CSV_STYLES)}.")
    header = ",".join(csv_cell(str(name), style) for name in frame.columns)
    cells = [[csv_cell(v, style) for v in frame.iloc[:, n].tolist()]
             for n in range(frame.shape[1])]
    lines = [header, *(",".join(row) for row in zip(*cells, strict=True))]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _consensus_extra(db: sqlite_utils.Database, run_id: int, dataset_id: int) -> pd.DataFrame:
    extra = pd.read_sql_query(
        "SELECT c.item_id, c.tie, c.note AS consensus_note, c.agreement, c.disagreement,"
        " c.failed, i.gold FROM consensus c"
        " LEFT JOIN items i ON i.dataset_id = ? AND i.item_id = c.item_id WHERE c.run_id = ?",
        db.conn,
        params=[dataset_id, run_id],
    )
    extra["tie"] = extra["tie"].astype(bool)
    extra["disagreement"] = extra["disagreement"].astype(bool)
    return extra


def _critic_columns(
    db: sqlite_utils.Database, run_id: int, critics: list[str], item_ids: pd.Series, reasoning: bool
) -> dict[str, pd.Series]:
    calls = pd.read_sql_query(
        "SELECT item_id, critic, coalesce(label, CAST(score AS TEXT)) AS label, confidence,"
        " failure, reasoning FROM calls WHERE run_id = ?",
        db.conn,
        params=[run_id],
    )
    columns: dict[str, pd.Series] = {}
    for critic in critics:
        mine = calls[calls["critic"] == critic].set_index("item_id")
        failed = mine["failure"].notna()
        # A failure is not a label: the label cell stays empty and the kind has its own column.
        columns[f"{critic}: label"] = item_ids.map(mine["label"].where(~failed))
        columns[f"{critic}: confidence"] = item_ids.map(mine["confidence"].where(~failed))
        columns[f"{critic}: failure"] = item_ids.map(mine["failure"])
        if reasoning:
            columns[f"{critic}: reasoning"] = item_ids.map(mine["reasoning"])
    return columns


def jury_column(jury: str, what: str = "decision") -> str:
    """The export's column of a jury's `what` ("decision" or "agreement")."""
    return f"jury {jury}: {what}"


def _jury_columns(db: sqlite_utils.Database, run_id: int,
                  item_ids: pd.Series) -> dict[str, pd.Series]:
    """A panel of juries' run: each jury's decision and agreement (nothing for other runs)."""
    names = jury_names(db, run_id)
    if not names:
        return {}
    frame = jury_decision_frame(db, run_id)
    columns: dict[str, pd.Series] = {}
    for jury in names:
        mine = frame[frame["jury"] == jury].set_index("item_id")
        columns[jury_column(jury)] = item_ids.map(mine["decision"])
        columns[jury_column(jury, "agreement")] = item_ids.map(mine["agreement"])
    return columns


def _field_columns(
    db: sqlite_utils.Database, dataset_id: int, item_ids: pd.Series
) -> dict[str, pd.Series]:
    rows = db.execute(
        "SELECT item_id, fields FROM items WHERE dataset_id = ? ORDER BY position", [dataset_id]
    ).fetchall()
    by_item = {item_id: loads(fields) or {} for item_id, fields in rows}
    names: list[str] = []
    for fields in by_item.values():  # every field any item has, in first-seen order
        names += [str(n) for n in fields if str(n) not in names]
    return {
        FIELD_PREFIX + name: item_ids.map(lambda i, n=name: by_item.get(i, {}).get(n))
        for name in names
    }


def _history_rows(db: sqlite_utils.Database, run_id: int) -> list[dict[str, Any]]:
    """Every override of the run in the order they were made, each with its item id."""
    return [
        {"override_id": oid, "item_id": item_id, "label": label, "note": note,
         "reviewer": reviewer, "at": at, "blind": bool(blind),
         CHILDREN_COLUMN: loads(children) or [], MERGE_COLUMN: merge_into}
        for oid, item_id, label, note, reviewer, at, blind, children, merge_into in db.execute(
            "SELECT id, item_id, label, note, reviewer, created_at, blind, children, merge_into"
            " FROM overrides WHERE run_id = ? ORDER BY id",
            [run_id],
        ).fetchall()
    ]


def _history_column(db: sqlite_utils.Database, run_id: int, item_ids: pd.Series) -> pd.Series:
    history: dict[str, list[dict[str, Any]]] = {}
    for row in _history_rows(db, run_id):
        entry = {k: v for k, v in row.items() if k not in ("override_id", "item_id")}
        history.setdefault(row["item_id"], []).append(entry)
    return item_ids.map(lambda i: history.get(i, []))


def _decision_columns(
    db: sqlite_utils.Database, run_id: int, frame: pd.DataFrame
) -> dict[str, pd.Series]:
    """A curation run's final decision beyond its label: the new children of a split and the
    class a merge goes into. They are a reviewer's (the latest override, which is also where
    the final label comes from); the panel's consensus names neither."""
    latest = latest_overrides(db, run_id)
    overridden = dict(zip(frame["item_id"], frame["overridden"], strict=True))

    def part(item_id: str, key: str) -> Any:
        row = latest.get(item_id) if overridden.get(item_id) else None
        return (row or {}).get(key)

    return {
        CHILDREN_COLUMN: frame["item_id"].map(lambda i: list(part(i, "children") or [])),
        MERGE_COLUMN: frame["item_id"].map(lambda i: part(i, "merge_into")),
    }


def export_frame(
    db: sqlite_utils.Database, run_id: int, options: ExportOptions | None = None
) -> pd.DataFrame:
    """The export as a DataFrame (unescaped), in item order.

    Args:
        db: this thread's connection.
        run_id: the run.
        options: extra columns for curation (default: none).

    Raises:
        NotFoundError: no such run.
    """
    options = options or ExportOptions()
    dataset_id, critics = _run_meta(db, run_id)
    decisions = final_decisions(db, run_id, options.rule)
    frame = decisions[[
        "item_id", "final_label", "consensus", "overridden", "override_label", "override_note",
        "reviewer", "overridden_at"]].merge(
        _consensus_extra(db, run_id, dataset_id), on="item_id", how="left"
    )
    # Text, missing when decided (the reason is NaN there, or None on a score panel): one
    # dtype whatever the panel, so a Parquet file reads back as the frame.
    why = decisions["why"]
    frame[NEEDS_COLUMN] = pd.Series(why.astype(object).where(why.notna(), None).tolist(),
                                    dtype="str", index=frame.index)
    ordered = [
        "item_id", "final_label", NEEDS_COLUMN, "consensus", "tie", "consensus_note", "agreement",
        "disagreement", "failed", "gold", "overridden", "override_label", "override_note",
        "reviewer", "overridden_at",
    ]
    extra: dict[str, pd.Series] = {}
    if options.curation:
        extra.update(_decision_columns(db, run_id, frame))
    if options.history:
        extra[HISTORY_COLUMN] = _history_column(db, run_id, frame["item_id"])
    if options.fields:
        extra.update(_field_columns(db, dataset_id, frame["item_id"]))
    extra.update(_jury_columns(db, run_id, frame["item_id"]))
    extra.update(_critic_columns(db, run_id, critics, frame["item_id"], options.reasoning))
    extra.update(expected_columns(db, run_id, critics, frame["item_id"]))
    extra.update(_criterion_columns(db, run_id, critics, frame["item_id"], options.score_marks))
    if options.rule is not None and options.rule.numeric:  # the rule's score: a human's,
        # else the panel's (a rubric: a later override wins over the marks), as final_label says
        scores = dict(zip(decisions["item_id"], decisions["final_score"], strict=True))
        extra["final_score"] = frame["item_id"].map(scores)
    # One concat, not a column at a time: a wide panel would fragment the frame.
    return pd.concat([frame[ordered], pd.DataFrame(extra, index=frame.index)], axis=1)


def _criterion_columns(
    db: sqlite_utils.Database, run_id: int, critics: list[str], item_ids: pd.Series,
    score_marks: Callable[[dict[str, str | None]], float | None] | None,
) -> dict[str, pd.Series]:
    """A rubric run's marks: `<criterion>: <critic>` for each critic, `<criterion>: consensus`
    (the panel's vote) and `<criterion>: final` (a reviewer's mark, else the vote); then
    `final_score`, the score of the final marks. Nothing for other runs."""
    marks = critic_marks(db, run_id)
    if not marks:
        return {}
    final = final_marks(db, run_id)
    voted = {item: {c: v.get("mark") for c, v in (loads(m) or {}).items()} for item, m in
             db.execute("SELECT item_id, marks FROM consensus WHERE run_id = ?", [run_id])}
    criteria = list(dict.fromkeys(criterion for _, _, criterion, _ in marks))
    by_critic: dict[tuple[str, str, str], str | None] = {
        (item, critic, criterion): mark for item, critic, criterion, mark in marks}
    columns: dict[str, pd.Series] = {}
    for criterion in criteria:
        for critic in critics:
            columns[f"{criterion}: {critic}"] = item_ids.map(
                lambda item, c=critic, k=criterion: by_critic.get((item, c, k)))
        columns[f"{criterion}: consensus"] = item_ids.map(
            lambda item, k=criterion: voted.get(item, {}).get(k))
        columns[f"{criterion}: final"] = item_ids.map(
            lambda item, k=criterion: final.get(item, {}).get(k))
    if score_marks is not None:
        columns["final_score"] = item_ids.map(
            lambda item: score_marks(final[item]) if item in final else None)
    return columns


def _json_safe(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


def _arrow_type(column: str) -> Any:
    """The Parquet type of a nested or always-text column, or None for a column Arrow may
    infer. Declared, not inferred: a run where no split has children yet would get a list of
    nulls (and a run where nothing needs a decision a column of nulls)."""
    import pyarrow as pa  # heavy: only when a Parquet file is asked for

    names = pa.list_(pa.string())
    if column == NEEDS_COLUMN:  # text even in a run where nothing needs a decision
        return pa.string()
    if column == CHILDREN_COLUMN:
        return names
    if column == HISTORY_COLUMN:
        return pa.list_(pa.struct([
            ("label", pa.string()), ("note", pa.string()), ("reviewer", pa.string()),
            ("at", pa.string()), ("blind", pa.bool_()), (CHILDREN_COLUMN, names),
            (MERGE_COLUMN, pa.string())]))
    return None


def _arrow_table(frame: pd.DataFrame) -> Any:
    """The frame as an Arrow table: the known nested columns with their declared types, any
    other list or mapping as JSON text."""
    import pyarrow as pa

    nested = {c: _arrow_type(c) for c in frame.columns if _arrow_type(c) is not None}
    flat = frame.drop(columns=list(nested))
    other = [c for c in flat.columns if flat[c].dtype == object
             and flat[c].map(lambda v: isinstance(v, (list, dict))).any()]
    for column in other:
        flat[column] = flat[column].map(
            lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v)
    table = pa.Table.from_pandas(flat, preserve_index=False)
    for column, kind in nested.items():
        # from_pandas: a missing cell pandas holds as NaN is a null, not a float
        values = pa.array(frame[column].tolist(), type=kind, from_pandas=True)
        table = table.add_column(list(frame.columns).index(column), column, values)
    return table


def _write(frame: pd.DataFrame, fmt: str, sink: IO[bytes], head: str | None = None,
           csv_style: CsvStyle = "spreadsheet") -> None:
    if fmt == "csv":
        sink.write(csv_bytes(frame, csv_style))
    elif fmt == "jsonl":
        columns = list(frame.columns)
        for values in frame.itertuples(index=False, name=None):
            record = {c: _json_safe(v) for c, v in zip(columns, values, strict=True)}
            sink.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    elif fmt == "parquet":
        import pyarrow.parquet as pq  # heavy: only when a Parquet file is asked for

        table = _arrow_table(frame)
        meta = dict(table.schema.metadata or {})
        meta[b"jurybox_export_version"] = str(EXPORT_SCHEMA_VERSION).encode()
        if head is not None:  # the run's record as exported (`jurybox verify RUN --head`)
            meta[CHAIN_HEAD_KEY.encode()] = head.encode()
        pq.write_table(table.replace_schema_metadata(meta), sink)
    else:
        raise StorageError(f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")


def export_run(
    db: sqlite_utils.Database,
    run_id: int,
    fmt: str,
    out: str | os.PathLike[str] | IO[bytes],
    options: ExportOptions | None = None,
) -> int:
    """Write a run's final labels to a file (or a binary file object).

    Args:
        db: this thread's connection.
        run_id: the run.
        fmt: "csv" (by `options.csv_style`: "spreadsheet", the default, puts a single quote
            before a cell whose first character is = + - @ tab or CR; "exact" changes nothing),
            "jsonl" or "parquet" (schema metadata `jurybox_export_version`, and `jurybox_chain_head`:
            the head of the run's verifiable record when exported, `storage.reviewing.record_chain`).
        out: a path, or a binary file object (e.g. `io.BytesIO` for a download button).
        options: extra columns for curation and the CSV's style (see `ExportOptions`).

    Returns:
        The number of rows written.

    Raises:
        StorageError: unknown format or CSV style.
        NotFoundError: no such run.
    """
    fmt = fmt.lower().lstrip(".")
    if fmt not in FORMATS:
        raise StorageError(f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    style = (options or ExportOptions()).csv_style
    if style not in CSV_STYLES:  # before the export is built, not after
        raise StorageError(f"Unknown CSV style {style!r}; choose one of {', '.join(CSV_STYLES)}.")
    frame = export_frame(db, run_id, options)
    sealed = chain_head(db, run_id)
    head = sealed[1] if sealed else None
    if isinstance(out, (str, os.PathLike)):
        path = pathlib.Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as sink:
            _write(frame, fmt, sink, head, style)
    else:
        _write(frame, fmt, out, head, style)
    return len(frame)


def export_bytes(
    db: sqlite_utils.Database, run_id: int, fmt: str, options: ExportOptions | None = None
) -> bytes:
    """The export as bytes (for `st.download_button`). Same rules as `export_run`."""
    buffer = io.BytesIO()
    export_run(db, run_id, fmt, buffer, options)
    return buffer.getvalue()


def rows_csv_bytes(rows: list[dict[str, Any]], style: CsvStyle = "spreadsheet") -> bytes:
    """Rows (dicts with the same keys) as CSV with the export's rules (`csv_cell`)."""
    return csv_bytes(pd.DataFrame(rows), style)


def override_history_bytes(db: sqlite_utils.Database, run_id: int) -> bytes:
    """Every override of the run as JSONL, in the order they were made: one line per decision
    with override_id, item_id, label, note, reviewer, at, blind (given in a blind first pass,
    before the critics were shown), children (a list: the new classes of a split),
    merge_into (the class a merge goes into) and chain_head (the head of the run's verifiable
    record when exported, the same on every line: JSONL has no header, and one shape for every
    line is what a reader of records expects; `jurybox verify RUN --head` checks it).

    Raises:
        NotFoundError: no such run.
    """
    _run_meta(db, run_id)  # a missing run is an error, not an empty file
    sealed = chain_head(db, run_id)
    head = sealed[1] if sealed else None
    return "".join(json.dumps({**row, "chain_head": head}, ensure_ascii=False) + "\n"
                   for row in _history_rows(db, run_id)).encode("utf-8")


# The stored steps of a compound or repeated critic (`storage.results.calls` writes them), as verdicts.
_STEPS_OF = (
    "SELECT item_id, critic, role, sample, swapped, label, score, confidence, reasoning,"
    " failure, message, raw_request, raw_response, latency_ms, attempts, tokens_in, tokens_out,"
    " cost_usd, cache_key, vendor, model, simulated, cached FROM call_steps"
    " WHERE run_id = ? AND item_id IN (SELECT value FROM json_each(?))"
    " ORDER BY item_id, critic, position"
)


def _steps_of(
    db: sqlite_utils.Database, run_id: int, item_ids: list[str]
) -> dict[tuple[str, str], list[Verdict]]:
    """(item, critic) -> the calls behind that verdict, in the order they were made."""
    steps: dict[tuple[str, str], list[Verdict]] = {}
    for (item_id, critic, role, sample, swapped, label, score, confidence, reasoning, failure,
         message, raw_request, raw_response, latency_ms, attempts, tokens_in, tokens_out,
         cost_usd, cache_key, vendor, model, simulated, cached) in db.execute(
            _STEPS_OF, [run_id, json.dumps(item_ids)]):
        steps.setdefault((item_id, critic), []).append(Verdict(
            critic=critic, item_id=item_id, label=label, score=score, confidence=confidence,
            reasoning=reasoning, failure=FailureKind(failure) if failure else None,
            message=message, raw_request=loads(raw_request), raw_response=raw_response,
            latency_ms=latency_ms, attempts=attempts or 0, tokens_in=tokens_in,
            tokens_out=tokens_out, cost_usd=cost_usd, cache_key=cache_key, vendor=vendor,
            model=model, simulated=bool(simulated), cached=bool(cached), role=role or None,
            sample=sample or 0, swapped=bool(swapped)))
    return steps


def iter_verdicts_with_steps(
    db: sqlite_utils.Database, run_id: int, *, chunk_size: int = 1000
) -> Iterator[PanelVerdict]:
    """`storage.results.consensus.iter_panel_verdicts` with each compound or repeated critic's stored
    steps in `Verdict.steps` (the calls it made, in order), for `jurybox judge --out`: what a
    run wrote is what its JSONL says, a chunk of items at a time."""
    chunk: list[PanelVerdict] = []

    def flush() -> Iterator[PanelVerdict]:
        steps = _steps_of(db, run_id, [pv.item_id for pv in chunk])
        for pv in chunk:
            for verdict in pv.verdicts:
                verdict.steps = steps.get((pv.item_id, verdict.critic), verdict.steps)
            yield pv
        chunk.clear()

    for pv in iter_panel_verdicts(db, run_id, chunk_size=chunk_size):
        chunk.append(pv)
        if len(chunk) >= chunk_size:
            yield from flush()
    yield from flush()
