"""The sidebar shows the whole database path (wrapped), so a user can read and copy it: a long
path used to be cut at the sidebar's edge."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures_app import running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


@pytest.fixture
def long_path_app(tmp_path: pathlib.Path) -> Iterator[dict[str, Any]]:
    folder = tmp_path / "a_rather_long_folder_name_for_the_team_share" / "reviews_2026_q4"
    folder.mkdir(parents=True)
    with running_app(folder / "jurybox-production-database.db") as server:
        yield server


def test_the_database_path_is_shown_whole(app_page: Any, long_path_app: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    app_page.goto(long_path_app["url"] + "/export")
    code = app_page.get_by_test_id("stSidebar").get_by_test_id("stCode")
    expect(code).to_contain_text("jurybox-production-database.db")
    settled(app_page)
    shown, overflow = code.evaluate(
        "e => { const pre = e.querySelector('pre');"
        " return [pre.innerText.replace(/\\s+/g, ''), pre.scrollWidth - pre.clientWidth]; }")
    assert shown == str(long_path_app["db"])  # every character, in one box the user can copy
    assert overflow <= 0, f"the path runs {overflow} px past the sidebar"
