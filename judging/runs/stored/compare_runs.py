"""Version against version: two runs over the same dataset, compared item by item.

Read from the database: each run's final labels (`storage.reviewing.overrides.final_labels`, the one
rule: the latest override, else the consensus), its panel decisions (`storage.results.compare_store`), the
human labels of both runs (`storage.reviewing.overrides.human_labels`) and each run's ledger. Computed:
the items whose final decision flipped, and three paired comparisons (`judging.analysis.compare_stats`)
on the items both runs decided:

- accuracy against the humans: each run's *consensus* (what the panel decided before anyone
  looked) against the human label of the item, taken from either run. Not the final label: on a
  reviewed item the final label is the human's own, so a run with more reviews would look more
  accurate by construction.
- accuracy against the dataset's gold labels, where it has them (a label shipped with the data,
  not a review).
- agreement with the panel's own consensus: whether every critic answered and gave the
  consensus (the item was not contested), as a share of the items.

An item decided by only one run is counted, and left out of every figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import sqlite_utils

from judging.analysis.compare_stats import PairedAccuracy, paired_accuracy
from judging.engine.ledger import Ledger
from judging.errors import ConfigError, DataError
from judging.panel.panel_diff import panel_changes
from judging.panel.panel_files import load_panel
from storage.results.compare_store import panel_outcomes
from storage.results.consensus import run_gold_labels
from storage.results.runs import get_run
from storage.reviewing.overrides import final_labels, human_labels

__all__ = [
    "FlippedItem",
    "Measure",
    "RunComparison",
    "RunSide",
    "changes_text",
    "check_comparable",
    "compare_runs",
    "difference_text",
    "ledger_rows",
    "p_value_text",
    "share_text",
]


@dataclass(frozen=True, slots=True)
class RunSide:
    """One of the two runs: who it is and what it paid (its ledger)."""

    id: int
    name: str | None
    panel_name: str
    panel_hash: str
    status: str
    simulated: bool
    decided: int  # items with a stored panel decision
    human_labels: int  # items a human labelled on this run
    ledger: Ledger

    @property
    def title(self) -> str:
        """"run #3" — how the two sides are named in every sentence and column."""
        return f"run #{self.id}"

    @property
    def version(self) -> str:
        """"Taxonomy curation (demo), version 1a2b3c4d" — the panel version it ran."""
        return f"{self.panel_name}, version {self.panel_hash[:8]}"


@dataclass(frozen=True, slots=True)
class FlippedItem:
    """An item whose final decision differs between the two runs.

    Attributes:
        final_a / final_b: the final label in each run (None: the panel abstained, no review).
        consensus_a / consensus_b: each panel's own decision.
        reviewed_a / reviewed_b: a human overrode the item on that run (the final label is
            theirs there).
        human: the item's human label (from either run), None when nobody labelled it.
        gold: the dataset's gold label, None where it has none.
    """

    item_id: str
    final_a: str | None
    final_b: str | None
    consensus_a: str | None
    consensus_b: str | None
    reviewed_a: bool
    reviewed_b: bool
    human: str | None
    gold: str | None


@dataclass(frozen=True, slots=True)
class Measure:
    """One paired comparison, with what it was computed from (shown next to its figures).

    Attributes:
        title: "Accuracy against the humans", ...
        basis: a sentence saying which items and which reference labels it used.
        result: the figures (`judging.analysis.compare_stats.paired_accuracy`).
        empty: why there are no figures, when no item qualifies.
        hit: what a "success" of an item is called ("right", "backed").
    """

    title: str
    basis: str
    result: PairedAccuracy
    empty: str
    hit: str = "right"

    @property
    def reason(self) -> str | None:
        """Why there are no figures, or None when there are."""
        return self.empty if self.result.n == 0 else None


@dataclass(frozen=True, slots=True)
class RunComparison:
    """Two runs over one dataset, compared on the items both decided.

    Attributes:
        a / b: the two runs; every difference is B minus A.
        dataset_id / dataset_name: the dataset both ran over.
        common: items both runs decided (every figure is over these, or a subset).
        only_a / only_b: items only one run decided (left out of every figure).
        flipped: the common items whose final label differs, in dataset order.
        vs_humans: consensus accuracy against the human labels (items labelled on either run).
        human_conflicts: items whose human labels on the two runs differ (left out of
            `vs_humans`: there is no one answer to score against).
        vs_gold: consensus accuracy against the dataset's gold labels; None when the dataset
            has none.
        backed: share of items on which every critic answered and gave the consensus.
        changes: what B's panel changed from A's, in words (`judging.panel.panel_diff`); empty for
            the same panel version; None when a stored snapshot can no longer be read.
    """

    a: RunSide
    b: RunSide
    dataset_id: int
    dataset_name: str
    common: int
    only_a: int
    only_b: int
    flipped: list[FlippedItem]
    vs_humans: PairedAccuracy
    human_conflicts: int
    vs_gold: PairedAccuracy | None
    backed: PairedAccuracy
    changes: list[str] | None

    def measures(self) -> list[Measure]:
        """The paired comparisons in the order they are shown, each saying what it used."""
        left_out = (f"; {self.human_conflicts:,} item{'' if self.human_conflicts == 1 else 's'} "
                    "whose human labels differ between the two runs left out"
                    if self.human_conflicts else "")
        out = [Measure(
            "Accuracy against the humans",
            f"Each panel's consensus (before any review) against the human label of "
            f"{self.vs_humans.n:,} item{'' if self.vs_humans.n == 1 else 's'} both runs decided: "
            f"a reviewer's first blind label where there is one, else the latest override, "
            f"from either run{left_out}.",
            self.vs_humans,
            "No item that both runs decided has a human label yet: review items on either run "
            "(Review page) to compare the versions against people.",
        )]
        if self.vs_gold is not None:
            out.append(Measure(
                "Accuracy against gold labels",
                f"Each panel's consensus against the dataset's gold labels on "
                f"{self.vs_gold.n:,} items: labels shipped with the data, not a review.",
                self.vs_gold,
                "No item that both runs decided has a gold label.",
            ))
        out.append(Measure(
            "Agreement with the panel's own consensus",
            "The share of items on which every critic answered and gave its panel's consensus "
            "(the item is not contested).",
            self.backed,
            "The two runs have no decided item in common.",
            hit="backed",
        ))
        return out


def _side(run: dict[str, Any], decided: int, humans: int) -> RunSide:
    return RunSide(
        id=int(run["id"]), name=run.get("name"), panel_name=str(run["panel_name"]),
        panel_hash=str(run["panel_hash"]), status=str(run["status"]),
        simulated=bool(run["simulated"]), decided=decided, human_labels=humans,
        ledger=Ledger.from_mapping(run["ledger"]),
    )


def _text(value: Any) -> str | None:
    """A label cell as text, None for SQL NULL (pandas may hand it back as None or NaN)."""
    return None if value is None or pd.isna(value) else str(value)


def _check_pair(a: dict[str, Any], b: dict[str, Any]) -> None:
    if a["id"] == b["id"]:
        raise DataError(
            f"Run #{a['id']} was given twice: compare it with another run over the same dataset "
            "(another panel version, prompt, model or strategy)."
        )
    if a["dataset_id"] != b["dataset_id"]:
        raise DataError(
            f"Run #{a['id']} judged dataset #{a['dataset_id']} ({a['dataset_name']!r}) and run "
            f"#{b['id']} judged dataset #{b['dataset_id']} ({b['dataset_name']!r}): a comparison "
            "needs two runs over the same dataset. Pick two runs of one dataset (`jurybox runs` "
            "lists each run's dataset)."
        )


def _changes(a: dict[str, Any], b: dict[str, Any]) -> list[str] | None:
    if a["panel_hash"] == b["panel_hash"]:
        return []
    try:
        return panel_changes(load_panel(a["panel_yaml"]), load_panel(b["panel_yaml"]))
    except ConfigError:  # a snapshot from an older model that no longer validates
        return None


def check_comparable(db: sqlite_utils.Database, run_a: int, run_b: int) -> None:
    """Raise the sentence that says why two runs cannot be compared, if they cannot.

    Raises:
        NotFoundError: no run has one of the ids.
        DataError: the same run twice, or runs over different datasets.
    """
    _check_pair(get_run(db, run_a), get_run(db, run_b))


def _merge_humans(
    labels_a: dict[str, str], labels_b: dict[str, str]
) -> tuple[dict[str, str], int]:
    """One human label per item from both runs; items whose two labels differ are dropped and
    counted."""
    merged = {**labels_a, **labels_b}
    conflicts = {item for item, label in labels_a.items()
                 if item in labels_b and labels_b[item] != label}
    for item in conflicts:
        del merged[item]
    return merged, len(conflicts)


def _correct(consensus: pd.Series, reference: pd.Series) -> np.ndarray:
    """Per item: the panel's consensus equals the reference label (an abstention is wrong)."""
    return np.asarray(consensus.notna() & (consensus.astype(object) == reference.astype(object)),
                      dtype=bool)


def compare_runs(
    db: sqlite_utils.Database, run_a: int, run_b: int, *, resamples: int = 2000,
    seed: int = 0, confidence: float = 0.95,
) -> RunComparison:
    """Compare two runs over the same dataset (B against A).

    Args:
        db: a connection from `storage.open_db`.
        run_a, run_b: the two run ids; differences read B minus A.
        resamples, seed, confidence: the paired bootstrap's settings.

    Returns:
        The comparison (see `RunComparison`).

    Raises:
        NotFoundError: no run has one of the ids.
        DataError: the same run twice, or runs over different datasets.
    """
    info_a, info_b = get_run(db, run_a), get_run(db, run_b)
    _check_pair(info_a, info_b)
    humans_a, humans_b = human_labels(db, run_a), human_labels(db, run_b)
    humans, conflicts = _merge_humans(humans_a, humans_b)

    def frame(run_id: int) -> pd.DataFrame:
        finals = final_labels(db, run_id)[["item_id", "final_label", "overridden"]]
        return panel_outcomes(db, run_id).merge(finals, on="item_id", how="left")

    frame_a, frame_b = frame(run_a), frame(run_b)
    both = frame_a.merge(frame_b.drop(columns=["gold"]), on="item_id", suffixes=("_a", "_b"))
    only_a = len(frame_a) - len(both)
    only_b = len(frame_b) - len(both)
    both["human"] = both["item_id"].map(humans)

    final_a, final_b = both["final_label_a"], both["final_label_b"]
    # Two abstentions (no label in either run) are the same decision: pandas compares missing
    # values as unequal, so they are taken out explicitly.
    flips = both[(final_a != final_b) & ~(final_a.isna() & final_b.isna())]
    flipped = [
        FlippedItem(
            item_id=str(row.item_id), final_a=_text(row.final_label_a),
            final_b=_text(row.final_label_b), consensus_a=_text(row.consensus_a),
            consensus_b=_text(row.consensus_b), reviewed_a=bool(row.overridden_a),
            reviewed_b=bool(row.overridden_b), human=_text(row.human), gold=_text(row.gold),
        )
        for row in flips.itertuples(index=False)
    ]

    def paired(correct_a: np.ndarray, correct_b: np.ndarray) -> PairedAccuracy:
        return paired_accuracy(correct_a, correct_b, resamples=resamples, seed=seed,
                               confidence=confidence)

    def against(column: str) -> PairedAccuracy:
        rows = both[both[column].notna()]
        return paired(_correct(rows["consensus_a"], rows[column]),
                      _correct(rows["consensus_b"], rows[column]))

    vs_humans = against("human")
    # Gold is the dataset's, the same for both runs: None when the dataset has no gold at all.
    vs_gold = against("gold") if run_gold_labels(db, run_a) else None
    backed = paired(both["backed_a"].to_numpy(bool), both["backed_b"].to_numpy(bool))
    return RunComparison(
        a=_side(info_a, len(frame_a), len(humans_a)),
        b=_side(info_b, len(frame_b), len(humans_b)),
        dataset_id=int(info_a["dataset_id"]), dataset_name=str(info_a["dataset_name"]),
        common=len(both), only_a=only_a, only_b=only_b, flipped=flipped,
        vs_humans=vs_humans, human_conflicts=conflicts, vs_gold=vs_gold, backed=backed,
        changes=_changes(info_a, info_b),
    )


# -- how the figures read, the same on the page and in the CLI --------------------------------


def share_text(value: float | None) -> str:
    """0.9733 -> "97.3%"; None -> "undefined"."""
    return "undefined" if value is None else f"{value:.1%}"


def difference_text(result: PairedAccuracy) -> str:
    """"+1.3 points [+0.0, +3.0]": B minus A in percentage points with its interval."""
    d = result.difference
    if d.estimate is None or d.low is None or d.high is None:
        return "undefined"
    return (f"{d.estimate * 100:+.1f} points "
            f"[{d.low * 100:+.1f}, {d.high * 100:+.1f}]")


def p_value_text(result: PairedAccuracy) -> str:
    """"p = 0.219", "p < 0.001", or "undefined" without items."""
    if result.mcnemar is None:
        return "undefined"
    p = result.mcnemar.p_value
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


# The ledger's figures side by side, in this order; the wording is the run summary's.
_LEDGER_ROWS: tuple[tuple[str, str], ...] = (
    ("item x critic calls", "calls"),
    ("failed", "failed"),
    ("answered from the cache (not paid)", "cache_hits"),
    ("requests sent", "sent_calls"),
    ("HTTP attempts", "http_attempts"),
    ("saved by the cascade", "calls_saved"),
    ("input tokens", "tokens_in"),
    ("of which from the vendor's prompt cache", "tokens_cached"),
    ("output tokens", "tokens_out"),
)


def ledger_rows(a: Ledger, b: Ledger) -> list[tuple[str, str, str]]:
    """(figure, run A, run B) rows of the two runs' ledgers, cost last; rows that are 0 in both
    runs (a cascade neither used, no prompt cache) are left out."""
    rows = [(title, f"{getattr(a, name):,}", f"{getattr(b, name):,}")
            for title, name in _LEDGER_ROWS if getattr(a, name) or getattr(b, name)]
    if a.calls_saved or b.calls_saved:
        rows.append(("saved by the cascade, estimated", a.saved_text(), b.saved_text()))
    rows.append(("cost", a.cost_text(), b.cost_text()))
    return rows


def changes_text(c: RunComparison) -> str:
    """"What run #2 changed: critic 'lenient' removed; critic 'second' added (...)."."""
    if c.changes is None:
        return (f"What {c.b.title} changed from {c.a.title} cannot be said: a stored panel "
                "snapshot no longer reads as a panel.")
    if not c.changes:
        same = c.a.panel_hash == c.b.panel_hash
        return (f"{c.b.title} ran the same panel version as {c.a.title}." if same else
                f"{c.b.title} judges as {c.a.title} does (only the panel's name or "
                "description changed).")
    return f"What {c.b.title} changed from {c.a.title}: " + "; ".join(c.changes) + "."
