"""Which items of a run the review table lists: one frozen value for every filter.

The table, its count and an item's position (`storage.reviewing.review_queue`) take the same
`ReviewFilter`, so the three always agree on what "the filtered set" is; the Review page keeps
one and hands it on (to walk to the next item, to open the audit queue) instead of a dict of
keyword arguments. The order (`sort`) and how the final label reads (`rule`) are not filters:
they stay arguments of the query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from judging.verdicts import FailureKind
from storage.db import StorageError
from storage.reviewing.decisions import DecisionRule

ANY_FAILURE = "any"  # `ReviewFilter.failures`: items with at least one failed critic


@dataclass(frozen=True, slots=True)
class ReviewFilter:
    """The review table's filters; the default lists every item.

    Attributes:
        disagreements_only: only items whose panel disagreed (or had a failed critic).
        consensus_label: only items with this consensus label.
        critic_label: `(critic, label)`: only items where that critic said that label (a
            failure kind such as "parse_fail" matches that critic's failures of that kind).
        alpha_range: `(low, high)` inclusive bounds on the per-item alpha; None on a side is
            open. Items with an undefined alpha are left out when a range is given.
        failures: `ANY_FAILURE` ("any"): items with at least one failed critic; a
            `FailureKind` (or its value, e.g. "refusal"): items with a failure of that kind;
            None: no filter.
        overridden: True only overridden items, False only items never overridden.
        search: text searched (case-insensitive for ASCII) in the item id, its fields and
            every critic's reasoning.
        search_reasons: False: `search` looks in the item id and fields only (a blind first
            pass, where a match in a critic's reason would reveal what it said).
        critic_pair: `(critic_a, critic_b)`: only items where both gave a valid verdict and
            the two differ (the Agreement heatmap's cell).
        ties_only: only items whose vote was tied (the panel's tie rule chose, or abstained).
        assigned_to: only the items assigned to this reviewer (`storage.reviewing.assignments`).
        unstable: only the items where a repeated critic's samples disagree: different
            labels, or scores further apart than this (`judging.analysis.stability.tolerance`).
        disputed: a rubric run's items with a criterion in dispute (True), or with that
            criterion in dispute (its id).
        needs_decision: the run's decision rule: only the items whose final decision cannot be
            acted on (`storage.reviewing.decisions`: no label, a SPLIT without children, a MERGE without
            target).

    Raises:
        StorageError: `failures` is neither "any" nor a failure kind.
    """

    disagreements_only: bool = False
    consensus_label: str | None = None
    critic_label: tuple[str, str] | None = None
    alpha_range: tuple[float | None, float | None] | None = None
    failures: FailureKind | Literal["any"] | None = None
    overridden: bool | None = None
    search: str | None = None
    search_reasons: bool = True
    critic_pair: tuple[str, str] | None = None
    ties_only: bool = False
    assigned_to: str | None = None
    unstable: float | None = None
    disputed: bool | str = False
    needs_decision: DecisionRule | None = None

    def __post_init__(self) -> None:
        if self.failures is None or self.failures == ANY_FAILURE:
            return
        try:
            kind = FailureKind(self.failures)
        except ValueError:
            kinds = ", ".join(k.value for k in FailureKind)
            raise StorageError(
                f"Unknown failure filter {self.failures!r}; use {ANY_FAILURE!r} or one of "
                f"{kinds}.") from None
        object.__setattr__(self, "failures", kind)  # frozen: set once, here
