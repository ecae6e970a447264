"""A rule critic as a guard tier, against the simulated vendor over real HTTP: the items it fails
are rejected before any model is asked, the calls not sent are in the ledger (in memory and in
the stored run), and Review shows the rule's verdict with its reasoning."""

from __future__ import annotations

import pathlib

from judging.demo import demo_dataset_path, guard_rules_panel_path
from judging.engine.calls import CallRunner
from judging.engine.panel_runner import run_panel
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.runs import get_run
from tests.fixtures_simulator import SimulatorFactory
from tests.test_app_smoke import all_text, no_exception, open_page

PROMPT = "Is this support reply acceptable? {text}"


def _guarded_panel(base_url: str) -> Panel:
    return Panel.model_validate({
        "scale": {"kind": "yesno"},
        "critics": [
            {"name": "no_card", "kind": "rule", "tier": 0,
             "rule": {"check": "no-regex", "field": "text", "pattern": r"\b\d{4}-\d{4}\b"}},
            {"name": "short", "kind": "rule", "tier": 0,
             "rule": {"check": "length", "field": "text", "max": 60}},
            *({"name": f"model_{m}", "model": m, "base_url": base_url, "tier": 1,
               "prompt_template": PROMPT, "price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0}
              for m in ("m-a", "m-b")),
        ],
        "cascade": {"guard_tiers": [0], "reject_label": "no", "final_vote": "last_tier"},
    })


def test_a_rule_guard_rejects_items_before_the_model_critics(
        simulator_factory: SimulatorFactory) -> None:
    sim = simulator_factory()
    items = [{"id": f"i{k}", "text": (f"card 1234-{k:04d} please" if k % 3 == 0 else
                                      "x" * 80 if k % 5 == 0 else f"reply number {k}")}
             for k in range(30)]
    carded = {f"i{k}" for k in range(30) if k % 3 == 0}
    too_long = {f"i{k}" for k in range(30) if k % 3 and k % 5 == 0}
    with CallRunner() as runner:
        result = run_panel(_guarded_panel(sim.base_url), items, concurrency=8, runner=runner)
    rejected = carded | too_long
    for pv in result.verdicts:
        critics = [v.critic for v in pv.verdicts]
        if pv.item_id in rejected:
            assert critics == ["no_card", "short"], pv.item_id  # no model was asked
            assert pv.consensus == "no" and pv.tier == 0
            who = "no_card" if pv.item_id in carded else "short"
            assert pv.settled_by == f"tier 0: rejected by {who}", pv.settled_by
            failed = next(v for v in pv.verdicts if v.critic == who)
            assert failed.passed is False and failed.label == "no"
        else:
            assert critics == ["no_card", "short", "model_m-a", "model_m-b"], pv.item_id
            assert pv.settled_by == "tier 1: last tier" and pv.tier == 1
    passed = 30 - len(rejected)
    ledger = result.progress.ledger
    assert ledger.rule_evaluations == 60
    assert ledger.sent_calls == 2 * passed  # the model calls made, and only those
    assert ledger.calls_saved == 2 * len(rejected)  # the model calls the guard saved
    assert ledger.calls == 60 + 2 * passed
    assert sim.stats()["successes"] == 2 * passed  # what the vendor really received
    assert ledger.cost_usd > 0 and ledger.unpriced_calls == 0  # the rules cost nothing


def test_a_stored_guarded_run_keeps_its_ledger_and_review_shows_the_rule(
        app_db: pathlib.Path) -> None:
    db = open_db(app_db)
    try:
        parsed = read_dataset(demo_dataset_path(), id_column="id", gold_column="gold")
        dataset = save_dataset(db, parsed, name="demo")
        run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(guard_rules_panel_path()))
        job = JobRegistry().start_run(str(app_db), run_id, concurrency=32)
        assert job.wait(120)
        run = get_run(db, run_id)
        assert run["status"] == "done", run["error"]
        ledger = run["ledger"]
        # 84 candidate classes of the demo fail the rule: 4 model calls saved for each.
        assert (ledger["rule_evaluations"], ledger["calls_saved"], ledger["sent_calls"]) == (
            300, 336, 864)
        assert run["simulated"]  # its model critics are simulated; the rule calls no vendor
        item = db.execute("SELECT item_id FROM items WHERE dataset_id = ? AND json_extract(fields, "
                          "'$.candidate_class') = 'Canon Products'", [dataset.id]).fetchone()[0]
    finally:
        db.close()
    at = open_page("review", query={"run": str(run_id), "item": str(item)})
    no_exception(at)
    text = all_text(at)
    assert "not_a_product" in text
    assert "rule check (no-regex)" in text  # the card's headline names the check
    assert "no-regex: /" in text and 'matched "Products"' in text  # which rule matched, where
