"""The Datasets page shows the importer's sentence for hostile uploads, and saves nothing.

Some files are refused by the preview (what the first rows or the file's footer show), others
only when Import is pressed (a problem further down); both must end as one error sentence.
"""

from __future__ import annotations

import pathlib

import pytest
from streamlit.testing.v1 import AppTest

from storage.datasets.dataset_store import list_datasets
from storage.db import open_db
from tests.fixtures_app import shown
from tests.hostile_imports import CASES

APP = pathlib.Path(__file__).resolve().parent.parent / "app.py"
BY_ID = {case.id: case for case in CASES}


def _upload(name: str, content: bytes, mime: str = "application/octet-stream") -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/datasets.py")
    at.run()
    at.file_uploader(key="dataset_upload").upload(name, content, mime).run()
    assert not at.exception, [e.value for e in at.exception]
    if not at.error:  # the preview saw nothing wrong: the import must
        at.button(key="FormSubmitter:mapping-Import").click().run()
        assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize(
    ("case_id", "expected"),
    [
        ("xlsx-formula-without-result", "the cell holds a formula (=1+1) but no saved result"),
        ("parquet-3m-rows", "has 3,000,000 rows, more than the limit of 500,000"),
        ("xlsx-150mb-shared-string", "row 2, column B ('text'): a value is longer than the limit"),
    ],
)
def test_a_hostile_file_refused_by_the_preview(
    app_db: pathlib.Path, case_id: str, expected: str
) -> None:
    case = BY_ID[case_id]
    at = _upload(case.filename, case.make())
    assert at.error, "the page must show why the file was refused"
    message = shown(at.error[0].value)
    assert message.startswith(f"{case.filename} cannot be imported: {case.filename}"), message
    assert expected in message
    assert list_datasets(open_db(app_db)) == []


def test_a_problem_past_the_preview_is_refused_on_import(app_db: pathlib.Path) -> None:
    lines = [f'{{"id": {n}, "text": "fine"}}' for n in range(1, 31)]
    lines[29] = '{"id": 30, "text": "a", "text": "b"}'  # row 30: the preview shows 20
    at = _upload("late.jsonl", "\n".join(lines).encode(), "application/json")
    assert at.error, "the import must show why the file was refused"
    message = shown(at.error[0].value)
    # Refused when the whole file is read (at the preview or at the import): either way the
    # sentence names the file and the line, and nothing is stored.
    assert message.startswith("late.jsonl ") and "late.jsonl, line 30" in message, message
    assert "the key 'text' appears twice" in message
    assert list_datasets(open_db(app_db)) == []


def test_an_operator_limit_applies_to_uploads(
    app_db: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JURYBOX_MAX_ROWS", "2")
    at = _upload("three.csv", b"id,text\n1,a\n2,b\n3,c\n", "text/csv")
    assert at.error
    assert "three.csv has more than 2 data rows" in shown(at.error[0].value)
    assert "JURYBOX_MAX_ROWS" in shown(at.error[0].value)
    assert list_datasets(open_db(app_db)) == []


def test_a_malformed_limit_variable_is_a_sentence(
    app_db: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JURYBOX_MAX_CELL_CHARS", "lots")
    at = _upload("fine.csv", b"id,text\n1,a\n", "text/csv")
    assert at.error
    assert "JURYBOX_MAX_CELL_CHARS must be a whole number above 0, not 'lots'" in shown(at.error[0].value)
