"""The three tier policies of `cascade.tiers` (Agent Judge's CascadedJury), as table tests of
the pure decision, and the outcome of an item a tier stopped."""

from __future__ import annotations

import pytest

from judging.panel.cascade_policy import TierDecision, apply_policy, stopped_outcome
from judging.panel.cascade_tiers import Tier, default_labels
from judging.scales import Scale
from judging.verdicts import FailureKind, Verdict, VoteOutcome
from judging.voting.strategies import VotingConfig, vote

SCALE = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])


def verdicts(*labels: str | None) -> list[Verdict]:
    """One verdict per label, critics c0, c1, ...; None is a critic that gave no verdict."""
    return [Verdict(critic=f"c{i}", item_id="x", label=label) if label is not None else
            Verdict(critic=f"c{i}", item_id="x", failure=FailureKind.ERROR, message="boom")
            for i, label in enumerate(labels)]


def decide(policy: str, labels: tuple[str, ...], given: list[Verdict],
           on_failure: str = "fail") -> TierDecision:
    tier = Tier(number=1, critics=tuple(range(len(given))), name="t", policy=policy,
                labels=labels, on_failure=on_failure)
    outcome = vote(given, {}, VotingConfig(), SCALE)
    return apply_policy(tier, given, outcome, "plurality")


REJECT_TABLE = [
    # (votes, on_failure, step, label, agreement, reason)
    (("KEEP",), "fail", "next", None, None, "passed: no critic voted REJECT"),
    (("REJECT",), "fail", "rejected", "REJECT", 1.0, "rejected by c0 (REJECT)"),
    (("KEEP", "REJECT"), "fail", "rejected", "REJECT", 0.5, "rejected by c1 (REJECT)"),
    (("REJECT", "REJECT"), "fail", "rejected", "REJECT", 1.0, "rejected by c0, c1 (REJECT)"),
    (("SPLIT", "MERGE"), "fail", "next", None, None, "passed: no critic voted REJECT"),
    ((None, "KEEP"), "fail", "rejected", "REJECT", 0.0,
     "rejected: c0 gave no verdict (error) and the tier fails closed"),
    ((None, "KEEP"), "ignore", "next", None, None, "passed: no critic voted REJECT"),
    ((None, "REJECT"), "ignore", "rejected", "REJECT", 0.5, "rejected by c1 (REJECT)"),
]


@pytest.mark.parametrize(("votes", "on_failure", "step", "label", "agreement", "reason"),
                         REJECT_TABLE)
def test_reject_on_any_fail(votes: tuple[str | None, ...], on_failure: str, step: str,
                            label: str | None, agreement: float | None, reason: str) -> None:
    got = decide("reject_on_any_fail", ("REJECT",), verdicts(*votes), on_failure)
    assert (got.step, got.label, got.agreement, got.reason) == (step, label, agreement, reason)


def test_the_first_failing_critics_label_is_the_rejection_with_two_fail_labels() -> None:
    got = decide("reject_on_any_fail", ("REJECT", "SPLIT"), verdicts("KEEP", "SPLIT", "REJECT"))
    assert (got.step, got.label, got.reason) == ("rejected", "SPLIT",
                                                 "rejected by c1, c2 (SPLIT)")


ACCEPT_TABLE = [
    (("KEEP",), "fail", "accepted", "KEEP", 1.0, "accepted: c0 voted KEEP"),
    (("KEEP", "KEEP"), "fail", "accepted", "KEEP", 1.0, "accepted: c0, c1 voted KEEP"),
    (("KEEP", "SPLIT"), "fail", "next", None, None, "went on: c1 voted SPLIT"),
    (("REJECT",), "fail", "next", None, None, "went on: c0 voted REJECT"),
    (("KEEP", None), "fail", "next", None, None, "went on: c1 gave no verdict (error)"),
    (("KEEP", None), "ignore", "accepted", "KEEP", 0.5, "accepted: c0 voted KEEP"),
    ((None, None), "ignore", "next", None, None, "went on: no critic gave a verdict"),
]


@pytest.mark.parametrize(("votes", "on_failure", "step", "label", "agreement", "reason"),
                         ACCEPT_TABLE)
def test_accept_on_all_pass(votes: tuple[str | None, ...], on_failure: str, step: str,
                            label: str | None, agreement: float | None, reason: str) -> None:
    got = decide("accept_on_all_pass", ("KEEP",), verdicts(*votes), on_failure)
    assert (got.step, got.label, got.agreement, got.reason) == (step, label, agreement, reason)


def test_accept_with_two_pass_labels_takes_the_most_common_one() -> None:
    # Plurality over KEEP, MERGE, MERGE is MERGE: a pass label, so the item stops as MERGE,
    # backed by two critics of three.
    got = decide("accept_on_all_pass", ("KEEP", "MERGE"), verdicts("KEEP", "MERGE", "MERGE"))
    assert (got.step, got.label, got.agreement) == ("accepted", "MERGE", pytest.approx(2 / 3))


@pytest.mark.parametrize(("votes", "reason"), [
    (("KEEP", "KEEP", "SPLIT"), "decided KEEP by plurality, agreement 0.67"),
    (("KEEP", None), "decided KEEP by plurality, agreement 0.50"),
    ((None, None), "decided no consensus by plurality"),
])
def test_final_always_decides(votes: tuple[str | None, ...], reason: str) -> None:
    got = decide("final", (), verdicts(*votes))
    assert (got.step, got.reason) == ("decided", reason)


def test_a_stopped_item_reports_its_label_and_flags_anything_short_of_the_whole_tier() -> None:
    given = verdicts("KEEP", "REJECT")
    outcome = vote(given, {}, VotingConfig(), SCALE)
    decision = decide("reject_on_any_fail", ("REJECT",), given)
    stopped = stopped_outcome(decision, outcome, None)
    assert (stopped.consensus, stopped.agreement, stopped.disagreement) == ("REJECT", 0.5, True)
    assert stopped.counts == {"KEEP": 1, "REJECT": 1}  # what the critics said stays visible
    # The panel's reject_label replaces the fail label the critic voted.
    assert stopped_outcome(decision, outcome, "SPLIT").consensus == "SPLIT"
    unanimous = decide("reject_on_any_fail", ("REJECT",), verdicts("REJECT"))
    clean = stopped_outcome(unanimous, VoteOutcome("REJECT", 1.0, False), None)
    assert (clean.consensus, clean.agreement, clean.disagreement) == ("REJECT", 1.0, False)


@pytest.mark.parametrize(("labels", "kind", "expected"), [
    (["yes", "no"], "pass", ["yes"]),
    (["yes", "no"], "fail", ["no"]),
    (["KEEP", "REJECT", "SPLIT", "MERGE"], "pass", ["KEEP"]),
    (["KEEP", "REJECT", "SPLIT", "MERGE"], "fail", ["REJECT"]),
    (["PASS", "FAIL", "unsure"], "fail", ["FAIL"]),
    (["safe", "unsafe"], "pass", ["safe"]),
    (["A", "B", "tie"], "fail", []),
])
def test_default_pass_and_fail_labels(labels: list[str], kind: str, expected: list[str]) -> None:
    assert default_labels(labels, kind) == expected  # type: ignore[arg-type]
