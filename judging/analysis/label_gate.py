"""Whether the humans' labels may teach the panel: the reviewers' own agreement first.

Calibration (suggested weights) and few-shot examples learn from the human labels. If the
reviewers do not agree with each other, what they teach is noise: a critic tuned to one
reviewer's habits. So the user may set a threshold on the reviewers' Krippendorff's alpha over
the items two or more of them labelled (`judging.analysis.team_review.reviewer_agreement`, the Team
page's figure); below it, or with no such item (agreement unknown), calibration refuses, and
says why in a sentence. With no threshold set, the labels are used as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from judging.analysis.team_review import ReviewerAgreement

REVIEWER_ALPHA = 0.667
"""The threshold offered first: Krippendorff's lowest alpha for tentative conclusions."""


@dataclass(frozen=True)
class LabelGate:
    """The gate's decision.

    Attributes:
        threshold: the alpha the user asked for (None: no gate).
        alpha: the reviewers' alpha on their overlap (None: undefined or no overlap).
        n_items: items labelled by two reviewers or more.
        reason: why alpha is undefined, when it is.
    """

    threshold: float | None
    alpha: float | None
    n_items: int
    reason: str | None = None

    @property
    def open(self) -> bool:
        """Whether the human labels may be used."""
        if self.threshold is None:
            return True
        return self.alpha is not None and self.alpha >= self.threshold

    def sentence(self) -> str:
        """What the gate decided, in one sentence for the page or an error."""
        if self.threshold is None:
            return ("The human labels are used as they are: no threshold is set on the "
                    "reviewers' agreement.")
        items = f"{self.n_items:,} item{'' if self.n_items == 1 else 's'}"
        if self.open:
            return (f"The human labels are used: the reviewers' alpha on the {items} two of "
                    f"them labelled is {self.alpha:.3f}, at least the {self.threshold:.3f} set.")
        refused = "Calibration does not use the human labels yet: "
        if self.n_items == 0:
            return (refused + "no item has been labelled by two reviewers, so their agreement "
                    f"is unknown (threshold {self.threshold:.3f}). Give the reviewers an "
                    "overlap on the Team page, or turn the threshold off.")
        if self.alpha is None:
            return (refused + f"the reviewers' alpha on the {items} two of them labelled is "
                    f"undefined ({self.reason or 'too few labels'}), so it cannot reach the "
                    f"{self.threshold:.3f} set. Label more of the overlap, or turn the "
                    "threshold off.")
        return (refused + f"the reviewers' alpha on the {items} two of them labelled is "
                f"{self.alpha:.3f}, below the {self.threshold:.3f} set. Settle their conflicts "
                "on the Team page, or lower the threshold.")


def label_gate(agreement: ReviewerAgreement, threshold: float | None) -> LabelGate:
    """The gate for `threshold` (None: no gate) given the reviewers' agreement."""
    return LabelGate(threshold, agreement.alpha.value, agreement.n_items,
                     agreement.alpha.reason)
