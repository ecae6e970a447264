"""The curated taxonomy of a run: its final decisions (`storage.reviewing.decisions`, by the run's rule)
sorted by `judging.panel.curation.curate`, as JSON or CSV. Used by the Export page and the CLI."""

from __future__ import annotations

import json

import sqlite_utils

from judging.errors import DataError
from judging.panel.curation import CuratedTaxonomy, curate
from judging.runs.stored.stored_run import decision_rule, load_run
from storage.datasets.dataset_store import load_items
from storage.results.export_files import rows_csv_bytes
from storage.reviewing.decisions import decision_records, final_decisions

TAXONOMY_FORMATS = ("json", "csv")


def curated_taxonomy(db: sqlite_utils.Database, run_id: int) -> CuratedTaxonomy:
    """Every candidate class of the run with its final decision.

    Raises:
        NotFoundError: no such run.
        DataError: the run's panel has no taxonomy curation settings.
    """
    stored = load_run(db, run_id)
    panel = stored.panel
    if not panel.curation.active:
        raise DataError(f"Run {run_id}'s panel does not curate a taxonomy: set its curation "
                        "class_field (and the labels that keep, remove, split or merge) on the "
                        "Panel page, then run it.")
    fields = {item.id: item.fields for item in load_items(db, stored.dataset_id)}
    final = final_decisions(db, run_id, decision_rule(panel))
    decisions = [
        {"item_id": row["item_id"], "fields": fields.get(row["item_id"], {}),
         "final_label": row["final_label"], "children": row["children"],
         "merge_into": row["merge_into"], "note": row["override_note"],
         "reviewer": row["reviewer"], "why": row["why"]}
        for row in decision_records(final)
    ]
    return curate(panel.curation, decisions)


def taxonomy_bytes(taxonomy: CuratedTaxonomy, fmt: str) -> bytes:
    """The curated taxonomy as JSON ({kept, removed, split, merged, needs_decision}) or CSV (one
    row per class; children as "A; B").

    Raises:
        DataError: an unknown format.
    """
    if fmt == "json":
        return json.dumps(taxonomy.as_json(), ensure_ascii=False, indent=2).encode("utf-8")
    if fmt == "csv":
        return rows_csv_bytes(taxonomy.rows())
    raise DataError(f"Unknown taxonomy format {fmt!r}; choose one of {', '.join(TAXONOMY_FORMATS)}.")
