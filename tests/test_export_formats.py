"""Each export format holds what was decided: the Export page's JSONL and Parquet buttons give
JSONL and Parquet (not CSV), and a curation run's split children and merge targets are in the
main export and in the override history, as lists where the format has lists and as "A; B" in
CSV."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import shutil
from collections.abc import Iterator
from typing import Any

import pyarrow.parquet as pq
import pytest

from judging.runs.commands.cli import main as cli_main
from storage.db import open_db
from storage.results.export_files import ExportOptions, export_bytes, override_history_bytes
from storage.reviewing.overrides import add_override
from tests.fixtures_app import running_app, settled

SPLIT_ITEM, MERGE_ITEM = "item-000003", "item-000004"


def _decide(db: Any, run_id: int, split: str, merge: str) -> None:
    """A reviewer splits one class into two and merges another into a third."""
    add_override(db, run_id, split, "SPLIT", "two kinds", "ann",
                 children=["Trail shoes", "Road shoes"])
    add_override(db, run_id, merge, "MERGE", "a duplicate", "ann", merge_into="Sneakers")


def _parse(fmt: str, body: bytes) -> list[dict[str, Any]]:
    """The rows of an export, read by the reader each format has (a wrong format fails)."""
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(body.decode("utf-8"), newline="")))
    if fmt == "jsonl":
        return [json.loads(line) for line in body.decode("utf-8").splitlines()]
    return pq.read_table(io.BytesIO(body)).to_pylist()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_children_and_merge_target_in_every_format(db: Any, seed_run: Any, fmt: str) -> None:
    run = seed_run(db, 8, critics=("alpha", "beta"))
    _decide(db, run.run_id, SPLIT_ITEM, MERGE_ITEM)
    rows = {r["item_id"]: r for r in _parse(fmt, export_bytes(
        db, run.run_id, fmt, ExportOptions(curation=True, history=True)))}
    split, merge, plain = rows[SPLIT_ITEM], rows[MERGE_ITEM], rows["item-000001"]
    if fmt == "csv":  # a readable cell, not JSON text
        assert (split["children"], split["merge_into"]) == ("Trail shoes; Road shoes", "")
        assert (merge["children"], merge["merge_into"]) == ("", "Sneakers")
        assert plain["children"] == ""
        history = json.loads(split["override_history"])  # records stay JSON text in a cell
    else:  # real lists
        assert (split["children"], split["merge_into"]) == (["Trail shoes", "Road shoes"], None)
        assert (merge["children"], merge["merge_into"]) == ([], "Sneakers")
        assert plain["children"] == []
        history = split["override_history"]
        assert merge["override_history"][0]["merge_into"] == "Sneakers"
    assert history[0]["children"] == ["Trail shoes", "Road shoes"]


def test_no_curation_columns_for_a_run_that_does_not_curate(db: Any, seed_run: Any) -> None:
    run = seed_run(db, 4, critics=("alpha",))
    (row, *_) = _parse("jsonl", export_bytes(db, run.run_id, "jsonl"))
    assert "children" not in row and "merge_into" not in row


def test_override_history_file_has_children_and_merge_target(db: Any, seed_run: Any) -> None:
    run = seed_run(db, 8, critics=("alpha",))
    _decide(db, run.run_id, SPLIT_ITEM, MERGE_ITEM)
    lines = [json.loads(line) for line in
             override_history_bytes(db, run.run_id).decode("utf-8").splitlines()]
    assert [(h["item_id"], h["children"], h["merge_into"]) for h in lines] == [
        (SPLIT_ITEM, ["Trail shoes", "Road shoes"], None), (MERGE_ITEM, [], "Sneakers")]


@pytest.fixture
def demo_copy(demo_db_template: tuple[pathlib.Path, int], tmp_path: pathlib.Path
              ) -> tuple[pathlib.Path, int]:
    """A private copy of the finished demo run (a taxonomy curation panel), with a split and a
    merge decided."""
    template, run_id = demo_db_template
    path = tmp_path / "demo.db"
    shutil.copyfile(template, path)
    db = open_db(path)
    try:
        _decide(db, run_id, "TX-0001", "TX-0002")
    finally:
        db.close()
    return path, run_id


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_cli_export_of_a_curation_run_has_the_decisions(
    demo_copy: tuple[pathlib.Path, int], tmp_path: pathlib.Path, fmt: str
) -> None:
    path, run_id = demo_copy
    out = tmp_path / f"out.{fmt}"
    assert cli_main(["export", str(run_id), "--out", str(out), "--db", str(path)]) == 0
    rows = {r["item_id"]: r for r in _parse(fmt, out.read_bytes())}
    children = rows["TX-0001"]["children"]
    assert children == ("Trail shoes; Road shoes" if fmt == "csv"
                        else ["Trail shoes", "Road shoes"])
    assert rows["TX-0002"]["merge_into"] == "Sneakers"


# -- the Export page in a real browser -------------------------------------------------------


@pytest.fixture
def demo_app(demo_copy: tuple[pathlib.Path, int]) -> Iterator[tuple[dict[str, Any], int]]:
    path, run_id = demo_copy
    with running_app(path) as server:
        yield server, run_id


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_each_format_button_downloads_that_format(
    app_page: Any, demo_app: tuple[dict[str, Any], int]
) -> None:
    from playwright.sync_api import expect

    server, run_id = demo_app
    app_page.goto(f"{server['url']}/export?run={run_id}")
    main = app_page.get_by_test_id("stMain")
    for fmt in ("jsonl", "parquet", "csv"):
        main.get_by_test_id("stRadio").get_by_text(fmt, exact=True).click()
        button = main.get_by_role("button", name=f"Download {fmt.upper()}")
        expect(button).to_be_visible()
        settled(app_page)  # the button's file is the one of the run that drew it
        with app_page.expect_download() as info:
            button.click()
        download = info.value
        assert download.suggested_filename == f"jurybox-run-{run_id}.{fmt}"
        rows = _parse(fmt, pathlib.Path(download.path()).read_bytes())
        assert len(rows) == 300
        by_id = {r["item_id"]: r for r in rows}
        assert by_id["TX-0002"]["merge_into"] == "Sneakers"
        assert by_id["TX-0001"]["children"] == ("Trail shoes; Road shoes" if fmt == "csv"
                                                else ["Trail shoes", "Road shoes"])


def test_judge_out_has_the_stored_steps_of_compound_critics(tmp_path: pathlib.Path) -> None:
    from judging.demo import demo_dataset_path
    from storage.results.calls import load_steps

    db_path, out = tmp_path / "cli.db", tmp_path / "out.jsonl"
    assert cli_main(["judge", "--data", str(demo_dataset_path()), "--panel",
                     str(demo_dataset_path().with_name("chains_panel.yaml")), "--limit", "3", "--quiet", "--db", str(db_path),
                     "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    db = open_db(db_path)
    compound = 0
    for row in rows:
        stored = load_steps(db, 1, row["item_id"])
        for verdict in row["verdicts"]:
            steps = stored.get(verdict["critic"], [])
            assert [(s["role"] or None, s["label"], s["reasoning"]) for s in verdict["steps"]] \
                == [(s["role"] or None, s["label"], s["reasoning"]) for s in steps]
            compound += bool(steps)
    assert compound == 3 * 4  # every critic of the chains panel makes more than one call
