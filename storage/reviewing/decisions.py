"""The final decision of each item of a run: one rule, whatever the panel kind.

Review, Agreement, Team, the curated taxonomy, the export and the CLI all read an item's final
decision here, so they cannot disagree on what was decided:

- label, pairwise and curation panels: the latest override, else the panel's consensus;
- score panels: the human's score, else the consensus score; its label is the score's band
  under the panel's thresholds (the text of the score without thresholds), as the consensus
  label is (`storage.results.consensus`);
- rubric panels: the latest human act wins. A reviewer's criterion mark rescores the item's
  final marks (a reviewer's latest mark per criterion, else the panel's vote), and the score
  gives the label by the panel's thresholds; an item override given after the marks wins.

A decision that cannot be acted on "needs a decision", never "decided": no label at all (the
vote abstained), a SPLIT without its new child classes, a MERGE without the class to merge into
(the critics never name them: a split's children and a merge's target only come from a human).

Storage cannot score a rubric nor read a panel file: the caller passes the panel's part of the
rule as a `DecisionRule` (`judging.runs.stored.stored_run.decision_rule` builds it from the panel).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import sqlite_utils

from storage.db import loads

DECIDED = "decided"
NEEDS_DECISION = "needs a decision"

ScoreMarks = Callable[[dict[str, str | None]], float | None]


def _score_text(score: float) -> str:
    return f"{score:g}"


@dataclass(frozen=True)
class DecisionRule:
    """The panel's part of the final-decision rule, as plain data and two functions.

    Attributes:
        split_label: the label that splits a class (a decision with it needs children).
        merge_label: the label that merges a class (a decision with it needs a target).
        numeric: a score scale: the final decision is a score, its label the score's band.
        label_of_score: a score's label (the band under the panel's thresholds); default: the
            score as text, as the consensus of a panel without thresholds.
        score_marks: a rubric panel's scoring of a set of marks (criterion -> mark); None for
            other panels.
        rubric: a rubric panel (set with `score_marks`).
    """

    split_label: str | None = None
    merge_label: str | None = None
    numeric: bool = False
    # Left out of the repr and of equality: two rules of one panel are equal and print alike
    # (the Review page keys its list on the filters' repr). `rubric` says whether marks count.
    label_of_score: Callable[[float], str] = field(default=_score_text, repr=False,
                                                   compare=False)
    score_marks: ScoreMarks | None = field(default=None, repr=False, compare=False)
    rubric: bool = False


# Each item's latest override: the human half of the rule ({only}: a narrower set of items).
_LATEST = (
    "SELECT o.* FROM overrides o JOIN (SELECT item_id, max(id) AS id FROM overrides"
    " WHERE run_id = :run{only} GROUP BY item_id) m ON m.id = o.id"
)


def _unactionable_sql(rule: DecisionRule, final: str, params: dict[str, Any]) -> list[str]:
    """SQL conditions (over the consensus row `c` and the latest override `o`) under which the
    final label `final` cannot be acted on: no label, a split without children, a merge without
    target (`_reasons` words each for the user, in the same order)."""
    conditions = [f"{final} IS NULL"]
    if rule.split_label:
        params["rule_split"] = rule.split_label
        conditions.append(f"({final} = :rule_split AND o.children IS NULL)")
    if rule.merge_label:
        params["rule_merge"] = rule.merge_label
        conditions.append(f"({final} = :rule_merge AND o.merge_into IS NULL)")
    return conditions


def needs_decision_sql(rule: DecisionRule) -> tuple[str, dict[str, Any]]:
    """The Review filter "Needs a decision" as SQL over the consensus row `c` and the item's
    latest override `o` (both joined by the caller), with its parameters.

    A score or rubric item needs a decision only when it has no score at all (no consensus, no
    override, no reviewer's criterion mark)."""
    params: dict[str, Any] = {}
    if rule.numeric:
        sql = "(o.id IS NULL AND c.score IS NULL"
        if rule.rubric:
            sql += (" AND NOT EXISTS (SELECT 1 FROM criterion_overrides m"
                    " WHERE m.run_id = c.run_id AND m.item_id = c.item_id)")
        return sql + ")", params
    return "(" + " OR ".join(_unactionable_sql(rule, "coalesce(o.label, c.consensus)",
                                              params)) + ")", params


def _reasons(rule: DecisionRule) -> list[str]:
    """Why a decision cannot be acted on, in the order of `_unactionable_sql`'s conditions."""
    reasons = ["no consensus: the vote abstained"]
    if rule.split_label:
        reasons.append(f"a {rule.split_label} needs its new child classes, and only a "
                       "reviewer names them")
    if rule.merge_label:
        reasons.append(f"a {rule.merge_label} needs the class to merge into, and only a "
                       "reviewer names it")
    return reasons


def _final_marks(db: sqlite_utils.Database, run_id: int, item_ids: Iterable[str]
                 ) -> dict[str, dict[str, str | None]]:
    """The final marks of these items: a reviewer's latest per criterion, else the vote."""
    ids = list(item_ids)
    marks: dict[str, dict[str, str | None]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        holes = ", ".join("?" for _ in chunk)
        for item_id, voted in db.execute(
            f"SELECT item_id, marks FROM consensus WHERE run_id = ? AND item_id IN ({holes})",
            [run_id, *chunk],
        ):
            marks[item_id] = {c: v.get("mark") for c, v in (loads(voted) or {}).items()}
        for item_id, criterion, mark in db.execute(
            "SELECT item_id, criterion, mark FROM criterion_overrides WHERE run_id = ?"
            f" AND item_id IN ({holes}) ORDER BY id", [run_id, *chunk],
        ):
            marks.setdefault(item_id, {})[criterion] = mark
    return marks


def final_decisions(db: sqlite_utils.Database, run_id: int,
                    rule: DecisionRule | None = None, *,
                    item_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """The final decision of every item of the run (see the module's doc), in item order.

    Args:
        db: this thread's connection.
        run_id: the run.
        rule: the panel's part of the rule (default: a label panel without curation).
        item_ids: only these items (default: every item).

    Returns:
        A DataFrame with columns item_id, final_label, final_score (score and rubric panels,
        else NaN), status ("decided" or "needs a decision"), why (the reason an item needs
        a decision, else missing), decided_by ("human" or "panel"), consensus, consensus_score,
        overridden (bool: an item override exists), override_label, override_note, reviewer,
        overridden_at, children (a tuple), merge_into, adjudication (bool), marked (bool: a
        reviewer marked a criterion). Missing values are pandas' (NaN): `decision_records`
        gives plain rows with None.

    The label rule runs in SQLite; Python only touches the items a human scored or marked.
    """
    rule = rule or DecisionRule()
    params: dict[str, Any] = {"run": run_id}
    only, source = "", "consensus c"
    if item_ids is not None:  # one parameter however many: SQLite caps the count of `?`
        params["items"] = json.dumps(list(dict.fromkeys(str(i) for i in item_ids)))
        only = " AND item_id IN (SELECT value FROM json_each(:items))"
        # The items first, then each one's row by its key: left to itself, SQLite walks the
        # run's rows in position order (the ORDER BY), every one of them for a single item.
        source = ("json_each(:items) j CROSS JOIN consensus c ON c.run_id = :run"
                  " AND c.item_id = j.value")
    final = "coalesce(o.label, c.consensus)"
    conditions = [] if rule.numeric else _unactionable_sql(rule, final, params)
    reason = ("CASE " + " ".join(f"WHEN {cond} THEN {n}" for n, cond in enumerate(conditions))
              + " END") if conditions else "NULL"
    marked = ("(SELECT max(m.created_at) FROM criterion_overrides m WHERE m.run_id = c.run_id"
              " AND m.item_id = c.item_id)") if rule.score_marks is not None else "NULL"
    frame = pd.read_sql_query(
        f"""
        SELECT c.item_id, {final} AS final_label, c.score AS final_score,
               {reason} AS reason, c.consensus, c.score AS consensus_score,
               o.id IS NOT NULL AS overridden, o.label AS override_label,
               o.note AS override_note, o.reviewer, o.created_at AS overridden_at,
               o.children, o.merge_into, coalesce(o.adjudication, 0) AS adjudication,
               {marked} AS marked_at
        FROM {source} LEFT JOIN ({_LATEST.format(only=only)}) o ON o.item_id = c.item_id
        WHERE c.run_id = :run
        ORDER BY c.position, c.item_id
        """,
        db.conn, params=params,
    )
    for flag in ("overridden", "adjudication"):
        frame[flag] = frame[flag].astype(bool)
    frame["marked"] = frame["marked_at"].notna()
    # Tuples, parsed only where a split recorded some: a new list per row, or a pass over every
    # row in Python, costs seconds at a million items; one shared empty tuple costs nothing.
    given = frame["children"].notna()
    children = pd.Series([()] * len(frame), index=frame.index, dtype=object)
    for at, text in frame.loc[given, "children"].items():
        children[at] = tuple(json.loads(text)) if text else ()
    frame["children"] = children
    frame["final_score"] = frame["final_score"].astype(float)
    if rule.numeric:
        _apply_scores(db, run_id, rule, frame)
    frame["decided_by"] = (frame["overridden"] | frame["marked"]).map(
        {True: "human", False: "panel"})
    if rule.numeric:
        missing = frame["final_score"].isna()
        frame["why"] = missing.map(
            {True: "no score: no critic's marks or score could be counted", False: None})
    else:
        missing = frame["reason"].notna()
        frame["why"] = frame["reason"].map(dict(enumerate(_reasons(rule))))
        frame["final_score"] = float("nan")
    frame["status"] = missing.map({True: NEEDS_DECISION, False: DECIDED})
    return frame[[
        "item_id", "final_label", "final_score", "status", "why", "decided_by", "consensus",
        "consensus_score", "overridden", "override_label", "override_note", "reviewer",
        "overridden_at", "children", "merge_into", "adjudication", "marked"]]


def decision_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A `final_decisions` frame as plain rows, a missing value as None (pandas reads one as
    NaN)."""
    columns = list(frame.columns)
    return [{c: (None if not isinstance(v, (list, tuple)) and pd.isna(v) else v)
             for c, v in zip(columns, values, strict=True)}
            for values in frame.itertuples(index=False, name=None)]


def _apply_scores(db: sqlite_utils.Database, run_id: int, rule: DecisionRule,
                  frame: pd.DataFrame) -> None:
    """A score panel's final score and label, for the items a human scored or marked: the
    latest human act (an override's score, or the score of the final marks) wins."""
    rescored = frame.index[frame["marked"]]
    marks = _final_marks(db, run_id, frame.loc[rescored, "item_id"]) if len(rescored) else {}
    for at in frame.index[frame["overridden"] | frame["marked"]]:
        row = frame.loc[at]
        score: float | None
        by_marks = bool(row["marked"]) and (
            not row["overridden"] or str(row["marked_at"]) >= str(row["overridden_at"]))
        if by_marks and rule.score_marks is not None:
            score = rule.score_marks(marks.get(row["item_id"], {}))
        else:
            try:
                score = float(row["override_label"])
            except (TypeError, ValueError):  # a label typed on a score scale: kept as given
                frame.at[at, "final_label"] = row["override_label"]
                frame.at[at, "final_score"] = float("nan")
                continue
        frame.at[at, "final_score"] = float("nan") if score is None else score
        frame.at[at, "final_label"] = None if score is None else rule.label_of_score(score)


def decision_counts(frame: pd.DataFrame) -> dict[str, int]:
    """How many items of a `final_decisions` frame are decided, and how many need a decision."""
    counts = frame["status"].value_counts()
    return {DECIDED: int(counts.get(DECIDED, 0)), NEEDS_DECISION: int(counts.get(NEEDS_DECISION, 0))}
