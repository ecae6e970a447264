"""The reliability card's statistics (issue 25 part 4), against reference implementations:
Wilson intervals against scipy's `binomtest(...).proportion_ci(method="wilson")` (statsmodels
is not installed here), kappa against `judging.agreement.cohen_kappa` (itself checked against
sklearn on published data) and its bootstrap interval against `scipy.stats.bootstrap` with the
same seed; the trusted rule, the reviewers' gate, and the verbosity probe's default field."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judging.agreement import cohen_kappa, proportion
from judging.analysis import reliability_stats
from judging.analysis.label_gate import LabelGate, label_gate
from judging.analysis.reliability_stats import (
    LabelReliability,
    critic_reliability,
    kappa_interval,
    label_rates,
)
from judging.analysis.team_review import reviewer_agreement
from judging.analysis.verbosity import shown_field, verbosity_probe
from judging.scales import Scale

LABELS = ["KEEP", "REJECT", "SPLIT"]


def _scipy_wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 7), (3, 7), (7, 7), (39, 45),
                                      (102, 105), (500, 1000)])
def test_the_rates_interval_is_scipys_wilson_interval(k: int, n: int, confidence: float) -> None:
    rate = proportion(k, n, confidence=confidence)
    low, high = _scipy_wilson(k, n, confidence)
    assert rate.low == pytest.approx(low, abs=1e-12)
    assert rate.high == pytest.approx(high, abs=1e-12)


def _sample(n: int, seed: int, accuracy: float = 0.8) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    human = rng.choice(LABELS, n, p=[0.5, 0.3, 0.2])
    noise = rng.choice(LABELS, n)
    said = np.where(rng.random(n) < accuracy, human, noise)
    return [str(x) for x in said], [str(x) for x in human]


def test_label_rates_count_one_label_against_the_rest_and_leave_failures_out() -> None:
    said: list[str | None] = ["KEEP", "KEEP", "REJECT", None, "SPLIT", "KEEP", "REJECT"]
    human = ["KEEP", "REJECT", "REJECT", "KEEP", "SPLIT", "KEEP", "KEEP"]
    keep, reject, split = label_rates(said, human, LABELS)
    # Items with a verdict: 6 (the failed one is no verdict). Humans said KEEP on 3 of them:
    # the critic said KEEP on 2. Of the 3 others, it did not say KEEP on 2.
    assert (keep.tpr.agree, keep.tpr.n, keep.tnr.agree, keep.tnr.n) == (2, 3, 2, 3)
    assert (reject.tpr.agree, reject.tpr.n, reject.tnr.agree, reject.tnr.n) == (1, 2, 3, 4)
    assert (split.tpr.agree, split.tpr.n, split.tnr.agree, split.tnr.n) == (1, 1, 5, 5)
    assert (keep.tpr.low, keep.tpr.high) == pytest.approx(_scipy_wilson(2, 3, 0.95))
    (merge,) = label_rates(said, human, ["MERGE"])
    assert merge.tpr.value is None and merge.tpr.reason == "no item labelled MERGE blind"
    assert merge.tnr.agree == merge.tnr.n == 6


def test_trusted_only_when_both_low_ends_clear_the_threshold() -> None:
    perfect_few = LabelReliability("KEEP", proportion(4, 4), proportion(4, 4))
    assert perfect_few.tpr.value == 1.0 and not perfect_few.trusted(0.8)  # low end 0.51
    strong = LabelReliability("KEEP", proportion(95, 100), proportion(190, 200))
    assert strong.tpr.low is not None and strong.tnr.low is not None
    assert strong.trusted(0.88) and not strong.trusted(min(strong.tpr.low, strong.tnr.low) + 1e-9)
    one_sided = LabelReliability("KEEP", proportion(95, 100), proportion(50, 100))
    assert not one_sided.trusted(0.5)
    undefined = label_rates(["KEEP"], ["KEEP"], ["KEEP"])[0]
    assert undefined.tnr.value is None and not undefined.trusted(0.0)


def test_kappa_is_cohens_and_its_interval_is_scipys_percentile_bootstrap() -> None:
    said, human = _sample(120, seed=4)
    result = kappa_interval(said, human, resamples=999, seed=11)
    assert result.value == pytest.approx(cohen_kappa(said, human), abs=1e-12)
    # An independent statistic (judging.agreement's kappa over labels) under scipy's own
    # paired resampling, with the same generator: the same interval.
    codes = {label: i for i, label in enumerate(LABELS)}
    a = np.array([codes[x] for x in said])
    b = np.array([codes[x] for x in human])
    reference = stats.bootstrap(
        (a, b), lambda x, y: cohen_kappa(list(x), list(y)), paired=True, vectorized=False,
        n_resamples=999, method="percentile", confidence_level=0.95,
        rng=np.random.default_rng(11))
    assert result.low == pytest.approx(reference.confidence_interval.low, abs=1e-12)
    assert result.high == pytest.approx(reference.confidence_interval.high, abs=1e-12)
    assert result.undefined == 0 and result.n == 120


def test_the_bootstrap_is_seeded_and_chunking_does_not_change_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said, human = _sample(200, seed=9)
    first = kappa_interval(said, human, resamples=500, seed=3)
    assert kappa_interval(said, human, resamples=500, seed=3) == first
    assert kappa_interval(said, human, resamples=500, seed=4) != first
    # Drawn a few rows at a time (as at a million items), the stream is the same.
    monkeypatch.setattr(reliability_stats, "_CELLS_PER_CHUNK", 7 * 200)
    assert kappa_interval(said, human, resamples=500, seed=3) == first


def test_undefined_kappa_says_why() -> None:
    empty = kappa_interval([], [])
    assert empty.value is None and "no item" in (empty.reason or "")
    same = kappa_interval(["KEEP"] * 5, ["KEEP"] * 5)
    assert same.value is None and "no chance disagreement" in (same.reason or "")
    with pytest.raises(ValueError, match="same items"):
        kappa_interval(["KEEP"], [])


def test_a_critic_card_counts_failures_apart() -> None:
    said, human = _sample(60, seed=2)
    items = [f"i{n}" for n in range(60)]
    by_critic: dict[str, str | None] = dict(zip(items, said, strict=True))
    by_critic["i0"] = None  # failed
    humans = dict(zip(items, human, strict=True))
    humans["extra"] = "KEEP"  # an item the critic was never asked: left out
    card = critic_reliability("c", by_critic, humans, LABELS, resamples=200)
    assert (card.n, card.missing) == (59, 1)
    valid = items[1:]
    assert card.kappa.value == pytest.approx(cohen_kappa([said[int(i[1:])] for i in valid],
                                                         [human[int(i[1:])] for i in valid]))
    assert sum(row.tpr.n for row in card.labels) == 59


def test_the_gate_opens_at_the_threshold_and_says_why_it_refuses() -> None:
    agree = {f"i{n}": {"ann": label, "bo": label}
             for n, label in enumerate(["KEEP", "REJECT", "SPLIT"] * 4)}
    split = {f"i{n}": {"ann": label, "bo": "KEEP"}
             for n, label in enumerate(["KEEP", "REJECT", "SPLIT"] * 4)}
    assert label_gate(reviewer_agreement(agree), 0.8).open
    assert "The human labels are used: the reviewers' alpha on the 12 items" in label_gate(
        reviewer_agreement(agree), 0.8).sentence()
    low = label_gate(reviewer_agreement(split), 0.667)
    assert not low.open and low.alpha is not None and low.alpha < 0.667
    assert low.sentence().startswith("Calibration does not use the human labels yet: the "
                                     "reviewers' alpha on the 12 items")
    assert "below the 0.667 set" in low.sentence()
    alone = label_gate(reviewer_agreement({"i1": {"ann": "KEEP"}}), 0.5)
    assert not alone.open and "no item has been labelled by two reviewers" in alone.sentence()
    assert label_gate(reviewer_agreement({}), None).open  # no threshold: no gate
    assert LabelGate(0.5, 0.5, 3).open  # at the threshold is enough


def test_the_default_verbosity_field_is_the_longest_one_a_prompt_shows() -> None:
    means = {"question": 41.0, "answer_a": 119.3, "answer_b": 126.7, "system_a": 5.3}
    assert shown_field(means, {"c1": ["question", "answer_a"]}) == "answer_a"
    assert shown_field(means, {"c1": ["question"], "c2": ["answer_b"]}) == "answer_b"
    assert shown_field(means, {"c1": ["votes"]}) is None  # no text field shown
    scale = Scale(kind="score", min=0, max=1)
    lengths = {f"i{n}": 10 * n for n in range(12)}
    said = {f"i{n}": n / 12 for n in range(12)}
    probe = verbosity_probe(lengths, {"reads": said, "blind": said}, scale, "answer_a",
                            {"reads": ["answer_a"], "blind": ["answer_b"]})
    reads, blind = probe.rows
    assert reads.rho == pytest.approx(1.0) and blind.rho is None and blind.n == 0
    assert blind.reason == "its prompt does not show answer_a, so its length cannot sway it"
