"""Exports: final labels with one column per critic; CSV safe for spreadsheets; no keys."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from judging.verdicts import Verdict
from storage.calls import write_verdicts
from storage.db import StorageError
from storage.export import escape_cell, export_bytes, export_frame, export_run
from storage.overrides import add_override, final_labels
from tests.fixtures_storage import seed_run

PLANTED_KEY = "sk-live-PLANTEDKEY-9876543210zyxwvut"


@pytest.fixture
def run(db):
    run = seed_run(db, 30, critics=("alpha", "=cmd|' /C calc'!A0"))
    add_override(db, run.run_id, "item-000002", "SPLIT", '=HYPERLINK("http://evil","click")', "ann")
    add_override(db, run.run_id, "item-000005", "KEEP", "+1 agreed", "@bob")
    add_override(db, run.run_id, "item-000006", "REJECT", "-careful\ttab", "\rcr")
    return run


@pytest.mark.parametrize(
    ("value", "escaped"),
    [("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
     ("\tx", "'\tx"), ("\rx", "'\rx"), ("plain", "plain"), ("a=b", "a=b"), (3.5, 3.5),
     (None, None)],
)
def test_escape_cell(value, escaped):
    assert escape_cell(value) == escaped


def _unescape(value: str) -> str:
    return value[1:] if value[:2] in {"'=", "'+", "'-", "'@", "'\t", "'\r"} else value


def test_csv_is_escaped_and_matches_the_database(db, run, tmp_path):
    out = tmp_path / "labels.csv"
    assert export_run(db, run.run_id, "csv", out) == 30
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"), newline="")))
    header, body = rows[0], rows[1:]
    # A critic name is user data too: the header cell is escaped as well.
    assert "'=cmd|' /C calc'!A0: label" in header
    for row in body:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    by_id = {row[0]: dict(zip(header, row)) for row in body}
    assert by_id["item-000002"]["override_note"] == "'=HYPERLINK(\"http://evil\",\"click\")"
    assert by_id["item-000005"]["reviewer"] == "'@bob"
    assert by_id["item-000006"]["override_note"] == "'-careful\ttab"
    final = final_labels(db, run.run_id)
    assert [r[0] for r in body] == list(final["item_id"])
    assert [by_id[i]["final_label"] for i in final["item_id"]] == list(final["final_label"])
    for item in run.items:
        v = run.verdicts[(item.id, "alpha")]
        cell = by_id[item.id]["alpha: label"]
        assert _unescape(cell) == (v.label if v.ok else f"failed: {v.failure}")


def test_jsonl_round_trip(db, run):
    lines = export_bytes(db, run.run_id, "jsonl").decode("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    frame = export_frame(db, run.run_id)
    assert len(records) == len(frame) == 30
    first = records[2]
    assert first["item_id"] == "item-000002"
    assert first["override_note"] == '=HYPERLINK("http://evil","click")'  # JSON is not escaped
    assert first["final_label"] == "SPLIT" and first["overridden"] is True
    for record, (_, row) in zip(records, frame.iterrows()):
        assert record["final_label"] == row["final_label"]
        assert record["alpha: confidence"] == (None if pd.isna(row["alpha: confidence"])
                                               else row["alpha: confidence"])


def test_parquet_round_trip(db, run, tmp_path):
    out = tmp_path / "labels.parquet"
    export_run(db, run.run_id, "parquet", out)
    table = pq.read_table(out)
    assert table.schema.metadata[b"jurybox_export_version"] == b"1"
    back = table.to_pandas()
    expected = export_frame(db, run.run_id)
    assert list(back.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(back.reset_index(drop=True), expected.reset_index(drop=True),
                                  check_dtype=False)


def test_unknown_format(db, run, tmp_path):
    with pytest.raises(StorageError, match="csv, jsonl, parquet"):
        export_run(db, run.run_id, "xlsx", tmp_path / "x.xlsx")


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_a_planted_key_never_reaches_an_export(db, run, fmt):
    leaky = Verdict(critic="alpha", item_id="item-000001", label="KEEP", reasoning="fine",
                    raw_request={"headers": {"Authorization": f"Bearer {PLANTED_KEY}"}},
                    raw_response="ok")
    write_verdicts(db, run.run_id, [leaky], replace_success=True)
    assert PLANTED_KEY.encode() not in export_bytes(db, run.run_id, fmt)
