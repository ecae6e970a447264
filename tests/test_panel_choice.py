"""Which judges do I need: the error correlation and effective size checked by hand and against
numpy, a copy of a critic found redundant, the cheapest panel that is as good, and the test of
the method on LLMBar's five real judges (the picked three against the three most accurate)."""

from __future__ import annotations

import numpy as np
import pytest

from judging.analysis.panel_choice import (
    choose_panel,
    correlated_errors,
    effective_votes,
    size_k_against_top_k,
)


def test_effective_votes_is_the_design_effect() -> None:
    assert effective_votes(5, 0.0) == 5
    assert effective_votes(5, 1.0) == 1
    assert effective_votes(9, 0.5) == pytest.approx(9 / 5)
    # Critics whose errors avoid each other are read as independent: n votes, never more.
    assert effective_votes(4, -0.2) == 4


def _labels(errors: np.ndarray) -> dict[str, dict[str, str | None]]:
    return {f"c{k}": {f"i{n}": "B" if errors[n, k] else "A" for n in range(errors.shape[0])}
            for k in range(errors.shape[1])}


def test_the_error_correlation_is_phi_of_the_error_indicators() -> None:
    errors = correlated_errors(600, 3, 0.3, 0.4, seed=1)
    labels = _labels(errors)
    gold = {f"i{n}": "A" for n in range(600)}
    choice = choose_panel(labels, gold, {c: 1.0 for c in labels}, resamples=100)
    by_pair = {(link.a, link.b): link for link in choice.links}
    expected = np.corrcoef(errors[:, 0], errors[:, 1])[0, 1]
    assert by_pair[("c0", "c1")].rho == pytest.approx(expected)
    assert by_pair[("c0", "c1")].low < expected < by_pair[("c0", "c1")].high
    both = (errors[:, 0] * errors[:, 1]).sum() / np.maximum(errors[:, 0], errors[:, 1]).sum()
    assert by_pair[("c0", "c1")].together == pytest.approx(both)
    mean = np.mean([np.corrcoef(errors[:, a], errors[:, b])[0, 1]
                    for a, b in ((0, 1), (0, 2), (1, 2))])
    assert choice.effective.rho == pytest.approx(mean)
    assert choice.effective.votes == pytest.approx(3 / (1 + 2 * mean))
    assert choice.effective.low <= choice.effective.votes <= choice.effective.high


def test_a_copy_of_a_critic_adds_nothing_and_is_said_so() -> None:
    errors = correlated_errors(300, 3, 0.2, 0.0, seed=2)
    labels = _labels(errors)
    labels["copy"] = dict(labels["c0"])
    gold = {f"i{n}": "A" for n in range(300)}
    choice = choose_panel(labels, gold, {"c0": 1.0, "c1": 1.0, "c2": 1.0, "copy": 1.0},
                          resamples=100)
    assert choice.links[0].a == "c0" and choice.links[0].b == "copy"
    assert choice.links[0].rho == pytest.approx(1.0)
    assert choice.redundant == ["c0 and copy agree on 100% of items and err together on 100% "
                                "of their errors"]
    # Four critics of which two are one: about three votes.
    assert 2.5 < choice.effective.votes < 3.5


def test_the_cheapest_panel_as_good_and_the_pareto_front() -> None:
    # An expensive critic always right, three cheap ones right 70% of the time each.
    rng = np.random.default_rng(3)
    n = 400
    gold = {f"i{k}": "A" for k in range(n)}
    labels = {"big": {f"i{k}": "A" for k in range(n)}}
    for name in ("s1", "s2", "s3"):
        labels[name] = {f"i{k}": "A" if rng.random() < 0.7 else "B" for k in range(n)}
    costs = {"big": 10.0, "s1": 1.0, "s2": 1.0, "s3": 1.0}
    choice = choose_panel(labels, gold, costs, resamples=100)
    full = next(p for p in choice.panels if len(p.critics) == 4)
    # As good as the whole panel (whose ties of two against two count as wrong) for 3, not 13.
    assert choice.recommended.critics == ("s1", "s2", "s3")
    assert choice.recommended.accuracy >= full.accuracy - 0.01
    # The front ends with the one critic always right.
    assert [p.critics for p in choice.front][-1] == ("big",)
    assert choice.front[-1].accuracy == 1.0
    costs_on_front = [p.cost for p in choice.front]
    accuracies = [p.accuracy for p in choice.front]
    assert costs_on_front == sorted(costs_on_front) and accuracies == sorted(accuracies)
    # Cheap critics that are as good: the fewest of them is picked.
    costs = {"big": 100.0, "s1": 1.0, "s2": 1.0, "s3": 1.0}
    cheap = choose_panel({k: v for k, v in labels.items() if k != "big"}, gold,
                         costs, resamples=100, tolerance=0.5)
    assert len(cheap.recommended.critics) == 1


def test_too_few_items_or_critics_is_said() -> None:
    with pytest.raises(ValueError, match="nothing to choose"):
        choose_panel({"a": {"i": "A"}}, {"i": "A"}, {"a": 1.0})
    with pytest.raises(ValueError, match="at least 5 are needed"):
        choose_panel({"a": {"i": "A"}, "b": {"i": "A"}}, {"i": "A"}, {"a": 1.0, "b": 1.0})


def test_on_llmbar_the_picked_three_beat_the_three_most_accurate(llmbar_run) -> None:
    """The issue's test of the method, on real judges: the three-critic panel chosen by its
    vote's accuracy, held out, against the three critics most accurate on their own (the same
    cost). Figures as measured (seed 0, 5 folds)."""
    from judging.runs.stored.run_report import run_panel_choice
    from judging.runs.stored.stored_run import load_run
    from storage.db import open_db
    from storage.reviewing.review_queue import gold_labels, ratings_grid

    db_path, run_id = llmbar_run
    db = open_db(db_path)
    try:
        found = run_panel_choice(db, run_id)
        critics = list(load_run(db, run_id).record.critics)
        grid = ratings_grid(db, run_id, critics, numeric=False)
        gold = gold_labels(db, run_id)
    finally:
        db.close()
    assert found is not None
    choice, priced = found
    assert not priced and choice.items == 419 and choice.basis == "gold labels"
    assert choice.effective.votes == pytest.approx(2.5, abs=0.05)
    assert choice.effective.low < choice.effective.votes < choice.effective.high < 5
    assert choice.recommended.critics == ("GPT-4",)
    labels = {c: {str(i): (None if v is None or v != v else v)
                  for i, v in zip(grid.index, grid[c], strict=True)} for c in critics}
    picked, top = size_k_against_top_k(labels, gold, 3)
    assert picked >= top
    assert (round(picked, 3), round(top, 3)) == (0.694, 0.666)
