"""What the reviews teach the panel: each critic's accuracy and confusions against the humans
(Dawid-Skene's estimate where no human looked), suggested weights, and their projected effect,
computed by voting the stored verdicts again (no new call).

Weights: a critic right with probability p among K labels gets log(p (K - 1) / (1 - p)), the
weight under which a weighted vote is the most likely label when critics err independently and
evenly (Nitzan and Paroush 1982); p is smoothed (k + 1) / (n + 2) so a perfect record does not
weigh infinitely, and a critic at chance or worse gets 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from judging.agreement import Proportion, proportion
from judging.panel.panel_model import Panel
from judging.verdicts import Verdict
from judging.voting.dawid_skene import dawid_skene_vote
from judging.voting.strategies import vote_dataset

# Below this many reference labels a critic keeps its weight: too little to judge it by.
MIN_EVIDENCE = 5


@dataclass(frozen=True)
class CriticCalibration:
    """One critic against the reference labels.

    Attributes:
        critic: its name.
        accuracy: share of reference items where it gave the reference label (Wilson interval).
        confusions: (it said, the reference said) -> items, for the items it got wrong.
        weight: its weight now; suggested: the weight its record earns (see the module's doc).
    """

    critic: str
    accuracy: Proportion
    confusions: dict[tuple[str, str], int]
    weight: float
    suggested: float

    @property
    def top_confusion(self) -> tuple[tuple[str, str], int] | None:
        return max(self.confusions.items(), key=lambda kv: kv[1]) if self.confusions else None


@dataclass(frozen=True)
class Projection:
    """What the suggested panel would decide, from the stored verdicts.

    Attributes:
        before, after: item id -> the consensus now / with the suggestion.
        changed: items whose consensus would change, in item order.
        vs_humans_before, vs_humans_after: agreement of the consensus with the humans' labels.
    """

    before: dict[str, str | None]
    after: dict[str, str | None]
    changed: list[str]
    vs_humans_before: Proportion
    vs_humans_after: Proportion


@dataclass(frozen=True)
class Calibration:
    """The calibration of a panel on one run's verdicts.

    Attributes:
        critics: one entry per critic, in panel order.
        from_humans, from_dawid_skene: reference items labelled by a human / by Dawid-Skene.
        suggested: the panel with the suggested weights and the weighted strategy.
        projection: its effect on this run, by re-voting the stored verdicts.
    """

    critics: list[CriticCalibration]
    from_humans: int
    from_dawid_skene: int
    suggested: Panel
    projection: Projection
    notes: list[str] = field(default_factory=list)


def suggested_weight(correct: int, n: int, n_labels: int) -> float:
    """The weight a record of `correct` of `n` earns among `n_labels` labels (module doc)."""
    p = (correct + 1) / (n + 2)
    return round(max(0.0, math.log(p * max(n_labels - 1, 1) / (1 - p))), 3)


def _label(verdict: Verdict) -> str | None:
    return None if verdict.failure is not None or verdict.label is None else str(verdict.label)


def _agreement(labels: Mapping[str, str | None], humans: Mapping[str, str]) -> Proportion:
    compared = [item for item in humans if labels.get(item) is not None]
    agree = sum(labels[item] == humans[item] for item in compared)
    return proportion(agree, len(compared), missing=len(humans) - len(compared))


def project(
    now: Panel, suggested: Panel, verdicts: Mapping[str, Sequence[Verdict]],
    humans: Mapping[str, str],
) -> Projection:
    """Vote the stored verdicts with both panels and compare (no call is made)."""
    items = list(verdicts)
    per_item = [list(verdicts[item]) for item in items]

    def decide(panel: Panel) -> dict[str, str | None]:
        weights = {c.name: c.weight for c in panel.critics}
        if panel.juries:  # each jury votes, then the panel over the juries (`judging.voting.juries`)
            outcomes = [panel.vote(verdicts) for verdicts in per_item]
        else:
            outcomes = vote_dataset(per_item, weights, panel.voting, panel.scale)
        return {item: (None if o.consensus is None else str(o.consensus))
                for item, o in zip(items, outcomes, strict=True)}

    before, after = decide(now), decide(suggested)
    return Projection(
        before=before, after=after,
        changed=[item for item in items if before[item] != after[item]],
        vs_humans_before=_agreement(before, humans), vs_humans_after=_agreement(after, humans),
    )


def calibrate(
    panel: Panel, verdicts: Mapping[str, Sequence[Verdict]], humans: Mapping[str, str]
) -> Calibration:
    """Each critic against the humans' labels (Dawid-Skene's where no human labelled the item),
    the suggested weights, and their projected effect on these verdicts.

    Args:
        panel: the run's panel (a label scale).
        verdicts: item id -> every critic's stored verdict on it.
        humans: item id -> the human label (`storage.reviewing.overrides.human_labels`).
    """
    items = list(verdicts)
    ds = dawid_skene_vote([list(verdicts[i]) for i in items], panel.voting, panel.scale)
    reference: dict[str, str] = {}
    for item, outcome in zip(items, ds, strict=True):
        if item in humans:
            reference[item] = humans[item]
        elif outcome.consensus is not None:
            reference[item] = str(outcome.consensus)
    records = []
    for critic in panel.critics:
        said = {v.item_id: _label(v) for item in items for v in verdicts[item]
                if v.critic == critic.name}
        compared = [i for i in reference if said.get(i) is not None]
        correct = sum(said[i] == reference[i] for i in compared)
        wrong = Counter((str(said[i]), reference[i]) for i in compared if said[i] != reference[i])
        records.append(Record(critic.name, correct, len(compared), len(reference), dict(wrong)))
    from_humans = sum(1 for i in reference if i in humans)
    return assemble(panel, records, from_humans, len(reference) - from_humans,
                    lambda suggested: project(panel, suggested, verdicts, humans))


@dataclass(frozen=True)
class Record:
    """One critic against the reference: `correct` of `compared` reference items it labelled,
    of `reference` in all, and its mistakes (it said, the reference said) -> items, in the
    order they first occur."""

    critic: str
    correct: int
    compared: int
    reference: int
    confusions: dict[tuple[str, str], int]


def assemble(panel: Panel, records: Sequence[Record], from_humans: int, from_dawid_skene: int,
             projected: Callable[[Panel], Projection]) -> Calibration:
    """The calibration from each critic's record: the suggested weights (a critic with fewer
    than `MIN_EVIDENCE` reference labels keeps its own), the suggested panel, and its
    projection by `projected(suggested)`. Shared by `calibrate` and the code-matrix path
    (`judging.analysis.code_calibration`), so both suggest the same thing from the same records."""
    n_labels = len(panel.scale.labels)
    notes = []
    critics = []
    weights_now = {c.name: c.weight for c in panel.critics}
    for record in records:
        if record.compared >= MIN_EVIDENCE:
            weight = suggested_weight(record.correct, record.compared, n_labels)
        else:
            weight = weights_now[record.critic]
            notes.append(f"{record.critic}: {record.compared} reference labels, fewer than "
                         f"{MIN_EVIDENCE}: its weight is left as it is.")
        critics.append(CriticCalibration(
            critic=record.critic,
            accuracy=proportion(record.correct, record.compared,
                                missing=record.reference - record.compared),
            confusions=record.confusions, weight=weights_now[record.critic], suggested=weight))
    if critics and all(c.suggested == 0 for c in critics):
        notes.append("Every critic is at chance or worse against the reference: no weighting "
                     "can help; the suggestion keeps the current weights.")
        critics = [CriticCalibration(c.critic, c.accuracy, c.confusions, c.weight, c.weight)
                   for c in critics]
    weights = {c.critic: c.suggested for c in critics}
    weighted = {"strategy": "weighted"}
    suggested = panel.model_copy(update={
        "critics": [c.model_copy(update={"weight": weights[c.name]}) for c in panel.critics],
        # A panel of juries: the critics' weights count inside each jury, so each jury votes
        # by weight; the vote over the juries stays as it is.
        **({"juries": [j.model_copy(update={"voting": j.voting.model_copy(update=weighted)})
                       for j in panel.juries]} if panel.juries else
           {"voting": panel.voting.model_copy(update=weighted)}),
    })
    suggested = Panel.model_validate(suggested.model_dump())  # checked like any panel
    return Calibration(
        critics=critics, from_humans=from_humans, from_dawid_skene=from_dawid_skene,
        suggested=suggested, projection=projected(suggested), notes=notes,
    )
