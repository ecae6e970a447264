"""Calibration from a run's votes as integer arrays (items x critics), not `Verdict` objects.

Same figures as `judging.analysis.calibration.calibrate`, checked equal in the tests; what changes is the
cost. Three million `Verdict` objects took about 3 GB and 75 s at 1,000,000 items x 3 critics;
here the only Python objects per item are the two projections the result hands back.

Why it is exact and still cheap: a per-item vote (any strategy, custom ones too) sees only its
verdicts' critics, values, confidences and order. Items with the same pattern of those get the
same vote, and a panel's handful of critics and labels makes few patterns (at most (V+2)^R x R!,
a few hundred for 3 critics and 4 labels). So each distinct pattern is voted once, with real
`Verdict` objects, by `judging.voting.strategies.vote_dataset`, and the decision is spread back over its
items. Dawid-Skene (the reference where no human looked, and the "dawid-skene" strategy) is
fitted once over the whole code matrix, as `dawid_skene_vote` fits it; its per-item decision
depends on the item's pattern and posterior only, so it is made per pattern as well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from judging.agreement import RatingMatrix, proportion
from judging.analysis.calibration import Calibration, Projection, Record, assemble
from judging.panel.panel_model import Panel
from judging.verdicts import FailureKind, Verdict
from judging.voting.dawid_skene import _label_code, _tie_pick, dawid_skene, dawid_skene_vote
from judging.voting.strategies import DATASET_STRATEGIES, STRATEGY_KINDS, VotingConfig, vote_dataset

FAILED = -1  # as `storage.results.vote_grid.FAILED`: a call that gave no usable value
ABSENT = -2  # as `storage.results.vote_grid.ABSENT`: no call of the critic on the item

IntArray = npt.NDArray[np.int64]


def calibrate_codes(
    panel: Panel,
    *,
    items: npt.NDArray[Any],
    critics: Sequence[str],
    codes: npt.NDArray[np.integer[Any]],
    values: Sequence[tuple[str | None, float | None]],
    order: npt.NDArray[np.integer[Any]],
    humans: Mapping[str, str],
    confidence: npt.NDArray[np.float64] | None = None,
) -> Calibration:
    """`judging.analysis.calibration.calibrate` over a run's votes as arrays (`storage.results.vote_grid`).

    Args:
        panel: the run's panel (a label scale).
        items: item ids, one per row.
        critics: the columns' critic names.
        codes: (items, critics): an index into `values`, `FAILED` or `ABSENT`.
        values: the distinct stored (label, score) pairs.
        order: (items, critics) call ids: an item's verdicts in ascending id are in stored order.
        humans: item id -> the human label.
        confidence: (items, critics) stated confidences (NaN: none); needed only when the
            panel votes with `use_confidence` (else ignored).

    Raises:
        ValueError: arrays whose shapes do not match.
    """
    cells = np.asarray(codes, dtype=np.int64)
    ids = np.asarray(order, dtype=np.int64)
    n = len(items)
    if cells.shape != (n, len(critics)) or ids.shape != cells.shape:
        raise ValueError(f"codes and order must be {n} items x {len(critics)} critics; got "
                         f"{cells.shape} and {ids.shape}.")
    patterns = _Patterns(panel, list(critics), cells, ids, list(values), confidence)
    reference_votes = _dawid_skene_decisions(panel, panel.voting, cells, ids, list(values),
                                             list(critics))
    # Strings as codes: the reference labels, the critics' labels and the humans' share one
    # vocabulary, so every comparison below is between integers.
    vocab: dict[str, int] = {}
    human = np.full(n, -1, dtype=np.int64)
    reviewed = list(humans)
    rows = pd.Index(np.asarray(items, dtype=object)).get_indexer(
        pd.Index(reviewed, dtype=object)) if reviewed else np.zeros(0, dtype=np.int64)
    for item, row in zip(reviewed, rows.tolist(), strict=True):
        if row >= 0:
            human[row] = vocab.setdefault(str(humans[item]), len(vocab))
    ds = _as_codes(reference_votes, vocab)
    reference = np.where(human >= 0, human, ds)
    in_reference = reference >= 0
    said_of_value = np.array([vocab.setdefault(str(label), len(vocab)) if label is not None
                              else -1 for label, _ in values] + [-1, -1], dtype=np.int64)
    words = {code: word for word, code in vocab.items()}
    records = []
    for critic in panel.critics:
        if critic.name in critics:
            col = cells[:, list(critics).index(critic.name)]
            said = said_of_value[col]  # FAILED and ABSENT index the two trailing -1s
        else:
            said = np.full(n, -1, dtype=np.int64)
        compared = in_reference & (said >= 0)
        right = compared & (said == reference)
        wrong_rows = np.flatnonzero(compared & ~right)
        pairs = said[wrong_rows] * (len(vocab) + 1) + reference[wrong_rows]
        keys, first, counts = np.unique(pairs, return_index=True, return_counts=True)
        confusions = {(words[int(k) // (len(vocab) + 1)], words[int(k) % (len(vocab) + 1)]):
                      int(c) for _, k, c in sorted(zip(first.tolist(), keys.tolist(),
                                                       counts.tolist()))}
        records.append(Record(critic.name, int(right.sum()), int(compared.sum()),
                              int(in_reference.sum()), confusions))
    from_humans = int((human >= 0).sum())

    def projected(suggested: Panel) -> Projection:
        before = patterns.decide(panel)
        after = patterns.decide(suggested)
        labels = sorted(set(before) | set(after), key=lambda x: (x is None, str(x)))
        codes_of = {label: i for i, label in enumerate(labels)}
        b = np.array([codes_of[x] for x in before], dtype=np.int64)[patterns.inverse]
        a = np.array([codes_of[x] for x in after], dtype=np.int64)[patterns.inverse]
        lookup = np.array(labels + [None], dtype=object)[:-1]
        item_list = items.tolist()
        before_of = dict(zip(item_list, lookup[b].tolist(), strict=True))
        after_of = dict(zip(item_list, lookup[a].tolist(), strict=True))
        changed = np.asarray(items, dtype=object)[b != a].tolist()
        return Projection(before=before_of, after=after_of, changed=changed,
                          vs_humans_before=_vs_humans(lookup[b], human, vocab, len(humans)),
                          vs_humans_after=_vs_humans(lookup[a], human, vocab, len(humans)))

    return assemble(panel, records, from_humans, int(in_reference.sum()) - from_humans,
                    projected)


def _as_codes(labels: npt.NDArray[Any], vocab: dict[str, int]) -> IntArray:
    """Per item, the code of its label in `vocab` (added when new); -1 where None."""
    distinct = sorted({label for label in labels.tolist() if label is not None}, key=str)
    return _map_codes(labels, {label: vocab.setdefault(str(label), len(vocab))
                               for label in distinct})


def _map_codes(labels: npt.NDArray[Any], mapping: dict[str, int]) -> IntArray:
    out = np.full(len(labels), -1, dtype=np.int64)
    for label, code in mapping.items():
        out[labels == label] = code
    return out


def _vs_humans(decided: npt.NDArray[Any], human: IntArray, vocab: dict[str, int],
               n_humans: int) -> Any:
    """The consensus against the humans, as `calibration._agreement` counts it: over the
    humans' items (all of them, also those outside the run) where the consensus has a label."""
    codes = _map_codes(decided, {label: vocab[str(label)] for label in
                                 {x for x in decided.tolist() if x is not None}
                                 if str(label) in vocab})
    has_label = np.array([x is not None for x in decided.tolist()], dtype=bool)
    compared = (human >= 0) & has_label
    agree = int((compared & (codes == human)).sum())
    return proportion(agree, int(compared.sum()), missing=n_humans - int(compared.sum()))


class _Patterns:
    """The run's distinct vote patterns (values, order, and confidences when they count), each
    voted once with real verdicts (see the module's doc)."""

    def __init__(self, panel: Panel, critics: list[str], cells: IntArray, ids: IntArray,
                 values: list[tuple[str | None, float | None]],
                 confidence: npt.NDArray[np.float64] | None) -> None:
        self.critics, self.cells, self.ids, self.values = critics, cells, ids, values
        n, r = cells.shape
        # An item's verdicts in stored order: its critics' columns sorted by call id, absent last.
        rank = np.argsort(np.where(cells == ABSENT, np.iinfo(np.int64).max, ids), axis=1,
                          kind="stable")
        self.use_confidence = confidence is not None and _reads_confidence(panel.voting)
        parts: list[npt.NDArray[Any]] = [cells, rank]
        if self.use_confidence and confidence is not None:
            parts.append(np.nan_to_num(confidence, nan=-1.0).view(np.int64))
        keys = np.concatenate(parts, axis=1) if n else np.zeros((0, 2 * r), dtype=np.int64)
        self.first, self.inverse = _distinct_rows(keys)
        self.rank = rank
        self.confidence = confidence if self.use_confidence else None
        self.n_items = n

    def _verdicts(self, row: int) -> list[Verdict]:
        out = []
        for col in self.rank[row].tolist():
            code = int(self.cells[row, col])
            if code == ABSENT:
                continue
            sure = None
            if self.confidence is not None and not math.isnan(self.confidence[row, col]):
                sure = float(self.confidence[row, col])
            if code == FAILED:
                out.append(Verdict(critic=self.critics[col], item_id="", failure=FailureKind.ERROR))
            else:
                label, score = self.values[code]
                out.append(Verdict(critic=self.critics[col], item_id="", label=label,
                                   score=score, confidence=sure))
        return out

    def decide(self, panel: Panel) -> list[str | None]:
        """Each pattern's consensus under `panel` (in pattern order)."""
        weights = {c.name: c.weight for c in panel.critics}
        strategy = panel.voting.strategy
        if strategy == "dawid-skene":
            per_item = _dawid_skene_decisions(panel, panel.voting, self.cells, self.ids,
                                              self.values, self.critics)
            return [per_item[row] for row in self.first.tolist()]
        reps = [self._verdicts(row) for row in self.first.tolist()]
        if strategy in DATASET_STRATEGIES:
            # Another dataset-level strategy sees every item: hand it every item's list, the
            # lists shared between the items of a pattern (no verdict is copied).
            whole = [reps[p] for p in self.inverse.tolist()]
            outcomes = vote_dataset(whole, weights, panel.voting, panel.scale)
            return [None if outcomes[row].consensus is None else str(outcomes[row].consensus)
                    for row in self.first.tolist()]
        outcomes = vote_dataset(reps, weights, panel.voting, panel.scale)
        return [None if o.consensus is None else str(o.consensus) for o in outcomes]


def _distinct_rows(keys: npt.NDArray[np.int64]) -> tuple[IntArray, IntArray]:
    """(the first row of each distinct row of `keys`, each row's distinct-row index). Rows of
    small integers are packed into one int64 each first when they fit (sorting a million
    integers, not a million rows of them: 20 times faster)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    low = keys.min(axis=0)
    span = keys.max(axis=0) - low + 1
    if float(np.prod(span.astype(np.float64))) < 2.0**62:
        packed = np.zeros(len(keys), dtype=np.int64)
        for col in range(keys.shape[1]):
            packed = packed * int(span[col]) + (keys[:, col] - low[col])
        _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return first.astype(np.int64), inverse.reshape(-1).astype(np.int64)


def _reads_confidence(config: VotingConfig) -> bool:
    """Whether a strategy may read the verdicts' confidences: the weighted vote with
    `use_confidence`, and any strategy that is not built in (it may read anything)."""
    builtin_ignoring = set(STRATEGY_KINDS) - {"weighted"}
    if config.strategy == "weighted":
        return config.use_confidence
    return config.strategy not in builtin_ignoring


def _dawid_skene_decisions(panel: Panel, config: VotingConfig, cells: IntArray, ids: IntArray,
                           values: list[tuple[str | None, float | None]],
                           critics: list[str]) -> npt.NDArray[Any]:
    """Per item, the consensus `judging.voting.dawid_skene.dawid_skene_vote` gives (None: none)."""
    scale = panel.scale
    labels = list(scale.labels)
    n = len(cells)
    if n == 0:
        return np.zeros(0, dtype=object)
    if config.error_policy == "count_as" and config.error_label not in labels:
        # The same refusal as `dawid_skene_vote`, from the same code.
        return _refused(config, scale)
    index = {label: i for i, label in enumerate(labels)}
    value_code = np.array(
        [-1 if (code := _label_code(Verdict(critic="", item_id="", label=label, score=score),
                                    scale, index)) is None else code
         for label, score in values] + [-1, -1], dtype=np.int64)
    real = np.where(cells >= 0, value_code[cells], -1)
    present = cells != ABSENT
    failed = present & (real < 0)
    fit = real.copy()
    if config.error_policy == "count_as":
        fit[failed] = index[str(config.error_label)]
    # Columns in order of first appearance, as `dawid_skene_vote` meets the critics; a critic
    # that never answered is not a column there.
    rank = np.argsort(np.where(present, ids, np.iinfo(np.int64).max), axis=1, kind="stable")
    answered = np.flatnonzero(present.any(axis=0))
    first_row = present.argmax(axis=0)
    place = (rank[first_row] == np.arange(len(critics))[:, None]).argmax(axis=1)
    seen = sorted(answered.tolist(), key=lambda c: (int(first_row[c]), int(place[c])))
    matrix = RatingMatrix(fit[:, seen], labels, np.arange(len(labels), dtype=np.float64),
                          "nominal", [critics[c] for c in seen])
    model = dawid_skene(matrix, critics=matrix.critics)
    n_failed = failed.sum(axis=1)
    keys = np.concatenate([fit[:, seen], (n_failed > 0)[:, None].astype(np.int64)], axis=1)
    first, inverse = _distinct_rows(keys)
    decided: list[str | None] = []
    for row in first.tolist():
        consensus: str | None
        if not (fit[row, seen] >= 0).any():
            consensus = None
        elif config.error_policy == "abstain" and n_failed[row]:
            consensus = None
        else:
            post = model.posteriors[row]
            tied = [labels[i] for i in np.flatnonzero(post >= post.max() - 1e-9)]
            consensus = _tie_pick(tied, config, scale) if len(tied) > 1 else tied[0]
        if consensus is None and config.fallback is not None:
            consensus = config.fallback
        decided.append(consensus)
    return np.array(decided + [None], dtype=object)[:-1][inverse]


def _refused(config: VotingConfig, scale: Any) -> npt.NDArray[Any]:
    dawid_skene_vote([[Verdict(critic="", item_id="", failure=FailureKind.ERROR)]], config, scale)
    raise AssertionError("unreachable: dawid_skene_vote refuses this configuration")
