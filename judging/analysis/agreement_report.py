"""The agreement report: every agreement figure of a run, from plain inputs, in one call.

The review pages and `jurybox stats RUN` both call `agreement_report`; storage hands it plain
data (a long table of ratings and dicts of reference labels), so this module knows nothing of
SQL or Streamlit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from judging.agreement import (
    AlphaResult,
    BootstrapResult,
    KappaMatrix,
    Level,
    Proportion,
    RatingMatrix,
    Statistic,
    encode_ratings,
    fleiss_kappa_result,
    gwet_ac1,
    leave_one_out_alpha,
    pairwise_kappa,
    percent_agreement,
    proportion,
)

# The report computes alpha's parts once and derives alpha, per-item alpha and the bootstrap
# from them, rather than re-encoding the ratings three times.
from judging.agreement.alpha import (
    _alpha_from_parts,
    _alpha_parts,
    _bootstrap_from_parts,
    _per_item_from_parts,
)
from judging.scales import Scale
from judging.voting.dawid_skene import DawidSkeneResult, dawid_skene
from judging.voting.strategies import backs_consensus
from judging.voting.voting_config import VotingConfig

FAILED_COLUMN = "(failed)"
_LABEL_LEVELS = ("nominal", "ordinal")


@dataclass
class AgreementReport:
    """Every agreement figure of one run. Undefined figures carry their reason.

    Attributes:
        level: measurement level used.
        items: item ids, in row order.
        critics: critic names, in column order.
        labels: the labels (or distinct values) in code order.
        alpha: Krippendorff's alpha with its reason and parts.
        bootstrap: bootstrap interval and distribution of alpha.
        per_item_alpha: alpha_u per item id (NaN where fewer than two ratings).
        vs_consensus, vs_humans, vs_gold: critic -> agreement with that reference (empty when
            no reference was given).
        kappa: pairwise Cohen's kappa (None for numeric levels; see `kappa_reason`).
        fleiss, ac1, percent: Fleiss' kappa, Gwet's AC1, percent agreement (reason when
            undefined or not applicable).
        leave_one_out: critic -> alpha without that critic.
        dawid_skene: the fitted model (None for numeric levels or too few labels).
        confusion_vs_humans: critic -> counts table (rows: human label, columns: the critic's
            label plus "(failed)").
        failed: critic -> items without a valid rating from the critic (failed, or not asked,
            e.g. a later cascade tier).
        matrix: the encoded ratings the figures come from (items x critics), kept so that
            `with_humans` can compare them with new human labels without encoding them again.
    """

    level: str
    items: list[Any]
    critics: list[str]
    labels: list[Any]
    alpha: AlphaResult
    bootstrap: BootstrapResult
    per_item_alpha: pd.Series
    vs_consensus: dict[str, Proportion] = field(default_factory=dict)
    vs_humans: dict[str, Proportion] = field(default_factory=dict)
    vs_gold: dict[str, Proportion] = field(default_factory=dict)
    kappa: KappaMatrix | None = None
    kappa_reason: str | None = None
    fleiss: Statistic | None = None
    ac1: Statistic | None = None
    percent: Statistic | None = None
    leave_one_out: dict[str, AlphaResult] = field(default_factory=dict)
    dawid_skene: DawidSkeneResult | None = None
    dawid_skene_reason: str | None = None
    confusion_vs_humans: dict[str, pd.DataFrame] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    matrix: RatingMatrix | None = field(default=None, repr=False, compare=False)

    @property
    def dawid_skene_accuracies(self) -> dict[str, float]:
        """Estimated accuracy per critic (empty when Dawid-Skene was not fitted)."""
        return self.dawid_skene.accuracies if self.dawid_skene else {}

    def critic_table(self) -> pd.DataFrame:
        """One row per critic: agreement with each reference (value, CI, n), DS accuracy,
        alpha without the critic, failures. NaN where undefined."""
        rows = []
        ds = self.dawid_skene_accuracies
        for critic in self.critics:
            row: dict[str, Any] = {"critic": critic}
            for name, table in (
                ("consensus", self.vs_consensus),
                ("humans", self.vs_humans),
                ("gold", self.vs_gold),
            ):
                p = table.get(critic)
                row[f"vs_{name}"] = _nan(p.value) if p else np.nan
                row[f"vs_{name}_low"] = _nan(p.low) if p else np.nan
                row[f"vs_{name}_high"] = _nan(p.high) if p else np.nan
                row[f"vs_{name}_n"] = p.n if p else 0
            row["ds_accuracy"] = ds.get(critic, np.nan)
            loo = self.leave_one_out.get(critic)
            row["alpha_without"] = _nan(loo.value) if loo else np.nan
            row["failed"] = self.failed.get(critic, 0)
            rows.append(row)
        return pd.DataFrame(rows).set_index("critic") if rows else pd.DataFrame()

    def to_text(self) -> str:
        """A plain-text summary for the CLI (`jurybox stats RUN`)."""
        a = self.alpha
        lines = [
            f"Agreement over {len(self.items)} items, {len(self.critics)} critics "
            f"({self.level} level)",
            f"Krippendorff's alpha: {_fmt(a.value, a.reason)}"
            f"  [{a.n_pairable_units} items with 2+ ratings, {a.n_pairable} pairable ratings]",
        ]
        b = self.bootstrap
        if b.low is not None and b.high is not None:
            lines.append(
                f"  {b.confidence:.0%} bootstrap CI: {b.low:.3f} to {b.high:.3f} "
                f"({b.resamples} resamples, seed {b.seed}"
                + (f", {b.n_undefined} undefined" if b.n_undefined else "")
                + ")"
            )
        elif b.reason:
            lines.append(f"  bootstrap CI: undefined ({b.reason})")
        per_item = self.per_item_alpha.dropna()
        if len(per_item):
            lines.append(
                f"Per-item alpha: median {per_item.median():.3f}, "
                f"{(per_item < 1).sum()} items not unanimous, "
                f"{(per_item < 0).sum()} below chance"
            )
        for title, stat in (
            ("Fleiss' kappa", self.fleiss),
            ("Gwet's AC1", self.ac1),
            ("Percent agreement", self.percent),
        ):
            if stat is not None:
                lines.append(f"{title}: {_fmt(stat.value, stat.reason)}")
        if self.dawid_skene_reason:
            lines.append(f"Dawid-Skene: not fitted ({self.dawid_skene_reason})")
        lines.append("")
        lines.append("Per critic:")
        header = (
            f"  {'critic':<20} {'vs consensus':>22} {'vs humans':>22} {'vs gold':>22} "
            f"{'DS acc':>7} {'alpha w/o':>9} {'failed':>6}"
        )
        lines.append(header)
        ds = self.dawid_skene_accuracies
        for critic in self.critics:
            loo = self.leave_one_out.get(critic)
            lines.append(
                f"  {critic[:20]:<20} {_prop(self.vs_consensus.get(critic)):>22} "
                f"{_prop(self.vs_humans.get(critic)):>22} {_prop(self.vs_gold.get(critic)):>22} "
                f"{_num(ds.get(critic)):>7} {_num(loo.value if loo else None):>9} "
                f"{self.failed.get(critic, 0):>6}"
            )
        if self.kappa is not None and len(self.critics) >= 2:
            lines.append("")
            lines.append("Pairwise Cohen's kappa:")
            frame = self.kappa.to_frame().round(3)
            lines.extend("  " + line for line in frame.to_string(na_rep="undef").splitlines())
        elif self.kappa_reason:
            lines.append(f"Pairwise Cohen's kappa: not computed ({self.kappa_reason})")
        return "\n".join(lines)


def _nan(value: float | None) -> float:
    return np.nan if value is None else float(value)


def _num(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and np.isnan(value)) else (
        f"{value:.3f}"
    )


def _fmt(value: float | None, reason: str | None) -> str:
    return f"{value:.4f}" if value is not None else f"undefined ({reason or 'no data'})"


def _prop(p: Proportion | None) -> str:
    if p is None:
        return "-"
    if p.value is None:
        return "undefined (n=0)"
    return f"{p.value:.3f} [{p.low:.2f}-{p.high:.2f}] n={p.n}"


def ratings_table(
    ratings: pd.DataFrame | Iterable[tuple[Any, str, Any]],
    critics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Pivot a long table of (item_id, critic, value) into items x critics (NaN = missing).

    Items keep their order of first appearance; a repeated (item, critic) keeps the last value.

    Args:
        ratings: DataFrame with columns item_id, critic, value (None/NaN for a failed
            verdict), or an iterable of such tuples.
        critics: column order (default: order of first appearance). Critics listed here but
            absent from the ratings get an all-missing column; critics not listed are left out.

    Returns:
        An object DataFrame indexed by item_id, one column per critic.

    Raises:
        ValueError: the DataFrame lacks one of the columns item_id, critic, value.
    """
    if isinstance(ratings, pd.DataFrame):
        missing = {"item_id", "critic", "value"} - set(ratings.columns)
        if missing:
            raise ValueError(
                f"ratings table needs columns item_id, critic, value; missing: "
                f"{', '.join(sorted(missing))}"
            )
        long = ratings[["item_id", "critic", "value"]]
    else:
        long = pd.DataFrame(list(ratings), columns=["item_id", "critic", "value"])
    # Factorising (hash tables in C) beats pivoting, and keeps first-appearance order.
    item_pos, item_index = pd.factorize(long["item_id"])
    items = np.asarray(item_index, dtype=object)  # plain objects: cheap to list and reindex
    if critics is not None:
        names = list(critics)
        critic_pos = pd.Index(names).get_indexer(long["critic"])
    else:
        critic_pos, uniques = pd.factorize(long["critic"])
        names = list(uniques)
    value_pos, values = pd.factorize(long["value"])  # None / NaN -> -1
    keep = critic_pos >= 0
    key = item_pos.astype(np.int64) * max(len(names), 1) + critic_pos
    if keep.any() and np.bincount(key[keep]).max() > 1:
        # A repeated (item, critic): keep its last row.
        _, last_from_end = np.unique(key[::-1], return_index=True)
        last = np.zeros(len(key), dtype=bool)
        last[len(key) - 1 - last_from_end] = True
        keep &= last
    lookup = np.empty(len(values) + 1, dtype=object)
    lookup[: len(values)] = np.asarray(values, dtype=object)
    lookup[-1] = None  # code -1 (missing) indexes the last slot
    grid = np.full((len(items), len(names)), None, dtype=object)
    grid[item_pos[keep], critic_pos[keep]] = lookup[value_pos[keep]]
    return pd.DataFrame(grid, index=pd.Index(items, name="item_id"), columns=names)


def agreement_report(
    ratings: pd.DataFrame | Iterable[tuple[Any, str, Any]],
    *,
    level: Level | str | None = None,
    order: Sequence[Any] | None = None,
    scale: Scale | None = None,
    consensus: Mapping[Any, Any] | None = None,
    overrides: Mapping[Any, Any] | None = None,
    gold: Mapping[Any, Any] | None = None,
    critics: Sequence[str] | None = None,
    resamples: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    tolerance: float = 0.0,
    fit_dawid_skene: bool = True,
    voting: VotingConfig | None = None,
) -> AgreementReport:
    """Compute every agreement figure of a run.

    Args:
        ratings: long table (item_id, critic, value), value None/NaN for a failed verdict
            (a missing value, never a label). DataFrame or iterable of tuples.
        level: measurement level; default from `scale`, else "nominal".
        order: declared label order; default `scale.labels` for label scales.
        scale: the panel's scale (gives level and label order).
        consensus: item_id -> the panel's consensus label/score.
        overrides: item_id -> the human's final label (latest override), items reviewed only.
        gold: item_id -> gold label.
        critics: critic column order (default: order of first appearance).
        resamples, seed, confidence: bootstrap settings for alpha's interval.
        tolerance: for numeric levels, a rating within this distance of a reference agrees.
        fit_dawid_skene: fit Dawid-Skene (label levels only).
        voting: the panel's voting. On a score scale a critic agrees with the consensus when
            it backs it by the vote's rule (`judging.voting.strategies.backs_consensus`:
            within `max_spread`, else in its band, else equal), as the vote's `agreement`
            counts it. Without it (or on labels): equal, or within `tolerance`.

    Returns:
        An AgreementReport.

    Raises:
        ValueError: malformed ratings, or ratings that do not fit the level / label order.
    """
    return table_agreement_report(
        ratings_table(ratings, critics), level=level, order=order, scale=scale,
        consensus=consensus, overrides=overrides, gold=gold, resamples=resamples, seed=seed,
        confidence=confidence, tolerance=tolerance, fit_dawid_skene=fit_dawid_skene,
        voting=voting,
    )


def table_agreement_report(
    table: pd.DataFrame,
    *,
    level: Level | str | None = None,
    order: Sequence[Any] | None = None,
    scale: Scale | None = None,
    consensus: Mapping[Any, Any] | None = None,
    overrides: Mapping[Any, Any] | None = None,
    gold: Mapping[Any, Any] | None = None,
    resamples: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    tolerance: float = 0.0,
    fit_dawid_skene: bool = True,
    voting: VotingConfig | None = None,
) -> AgreementReport:
    """`agreement_report` over ratings already laid out as items x critics (the index holds
    the item ids, a column each critic, None for a missing rating), as `ratings_table` lays
    them out or `storage.reviewing.review_queue.ratings_grid` reads them. Arguments as `agreement_report`."""
    if scale is not None:
        level = level or scale.level
        if order is None and not scale.is_numeric:
            order = scale.labels
    level = level or "nominal"
    names = [str(c) for c in table.columns]
    items = table.index.tolist()
    matrix = encode_ratings(table.to_numpy(dtype=object), level, order=order, critics=names)
    parts = _alpha_parts(matrix)
    alpha = _alpha_from_parts(parts)
    boot = _bootstrap_from_parts(parts, resamples, seed, confidence)
    per_item = pd.Series(_per_item_from_parts(parts), index=table.index, name="alpha")
    missing_mask = matrix.codes < 0
    failed = {name: int(missing_mask[:, i].sum()) for i, name in enumerate(names)}

    report = AgreementReport(
        level=matrix.level,
        items=items,
        critics=names,
        labels=list(matrix.labels),
        alpha=alpha,
        bootstrap=boot,
        per_item_alpha=per_item,
        leave_one_out=leave_one_out_alpha(matrix, matrix.level),
        failed=failed,
        matrix=matrix,
    )

    if consensus:
        numeric = matrix.level in ("interval", "ratio")
        backs = ((lambda said, ref: backs_consensus(said, ref, voting))
                 if numeric and voting is not None else None)
        report.vs_consensus.update(
            _vs_reference(matrix, items, consensus, tolerance, confidence, backs))
    if gold:
        report.vs_gold.update(_vs_reference(matrix, items, gold, tolerance, confidence))

    if matrix.level in _LABEL_LEVELS:
        label_matrix = matrix if matrix.level == "nominal" else _as_nominal(matrix)
        weights: Literal["quadratic"] | None = "quadratic" if matrix.level == "ordinal" else None
        report.kappa = pairwise_kappa(label_matrix, weights=weights, critics=names)
        report.fleiss = fleiss_kappa_result(label_matrix)
        report.ac1 = gwet_ac1(label_matrix, n_categories=len(order) if order else None)
        report.percent = percent_agreement(label_matrix)
        if fit_dawid_skene and matrix.n_values >= 2 and matrix.n_units:
            report.dawid_skene = dawid_skene(label_matrix, critics=names)
        elif fit_dawid_skene:
            report.dawid_skene_reason = "needs at least two labels and one item"
    else:
        reason = f"kappa-type coefficients need labels; the {matrix.level} level has scores"
        report.kappa_reason = reason
        report.fleiss = Statistic(None, reason, 0)
        report.ac1 = Statistic(None, reason, 0)
        report.percent = Statistic(None, reason, 0)
        if fit_dawid_skene:
            report.dawid_skene_reason = "Dawid-Skene needs labels, not scores"
    if overrides:
        report = with_humans(report, overrides, tolerance=tolerance)
    return report


def with_humans(
    report: AgreementReport, overrides: Mapping[Any, Any], *, tolerance: float = 0.0
) -> AgreementReport:
    """`report` with its figures against the humans made from `overrides`.

    Only `vs_humans` and `confusion_vs_humans` depend on the humans' labels: everything else
    (alpha and its bootstrap, kappa, Dawid-Skene, ...) depends on the critics alone. So a page
    can keep the critics' figures of a large run and, after a reviewer's override, redo only
    these two, from the encoded ratings the report keeps (`report.matrix`). The figures are
    the ones `agreement_report(..., overrides=overrides)` gives.

    Args:
        report: an `agreement_report` result (its own figures against the humans are replaced).
        overrides: item_id -> the human's label (empty: no figures against the humans).
        tolerance: as in `agreement_report`.

    Returns:
        A new report sharing every other figure with `report` (neither is changed after).

    Raises:
        ValueError: `report` keeps no encoded ratings (it was not made by `agreement_report`).
    """
    matrix = report.matrix
    if matrix is None:
        raise ValueError("this report keeps no encoded ratings to compare with the humans")
    vs_humans: dict[str, Proportion] = {}
    confusion: dict[str, pd.DataFrame] = {}
    if overrides:
        vs_humans = _vs_reference(matrix, report.items, overrides, tolerance,
                                  report.bootstrap.confidence)
        if matrix.level in _LABEL_LEVELS:
            confusion = _confusion_vs(matrix, report.items, overrides)
    return replace(report, vs_humans=vs_humans, confusion_vs_humans=confusion)


def _as_nominal(matrix: RatingMatrix) -> RatingMatrix:
    """The same codes read as nominal labels (order kept, for weighted kappa)."""
    return RatingMatrix(matrix.codes, matrix.labels,
                        np.arange(matrix.n_values, dtype=np.float64), "nominal", matrix.critics)


def _reference_array(items: list[Any], reference: Mapping[Any, Any]) -> np.ndarray:
    """The reference label of each item (None where it has none), by a hashed reindex."""
    series = pd.Series(list(reference.values()), index=list(reference.keys()), dtype=object)
    series = series[~series.index.duplicated(keep="last")]
    out = series.reindex(items).to_numpy(dtype=object, copy=True)
    out[np.asarray(pd.isna(out), dtype=bool)] = None
    return out


def _vs_reference(
    matrix: RatingMatrix,
    items: list[Any],
    reference: Mapping[Any, Any],
    tolerance: float,
    confidence: float,
    backs: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> dict[str, Proportion]:
    """Each critic against one reference, compared on the encoded codes (vectorised); on a
    score scale by `backs` (scores, reference scores -> which agree) when given."""
    ref = _reference_array(items, reference)
    has_ref = ~np.asarray(pd.isna(ref), dtype=bool)
    numeric = matrix.level in ("interval", "ratio") and (tolerance > 0 or backs is not None)
    if numeric:
        ref_values = pd.to_numeric(pd.Series(ref), errors="coerce").to_numpy(dtype=np.float64)
    else:
        # A reference label outside the ratings' labels gets -1: it can never be matched.
        ref_codes = pd.Index(matrix.labels, dtype=object).get_indexer(
            pd.Index(ref, dtype=object)
        )
    out: dict[str, Proportion] = {}
    for col, name in enumerate(matrix.critics):
        codes = matrix.codes[:, col]
        rated = codes >= 0
        both = rated & has_ref
        if numeric:
            said = matrix.values[np.maximum(codes, 0)]
            agree = both & (backs(said, ref_values) if backs is not None
                            else np.abs(said - ref_values) <= tolerance)
        else:
            agree = both & (codes == ref_codes)
        out[name] = proportion(
            int(agree.sum()), int(both.sum()), missing=int((has_ref & ~rated).sum()),
            confidence=confidence,
        )
    return out


def _confusion_vs(
    matrix: RatingMatrix, items: list[Any], overrides: Mapping[Any, Any]
) -> dict[str, pd.DataFrame]:
    """Per critic: counts of (human label, critic label or "(failed)") over reviewed items."""
    human = _reference_array(items, overrides)
    reviewed = ~np.asarray(pd.isna(human), dtype=bool)
    labels = list(matrix.labels)
    human = human[reviewed]
    extra = [h for h in dict.fromkeys(human.tolist()) if h not in labels]
    human_labels = labels + extra
    h_codes = pd.Index(human_labels, dtype=object).get_indexer(pd.Index(human, dtype=object))
    n_cols = len(labels) + 1  # the critic's labels, then "(failed)"
    out: dict[str, pd.DataFrame] = {}
    for col, name in enumerate(matrix.critics):
        said = matrix.codes[reviewed, col]
        said = np.where(said >= 0, said, len(labels))
        counts = np.bincount(
            h_codes * n_cols + said, minlength=len(human_labels) * n_cols
        ).reshape(len(human_labels), n_cols)
        frame = pd.DataFrame(
            counts,
            index=pd.Index(human_labels, name="human"),
            columns=pd.Index(labels + [FAILED_COLUMN], name=name),
        )
        out[name] = frame
    return out


def as_numbers(labels: Mapping[Any, Any]) -> dict[Any, float]:
    """Labels stored as text read as numbers, for a score scale; a label that is not a number
    is left out (not counted)."""
    out: dict[Any, float] = {}
    for item, label in labels.items():
        try:
            out[item] = float(label)
        except (TypeError, ValueError):
            continue
    return out
