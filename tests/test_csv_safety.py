"""Every CSV that Jurybox writes (the export, the CLI's export, the curated taxonomy, the
comparisons of `jurybox pairs`) keeps one item per row and opens no formula: a cell with CR,
LF, a quote or a comma is quoted, and a cell or a line inside a cell that starts with
= + - @ tab or CR gets a leading single quote."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import re
import shutil
from typing import Any

import pandas as pd
import pytest

from judging.runs.cli import main as cli_main
from storage.db import open_db
from storage.export_files import ExportOptions, csv_cell, export_bytes
from storage.overrides import add_override

N = 10
STARTERS = ("=", "+", "-", "@", "\t", "\r")
# What a hostile dataset puts in a field: a bare CR before a formula, and the other breaks.
HOSTILE = ("note {i}\r=1+1", "a\n+2", "\r@SUM(A1)", 'say "hi"\r\n-3', "\t=tab", "ok, fine")


def check_safe(body: bytes, rows: int) -> pd.DataFrame:
    """The CSV reads back as `rows` rows (pandas and the csv module agree), no cell starts
    like a formula, and a reader that breaks lines at CR or LF sees no line that does."""
    text = body.decode("utf-8")
    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert len(frame) == rows
    assert len(list(csv.reader(io.StringIO(text, newline="")))) == rows + 1
    for value in [*frame.columns, *frame.to_numpy().ravel()]:
        assert not str(value).startswith(STARTERS), repr(value)
    for line in re.split(r"\r|\n", text):
        assert not line.startswith(("=", "+", "-", "@")), repr(line)
    return frame


@pytest.mark.parametrize(("value", "cell"), [
    ("x\r=1+1", "\"x\r'=1+1\""),
    ("=1+1", "\"'=1+1\""),
    ("\r=1", "\"'\r'=1\""),
    ("a\r\n-2", "\"a\r\n'-2\""),
    ('say "hi"', '"say ""hi"""'),
    ("a,b", '"a,b"'),
    ("plain", "plain"),
    ("a=b", "a=b"),
    (["Trail shoes", "Road shoes"], "Trail shoes; Road shoes"),
    (["=A", "B"], "\"'=A; B\""),
    (None, ""),
    (float("nan"), ""),
    (0.5, "0.5"),
    (True, "True"),
])
def test_csv_cell(value: Any, cell: str) -> None:
    assert csv_cell(value) == cell


def test_the_export_keeps_one_row_per_item(db: Any, seed_run: Any) -> None:
    run = seed_run(db, N, critics=("alpha", "beta"), fail_rate=0.0,
                   text=lambda i: HOSTILE[i % len(HOSTILE)].format(i=i),
                   reasoning=lambda i, c: f"because\r={c}")
    add_override(db, run.run_id, "item-000001", "KEEP", "fine\r+1", "ann")
    body = export_bytes(db, run.run_id, "csv",
                        ExportOptions(fields=True, reasoning=True, history=True, curation=True))
    frame = check_safe(body, N)
    assert list(frame["item_id"]) == [item.id for item in run.items]
    # Neutralised, not lost: the text is there after the quote marks.
    assert frame.loc[0, "field: text"] == "note 0\r'=1+1"
    assert frame.loc[1, "override_note"] == "fine\r'+1"


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
    assert split["children"] == "'=Trail; Road\r'@shoes"


def test_the_pairs_csv(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "answers.jsonl"
    data.write_text("".join(
        json.dumps({"id": f"q{i}", "question": HOSTILE[i % len(HOSTILE)].format(i=i),
                    "a": f"yes\r=A{i}", "b": f"-{i}"}) + "\n" for i in range(N)),
        encoding="utf-8")
    out = tmp_path / "pairs.csv"
    assert cli_main(["pairs", "--data", str(data), "--responses", "a,b", "--out", str(out)]) == 0
    check_safe(out.read_bytes(), N)  # two systems: one comparison per item
