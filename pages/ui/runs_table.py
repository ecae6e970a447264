"""The list of runs with their status, as a table."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.ledger import Ledger
from pages.ui.progress import status_text


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
            "calls stored": f"{done:,} / {total:,}",
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
