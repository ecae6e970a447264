"""Verdicts judges gave outside Jurybox, kept with the dataset they judged.

A verdict file (a table with a column per judge, an eval log, an annotation export) is read
into a `judging.verdicts.VerdictSet`; its verdicts are stored here per dataset and judge
(`imported_judges`, `imported_verdicts`). A run whose panel has `kind: imported` critics
replays them (`judging.engine.plugin_critics`): the verdicts are judged, voted, sealed and
reviewed by the same code as any run's. Importing a judge again replaces its verdicts on that
dataset, in one transaction.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlite_utils

from judging.errors import DataError
from judging.verdicts import ImportedVerdict, Item, VerdictSet
from storage.db import dumps, loads, now

_CHUNK = 5000


@dataclass(frozen=True, slots=True)
class ImportedJudge:
    """One judge whose verdicts a dataset holds, and where they came from."""

    judge: str
    description: str
    source: str
    format: str
    imported_at: str
    verdicts: int
    orders: int  # 2: verdicts in both orders of a pair
    samples: int  # repeats per item, at most


def save_imported_verdicts(
    db: sqlite_utils.Database, dataset_id: int, verdicts: Sequence[ImportedVerdict], *,
    judges: dict[str, str], source: str, format: str,
) -> None:
    """Store the judges' verdicts on a dataset's items, replacing what those judges had.

    Args:
        judges: every judge to store, with its description; each must have verdicts.
        source / format: where the verdicts came from (shown on the run's banner).

    Raises:
        DataError: a judge without verdicts, a verdict by a judge not named, a verdict on an
            item the dataset does not have, or one item judged twice in the same order and
            repeat. Nothing is stored then.
    """
    counts = {judge: 0 for judge in judges}
    for verdict in verdicts:
        if verdict.judge not in counts:
            raise DataError(f"A verdict names the judge {verdict.judge!r}, which is not among "
                            f"the judges imported ({', '.join(judges)}).")
        counts[verdict.judge] += 1
    empty = [judge for judge, n in counts.items() if not n]
    if empty:
        raise DataError(f"The judge {empty[0]!r} has no verdicts in the file: leave it out, or "
                        "check its column or name.")
    known = {row[0] for row in db.execute(
        "SELECT item_id FROM items WHERE dataset_id = ?", [dataset_id]).fetchall()}
    absent = sorted({v.item_id for v in verdicts if v.item_id not in known})
    if absent:
        raise DataError(f"{len(absent)} verdict item id(s) are not items of the dataset, e.g. "
                        f"{absent[0]!r}: import the items the verdicts were given on (or map "
                        "the id column the verdicts use).")
    seen: set[tuple[str, str, bool, int]] = set()
    for v in verdicts:
        key = (v.judge, v.item_id, v.swapped, v.sample)
        if key in seen:
            order = ", swapped order" if v.swapped else ""
            raise DataError(f"The judge {v.judge!r} has two verdicts on item {v.item_id!r} "
                            f"(repeat {v.sample + 1}{order}): give repeats a repeat number, or "
                            "keep one.")
        seen.add(key)
    at = now()
    rows = ((dataset_id, v.judge, v.item_id, int(v.swapped), v.sample, v.label, v.score,
             v.confidence, v.reasoning, dumps(list(v.history)) if v.history else None)
            for v in verdicts)
    with db.atomic():
        for judge, description in judges.items():
            # Replacing a judge drops its old verdicts with it (ON DELETE CASCADE).
            db.execute("DELETE FROM imported_judges WHERE dataset_id = ? AND judge = ?",
                       [dataset_id, judge])
            db.execute("INSERT INTO imported_judges (dataset_id, judge, description, source,"
                       " format, imported_at) VALUES (?, ?, ?, ?, ?, ?)",
                       [dataset_id, judge, description, source, format, at])
        while chunk := list(itertools.islice(rows, _CHUNK)):
            db.conn.executemany(
                "INSERT INTO imported_verdicts (dataset_id, judge, item_id, swapped, sample,"
                " label, score, confidence, reasoning, history)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", chunk)


def imported_judges(db: sqlite_utils.Database, dataset_id: int) -> list[ImportedJudge]:
    """The judges whose verdicts a dataset holds, in the order they were imported."""
    rows = db.execute(
        "SELECT j.judge, j.description, j.source, j.format, j.imported_at,"
        " count(v.item_id), count(DISTINCT v.swapped), coalesce(max(v.sample), -1) + 1"
        " FROM imported_judges j LEFT JOIN imported_verdicts v"
        " ON v.dataset_id = j.dataset_id AND v.judge = j.judge"
        " WHERE j.dataset_id = ? GROUP BY j.judge ORDER BY min(j.rowid)", [dataset_id]
    ).fetchall()
    return [ImportedJudge(*row) for row in rows]


def load_imported_verdicts(db: sqlite_utils.Database, dataset_id: int,
                           judges: Iterable[str]) -> dict[tuple[str, str, bool, int], ImportedVerdict]:
    """Every verdict of these judges on the dataset, by (judge, item id, swapped, sample)."""
    found: dict[tuple[str, str, bool, int], ImportedVerdict] = {}
    for judge in judges:
        for row in db.execute(
                "SELECT item_id, swapped, sample, label, score, confidence, reasoning, history"
                " FROM imported_verdicts WHERE dataset_id = ? AND judge = ?",
                [dataset_id, judge]):
            item_id, swapped, sample, label, score, confidence, reasoning, history = row
            found[(judge, item_id, bool(swapped), int(sample))] = ImportedVerdict(
                item_id=item_id, judge=judge, label=label, score=score, reasoning=reasoning,
                confidence=confidence, swapped=bool(swapped), sample=int(sample),
                history=tuple(loads(history)) if history else ())
    return found


# -- verdicts in a table -------------------------------------------------------------------------
# A table holds verdicts in one of two shapes. Wide: a row per item, a column per judge (with
# optional `<judge>_reasoning` and `<judge>_confidence` columns). Long: a row per verdict, with
# columns naming the item, the judge and the label or score (and optionally the order of a pair,
# the repeat, the reasoning and the confidence). Either is read by `storage.datasets.importing` first
# (every check of a dataset import applies), then split here into items and verdicts.

_REASONING_SUFFIXES = ("_reasoning", "_reason", "_explanation", "_rationale")
_CONFIDENCE_SUFFIXES = ("_confidence", "_conf", "_probability")
_JUDGE_NAMES = ("judge", "critic", "grader", "evaluator", "scorer", "annotator", "rater",
                "model", "model_version")
_VALUE_NAMES = ("label", "verdict", "decision", "winner", "choice", "answer", "value", "score",
                "rating", "grade")
# How a long table may say a pair was shown in its own order, or swapped.
_IN_ORDER = {"ab", "a first", "forward", "original", "false", "0", "no", "1-2", "a-b"}
_SWAPPED = {"ba", "b first", "backward", "swapped", "reversed", "true", "1", "yes", "2-1", "b-a"}
_ORDER_NAMES = ("order", "swapped", "swap", "position", "presentation")
_REPEAT_NAMES = ("repeat", "sample", "epoch", "trial", "run")


@dataclass(frozen=True, slots=True)
class WideMapping:
    """Which columns of a wide table hold whose verdicts: judge -> column (and its reasoning
    and confidence columns, where it has them)."""

    judges: dict[str, str]
    reasoning: dict[str, str]
    confidence: dict[str, str]

    @property
    def columns(self) -> set[str]:
        return {*self.judges.values(), *self.reasoning.values(), *self.confidence.values()}


@dataclass(frozen=True, slots=True)
class LongMapping:
    """Which columns of a long table say what: the item, the judge, the verdict, and
    optionally the order of a pair, the repeat, the reasoning and the confidence."""

    item: str
    judge: str
    verdict: str
    order: str | None = None
    repeat: str | None = None
    reasoning: str | None = None
    confidence: str | None = None

    @property
    def columns(self) -> set[str]:
        return {c for c in (self.item, self.judge, self.verdict, self.order, self.repeat,
                            self.reasoning, self.confidence) if c}


def _text(value: object) -> str | None:
    """A cell as a label: blank -> None; 3.0 -> "3"; True -> "true"."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:  # NaN: a missing value
            return None
        if value.is_integer():
            return str(int(value))
    text = str(value).strip()
    return text or None


def _number(value: object, where: str) -> float | None:
    text = _text(value)
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        raise DataError(f"{where} holds {text!r}, not a number: give scores as numbers, or "
                        "import the verdicts as labels.") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise DataError(f"{where} holds {text!r}, not a finite number.")
    return number


def _confidence(value: object, where: str) -> float | None:
    number = _number(value, where)
    if number is not None and not 0 <= number <= 1:
        raise DataError(f"{where} holds the confidence {number:g}, outside 0 to 1: give "
                        "confidences as probabilities (0.8, not 80).")
    return number


def _suffixed(column: str, columns: Sequence[str], suffixes: tuple[str, ...]) -> str | None:
    lowered = {c.lower(): c for c in columns}
    for suffix in suffixes:
        found = lowered.get(column.lower() + suffix)
        if found is not None:
            return found
    return None


def guess_wide(columns: Sequence[str], rows: Sequence[dict[str, object]], *,
               id_column: str | None, gold_column: str | None) -> WideMapping:
    """A first guess at a wide table's judges, for the user to confirm: a column is a judge's
    when it has a reasoning or confidence column beside it, or when every value it holds is
    one of the gold labels (`rows`: a sample of the table)."""
    taken = {id_column, gold_column}
    extras = {c for c in columns for j in columns if c != j and (
        _suffixed(j, columns, _REASONING_SUFFIXES) == c
        or _suffixed(j, columns, _CONFIDENCE_SUFFIXES) == c)}
    gold = {_text(r.get(gold_column)) for r in rows} - {None} if gold_column else set()
    judges: dict[str, str] = {}
    for column in columns:
        if column in taken or column in extras:
            continue
        values = {_text(r.get(column)) for r in rows} - {None}
        beside = (_suffixed(column, columns, _REASONING_SUFFIXES)
                  or _suffixed(column, columns, _CONFIDENCE_SUFFIXES))
        if values and (beside or (gold and values <= gold)):
            judges[column] = column
    return WideMapping(
        judges=judges,
        reasoning={j: c for j, col in judges.items()
                   if (c := _suffixed(col, columns, _REASONING_SUFFIXES))},
        confidence={j: c for j, col in judges.items()
                    if (c := _suffixed(col, columns, _CONFIDENCE_SUFFIXES))},
    )


def guess_long(columns: Sequence[str]) -> LongMapping | None:
    """A long table's columns guessed from their names (item, judge, verdict, ...), or None
    when the names do not say which columns hold the judge and the verdict."""
    lowered = {c.strip().lower(): c for c in columns}

    def pick(names: Sequence[str]) -> str | None:
        return next((lowered[n] for n in names if n in lowered), None)

    judge = pick(_JUDGE_NAMES)
    verdict = pick(_VALUE_NAMES)
    item = pick(("item_id", "item", "id", "sample_id", "example_id", "question_id", "task_id"))
    if judge is None or verdict is None or item is None:
        return None
    return LongMapping(
        item=item, judge=judge, verdict=verdict, order=pick(_ORDER_NAMES),
        repeat=pick(_REPEAT_NAMES),
        reasoning=pick(("reasoning", "reason", "explanation", "rationale", "comment")),
        confidence=pick(("confidence", "probability")))


def _verdict_value(value: object, numeric: bool, where: str
                   ) -> tuple[str | None, float | None]:
    if numeric:
        return None, _number(value, where)
    return _text(value), None


def verdicts_from_wide(items: Sequence[Item], mapping: WideMapping, *, numeric: bool,
                       source: str) -> VerdictSet:
    """Split a wide table's items (every column a field, as `read_dataset` gives them) into
    the items (the verdict columns taken out of their fields) and the judges' verdicts. An
    empty cell is no verdict."""
    if not mapping.judges:
        raise DataError("No judge columns are chosen: pick the columns that hold each judge's "
                        "verdicts.")
    verdicts: list[ImportedVerdict] = []
    kept: list[Item] = []
    drop = mapping.columns
    for item in items:
        fields = item.fields
        for judge, column in mapping.judges.items():
            where = f"Item {item.id!r}, column {column!r}"
            label, score = _verdict_value(fields.get(column), numeric, where)
            if label is None and score is None:
                continue
            reasoning_column = mapping.reasoning.get(judge)
            confidence_column = mapping.confidence.get(judge)
            verdicts.append(ImportedVerdict(
                item_id=item.id, judge=judge, label=label, score=score,
                reasoning=_text(fields.get(reasoning_column)) if reasoning_column else None,
                confidence=_confidence(fields.get(confidence_column),
                                       f"Item {item.id!r}, column {confidence_column!r}")
                if confidence_column else None))
        kept.append(Item(id=item.id, gold=item.gold,
                         fields={k: v for k, v in fields.items() if k not in drop}))
    return VerdictSet(source=source, format="table-wide", items=kept, verdicts=verdicts,
                      judges={judge: f"column {column}" for judge, column in mapping.judges.items()})


def _swapped(value: object, where: str) -> bool:
    text = (_text(value) or "").lower()
    if text in _IN_ORDER or not text:
        return False
    if text in _SWAPPED:
        return True
    raise DataError(f"{where} holds the order {text!r}: say AB (as stored) or BA (swapped), "
                    "or true/false for swapped.")


def verdicts_from_long(rows: Sequence[Item], mapping: LongMapping, *, numeric: bool,
                       source: str) -> VerdictSet:
    """A long table's rows (every column a field, as `read_dataset` gives them with generated
    ids) as verdicts, and its items: one per item id, its fields the other columns of its
    first row, its gold that row's gold."""
    verdicts: list[ImportedVerdict] = []
    items: dict[str, Item] = {}
    repeats: dict[tuple[str, str, bool], int] = {}
    drop = mapping.columns
    for n, row in enumerate(rows, 1):
        fields = row.fields
        item_id = _text(fields.get(mapping.item))
        judge = _text(fields.get(mapping.judge))
        if item_id is None or judge is None:
            missing = mapping.item if item_id is None else mapping.judge
            raise DataError(f"Row {n} has no {missing!r}: every verdict names its item and its "
                            "judge.")
        where = f"Row {n}, column {mapping.verdict!r}"
        label, score = _verdict_value(fields.get(mapping.verdict), numeric, where)
        if label is None and score is None:
            continue
        swapped = _swapped(fields.get(mapping.order), f"Row {n}, column {mapping.order!r}") \
            if mapping.order else False
        if mapping.repeat:
            repeat = _number(fields.get(mapping.repeat), f"Row {n}, column {mapping.repeat!r}")
            sample = int(repeat or 0)
        else:  # rows repeating a judge's verdict on an item are its repeats, in file order
            sample = repeats.get((item_id, judge, swapped), 0)
            repeats[(item_id, judge, swapped)] = sample + 1
        verdicts.append(ImportedVerdict(
            item_id=item_id, judge=judge, label=label, score=score, swapped=swapped,
            sample=sample,
            reasoning=_text(fields.get(mapping.reasoning)) if mapping.reasoning else None,
            confidence=_confidence(fields.get(mapping.confidence),
                                   f"Row {n}, column {mapping.confidence!r}")
            if mapping.confidence else None))
        items.setdefault(item_id, Item(id=item_id, gold=row.gold, fields={
            k: v for k, v in fields.items() if k not in drop}))
    if mapping.repeat:  # repeat numbers as the file gives them, from 0 (epochs count from 1)
        first = min((v.sample for v in verdicts), default=0)
        if first:
            verdicts = [dataclasses.replace(v, sample=v.sample - first) for v in verdicts]
    judges = {v.judge: "" for v in verdicts}
    return VerdictSet(source=source, format="table-long", items=list(items.values()),
                      verdicts=verdicts, judges=judges)
