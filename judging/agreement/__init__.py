"""Agreement statistics: pure, vectorised functions over a units x critics table of ratings.

Input shape everywhere: `data` is a sequence of units (items), each a sequence of ratings, one
per critic, `None` (or NaN) where the critic gave no valid verdict. Failed verdicts are missing
values, never a label: a critic that errored can neither agree nor disagree.

What is here:
    encode_ratings        data -> RatingMatrix (labels encoded to ints once, reused below)
    encode_answers        a long table of (item, rater, label) -> Answers, for many raters
                          answering sparse subsets; pairwise_kappa, leave_one_out_alpha and
                          Dawid-Skene take it and cost what the answers cost
    krippendorff_alpha    alpha by the coincidence-matrix method (Krippendorff 2011), any level
    alpha_with_reason     the same, with the reason when alpha is undefined and its parts
    per_item_alpha        alpha_u = 1 - D_o(u) / D_e(dataset), one figure per unit
    dataset_disagreement  D_e and the metric from aggregates, for per_item_alpha_in, which
                          scores units a chunk at a time (a million items never in one table)
    bootstrap_alpha       percentile confidence interval by resampling units, with the draws
    leave_one_out_alpha   alpha without each critic in turn (who drags the panel down)
    cohen_kappa           two raters, unweighted / linear / quadratic weights
    pairwise_kappa        Cohen's kappa for every pair of critics
    fleiss_kappa          many raters (Gwet's generalisation for missing ratings)
    gwet_ac1              Gwet's AC1, robust when one label dominates
    percent_agreement     share of agreeing rating pairs within units
    agreement_with_reference  one critic against consensus / humans / gold, with a Wilson CI

Every figure that the maths leaves undefined comes back as `None` together with a sentence
saying why (`reason`), never as a silent 0 or 1.

Speed: labels are encoded to integer codes once (`encode_ratings`); unit x value counts are
built with `np.bincount`; per-unit disagreement comes from those counts (or from pairs of critic
columns when there are many distinct values), so no Python loop runs over units. The bootstrap
resamples per-unit contribution vectors: units with the same counts pattern are pooled, and a
resample is a vector of pattern multiplicities, so 1000 resamples of 100,000 units cost a few
small matrix products.

Modules: `results` (the result types), `ratings` (encoding), `answers` (long tables), `alpha`,
`leave_one_out`, `kappa`, `reference`.
"""

from judging.agreement.agreement_results import (
    LEVELS,
    AlphaResult,
    BootstrapResult,
    KappaMatrix,
    KappaWeights,
    Level,
    Proportion,
    Statistic,
)
from judging.agreement.alpha import (
    DatasetDisagreement,
    alpha_with_reason,
    bootstrap_alpha,
    dataset_disagreement,
    krippendorff_alpha,
    per_item_alpha,
    per_item_alpha_in,
)
from judging.agreement.answers import (
    Answers,
    answers_from_matrix,
    encode_answer_frame,
    encode_answers,
)
from judging.agreement.kappa import (
    cohen_kappa,
    cohen_kappa_result,
    fleiss_kappa,
    fleiss_kappa_counts,
    fleiss_kappa_result,
    gwet_ac1,
    pairwise_kappa,
    percent_agreement,
)
from judging.agreement.leave_one_out import leave_one_out_alpha
from judging.agreement.ratings import (
    RatingMatrix,
    encode_ratings,
)
from judging.agreement.reference import (
    agreement_with_reference,
    proportion,
    wilson_interval,
)

__all__ = [
    "AlphaResult",
    "Answers",
    "BootstrapResult",
    "DatasetDisagreement",
    "KappaMatrix",
    "KappaWeights",
    "LEVELS",
    "Level",
    "Proportion",
    "RatingMatrix",
    "Statistic",
    "agreement_with_reference",
    "alpha_with_reason",
    "answers_from_matrix",
    "bootstrap_alpha",
    "cohen_kappa",
    "cohen_kappa_result",
    "dataset_disagreement",
    "encode_answer_frame",
    "encode_answers",
    "encode_ratings",
    "fleiss_kappa",
    "fleiss_kappa_counts",
    "fleiss_kappa_result",
    "gwet_ac1",
    "krippendorff_alpha",
    "leave_one_out_alpha",
    "pairwise_kappa",
    "per_item_alpha",
    "per_item_alpha_in",
    "percent_agreement",
    "proportion",
    "wilson_interval",
]
