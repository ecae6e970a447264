"""Dawid-Skene: each critic's accuracy and confusions, estimated without gold labels.

Dawid & Skene (1979) model each critic r by a confusion matrix pi_r[true, given] and the items
by class priors p[true]; EM alternates between the posterior of every item's true class (E) and
the priors and confusion matrices given those posteriors (M). Agreement with the majority
misranks critics that lean toward one label (they agree with a majority they help make); the
confusion matrices see the lean.

Speed: with R critics and K labels an item's evidence is its row of R codes, so items are pooled
by distinct row (at most (K+1)^R, a few thousand in practice) and EM runs over those patterns
weighted by their counts: 100,000 items x 5 critics take a few milliseconds per iteration.

`dawid_skene_vote` exposes the model as the dataset-level voting strategy "dawid-skene".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from judging.agreement import RatingMatrix, encode_ratings
from judging.errors import ConfigError, ParseError
from judging.scales import Scale
from judging.verdicts import Verdict, VoteOutcome

if TYPE_CHECKING:  # the config is read, never built here; voting imports this module
    from judging.voting import VotingConfig


@dataclass(frozen=True)
class DawidSkeneResult:
    """What EM estimated.

    Attributes:
        labels: the classes, in index order.
        critics: critic names, in index order.
        priors: (K,) estimated share of each true class.
        confusion: (R, K, K) confusion[r, true, given] = P(critic r says `given` | `true`).
        posteriors: (items, K) P(true class | ratings); items without any rating get the priors.
        rated: (items,) True where the item has at least one valid rating.
        iterations: EM iterations run.
        converged: True when the log-likelihood change fell under the tolerance.
        log_likelihood: final log-likelihood of the ratings.
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


def _pool_rows(codes: np.ndarray, n_labels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of codes: (patterns, counts, item -> pattern)."""
    n_items, n_critics = codes.shape
    if n_items == 0:
        return codes, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    base = n_labels + 1
    if n_critics and base**n_critics < 2**62:
        key = (codes + 1) @ (base ** np.arange(n_critics, dtype=np.int64))
        _, first, inverse, freq = np.unique(
            key, return_index=True, return_inverse=True, return_counts=True
        )
        return codes[first], freq, inverse.ravel()
    patterns, inverse, freq = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    return patterns, freq, inverse.ravel()


def _logsumexp(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0]


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
            label), or a RatingMatrix.
        labels: the classes in order (default: the sorted labels that occur).
        critics: critic names per column (default "critic 1", ...).
        max_iter: EM iteration cap.
        tol: stop when the log-likelihood per item changes by less than this.
        smoothing: pseudo-count added to every confusion cell, so a label a critic never used
            is unlikely rather than impossible.

    Returns:
        A DawidSkeneResult (priors, confusion matrices, posteriors, accuracies, consensus).

    Raises:
        ValueError: fewer than two labels, or ratings outside `labels`.
    """
    matrix: RatingMatrix = encode_ratings(data, "nominal", order=labels, critics=critics)
    names = list(critics or matrix.critics) or [f"critic {i + 1}" for i in range(matrix.n_critics)]
    k = matrix.n_values
    if k < 2:
        raise ValueError(
            "Dawid-Skene needs at least two labels; pass labels=[...] with the scale's labels"
        )
    codes = matrix.codes
    n_critics = codes.shape[1]
    patterns, freq, inverse = _pool_rows(codes, k)
    w = freq.astype(np.float64)
    valid = patterns >= 0
    rated_p: np.ndarray = np.asarray(valid.any(axis=1), dtype=bool)
    # One-hot of what each critic said on each pattern (zeros where missing).
    onehot = np.zeros((n_critics, len(patterns), k))
    for r in range(n_critics):
        rows = np.flatnonzero(valid[:, r])
        onehot[r, rows, patterns[rows, r]] = 1.0
    votes = onehot.sum(axis=0)  # (P, K)
    m = votes.sum(axis=1, keepdims=True)
    post = np.where(m > 0, votes / np.where(m > 0, m, 1.0), 1.0 / k)

    fit_w = w * rated_p  # patterns without any rating carry no evidence
    total = fit_w.sum()
    priors = np.full(k, 1.0 / k)
    confusion = np.full((n_critics, k, k), 1.0 / k)
    log_lik = -np.inf
    converged = False
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 - the count is reported after
        # M-step
        weighted = post * fit_w[:, None]
        priors = weighted.sum(axis=0) / total if total > 0 else np.full(k, 1.0 / k)
        priors = np.clip(priors, 1e-12, None)
        priors /= priors.sum()
        confusion = np.einsum("pk,rpl->rkl", weighted, onehot) + smoothing
        confusion /= confusion.sum(axis=2, keepdims=True)
        # E-step: log P(true = k) + sum over critics of log P(said | k)
        log_conf = np.log(confusion)
        log_post = np.log(priors)[None, :] + np.einsum("rpl,rkl->pk", onehot, log_conf)
        norm = _logsumexp(log_post)
        post = np.exp(log_post - norm[:, None])
        new_log_lik = float((fit_w * norm).sum())
        if total > 0 and abs(new_log_lik - log_lik) / total < tol:
            log_lik = new_log_lik
            converged = True
            break
        log_lik = new_log_lik
    post[~rated_p] = priors
    notes = [] if converged else [f"EM stopped after {max_iter} iterations without converging"]
    return DawidSkeneResult(
        labels=list(matrix.labels),
        critics=names,
        priors=priors,
        confusion=confusion,
        posteriors=post[inverse],
        rated=rated_p[inverse],
        iterations=iterations,
        converged=converged,
        log_likelihood=log_lik,
        notes=notes,
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
    ("count_as"), or make the item abstain ("abstain"), as in `judging.voting`. `counts` and
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
