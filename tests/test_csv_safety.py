"""Every CSV that Jurybox writes (the export, the CLI's export, the curated taxonomy, the
comparisons of `jurybox pairs`) keeps one item per row: a cell with CR, LF, a quote or a comma
is quoted. A spreadsheet-safe CSV opens no formula (a cell whose first character is = + - @ tab
or CR gets a leading single quote) and changes nothing else, not a line inside a cell; an
exact CSV reads back as the data, byte for byte."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import pathlib
import re
import shutil
from typing import Any

import pandas as pd
import pytest

from judging.runs.commands.cli import main as cli_main
from storage.datasets.dataset_store import load_items
from storage.db import open_db
from storage.results.export_files import (
    ExportOptions,
    csv_bytes,
    csv_cell,
    escaped_cells,
    export_bytes,
    export_frame,
)
from storage.reviewing.overrides import add_override

N = 10
STARTERS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?[0-9.]+")
# What a hostile dataset puts in a field: a bare CR before a formula, and the other breaks.
HOSTILE = ("note {i}\r=1+1", "a\n+2", "\r@SUM(A1)", 'say "hi"\r\n-3', "\t=tab", "ok, fine")


def check_safe(body: bytes, rows: int) -> pd.DataFrame:
    """The CSV reads back as `rows` rows (pandas and the csv module agree) and no cell starts
    like a formula."""
    text = body.decode("utf-8")
    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert len(frame) == rows
    assert len(list(csv.reader(io.StringIO(text, newline="")))) == rows + 1
    for value in [*frame.columns, *frame.to_numpy().ravel()]:
        # A plain number ("-8") is a value a spreadsheet shows, not a formula it runs.
        assert not str(value).startswith(STARTERS) or NUMBER.fullmatch(str(value)), repr(value)
    return frame


@pytest.mark.parametrize(("value", "cell"), [
    # Only the first character counts: a line inside a cell is the data, left alone.
    ("x\r=1+1", "\"x\r=1+1\""),
    ("=1+1", "'=1+1"),
    ("\r=1", "\"'\r=1\""),
    ("a\r\n-2", "\"a\r\n-2\""),
    ("are:\n\n- January 1, 1901", "\"are:\n\n- January 1, 1901\""),
    ("-1 point", "'-1 point"),
    ('say "hi"', '"say ""hi"""'),
    ("a,b", '"a,b"'),
    ("plain", "plain"),
    ("a=b", "a=b"),
    (["Trail shoes", "Road shoes"], "Trail shoes; Road shoes"),
    (["=A", "B"], "'=A; B"),
    (None, ""),
    (float("nan"), ""),
    (0.5, "0.5"),
    (-0.5, "-0.5"),  # a number is not text a spreadsheet could run
    (True, "True"),
])
def test_csv_cell(value: Any, cell: str) -> None:
    assert csv_cell(value) == cell


@pytest.mark.parametrize(("value", "cell"), [
    ("=1+1", "=1+1"),
    ("\r=1", "\"\r=1\""),
    ("a\r\n-2", "\"a\r\n-2\""),
    ('say "hi"', '"say ""hi"""'),
    (["=A", "B"], "=A; B"),
    ("plain", "plain"),
])
def test_an_exact_csv_cell_is_the_data(value: Any, cell: str) -> None:
    assert csv_cell(value, "exact") == cell


# What a model's answer or a dataset holds: every kind of line break, a line or a text starting
# like a formula, quotes, commas and text beyond ASCII.
TEXTS = (
    "The holidays are:\n\n- January 1, 1901\n- July 4",
    "=SUM(A1:A9)",
    "+44 20 7946 0958",
    "-3 degrees",
    "@channel please look",
    "\tindented",
    "\rstarts with a bare CR",
    "a bare CR\rthen =1+1",
    "Windows lines\r\n- one\r\n- two\r\n",
    'say "hi", then ""leave""',
    "naïve café – 東京 🎉, ok",
    "trailing spaces  ",
    "ends with a break\n",
)


def _read_exact(body: bytes) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False)


def test_an_exact_export_reads_back_as_the_imported_texts(db: Any, seed_run: Any) -> None:
    run = seed_run(db, len(TEXTS), critics=("alpha",), fail_rate=0.0,
                   text=lambda i: TEXTS[i], reasoning=lambda i, c: TEXTS[-1 - i])
    add_override(db, run.run_id, "item-000001", "KEEP", TEXTS[0], "ann")
    options = ExportOptions(fields=True, reasoning=True, csv_style="exact")
    frame = _read_exact(export_bytes(db, run.run_id, "csv", options))
    stored = {item.id: item.fields["text"] for item in load_items(db, run.dataset_id)}
    assert list(frame["item_id"]) == list(stored)
    assert list(frame["field: text"]) == [stored[i] for i in frame["item_id"]] == list(TEXTS)
    assert list(frame["alpha: reasoning"]) == list(reversed(TEXTS))
    assert frame.loc[1, "override_note"] == TEXTS[0]


def test_escaped_cells_counts_what_a_spreadsheet_csv_changes(db: Any, seed_run: Any) -> None:
    run = seed_run(db, len(TEXTS), critics=("alpha",), fail_rate=0.0, text=lambda i: TEXTS[i])
    options = ExportOptions(fields=True)
    safe = _read_exact(export_bytes(db, run.run_id, "csv", options))
    exact = _read_exact(export_bytes(
        db, run.run_id, "csv", dataclasses.replace(options, csv_style="exact")))
    changed = (safe != exact).to_numpy().sum()
    # By hand: = + - @ tab CR first, six of the texts; the list and the Windows lines are not.
    assert changed == 6
    assert escaped_cells(export_frame(db, run.run_id, options)) == 6
    different = safe["field: text"] != exact["field: text"]
    assert (safe["field: text"][different] == "'" + exact["field: text"][different]).all()


def test_the_cli_writes_an_exact_csv_of_the_file_it_judged(tmp_path: pathlib.Path) -> None:
    from judging.demo import demo_panel_path

    data, db_path, out = tmp_path / "classes.jsonl", tmp_path / "cli.db", tmp_path / "out.csv"
    data.write_text("".join(json.dumps({
        "id": f"C-{i:03d}", "candidate_class": text, "parent": "-Root",
        "description": "x", "example_members": "a; b", "existing_siblings": "c; d"},
        ensure_ascii=False) + "\n" for i, text in enumerate(TEXTS)), encoding="utf-8")
    assert cli_main(["judge", "--data", str(data), "--panel", str(demo_panel_path()),
                     "--quiet", "--db", str(db_path)]) == 0
    assert cli_main(["export", "1", "--out", str(out), "--fields", "--csv", "exact",
                     "--db", str(db_path)]) == 0
    frame = _read_exact(out.read_bytes())
    assert list(frame["field: candidate_class"]) == list(TEXTS)
    assert set(frame["field: parent"]) == {"-Root"}


def test_the_export_keeps_one_row_per_item(db: Any, seed_run: Any) -> None:
    run = seed_run(db, N, critics=("alpha", "beta"), fail_rate=0.0,
                   text=lambda i: HOSTILE[i % len(HOSTILE)].format(i=i),
                   reasoning=lambda i, c: f"because\r={c}")
    add_override(db, run.run_id, "item-000001", "KEEP", "fine\r+1", "ann")
    body = export_bytes(db, run.run_id, "csv",
                        ExportOptions(fields=True, reasoning=True, history=True, curation=True))
    frame = check_safe(body, N)
    assert list(frame["item_id"]) == [item.id for item in run.items]
    # Only a first character is neutralised; a line inside a cell is the data, untouched.
    assert frame.loc[0, "field: text"] == "note 0\r=1+1"
    assert frame.loc[1, "override_note"] == "fine\r+1"
    assert frame.loc[2, "field: text"] == "'\r@SUM(A1)"


def test_the_cli_judges_and_exports_one_row_per_item(tmp_path: pathlib.Path) -> None:
    from judging.demo import demo_panel_path

    data, db_path, out = tmp_path / "classes.jsonl", tmp_path / "cli.db", tmp_path / "out.csv"
    data.write_text("".join(json.dumps({
        "id": f"C-{i:03d}", "candidate_class": HOSTILE[i % len(HOSTILE)].format(i=i),
        "parent": "-Root", "description": "x\r=HYPERLINK(\"http://evil\")",
        "example_members": "a; b", "existing_siblings": "c; d"}) + "\n" for i in range(N)),
        encoding="utf-8")
    assert cli_main(["judge", "--data", str(data), "--panel", str(demo_panel_path()),
                     "--quiet", "--db", str(db_path)]) == 0
    assert cli_main(["export", "1", "--out", str(out), "--fields", "--reasoning", "--history",
                     "--db", str(db_path)]) == 0
    frame = check_safe(out.read_bytes(), N)
    assert list(frame["item_id"]) == [f"C-{i:03d}" for i in range(N)]


def test_the_curated_taxonomy_csv(
    demo_db_template: tuple[pathlib.Path, int], tmp_path: pathlib.Path
) -> None:
    template, run_id = demo_db_template
    path = tmp_path / "demo.db"
    shutil.copyfile(template, path)
    db = open_db(path)
    add_override(db, run_id, "TX-0001", "SPLIT", "two\r=kinds", "ann",
                 children=["=Trail", "Road\r@shoes"])
    db.close()
    out = tmp_path / "taxonomy.csv"
    assert cli_main(["taxonomy", str(run_id), "--out", str(out), "--db", str(path)]) == 0
    frame = check_safe(out.read_bytes(), 300)
    split = frame[frame["item_id"] == "TX-0001"].iloc[0]
    assert split["children"] == "'=Trail; Road\r@shoes"


def test_the_pairs_csv(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "answers.jsonl"
    data.write_text("".join(
        json.dumps({"id": f"q{i}", "question": HOSTILE[i % len(HOSTILE)].format(i=i),
                    "a": f"yes\r=A{i}", "b": f"-{i}"}) + "\n" for i in range(N)),
        encoding="utf-8")
    out = tmp_path / "pairs.csv"
    assert cli_main(["pairs", "--data", str(data), "--responses", "a,b", "--out", str(out)]) == 0
    check_safe(out.read_bytes(), N)  # two systems: one comparison per item


def test_escaped_cells_counts_text_and_mixed_columns_alike() -> None:
    frame = pd.DataFrame({
        "a": pd.Series(["=x", "-1", "a\n-b", None, "@y"], dtype="str"),
        "b": pd.Series(["=x", ["=A", "B"], 3, "-2 x", None], dtype=object),
        "=h": [1, -2, 3, 4, 5]})
    # By hand: the header "=h"; in a "=x" and "@y" ("-1" is a number, "a\n-b" starts with a);
    # in b "=x", the list "=A; B" and "-2 x".
    assert escaped_cells(frame) == 6
    safe, exact = (_read_exact(csv_bytes(frame, style)) for style in ("spreadsheet", "exact"))
    changed = (safe.to_numpy() != exact.to_numpy()).sum()
    assert changed + sum(s != e for s, e in zip(safe.columns, exact.columns, strict=True)) == 6
