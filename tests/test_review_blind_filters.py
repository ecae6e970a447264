"""AppTest: a blind first pass is blind (issue 23, major defect 2), and a link that opens a list
sets every filter so the list matches its count (issue 23: "Review the 21 unstable items" opened
3).

In blind mode the item panel shows no gold label, and no filter or sort that follows from what
the critics said is drawn or applied: "Consensus = MERGE: 32 items match" revealed each hidden
consensus, a search matched the critics' reasons, "most contested first" ordered by
disagreement.
"""

from __future__ import annotations

import pathlib

from judging.runs.stored.run_report import run_stability
from storage.db import open_db
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import item_detail, review_table
from tests.test_app_smoke import all_text, no_exception, open_page, save_button
from tests.test_chains_pages import chains_db, chains_template  # noqa: F401 (fixtures)

# Every filter widget that follows from the critics (key suffix on the Review page).
CRITIC_FILTERS = ("disagree", "ties", "consensus", "critic", "critic_value", "failures",
                  "use_alpha", "alpha", "search", "sort", "disputed", "unstable")


def _widget_keys(at) -> set[str]:
    keys = set()
    for kind in ("toggle", "selectbox", "slider", "text_input", "checkbox"):
        for widget in getattr(at, kind):
            if widget.key:
                keys.add(widget.key)
    return keys


def test_blind_mode_draws_no_filter_or_sort_that_follows_from_the_critics(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    # Not blind: a Consensus filter narrows the list (the count reveals each consensus).
    at = open_page("review", query={"run": str(run_id)})
    at.toggle(key=k + "disagree").set_value(False)
    at.selectbox(key=k + "consensus").set_value("MERGE").run()
    _, merges = review_table(open_db(path), run_id, ReviewFilter(consensus_label="MERGE"), limit=0)
    _, everything = review_table(open_db(path), run_id, limit=0)
    assert 0 < merges < everything
    assert f"{merges:,} items match" in all_text(at)

    # Blind: the same session's filter is no longer drawn, nor applied.
    at.toggle(key=k + "blind").set_value(True).run()
    no_exception(at)
    keys = _widget_keys(at)
    assert not {k + name for name in CRITIC_FILTERS} & keys, keys
    assert f"{everything:,} items match" in all_text(at)
    sorts = at.selectbox(key=k + "blind_sort").options
    # The audit queue orders by strata and draw, never by a label: offered blind too.
    assert sorts == ["file order", "recently overridden first", "label next (audit sample)"]
    assert list(at.dataframe[0].value.columns) == ["item_id", "preview", "overridden"]
    assert "Blind first pass: the filters and sorts that follow" in all_text(at)


def test_a_blind_search_looks_in_the_items_not_in_the_critics_reasons(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    db = open_db(path)
    frame, _ = review_table(db, run_id, sort="item", limit=None)
    # A word of a critic's reason that no item's fields hold.
    word = None
    for item in frame["item_id"][:40]:
        for verdict in item_detail(db, run_id, str(item))["verdicts"]:
            for candidate in str(verdict["reasoning"] or "").split():
                if len(candidate) > 5 and candidate.isalpha() and review_table(db, run_id, ReviewFilter(search=candidate, search_reasons=False), limit=0)[1] == 0:
                    word = candidate
                    break
            if word:
                break
        if word:
            break
    assert word is not None, "no reason word outside the items in the demo"
    assert review_table(db, run_id, ReviewFilter(search=word), limit=0)[1] > 0  # found among the reasons

    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id), "blind": "1"})
    at.text_input(key=k + "blind_search").set_value(word).run()
    no_exception(at)
    assert "No item matches these filters" in all_text(at)


def test_blind_mode_hides_the_gold_label_until_the_reviewer_has_labelled_the_item(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id), "blind": "1"})
    at.text_input(key=k + "reviewer").set_value("carla").run()
    item = at.query_params["item"]
    detail = item_detail(open_db(path), run_id, item)
    assert detail["gold"] is not None
    captions = [c.value for c in at.caption]
    assert "gold label" not in captions
    assert detail["gold"] not in [t.value for t in at.text]
    at.radio(key=f"{k}label.{item}.blind").set_value("KEEP")
    save_button(at, "Save and show the critics").click().run()
    no_exception(at)
    assert "gold label" in [c.value for c in at.caption]  # revealed with the critics


def test_a_link_from_agreement_opens_every_item_it_counted(
    chains_db: tuple[pathlib.Path, int],  # noqa: F811
) -> None:
    path, run_id = chains_db
    unstable = run_stability(open_db(path), run_id)[0].unstable
    contested = set(review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True), limit=None)[0]["item_id"])
    assert set(unstable) - contested, "every unstable item is contested: nothing to show"
    at = open_page("review", query={"run": str(run_id), "unstable": "1"})
    no_exception(at)
    assert f"{len(unstable):,} items match" in all_text(at)  # not only the contested ones
    assert at.toggle(key=f"rv{run_id}.disagree").value is False


def test_a_link_to_the_tied_items_in_blind_mode_lists_every_item(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = demo_db
    _, everything = review_table(open_db(path), run_id, limit=0)
    _, tied = review_table(open_db(path), run_id, ReviewFilter(ties_only=True), limit=0)
    assert 0 < tied < everything
    at = open_page("review", query={"run": str(run_id), "blind": "1", "ties": "1"})
    no_exception(at)
    assert f"{everything:,} items match" in all_text(at)  # "tied" would tell the vote
