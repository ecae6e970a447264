"""Dawid-Skene: each critic's accuracy and confusions, estimated without gold labels.

Dawid & Skene (1979) model each critic r by a confusion matrix pi_r[true, given] and the items
by class priors p[true]; EM alternates between the posterior of every item's true class (E) and
the priors and confusion matrices given those posteriors (M). Agreement with the majority
misranks critics that lean toward one label (they agree with a majority they help make); the
confusion matrices see the lean.

Speed: EM runs over the list of answers, (item, rater, label) index arrays, with every step a
`np.bincount` over them, so an iteration costs O(answers x K) whatever the number of raters
(a dense raters x items x labels array took 620 s and 1.25 GB at 20,000 items x 1,000 raters
with 5 answers per item; over the answers it is about a second). With a panel's handful of
critics, items with the same answers are pooled first (at most (K+1)^R patterns, a few thousand
in practice) and EM runs over the patterns weighted by their counts: 100,000 items x 5 critics
take a few milliseconds per iteration. A long table of answers comes in as an `Answers`
(`judging.agreement.encode_answers`), and the result keeps its item ids and rater names.

`dawid_skene_vote` exposes the model as the dataset-level voting strategy "dawid-skene".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judging.agreement import Answers, RatingMatrix, answers_from_matrix, encode_ratings
from judging.agreement.answers import check_encoded_as
from judging.errors import ConfigError, ParseError
from judging.scales import Scale
from judging.verdicts import Verdict, VoteOutcome
from judging.voting.voting_config import VotingConfig


@dataclass(frozen=True)
class DawidSkeneResult:
    """What EM estimated.

    Attributes:
        labels: the classes, in index order.
        critics: critic (rater) names, in index order, as given.
        priors: (K,) estimated share of each true class.
        confusion: (R, K, K) confusion[r, true, given] = P(critic r says `given` | `true`).
        posteriors: (items, K) P(true class | ratings); items without any rating get the priors.
        rated: (items,) True where the item has at least one valid rating.
        iterations: EM iterations run.
        converged: True when the log-likelihood change fell under the tolerance.
        log_likelihood: final log-likelihood of the ratings.
        notes: what the caller should know (e.g. EM stopped before converging).
        items: item ids in row order of `posteriors` (row positions for a units x critics
            table; the ids of a long table of answers).
    """

    labels: list[Any]
    critics: list[str]
    priors: np.ndarray
    confusion: np.ndarray
    posteriors: np.ndarray
    rated: np.ndarray
    iterations: int
    converged: bool
    log_likelihood: float
    notes: list[str] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)

    @property
    def accuracies(self) -> dict[str, float]:
        """Estimated accuracy per critic: sum_k p[k] * confusion[r, k, k]."""
        diag = np.einsum("rkk->rk", self.confusion)
        acc = diag @ self.priors
        return {name: float(a) for name, a in zip(self.critics, acc, strict=True)}

    def consensus(self) -> list[Any]:
        """Most probable class per item (None for items with no valid rating)."""
        best = self.posteriors.argmax(axis=1)
        return [self.labels[b] if ok else None for b, ok in zip(best, self.rated, strict=True)]

    def confusion_frame(self, critic: str) -> Any:
        """One critic's confusion matrix as a DataFrame (rows: true class, columns: given)."""
        import pandas as pd

        index = self.critics.index(critic)
        return pd.DataFrame(self.confusion[index], index=self.labels, columns=self.labels)

    def posterior_frame(self) -> Any:
        """The posteriors as a DataFrame: one row per item id, one column per class."""
        import pandas as pd

        index = self.items if len(self.items) == len(self.posteriors) else None
        return pd.DataFrame(self.posteriors, index=index, columns=self.labels)


@dataclass(frozen=True)
class _Evidence:
    """The answers EM runs over: one row per answer of a unit, units weighted by how many
    items they stand for (identical items pooled into one unit when that is cheap)."""

    unit: np.ndarray  # (answers,) unit index
    rater: np.ndarray  # (answers,) rater index
    code: np.ndarray  # (answers,) label code
    weight: np.ndarray  # (units,) items per unit
    inverse: np.ndarray  # (items,) item -> unit


def _pool_answers(answers: Answers, k: int) -> _Evidence:
    """Items with the same answers from the same raters pooled into one unit.

    With a handful of critics (a judge panel) the distinct answer patterns are few, and EM
    runs over thousands of patterns instead of a million items. Each item's pattern is the
    integer sum_r (code + 1) * (K + 1)^r, exact while it fits in 62 bits (about 27 raters for
    four labels). Beyond that, with many raters each answering a few items, items rarely share
    a pattern: EM runs over the answers as they are.
    """
    n_items, n_raters = answers.n_items, answers.n_raters
    base = k + 1
    if n_items and n_raters and base**n_raters < 2**62:
        key = np.zeros(n_items, dtype=np.int64)
        place = base ** np.arange(n_raters, dtype=np.int64)
        np.add.at(key, answers.item, (answers.code + 1) * place[answers.rater])
        _, first, inverse, freq = np.unique(
            key, return_index=True, return_inverse=True, return_counts=True
        )
        inverse = inverse.ravel()
        # A pattern's evidence is the answers of its first item.
        keep = np.flatnonzero(first[inverse[answers.item]] == answers.item)
        return _Evidence(inverse[answers.item[keep]], answers.rater[keep], answers.code[keep],
                         freq.astype(np.float64), inverse)
    return _Evidence(answers.item, answers.rater, answers.code, np.ones(n_items),
                     np.arange(n_items, dtype=np.int64))


def _pool_matrix(codes: np.ndarray, k: int) -> _Evidence | None:
    """`_pool_answers` for a units x critics table, keyed straight from its rows (a panel's
    usual input: no list of answers is built for items that share a pattern); None when the
    key would not fit in 62 bits."""
    n_items, n_critics = codes.shape
    base = k + 1
    if not (n_items and n_critics and base**n_critics < 2**62):
        return None
    key = (codes + 1) @ (base ** np.arange(n_critics, dtype=np.int64))
    _, first, inverse, freq = np.unique(
        key, return_index=True, return_inverse=True, return_counts=True
    )
    patterns = codes[first]
    unit, critic = np.nonzero(patterns >= 0)
    return _Evidence(unit, critic, patterns[unit, critic], freq.astype(np.float64),
                     inverse.ravel())


def _check_settings(max_iter: int, tol: float, smoothing: float) -> None:
    # smoothing = 0 lets a confusion row be 0/0 (a class no item leans to) and log(0) = -inf
    # into every posterior: EM returned all-NaN posteriors without a word.
    if not (math.isfinite(smoothing) and smoothing > 0):
        raise ValueError(
            f"Dawid-Skene smoothing must be a positive number, got {smoothing!r}: with no "
            "pseudo-count a label a critic never used has probability 0 and the posteriors "
            "become NaN. Use a small value such as 0.01 (the default)"
        )
    if max_iter < 1:
        raise ValueError(f"Dawid-Skene max_iter must be at least 1, got {max_iter}")
    if not (math.isfinite(tol) and tol >= 0):
        raise ValueError(f"Dawid-Skene tol must be a non-negative number, got {tol!r}")


def _fit(
    ev: _Evidence, n_raters: int, k: int, max_iter: int, tol: float, smoothing: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, bool, float]:
    """EM over answers: (priors, confusion, unit posteriors, unit rated, iterations,
    converged, log-likelihood). Every step is a bincount over the answers, so an iteration
    costs O(answers x K), whatever the number of raters."""
    n_units = len(ev.weight)
    # Class-major (K, units) arrays: a reduction over the K classes is then an elementwise
    # operation on K long rows, where a units x K layout made numpy loop over tiny rows.
    votes = np.bincount(ev.code * n_units + ev.unit, minlength=k * n_units).reshape(k, n_units)
    m = votes.sum(axis=0)
    rated: np.ndarray = np.asarray(m > 0, dtype=bool)
    post = np.where(rated, votes / np.where(rated, m, 1), 1.0 / k)
    cell = ev.rater * k + ev.code  # (rater, given label) of each answer
    said = ev.rater * (k * k) + ev.code  # where log P(said | true = 0) sits, + true * k

    fit_w = ev.weight * rated  # units without any rating carry no evidence
    total = fit_w.sum()
    priors = np.full(k, 1.0 / k)
    confusion = np.full((n_raters, k, k), 1.0 / k)
    log_lik = -np.inf
    converged = False
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 - the count is reported after
        # M-step: confusion[r, true, given] = smoothing + sum of the weighted posteriors of
        # true over the answers where r said `given`.
        weighted = post * fit_w
        priors = weighted.sum(axis=1) / total if total > 0 else np.full(k, 1.0 / k)
        priors = np.clip(priors, 1e-12, None)
        priors /= priors.sum()
        for true in range(k):
            confusion[:, true, :] = np.bincount(
                cell, weights=weighted[true][ev.unit], minlength=n_raters * k
            ).reshape(n_raters, k)
        confusion += smoothing
        confusion /= confusion.sum(axis=2, keepdims=True)
        # E-step: log P(true) + sum over the unit's answers of log P(said | true)
        log_conf = np.log(confusion).ravel()
        log_post = np.empty((k, n_units))
        for true in range(k):
            log_post[true] = np.bincount(
                ev.unit, weights=log_conf[said + true * k], minlength=n_units
            )
        log_post += np.log(priors)[:, None]
        top = log_post.max(axis=0)
        log_post -= top
        np.exp(log_post, out=log_post)
        spread = log_post.sum(axis=0)
        post = log_post / spread
        norm = top + np.log(spread)  # log P(answers of the unit)
        new_log_lik = float((fit_w * norm).sum())
        if total > 0 and abs(new_log_lik - log_lik) / total < tol:
            log_lik = new_log_lik
            converged = True
            break
        log_lik = new_log_lik
    post[:, ~rated] = priors[:, None]
    return priors, confusion, post.T, rated, iterations, converged, log_lik


def dawid_skene(
    data: Any,
    *,
    labels: Sequence[Any] | None = None,
    critics: Sequence[str] | None = None,
    max_iter: int = 200,
    tol: float = 1e-7,
    smoothing: float = 0.01,
) -> DawidSkeneResult:
    """Fit the Dawid-Skene model by EM, starting from the vote shares.

    Args:
        data: units x critics labels (None for a failed verdict: a missing value, never a
            label), or a RatingMatrix, or an `Answers` (a long table of (item, rater, label),
            see `judging.agreement.encode_answers`): then the cost grows with the answers,
            not with items x raters, and the result keeps the item ids and rater names.
        labels: the classes in order (default: the sorted labels that occur). For `Answers`,
            give the order when encoding them.
        critics: critic names per column (default "critic 1", ...; for `Answers`, its raters).
        max_iter: EM iteration cap (at least 1).
        tol: stop when the log-likelihood per item changes by less than this.
        smoothing: pseudo-count added to every confusion cell, so a label a critic never used
            is unlikely rather than impossible. Must be positive.

    Returns:
        A DawidSkeneResult (priors, confusion matrices, posteriors, accuracies, consensus).

    Raises:
        ValueError: smoothing <= 0, fewer than two labels, ratings outside `labels`, or
            `labels`/`critics` that contradict an `Answers`.
    """
    _check_settings(max_iter, tol, smoothing)
    ev: _Evidence | None
    if isinstance(data, Answers):
        check_encoded_as(data, labels, critics)
        names, items, classes = list(data.raters), list(data.items), list(data.labels)
        ev = _pool_answers(data, len(classes)) if len(classes) >= 2 else None
    else:
        matrix: RatingMatrix = encode_ratings(data, "nominal", order=labels, critics=critics)
        names = list(critics or matrix.critics) or [
            f"critic {i + 1}" for i in range(matrix.n_critics)
        ]
        items, classes = list(range(matrix.n_units)), list(matrix.labels)
        ev = None
        if len(classes) >= 2:
            ev = _pool_matrix(matrix.codes, len(classes)) or _pool_answers(
                answers_from_matrix(matrix), len(classes)
            )
    if ev is None:
        raise ValueError(
            "Dawid-Skene needs at least two labels; pass labels=[...] with the scale's labels"
        )
    priors, confusion, post, rated, iterations, converged, log_lik = _fit(
        ev, len(names), len(classes), max_iter, tol, smoothing
    )
    notes = [] if converged else [f"EM stopped after {max_iter} iterations without converging"]
    return DawidSkeneResult(
        labels=classes,
        critics=names,
        priors=priors,
        confusion=confusion,
        posteriors=post[ev.inverse],
        rated=rated[ev.inverse],
        iterations=iterations,
        converged=converged,
        log_likelihood=log_lik,
        notes=notes,
        items=items,
    )


def _label_code(verdict: Verdict, scale: Scale, index: dict[str, int]) -> int | None:
    """The verdict's label position on the scale, or None when it gives no usable label."""
    if not verdict.ok:
        return None
    raw = verdict.label if verdict.label is not None else verdict.score
    if raw is None:
        return None
    if raw in index:
        return index[str(raw)]
    try:
        return index[str(scale.normalize(raw))]
    except (ParseError, KeyError):
        return None


def _tie_pick(tied: list[str], config: VotingConfig, scale: Scale) -> str | None:
    """Break a tie among labels by the panel's tie policy (None: abstain)."""
    if config.tie_policy == "abstain":
        return None
    priority = [label for label in (config.priority or scale.labels) if label in tied]
    priority += [label for label in tied if label not in priority]
    return priority[0] if config.tie_policy == "pessimistic" else priority[-1]


def dawid_skene_vote(
    per_item_verdicts: list[list[Verdict]], config: VotingConfig, scale: Scale
) -> list[VoteOutcome]:
    """The dataset-level voting strategy "dawid-skene": one vote per item, fitted jointly.

    Failed verdicts are missing values (error policy "ignore"), votes for `error_label`
    ("count_as"), or make the item abstain ("abstain"), as in `judging.voting.strategies`. `counts` and
    `agreement` count valid verdicts only, out of all critics asked: a failed critic never makes
    an item look agreed (`disagreement` is True whenever any critic failed).

    Args:
        per_item_verdicts: for each item, its critics' verdicts.
        config: the panel's voting config (tie policy, priority, fallback, error policy).
        scale: the panel's scale; must hold labels (not scores).

    Returns:
        One VoteOutcome per item, in input order.

    Raises:
        ConfigError: a score scale, or error policy "count_as" without a valid error_label.
    """
    if scale.is_numeric:
        raise ConfigError(
            "voting: the 'dawid-skene' strategy needs a label scale (nominal, ordinal, likert "
            "or yes/no); for scores use mean, median or weighted mean"
        )
    labels = list(scale.labels)
    if config.error_policy == "count_as" and config.error_label not in labels:
        raise ConfigError(
            f"voting: error_policy 'count_as' needs error_label set to one of {labels}, got "
            f"{config.error_label!r}"
        )
    critics: list[str] = []
    seen: dict[str, int] = {}
    for verdicts in per_item_verdicts:
        for verdict in verdicts:
            if verdict.critic not in seen:
                seen[verdict.critic] = len(critics)
                critics.append(verdict.critic)
    index = {label: i for i, label in enumerate(labels)}
    codes = np.full((len(per_item_verdicts), len(critics)), -1, dtype=np.int64)
    real = np.full_like(codes, -1)  # valid verdicts only: what counts and agreement use
    failures: list[Counter[str]] = [Counter() for _ in per_item_verdicts]
    for row, verdicts in enumerate(per_item_verdicts):
        for verdict in verdicts:
            code = _label_code(verdict, scale, index)
            col = seen[verdict.critic]
            if code is None:
                failures[row][verdict.failure.value if verdict.failure else "invalid"] += 1
                if config.error_policy == "count_as":
                    codes[row, col] = index[config.error_label]  # type: ignore[index]
                continue
            codes[row, col] = real[row, col] = code

    if not per_item_verdicts:
        return []
    matrix = RatingMatrix(
        codes, labels, np.arange(len(labels), dtype=np.float64), "nominal", critics
    )
    model = dawid_skene(matrix, critics=critics)
    treatment = {
        "ignore": "left out of the vote",
        "abstain": "so the panel abstains",
        "count_as": f"counted as {config.error_label}",
    }[config.error_policy]
    outcomes: list[VoteOutcome] = []
    for row, verdicts in enumerate(per_item_verdicts):
        given = real[row][real[row] >= 0]
        tally = np.bincount(given, minlength=len(labels))
        counts = {labels[i]: int(tally[i]) for i in np.flatnonzero(tally)}
        n_failed = sum(failures[row].values())
        total = len(verdicts)
        notes: list[str] = []
        if n_failed:
            what = ", ".join(f"{n} {kind}" for kind, n in failures[row].items())
            notes.append(f"{n_failed} of {total} critics failed ({what}), {treatment}")
        consensus: str | None
        tie = False
        if not (codes[row] >= 0).any():
            consensus = None
            notes.append("no valid verdict")
        elif config.error_policy == "abstain" and n_failed:
            consensus = None
        else:
            post = model.posteriors[row]
            tied = [labels[i] for i in np.flatnonzero(post >= post.max() - 1e-9)]
            tie = len(tied) > 1
            if tie:
                consensus = _tie_pick(tied, config, scale)
                verb = "abstained" if consensus is None else f"{config.tie_policy} pick {consensus}"
                notes.append(f"tie between {', '.join(tied)}: {verb}")
            else:
                consensus = tied[0]
                top = max(counts.values()) if counts else 0
                plural = [label for label, c in counts.items() if c == top]
                if counts and consensus not in plural:
                    notes.append(
                        f"Dawid-Skene chose {consensus} over the plurality {', '.join(plural)} "
                        f"(posterior {post.max():.2f})"
                    )
        if consensus is None and config.fallback is not None:
            consensus = config.fallback
            notes.append(f"abstained: fell back to {config.fallback}")
        # Only valid verdicts back a consensus: a failure counted as a label is not agreement.
        if consensus is not None:
            agreement: float | None = counts.get(consensus, 0) / total if total else None
        else:
            agreement = None
        agreed = consensus is not None and n_failed == 0 and counts == {consensus: total}
        outcomes.append(
            VoteOutcome(
                consensus=consensus,
                agreement=agreement,
                disagreement=not agreed,
                counts=counts,
                failed=n_failed,
                tie=tie,
                note="; ".join(notes) or None,
            )
        )
    return outcomes
