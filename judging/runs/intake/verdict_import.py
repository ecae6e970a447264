"""Verdicts made outside Jurybox become a run: every review feature then works on them.

A `VerdictSet` (read from a table by `storage.datasets.imported`, from an eval log or an annotation
export by `storage.datasets.readers.eval_logs`) is stored with its items, and a panel of `kind:
imported` critics, one per judge, is run over them: each critic replays its judge's verdicts
(`judging.engine.plugin_critics`), both orders of a pair and every repeat, so voting, position
bias, stability, the review record and every page work as on any run. People's annotations
enter as their blind decisions on Review (Team's alpha between humans and adjudication), or,
when the analyst chooses, as critics of their own. An imported run calls no vendor, costs
nothing and is never simulated.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from judging.errors import DataError
from judging.panel.critics import Critic, plugin_stand_ins
from judging.panel.pairwise import PairwiseConfig
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.stored.stored_run import load_run
from judging.scales import Scale
from judging.verdicts import ImportedVerdict, Item, VerdictSet
from judging.voting.voting_config import VotingConfig
from storage.datasets.dataset_store import save_dataset
from storage.datasets.imported import load_imported_verdicts, save_imported_verdicts
from storage.datasets.readers.eval_logs import verdict_control
from storage.db import open_db
from storage.results.runs import read_run
from storage.results.tool_exports import (
    ToolDecision,
    inspect_scores_jsonl,
    label_studio_tasks,
    long_table_csv,
)
from storage.reviewing.overrides import add_override


@dataclass(frozen=True, slots=True)
class ImportChoices:
    """What the analyst confirmed about a verdict file.

    Attributes:
        name: the dataset's and the run's name.
        scale: the verdicts' scale; None: from the labels given (yes/no, else nominal labels
            in order of appearance, the gold labels included) or the scores' range.
        pairwise: the fields of response A and B and the labels meaning "A better", "B better"
            and a tie, when the judges compared two responses.
        voting: the panel's vote over the judges (default: plurality, the mean for scores).
        people: "reviewers" (annotations are each annotator's blind decision), "critics"
            (each annotator is one more imported critic) or "none" (left out).
    """

    name: str
    scale: Scale | None = None
    pairwise: PairwiseConfig | None = None
    voting: VotingConfig | None = None
    people: Literal["reviewers", "critics", "none"] = "reviewers"


@dataclass(frozen=True, slots=True)
class ImportedRun:
    """What an import made: the run, its dataset, and what went in."""

    run_id: int
    dataset_id: int
    status: str
    judges: list[str]
    verdicts: int
    annotations: int

    def sentence(self) -> str:
        """"Imported 4,174 verdicts of 5 judges (GPT-4, ...) as run #1 on dataset #1: done."."""
        return (f"Imported {self.verdicts:,} verdicts of {len(self.judges)} judges "
                f"({', '.join(self.judges)}) as run #{self.run_id} on dataset "
                f"#{self.dataset_id}: {self.status}.")


@dataclass(frozen=True, slots=True)
class _Parsed:
    """A verdict set's items as `save_dataset` takes them (`storage.datasets.dataset_store.ParsedLike`)."""

    items: list[Item]
    columns: list[str]
    fields: list[str]
    content_hash: str
    format: str
    filename: str
    id_column: str | None = "id"
    gold_column: str | None = None


def verdict_scale(vset: VerdictSet, pairwise: PairwiseConfig | None = None) -> Scale:
    """The scale a verdict set's values fit: its scores' range, yes/no, or its labels (the
    gold labels and a pair's A/B/tie labels included) in order of first appearance."""
    if vset.numeric:
        scores = [v.score for v in vset.verdicts if v.score is not None]
        scores += [a.score for a in vset.annotations if a.score is not None]
        low, high = min(scores), max(scores)
        return Scale(kind="score", min=low, max=high if high > low else low + 1)
    labels = dict.fromkeys(vset.labels)
    if pairwise is not None and pairwise.active:
        labels = dict.fromkeys([pairwise.a_label, pairwise.b_label,
                                *([pairwise.tie_label] if pairwise.tie_label else []), *labels])
    for item in vset.items:
        if item.gold is not None:
            labels.setdefault(item.gold)
    if set(labels) <= {"yes", "no"}:
        return Scale(kind="yesno")
    if len(labels) < 2:
        raise DataError(f"Every verdict is {next(iter(labels), 'empty')!r}: a scale needs at "
                        "least two labels; give the scale's labels when importing.")
    return Scale(kind="nominal", labels=list(labels))


def imported_panel(vset: VerdictSet, choices: ImportChoices) -> Panel:
    """A panel of one imported critic per judge (and per annotator, when people are critics),
    each with as many repeats as its judge gave."""
    pairwise = choices.pairwise or PairwiseConfig()
    scale = choices.scale or verdict_scale(_with_people(vset, choices), pairwise)
    verdicts = _with_people(vset, choices).verdicts
    samples: dict[str, int] = {}
    swapped: set[str] = set()
    for v in verdicts:
        samples[v.judge] = max(samples.get(v.judge, 1), v.sample + 1)
        if v.swapped:
            swapped.add(v.judge)
    if pairwise.active:
        pairwise = pairwise.model_copy(update={"swap": bool(swapped)})
    judges = list(dict.fromkeys([*vset.judges, *(v.judge for v in verdicts)]))
    stand_in = plugin_stand_ins("imported")
    critics = [Critic(name=_critic_name(judge), kind="imported", model=stand_in["model"],
                      prompt_template=stand_in["prompt_template"],
                      judge=None if _critic_name(judge) == judge else judge,
                      samples=samples.get(judge, 1)) for judge in judges]
    return Panel(name=choices.name, description=f"Verdicts imported from {vset.source}",
                 scale=scale, critics=critics,
                 voting=choices.voting or VotingConfig(
                     strategy="mean" if scale.is_numeric else "plurality"),
                 pairwise=pairwise, stop_after_repeated_errors=0)


def _critic_name(judge: str) -> str:
    # A critic's name is a column heading and a key in exports: kept as the judge's own unless
    # it holds characters a panel refuses in a name.
    return judge.strip() or "judge"


def _with_people(vset: VerdictSet, choices: ImportChoices) -> VerdictSet:
    if choices.people == "none":
        return replace(vset, annotations=[])
    if choices.people != "critics" or not vset.annotations:
        return vset
    extra = [ImportedVerdict(item_id=a.item_id, judge=a.annotator, label=a.label,
                             score=a.score, reasoning=a.note or None)
             for a in vset.annotations]
    return replace(vset, verdicts=[*vset.verdicts, *extra], annotations=[],
                   judges={**vset.judges, **{a.annotator: "annotator" for a in vset.annotations}})


def only_judges(vset: VerdictSet, judges: list[str]) -> VerdictSet:
    """The verdict set with only these judges' verdicts (people's annotations kept).

    Raises:
        DataError: a judge the file does not have.
    """
    known = list(dict.fromkeys([*vset.judges, *(v.judge for v in vset.verdicts)]))
    missing = [j for j in judges if j not in known]
    if missing:
        raise DataError(f"The file has no judge {missing[0]!r}; its judges: {', '.join(known)}.")
    return replace(vset, verdicts=[v for v in vset.verdicts if v.judge in judges],
                   judges={j: d for j, d in vset.judges.items() if j in judges})


def _one_kind(vset: VerdictSet) -> None:
    """Labels or scores, not both: a panel has one scale."""
    labels = list(dict.fromkeys(v.judge for v in vset.verdicts if v.label is not None))
    scores = list(dict.fromkeys(v.judge for v in vset.verdicts if v.score is not None))
    if labels and scores:
        raise DataError(f"The file holds labels (from {', '.join(labels)}) and scores (from "
                        f"{', '.join(scores)}), and a run has one scale: import the judges of "
                        "one kind (choose them by name), then the others as a second run.")


def _check_values(vset: VerdictSet, scale: Scale) -> None:
    """Every verdict and annotation on the scale, else a sentence naming the first that is not."""
    for v in vset.verdicts:
        value = v.label if v.label is not None else v.score
        try:
            scale.normalize(value)
        except Exception:  # noqa: BLE001 - ParseError or a value of the wrong type
            shown = ", ".join(scale.labels) if not scale.is_numeric else \
                f"{scale.min:g} to {scale.max:g}"
            raise DataError(f"The judge {v.judge!r} gave {value!r} on item {v.item_id!r}, which "
                            f"is not on the scale ({shown}): give the scale's labels, or map "
                            "the judge's labels onto them first.") from None
    for a in vset.annotations:
        value = a.label if a.label is not None else a.score
        try:
            scale.normalize(value)
        except Exception:  # noqa: BLE001 - ParseError or a value of the wrong type
            raise DataError(f"{a.annotator} labelled item {a.item_id!r} {value!r}, which is not "
                            "on the judges' scale: leave people's labels out (people: none), "
                            "or import them as a run of their own.") from None


def _items_hash(items: list[Item]) -> str:
    digest = hashlib.sha256()
    for item in items:
        digest.update(json.dumps([item.id, item.fields, item.gold], sort_keys=True,
                                 ensure_ascii=False, default=str).encode())
    return digest.hexdigest()


def import_verdicts(db_path: Any, vset: VerdictSet, choices: ImportChoices, *,
                    dataset_id: int | None = None, concurrency: int = 8,
                    registry: JobRegistry | None = None) -> ImportedRun:
    """Store a verdict set and run its panel of imported critics to the end.

    Args:
        db_path: the database file.
        dataset_id: the dataset the verdicts judge (a file of verdicts only); None: the
            verdict set's items are saved as a dataset (or found, when the same items were
            imported before).
        registry: the job registry to run it in (the app's, so its pages see the job);
            default a new one. The replay takes seconds: this waits for the end.

    Raises:
        DataError: a verdict off the scale, a judge with no verdicts, a verdict on an item the
            dataset lacks, two verdicts where one belongs: named, and nothing is stored.
    """
    people = _with_people(vset, choices)
    _one_kind(people)
    panel = imported_panel(vset, choices)
    _check_values(people, panel.scale)
    db = open_db(db_path)
    try:
        if dataset_id is None and vset.items:
            fields = list(dict.fromkeys(k for item in vset.items for k in item.fields))
            parsed = _Parsed(items=vset.items, columns=fields, fields=fields,
                             content_hash=_items_hash(vset.items), format=vset.format,
                             filename=vset.source,
                             gold_column="gold" if any(i.gold for i in vset.items) else None)
            dataset_id = save_dataset(db, parsed, name=choices.name).id
        elif dataset_id is None:
            raise DataError("The file holds verdicts but no items: choose the dataset they judge.")
        judges = {c.judge or c.name: people.judges.get(c.judge or c.name, "")
                  for c in panel.critics}
        save_imported_verdicts(db, dataset_id, people.verdicts, judges=judges,
                               source=vset.source, format=vset.format)
        run_id = prepare_run(db, dataset_id=dataset_id, panel=panel, name=choices.name)
    finally:
        db.close()
    job = (registry or JobRegistry()).start_run(db_path, run_id, concurrency=concurrency)
    job.wait()
    db = open_db(db_path)
    try:
        for note in people.annotations:
            value = note.label if note.label is not None else note.score
            if value is None:
                continue
            add_override(db, run_id, note.item_id, str(panel.scale.normalize(value)),
                         note.note or f"imported from {vset.source}", note.annotator,
                         blind=True)
        status = str(read_run(db, run_id).status)
    finally:
        db.close()
    return ImportedRun(run_id=run_id, dataset_id=dataset_id, status=status,
                       judges=[c.name for c in panel.critics], verdicts=len(people.verdicts),
                       annotations=len(people.annotations))



# -- decisions back to the tool the verdicts came from -------------------------------------------

BACK_FORMATS = ("inspect-scores", "label-studio", "long")


def tool_decisions(db: Any, run_id: int, *, humans_only: bool = False) -> list[ToolDecision]:
    """Every decided item's final decision (a reviewer's latest, else the consensus), as the
    tools take it; `humans_only`: only the items a person decided."""
    frame = load_run(db, run_id).decisions(db)
    frame = frame[frame["status"] == "decided"]
    if humans_only:
        frame = frame[frame["decided_by"] == "human"]
    decisions = []
    for row in frame.to_dict("records"):
        score = row.get("final_score")
        label = row.get("final_label")
        numeric = isinstance(score, float) and score == score
        decisions.append(ToolDecision(
            item_id=str(row["item_id"]), label=None if numeric else str(label),
            score=float(score) if numeric else None,
            note=str(row.get("override_note") or "") if row.get("overridden") else "",
            reviewer=str(row.get("reviewer") or "") if row.get("overridden") else "consensus",
            at=row.get("overridden_at") if row.get("overridden") else None))
    return decisions


def decisions_back(db: Any, run_id: int, fmt: str, *, tasks: bytes | None = None,
                   control: str | None = None, humans_only: bool = False) -> tuple[bytes, int]:
    """The run's final decisions in a tool's own shape, and how many: Inspect's precomputed
    scores (JSON Lines, for `inspect score` with `precomputed_scores`), Label Studio tasks with
    each decision as a ground-truth annotation (`tasks`: the export the verdicts came from),
    or the long table of every imported verdict and decision (CSV).

    Raises:
        DataError: an unknown format, Label Studio without its export, or a decision the tool
            cannot hold (named by `storage.results.tool_exports`).
    """
    decisions = tool_decisions(db, run_id, humans_only=humans_only)
    if fmt == "inspect-scores":
        return inspect_scores_jsonl(decisions), len(decisions)
    if fmt == "label-studio":
        if tasks is None:
            raise DataError("Writing back to Label Studio needs the export the verdicts were read "
                            "from (its tasks get the decisions as annotations): give that file.")
        parsed = json.loads(tasks)
        if not isinstance(parsed, list):
            raise DataError("That is not a Label Studio JSON export (a list of tasks).")
        return label_studio_tasks(parsed, decisions,
                                  control or verdict_control(parsed, "the export")), len(decisions)
    if fmt == "long":
        run = load_run(db, run_id)
        judges = [c.judge or c.name for c in run.panel.critics if c.kind == "imported"]
        verdicts = load_imported_verdicts(db, run.dataset_id, judges).values()
        return long_table_csv(decisions, verdicts), len(decisions)
    raise DataError(f"Unknown format {fmt!r} to write decisions back in; use one of "
                    f"{', '.join(BACK_FORMATS)}.")
