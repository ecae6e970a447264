"""Browser test: a rubric item on Review (issue 23, minor defects "rubric reviewer marks off the
right edge and two competing forms").

Before, the criteria grid sat in a column beside the criterion-mark form: its last columns (the
panel's mark, "in dispute", the reviewer's mark) were off the grid's right edge, behind a
horizontal scroll, and two forms that both decide the item stood side by side. Here, in
Chromium at 1,500 px, the grid shows every column without scrolling, and the only form open is
the decision's; the criterion marks are folded under an expander that says they are another way.
"""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

import pytest

from tests.fixtures_app import name_the_reviewer, running_app, settled
from tests.test_rubric_pages import rubric_template  # noqa: F401 (a module-scoped fixture)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

# The criteria grid: the data frame right after the "Criteria" caption. Its scroller (the data
# grid's own) is wider inside than out when columns are hidden past its right edge.
MEASURE = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const frames = [...main.querySelectorAll('[data-testid="stDataFrame"]')];
  const caption = [...main.querySelectorAll('[data-testid="stMarkdown"]')]
    .find(m => m.textContent.trim() === 'Criteria');
  const grid = frames.find(f => caption.compareDocumentPosition(f)
                                & Node.DOCUMENT_POSITION_FOLLOWING);
  const scroller = grid.querySelector('.dvn-scroller');
  const box = grid.getBoundingClientRect(), mainBox = main.getBoundingClientRect();
  return {scrollWidth: scroller.scrollWidth, clientWidth: scroller.clientWidth,
          right: box.right, mainRight: mainBox.right, width: box.width};
}"""


def test_the_criteria_grid_shows_every_column_and_one_form_decides(
        app_page: Any, rubric_template: tuple[pathlib.Path, int],  # noqa: F811
        tmp_path: pathlib.Path) -> None:
    from playwright.sync_api import expect

    template, run_id = rubric_template
    path = tmp_path / "rubric.db"
    shutil.copyfile(template, path)
    with running_app(path) as app:
        page = app_page
        page.goto(f"{app['url']}/review?run={run_id}")
        main = page.get_by_test_id("stMain")
        name_the_reviewer(page, "ana")
        expect(main.get_by_text("Criteria", exact=True)).to_be_visible()
        settled(page)
        page.wait_for_function("""() => [...document.querySelectorAll(
            '[data-testid="stDataFrame"] .dvn-scroller')].length >= 2""")
        grid = page.evaluate(MEASURE)
        assert grid["scrollWidth"] <= grid["clientWidth"] + 1, grid  # no column past the edge
        assert grid["right"] <= grid["mainRight"] + 1, grid

        # One form decides the item; the criterion marks wait, folded, as another way.
        expect(main.get_by_test_id("stForm").filter(visible=True)).to_have_count(1)
        expect(main.get_by_role("button", name="Save this criterion's mark")).to_be_hidden()
        main.get_by_text("Mark single criteria instead", exact=False).click()
        expect(main.get_by_role("button", name="Save this criterion's mark")).to_be_visible()
