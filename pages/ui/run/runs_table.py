"""The list of runs with their status, as a table that follows the runs still working."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.engine.ledger import Ledger
from judging.run_status import RunStatus
from pages.ui.run.progress import status_text
from pages.ui.state import db
from storage.results.runs import list_runs

# How often a table with a working run is redrawn (a run's stored counts move about this often:
# its writer recounts them every 2 s at least).
REFRESH_S = 2.0


def runs_rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One display row per run (plain values only)."""
    rows = []
    for run in runs:
        total = run["total_calls"] or 0
        done = (run["ok_calls"] or 0) + (run["failed_calls"] or 0)
        rows.append({
            "run": run["id"],
            "dataset": run["dataset_name"],
            "panel": run["panel_name"],
            "status": status_text(run) + (" · simulated" if run["simulated"] else ""),
            "items": run["n_items"],
            "verdicts stored": f"{done:,} / {total:,}",
            "failed": run["failed_calls"],
            "cost": Ledger.from_mapping(run["ledger"]).cost_text(),
            "created": (run["created_at"] or "")[:19].replace("T", " "),
            "note": run["error"] or "",
        })
    return rows


def runs_table(runs: list[dict[str, Any]]) -> None:
    """Draw the runs; their text (dataset and panel names) is shown as plain cells."""
    rows = runs_rows(runs)
    if not any(row["note"] for row in rows):  # an empty last column only pushes others off
        rows = [{k: v for k, v in row.items() if k != "note"} for row in rows]
    st.dataframe(rows, hide_index=True)


def working_runs_table(runs: list[dict[str, Any]], *, limit: int | None = None) -> None:
    """`runs_table` for a page's list of runs (`list_runs`, newest first, the first `limit`).

    While a run of the list is working, the table is redrawn from the database every
    `REFRESH_S` seconds (drawn once, it said "0 / 150" next to a run that had stored 69), and
    the whole page reruns when none is working any more, so its other figures catch up.
    """
    if not any(run["status"] == RunStatus.RUNNING for run in runs):
        runs_table(runs)
        return

    @st.fragment(run_every=REFRESH_S)
    def following() -> None:
        fresh = list_runs(db())[:limit]
        runs_table(fresh)
        if not any(run["status"] == RunStatus.RUNNING for run in fresh):
            st.rerun()

    following()
