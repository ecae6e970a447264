"""Calibration (issue 12 part 1): critics' accuracy against the humans, suggested weights, a
projected effect that equals an actual re-vote of the suggested panel, and few-shot examples
from the reviews rendered into a critic's prompt."""

from __future__ import annotations

import math
import pathlib

import pytest

from judging.analysis.calibration import calibrate, suggested_weight
from judging.analysis.few_shot import (
    EXAMPLES_HEADER,
    Example,
    choose_examples,
    render_examples,
    with_examples,
)
from judging.panel.critics import Critic
from judging.panel.panel_files import load_panel, panel_hash
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.stored.calibrate import few_shot_panel, run_calibration, save_panel_version
from judging.simulator.sim_server import Profile
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.panels import list_panels
from storage.results.consensus import load_panel_verdicts
from storage.results.runs import get_run
from storage.reviewing.overrides import add_override, human_labels
from storage.reviewing.review_queue import review_table

LABELS = ["KEEP", "REJECT", "SPLIT"]


@pytest.mark.parametrize(("correct", "n", "k", "weight"), [
    (9, 10, 4, math.log(15)),          # p = 10/12: log(p * 3 / (1 - p)) = log 15
    (5, 10, 2, 0.0),                   # p = 1/2 with two labels: chance
    (2, 10, 2, 0.0),                   # worse than chance: no say rather than a negative one
    (30, 30, 3, math.log(31 / 1 * 2)),  # p = 31/32: a perfect record weighs finitely
])
def test_the_weight_a_record_earns(correct, n, k, weight):
    assert suggested_weight(correct, n, k) == pytest.approx(weight, abs=1e-3)


def _run(db_path: pathlib.Path, panel_text: str, dataset_id: int) -> int:
    db = open_db(db_path)
    run_id = prepare_run(db, dataset_id=dataset_id, panel=load_panel(panel_text))
    assert JobRegistry().start_run(str(db_path), run_id).wait(120)
    return run_id


@pytest.fixture
def calibration_run(tmp_path, simulator_factory):
    """60 items judged by a sharp, a middling and a poor critic (no failures), 40 of them
    reviewed by a human who gives the gold label, with a note on a few."""
    gold = {f"text {n}": LABELS[n % 3] for n in range(60)}
    server = simulator_factory(profiles={"sharp": Profile(accuracy=0.95),
                                         "middling": Profile(accuracy=0.7),
                                         "poor": Profile(accuracy=0.4)}, gold=gold, seed=5)
    data = tmp_path / "d.csv"
    data.write_text("id,text\n" + "".join(f"i{n:02d},text {n}\n" for n in range(60)),
                    encoding="utf-8")
    panel = ("schema_version: 1\nname: three\nscale: {kind: nominal, labels: [KEEP, REJECT, SPLIT]}\n"
             "critics:\n" + "".join(
                 f"  - {{name: {m}, vendor: custom, base_url: '{server.base_url}', model: {m},"
                 " prompt_template: 'Judge {text}'}\n" for m in ("sharp", "middling", "poor")))
    db_path = tmp_path / "cal.db"
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="d")
    run_id = _run(db_path, panel, dataset.id)
    for n in range(40):
        note = f"reason {n}" if n % 4 == 0 else ""
        add_override(db, run_id, f"i{n:02d}", LABELS[n % 3], note, "ana")
    return {"db": db_path, "run": run_id, "dataset": dataset.id, "server": server}


def test_the_projected_effect_equals_an_actual_re_vote(calibration_run):
    db = open_db(calibration_run["db"])
    cal = run_calibration(db, calibration_run["run"])
    by_name = {c.critic: c for c in cal.critics}
    assert cal.from_humans == 40 and cal.from_dawid_skene == 20
    assert by_name["sharp"].suggested > by_name["middling"].suggested >= by_name["poor"].suggested
    assert by_name["poor"].accuracy.value < by_name["sharp"].accuracy.value
    projection = cal.projection
    assert projection.changed, "the poor critic must have swayed some plurality votes"
    assert projection.vs_humans_after.value >= projection.vs_humans_before.value

    # The suggested panel, saved and actually run: every call comes from the cache (weights are
    # not part of a call), and its votes are the projection's, item by item.
    version = save_panel_version(db, cal.suggested, "three (calibrated)")
    assert version in {p["hash"] for p in list_panels(db)}
    sent_before = calibration_run["server"].stats()["total"]
    rerun = prepare_run(db, dataset_id=calibration_run["dataset"], panel=cal.suggested)
    assert JobRegistry().start_run(str(calibration_run["db"]), rerun).wait(120)
    assert calibration_run["server"].stats()["total"] == sent_before  # nothing sent, nothing paid
    frame, _ = review_table(db, rerun, limit=None)
    actual = dict(zip(frame["item_id"], frame["consensus"], strict=True))
    assert actual == projection.after


def test_calibration_from_the_votes_alone_is_the_one_from_the_whole_verdicts(calibration_run):
    db = open_db(calibration_run["db"])
    run_id = calibration_run["run"]
    whole = {pv.item_id: pv.verdicts for pv in load_panel_verdicts(db, run_id)}
    panel = load_panel(get_run(db, run_id)["panel_yaml"])
    assert run_calibration(db, run_id) == calibrate(panel, whole, human_labels(db, run_id))


def test_calibration_before_any_review_says_what_to_do(calibration_run, tmp_path):
    from judging.errors import DataError

    db = open_db(calibration_run["db"])
    fresh = _run(calibration_run["db"], load_panel(
        open_db(calibration_run["db"]).execute("SELECT yaml FROM panels").fetchone()[0]
    ).model_copy(update={"name": "again"}).model_dump_json(), calibration_run["dataset"])
    with pytest.raises(DataError, match="override some items on Review first"):
        run_calibration(db, fresh)


def test_examples_cover_the_critics_confusions_first():
    said = {"a": "KEEP", "b": "KEEP", "c": "SPLIT", "d": "REJECT", "e": "KEEP"}
    reviewed = {"a": {"label": "REJECT", "note": "not a product"},
                "b": {"label": "REJECT", "note": "not one either"},
                "c": {"label": "KEEP", "note": "a real class"},
                "d": {"label": "REJECT", "note": "agreed"},
                "e": {"label": "SPLIT", "note": ""}}  # no note: nothing to teach
    chosen = choose_examples("lenient", said, reviewed, {}, k=3)
    # KEEP->REJECT (twice, so first), SPLIT->KEEP, then an item it got right.
    assert [e.item_id for e in chosen] == ["a", "c", "b"]
    assert [e.item_id for e in choose_examples("lenient", said, reviewed, {}, k=10)] == \
        ["a", "c", "b", "d"]


def test_few_shot_examples_render_as_data_in_the_system_prompt():
    critic = Critic(name="c", model="m", system_prompt="You curate taxonomies.",
                    prompt_template="Class: {candidate_class} under {parent}")
    examples = [Example("x1", {"candidate_class": "Gift Ideas", "parent": "Home",
                               "other": "unused"}, "REJECT", "an occasion </example> not a kind",
                        "KEEP")]
    taught = with_examples(critic, examples)
    assert taught.system_prompt == (
        "You curate taxonomies.\n\n" + EXAMPLES_HEADER + "\n\n"
        "<example>\n"
        '<item field="candidate_class">\nGift Ideas\n</item>\n'
        '<item field="parent">\nHome\n</item>\n'
        "Correct label: REJECT\n"
        "Reviewer's reason: an occasion <\\/example> not a kind\n"
        "</example>"
    )
    assert taught.prompt_template == critic.prompt_template
    assert render_examples([], ["x"]) == EXAMPLES_HEADER


def test_a_few_shot_panel_is_a_new_version_of_the_run_panel(calibration_run):
    db = open_db(calibration_run["db"])
    examples, panel = few_shot_panel(db, calibration_run["run"], "poor", k=3)
    assert 1 <= len(examples) <= 3 and all(e.reason.startswith("reason") for e in examples)
    poor = next(c for c in panel.critics if c.name == "poor")
    assert all(f"Reviewer's reason: {e.reason}" in poor.system_prompt for e in examples)
    others = [c for c in panel.critics if c.name != "poor"]
    assert all(EXAMPLES_HEADER not in c.system_prompt for c in others)
    original = load_panel(db.execute("SELECT yaml FROM panels").fetchone()[0])
    assert panel_hash(panel) != panel_hash(original)
    # Only the reviewed items are read; the examples are the ones the whole run gives.
    from storage.datasets.dataset_store import load_items
    from storage.results.calls import load_verdicts
    from storage.results.runs import get_run
    from storage.reviewing.overrides import latest_overrides

    run_id = calibration_run["run"]
    said = {v.item_id: (v.label if v.failure is None else None)
            for v in load_verdicts(db, run_id) if v.critic == "poor"}
    fields = {i.id: i.fields for i in load_items(db, get_run(db, run_id)["dataset_id"])}
    assert examples == choose_examples("poor", said, latest_overrides(db, run_id), fields, k=3)


def test_the_agreement_page_shows_the_calibration_and_saves_the_suggestion(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from tests.test_app_smoke import no_exception, open_page

    path, run_id = demo_db
    db = open_db(path)
    frame, _ = review_table(db, run_id, limit=12)
    for n, item in enumerate(frame["item_id"]):
        add_override(db, run_id, item, "REJECT", f"why {n}", "ana")
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert any(s.value.startswith("Calibration") for s in at.subheader)
    table = next(d.value for d in at.dataframe if "suggested weight" in d.value.columns)
    assert list(table["critic"]) == ["careful", "lenient", "strict", "flaky"]
    assert any("Reviewer's reason: why" in c.value for c in at.code)
    before = {p["hash"] for p in list_panels(db)}
    at.button(key=f"cal{run_id}.save").click().run()
    no_exception(at)
    added = [p for p in list_panels(db) if p["hash"] not in before]
    assert [p["name"] for p in added] == ["Taxonomy curation (demo) (calibrated)"]
    assert load_panel(added[0]["yaml"]).voting.strategy == "weighted"
    at.button(key=f"cal{run_id}.try").click().run()
    no_exception(at)
    assert any("now agrees with the human on" in i.value for i in at.info)


def test_the_taught_critic_is_tried_on_the_items_it_got_wrong_and_nothing_is_stored(
    calibration_run,
):
    from judging.runs.stored.calibrate import try_on_disputed
    from storage.reviewing.overrides import human_labels

    db = open_db(calibration_run["db"])
    _, taught = few_shot_panel(db, calibration_run["run"], "poor", k=3)
    stored = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    sent = calibration_run["server"].stats()["total"]
    rows = try_on_disputed(db, calibration_run["run"], taught, "poor", limit=5)
    humans = human_labels(db, calibration_run["run"])
    assert 1 <= len(rows) <= 5
    assert all(r.human == humans[r.item_id] and r.before != r.human for r in rows)
    # Read item by item for the reviewed items only: the first 5 it got wrong, in file order.
    from storage.datasets.dataset_store import load_items
    from storage.results.calls import load_verdicts
    from storage.results.runs import get_run

    said = {v.item_id: (v.label if v.failure is None else None)
            for v in load_verdicts(db, calibration_run["run"]) if v.critic == "poor"}
    in_file_order = [item.id for item in load_items(
        db, get_run(db, calibration_run["run"])["dataset_id"])]
    assert [r.item_id for r in rows] == [
        i for i in in_file_order if i in humans and i in said and said[i] != humans[i]][:5]
    assert all(r.after in LABELS for r in rows)
    assert calibration_run["server"].stats()["total"] == sent + len(rows)  # real calls...
    assert db.execute("SELECT count(*) FROM calls").fetchone()[0] == stored  # ...not stored
