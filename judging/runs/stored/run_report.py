"""The agreement report of a stored run: storage's tables in, `AgreementReport` out.

The Agreement page and `jurybox stats RUN` both call `run_agreement_report`, so they show the
same figures from the same inputs. This module gathers those inputs (every critic outcome,
the consensus, the humans' latest labels, the gold labels and the scale of the panel the run
snapshot holds) and hands them to `judging.analysis.agreement_report.table_agreement_report`; it holds no
statistics and no SQL of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from judging.analysis.agreement_report import AgreementReport, as_numbers, table_agreement_report
from judging.analysis.expected_stats import (
    ExpectedScoreReport,
    expected_score_alpha,
    probability_calibration,
)
from judging.analysis.pairwise_stats import (
    PairwiseReport,
    bradley_terry,
    order_accuracy,
    position_bias,
    win_rates,
)
from judging.analysis.panel_choice import PanelChoice, choose_panel
from judging.analysis.rubric_stats import RubricReport, rubric_report
from judging.analysis.stability import CriticStability, stability
from judging.analysis.verbosity import VerbosityProbe, orders_verdicts, shown_field, verbosity_probe
from judging.errors import DataError
from judging.panel.panel_files import load_panel
from judging.runs.stored.stored_run import decision_rule, load_run
from storage.datasets.dataset_store import field_lengths, get_dataset, load_items, text_field_lengths
from storage.results.calls import critic_costs, order_answers, sample_values
from storage.results.consensus import consensus_values, load_consensus
from storage.results.expected_scores import expected_score_rows, has_label_probs, pooled_against_humans
from storage.results.runs import get_run
from storage.reviewing.criteria import critic_marks
from storage.reviewing.overrides import final_labels, human_labels
from storage.reviewing.review_queue import gold_labels, ratings_grid, valid_values

if TYPE_CHECKING:
    import sqlite_utils

SAMPLE_ITEMS = 5_000  # items read to tell which text field is the longest (see run_verbosity)


def run_agreement_report(
    db: sqlite_utils.Database,
    run_id: int,
    *,
    resamples: int = 1000,
    seed: int | None = 0,
    humans: Mapping[str, str] | None = None,
) -> AgreementReport:
    """Every agreement figure of a stored run, computed from the database.

    Args:
        db: this thread's connection (`storage.db.open_db`).
        run_id: the run.
        resamples: bootstrap resamples for alpha's confidence interval.
        seed: bootstrap seed (the same seed gives the same interval).
        humans: item_id -> the humans' latest label, when the caller already read it (the page
            does, for its cache key); default: read from the database.

    Returns:
        The `AgreementReport` of the run, at the level of the run panel's scale, with the
        critics in panel order and agreement against the consensus, the humans (latest
        override per item) and the gold labels.

    Raises:
        storage.db.NotFoundError: no run has this id.
        ValueError: stored ratings that do not fit the panel's scale.
    """

    run = get_run(db, run_id)
    panel = load_panel(run["panel_yaml"])
    numeric = panel.scale.is_numeric
    critics = list(run["critics"])
    ratings = ratings_grid(db, run_id, critics, numeric=numeric)
    consensus = consensus_values(db, run_id, numeric=numeric)
    # The humans' labels by the run's decision rule: a rubric reviewer's criterion marks count.
    overrides: dict[str, Any] = dict(human_labels(db, run_id, decision_rule(panel))
                                     if humans is None else humans)
    gold: dict[str, Any] = gold_labels(db, run_id)
    if numeric:
        # Overrides and gold labels are stored as text; on a score scale they are figures,
        # and compared as text they would never match a critic's score.
        overrides, gold = as_numbers(overrides), as_numbers(gold)
    return table_agreement_report(
        ratings,
        scale=panel.scale,
        consensus=consensus,
        overrides=overrides,
        gold=gold,
        resamples=resamples,
        seed=seed,
        voting=panel.voting,  # a score panel's critics back its consensus by its own rule
    )


def run_verbosity(db: Any, run_id: int, field_name: str | None = None) -> VerbosityProbe:
    """The verbosity probe of a stored run (`judging.analysis.verbosity`): each critic's valid verdicts
    against the length of `field_name` (default: of the fields the critics' prompt templates
    show, the one with the longest mean text: `judging.analysis.verbosity.shown_field`). A critic whose
    prompt does not show the field measured gets no figure, with the reason.
    Lengths and verdicts are read by narrow queries, and not at all on a scale whose labels
    have no order (nothing to correlate): at a million items the items are never loaded.

    Raises:
        storage.db.NotFoundError: no run has this id.
        DataError: `field_name` is not a field of the run's items.
    """
    run = get_run(db, run_id)
    panel = load_panel(run["panel_yaml"])
    dataset_id = int(run["dataset_id"])
    if field_name is not None:
        known = list(get_dataset(db, dataset_id)["fields"])
        if field_name not in known:
            raise DataError(f"The items of run {run_id} have no field {field_name!r}; their "
                            f"fields: {', '.join(sorted(known))}.")
    shown = {critic.name: critic.placeholders for critic in panel.critics}
    # The default field is the longest one shown, judged on a sample of the items: which field
    # is longest needs no exact mean, and the means over all items took 1.5 s at 1,000,000.
    name = field_name or shown_field(text_field_lengths(db, dataset_id, sample=SAMPLE_ITEMS),
                                     shown)
    if name is None or not orders_verdicts(panel.scale):
        return verbosity_probe({}, {}, panel.scale, name)
    verdicts = valid_values(db, run_id, numeric=panel.scale.is_numeric)
    ordered = {c: verdicts.get(c, {}) for c in run["critics"]}
    return verbosity_probe(field_lengths(db, dataset_id, name), ordered, panel.scale, name,
                           shown)


def run_stability(db: Any, run_id: int) -> list[CriticStability]:
    """Each repeated critic's stability in a stored run (`judging.analysis.stability`); empty when no
    critic was asked more than once per item.

    Raises:
        storage.db.NotFoundError: no run has this id.
    """
    panel = load_panel(get_run(db, run_id)["panel_yaml"])
    return stability(sample_values(db, run_id), panel.scale)


def run_expected_scores(db: Any, run_id: int) -> ExpectedScoreReport | None:
    """Agreement on the critics' expected scores and the calibration of the pooled label
    probabilities against the humans (`judging.analysis.expected_stats`); None when no critic of the
    run gave label probabilities.

    Raises:
        storage.db.NotFoundError: no run has this id.
    """
    panel = load_panel(get_run(db, run_id)["panel_yaml"])
    # Only a critic that asks for logprobs gets label probabilities (`panel_runner`): without
    # one, the answer is known without reading the run's calls (a full scan at 3,000,000).
    if not any(c.logprobs for c in panel.critics) or not has_label_probs(db, run_id):
        return None
    critics = [c.name for c in panel.critics]
    _, rows = expected_score_rows(db, run_id, critics)
    pooled = pooled_against_humans(db, run_id)
    return ExpectedScoreReport(
        alpha=expected_score_alpha(rows),
        calibration=probability_calibration([probs for _, probs, _ in pooled],
                                [human for _, _, human in pooled]))


def run_pairwise(db: Any, run_id: int, *, resamples: int = 1000, seed: int = 0
                 ) -> PairwiseReport | None:
    """The results of a pairwise run (`judging.analysis.pairwise_stats`) from its final labels (a
    reviewer's override, else the consensus) and each critic's answers in both orders (with
    the gold labels, each order's accuracy); None when the run's panel does not compare pairs.

    Raises:
        storage.db.NotFoundError: no run has this id.
    """
    run = get_run(db, run_id)
    config = load_panel(run["panel_yaml"]).pairwise
    if not config.active:
        return None
    fields = {item.id: item.fields for item in load_items(db, int(run["dataset_id"]))}
    final = final_labels(db, run_id)
    outcomes = [
        (*config.systems(fields.get(str(item_id), {})), label)
        for item_id, label in zip(final["item_id"], final["final_label"], strict=True)
        if isinstance(label, str)  # an abstained item has no result to count
    ]
    answers = order_answers(db, run_id)
    return PairwiseReport(
        comparisons=len(outcomes),
        systems=win_rates(outcomes, config, resamples=resamples, seed=seed),
        strengths=bradley_terry(outcomes, config),
        bias=position_bias(answers, config),
        vs_gold=order_accuracy(answers, gold_labels(db, run_id), config) if config.swap else [],
    )


def run_rubric(db: Any, run_id: int) -> RubricReport | None:
    """Agreement per criterion of a rubric run (`judging.analysis.rubric_stats`); None when the run's
    panel has no rubric.

    Raises:
        storage.db.NotFoundError: no run has this id.
    """
    run = get_run(db, run_id)
    rubric = load_panel(run["panel_yaml"]).rubric
    if not rubric.active:
        return None
    panel_marks = {row["item_id"]: row.get("marks") or {} for row in load_consensus(db, run_id)}
    return rubric_report(critic_marks(db, run_id), panel_marks, rubric, run["critics"])


def run_panel_choice(db: Any, run_id: int, *, resamples: int = 500, seed: int = 0
                     ) -> tuple[PanelChoice, bool] | None:
    """Which of the run's critics it needs (`judging.analysis.panel_choice`), against its gold
    labels, else the humans' blind labels; and whether the critics' costs are known. None for
    a score panel, a single critic, or fewer than 10 items with a reference."""
    stored = load_run(db, run_id)
    critics = list(stored.record.critics)
    if stored.panel.scale.is_numeric or len(critics) < 2:
        return None
    reference = {i: g for i, g in gold_labels(db, run_id).items() if g is not None}
    basis = "gold labels"
    if len(reference) < 10:
        reference, basis = stored.human_labels(db), "human labels"
    if len(reference) < 10:
        return None
    grid = ratings_grid(db, run_id, critics, numeric=False)
    labels = {c: {str(i): (None if v is None or v != v else str(v))
                  for i, v in zip(grid.index, grid[c], strict=True)} for c in critics}
    known = critic_costs(db, run_id)
    priced = all(known.get(c) for c in critics)
    costs = {c: float(known[c] or 0.0) if priced else 1.0 for c in critics}
    return choose_panel(labels, reference, costs, resamples=resamples, seed=seed,
                        basis=basis), priced
