"""AppTest: Review and Agreement show data as text (issue 9 part 6), counts read as English, and
a raw reply is formatted (issue 14 item 12).

Every string Streamlit renders as markdown (subheaders, captions, alerts, widget labels, radio
options, tab labels) is checked: nothing from the hostile run (see tests/fixtures_hostile.py)
may form a link, an image, an HTML tag or an autolink (the page's own **bold** is fine).
"""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

from storage.db import open_db
from storage.reviewing.overrides import override_history
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import review_table
from tests.fixtures_hostile import LABELS, REVIEWER, URL_ITEM
from tests.test_app_smoke import no_exception, open_page, save_button

_LIVE = {
    "link or image": re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\("),
    "html tag": re.compile(r"(?<!\\)<[a-zA-Z/]"),
    # GitHub-flavoured autolinks form after escapes are resolved: only the invisible joiner
    # that pages.ui.text_format.plain puts after ":" and before "." breaks them.
    "autolink": re.compile(r"https?\\?:(?!\u2060)|www\\?\.", re.IGNORECASE),
}


def live_markdown(markdown: str) -> list[str]:
    """What in `markdown` would render as something other than its text."""
    return [name for name, pattern in _LIVE.items() if pattern.search(markdown)]


def test_the_check_finds_what_it_must() -> None:
    from pages.ui.text_format import plain

    for hostile in (*LABELS, "http://evil.test"):
        assert live_markdown(hostile), hostile
        assert live_markdown(f"Item {plain(hostile)}") == [], plain(hostile)


def markdown_strings(at: Any) -> list[str]:
    """Every string of the page that Streamlit renders as markdown."""
    out: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning",
                 "error", "success", "toast"):
        out += [str(e.value) for e in getattr(at, kind)]
    for kind in ("radio", "toggle", "checkbox", "selectbox", "text_input", "text_area",
                 "button", "number_input", "slider"):
        out += [str(w.label) for w in getattr(at, kind)]
    for radio in at.radio:
        out += [str(o) for o in radio.options]
    out += [str(t.label) for t in at.tabs]
    out += [str(m.label) for m in at.metric]
    return out


def assert_all_text(at: Any) -> None:
    bad = {m: live_markdown(m) for m in markdown_strings(at) if live_markdown(m)}
    assert not bad, bad


def test_review_shows_every_hostile_string_as_text(hostile_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = hostile_db
    k = f"rv{run_id}."
    frame, _ = review_table(open_db(path), run_id, sort="item", limit=None)
    tied = str(frame.loc[frame["tie"], "item_id"].iloc[0])
    overridden = str(frame.loc[frame["overridden"], "item_id"].iloc[0])
    for item in (tied, overridden, URL_ITEM):  # a tie note, an override history, a made-up id
        at = open_page("review", query={"run": str(run_id), "item": item})
        no_exception(at)
        at.toggle(key=k + "disagree").set_value(False).run()
        for toggle in at.toggle:  # every critic's raw exchange, with the reply's reasons
            if toggle.label == "Raw request and reply":
                toggle.set_value(True)
        at.run()
        no_exception(at)
        assert any("The item fits" in c.value for c in at.code), "the reasons are on the page"
        assert_all_text(at)
    # A save with a hostile label and reviewer: the confirmation shows them as text too.
    at.text_input(key=k + "reviewer").set_value(REVIEWER).run()  # the name opens the form
    assert_all_text(at)
    at.radio(key=f"{k}label.{at.query_params['item']}").set_value(LABELS[2])
    saved_item = at.query_params["item"]
    save_button(at).click().run()
    no_exception(at)
    assert override_history(open_db(path), run_id, saved_item)[-1]["label"] == LABELS[2]
    assert at.success, "the save is confirmed"
    assert_all_text(at)
    # Filters offer the hostile critics and labels; choosing them draws their values as text.
    at.selectbox(key=k + "critic").set_value(at.selectbox(key=k + "critic").options[1]).run()
    at.selectbox(key=k + "consensus").set_value(LABELS[3]).run()
    no_exception(at)
    assert_all_text(at)


def test_agreement_shows_every_hostile_string_as_text(hostile_db: tuple[pathlib.Path, int]) -> None:
    _, run_id = hostile_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert any("had a tied vote" in c.value for c in at.caption)
    assert_all_text(at)


def test_counts_read_as_english(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    # A contested item's id (ids are TX-0001...TX-0300): a search that matches exactly one item.
    only = str(review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True), limit=1)[0]
               ["item_id"].iloc[0])
    at = open_page("review", query={"run": str(run_id)})
    at.text_input(key=k + "search").set_value(only).run()
    no_exception(at)
    captions = [c.value for c in at.caption]
    assert "1 item matches · page 1 of 1" in captions, captions
    assert not any("1 items" in c for c in captions)
    popovers = [p.proto.popover.label for p in at.get("popover")]
    assert "Accept the consensus for 1 filtered item" in popovers, popovers
    assert at.checkbox(key=k + "bulk_sure").label == "Yes, accept the consensus for 1 item"


def test_the_raw_reply_is_pretty_json_beside_the_models_answer(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    _, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    raw = [t for t in at.toggle if t.label == "Raw request and reply"]
    assert raw and not any('"choices"' in c.value for c in at.code), "hidden until asked for"
    raw[0].set_value(True).run()
    no_exception(at)
    blocks = [c for c in at.code if c.language == "json"]
    reply = next(c for c in blocks if '"choices"' in c.value)
    # Formatted: one key per line, indented, and it is the reply as received (same data).
    assert reply.value.startswith("{\n  ") and reply.value.count("\n") > 10
    data = json.loads(reply.value)
    answer = data["choices"][0]["message"]["content"]
    assert any(c.value == json.dumps(json.loads(answer), indent=2) for c in blocks), \
        "the model's own answer, formatted"
    assert any('"messages"' in c.value for c in blocks), "the request"
    assert [t.label for t in at.tabs] == ["Reply as received",
                                         "Request (the API key is never stored)"]
