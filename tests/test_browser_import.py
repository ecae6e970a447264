"""Bring your own verdicts, in the browser, as a new analyst takes it: a public pairwise
benchmark (LLMBar: 419 pairs, gold labels, five real LLM judges' decisions in both orders) is
uploaded on Datasets, its verdict file is confirmed column by column and imported, and the run it
makes is reviewed (the judges' verdicts and reasoning, an override), measured on Agreement
(alpha, position bias), exported and verified."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
from typing import Any

import pandas as pd
import pytest

from storage.db import open_db
from tests.fixtures_app import choose_option, name_the_reviewer, running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

LLMBAR = pathlib.Path(__file__).parent / "data" / "llmbar"


def _upload(page: Any, path: pathlib.Path) -> None:
    main = page.get_by_test_id("stMain")
    main.get_by_test_id("stFileUploader").locator("input[type=file]").set_input_files(str(path))


def test_llmbar_verdicts_imported_reviewed_measured_exported_and_verified(
        app_page: Any, tmp_path: pathlib.Path) -> None:
    from playwright.sync_api import expect

    page = app_page
    main = page.get_by_test_id("stMain")
    with running_app(tmp_path / "app.db") as app:
        # 1. The items: ids and gold guessed by name.
        page.goto(app["url"] + "/datasets")
        settled(page)
        _upload(page, LLMBAR / "items.jsonl")
        expect(main.get_by_role("combobox", name="Item id column")).to_have_value("id")
        settled(page)
        choose_option(page, main.get_by_role("combobox", name="Gold label column (optional)"),
                      "label")
        settled(page)
        main.get_by_role("button", name="Import", exact=True).click()
        expect(main.get_by_text("Imported 419 items as dataset #1.")).to_be_visible()
        settled(page)

        # 2. The verdicts: a row each, guessed as such, its columns guessed by name.
        _upload(page, LLMBAR / "verdicts.csv")
        expect(main.get_by_role("radio", name=re.compile("Verdicts, a row each"))).to_be_checked()
        expect(main.get_by_role("combobox", name="Judge column")).to_have_value("judge")
        expect(main.get_by_role("combobox", name="Verdict column")).to_have_value("winner")
        expect(main.get_by_role("combobox", name="Order of the pair (AB/BA)")).to_have_value(
            "order")
        settled(page)
        main.get_by_text("The judges compared two responses (pairwise)").click()
        settled(page)
        choose_option(page, main.get_by_role("combobox", name="Response A field"), "output_1")
        settled(page)
        choose_option(page, main.get_by_role("combobox", name="Response B field"), "output_2")
        settled(page)
        for label, value in (("Label for 'A is better'", "1"), ("Label for 'B is better'", "2"),
                             ("Label for a tie (empty: forced choice)", "")):
            field = main.get_by_role("textbox", name=label)
            field.fill(value)
            field.press("Enter")
            settled(page)
        main.get_by_role("button", name="Import verdicts").click()
        expect(main.get_by_text(re.compile(
            r"Imported 4,174 verdicts of 5 judges \(GPT-4, ChatGPT, LLaMA2, PaLM2, Falcon\) "
            r"as run #1 on dataset #1: done"))).to_be_visible()

        # 3. Review: each judge's verdict and reasoning; an override is stored as decided.
        main.get_by_role("link", name="Review run #1").click()
        expect(page.get_by_role("heading", name="Review", exact=True)).to_be_visible()
        settled(page)
        name_the_reviewer(page, "ana")
        for judge in ("GPT-4", "Falcon"):
            expect(main.get_by_text(f"How {judge} decided: 2 calls")).to_be_visible()
        expect(main.get_by_text(re.compile(r"· imported verdict")).first).to_be_visible()
        form = main.get_by_test_id("stForm").first
        form.get_by_text("2", exact=True).click()
        settled(page)
        form.get_by_role("button", name=re.compile("Save")).click()
        expect(main.get_by_text(re.compile(r"^Saved 2 for "))).to_be_visible()
        db = open_db(app["db"])
        try:
            rows = db.execute("SELECT reviewer, label FROM overrides WHERE run_id = 1"
                              ).fetchall()
        finally:
            db.close()
        assert rows == [("ana", "2")]

        # 4. Agreement: alpha over the five judges, and each judge's position bias.
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Agreement").click()
        expect(page.get_by_role("heading", name="Agreement", exact=True)).to_be_visible()
        expect(main.get_by_text(re.compile("Krippendorff")).first).to_be_visible()
        expect(main.get_by_text(re.compile("[Pp]osition bias")).first).to_be_visible()
        settled(page)

    # 5. Export and verify, from the command line on the same file.
    out = tmp_path / "llmbar.csv"
    done = subprocess.run([sys.executable, "-m", "judging.runs.commands.cli", "export", "1", "--out",
                           str(out), "--db", str(app["db"])], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    exported = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(exported) == 419
    verified = subprocess.run([sys.executable, "-m", "judging.runs.commands.cli", "verify", "1", "--db",
                               str(app["db"])], capture_output=True, text=True)
    assert verified.returncode == 0 and "intact" in verified.stdout, verified.stdout
