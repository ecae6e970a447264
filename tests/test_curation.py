"""Taxonomy curation (issue 12 part 5): the panel says which labels keep, remove, split or
merge a class; a decision records a split's new children and a merge's target; the curated
taxonomy export (JSON and CSV, the CLI and the Export page) round-trips what was decided."""

from __future__ import annotations

import csv
import io
import json
import pathlib

import pytest

from judging.demo import demo_panel_path
from judging.errors import ConfigError, DataError
from judging.panel.curation import CurationConfig, check_decision, curate, parse_children
from judging.panel.panel_files import load_panel
from judging.runs.commands.cli import main
from judging.runs.stored.taxonomy import curated_taxonomy, taxonomy_bytes
from storage.db import open_db
from storage.reviewing.overrides import add_override, final_labels
from storage.reviewing.review_queue import item_detail
from tests.test_app_smoke import no_exception, open_page, save_button

DEMO = CurationConfig(class_field="candidate_class", parent_field="parent", keep_label="KEEP",
                      reject_label="REJECT", split_label="SPLIT", merge_label="MERGE")


def test_the_demo_panel_curates_its_taxonomy():
    assert load_panel(demo_panel_path()).curation == DEMO


def test_children_are_typed_one_per_line_or_comma_separated():
    assert parse_children(" Trail shoes\nRoad shoes, Trail shoes,\n\n") == \
        ["Trail shoes", "Road shoes"]


@pytest.mark.parametrize(("label", "children", "into", "message"), [
    ("SPLIT", [], None, "A SPLIT needs the new child classes"),
    ("SPLIT", ["Sneakers", "Boots"], None, "cannot be a child of itself"),
    ("MERGE", [], None, "A MERGE needs the class to merge into"),
    ("MERGE", [], "Sneakers", "cannot merge into itself"),
    ("KEEP", ["A"], None, "New child classes go with SPLIT only"),
    ("REJECT", [], "Trainers", "goes with MERGE only"),
])
def test_a_decision_that_misses_or_adds_a_part_is_a_sentence(label, children, into, message):
    with pytest.raises(DataError, match=message):
        check_decision(DEMO, label, children, into, "Sneakers")


def test_a_complete_decision_passes_and_keeps_only_what_it_needs():
    assert check_decision(DEMO, "SPLIT", ["A", "B"], None, "X") == (["A", "B"], None)
    assert check_decision(DEMO, "MERGE", [], " Trainers ", "X") == ([], "Trainers")
    assert check_decision(DEMO, "KEEP", [], "", "X") == ([], None)
    off = CurationConfig()  # a panel without curation: labels mean nothing more
    assert check_decision(off, "SPLIT", [], None, "X") == ([], None)


@pytest.mark.parametrize(("curation", "message"), [
    ({"split_label": "SPLIT"}, "curation.class_field: name the item field"),
    ({"class_field": "c", "merge_label": "FUSE"}, "curation.merge_label: 'FUSE' is not a label"),
    ({"class_field": "c", "keep_label": "KEEP", "split_label": "KEEP"}, "its own label"),
])
def test_a_curation_that_does_not_fit_the_scale_is_refused(curation, message):
    text = load_panel(demo_panel_path()).model_dump(mode="json")
    text["curation"] = curation
    from judging.panel.panel_model import Panel

    with pytest.raises((ConfigError, ValueError), match=message):
        Panel.model_validate(text)


def test_curate_sorts_each_class_by_its_final_decision():
    taxonomy = curate(DEMO, [
        {"item_id": "1", "fields": {"candidate_class": "Sneakers", "parent": "Footwear"},
         "final_label": "KEEP"},
        {"item_id": "2", "fields": {"candidate_class": "Shoes & Boots", "parent": "Footwear"},
         "final_label": "SPLIT", "children": ["Shoes", "Boots"], "note": "two kinds",
         "reviewer": "ana"},
        {"item_id": "3", "fields": {"candidate_class": "Trainerz"}, "final_label": "MERGE",
         "merge_into": "Trainers", "reviewer": "bob"},
        {"item_id": "4", "fields": {"candidate_class": "Gift Ideas"}, "final_label": "REJECT"},
        {"item_id": "5", "fields": {"candidate_class": "Odd"}, "final_label": None},
    ])
    assert [d.class_name for d in taxonomy.kept] == ["Sneakers"]
    assert [(d.class_name, d.children, d.note, d.reviewer) for d in taxonomy.split] == \
        [("Shoes & Boots", ("Shoes", "Boots"), "two kinds", "ana")]
    assert [(d.class_name, d.merge_into) for d in taxonomy.merged] == [("Trainerz", "Trainers")]
    assert [d.class_name for d in taxonomy.removed] == ["Gift Ideas"]
    assert [d.class_name for d in taxonomy.undecided] == ["Odd"]
    assert taxonomy.kept[0].as_row()["decided_by"] == "panel consensus"


def _decide(path: pathlib.Path, run_id: int) -> dict[str, str]:
    """Three human decisions on the demo run: a split, a merge and a removal."""
    db = open_db(path)
    items = list(final_labels(db, run_id)["item_id"][:3])
    add_override(db, run_id, items[0], "SPLIT", "two kinds", "ana",
                 children=["Trail shoes", "Road shoes"])
    add_override(db, run_id, items[1], "MERGE", "same as its sibling", "bob",
                 merge_into="Hiking Boots")
    add_override(db, run_id, items[2], "REJECT", "=not a product", "ana")
    return {"split": items[0], "merged": items[1], "removed": items[2]}


def test_the_curated_taxonomy_round_trips_as_json_and_csv(demo_db, tmp_path):
    path, run_id = demo_db
    decided = _decide(path, run_id)
    taxonomy = curated_taxonomy(open_db(path), run_id)
    data = json.loads(taxonomy_bytes(taxonomy, "json"))
    assert sum(len(group) for group in data.values()) == 300
    split = next(r for r in data["split"] if r["item_id"] == decided["split"])
    assert (split["children"], split["note"], split["decided_by"]) == \
        (["Trail shoes", "Road shoes"], "two kinds", "ana")
    merged = next(r for r in data["merged"] if r["item_id"] == decided["merged"])
    assert (merged["merge_into"], merged["decided_by"]) == ("Hiking Boots", "bob")
    # The demo's parents are paths, so the taxonomy says where each class sits.
    assert all(" > " in row["parent"] for group in data.values() for row in group)
    removed = next(r for r in data["removed"] if r["item_id"] == decided["removed"])
    assert removed["class"] == item_detail(open_db(path), run_id, decided["removed"])[
        "fields"]["candidate_class"]

    rows = list(csv.DictReader(io.StringIO(taxonomy_bytes(taxonomy, "csv").decode("utf-8"))))
    assert len(rows) == 300
    by_item = {r["item_id"]: r for r in rows}
    assert by_item[decided["split"]]["children"] == "Trail shoes; Road shoes"  # readable
    assert by_item[decided["merged"]]["merge_into"] == "Hiking Boots"
    assert by_item[decided["removed"]]["note"] == "'=not a product"  # a formula, escaped

    # The CLI writes the same file.
    out = tmp_path / "taxonomy.json"
    assert main(["taxonomy", str(run_id), "--out", str(out), "--db", str(path)]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == data


def test_a_run_without_curation_says_so(tmp_path, simulator, capsys):
    data = tmp_path / "d.csv"
    data.write_text("id,text\n1,a\n2,b\n", encoding="utf-8")
    panel = tmp_path / "p.yaml"
    panel.write_text(
        "schema_version: 1\nname: plain\nscale: {kind: nominal, labels: [KEEP, REJECT]}\n"
        f"critics:\n  - {{name: c, vendor: custom, base_url: '{simulator.base_url}', model: m,"
        " prompt_template: 'Judge {text}'}\n", encoding="utf-8")
    db = tmp_path / "r.db"
    assert main(["judge", "--data", str(data), "--panel", str(panel), "--db", str(db),
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["taxonomy", "1", "--out", str(tmp_path / "t.json"), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "does not curate a taxonomy" in err and "Traceback" not in err
    assert not (tmp_path / "t.json").exists()


def test_review_records_a_merge_target_and_refuses_a_merge_without_one(demo_db):
    path, run_id = demo_db
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id)})
    item = at.query_params["item"]
    at.text_input(key=k + "reviewer").set_value("ana").run()
    at.radio(key=f"{k}label.{item}").set_value("MERGE")
    at.text_area(key=f"{k}note.{item}").set_value("duplicates a sibling")
    save_button(at).click().run()
    no_exception(at)
    assert any("needs the class to merge into" in e.value for e in at.error)
    assert at.query_params["item"] == item  # refused: still here, the draft kept
    assert at.text_area(key=f"{k}note.{item}").value == "duplicates a sibling"
    picker = at.selectbox(key=f"{k}merge.{item}")
    target = next(o for o in picker.options
                  if o != item_detail(open_db(path), run_id, item)["fields"]["candidate_class"])
    picker.set_value(target)
    save_button(at).click().run()
    no_exception(at)
    (saved,) = [h for h in item_detail(open_db(path), run_id, item)["overrides"]]
    assert (saved["label"], saved["merge_into"], saved["children"]) == ("MERGE", target, [])


def test_the_export_page_shows_what_changed(demo_db):
    path, run_id = demo_db
    _decide(path, run_id)
    at = open_page("export", query={"run": str(run_id)})
    no_exception(at)
    assert any(s.value == "Curated taxonomy" for s in at.subheader)
    metrics = {m.label: m.value for m in at.metric}
    taxonomy = curated_taxonomy(open_db(path), run_id)
    assert metrics["split"] == f"{len(taxonomy.split):,}" and int(metrics["merged"]) >= 1
    changes = at.dataframe[-1].value
    assert "Trail shoes, Road shoes" in set(changes["children"])
