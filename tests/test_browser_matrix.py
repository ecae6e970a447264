"""The composition matrix in a real browser (issue 23 part 3): for each panel kind, Review on its
run, a decision recorded through the form (a curation SPLIT with two children, a score typed
on a score scale), the next item opening, then Export's CSV download holding that decision.

Every selector is in `ReviewUI` and `ExportUI`, written against what a user reads (labels and
button texts, the item in the URL), so a rearranged page means adapting them there only. Every
check waits for what it checks (Playwright's `expect`), never for a fixed time.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest

from tests.fixtures_app import BROWSER_TIMEOUT_MS, Watch, as_shown, running_app, settled
from tests.fixtures_matrix import (
    KIND_NAMES,
    KINDS,
    SAVE_NEXT,
    UI,
    Decision,
    MatrixRun,
    a_different_decision,
    as_list,
    make_matrix_run,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def _expect() -> Any:
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    return expect


class ReviewUI:
    """Review as a user drives it: every selector of the walk is here."""

    SAVE = SAVE_NEXT

    def __init__(self, page: Any) -> None:
        self.page = page
        self.main = page.get_by_test_id("stMain")

    def open(self, url: str, run_id: int) -> str:
        """Open Review on the run; returns the item it opened (the URL names it)."""
        self.page.goto(f"{url}/review?run={run_id}")
        self.page.wait_for_url(re.compile(r"[?&]item="))
        item = self.open_item()
        self.wait_for_item(item)
        return item

    def open_item(self) -> str:
        return parse_qs(urlsplit(self.page.url).query)["item"][0]

    def wait_for_item(self, item: str) -> None:
        """The item's panel is drawn (its heading) and the script run is over."""
        _expect()(self.main.get_by_role("heading", name=as_shown(f"Item {item}"))).to_be_visible()
        settled(self.page)

    def name_the_reviewer(self, name: str) -> None:
        field = self.main.get_by_role("textbox", name=UI.REVIEWER)
        field.fill(name)
        field.press("Enter")
        _expect()(self.main.get_by_role("button", name=self.SAVE)).to_be_visible()
        settled(self.page)

    def decide(self, decision: Decision, numeric: bool) -> None:
        """Fill the decision form with `decision` and save it."""
        # The form that saves the decision (a rubric item has a second one, for a criterion).
        form = self.main.get_by_test_id("stForm").filter(
            has=self.page.get_by_role("button", name=self.SAVE))
        if numeric:
            form.get_by_role("spinbutton", name=UI.SCORE).fill(f"{decision.score}")
        else:
            form.get_by_test_id("stRadio").filter(has_text=UI.LABEL).get_by_text(
                as_shown(decision.label), exact=True).click()
        if decision.children:
            form.get_by_role("textbox", name=re.compile(UI.CHILDREN)).fill(
                "\n".join(decision.children))
        form.get_by_label(UI.NOTE).fill("browser matrix")
        form.get_by_role("button", name=self.SAVE).click()

    def wait_for_saved(self, decision: Decision) -> None:
        """The page says what was saved, and the next item is open."""
        expect = _expect()
        expect(self.main.get_by_text(
            as_shown(f"Saved {decision.label} for {decision.item_id}"))).to_be_visible()
        self.page.wait_for_url(lambda url: parse_qs(urlsplit(url).query).get("item", [""])[0]
                               not in ("", decision.item_id))
        self.wait_for_item(self.open_item())


class ExportUI:
    """Export as a user drives it."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.main = page.get_by_test_id("stMain")

    def csv(self, url: str, run_id: int) -> pd.DataFrame:
        self.page.goto(f"{url}/export?run={run_id}")
        button = self.main.get_by_role("button", name="Download CSV")
        _expect()(button).to_be_visible()
        settled(self.page)
        with self.page.expect_download() as info:
            button.click()
        assert info.value.suggested_filename == f"jurybox-run-{run_id}.csv"
        return pd.read_csv(info.value.path(), dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def matrix_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One app over one database holding a finished run of every panel kind."""
    path = tmp_path_factory.mktemp("matrix-browser") / "matrix.db"
    runs = {name: make_matrix_run(KINDS[name], path) for name in KIND_NAMES}
    with running_app(path) as app:
        yield {**app, "runs": runs}


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_a_decision_made_on_review_is_in_the_csv_export(
        kind: str, matrix_app: dict[str, Any], app_page: Any) -> None:
    url, run_id = matrix_app["url"], matrix_app["runs"][kind]
    run = MatrixRun(KINDS[kind], pathlib.Path(matrix_app["db"]), run_id)
    watch = Watch(app_page, url)
    review = ReviewUI(app_page)
    item = review.open(url, run_id)
    decision = a_different_decision(run, item, reviewer=f"walker-{kind}")
    if run.kind.curation and not decision.children:  # the walk splits: two new children
        decision = Decision(item, "SPLIT", "SPLIT", children=("Part one", "Part two"),
                            reviewer=decision.reviewer)
    run.close()
    review.name_the_reviewer(decision.reviewer)
    review.decide(decision, run.kind.numeric)
    review.wait_for_saved(decision)

    exported = ExportUI(app_page).csv(url, run_id).set_index("item_id")
    row = exported.loc[item]
    assert row["final_label"] == decision.final_label
    assert (row["overridden"], row["reviewer"]) == ("True", decision.reviewer)
    if run.kind.numeric:
        assert float(row["override_label"]) == pytest.approx(decision.score)
        assert float(row["final_score"]) == pytest.approx(decision.score)
    else:
        assert row["override_label"] == decision.label
    assert row["needs_decision"] == ""  # decided
    if run.kind.curation:
        assert as_list(row["children"]) == list(decision.children)
    assert (watch.dialogs, watch.elsewhere) == ([], [])
