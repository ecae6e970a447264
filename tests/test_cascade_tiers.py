"""`cascade.tiers` in panel files: checked when the panel is built (the last tier final, every
critic in one tier, each policy's labels on the scale), and old panel files keep loading, keep
their hash and judge as before."""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import pathlib
import re
from collections import Counter
from typing import Any

import pytest

from judging.demo import demo_dataset_path, demo_panel_path
from judging.engine.panel_runner import judge_many
from judging.errors import ConfigError
from judging.panel.panel_files import dump_panel, load_panel, panel_from_dict, panel_hash
from judging.panel.panel_model import Panel
from tests.fixtures_simulator import SimulatorFactory

DEMO = demo_panel_path().parent
PROMPT = "Judge {text}"


def critic(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "vendor": "simulated", "model": "sim-careful",
            "prompt_template": PROMPT, **extra}


def three_tiers() -> dict[str, Any]:
    return {
        "name": "three tiers",
        "scale": {"kind": "nominal", "labels": ["KEEP", "REJECT", "SPLIT", "MERGE"]},
        "critics": [critic("guard"), critic("gate"), critic("a"), critic("b")],
        "cascade": {"tiers": [
            {"name": "guardrails", "critics": ["guard"], "policy": "reject_on_any_fail"},
            {"name": "cheap", "critics": ["gate"], "policy": "accept_on_all_pass"},
            {"name": "panel", "critics": ["a", "b"], "policy": "final",
             "voting": {"strategy": "majority"}},
        ]},
    }


def with_change(path: str, value: Any) -> dict[str, Any]:
    """three_tiers() with the value at a dotted path ("cascade.tiers.2.policy") replaced."""
    data = three_tiers()
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(parts[-1])] = value
    else:
        node[parts[-1]] = value
    return data


def test_a_three_tier_panel_builds_with_sensible_default_labels() -> None:
    panel = panel_from_dict(three_tiers())
    tiers = panel.cascade.tiers
    assert [t.policy for t in tiers] == ["reject_on_any_fail", "accept_on_all_pass", "final"]
    # No labels given: the scale's KEEP reads as pass, REJECT as fail.
    from judging.panel.cascade_tiers import plan_cascade

    plan = plan_cascade(panel.critics, tiers, panel.scale.labels)
    assert [(t.number, t.name, t.critics, t.labels) for t in plan] == [
        (1, "guardrails", (0,), ("REJECT",)), (2, "cheap", (1,), ("KEEP",)),
        (3, "panel", (2, 3), ())]
    # Round trip through the file format: same panel, same hash.
    again = load_panel(dump_panel(panel))
    assert again == panel and panel_hash(again) == panel_hash(panel)


REFUSED = [
    ("cascade.tiers.2.policy", "accept_on_all_pass",
     r"cascade\.tiers\[2\]\.policy: the last tier must be final .* not accept_on_all_pass"),
    ("cascade.tiers.1.policy", "final",
     r"cascade\.tiers\[1\]\.policy: only the last tier can be final"),
    ("cascade.tiers.0.critics", ["gaurd"],
     r"cascade\.tiers\[0\]\.critics: 'gaurd' is not a critic of the panel; did you mean "
     r"'guard'\?"),
    ("cascade.tiers.1.critics", ["gate", "guard"],
     r"cascade\.tiers\[1\]\.critics: 'guard' is already in cascade\.tiers\[0\]; a critic sits "
     r"in one tier"),
    ("cascade.tiers.2.critics", ["a"], r"critics\[3\]: 'b' is in no tier of cascade\.tiers"),
    ("critics.2", critic("a", tier=1),
     r"critics\[2\]\.tier: with cascade\.tiers the tiers name their critics; remove tier: 1"),
    ("cascade.tiers.0.fail_labels", ["NOPE"],
     r"cascade\.tiers\[0\]\.fail_labels: 'NOPE' is not a label of the scale; labels: KEEP, "
     r"REJECT, SPLIT, MERGE"),
    ("cascade.tiers.0.pass_labels", ["KEEP"],
     r"cascade\.tiers\[0\]\.pass_labels: only a tier with policy accept_on_all_pass uses them"),
    ("cascade.tiers.2.fail_labels", ["REJECT"],
     r"cascade\.tiers\[2\]\.fail_labels: only a tier with policy reject_on_any_fail uses them"),
    ("cascade.tiers.2.on_failure", "ignore", r"cascade\.tiers\[2\]\.on_failure: a final tier"),
    ("cascade.tiers.2.voting", {"strategy": "any"},
     r"cascade\.tiers\[2\]\.voting\.target_label: the 'any' strategy needs the label"),
    ("cascade.tiers.2.voting", {"strategy": "dawid-skene"},
     r"cascade\.tiers\[2\]\.voting\.strategy: 'dawid-skene' needs the whole dataset"),
    ("cascade.tiers.2.voting", {"strategy": "plurality", "priority": ["NOPE"]},
     r"cascade\.tiers\[2\]\.voting\.priority\[0\]: 'NOPE' is not a label of the scale"),
    ("cascade.tiers.1.name", "guardrails",
     r"cascade\.tiers\[1\]\.name: 'guardrails' is already the name of cascade\.tiers\[0\]"),
    ("cascade.guard_tiers", [0], r"cascade\.guard_tiers: with cascade\.tiers a guard is a tier "
     r"with policy: reject_on_any_fail"),
    ("cascade.settle", "agreement", r"cascade\.settle: with cascade\.tiers each tier's policy"),
    ("voting", {"strategy": "dawid-skene"}, r"voting\.strategy: 'dawid-skene' needs the whole "
     r"dataset, but each tier of cascade\.tiers decides item by item"),
    ("cascade.tiers.0.critics", [], r"cascade\.tiers\[0\]\.critics: needs at least 1 entry"),
    ("cascade.tiers.0.policy", "reject_any",
     r"cascade\.tiers\[0\]\.policy: must be one of 'reject_on_any_fail', 'accept_on_all_pass' "
     r"or 'final'"),
    ("cascade.tiers.0.per_tier", 1, r"cascade\.tiers\[0\]\.per_tier: unknown field"),
    ("cascade.tiers.2.voting", {"strategy": "majority", "tie_polcy": "abstain"},
     r"cascade\.tiers\[2\]\.voting\.tie_polcy: unknown field; did you mean 'tie_policy'\?"),
]


@pytest.mark.parametrize(("path", "value", "message"), REFUSED, ids=[r[0] + "=" + str(r[1])[:20]
                                                                     for r in REFUSED])
def test_a_bad_cascade_is_refused_with_one_sentence(path: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        panel_from_dict(with_change(path, value))
    assert re.search(message, str(caught.value)), str(caught.value)
    # Built directly (a notebook), the panel refuses the same way: checked when it is built.
    if "unknown field" not in message:
        with pytest.raises((ConfigError, ValueError)):
            Panel.model_validate(with_change(path, value))


def test_a_tier_with_no_label_that_reads_as_fail_must_name_its_labels() -> None:
    data = three_tiers()
    data["scale"] = {"kind": "nominal", "labels": ["A", "B", "tie"]}
    with pytest.raises(ConfigError, match=r"cascade\.tiers\[0\]\.fail_labels: policy "
                       r"reject_on_any_fail needs the labels that count as fail, and none of "
                       r"the scale's labels \(A, B, tie\) reads as fail; name them, e\.g\. "
                       r"fail_labels: \[A\]"):
        panel_from_dict(data)
    data["cascade"]["tiers"][0]["fail_labels"] = ["B"]
    data["cascade"]["tiers"][1]["pass_labels"] = ["A"]
    assert panel_from_dict(data).cascade.tiers[0].fail_labels == ["B"]


def test_a_score_panel_can_only_have_final_tiers() -> None:
    data = three_tiers()
    data["scale"] = {"kind": "score", "min": 0, "max": 1}
    data["voting"] = {"strategy": "mean"}
    data["cascade"]["tiers"][2]["voting"] = {"strategy": "median"}
    with pytest.raises(ConfigError, match=r"cascade\.tiers\[0\]\.policy: reject_on_any_fail "
                       "looks for fail labels, but the scale is a score scale"):
        panel_from_dict(data)


def test_a_rubric_or_batch_panel_counts_named_tiers_as_a_cascade() -> None:
    data = three_tiers()
    data["critics"][0]["mode"] = "batch"
    with pytest.raises(ConfigError, match=r"critics\[0\]\.mode: a batch critic is asked about "
                       "every item at once, but a cascade"):
        panel_from_dict(data)


# -- old panel files ---------------------------------------------------------------------------

# panel_hash of every demo panel file and of the legacy cascade panel of test_panel_page, as
# computed by the code before `cascade.tiers` existed (commit 8cf8a01): a field added with a
# default must not change the version of any panel already saved.
HASHES_BEFORE = {
    "batch_panel.yaml": "4ea3da212ccc07ce",
    "chains_panel.yaml": "c761ae841db16558",
    "demo_panel.yaml": "7e67222d98911649",
    "demo_panel_v2.yaml": "c3f2d8ae1fe3dc01",
    "pairwise_panel.yaml": "4090ab4a350c4f7d",
    "rubric_panel.yaml": "1bbb5e8b4138ed3c",
}
LEGACY_CASCADE = {
    "name": "two tiers", "scale": {"kind": "yesno"},
    "critics": [{"name": "cheap", "model": "sim-lenient", "prompt_template": PROMPT, "tier": 0},
                {"name": "cheap2", "model": "sim-careful", "prompt_template": PROMPT, "tier": 0},
                {"name": "expensive", "model": "sim-strict", "prompt_template": PROMPT,
                 "tier": 1}],
    "voting": {"strategy": "weighted", "use_confidence": True, "priority": ["no"]},
    "cascade": {"settle": "agreement", "min_agreement": 0.75, "guard_tiers": [0],
                "reject_label": "no", "final_vote": "last_tier"},
}


@pytest.mark.parametrize("name", sorted(HASHES_BEFORE))
def test_old_panel_files_load_with_the_same_hash(name: str) -> None:
    panel = load_panel(DEMO / name)
    assert panel.cascade.tiers == []
    assert panel_hash(panel) == HASHES_BEFORE[name]
    assert "tiers" not in dump_panel(panel)  # nothing new written into an old file


def test_a_legacy_cascade_keeps_its_hash_and_its_tiers() -> None:
    panel = panel_from_dict(copy.deepcopy(LEGACY_CASCADE))
    assert panel_hash(panel) == "52439374ad636f97"
    from judging.panel.cascade_tiers import plan_cascade

    plan = plan_cascade(panel.critics, panel.cascade.tiers, panel.scale.labels)
    assert [(t.number, t.critics, t.policy) for t in plan] == [(0, (0, 1), ""), (1, (2,), "")]


LEGACY_RUN_PANEL = """
schema_version: 1
name: legacy cascade
scale: {kind: nominal, labels: [KEEP, REJECT, SPLIT, MERGE]}
voting: {strategy: plurality, priority: [REJECT, SPLIT, MERGE, KEEP]}
cascade: {guard_tiers: [0], reject_label: REJECT}
critics:
  - {name: lenient, vendor: simulated, base_url: BASE_URL, model: sim-lenient,
     prompt_template: "Judge {candidate_class} under {parent}"}
  - {name: flaky, vendor: simulated, base_url: BASE_URL, model: sim-flaky,
     prompt_template: "Judge {candidate_class} under {parent}"}
  - {name: careful, vendor: simulated, base_url: BASE_URL, model: sim-careful,
     prompt_template: "Judge {candidate_class} under {parent}", tier: 1}
"""
# What that panel decided on the first 80 demo items (simulator seed 0), run by the code before
# `cascade.tiers` existed (commit 8cf8a01): the digest covers every item's consensus, tier,
# settled_by, agreement, disagreement flag, critics called and note.
LEGACY_RUN_BEFORE = {
    "digest": "9144c8dd29012b61",
    "consensus": {"KEEP": 23, "MERGE": 18, "REJECT": 27, "SPLIT": 12},
    "settled_by": {"tier 0: guard failure (flaky: parse_fail)": 2,
                   "tier 0: guard failure (flaky: refusal)": 4,
                   "tier 0: guard failure (flaky: truncated)": 4,
                   "tier 0: unanimous": 56, "tier 1: last tier": 14},
}


def test_a_legacy_cascade_judges_as_before(simulator: Any) -> None:
    panel = load_panel(LEGACY_RUN_PANEL.replace("BASE_URL", simulator.base_url))
    with pathlib.Path(demo_dataset_path()).open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:80]
    results = judge_many(panel, rows, concurrency=8)
    items = [[pv.item_id, pv.consensus, pv.tier, pv.settled_by, round(pv.agreement or 0, 4),
              pv.disagreement, [v.critic for v in pv.verdicts], pv.outcome.note]
             for pv in results]
    got = {"digest": hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16],
           "settled_by": dict(Counter(i[3] for i in items)),
           "consensus": dict(Counter(i[1] for i in items))}
    assert got == LEGACY_RUN_BEFORE
    # ...and now each tier called leaves a sub-verdict too, worded as settled_by is.
    for pv in results:
        assert pv.settled_by == f"tier {pv.tier}: {pv.tiers[-1].reason}"
        assert [t.tier for t in pv.tiers] == list(range(pv.tier + 1))
        assert pv.tiers[0].policy == "guard"


def test_a_flat_panel_and_a_one_tier_final_cascade_decide_alike(
        simulator_factory: SimulatorFactory) -> None:
    # A server each, same seed: the simulator's answer also depends on how often it was asked.
    servers = [simulator_factory(seed=3), simulator_factory(seed=3)]
    data = three_tiers()
    data["cascade"] = {}
    for c in data["critics"]:
        c["base_url"] = servers[0].base_url
    flat = panel_from_dict(copy.deepcopy(data))
    data["cascade"] = {"tiers": [{"critics": ["guard", "gate", "a", "b"], "policy": "final"}]}
    for c in data["critics"]:
        c["base_url"] = servers[1].base_url
    one_tier = panel_from_dict(data)
    items = [{"id": f"i{k}", "text": f"candidate {k}"} for k in range(30)]
    a, b = judge_many(flat, items, concurrency=4), judge_many(one_tier, items, concurrency=4)
    assert [(p.consensus, p.agreement, p.disagreement) for p in a] == [
        (p.consensus, p.agreement, p.disagreement) for p in b]
    assert all(not p.tiers for p in b)  # one tier: nothing cascaded, no sub-verdicts
