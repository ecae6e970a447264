"""AppTest: the Review page's one source of "what the user is looking at" — the open item follows
filters, searches and saves; the reviewer survives saves; a refused save keeps the draft."""

from __future__ import annotations

import pathlib

from storage.db import open_db
from storage.reviewing.leases import take_lease
from storage.reviewing.overrides import override_history
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table
from tests.fixtures_app import shown
from tests.test_app_smoke import no_exception, open_page, save_button


def _consensus_of(path: pathlib.Path, run_id: int, item_id: str) -> str:
    return str(item_detail(open_db(path), run_id, item_id)["consensus"]["consensus"])


def test_three_overrides_in_a_row_with_a_filter_on(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    k = f"rv{run_id}."
    # The name first, typed once: it must stay for every save.
    at.text_input(key=k + "reviewer").set_value("carla")
    at.selectbox(key=k + "consensus").set_value("SPLIT").run()
    no_exception(at)
    expected, total = review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True, consensus_label="SPLIT"), limit=None)
    assert total >= 4
    opened = []
    for n in range(3):
        item = at.query_params["item"]
        opened.append(item)
        assert _consensus_of(path, run_id, item) == "SPLIT"
        at.radio(key=f"{k}label.{item}").set_value("REJECT")
        at.text_area(key=f"{k}note.{item}").set_value(f"note {n}")
        assert at.text_input(key=k + "reviewer").value == "carla"
        save_button(at).click().run()
        no_exception(at)
        assert not at.error, [e.value for e in at.error]
    # Saved, in the order of the filtered table, every one by carla with its own note.
    assert opened == list(expected["item_id"][:3])
    for n, item in enumerate(opened):
        (saved,) = override_history(open_db(path), run_id, item)
        assert (saved["label"], saved["note"], saved["reviewer"]) == ("REJECT", f"note {n}", "carla")
    assert at.query_params["item"] == expected["item_id"].iloc[3]


def test_no_decision_form_until_the_reviewer_is_named(demo_db: tuple[pathlib.Path, int]) -> None:
    _, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    k = f"rv{run_id}."
    item = at.query_params["item"]
    assert not at.get("form") and any("Type your name" in i.value for i in at.info)
    at.text_input(key=k + "reviewer").set_value("dan").run()
    assert at.radio(key=f"{k}label.{item}") is not None


def test_a_refused_save_keeps_what_was_typed(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    k = f"rv{run_id}."
    item = at.query_params["item"]
    at.text_input(key=k + "reviewer").set_value("dan").run()
    at.radio(key=f"{k}label.{item}").set_value("SPLIT")  # the demo curates: a split needs
    at.text_area(key=f"{k}note.{item}").set_value("a careful note")  # its new classes
    save_button(at).click().run()
    no_exception(at)
    assert any("needs the new child classes" in e.value for e in at.error)
    assert at.query_params["item"] == item
    assert at.text_area(key=f"{k}note.{item}").value == "a careful note"
    assert at.radio(key=f"{k}label.{item}").value == "SPLIT"
    assert override_history(open_db(path), run_id, item) == []
    at.text_area(key=f"{k}children.{item}").set_value("Trail shoes\nRoad shoes")
    save_button(at).click().run()
    (saved,) = override_history(open_db(path), run_id, item)
    assert (saved["label"], saved["note"], saved["reviewer"], saved["children"]) == \
        ("SPLIT", "a careful note", "dan", ["Trail shoes", "Road shoes"])


def test_a_filter_that_leaves_the_open_item_out_opens_a_matching_one(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    k = f"rv{run_id}."
    first = at.query_params["item"]
    other = next(label for label in ("KEEP", "REJECT", "SPLIT", "MERGE")
                 if label != _consensus_of(path, run_id, first))
    at.selectbox(key=k + "consensus").set_value(other).run()
    no_exception(at)
    shown = at.query_params["item"]
    assert shown != first
    assert _consensus_of(path, run_id, shown) == other
    assert at.subheader[0].value.endswith(shown.replace("-", "\\-"))


def test_a_search_opens_an_item_that_contains_the_words(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    k = f"rv{run_id}."
    at.toggle(key=k + "disagree").set_value(False).run()
    # A word of an item far down the list, so the open (first) item does not contain it.
    frame, _ = review_table(open_db(path), run_id, sort="item", limit=None)
    target = frame["item_id"].iloc[-1]
    word = max(str(item_detail(open_db(path), run_id, target)["fields"]).split(), key=len)
    at.text_input(key=k + "search").set_value(word).run()
    no_exception(at)
    shown = at.query_params["item"]
    detail = item_detail(open_db(path), run_id, shown)
    text = (str(detail["fields"]) + shown
            + " ".join(str(v["reasoning"]) for v in detail["verdicts"])).lower()
    assert word.lower() in text


def test_a_filter_that_keeps_the_open_item_keeps_it(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    frame, _ = review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True), limit=None)
    chosen = frame["item_id"].iloc[-1]  # on the last page of the contested list
    at = open_page("review", query={"run": str(run_id), "item": chosen})
    k = f"rv{run_id}."
    assert at.query_params["item"] == chosen
    consensus = _consensus_of(path, run_id, chosen)
    at.selectbox(key=k + "consensus").set_value(consensus).run()
    no_exception(at)
    assert at.query_params["item"] == chosen


def test_a_shared_link_opens_its_item_on_its_page(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    frame, _ = review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True), limit=None)
    far = frame["item_id"].iloc[-1]
    at = open_page("review", query={"run": str(run_id), "item": far})
    no_exception(at)
    k = f"rv{run_id}."
    assert at.query_params["item"] == far
    assert at.number_input(key=k + "page").value == (len(frame) - 1) // 50 + 1


HOSTILE_ID = "[Your session expired](http://evil.test/login)"


def _no_live_markdown(markdown: str) -> bool:
    """True when no link, image or HTML tag can form: every "[", "]", "(", "<" from data is
    backslash-escaped."""
    import re

    link = re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", markdown)
    tag = re.search(r"(?<!\\)<[a-zA-Z]", markdown)
    # Chromium's markdown still autolinks a backslash-escaped "http\:\/\/": only an
    # invisible joiner after the colon (pages.ui.text_format.plain) breaks it.
    autolink = re.search(r"https?\\?:\\?/", markdown)
    return link is None and tag is None and autolink is None


def test_the_markdown_check_can_fail() -> None:
    assert not _no_live_markdown("Item [Your session expired](http://evil)")
    assert not _no_live_markdown("**<b>x</b>**")
    assert not _no_live_markdown("Item \\[x\\]\\(http\\:\\/\\/evil\\)")  # escapes only
    from pages.ui.text_format import plain

    assert _no_live_markdown(f"Item {plain(HOSTILE_ID)}")


def test_a_hostile_item_id_in_the_url_and_the_data_is_shown_as_text(
    app_db: pathlib.Path,
) -> None:
    from judging.demo import demo_panel_path
    from judging.panel.panel_files import load_panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset

    data = app_db.parent / "hostile.csv"
    data.write_text(
        "id,candidate_class,parent,description,example_members,existing_siblings\n"
        f"\"{HOSTILE_ID}\",**bold** <b>x</b>,![img](http://evil.test/x.png),d,e,s\n"
        "plain-2,b,p,d,e,s\n", encoding="utf-8")
    db = open_db(app_db)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="hostile")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(demo_panel_path()))
    assert JobRegistry().start_run(str(app_db), run_id).wait(60)
    for item in (HOSTILE_ID, "[Your session expired](http://evil)"):  # stored, and made up
        at = open_page("review", query={"run": str(run_id), "item": item})
        no_exception(at)
        at.toggle(key=f"rv{run_id}.disagree").set_value(False).run()
        markdown = [str(e.value) for kind in ("subheader", "markdown", "caption", "info",
                                              "warning", "error") for e in getattr(at, kind)]
        assert all(_no_live_markdown(m) for m in markdown), [m for m in markdown
                                                             if not _no_live_markdown(m)]


def test_saves_on_the_last_page_of_a_filtered_list_walk_it_to_its_end(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    # Paged in SQL: the last page shows the last rows of the filtered, sorted list, and each
    # save on it (which takes the item out of "Overridden: not yet") opens the item that
    # followed it, until the list's last item.
    path, run_id = demo_db
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id)})
    at.text_input(key=k + "reviewer").set_value("erin")
    at.selectbox(key=k + "size").set_value(25)
    at.selectbox(key=k + "overridden").set_value("not yet").run()
    filters = {"disagreements_only": True, "overridden": False}
    expected, total = review_table(open_db(path), run_id, ReviewFilter(**filters), limit=None)
    pages = -(-total // 25)
    assert pages >= 2
    at.number_input(key=k + "page").set_value(pages).run()
    no_exception(at)
    last_page = list(expected["item_id"][(pages - 1) * 25:])
    assert list(at.dataframe[0].value["item_id"]) == last_page
    assert at.query_params["item"] == last_page[0]
    for n, item in enumerate(last_page):
        assert at.query_params["item"] == item
        at.radio(key=f"{k}label.{item}").set_value("REJECT")
        at.text_area(key=f"{k}note.{item}").set_value(f"last page {n}")
        save_button(at).click().run()
        no_exception(at)
        assert not at.error, [e.value for e in at.error]
        left = total - n - 1
        assert any(f"{left:,} item" in c.value for c in at.caption), left
    assert any("that was the last item of this list" in s.value for s in at.success)
    for item in last_page:
        assert [o["reviewer"] for o in override_history(open_db(path), run_id, item)] == ["erin"]
    assert review_table(open_db(path), run_id, ReviewFilter(**filters), limit=0)[1] == total - len(last_page)


def test_a_name_typed_on_arrival_moves_off_an_item_someone_else_has_open(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    """Before the name, the page opens the list's first item, held or not (it cannot tell);
    once the name is typed, an item another reviewer holds gives way to the next free one,
    and the page says who has it. No reload."""
    path, run_id = demo_db
    k = f"rv{run_id}."
    order = [str(i) for i in review_table(open_db(path), run_id,
                                          ReviewFilter(disagreements_only=True), limit=2)[0]["item_id"]]
    take_lease(open_db(path), run_id, order[0], "ana")
    at = open_page("review", query={"run": str(run_id)})
    assert at.query_params["item"] == order[0]  # nobody named: every item is the first one
    at.text_input(key=k + "reviewer").set_value("bob").run()
    no_exception(at)
    assert at.query_params["item"] == order[1]
    assert any(f"ana has {order[0]} open" in shown(s.value) for s in at.success), \
        [s.value for s in at.success]
    assert not any("has this item open" in w.value for w in at.warning)
    assert not save_button(at).disabled
    # The item a reviewer picks stays, held or not: Previous goes back to ana's, Save off.
    at.button(key=k + "previous").click().run()
    assert at.query_params["item"] == order[0]
    assert any("ana has this item open" in w.value for w in at.warning)
    assert save_button(at).disabled
