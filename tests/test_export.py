"""Exports: final labels with one column per critic; CSV safe for spreadsheets; no keys."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from judging.verdicts import Verdict
from storage.db import StorageError
from storage.results.calls import write_verdicts
from storage.results.export_files import (
    EXPORT_SCHEMA_VERSION,
    ExportOptions,
    escape_cell,
    export_bytes,
    export_frame,
    export_run,
    override_history_bytes,
)
from storage.reviewing.overrides import add_override, final_labels
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
    [("=1+1", "'=1+1"), ("+1 agreed", "'+1 agreed"), ("-1+1|cmd", "'-1+1|cmd"),
     ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("\rx", "'\rx"), ("plain", "plain"),
     ("a=b", "a=b"), (3.5, 3.5), (None, None),
     # A plain number is a value, not a formula; a line inside a cell is not its start.
     ("-1", "-1"), ("+2.5e-3", "+2.5e-3"), ("a\n=1+1", "a\n=1+1"), ("a\r-b", "a\r-b")],
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
        row = by_id[item.id]
        # A failure is never a label: its kind sits in its own column, the label cell is empty.
        assert _unescape(row["alpha: label"]) == (v.label if v.ok else "")
        assert row["alpha: failure"] == ("" if v.ok else str(v.failure))
    assert any(not v.ok for v in run.verdicts.values())  # the seed holds failures to check


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
    assert table.schema.metadata[b"jurybox_export_version"] == str(EXPORT_SCHEMA_VERSION).encode()
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


def test_no_failure_text_in_any_label_column(db, run):
    frame = export_frame(db, run.run_id)
    labels = frame[[c for c in frame.columns if c.endswith(": label")]]
    assert not labels.apply(lambda col: col.astype(str).str.startswith("failed")).any().any()
    failures = frame["alpha: failure"].dropna()
    assert set(failures) == {"parse_fail"} and len(failures) > 0


def test_curation_options_add_fields_reasoning_and_the_whole_history(db, run):
    add_override(db, run.run_id, "item-000002", "MERGE", "second thoughts", "carla")
    plain = export_frame(db, run.run_id)
    assert not [c for c in plain.columns if c.startswith("field: ") or c.endswith(": reasoning")]
    assert "override_history" not in plain.columns

    full = export_frame(db, run.run_id, ExportOptions(fields=True, reasoning=True, history=True))
    by_id = full.set_index("item_id")
    item = run.items[2]
    assert by_id.loc[item.id, "field: text"] == item.fields["text"]
    assert by_id.loc[item.id, "field: n"] == item.fields["n"]
    for (item_id, critic), verdict in run.verdicts.items():
        reason = by_id.loc[item_id, f"{critic}: reasoning"]
        assert (reason if isinstance(reason, str) else None) == verdict.reasoning
    history = by_id.loc[item.id, "override_history"]
    assert [(h["label"], h["reviewer"]) for h in history] == [("SPLIT", "ann"), ("MERGE", "carla")]
    assert by_id.loc[item.id, "final_label"] == "MERGE"
    assert by_id.loc["item-000001", "override_history"] == []


def test_history_in_each_format(db, run):
    add_override(db, run.run_id, "item-000002", "MERGE", "second thoughts", "carla")
    options = ExportOptions(history=True)
    records = [json.loads(line) for line in
               export_bytes(db, run.run_id, "jsonl", options).decode("utf-8").splitlines()]
    assert [h["label"] for h in records[2]["override_history"]] == ["SPLIT", "MERGE"]
    rows = list(csv.DictReader(io.StringIO(export_bytes(db, run.run_id, "csv", options).decode())))
    assert [h["label"] for h in json.loads(rows[2]["override_history"])] == ["SPLIT", "MERGE"]
    table = pq.read_table(io.BytesIO(export_bytes(db, run.run_id, "parquet", options)))
    cell = table.column("override_history").to_pylist()[2]  # a list of records, not JSON text
    assert [h["label"] for h in cell] == ["SPLIT", "MERGE"]


def test_fields_and_reasoning_are_escaped_in_csv(db):
    run = seed_run(db, 6, critics=("alpha",), fail_rate=0.0,
                   reasoning=lambda i, c: "=HYPERLINK(\"http://evil\")",
                   text=lambda i: "@SUM(A1:A9)")
    body = export_bytes(db, run.run_id, "csv", ExportOptions(fields=True, reasoning=True))
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    assert rows[0]["field: text"] == "'@SUM(A1:A9)"
    assert rows[0]["alpha: reasoning"] == "'=HYPERLINK(\"http://evil\")"


def test_override_history_file_has_every_decision_in_order(db, run):
    add_override(db, run.run_id, "item-000002", "MERGE", "second thoughts", "carla")
    lines = [json.loads(line) for line in
             override_history_bytes(db, run.run_id).decode("utf-8").splitlines()]
    assert [(h["item_id"], h["label"]) for h in lines] == [
        ("item-000002", "SPLIT"), ("item-000005", "KEEP"), ("item-000006", "REJECT"),
        ("item-000002", "MERGE")]
    assert lines[0]["note"] == '=HYPERLINK("http://evil","click")'
