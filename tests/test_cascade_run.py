"""A three-tier cascade run for real (the simulator over HTTP on 127.0.0.1, SQLite, the Review
page): cheap guard -> cheap gate -> expensive panel, against the same critics flat. The ledger
counts the calls the early stops saved and what they would have cost; each item's tier
sub-verdicts are stored and shown on Review."""

from __future__ import annotations

import csv
import pathlib
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from judging.demo import demo_dataset_path, demo_gold, demo_profiles
from judging.engine.cascade_savings import saved_call_usd
from judging.engine.ledger import Ledger
from judging.engine.panel_runner import run_panel
from judging.panel.cascade import CascadeConfig
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.verdicts import Item
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.consensus import load_panel_verdicts
from storage.results.runs import get_run
from storage.reviewing.review_queue import item_detail
from tests.fixtures_simulator import SimulatorFactory
from tests.test_app_smoke import APP, no_exception, open_page

CASCADE_PANEL = demo_dataset_path().with_name("cascade_panel.yaml")
N_ITEMS = 120


def demo_rows(n: int = N_ITEMS) -> list[dict[str, Any]]:
    with pathlib.Path(demo_dataset_path()).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))[:n]


def pointed_at(panel: Panel, base_url: str) -> Panel:
    critics = [c.model_copy(update={"base_url": base_url}) for c in panel.critics]
    return panel.model_copy(update={"critics": critics})


def flat_of(panel: Panel) -> Panel:
    """The same model critics, every one asked about every item, voting as the final tier does
    (a flat panel has no guard: the free rule stays out)."""
    models = [c.model_dump() for c in panel.critics if c.kind != "rule"]
    return Panel.model_validate({**panel.model_dump(), "critics": models,
                                 "cascade": CascadeConfig().model_dump(),
                                 "voting": panel.cascade.tiers[-1].voting.model_dump()})


def test_three_tiers_save_calls_and_dollars_against_the_same_critics_flat(
        simulator_factory: SimulatorFactory) -> None:
    cascade = load_panel(CASCADE_PANEL)
    rows = demo_rows()
    # A server per run, same seed: its answers also depend on how often a request was seen.
    servers = [simulator_factory(profiles=demo_profiles(), gold=demo_gold(), seed=0)
               for _ in range(2)]
    cascaded = run_panel(pointed_at(cascade, servers[0].base_url), rows, concurrency=16)
    flat = run_panel(pointed_at(flat_of(cascade), servers[1].base_url), rows, concurrency=16)
    c, f = cascaded.progress.ledger, flat.progress.ledger
    n_critics = len(flat_of(cascade).critics)

    assert f.calls == N_ITEMS * n_critics and f.calls_saved == 0 and f.saved_usd == 0.0
    # Every model call the cascade did not make is counted as saved, and only those; the rule
    # was evaluated on every item, for nothing.
    assert c.rule_evaluations == N_ITEMS
    assert c.calls - c.rule_evaluations + c.calls_saved == f.calls
    assert c.calls_saved > 0 and c.saved_unpriced == 0
    assert c.cost_usd < f.cost_usd

    by_tier = {1: 0, 2: 0, 3: 0}
    expected_saved = 0.0
    flat_cost_of_saved = 0.0
    flat_by_item = {pv.item_id: {v.critic: v for v in pv.verdicts} for pv in flat.verdicts}
    final = cascade.cascade.tiers[-1]
    for pv, row in zip(cascaded.verdicts, rows, strict=True):
        by_tier[pv.tier] += 1
        called = [v.critic for v in pv.verdicts]
        assert [t.tier for t in pv.tiers] == list(range(1, pv.tier + 1))
        assert pv.settled_by == pv.tiers[-1].text
        if pv.tier == 1:  # the rule said REJECT: no model was asked
            assert called == ["not_a_product"] and pv.consensus == "REJECT"
            assert pv.settled_by == "tier 1 guardrails: rejected by not_a_product (REJECT)"
        elif pv.tier == 2:  # the rule let it through and the gate said KEEP
            assert called == ["not_a_product", "gate"] and pv.consensus == "KEEP"
            assert pv.tiers[0].step == "next" and pv.tiers[0].label != "REJECT"
            assert pv.settled_by == "tier 2 cheap: accepted: gate voted KEEP"
        else:  # the final panel decided alone (final_vote: last_tier), by its own strategy
            assert called == ["not_a_product", "gate", "careful", "second", "flaky"]
            assert [t.step for t in pv.tiers] == ["next", "next", "decided"]
            own = cascade.vote(pv.verdicts[2:], final.voting)
            assert pv.consensus == own.consensus and pv.strategy == "weighted"
        later = [cr for cr in cascade.critics if cr.name not in called]
        item = Item.coerce(row, 0)
        for critic in later:
            expected_saved += saved_call_usd(critic, item, cascade.scale,
                                             {x.name: x for x in cascade.critics}) or 0.0
            flat_cost_of_saved += flat_by_item[pv.item_id][critic.name].cost_usd or 0.0
    assert all(by_tier.values()), by_tier  # every tier stopped some items
    assert c.calls_saved == by_tier[1] * 4 + by_tier[2] * 3
    assert c.saved_usd == pytest.approx(expected_saved)
    # The estimate (prompt length, a typical reply) is near what the flat run paid for the
    # very same calls (the simulator's replies are shorter than a typical one).
    assert 0.5 < c.saved_usd / flat_cost_of_saved < 2.0, (c.saved_usd, flat_cost_of_saved)
    assert "saved by the cascade (about $" in c.sent_text()


def test_sub_verdicts_are_stored_and_shown_on_review(app_db: pathlib.Path) -> None:
    # A background job through storage, as the app runs it, on the shared simulator.
    db = open_db(app_db)
    parsed = read_dataset(demo_dataset_path(), id_column="id", gold_column="gold")
    dataset = save_dataset(db, parsed, name="Demo: taxonomy candidates")
    panel = load_panel(CASCADE_PANEL)
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    job = JobRegistry().start_run(str(app_db), run_id, concurrency=32)
    assert job.wait(120), "the cascade run did not finish in 120 s"
    run = get_run(db, run_id)
    assert run["status"] == "done", run["error"]
    ledger = Ledger.from_mapping(run["ledger"])
    assert ledger.calls + ledger.calls_saved == 300 * len(panel.critics)
    assert ledger.calls_saved > 0 and ledger.saved_usd > 0
    assert job.progress().calls_saved == ledger.calls_saved

    stored = {pv.item_id: pv for pv in load_panel_verdicts(db, run_id)}
    assert len(stored) == 300
    rejected = next(pv for pv in stored.values() if pv.tier == 1)
    assert [t.text for t in rejected.tiers] == [
        "tier 1 guardrails: rejected by not_a_product (REJECT)"]
    escalated = next(pv for pv in stored.values() if pv.tier == 3)
    assert [(t.tier, t.name, t.policy, t.step) for t in escalated.tiers] == [
        (1, "guardrails", "reject_on_any_fail", "next"),
        (2, "cheap", "accept_on_all_pass", "next"),
        (3, "panel", "final", "decided")]
    assert escalated.tiers[2].critics == ["careful", "second", "flaky"]
    detail = item_detail(db, run_id, escalated.item_id)
    assert [t["name"] for t in detail["consensus"]["tiers"]] == ["guardrails", "cheap", "panel"]

    for pv in (rejected, escalated):
        at = AppTest.from_file(str(APP), default_timeout=60)
        at.query_params["run"], at.query_params["item"] = str(run_id), pv.item_id
        # A guard's unanimous rejection is no disagreement: list every item to open it.
        at.session_state[f"rv{run_id}.disagree"] = False
        at.switch_page("pages/review.py")
        at.run()
        no_exception(at)
        texts = [t.value for t in at.text]
        assert f"consensus {pv.consensus}" in " ".join(texts)
        for tier in pv.tiers:
            assert tier.text in texts, (tier.text, texts)
    at = open_page("review", query={"run": str(run_id), "item": escalated.item_id})
    texts = [t.value for t in at.text]
    assert any(t.startswith("tier 2 cheap: went on: gate voted ") for t in texts), texts


def _rule(name: str, pattern: str, **extra: Any) -> dict[str, Any]:
    """A free rule critic on a yes/no scale: "no" when the text matches `pattern`."""
    return {"name": name, "kind": "rule", "pass_label": "yes", "fail_label": "no",
            "rule": {"check": "no-regex", "field": "text", "pattern": pattern}, **extra}


@pytest.mark.parametrize("named_tiers", [True, False])
def test_a_guard_that_rejects_records_what_it_decided_not_its_majority(
        named_tiers: bool) -> None:
    # Three checks guard the item; two pass ("yes") and one fails ("no"), so the guard rejects
    # it. Its sub-verdict is that rejection: "no", backed by one critic of three, not the
    # plurality "yes" of the checks that passed.
    guards = [_rule("short", "x{500}"), _rule("polite", "(?i)idiot"), _rule("clean", "(?i)spam")]
    final = _rule("final", "never-matches-this")
    if named_tiers:
        cascade: dict[str, Any] = {"tiers": [
            {"name": "guardrails", "critics": ["short", "polite", "clean"],
             "policy": "reject_on_any_fail", "fail_labels": ["no"]},
            {"name": "last", "critics": ["final"], "policy": "final"}]}
        critics = [*guards, final]
    else:
        cascade = {"guard_tiers": [0]}
        critics = [{**g, "tier": 0} for g in guards] + [{**final, "tier": 1}]
    panel = Panel.model_validate({"name": "guarded", "scale": {"kind": "yesno"},
                                  "cascade": cascade, "critics": critics})
    result = run_panel(panel, [{"id": "a", "text": "buy spam now"}])
    (pv,) = result.verdicts
    guard = pv.tiers[0]
    assert guard.step == "rejected" and pv.tier == guard.tier
    assert [v.label for v in pv.verdicts] == ["yes", "yes", "no"]
    assert guard.label == "no" and guard.agreement == pytest.approx(1 / 3)
    assert "yes" not in str(guard.label)
    if named_tiers:  # the item stops with the guard's own label
        assert pv.consensus == "no"
    # With the panel's reject_label the guard records that label, as the item does.
    panel = panel.model_copy(update={"cascade": panel.cascade.model_copy(
        update={"reject_label": "no"})})
    (pv,) = run_panel(panel, [{"id": "a", "text": "buy spam now"}]).verdicts
    assert (pv.tiers[0].label, pv.consensus) == ("no", "no")
