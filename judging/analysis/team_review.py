"""Several reviewers on one run: who reviews which items (with an overlap seen by two, so the
reviewers' own agreement can be measured), how far they agree, and where they conflict."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from judging.agreement import AlphaResult, KappaMatrix, alpha_with_reason, pairwise_kappa
from judging.errors import DataError


def plan_assignment(
    item_ids: Sequence[str], reviewers: Sequence[str], overlap: float, *, seed: int = 0
) -> dict[str, list[str]]:
    """Give each item to one reviewer, in turn (so the shares differ by one at most), and a
    share `overlap` of the items, drawn at random with `seed`, to the next reviewer as well.

    Args:
        item_ids: the items to review, in review order.
        reviewers: distinct names (or emails); at least one, and two for any overlap.
        overlap: 0 to 1, the share of items seen by two reviewers (0.2: one item in five).

    Returns:
        item id -> its reviewers (one or two), in `item_ids` order.

    Raises:
        DataError: no reviewer, a repeated reviewer, an overlap outside 0..1, or an overlap
            with a single reviewer.
    """
    names = [r.strip() for r in reviewers]
    if not names or any(not n for n in names):
        raise DataError("Name at least one reviewer (blank names are not reviewers).")
    if len(set(names)) < len(names):
        raise DataError("Each reviewer once: a repeated name would review its own overlap.")
    if not 0 <= overlap <= 1:
        raise DataError(f"The overlap is a share of the items, from 0 to 1, not {overlap}.")
    if overlap > 0 and len(names) < 2:
        raise DataError("An overlap needs two reviewers at least: add one, or set it to 0.")
    rng = random.Random(seed)
    doubled = set(rng.sample(range(len(item_ids)), round(overlap * len(item_ids))))
    plan: dict[str, list[str]] = {}
    for index, item_id in enumerate(item_ids):
        first = index % len(names)
        plan[str(item_id)] = [names[first]]
        if index in doubled:
            plan[str(item_id)].append(names[(first + 1) % len(names)])
    return plan


@dataclass(frozen=True)
class ReviewerAgreement:
    """How far reviewers agree on the items two or more of them labelled.

    Attributes:
        reviewers: the reviewers seen, in the kappa matrix's order.
        n_items: items labelled by two reviewers or more.
        alpha: Krippendorff's alpha over those items (reviewers as coders).
        kappa: Cohen's kappa for each pair of reviewers.
        conflicts: items whose reviewers gave different labels, in item order.
    """

    reviewers: list[str]
    n_items: int
    alpha: AlphaResult
    kappa: KappaMatrix
    conflicts: list[str]


def reviewer_agreement(
    labels: Mapping[str, Mapping[str, str]], *, level: str = "nominal",
    order: Sequence[str] | None = None,
    decisions: Mapping[str, Mapping[str, str]] | None = None,
) -> ReviewerAgreement:
    """Agreement among reviewers, from each reviewer's own label per item.

    Args:
        labels: item id -> {reviewer: label}.
        level: the scale's measurement level ("nominal", "ordinal", ...).
        order: the scale's labels in order (needed for ordinal labels).
        decisions: item id -> {reviewer: whole decision} for the conflicts, where a decision
            is more than its label (a curation split's new classes, a merge's target:
            `storage.reviewing.assignments.reviewer_decisions`); default: the labels. Alpha and kappa
            stay on the labels.
    """
    shared = {item: by for item, by in labels.items() if len(by) >= 2}
    reviewers = sorted({r for by in shared.values() for r in by})
    rows = [[by.get(r) for r in reviewers] for by in shared.values()]
    kappa = (pairwise_kappa(rows, labels=order, critics=reviewers) if rows
             else KappaMatrix([], np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int64)))
    return ReviewerAgreement(
        reviewers=reviewers,
        n_items=len(shared),
        alpha=alpha_with_reason(rows, level, order=order),
        kappa=kappa,
        conflicts=[item for item, by in (decisions or labels).items()
                   if len(by) >= 2 and len(set(by.values())) > 1],
    )
