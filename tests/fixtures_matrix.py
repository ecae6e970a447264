"""Fixtures of the composition matrix (issue 23 part 3): one small finished run per panel kind.

Six kinds, each a real run of simulated critics over real HTTP on 127.0.0.1 (the built-in
simulated vendor: `vendor: simulated`), written by the real worker into a real SQLite file:

- label: the demo's taxonomy labels, without the curation settings (a plain nominal scale);
- score: each support answer scored 0..1 (mean of three critics), banded by thresholds;
- rubric: the demo rubric over the support answers, its score banded by thresholds;
- pairwise: the pairwise demo (both orders asked);
- curation: the taxonomy curation demo (KEEP / REJECT / SPLIT / MERGE);
- compound: the demo's compound critics, one of them asked three times (repeats).

Each run is built once per test session (a few seconds against the simulator) and copied for
each test (`matrix_db`), as `demo_db` does for the demo run.

The AppTest and parsing helpers below (`review_*`, `agreement_reviewed`, `exported_rows`) are
the one place that knows the pages' labels and the export's layout: when a page is rearranged,
adapt them here, not in every test.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import pathlib
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pytest
import yaml

from tests.fixtures_app import ROOT, shown

DEMO = ROOT / "judging" / "demo"
ITEMS_PER_RUN = 16
THRESHOLDS = {"good": 0.7, "fair": 0.4, "poor": 0.0}
SUPPORT_PROMPT = ("A customer asked: {question}\n\nThe support answer:\n{answer_a}\n\n"
                  "How good is this answer?")


@dataclass(frozen=True)
class Kind:
    """One panel kind of the matrix: how its panel and its small dataset are made.

    Attributes:
        name: the kind's id in test names.
        panel: the panel as a dict (a panel file's content).
        source: the demo CSV its items come from (the first `ITEMS_PER_RUN` rows).
        gold: the column read as the gold label.
        keep: the columns kept as fields (besides id and gold).
    """

    name: str
    panel: dict[str, Any]
    source: pathlib.Path
    gold: str
    keep: tuple[str, ...]
    numeric: bool = False
    curation: bool = False
    rubric: bool = False
    repeats: bool = False

    def panel_critics(self) -> list[str]:
        """The panel's critic names, in order."""
        return [str(c["name"]) for c in self.panel["critics"]]


def _yaml(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEMO / name).read_text(encoding="utf-8"))
    return data


def _label_panel() -> dict[str, Any]:
    panel = _yaml("demo_panel.yaml")
    panel.pop("curation")
    panel["name"] = "Taxonomy labels (matrix)"
    return panel


def _score_panel() -> dict[str, Any]:
    critic = {"vendor": "simulated", "prompt_template": SUPPORT_PROMPT, "max_tokens": 200,
              "system_prompt": "You grade customer-support answers."}
    return {
        "schema_version": 1, "name": "Support answers, scored (matrix)",
        "scale": {"kind": "score", "min": 0, "max": 1},
        "voting": {"strategy": "mean", "thresholds": THRESHOLDS},
        "critics": [{**critic, "name": "careful", "model": "sim-careful"},
                    {**critic, "name": "lenient", "model": "sim-lenient"},
                    {**critic, "name": "strict", "model": "sim-strict"}],
    }


def _rubric_panel() -> dict[str, Any]:
    panel = _yaml("rubric_panel.yaml")
    panel["voting"]["thresholds"] = THRESHOLDS  # a rubric's score gives a label by them
    panel["name"] = "Support answers, rubric (matrix)"
    return panel


TAXONOMY_FIELDS = ("candidate_class", "parent", "description", "example_members",
                   "existing_siblings")
SUPPORT_FIELDS = ("question", "system_a", "answer_a", "system_b", "answer_b")

KINDS: dict[str, Kind] = {kind.name: kind for kind in (
    Kind("label", _label_panel(), DEMO / "taxonomy_candidates.csv", "gold", TAXONOMY_FIELDS),
    Kind("score", _score_panel(), DEMO / "pairwise_answers.csv", "quality_a", SUPPORT_FIELDS,
         numeric=True),
    Kind("rubric", _rubric_panel(), DEMO / "pairwise_answers.csv", "quality_a",
         SUPPORT_FIELDS, numeric=True, rubric=True),
    Kind("pairwise", _yaml("pairwise_panel.yaml"), DEMO / "pairwise_answers.csv", "gold",
         SUPPORT_FIELDS),
    Kind("curation", _yaml("demo_panel.yaml"), DEMO / "taxonomy_candidates.csv", "gold",
         TAXONOMY_FIELDS, curation=True),
    Kind("compound", _yaml("chains_panel.yaml"), DEMO / "taxonomy_candidates.csv", "gold",
         TAXONOMY_FIELDS, repeats=True),
)}
KIND_NAMES = list(KINDS)
LABEL_KINDS = [k for k in KIND_NAMES if not KINDS[k].numeric]  # calibration compares labels


def _subset_csv(kind: Kind, path: pathlib.Path) -> pathlib.Path:
    """The first `ITEMS_PER_RUN` rows of the kind's demo CSV, with its id, gold and fields."""
    with kind.source.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[:ITEMS_PER_RUN]
    columns = ["id", *kind.keep, kind.gold]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def make_matrix_run(kind: Kind, path: pathlib.Path) -> int:
    """A finished run of `kind` in the database `path` (created), without the UI.

    Returns:
        The run id.
    """
    from judging.panel.panel_files import panel_from_dict
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from judging.simulator.sim_vendor import shared_simulator
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db
    from storage.results.runs import get_run

    data = _subset_csv(kind, path.with_suffix(".csv"))
    # The shared simulator answers a request it has seen before differently (its seed counts
    # repeats): forgotten first, so a kind's run is the same whichever tests ran before it.
    shared_simulator().reset_stats()
    db = open_db(path)
    try:
        parsed = read_dataset(data, id_column="id", gold_column=kind.gold)
        dataset = save_dataset(db, parsed, name=f"Matrix: {kind.name}")
        run_id = prepare_run(db, dataset_id=dataset.id, panel=panel_from_dict(kind.panel))
        job = JobRegistry().start_run(str(path), run_id)
        assert job.wait(120), f"the {kind.name} run did not finish in 120 s"
        run = get_run(db, run_id)
        assert run["status"] == "done", run["error"]
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a file copy is the whole database
    finally:
        db.close()
    return run_id


@pytest.fixture(scope="session")
def matrix_templates(tmp_path_factory: pytest.TempPathFactory
                     ) -> Callable[[str], tuple[pathlib.Path, int]]:
    """kind name -> (template database, run id): each kind's run is made on first use and kept
    for the session (a test of one kind pays only for its run)."""
    made: dict[str, tuple[pathlib.Path, int]] = {}
    root = tmp_path_factory.mktemp("matrix")

    def template(name: str) -> tuple[pathlib.Path, int]:
        if name not in made:
            path = root / f"{name}.db"
            made[name] = (path, make_matrix_run(KINDS[name], path))
        return made[name]

    return template


@dataclass
class MatrixRun:
    """A private copy of one kind's finished run, as the app's database (`JURYBOX_DB`)."""

    kind: Kind
    path: pathlib.Path
    run_id: int
    _db: Any = field(default=None, repr=False)

    @property
    def db(self) -> Any:
        """A connection of this thread (reopen with `fresh()` after a page wrote)."""
        from storage.db import open_db

        if self._db is None:
            self._db = open_db(self.path)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


@pytest.fixture
def matrix_db(request: pytest.FixtureRequest, matrix_templates: Callable[[str], Any],
              app_db: pathlib.Path) -> Iterator[MatrixRun]:
    """`app_db` holding a private copy of the run of the kind named by the test's `kind`
    parameter."""
    name = request.getfixturevalue("kind")
    template, run_id = matrix_templates(name)
    shutil.copyfile(template, app_db)
    run = MatrixRun(KINDS[name], app_db, run_id)
    yield run
    run.close()


# -- what was decided ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """What a reviewer decided for one item, as every place should show it.

    Attributes:
        item_id: the item.
        label: the label given (on a score scale: the score as text, or a rubric's band).
        final_label: the final label by the rule (a score's band; else `label`).
        score: the final score (score and rubric panels).
        children, merge_into: a curation split's new classes, a merge's target.
        blind: given in a blind first pass.
        reviewer: who decided.
    """

    item_id: str
    label: str
    final_label: str
    score: float | None = None
    children: tuple[str, ...] = ()
    merge_into: str | None = None
    blind: bool = False
    reviewer: str = "ana"


def band_of(score: float) -> str:
    """The matrix's thresholds applied to a score (as `judging.voting.strategies.band` does)."""
    from judging.voting.strategies import band

    return band(score, THRESHOLDS) or f"{score:g}"


def decisions_by_item(run: MatrixRun) -> dict[str, dict[str, Any]]:
    """item id -> its row of the final-decision rule, read fresh."""
    from judging.runs.stored.stored_run import run_decisions
    from storage.reviewing.decisions import decision_records

    run.close()
    return {row["item_id"]: row for row in decision_records(run_decisions(run.db, run.run_id))}


def class_name(run: MatrixRun, item_id: str) -> str:
    from storage.reviewing.review_queue import item_detail

    return str(item_detail(run.db, run.run_id, item_id)["fields"]["candidate_class"])


def a_different_decision(run: MatrixRun, item_id: str, *, reviewer: str = "ana",
                         blind: bool = False) -> Decision:
    """A decision for `item_id` that differs from its consensus, so an override shows:
    a curation item is SPLIT into two children (MERGEd if its consensus is SPLIT), a score item
    gets a score in another band, a label item another label."""
    row = decisions_by_item(run)[item_id]
    kind = run.kind
    if kind.numeric:
        now = row["final_score"]
        score = 0.15 if now is None or now >= 0.4 else 0.85
        return Decision(item_id, f"{score}", band_of(score), score=score, blind=blind,
                        reviewer=reviewer)
    labels = [str(label) for label in kind.panel["scale"]["labels"]]
    if kind.curation:
        name = class_name(run, item_id)
        if row["consensus"] != "SPLIT":
            return Decision(item_id, "SPLIT", "SPLIT", children=(f"{name} A", f"{name} B"),
                            blind=blind, reviewer=reviewer)
        return Decision(item_id, "MERGE", "MERGE", merge_into=a_sibling(run, item_id),
                        blind=blind, reviewer=reviewer)
    other = next(label for label in labels if label != row["consensus"])
    return Decision(item_id, other, other, blind=blind, reviewer=reviewer)


def another_decision(run: MatrixRun, first: Decision, reviewer: str) -> Decision:
    """A decision of `reviewer` on the same item that differs from `first`."""
    if run.kind.numeric:
        return Decision(first.item_id, "0.55", band_of(0.55), score=0.55, reviewer=reviewer)
    consensus = decisions_by_item(run)[first.item_id]["consensus"]
    labels = [str(x) for x in run.kind.panel["scale"]["labels"]]
    if run.kind.curation:  # a plain one: a split or a merge would need more
        other = next(x for x in ("REJECT", "KEEP") if x != consensus)
    else:
        other = next((x for x in labels if x not in (first.label, consensus)),
                     next(x for x in labels if x != first.label))
    return Decision(first.item_id, other, other, reviewer=reviewer)


def a_sibling(run: MatrixRun, item_id: str) -> str:
    """Another candidate class of the dataset (a merge target the form offers)."""
    me = class_name(run, item_id)
    others = [class_name(run, i) for i in decisions_by_item(run) if i != item_id]
    return next(name for name in others if name != me)


def record(run: MatrixRun, decision: Decision, *, adjudication: bool = False,
           note: str = "matrix") -> None:
    """Record `decision` through the storage API (the form's checks are the page's)."""
    from storage.reviewing.overrides import add_override

    add_override(run.db, run.run_id, decision.item_id, decision.label, note, decision.reviewer,
                 blind=decision.blind, children=list(decision.children) or None,
                 merge_into=decision.merge_into, adjudication=adjudication)


# -- the pages, through AppTest -----------------------------------------------------------------


def open_app_page(page: str, query: dict[str, str] | None = None) -> Any:
    from tests.test_app_smoke import open_page

    return open_page(page, query=query)


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


def widget(at: Any, kind: str, label: str, *, contains: bool = False) -> Any:
    """The widget of this kind whose label is `label` (or contains it), by what the user
    reads: robust to new keys and a rearranged layout."""
    found = [w for w in getattr(at, kind)
             if (label in str(w.label) if contains else shown(str(w.label)) == label)]
    assert found, f"no {kind} labelled {label!r}: " + ", ".join(
        repr(w.label) for w in getattr(at, kind))
    return found[0]


def maybe_widget(at: Any, kind: str, label: str) -> Any | None:
    found = [w for w in getattr(at, kind) if shown(str(w.label)) == label]
    return found[0] if found else None


def button(at: Any, label: str) -> Any:
    """A button or form submit button, by its label."""
    for w in [*at.button, *getattr(at, "form_submit_button", [])]:
        if shown(str(w.label)) == label:
            return w
    raise AssertionError(f"no button {label!r}: " + ", ".join(repr(w.label) for w in at.button))


class UI:
    """What Review and Team call their widgets, as the user reads them: the one place to adapt
    when a label changes (the tests find widgets by label, never by key)."""

    BLIND = "Blind first pass"
    CONSENSUS = "Consensus"
    CRITIC = "Critic"
    CRITIC_SAID = "That critic's verdict"
    OVERRIDDEN = "Overridden"
    NEEDS = "Needs a decision"
    DISPUTED = "Criterion in dispute"
    UNSTABLE = "Unstable items only"
    SEARCH = "Search items and reasons"
    BLIND_SEARCH = "Search items"  # a blind pass searches the items, not the critics' reasons
    CRITERION = "Criterion"
    MARK = "Mark"
    SCORE = "Score"
    LABEL = "Label"
    NOTE = "Note (why)"
    REVIEWER = "Reviewer"
    DISAGREEMENTS = "Disagreements only"
    CHILDREN = "the new child classes"  # in "If SPLIT: the new child classes, one per line"
    MERGE_INTO = "the class to merge into"  # in "If MERGE: the class to merge into"
    # Team
    REVIEWERS = "Reviewers, one per line"
    ITEMS = "Items"
    OVERLAP = "Seen by two reviewers (%)"
    ADJUDICATE = "Adjudicate"
    DECISION = "Decision"


SAVE_NEXT = "Save and go to the next item"
SAVE_BLIND = "Save and show the critics"


def all_text(at: Any) -> str:
    from tests.test_app_smoke import all_text as text_of

    return shown(text_of(at))


def open_review(run: MatrixRun, *, item: str | None = None, blind: bool = False,
                reviewer: str | None = "ana", everything: bool = True,
                query: dict[str, str] | None = None) -> Any:
    """Review on the run, with every item listed (`everything`: Disagreements only off; a blind
    pass has no such filter), the reviewer's name typed and, given `item`, that item open (`query`: more of the URL)."""
    query = {"run": str(run.run_id), **(query or {})}
    if item is not None:
        query["item"] = item
    if blind:
        query["blind"] = "1"
    at = open_app_page("review", query)
    no_exception(at)
    if everything:
        toggle = maybe_widget(at, "toggle", UI.DISAGREEMENTS)
        if blind:  # a blind pass has no critic-dependent filter: every item is listed
            assert toggle is None, f"{UI.DISAGREEMENTS} is offered in a blind pass"
        else:
            assert toggle is not None, f"Review offers no {UI.DISAGREEMENTS!r} toggle"
            if toggle.value:
                toggle.set_value(False).run()
                no_exception(at)
    if reviewer is not None:
        widget(at, "text_input", UI.REVIEWER).set_value(reviewer).run()
        no_exception(at)
    if item is not None and open_item(at) != item:
        review_open(at, item)
    return at


def open_item(at: Any) -> str | None:
    """The item open on Review (mirrored in the URL)."""
    value = at.query_params.get("item")
    if isinstance(value, list):
        value = value[0] if value else None
    return None if value is None else str(value)


def review_open(at: Any, item: str) -> None:
    """Open `item` on Review as a user does, by its row in the table."""
    table = review_frame(at)
    rows = [str(i) for i in table["item_id"]]
    assert item in rows, f"{item} is not listed on Review: {rows}"
    # AppTest cannot tick a dataframe row; the item in the URL is how a shared link opens it.
    at.query_params["item"] = item
    for key in list(at.session_state.keys()):
        if key.endswith(".item"):
            at.session_state[key] = item
    at.run()
    no_exception(at)
    assert open_item(at) == item


def review_frame(at: Any) -> pd.DataFrame:
    """The review table (the dataframe with an item id column)."""
    for frame in at.dataframe:
        value = frame.value
        if "item_id" in value.columns:
            return value
    raise AssertionError("Review shows no table of items")


def review_count(at: Any) -> int:
    """How many items match the filters, as the page says ("12 items match")."""
    for caption in at.caption:
        found = re.search(r"([\d,]+) items? match", shown(str(caption.value)))
        if found:
            return int(found.group(1).replace(",", ""))
    raise AssertionError("Review does not say how many items match: " + all_text(at)[:400])


def review_decide(at: Any, run: MatrixRun, decision: Decision, *, blind: bool = False) -> None:
    """Fill Review's decision form for the open item with `decision`, and save it."""
    assert open_item(at) == decision.item_id
    if run.kind.numeric:
        widget(at, "number_input", UI.SCORE).set_value(decision.score)
    else:
        widget(at, "radio", UI.LABEL).set_value(decision.label)
    if run.kind.curation:
        widget(at, "text_area", UI.CHILDREN, contains=True).set_value(
            "\n".join(decision.children))
        widget(at, "selectbox", UI.MERGE_INTO, contains=True).set_value(
            decision.merge_into)
    widget(at, "text_area", UI.NOTE).set_value("matrix")
    button(at, SAVE_BLIND if blind else SAVE_NEXT).click().run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]


def review_shows(at: Any, run: MatrixRun, decision: Decision) -> None:
    """Review shows `decision` as the item's final one: in the table's final label column and
    on the item's line ("final X (override)")."""
    if open_item(at) != decision.item_id:
        review_open(at, decision.item_id)
    table = review_frame(at).set_index("item_id")
    if "final_label" in table.columns:  # not in a blind pass: the table hides every label
        assert str(table.loc[decision.item_id, "final_label"]) == decision.final_label
    line = [t for t in at.text if "consensus" in str(t.value)]
    assert line and f"final {decision.final_label} (override)" in str(line[0].value), \
        [t.value for t in at.text]
    if run.kind.numeric:
        assert widget(at, "number_input", UI.SCORE).value == pytest.approx(decision.score)
    if run.kind.curation and decision.children:
        assert widget(at, "text_area", UI.CHILDREN, contains=True).value == \
            "\n".join(decision.children)
    if run.kind.curation and decision.merge_into:
        assert widget(at, "selectbox", UI.MERGE_INTO,
                      contains=True).value == decision.merge_into


def agreement_reviewed(run: MatrixRun, page: list[Any] | None = None) -> int:
    """How many items Agreement says humans reviewed ("N items reviewed by humans"); the page
    (its AppTest) is appended to `page` when given, for more checks."""
    at = open_app_page("agreement", {"run": str(run.run_id)})
    no_exception(at)
    if page is not None:
        page.append(at)
    text = all_text(at)
    found = re.search(r"([\d,]+) items? reviewed by humans", text)
    assert found, "Agreement does not say how many items humans reviewed: " + text[:600]
    return int(found.group(1).replace(",", ""))


# -- what the exports contain -------------------------------------------------------------------

FORMATS = ("csv", "jsonl", "parquet")


def export_payload(run: MatrixRun, fmt: str) -> bytes:
    """The export as the Export page builds it, with the full override history and fields."""
    from judging.runs.stored.stored_run import export_options
    from storage.results.export_files import ExportOptions, export_bytes

    run.close()
    options = export_options(run.db, run.run_id, ExportOptions(history=True, fields=True))
    return export_bytes(run.db, run.run_id, fmt, options)


def parse_export(payload: bytes, fmt: str) -> list[dict[str, Any]]:
    """The export's rows, parsed as a consumer would: CSV with pandas (every cell as text),
    JSONL line by line, Parquet with pyarrow. Missing values are None."""
    if fmt == "csv":
        frame = pd.read_csv(io.BytesIO(payload), dtype=str, keep_default_na=False)
        return [{k: (v if v != "" else None) for k, v in row.items()}
                for row in frame.to_dict("records")]
    if fmt == "jsonl":
        lines = payload.decode("utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_table(io.BytesIO(payload)).to_pylist())
    raise ValueError(fmt)


def exported_rows(run: MatrixRun, fmt: str) -> dict[str, dict[str, Any]]:
    """item id -> its exported row, in format `fmt`."""
    return {str(row["item_id"]): row for row in parse_export(export_payload(run, fmt), fmt)}


def as_list(value: Any) -> list[Any]:
    """A list cell as a list: JSONL and Parquet keep lists; CSV writes names as "A; B" and
    records as JSON text."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    text = str(value)
    if text.startswith("["):
        parsed: list[Any] = json.loads(text)
        return parsed
    return [part for part in text.split("; ") if part]


def as_number(value: Any) -> float | None:
    return None if value is None or value == "" else float(value)


def history_lines(run: MatrixRun) -> list[dict[str, Any]]:
    """The run's override history as the Export page's "override history (JSONL)" gives it."""
    from storage.results.export_files import override_history_bytes

    run.close()
    return [json.loads(line) for line in
            override_history_bytes(run.db, run.run_id).decode("utf-8").splitlines()]


def export_shows(run: MatrixRun, decision: Decision, fmt: str) -> dict[str, Any]:
    """Every check of one export format for a decided item; returns its row."""
    row = exported_rows(run, fmt)[decision.item_id]
    assert row["final_label"] == decision.final_label, row
    assert str(row["override_label"]) == decision.label
    assert row["reviewer"] == decision.reviewer
    assert str(row["overridden"]).lower() == "true"
    if run.kind.curation:
        assert as_list(row["children"]) == list(decision.children)
        assert (row["merge_into"] or None) == decision.merge_into
    history = as_list(row["override_history"])
    assert history, "the item's override history is empty"
    last = history[-1]
    assert (last["label"], last["reviewer"]) == (decision.label, decision.reviewer)
    assert bool(last["blind"]) is decision.blind
    if run.kind.curation:
        assert list(last["children"] or []) == list(decision.children)
        assert (last["merge_into"] or None) == decision.merge_into
    return row


def check_everywhere(run: MatrixRun, decision: Decision, *, reviewed: int | None,
                     review_at: Any | None = None) -> None:
    """The decision is the item's final one in storage, on Review, in Agreement's count of
    human-reviewed items (`reviewed`; None: not checked), in every export format, the override
    history and (curation) the curated taxonomy."""
    final = decisions_by_item(run)[decision.item_id]
    assert final["final_label"] == decision.final_label
    assert final["status"] == "decided" and final["decided_by"] == "human"
    if decision.score is not None:
        assert final["final_score"] == pytest.approx(decision.score)
    assert tuple(final["children"]) == decision.children
    assert final["merge_into"] == decision.merge_into
    at = review_at if review_at is not None else open_review(run, item=decision.item_id)
    review_shows(at, run, decision)
    if reviewed is not None:
        assert agreement_reviewed(run) == reviewed
    for fmt in FORMATS:
        export_shows(run, decision, fmt)
    mine = [line for line in history_lines(run) if line["item_id"] == decision.item_id]
    assert mine and (mine[-1]["label"], mine[-1]["blind"]) == (decision.label, decision.blind)
    if run.kind.curation:  # the curated taxonomy puts the class where the decision says
        from judging.runs.stored.taxonomy import curated_taxonomy

        taxonomy = curated_taxonomy(run.db, run.run_id)
        group = {"SPLIT": taxonomy.split, "MERGE": taxonomy.merged, "KEEP": taxonomy.kept,
                 "REJECT": taxonomy.removed}[decision.final_label]
        (placed,) = [d for d in group if d.item_id == decision.item_id]
        assert (placed.children, placed.merge_into, placed.reviewer) == (
            decision.children, decision.merge_into, decision.reviewer)


def replace(decision: Decision, **changes: Any) -> Decision:
    return dataclasses.replace(decision, **changes)
