"""Which judges do I need: does the effective-size estimate recover the truth, and does the
recommended sub-panel keep the accuracy it states on items it was not chosen on?

Synthetic panels whose errors are correlated by construction
(`judging.analysis.panel_choice.correlated_errors`: pairwise error correlation exactly rho, so
the true effective size is n / (1 + (n - 1) rho)), 200 seeds each; gold is "A" and a wrong
critic says "B". Figures: the share of seeds whose interval covers the true size, the median
estimate, and the share of seeds whose recommended panel's true accuracy (its vote on 20,000
fresh items from the same model) falls within the interval stated for the held-out accuracy.
"""

from __future__ import annotations

import os
import statistics

from judging.analysis.panel_choice import (
    choose_panel,
    correlated_errors,
    effective_votes,
    held_out_accuracy,
)

SEEDS = 200
ITEMS = 400
CRITICS = 5
FRESH = 20_000  # items whose vote stands for the true accuracy


def _labels(errors, offset: int) -> dict[str, dict[str, str]]:
    return {f"c{k}": {f"i{offset + n}": "B" if errors[n, k] else "A"
                      for n in range(errors.shape[0])} for k in range(errors.shape[1])}


def run() -> None:
    load = os.getloadavg()[0]
    for rho in (0.0, 0.3, 0.6):
        truth = effective_votes(CRITICS, rho)
        covered, estimates, kept = 0, [], 0
        for seed in range(SEEDS):
            errors = correlated_errors(ITEMS, CRITICS, 0.25, rho, seed)
            labels = _labels(errors, 0)
            gold = {f"i{n}": "A" for n in range(ITEMS)}
            choice = choose_panel(labels, gold, {c: 1.0 for c in labels}, resamples=200,
                                  seed=seed, folds=5)
            e = choice.effective
            covered += e.low <= truth <= e.high
            estimates.append(e.votes)
            fresh = correlated_errors(FRESH, CRITICS, 0.25, rho, seed + 10_000)
            fresh_labels = _labels(fresh, ITEMS)
            fresh_gold = {f"i{ITEMS + n}": "A" for n in range(FRESH)}
            accuracy = held_out_accuracy(fresh_labels, fresh_gold, choice.recommended.critics)
            _, low, high = choice.held_out
            kept += low <= accuracy <= high
        tag = f"rho{rho:g}".replace(".", "")
        print(f"bench: panel_effective_size_coverage_{tag} {covered / SEEDS:.3f} share "
              f"(true {truth:.2f} votes, {SEEDS} seeds, load {load:.1f})")
        print(f"bench: panel_effective_size_median_{tag} {statistics.median(estimates):.2f} votes")
        print(f"bench: panel_recommended_within_interval_{tag} {kept / SEEDS:.3f} share")


if __name__ == "__main__":
    run()
