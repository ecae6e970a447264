"""The audit sample and the label-next queue, checked on simulated panels whose truth is known.

What is simulated and what is real. Each run's panel is simulated with numpy, not over HTTP:
5,000 items, each with a true label, and critics that answer it with their accuracy (a wrong
critic picks another label with its bias weights, or fails), as the simulated vendor does. Two
panels:

- "demo" (the figures named without a suffix): the demo panel's four critics as the simulator
  plays them (`judging.demo.demo_profiles()`: careful 93%, lenient 78% leaning to KEEP, strict
  80% leaning to REJECT, flaky 85% failing 7% of the time after retries), the labels in the
  demo dataset's gold shares, plurality with the panel's pessimistic tie priority;
- "3critics": three critics right 85%, 80% and 75% of the time, wrong labels uniform, plurality
  (a three-way split goes to the first critic). Its unanimous stratum is half the items at
  99.9% accuracy, which leaves the queue less to gain (see `label_next_saving_3critics`).

Everything after the panel's labels is the app's code: `judging.analysis.audit_stats.stratum_codes`
stratifies by agreement, the audit sample is drawn by `proportional_allocation` +
`draw_within`, the label-next queue picks a stratum by `next_strata` (epsilon 0.2) and an item
in it by `draw_within`, and every interval is `stratified_mean`'s or `corrected_share`'s.

Figures (200 seeded runs, seeds 0-199, for each panel):
    audit_interval_coverage      share of runs whose 95% interval from 300 audited items holds
                                 the panel's true accuracy over all 5,000 items (target >= 0.94)
    audit_interval_width_300     mean width of that interval (accuracy as a fraction, 0-1)
    audit_share_coverage         the same coverage for the corrected share of KEEP (PPI)
    label_next_saving            fraction of labels saved: the queue reaches the mean width that
                                 uniform random sampling has at 300 labels with this many fewer
                                 (target >= 0.30). Uniform sampling gets the same stratified
                                 estimator (post-stratified): the saving is the queue's alone.
    label_next_saving_vs_plain_mean  the same against uniform sampling estimated by the plain
                                 share of right labels (Wald interval, finite population
                                 correction): what a user without strata would do
    label_next_coverage          coverage of the queue's interval at that number of labels (the
                                 adaptive allocation must not cost coverage)
    label_next_bias              the queue's estimate at that number of labels minus the true
                                 accuracy, mean over the runs (`label_next_bias_se`: its
                                 standard error): an adaptive allocation that reads the labels'
                                 values stops each stratum at a data-dependent point, which
                                 biases the stratified mean slightly
Each with the suffix `_3critics` for the second panel, and each again with `_by_confidence`
(before the panel's suffix) for the design of `judging.analysis.audit_strata`: strata by the
Dawid-Skene posterior that the consensus is right (sure >= 0.95 > likely >= 0.80 > doubtful;
fitted on the critics' labels, no truth read), and the queue planned from each stratum's mean
posterior (`planned_strata`: counts of labels only, so exactly unbiased). That is the app's
design for every new audit sample (`judging.analysis.audit_design`): the `_by_confidence`
figures are what the app does now; the unsuffixed ones are the design of samples drawn before,
which keep it.
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass

import numpy as np

from benchmarks.figures import bench_line
from judging.analysis.audit_stats import (
    EPSILON,
    STRATA,
    corrected_share,
    draw_within,
    next_strata,
    planned_strata,
    proportional_allocation,
    stratified_mean,
    stratum_codes,
)
from judging.analysis.audit_strata import confidence_codes, consensus_confidence

AGREEMENT = "agreement"  # strata: the panel's agreement levels (samples drawn before)
CONFIDENCE = "confidence"  # strata: the Dawid-Skene posterior of the consensus (new samples)

N_ITEMS = 5_000
RUNS = 200
AUDITED = 300
Z95 = 1.959963984540054


@dataclass(frozen=True)
class SimCritic:
    """One simulated critic: how often it is right, how a wrong answer leans, how often it fails."""

    accuracy: float
    bias: dict[int, float]  # label code -> weight of a wrong answer (others weigh 1)
    failure: float = 0.0


@dataclass(frozen=True)
class SimPanel:
    """A simulated panel: its labels' true shares, its critics, its tie order (label codes)."""

    name: str
    priors: tuple[float, ...]
    critics: tuple[SimCritic, ...]
    tie_order: tuple[int, ...]


def demo_panel() -> SimPanel:
    """The demo panel as the simulator plays it, read from the demo's own files."""
    import pandas as pd

    from judging.demo import demo_dataset_path, demo_panel_path, demo_profiles
    from judging.panel.panel_files import load_panel

    panel = load_panel(demo_panel_path())
    labels = list(panel.scale.labels)
    gold = pd.read_csv(pathlib.Path(demo_dataset_path()))["gold"].value_counts(normalize=True)
    profiles = demo_profiles()
    critics = []
    for critic in panel.critics:
        p = profiles[critic.model]
        # Rate limits and 5xx are retried; a malformed, truncated or refused reply stays failed.
        failure = p.rate_malformed + p.rate_truncated + p.rate_refusal
        critics.append(SimCritic(p.accuracy, {labels.index(k): w for k, w in p.bias.items()},
                                 failure))
    order = [labels.index(x) for x in panel.voting.priority] + [
        i for i, x in enumerate(labels) if x not in panel.voting.priority]
    return SimPanel("demo", tuple(float(gold.get(x, 0.0)) for x in labels), tuple(critics),
                    tuple(order))


THREE_CRITICS = SimPanel("3critics", (0.5, 0.25, 0.15, 0.10),
                         (SimCritic(0.85, {}), SimCritic(0.80, {}), SimCritic(0.75, {})),
                         (0, 1, 2, 3))


def simulate_votes(panel: SimPanel, seed: int, n_items: int = N_ITEMS
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(truth, votes, the panel's label, its agreement) of one simulated run, labels as codes;
    votes is items x critics with -1 for a failed call.

    Plurality over the valid answers, a tie going to the first label of the tie order;
    agreement is the share of ALL critics (failed ones count) backing the label, as stored.
    """
    rng = np.random.default_rng(seed)
    n_labels = len(panel.priors)
    truth = rng.choice(n_labels, n_items, p=np.array(panel.priors) / sum(panel.priors))
    votes = np.empty((n_items, len(panel.critics)), dtype=np.int64)
    for j, critic in enumerate(panel.critics):
        weights = np.ones((n_items, n_labels))
        for label, weight in critic.bias.items():
            weights[:, label] = weight
        weights[np.arange(n_items), truth] = 0.0
        weights /= weights.sum(axis=1, keepdims=True)
        wrong = (weights.cumsum(axis=1) > rng.random((n_items, 1))).argmax(axis=1)
        said = np.where(rng.random(n_items) < critic.accuracy, truth, wrong)
        votes[:, j] = np.where(rng.random(n_items) < critic.failure, -1, said)
    counts = np.stack([(votes == label).sum(axis=1) for label in range(n_labels)], axis=1)
    rank = np.empty(n_labels)
    rank[list(panel.tie_order)] = np.arange(n_labels)
    label = (counts - rank[None, :] / (n_labels + 1.0)).argmax(axis=1)  # ties by the order
    return truth, votes, label, counts.max(axis=1) / len(panel.critics)


def simulate_panel(panel: SimPanel, seed: int,
                   n_items: int = N_ITEMS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(truth, the panel's label, its agreement) of one simulated run (`simulate_votes`)."""
    truth, _, label, agreement = simulate_votes(panel, seed, n_items)
    return truth, label, agreement


def simulate_strata(panel: SimPanel, seed: int, design: str
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(truth, the panel's label, each item's stratum code, each stratum's predicted accuracy)
    of one simulated run, stratified by agreement level (`stratum_codes`; no prediction) or by
    the panel's confidence (`consensus_confidence` cut by `confidence_codes`: a Dawid-Skene fit
    on the critics' labels, no truth read; the prediction is the stratum's mean posterior)."""
    truth, votes, label, agreement = simulate_votes(panel, seed)
    if design == AGREEMENT:
        return truth, label, stratum_codes(agreement), None
    confidence = consensus_confidence(votes, label, len(panel.priors))
    codes = confidence_codes(confidence)
    predicted = np.array([float(np.nanmean(confidence[codes == h])) if (codes == h).any()
                          else np.nan for h in range(len(STRATA))])
    return truth, label, codes, predicted


def _audit(panel: SimPanel, seed: int, design: str) -> tuple[bool, float, bool]:
    truth, label, strata, _ = simulate_strata(panel, seed, design)
    sizes = np.bincount(strata, minlength=len(STRATA))
    rng = np.random.default_rng(10_000 + seed)
    picked = draw_within(strata, proportional_allocation(sizes, AUDITED), rng)
    interval = stratified_mean((label[picked] == truth[picked]).astype(float), strata[picked],
                               sizes)
    assert interval.low is not None and interval.high is not None
    covered = interval.low <= float(np.mean(label == truth)) <= interval.high
    # KEEP's share (code 0), corrected (PPI): the panel's share plus the rectifier.
    panel_count = np.bincount(strata[label == 0], minlength=len(STRATA))
    rect = (truth[picked] == 0).astype(float) - (label[picked] == 0).astype(float)
    share = corrected_share(panel_count, rect, strata[picked], sizes)
    assert share.low is not None and share.high is not None
    return covered, interval.high - interval.low, share.low <= np.mean(truth == 0) <= share.high


def _uniform_widths(panel: SimPanel, seed: int, design: str) -> tuple[float, float]:
    """Interval widths from 300 items drawn uniformly: (stratified estimator, plain share)."""
    truth, label, strata, _ = simulate_strata(panel, seed, design)
    sizes = np.bincount(strata, minlength=len(STRATA))
    rng = np.random.default_rng(20_000 + seed)
    picked = rng.choice(N_ITEMS, AUDITED, replace=False)
    right = (label[picked] == truth[picked]).astype(float)
    width = stratified_mean(right, strata[picked], sizes).width
    p = float(right.mean())
    plain = 2 * Z95 * math.sqrt(p * (1 - p) / AUDITED * (1 - AUDITED / N_ITEMS))
    return (math.nan if width is None else width), plain


def _queue(panel: SimPanel, seed: int, design: str, epsilon: float = EPSILON
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The label-next queue from no labels to 300: the interval's width after m labels (index
    m-1; NaN while a stratum has none), whether it holds the truth, and the estimate minus the
    true accuracy (NaN while undefined)."""
    truth, label, strata, predicted = simulate_strata(panel, seed, design)
    sizes = np.bincount(strata, minlength=len(STRATA))
    true_accuracy = float(np.mean(label == truth))
    rng = np.random.default_rng(30_000 + seed)
    labelled = np.zeros(N_ITEMS, dtype=bool)
    order: list[int] = []
    widths = np.full(AUDITED, np.nan)
    covered = np.zeros(AUDITED, dtype=bool)
    errors = np.full(AUDITED, np.nan)
    for m in range(AUDITED):
        done = np.array(order, dtype=np.int64)
        right = (label[done] == truth[done]).astype(float)
        if predicted is None:  # the adaptive queue, on the labels' values
            (h,) = next_strata(right, strata[done], sizes, 1, rng=rng, epsilon=epsilon)
        else:  # planned from the predictions: counts of labels only
            (h,) = planned_strata(np.bincount(strata[done], minlength=len(STRATA)), predicted,
                                  sizes, 1, rng=rng, epsilon=epsilon)
        # Uniform within the chosen stratum, among its unlabelled items (the app's fresh draw).
        pool = np.flatnonzero(~labelled)
        want = np.zeros(len(STRATA), dtype=np.int64)
        want[h] = 1
        item = int(pool[draw_within(strata[pool], want, rng)[0]])
        labelled[item] = True
        order.append(item)
        done = np.array(order, dtype=np.int64)
        interval = stratified_mean((label[done] == truth[done]).astype(float), strata[done],
                                   sizes)
        if interval.low is not None and interval.high is not None:
            widths[m] = interval.high - interval.low
            covered[m] = interval.low <= true_accuracy <= interval.high
        if interval.estimate is not None:
            errors[m] = interval.estimate - true_accuracy
    return widths, covered, errors


def _labels_to_reach(mean_width: np.ndarray, target: float) -> int:
    reached = np.flatnonzero(mean_width <= target)
    return int(reached[0]) + 1 if len(reached) else AUDITED


def measure(panel: SimPanel, runs: int = RUNS, design: str = AGREEMENT) -> dict[str, float]:
    """Every figure of one panel over `runs` seeded runs (names as in the module's doc)."""
    audits = [_audit(panel, seed, design) for seed in range(runs)]
    uniform = [_uniform_widths(panel, seed, design) for seed in range(runs)]
    queues = [_queue(panel, seed, design) for seed in range(runs)]
    widths = np.stack([w for w, _, _ in queues])
    # Mean width after m labels, over the runs where the interval is defined by then.
    mean_width = np.array([np.mean(col[~np.isnan(col)]) if (~np.isnan(col)).any() else np.inf
                           for col in widths.T])
    stratified_uniform = float(np.nanmean([u[0] for u in uniform]))
    plain_uniform = float(np.mean([u[1] for u in uniform]))
    needed = _labels_to_reach(mean_width, stratified_uniform)
    needed_plain = _labels_to_reach(mean_width, plain_uniform)
    errors = np.array([e[needed - 1] for _, _, e in queues])
    errors = errors[~np.isnan(errors)]
    bias = float(errors.mean())
    bias_se = float(errors.std(ddof=1) / math.sqrt(len(errors)))
    print(f"# {panel.name}, strata by {design}: uniform sampling's mean width at {AUDITED} labels "
          f"is {stratified_uniform:.4f} (stratified) / {plain_uniform:.4f} (plain share); the "
          f"label-next queue reaches them at {needed} / {needed_plain} labels; its estimate "
          f"there minus the truth: mean {bias:+.5f}, standard error {bias_se:.5f} over "
          f"{len(errors)} runs", flush=True)
    return {
        "coverage": float(np.mean([a[0] for a in audits])),
        "width": float(np.mean([a[1] for a in audits])),
        "share_coverage": float(np.mean([a[2] for a in audits])),
        "saving": 1.0 - needed / AUDITED,
        "saving_plain": 1.0 - needed_plain / AUDITED,
        "queue_coverage": float(np.mean([c[needed - 1] for _, c, _ in queues])),
        "bias": bias,
        "bias_se": bias_se,
    }


def run() -> None:
    demo = measure(demo_panel())
    bench_line("audit_interval_coverage", demo["coverage"], "")
    bench_line("audit_interval_width_300", demo["width"], "")
    bench_line("audit_share_coverage", demo["share_coverage"], "")
    bench_line("label_next_saving", demo["saving"], "")
    bench_line("label_next_saving_vs_plain_mean", demo["saving_plain"], "")
    bench_line("label_next_coverage", demo["queue_coverage"], "")
    bench_line("label_next_bias", demo["bias"], "")
    bench_line("label_next_bias_se", demo["bias_se"], "")
    three = measure(THREE_CRITICS)
    bench_line("audit_interval_coverage_3critics", three["coverage"], "")
    bench_line("audit_interval_width_300_3critics", three["width"], "")
    bench_line("audit_share_coverage_3critics", three["share_coverage"], "")
    bench_line("label_next_saving_3critics", three["saving"], "")
    bench_line("label_next_saving_vs_plain_mean_3critics", three["saving_plain"], "")
    bench_line("label_next_coverage_3critics", three["queue_coverage"], "")
    bench_line("label_next_bias_3critics", three["bias"], "")
    bench_line("label_next_bias_se_3critics", three["bias_se"], "")
    # The same, stratified by the panel's confidence (`judging.analysis.audit_strata`).
    demo = measure(demo_panel(), design=CONFIDENCE)
    bench_line("audit_interval_coverage_by_confidence", demo["coverage"], "")
    bench_line("audit_interval_width_300_by_confidence", demo["width"], "")
    bench_line("audit_share_coverage_by_confidence", demo["share_coverage"], "")
    bench_line("label_next_saving_by_confidence", demo["saving"], "")
    bench_line("label_next_saving_vs_plain_mean_by_confidence", demo["saving_plain"], "")
    bench_line("label_next_coverage_by_confidence", demo["queue_coverage"], "")
    bench_line("label_next_bias_by_confidence", demo["bias"], "")
    bench_line("label_next_bias_se_by_confidence", demo["bias_se"], "")
    three = measure(THREE_CRITICS, design=CONFIDENCE)
    bench_line("audit_interval_coverage_by_confidence_3critics", three["coverage"], "")
    bench_line("audit_interval_width_300_by_confidence_3critics", three["width"], "")
    bench_line("audit_share_coverage_by_confidence_3critics", three["share_coverage"], "")
    bench_line("label_next_saving_by_confidence_3critics", three["saving"], "")
    bench_line("label_next_saving_vs_plain_mean_by_confidence_3critics", three["saving_plain"],
               "")
    bench_line("label_next_coverage_by_confidence_3critics", three["queue_coverage"], "")
    bench_line("label_next_bias_by_confidence_3critics", three["bias"], "")
    bench_line("label_next_bias_se_by_confidence_3critics", three["bias_se"], "")


if __name__ == "__main__":
    run()
