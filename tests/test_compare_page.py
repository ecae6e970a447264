"""The Compare page through AppTest, on the demo run and its second panel version (real runs in
a real SQLite file, judged by the simulator on 127.0.0.1)."""

from __future__ import annotations

import pathlib

from judging.runs.background.jobs import prepare_run
from judging.runs.stored.compare_runs import compare_runs
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.runs import get_run
from storage.reviewing.overrides import add_override
from tests.fixtures_app import shown
from tests.fixtures_compare import demo_panel_v2
from tests.test_app_smoke import all_text, no_exception, open_page

Runs = tuple[pathlib.Path, int, int]


def test_compare_shows_flips_with_review_links_figures_and_ledgers(two_runs: Runs) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    expected = compare_runs(db, run_a, run_b)
    db.close()

    at = open_page("compare", query={"run": str(run_a)})
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert at.title[0].value == "Compare"
    # The other run of the dataset is picked, and kept in the URL for a shared link.
    assert at.selectbox(key="compare_run_b").value == run_b
    assert at.query_params["vs"] == str(run_b)

    flipped, measures, ledgers = (frame.value for frame in at.dataframe)
    a, b = f"run #{run_a}", f"run #{run_b}"
    assert list(flipped["item"]) == [f.item_id for f in expected.flipped]
    assert list(flipped[a]) == [f.final_a for f in expected.flipped]
    assert list(flipped[b]) == [f.final_b for f in expected.flipped]
    assert list(flipped[f"review in {a}"]) == [
        f"/review?run={run_a}&item={f.item_id}" for f in expected.flipped]
    assert list(flipped[f"review in {b}"]) == [
        f"/review?run={run_b}&item={f.item_id}" for f in expected.flipped]

    assert list(measures["measure"]) == [
        "Accuracy against the humans", "Accuracy against gold labels",
        "Agreement with the panel's own consensus"]
    gold = measures.set_index("measure").loc["Accuracy against gold labels"]
    assert expected.vs_gold is not None and expected.vs_gold.mcnemar is not None
    assert gold["items"] == 300
    assert gold[f"only in {a}"] == expected.vs_gold.mcnemar.a_only
    assert gold[f"only in {b}"] == expected.vs_gold.mcnemar.b_only
    text = shown(all_text(at))
    assert f"What run #{run_b} changed from run #{run_a}: critic 'lenient' removed" in text
    assert "labels shipped with the data, not a review" in text
    assert "No item that both runs decided has a human label yet" in text

    cost = ledgers.set_index("").loc["cost"]
    assert (cost[a], cost[b]) == (expected.a.ledger.cost_text(), expected.b.ledger.cost_text())


def test_a_link_from_compare_opens_the_item_in_review(two_runs: Runs) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    flip = compare_runs(db, run_a, run_b).flipped[0]
    db.close()
    for run_id in (run_a, run_b):
        at = open_page("review", query={"run": str(run_id), "item": flip.item_id})
        no_exception(at)
        assert at.query_params["item"] == flip.item_id


def test_a_link_to_an_uncontested_flipped_item_opens_it_in_review(two_runs: Runs) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    calm = db.execute(
        "SELECT a.item_id, a.consensus FROM consensus a JOIN consensus b ON b.item_id = a.item_id"
        " AND b.run_id = ? WHERE a.run_id = ? AND NOT a.disagreement AND NOT b.disagreement"
        " ORDER BY a.position LIMIT 1", [run_b, run_a]).fetchone()
    add_override(db, run_a, calm[0], "REJECT" if calm[1] != "REJECT" else "KEEP", "", "ana")
    assert calm[0] in [f.item_id for f in compare_runs(db, run_a, run_b).flipped]
    db.close()
    at = open_page("review", query={"run": str(run_b), "item": calm[0]})
    no_exception(at)
    assert at.query_params["item"] == calm[0]
    # Opened by turning off the filter that hid it, and the page says so.
    assert at.toggle(key=f"rv{run_b}.disagree").value is False
    assert any(f"Opened {calm[0]} from the link: **Disagreements only** was turned off"
               in shown(i.value) for i in at.info), [i.value for i in at.info]


def test_a_run_over_another_dataset_is_refused_with_a_sentence(two_runs: Runs) -> None:
    path, run_a, run_b = two_runs
    db = open_db(path)
    csv = path.parent / "other.csv"
    csv.write_text("id,candidate_class,parent,description,example_members,existing_siblings\n"
                   "X1,Mugs,Kitchen,Cups with a handle,enamel mug,Plates\n", encoding="utf-8")
    other = save_dataset(db, read_dataset(csv, id_column="id"), name="Another dataset")
    run_c = prepare_run(db, dataset_id=other.id, panel=demo_panel_v2())
    db.close()

    at = open_page("compare", query={"run": str(run_a), "vs": str(run_c)})
    no_exception(at)
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1 and "a comparison needs two runs over the same dataset" in errors[0]
    # Run C is not offered; the page falls back to the other run of A's dataset.
    assert at.selectbox(key="compare_run_b").options == [f"#{run_b} · Demo: taxonomy candidates"
                                                         f" × {demo_panel_v2().name} · simulated"]
    assert at.query_params["vs"] == str(run_b)


def test_a_dataset_with_one_run_says_what_to_do(demo_db: tuple[pathlib.Path, int]) -> None:
    _, run_id = demo_db
    at = open_page("compare", query={"run": str(run_id)})
    no_exception(at)
    assert "is the only run over dataset" in shown(at.info[0].value)
    assert not at.dataframe


def test_on_the_demo_one_click_runs_its_second_version(demo_db: tuple[pathlib.Path, int]) -> None:
    from pages.ui.state import registry

    path, run_id = demo_db
    at = open_page("compare", query={"run": str(run_id)})
    at.button(key="compare_demo_v2").click().run()
    no_exception(at)
    assert at.title[0].value == "Run"  # its live progress
    new_id = int(at.query_params["run"])
    job = registry().get(new_id)
    assert job is not None and job.wait(120)
    db = open_db(path)
    assert get_run(db, new_id)["panel_name"] == demo_panel_v2().name
    assert get_run(db, new_id)["status"] == "done"
    db.close()

    at = open_page("compare", query={"run": str(run_id)})
    no_exception(at)
    assert at.selectbox(key="compare_run_b").value == new_id
    assert "critic 'lenient' removed" in shown(all_text(at))
