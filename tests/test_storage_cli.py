"""The CLI on the database: judge/demo write runs, `runs` lists them, `resume` finishes an
interrupted run, `export` writes final labels."""

from __future__ import annotations

import csv
import json
import pathlib

import pytest

from judging.runs.commands.cli import main
from storage.db import open_db
from storage.results.runs import get_run, list_runs, set_run_status


def _judge_files(tmp_path: pathlib.Path, base_url: str) -> tuple[pathlib.Path, pathlib.Path]:
    data = tmp_path / "d.csv"
    data.write_text("id,text,gold\n" + "".join(f"r{i},=cmd {i},KEEP\n" for i in range(20)),
                    encoding="utf-8")
    panel = tmp_path / "p.yaml"
    panel.write_text(
        "schema_version: 1\nname: cli panel\nscale: {kind: nominal, labels: [KEEP, REJECT]}\n"
        "critics:\n"
        + "".join(
            f"  - {{name: c{i}, vendor: custom, base_url: '{base_url}', model: m{i},"
            " prompt_template: 'Judge {text}'}\n"
            for i in range(2)
        ),
        encoding="utf-8",
    )
    return data, panel


def test_judge_writes_a_run_to_the_database(tmp_path, simulator, capsys):
    data, panel = _judge_files(tmp_path, simulator.base_url)
    db_path = tmp_path / "runs.db"
    code = main(["judge", "--data", str(data), "--panel", str(panel), "--db", str(db_path),
                 "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Run 1 (database" in out and "20 items, 2 critics" in out
    db = open_db(db_path)
    run = get_run(db, 1)
    assert run["status"] == "done" and run["ok_calls"] + run["failed_calls"] == 40
    assert db.execute("SELECT count(*) FROM consensus WHERE run_id = 1").fetchone()[0] == 20

    # The same file and panel again: the dataset is recognised and every call is a cache hit.
    served = simulator.stats()["total"]
    assert main(["judge", "--data", str(data), "--panel", str(panel), "--db", str(db_path),
                 "--quiet"]) == 0
    assert simulator.stats()["total"] - served <= 40 - run["ok_calls"]  # only failures resent
    assert db.execute("SELECT count(*) FROM datasets").fetchone()[0] == 1
    assert [r["id"] for r in list_runs(db)] == [2, 1]

    capsys.readouterr()
    assert main(["runs", "--db", str(db_path)]) == 0
    listing = capsys.readouterr().out
    assert "cli panel" in listing and "done" in listing


def test_a_limited_run_stores_its_items_under_a_name_of_their_own(tmp_path, simulator, capsys):
    """`--limit N` judges the first N rows, kept as a dataset named for what it is (it was
    stored under the full file's name, two datasets told apart by nothing but their size)."""
    data, panel = _judge_files(tmp_path, simulator.base_url)
    db_path = tmp_path / "runs.db"
    for limit in (["--limit", "5"], []):
        assert main(["judge", "--data", str(data), "--panel", str(panel), "--db", str(db_path),
                     "--quiet", *limit]) == 0
    assert "Judging the first 5 of 20 items" in capsys.readouterr().out
    names = {row[0]: row[1] for row in open_db(db_path).execute(
        "SELECT name, n_items FROM datasets")}
    assert names == {"d.csv (first 5 of 20)": 5, "d.csv": 20}


def test_demo_uses_JURYBOX_DB_by_default(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "env.db"))
    assert main(["demo", "--limit", "6", "--quiet"]) == 0
    assert "6 items, 4 critics" in capsys.readouterr().out
    assert get_run(open_db(tmp_path / "env.db"), 1)["status"] == "done"


def test_resume_finishes_an_interrupted_run(tmp_path, simulator, capsys):
    data, panel = _judge_files(tmp_path, simulator.base_url)
    db_path = tmp_path / "runs.db"
    assert main(["judge", "--data", str(data), "--panel", str(panel), "--db", str(db_path),
                 "--quiet", "--limit", "10"]) == 0
    db = open_db(db_path)
    # As if the process had died mid-run: some verdicts gone, the row still "running", its
    # owner a process that no longer exists.
    db.execute("DELETE FROM calls WHERE run_id = 1 AND item_id IN ('r7', 'r8', 'r9')")
    set_run_status(db, 1, "running")
    db.execute("UPDATE runs SET owner_pid = 2147480000 WHERE id = 1")
    served = simulator.stats()["total"]
    capsys.readouterr()
    assert main(["resume", "1", "--db", str(db_path), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "Run 1 was interrupted" in captured.err
    assert simulator.stats()["total"] - served == 6  # 3 items x 2 critics, nothing else
    assert get_run(db, 1)["status"] == "done"
    assert main(["resume", "1", "--db", str(db_path)]) == 1
    assert "is done" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export(tmp_path, simulator, capsys, fmt):
    data, panel = _judge_files(tmp_path, simulator.base_url)
    db_path = tmp_path / "runs.db"
    assert main(["judge", "--data", str(data), "--panel", str(panel), "--db", str(db_path),
                 "--quiet"]) == 0
    out = tmp_path / f"labels.{fmt}"
    assert main(["export", "1", "--format", fmt, "--out", str(out), "--db", str(db_path)]) == 0
    assert f"Wrote 20 rows of run 1 to {out}" in capsys.readouterr().out
    if fmt == "csv":
        rows = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
        assert [r["item_id"] for r in rows] == [f"r{i}" for i in range(20)]
        assert {"c0: label", "c1: confidence"} <= set(rows[0])
    elif fmt == "jsonl":
        assert len([json.loads(line) for line in out.read_text().splitlines()]) == 20
    else:
        import pyarrow.parquet as pq

        assert pq.read_table(out).num_rows == 20


def test_export_for_curation_has_the_fields_reasoning_and_override_history(
    tmp_path, simulator, capsys
):
    from storage.reviewing.overrides import add_override

    data, panel = _judge_files(tmp_path, simulator.base_url)
    db_path = tmp_path / "runs.db"
    assert main(["judge", "--data", str(data), "--panel", str(panel), "--db", str(db_path),
                 "--quiet"]) == 0
    db = open_db(db_path)
    add_override(db, 1, "r3", label="REJECT", note="first look", reviewer="ana")
    add_override(db, 1, "r3", label="KEEP", note="second look", reviewer="ben")
    plain, curated = tmp_path / "plain.jsonl", tmp_path / "curated.jsonl"
    assert main(["export", "1", "--out", str(plain), "--db", str(db_path)]) == 0
    assert main(["export", "1", "--out", str(curated), "--db", str(db_path),
                 "--fields", "--reasoning", "--history"]) == 0
    (row_plain,) = [json.loads(r) for r in plain.read_text().splitlines()
                    if json.loads(r)["item_id"] == "r3"]
    (row,) = [json.loads(r) for r in curated.read_text().splitlines()
              if json.loads(r)["item_id"] == "r3"]
    added = set(row) - set(row_plain)
    assert added == {"field: text", "c0: reasoning", "c1: reasoning", "override_history"}
    assert row["field: text"] == "=cmd 3"  # JSONL is not a spreadsheet: no formula escaping
    assert [(o["label"], o["note"], o["reviewer"]) for o in row["override_history"]] == \
        [("REJECT", "first look", "ana"), ("KEEP", "second look", "ben")]
    assert row["final_label"] == "KEEP"


def test_unknown_run_is_one_sentence(tmp_path, capsys):
    open_db(tmp_path / "e.db").close()
    assert main(["export", "9", "--out", str(tmp_path / "x.csv"), "--db", str(tmp_path / "e.db")]) == 1
    err = capsys.readouterr().err
    assert "no run with id 9" in err and "Traceback" not in err


def test_reading_a_database_that_does_not_exist_creates_none(tmp_path, capsys):
    missing = tmp_path / "typo.db"
    assert main(["export", "1", "--out", str(tmp_path / "x.csv"), "--db", str(missing)]) == 2
    assert "There is no database" in capsys.readouterr().err
    assert not missing.exists()


def _alpha_from_db(db_path: pathlib.Path, run_id: int) -> float | None:
    """Alpha straight from the stored calls (one unit per item, one rating per critic, a
    failure as a missing value), independent of the report's own assembly."""
    from judging.agreement import krippendorff_alpha

    db = open_db(db_path)
    critics = get_run(db, run_id)["critics"]
    units: dict[str, list[str | None]] = {}
    for item_id, critic, label, failure in db.execute(
        "SELECT item_id, critic, label, failure FROM calls WHERE run_id = ?", [run_id]
    ):
        units.setdefault(item_id, [None] * len(critics))[critics.index(critic)] = (
            label if failure is None else None
        )
    db.close()
    return krippendorff_alpha(list(units.values()), level="nominal")


def test_stats_prints_the_alpha_of_the_stored_ratings(tmp_path, capsys):
    db_path = tmp_path / "stats.db"
    assert main(["demo", "--limit", "30", "--quiet", "--db", str(db_path)]) == 0
    db = open_db(db_path)
    item = db.execute("SELECT item_id FROM consensus WHERE run_id = 1 LIMIT 1").fetchone()[0]
    db.close()
    from storage.reviewing.overrides import add_override

    db = open_db(db_path)
    add_override(db, 1, item, "KEEP", note="checked", reviewer="ana")
    db.close()
    capsys.readouterr()

    assert main(["stats", "1", "--db", str(db_path), "--resamples", "200", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    expected = _alpha_from_db(db_path, 1)
    assert expected is not None
    line = next(x for x in out.splitlines() if x.startswith("Krippendorff's alpha:"))
    assert float(line.split(":")[1].split()[0]) == pytest.approx(expected, abs=5e-5)
    assert "30 items, 4 critics (nominal level)" in out
    assert "200 resamples, seed 3" in out
    assert "n=1" in out  # the one override is the humans' reference for every critic
    assert "Pairwise Cohen's kappa:" in out

    # The same seed gives the same interval.
    assert main(["stats", "1", "--db", str(db_path), "--resamples", "200", "--seed", "3"]) == 0
    assert capsys.readouterr().out == out


def test_stats_of_an_unknown_run_is_one_sentence_and_exit_2(tmp_path, capsys):
    open_db(tmp_path / "e.db").close()
    assert main(["stats", "9", "--db", str(tmp_path / "e.db")]) == 2
    err = capsys.readouterr().err
    assert "no run with id 9" in err and "jurybox runs" in err and "Traceback" not in err
