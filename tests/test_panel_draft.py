"""Browser tests: an unsaved panel draft survives a reload and a URL typed in the address bar
(issue 23, defect 7), and the save confirmation survives a download.

Before, the draft lived only in the Streamlit session: a reload or any navigation by URL began
a new session with a fresh panel, and the edits were gone without a word. Now every change is
written to the database (`storage.drafts`, one row per person) and a new session restores it
with a notice "Restored your unsaved draft from HH:MM", next to a Discard button.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from storage.db import open_db
from storage.drafts import load_draft
from tests.fixtures_app import running_app, script_run, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

RESTORED = re.compile(r"Restored your unsaved draft from \d\d:\d\d")


@pytest.fixture(scope="module")
def panel_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The app over an empty database (a fresh panel in the editor)."""
    with running_app(tmp_path_factory.mktemp("drafts") / "drafts.db") as server:
        yield server


def _name_field(page: Any) -> Any:
    """The Panel page's name field, once drawn. In steps, each with its own timeout: the page's
    script first, then the widgets, whose code the browser loads after the script run (seen
    taking 20 s on a loaded 2-core machine, the whole of one timeout)."""
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name="Panel", exact=True)).to_be_visible()
    settled(page)
    field = page.get_by_test_id("stMain").get_by_role("textbox", name="Panel name")
    expect(field).to_be_visible()
    return field


def _open_panel(page: Any, server: dict[str, Any]) -> Any:
    """Open the Panel page by its URL (a new session) and return its name field."""
    page.goto(server["url"] + "/panel")
    return _name_field(page)


def _rename(page: Any, field: Any, name: str) -> None:
    """Type a new panel name and commit it (Enter), waiting for the run it starts to end."""
    from playwright.sync_api import expect

    with script_run(page):
        field.fill(name)
        expect(field).to_have_value(name)  # typed into the live box, not one being redrawn
        field.press("Enter")


def test_an_edit_survives_a_reload_and_a_typed_url(app_page: Any,
                                                   panel_app: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    field = _open_panel(app_page, panel_app)
    expect(field).to_have_value("my panel")
    expect(app_page.get_by_text(RESTORED)).to_have_count(0)
    _rename(app_page, field, "kept across reloads")
    kept = load_draft(open_db(panel_app["db"]), "")
    assert kept is not None and kept[0]["name"] == "kept across reloads"

    app_page.reload()
    field = _name_field(app_page)
    expect(field).to_have_value("kept across reloads")
    expect(app_page.get_by_text(RESTORED)).to_be_visible()

    # Another page by URL, then back by URL: two new sessions, the draft still there.
    app_page.goto(panel_app["url"] + "/run")
    expect(app_page.get_by_role("heading", name="Run", exact=True)).to_be_visible()
    field = _open_panel(app_page, panel_app)
    expect(field).to_have_value("kept across reloads")
    expect(app_page.get_by_text(RESTORED)).to_be_visible()

    # Discard: a fresh panel, and nothing comes back on the next reload.
    app_page.get_by_role("button", name="Discard").click()
    # A fresh panel's field replaces the draft's: wait until the old one has left the page.
    expect(field).to_have_count(1)
    expect(field).to_have_value("my panel")
    expect(app_page.get_by_text(RESTORED)).to_have_count(0)
    settled(app_page)
    assert load_draft(open_db(panel_app["db"]), "") is None
    field = _open_panel(app_page, panel_app)
    expect(field).to_have_value("my panel")
    expect(app_page.get_by_text(RESTORED)).to_have_count(0)


def test_a_saved_draft_is_not_restored_and_its_confirmation_outlives_a_download(
    app_page: Any, panel_app: dict[str, Any],
) -> None:
    from playwright.sync_api import expect

    field = _open_panel(app_page, panel_app)
    _rename(app_page, field, "saved and downloaded")
    app_page.get_by_role("button", name="Save panel").click()
    saved = app_page.get_by_text(re.compile(r"as version [0-9a-f]+"))
    expect(saved).to_be_visible()
    expect(app_page.get_by_role("link", name="Run this panel")).to_have_attribute(
        "href", re.compile(r"run\?panel=[0-9a-f]+$"))
    settled(app_page)
    with app_page.expect_download() as download:
        app_page.get_by_role("button", name="Download YAML").click()
    assert download.value.suggested_filename == "saved and downloaded.yaml"
    # Any later rerun (here Streamlit's own "r" key) keeps it too, while the version is saved.
    app_page.get_by_test_id("stMain").get_by_role("heading", name="Panel").click()
    with script_run(app_page):
        app_page.keyboard.press("r")
    expect(saved).to_be_visible()
    assert load_draft(open_db(panel_app["db"]), "") is None  # saved: nothing unsaved is kept

    app_page.reload()
    field = _name_field(app_page)
    expect(field).to_have_value("my panel")
    expect(app_page.get_by_text(RESTORED)).to_have_count(0)
