"""Human overrides: append-only history; the latest one is the item's final label.

An override saved in a blind first pass (`blind`), before its reviewer saw any critic's label
or reason, is the item's human label for judge-versus-human agreement: a label given after
reading every critic is anchored by them. Revisions after the reveal are ordinary overrides.

The table refuses UPDATE and DELETE (triggers), so a decision cannot be lost by a later edit;
"latest" is the highest id, which two concurrent writers cannot tie on. Each override is sealed
into the run's verifiable record as it is added (`storage.reviewing.record_chain`): an edit made behind
the app's back (the triggers dropped) is named by `jurybox verify`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import sqlite_utils

from storage.db import NotFoundError, StorageError, now
from storage.reviewing.decisions import DecisionRule, final_decisions
from storage.reviewing.record_chain import seal_overrides, sealing

_LATEST = (
    "SELECT o.* FROM overrides o JOIN (SELECT item_id, max(id) AS id FROM overrides"
    " WHERE run_id = :run GROUP BY item_id) m ON m.id = o.id"
)


def check_item(db: sqlite_utils.Database, run_id: int, item_id: str) -> None:
    """Raise `NotFoundError` unless the run exists and its dataset holds the item."""
    row = db.execute(
        "SELECT EXISTS (SELECT 1 FROM items i JOIN runs r ON r.dataset_id = i.dataset_id"
        " WHERE r.id = ? AND i.item_id = ?), EXISTS (SELECT 1 FROM runs WHERE id = ?)",
        [run_id, item_id, run_id],
    ).fetchone()
    if not row[1]:
        raise NotFoundError(f"There is no run with id {run_id}.")
    if not row[0]:
        raise NotFoundError(f"Run {run_id} has no item {item_id!r}.")


def _clean(label: str, reviewer: str) -> tuple[str, str]:
    label = (label or "").strip()
    reviewer = (reviewer or "").strip()
    if not label:
        raise StorageError("An override needs a label.")
    if not reviewer:
        raise StorageError("An override needs the reviewer's name, so the history says who decided.")
    return label, reviewer


def add_override(
    db: sqlite_utils.Database, run_id: int, item_id: str, label: str, note: str, reviewer: str,
    *, blind: bool = False, children: list[str] | None = None, merge_into: str | None = None,
    adjudication: bool = False,
) -> int:
    """Record a reviewer's label for an item (a new row; earlier ones stay in the history).

    The caller checks that `label` is on the panel's scale and that a curation decision's
    `children` (the new classes of a split) and `merge_into` fit it (storage knows neither).
    `blind`: given before the reviewer saw the critics (see the module's doc).
    `adjudication`: a lead's decision between reviewers who disagreed (`storage.reviewing.assignments`).

    Returns:
        The override's id.

    Raises:
        StorageError: empty label or reviewer.
        NotFoundError: the run, or the item in the run's dataset, does not exist.
    """
    label, reviewer = _clean(label, reviewer)
    check_item(db, run_id, item_id)
    with sealing(db):  # the override and its place in the run's record, together
        cursor = db.execute(
            "INSERT INTO overrides (run_id, item_id, label, note, reviewer, created_at, blind,"
            " children, merge_into, adjudication) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [run_id, item_id, label, (note or "").strip(), reviewer, now(), int(blind),
             json.dumps(children, ensure_ascii=False) if children else None, merge_into or None,
             int(adjudication)],
        )
        override_id = int(cursor.lastrowid or 0)
        seal_overrides(db, run_id, [override_id])
    return override_id


def override_history(db: sqlite_utils.Database, run_id: int, item_id: str) -> list[dict[str, Any]]:
    """Every override of an item, oldest first: id, label, note, reviewer, created_at, blind,
    children (a list: the new classes of a split) and merge_into."""
    rows = db.query(
        "SELECT id, label, note, reviewer, created_at, blind, children, merge_into"
        " FROM overrides WHERE run_id = ? AND item_id = ? ORDER BY id",
        [run_id, item_id],
    )
    return [{**row, "blind": bool(row["blind"]), "children": json.loads(row["children"] or "[]")}
            for row in rows]


def blind_label(
    db: sqlite_utils.Database, run_id: int, item_id: str, reviewer: str
) -> dict[str, Any] | None:
    """The reviewer's blind label for the item (their first, if several), or None."""
    row = db.execute(
        "SELECT id, label, note, created_at FROM overrides WHERE run_id = ? AND item_id = ?"
        " AND reviewer = ? AND blind = 1 ORDER BY id LIMIT 1",
        [run_id, item_id, (reviewer or "").strip()],
    ).fetchone()
    if row is None:
        return None
    return dict(zip(("id", "label", "note", "created_at"), row))


def latest_overrides(db: sqlite_utils.Database, run_id: int) -> dict[str, dict[str, Any]]:
    """item_id -> its latest override (id, label, note, reviewer, created_at, blind, children
    as a list, merge_into)."""
    return {
        row["item_id"]: {**row, "blind": bool(row["blind"]),
                         "children": json.loads(row["children"] or "[]")}
        for row in db.query(_LATEST, {"run": run_id})
    }


def overrides_stamp(db: sqlite_utils.Database, run_id: int) -> tuple[int, int]:
    """(how many overrides the run holds, the newest one's id): overrides are append-only, so
    this pair changes with every decision recorded on the run (a label, a note, a blind
    label), and only then. A cache key for what is computed from the run's reviews."""
    count, newest = db.execute(
        "SELECT count(*), coalesce(max(id), 0) FROM overrides WHERE run_id = ?", [run_id]
    ).fetchone()
    return int(count), int(newest)


def human_labels(db: sqlite_utils.Database, run_id: int,
                 rule: DecisionRule | None = None) -> dict[str, str]:
    """item_id -> the human label that judge-versus-human agreement uses: the item's first
    blind label where it has one (not anchored by the critics), else its final decision where
    a human made it (`storage.reviewing.decisions`: on a rubric panel a reviewer's criterion marks count,
    scored; on a score scale the value is the score, as text).

    Args:
        rule: the panel's part of the decision rule (default: a label panel).
    """
    rule = rule or DecisionRule()
    if rule.numeric:
        # Only the items a human scored or marked (Agreement asks on every rerun: reading every
        # item's decision would cost seconds at a million items).
        reviewed = [row[0] for row in db.execute(
            "SELECT item_id FROM overrides WHERE run_id = ? UNION"
            " SELECT item_id FROM criterion_overrides WHERE run_id = ?", [run_id, run_id])]
        final = final_decisions(db, run_id, rule, item_ids=reviewed)
        human = final[(final["decided_by"] == "human") & final["final_score"].notna()]
        labels = {item_id: repr(float(score)) for item_id, score
                  in zip(human["item_id"], human["final_score"], strict=True)}
        # A blind score is the human's, unanchored; a blind label that is no number is kept.
        labels.update(blind_labels(db, run_id))
        return labels
    labels = {item_id: row["label"] for item_id, row in latest_overrides(db, run_id).items()}
    labels.update(blind_labels(db, run_id))
    return labels


def blind_labels(db: sqlite_utils.Database, run_id: int) -> dict[str, str]:
    """item_id -> its first blind label, for the items that have one."""
    return {
        item_id: label
        for item_id, label in db.execute(
            "SELECT o.item_id, o.label FROM overrides o JOIN (SELECT item_id, min(id) AS id"
            " FROM overrides WHERE run_id = ? AND blind = 1 GROUP BY item_id) f ON f.id = o.id",
            [run_id],
        )
    }


def final_labels(db: sqlite_utils.Database, run_id: int,
                 rule: DecisionRule | None = None) -> pd.DataFrame:
    """The final label of every item of the run, by the one rule (`storage.reviewing.decisions`): its
    latest override, else the consensus (a score panel's and a rubric's by `rule`).

    Returns:
        A DataFrame in item order with columns item_id, final_label, consensus, overridden
        (bool), override_label, override_note, reviewer, overridden_at.
    """
    return final_decisions(db, run_id, rule)[[
        "item_id", "final_label", "consensus", "overridden", "override_label", "override_note",
        "reviewer", "overridden_at"]]


@dataclass(frozen=True)
class Accepted:
    """What a bulk "accept the consensus" did: overrides added, and items skipped by reason."""

    added: int
    skipped: dict[str, int] = field(default_factory=dict)

    def sentence(self) -> str:
        """What was done, as one sentence for the page (skips counted with their reasons)."""
        text = f"Accepted the consensus for {self.added:,} item{'' if self.added == 1 else 's'}"
        if not self.skipped:
            return text + "."
        reasons = "; ".join(f"{why} ({n:,})" for why, n in self.skipped.items())
        total = sum(self.skipped.values())
        return (f"{text}; skipped {total:,} that need{'s' if total == 1 else ''} a decision of "
                f"your own: {reasons}. The filter \"Needs a decision\" lists them.")


def accept_consensus(
    db: sqlite_utils.Database,
    run_id: int,
    item_ids: Iterable[str],
    reviewer: str,
    note: str = "accepted the consensus",
    rule: DecisionRule | None = None,
) -> Accepted:
    """Record the consensus as the reviewer's decision for each item, in one transaction.

    A consensus that cannot be acted on is skipped, never recorded (`storage.reviewing.decisions`): no
    consensus at all (the vote abstained), a SPLIT (the critics never name the new classes) or
    a MERGE (nor the class to merge into). On a score scale the consensus score is recorded.

    Args:
        rule: the panel's part of the decision rule (default: a label panel).

    Returns:
        How many overrides were added, and how many items were skipped, by reason.

    Raises:
        StorageError: empty reviewer.
    """
    rule = rule or DecisionRule()
    _, reviewer = _clean("consensus", reviewer)
    ids = [str(i) for i in item_ids]
    value = "CAST(score AS TEXT)" if rule.numeric else "consensus"
    unactionable = [(label, why) for label, why in (
        (rule.split_label, f"a {rule.split_label} consensus has no new child classes"),
        (rule.merge_label, f"a {rule.merge_label} consensus has no class to merge into"))
        if label and not rule.numeric]
    skip_labels = [label for label, _ in unactionable]
    stamp = now()
    added = 0
    skipped: dict[str, int] = {}
    with sealing(db):
        # Under the write lock: every override after this id is one of ours (sealed below).
        before = db.execute("SELECT coalesce(max(id), 0) FROM overrides").fetchone()[0]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            keep = "".join(" AND consensus IS NOT ?" for _ in skip_labels)
            cursor = db.execute(
                "INSERT INTO overrides (run_id, item_id, label, note, reviewer, created_at)"
                f" SELECT run_id, item_id, {value}, ?, ?, ? FROM consensus"
                f" WHERE run_id = ? AND {value} IS NOT NULL{keep} AND item_id IN ({marks})"
                " ORDER BY position",
                [(note or "").strip(), reviewer, stamp, run_id, *skip_labels, *chunk],
            )
            added += cursor.rowcount
            for label, n in db.execute(
                f"SELECT {value}, count(*) FROM consensus WHERE run_id = ? AND item_id IN"
                f" ({marks}) AND ({value} IS NULL"
                + "".join(" OR consensus = ?" for _ in skip_labels) + ") GROUP BY 1",
                [run_id, *chunk, *skip_labels],
            ):
                why = dict(unactionable).get(label, "no consensus (the vote abstained)")
                skipped[why] = skipped.get(why, 0) + int(n)
        seal_overrides(db, run_id, [row[0] for row in db.execute(
            "SELECT id FROM overrides WHERE run_id = ? AND id > ?", [run_id, before])])
    return Accepted(added, skipped)
