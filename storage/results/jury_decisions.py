"""Each jury's decision per item, for panels of juries (`judging.voting.juries`; migration
0027_jury_decisions). The panel's own decision over them stays in `consensus`.

Written with the item's decision (`storage.results.consensus.write_consensus`, same transaction) and
sealed into the run's record with it (`storage.reviewing.record_chain.seal_decisions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
import sqlite_utils

from judging.verdicts import PanelVerdict, VoteOutcome
from storage.db import dumps, loads


def decision_text(outcome: VoteOutcome) -> tuple[str | None, float | None]:
    """(label column, score column) of a decision: a label as it is; a score as the score, with
    its recommendation band (else the score as text) in the label column, so filters and
    exports have one label column either way."""
    value = outcome.consensus
    if value is None:
        return None, None
    if isinstance(value, str):
        return value, None
    number = float(value)
    return (outcome.recommendation or f"{number:g}"), number


def write_jury_decisions(db: sqlite_utils.Database, run_id: int,
                         panel_verdicts: Iterable[PanelVerdict]) -> int:
    """Store (replace) each jury's decision of these items; call inside the transaction that
    writes their `consensus` rows. Items of a flat panel have none.

    Returns:
        How many jury decisions were written.
    """
    rows = []
    for pv in panel_verdicts:
        for position, (jury, o) in enumerate(pv.outcome.juries.items()):
            label, score = decision_text(o)
            rows.append((run_id, str(pv.item_id), jury, position, label, score, o.agreement,
                         int(bool(o.disagreement)), int(o.failed), dumps(dict(o.counts)),
                         o.recommendation, o.spread, int(bool(o.tie)), o.note))
    if rows:
        db.conn.executemany(
            "INSERT INTO jury_decisions (run_id, item_id, jury, position, consensus, score,"
            " agreement, disagreement, failed, counts, recommendation, spread, tie, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (run_id, item_id, jury) DO UPDATE SET position = excluded.position,"
            " consensus = excluded.consensus, score = excluded.score,"
            " agreement = excluded.agreement, disagreement = excluded.disagreement,"
            " failed = excluded.failed, counts = excluded.counts,"
            " recommendation = excluded.recommendation, spread = excluded.spread,"
            " tie = excluded.tie, note = excluded.note", rows)
    return len(rows)


def _row(row: dict[str, Any]) -> dict[str, Any]:
    row["counts"] = loads(row["counts"]) or {}
    row["disagreement"] = bool(row["disagreement"])
    row["tie"] = bool(row["tie"])
    return row


def item_jury_decisions(db: sqlite_utils.Database, run_id: int,
                        item_id: str) -> list[dict[str, Any]]:
    """One item's jury decisions in panel order (dicts of the table's columns; empty for a
    flat panel's item)."""
    return [_row(row) for row in db.query(
        "SELECT * FROM jury_decisions WHERE run_id = ? AND item_id = ? ORDER BY position",
        [run_id, item_id])]


def jury_outcomes_of(db: sqlite_utils.Database, run_id: int,
                     item_ids: Sequence[str]) -> dict[str, dict[str, VoteOutcome]]:
    """item id -> jury -> its outcome, for these items (those of a flat panel are absent)."""
    out: dict[str, dict[str, VoteOutcome]] = {}
    for row in db.query(
            "SELECT j.* FROM json_each(?) i JOIN jury_decisions j ON j.run_id = ?"
            " AND j.item_id = i.value ORDER BY j.item_id, j.position",
            [dumps([str(i) for i in item_ids]), run_id]):
        value: str | float | None = row["score"] if row["score"] is not None else row["consensus"]
        out.setdefault(row["item_id"], {})[row["jury"]] = VoteOutcome(
            consensus=value, agreement=row["agreement"], disagreement=bool(row["disagreement"]),
            counts=loads(row["counts"]) or {}, failed=row["failed"],
            recommendation=row["recommendation"], spread=row["spread"], tie=bool(row["tie"]),
            note=row["note"])
    return out


def jury_names(db: sqlite_utils.Database, run_id: int) -> list[str]:
    """The juries with stored decisions in the run, in panel order (empty: a flat panel)."""
    return [row[0] for row in db.execute(
        "SELECT jury FROM jury_decisions WHERE run_id = ? GROUP BY jury ORDER BY min(position),"
        " jury", [run_id])]


def jury_decision_frame(db: sqlite_utils.Database, run_id: int, *,
                        numeric: bool = False) -> pd.DataFrame:
    """Every jury decision of the run, one row per item and jury: item_id, jury, decision
    (the label, or the score on a numeric scale), agreement, disagreement, failed."""
    column = "score" if numeric else "consensus"  # from this fixed pair only
    frame = pd.read_sql_query(
        f"SELECT item_id, jury, {column} AS decision, agreement, disagreement, failed"
        " FROM jury_decisions WHERE run_id = ? ORDER BY position", db.conn, params=[run_id])
    frame["disagreement"] = frame["disagreement"].astype(bool)
    return frame
