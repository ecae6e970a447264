"""One id rule for the app and the CLI: `jurybox judge` without `--id-column` takes the column
the Datasets page guesses (id, key, `*_id` such as review_id, with unique values), so what the
CLI exports joins back to the user's rows; `--id-column` still decides."""

from __future__ import annotations

import csv
import io
import json
import pathlib

import pytest
from streamlit.testing.v1 import AppTest

from judging.demo import demo_panel_path
from judging.errors import DataError
from judging.runs.commands.cli import main as cli_main
from judging.runs.commands.cli_runs import read_for_cli
from storage.datasets.dataset_store import list_datasets, load_items
from storage.db import open_db
from storage.results.runs import get_run

APP = pathlib.Path(__file__).resolve().parent.parent / "app.py"
FIELDS = ("candidate_class", "parent", "description", "example_members", "existing_siblings")


def reviews_csv(n: int = 12, *, review_ids: list[str] | None = None) -> bytes:
    """A review table: a `user_id` that repeats (not an item id), then `review_id`, the demo
    panel's fields and a gold label."""
    ids = review_ids or [f"rv-{7 * i + 3}" for i in range(n)]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["user_id", "review_id", *FIELDS, "gold"])
    for i, review_id in enumerate(ids):
        writer.writerow([f"u{i % 3}", review_id, f"Class {i}", "Shop > Things", "A kind.",
                         "a; b", "c; d", "KEEP"])
    return buffer.getvalue().encode("utf-8")


def test_judge_numbers_items_by_the_review_id_column(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, db_path, out = tmp_path / "reviews.csv", tmp_path / "cli.db", tmp_path / "out.jsonl"
    data.write_bytes(reviews_csv())
    assert cli_main(["judge", "--data", str(data), "--panel", str(demo_panel_path()), "--quiet",
                     "--db", str(db_path), "--out", str(out)]) == 0
    assert "Item ids: column 'review_id' (guessed" in capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(data.read_text(encoding="utf-8"))))
    written = [json.loads(line)["item_id"] for line in out.read_text().splitlines()]
    assert written == [row["review_id"] for row in rows]  # joins back, row for row
    exported = tmp_path / "labels.csv"
    assert cli_main(["export", "1", "--out", str(exported), "--db", str(db_path)]) == 0
    labels = list(csv.DictReader(io.StringIO(exported.read_text(encoding="utf-8"))))
    assert [row["item_id"] for row in labels] == [row["review_id"] for row in rows]
    assert [row["gold"] for row in labels] == ["KEEP"] * len(rows)


def test_the_app_and_the_cli_give_the_same_ids(
    app_db: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    body = reviews_csv()
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/datasets.py")
    at.run()
    at.file_uploader(key="dataset_upload").upload("reviews.csv", body, "text/csv").run()
    assert not at.exception and not at.error
    at.button(key="FormSubmitter:mapping-Import").click().run()
    assert not at.exception and not at.error
    app = open_db(app_db)
    (imported,) = list_datasets(app)
    app_ids = [item.id for item in load_items(app, imported["id"])]

    data, db_path = tmp_path / "reviews.csv", tmp_path / "cli.db"
    data.write_bytes(body)
    assert cli_main(["judge", "--data", str(data), "--panel", str(demo_panel_path()), "--quiet",
                     "--db", str(db_path)]) == 0
    cli = open_db(db_path)
    cli_ids = [item.id for item in load_items(cli, get_run(cli, 1)["dataset_id"])]
    assert cli_ids == app_ids == [f"rv-{7 * i + 3}" for i in range(12)]


def test_id_column_still_decides(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "reviews.csv"
    data.write_bytes(reviews_csv(4))
    named = read_for_cli(data, id_column="candidate_class")
    assert [item.id for item in named.items] == [f"Class {i}" for i in range(4)]
    numbered = read_for_cli(data, id_column="")
    assert [item.id for item in numbered.items] == [f"row-{n:06d}" for n in range(1, 5)]
    assert read_for_cli(data).gold_column == "gold"


def test_a_guessed_column_that_repeats_later_says_how_to_choose(tmp_path: pathlib.Path) -> None:
    # Unique over the rows the guess reads, repeated after them: the import refuses it.
    ids = [f"rv-{i}" for i in range(250)] + ["rv-1"]
    data = tmp_path / "reviews.csv"
    data.write_bytes(reviews_csv(review_ids=ids))
    with pytest.raises(DataError, match=r"'review_id' has duplicate ids.*--id-column ''"):
        read_for_cli(data)
