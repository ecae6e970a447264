"""Browser test: every chart of the Agreement page is sized to its content (issue 23, defect 5).

Before, the leave-one-critic-out bars, the Dawid-Skene bars and every critic-vs-humans
confusion matrix were drawn 112-128 px high in all, title and axes included: bars of 0.2-1.3 px
and names printed over each other. Here a finished demo run with 40 human labels (so every
chart of the page is drawn) is opened in Chromium and each chart's SVG is measured:

- a bar or cell of a chart whose rows are critics or labels is at least 8 px high (a heatmap's
  cell also 8 px wide);
- a histogram's bar is at least 8 px wide (its height is its count: a bin of one item is short
  on purpose);
- no two visible axis labels or titles of a chart overlap.

Streamlit draws these charts with vega-embed's SVG renderer (it switches to canvas only above
2,000 marks per datum, which aggregated charts never reach), so the marks are `path`s of the
`role-mark` groups and the labels `text`s of the axis groups.
"""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from storage.db import open_db
from storage.reviewing.overrides import add_override
from storage.reviewing.review_queue import review_table
from tests.fixtures_app import Watch, running_app, settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

MIN_PX = 8
CRITICS = ("careful", "lenient", "strict", "flaky")
LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")

# Each chart drawn: its title (or its axis titles), its height, its marks' boxes and the boxes
# of its visible texts (Vega keeps a label it hid to avoid an overlap, at opacity 0).
MEASURE = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg.marks')]
  .map(svg => {
    const box = el => { const r = el.getBoundingClientRect();
                        return {x: r.x, y: r.y, w: r.width, h: r.height}; };
    const visible = el => { for (let e = el; e && e !== svg; e = e.parentElement) {
        if (parseFloat(getComputedStyle(e).opacity) === 0) return false; } return true; };
    const titles = [...svg.querySelectorAll('.role-title-text text')].map(t => t.textContent);
    const axes = [...svg.querySelectorAll('.role-axis-title text')].map(t => t.textContent);
    return {
      title: titles.join(' ') || axes.join(' / '),
      marks: [...svg.querySelectorAll('g.mark-rect.role-mark path')].map(box),
      texts: [...svg.querySelectorAll(
                '.role-axis-label text, .role-axis-title text, .role-title-text text')]
        .filter(t => t.textContent.trim() && visible(t))
        .map(t => ({text: t.textContent, ...box(t)})),
    };
  })"""
# Every chart of the page has drawn its marks (the charts' code arrives after the script run).
DRAWN = """n => {
  const svgs = [...document.querySelectorAll('[data-testid="stVegaLiteChart"] svg.marks')];
  return svgs.length >= n && svgs.every(s => s.querySelector('g.role-mark path'));
}"""


@pytest.fixture(scope="module")
def agreement_app(demo_db_template: tuple[pathlib.Path, int],
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The app over a copy of the demo run with 40 human labels (every label given)."""
    template, run_id = demo_db_template
    path = tmp_path_factory.mktemp("charts") / "charts.db"
    shutil.copyfile(template, path)
    db = open_db(path)
    try:
        items, _ = review_table(db, run_id, limit=40)
        for n, item in enumerate(items["item_id"]):
            add_override(db, run_id, str(item), LABELS[n % len(LABELS)], "checked", "ana")
    finally:
        db.close()
    with running_app(path) as server:
        yield {**server, "run": run_id}


def _overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    # One pixel of slack: neighbouring boxes may share an edge.
    return (a["x"] < b["x"] + b["w"] - 1 and b["x"] < a["x"] + a["w"] - 1
            and a["y"] < b["y"] + b["h"] - 1 and b["y"] < a["y"] + a["h"] - 1)


def test_every_agreement_chart_has_marks_a_reader_can_see(
    app_page: Any, agreement_app: dict[str, Any],
) -> None:
    from playwright.sync_api import expect

    watch = Watch(app_page, agreement_app["url"])
    app_page.goto(f"{agreement_app['url']}/agreement?run={agreement_app['run']}")
    expect(app_page.get_by_text("Each critic against the humans")).to_be_visible()
    settled(app_page)
    # Histograms (2), per-critic bars, leave-one-out, Dawid-Skene, kappa, one matrix per critic.
    expected = 6 + len(CRITICS)
    app_page.wait_for_function(DRAWN, arg=expected)
    charts = app_page.evaluate(MEASURE)

    titles = [c["title"] for c in charts]
    for wanted in ("Leave-one-critic-out", "Dawid-Skene", "Per-critic agreement",
                   *(f"{critic} said" for critic in CRITICS)):
        assert any(wanted in t for t in titles), (wanted, titles)
    problems = []
    for chart in charts:
        title = chart["title"]
        histogram = title.startswith(("Per-item alpha", "Bootstrap"))
        heatmap = "kappa" in title or " said" in title
        assert chart["marks"], f"{title}: no mark drawn"
        for mark in chart["marks"]:
            if histogram and mark["w"] < MIN_PX:
                problems.append(f"{title}: a bar {mark['w']:.1f} px wide")
            if not histogram and mark["h"] < MIN_PX:
                problems.append(f"{title}: a mark {mark['h']:.1f} px high")
            if heatmap and mark["w"] < MIN_PX:
                problems.append(f"{title}: a cell {mark['w']:.1f} px wide")
        texts = chart["texts"]
        for i, a in enumerate(texts):
            for b in texts[i + 1:]:
                if _overlaps(a, b):
                    problems.append(f"{title}: {a['text']!r} overprints {b['text']!r}")
    assert not problems, "\n".join(problems)
    # Sizing never costs a Vega warning (a step height in a fitted chart logs one).
    assert watch.troubles()["console"] == []
