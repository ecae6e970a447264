"""Plain data that flows out of a panel run: items in, verdicts and panel verdicts out.

These are dataclasses, not pydantic models: a run makes millions of them and `storage` takes
them as plain data.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

# Critic kinds judged without a model (`judging.engine.plugin_critics`): their verdicts name the kind
# as their vendor, which is how the ledger tells a free rule evaluation from a call. An
# "imported" critic replays verdicts a judge gave outside Jurybox (`ImportedVerdict`).
PLUGIN_KINDS: tuple[str, ...] = ("rule", "python", "imported")


class FailureKind(StrEnum):
    """Why a call did not give a usable verdict. A failure is kept, never dropped."""

    ERROR = "error"  # retries exhausted: 429/5xx/timeouts/resets, or an unexpected reply
    ITEM_ERROR = "item_error"  # fatal for this item only (e.g. context too long)
    CRITIC_ERROR = "critic_error"  # fatal for the critic: bad key, no model, out of quota
    REFUSAL = "refusal"  # the model declined to judge
    TRUNCATED = "truncated"  # finish_reason=length before a verdict
    PARSE_FAIL = "parse_fail"  # a reply came back but holds no verdict on the scale
    CANCELLED = "cancelled"  # the run was cancelled before this call was sent
    INCONSISTENT = "inconsistent"  # a pairwise answer changed when the order was swapped


@dataclass(slots=True)
class Item:
    """One thing to judge: a stable id, its fields (usable as {placeholders}), maybe a gold label."""

    id: str
    fields: dict[str, Any]
    gold: str | None = None
    # A pairwise item as asked the second time, its two responses traded
    # (`PairwiseConfig.swapped`): an imported critic answers with its verdict in that order.
    swapped: bool = False

    @classmethod
    def coerce(cls, value: Item | dict[str, Any], index: int = 0) -> Item:
        """Accept an `Item` or a plain dict (its "id" key, else a hash of its fields)."""
        if isinstance(value, Item):
            return value
        fields = dict(value)
        item_id = fields.pop("id", None)
        gold = fields.pop("gold", None)
        if item_id is None:
            digest = hashlib.sha256(
                json.dumps(fields, sort_keys=True, default=str).encode()
            ).hexdigest()
            item_id = digest[:12]
        return cls(id=str(item_id), fields=fields, gold=None if gold is None else str(gold))


@dataclass(slots=True)
class Verdict:
    """One critic's judgement of one item, with the evidence behind it.

    Exactly one of these holds: `failure is None` and `label` (or `score`) is set; or `failure`
    says why there is no verdict and `message` says it in a sentence.
    """

    critic: str
    item_id: str
    label: str | None = None
    score: float | None = None
    confidence: float | None = None
    reasoning: str | None = None
    failure: FailureKind | None = None
    message: str | None = None
    raw_request: dict[str, Any] | None = None  # what was sent, never the API key
    raw_response: str | None = None  # the body as received
    latency_ms: float | None = None
    attempts: int = 0
    tokens_in: int | None = None
    tokens_out: int | None = None
    # Of tokens_in, those the vendor read from its prompt cache (priced at the cached rate).
    tokens_cached: int | None = None
    cost_usd: float | None = None  # None when the model's price is unknown, never 0
    cache_key: str | None = None
    vendor: str | None = None
    model: str | None = None
    simulated: bool = False
    cached: bool = False  # served from the cache of an earlier successful call
    # The calls behind a critic that makes more than one per item (`judging.panel.compound`): in the
    # order they were made. Empty for a single call, which is its own evidence.
    steps: list[Verdict] = field(default_factory=list)
    role: str | None = None  # a step's part in the chain: "reason", "judge", "verify", ...
    sample: int = 0  # which repeat a step belongs to (0 = the first)
    swapped: bool = False  # a pairwise step asked with the two responses swapped
    # A rubric critic's mark and reason per criterion (`judging.panel.rubric`); its score is theirs.
    marks: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # A critic asked for logprobs: each label's probability at its answer token, the expected
    # score over them (G-Eval) and its standard deviation (`judging.voting.logprobs`). None when the
    # reply had none (or for labels without an order, the expected score).
    label_probs: dict[str, float] | None = None
    expected_score: float | None = None
    expected_spread: float | None = None
    # A plug-in critic's check (`judging.engine.plugin_critics`): True passed, False failed (a guard
    # tier of a cascade rejects the item on it); None for model critics.
    passed: bool | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def value(self) -> str | float | None:
        """The label, or the score on numeric scales."""
        return self.label if self.label is not None else self.score

    @property
    def calls(self) -> list[Verdict]:
        """The calls that were made: its steps, or the verdict itself for a single call."""
        return self.steps or [self]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["failure"] = self.failure.value if self.failure else None
        for step in data["steps"]:
            step["failure"] = step["failure"].value if step["failure"] else None
        return data


@dataclass(slots=True)
class VoteOutcome:
    """What a voting strategy decides for one item.

    Attributes:
        consensus: the winning label, or the aggregated score; None when the vote abstains.
        agreement: share of *all* critics (failed ones included) that back the consensus; for
            scores, the share within the consensus spread. None when nothing could be counted.
        disagreement: True unless every critic gave a valid verdict and they agree. A failed
            critic never makes a vote look agreed.
        counts: valid verdicts per label (or per recommendation for scores).
        failed: how many critics gave no valid verdict.
        recommendation: for score strategies with thresholds, the band the score falls in.
        spread: for scores, max - min of the valid scores; variance where the strategy gives it.
        tie: True when the strategy had to break a tie (see the tie policy).
        note: a short sentence on anything unusual (tie broken, abstained, errors counted as X).
        label_probs: the pooled label distribution (`judging.voting.pooling`): set when the strategy
            pools probabilities, or when every counted critic gave them; empty otherwise.
        expected_score: the pooled expected score (ordered labels), and `expected_spread` the
            standard deviation of the pooled distribution.
    """

    consensus: str | float | None
    agreement: float | None
    disagreement: bool
    counts: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    recommendation: str | None = None
    spread: float | None = None
    variance: float | None = None
    tie: bool = False
    note: str | None = None
    # A rubric item: criterion -> {"mark", "agreement", "disputed"} of its vote.
    marks: dict[str, dict[str, Any]] = field(default_factory=dict)
    label_probs: dict[str, float] = field(default_factory=dict)
    expected_score: float | None = None
    expected_spread: float | None = None
    # A panel of juries (`judging.voting.juries`): jury name -> that jury's own vote, in panel order;
    # this outcome is then the top-level vote over those decisions.
    juries: dict[str, VoteOutcome] = field(default_factory=dict)


@dataclass(slots=True)
class TierVerdict:
    """What one cascade tier made of an item (`judging.panel.cascade`): a sub-verdict.

    Attributes:
        tier: the tier's number (`Critic.tier` for tiers made of critics' numbers; the
            position from 1 for `cascade.tiers`).
        name: the tier's name ("" when it has none).
        policy: "reject_on_any_fail", "accept_on_all_pass", "final", or for tiers made of
            critics' numbers "guard" / "settle" (`CascadeConfig.guard_tiers`, `settle`).
        step: "rejected" (stopped the item as failing), "accepted" (stopped it as passing),
            "settled" (its vote settled it), "decided" (the last tier decided), "next" (the
            item went on) or "cancelled" (the run stopped before the next tier).
        label: what the tier decided: for a tier that stopped the item (rejected, accepted)
            the label it stopped it with, else its own vote on the item (its critics alone).
        agreement: the share of the tier's critics behind that label.
        critics: the tier's critics, in panel order.
        reason: why, in a few words, e.g. "rejected by no_pii (REJECT)".
    """

    tier: int
    name: str
    policy: str
    step: str
    label: str | float | None
    agreement: float | None
    critics: list[str]
    reason: str

    @property
    def title(self) -> str:
        """"tier 1 guardrails" (or "tier 1" without a name)."""
        return f"tier {self.tier} {self.name}" if self.name else f"tier {self.tier}"

    @property
    def text(self) -> str:
        """"tier 1 guardrails: rejected by no_pii (REJECT)"."""
        return f"{self.title}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TierVerdict:
        """A stored sub-verdict (`as_dict`); unknown keys are ignored, so a later Jurybox may add
        some without breaking older readers."""
        return cls(
            tier=int(data.get("tier", 0)), name=str(data.get("name") or ""),
            policy=str(data.get("policy") or ""), step=str(data.get("step") or ""),
            label=data.get("label"), agreement=data.get("agreement"),
            critics=[str(c) for c in data.get("critics") or []],
            reason=str(data.get("reason") or ""),
        )


@dataclass(slots=True)
class PanelVerdict:
    """The panel's decision on one item: the vote plus every critic's verdict."""

    item_id: str
    outcome: VoteOutcome
    verdicts: list[Verdict]
    strategy: str
    tier: int = 0  # the last tier that was called for this item
    settled_by: str | None = None  # e.g. "tier 0: unanimous", "tier 0: guard failure"
    # A cascade's sub-verdicts, one per tier called for the item, in order (empty: no cascade).
    tiers: list[TierVerdict] = field(default_factory=list)

    @property
    def consensus(self) -> str | float | None:
        return self.outcome.consensus

    @property
    def agreement(self) -> float | None:
        return self.outcome.agreement

    @property
    def disagreement(self) -> bool:
        return self.outcome.disagreement

    @property
    def failed(self) -> int:
        return self.outcome.failed


# -- verdicts made outside Jurybox -------------------------------------------------------------
# Read from a table (`storage.datasets.imported`) or another tool's file
# (`storage.datasets.readers.eval_logs`), kept
# with their dataset (`storage.datasets.imported`), and replayed as `kind: imported` critics
# (`judging.engine.plugin_critics`), so an imported run is judged, voted, sealed and reviewed by
# the same code as any run.


@dataclass(frozen=True, slots=True)
class ImportedVerdict:
    """One verdict a judge gave outside Jurybox.

    Attributes:
        item_id: the item judged (an id of the items the file holds or of the dataset it
            goes with).
        judge: who gave it: a column of a wide table, an Inspect scorer, a promptfoo
            assertion, a Label Studio model version.
        label / score: the verdict (a label of the scale, or a number on a score scale).
        reasoning: the judge's explanation, shown beside its verdict on Review.
        confidence: the judge's confidence in [0, 1], where the file gives one.
        swapped: a pairwise verdict given with the two responses shown in the other order.
            The label is always in the item's own order (A is the item's first response).
        sample: which repeat it is (Inspect epochs from 0; 0 without repeats).
        history: earlier values of an edited verdict, oldest first (Inspect's score edits),
            each {"value", "explanation", "by", "at"} as the file has them.
    """

    item_id: str
    judge: str
    label: str | None = None
    score: float | None = None
    reasoning: str | None = None
    confidence: float | None = None
    swapped: bool = False
    sample: int = 0
    history: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ImportedAnnotation:
    """A person's label on an item (an annotator of a labelling tool): it enters as that
    reviewer's blind decision, so Team's alpha between humans and adjudication work on it."""

    item_id: str
    annotator: str
    label: str | None = None
    score: float | None = None
    note: str = ""
    at: str | None = None  # ISO 8601, when the file says when it was made


@dataclass(slots=True)
class VerdictSet:
    """What a verdict file holds.

    Attributes:
        source: where it came from, in a few words ("promptfoo results.json, eval abc").
        format: "table-wide", "table-long", "inspect", "promptfoo" or "label-studio".
        items: the items judged, with their fields and gold labels; empty when the file holds
            only verdicts on the items of a dataset imported before.
        verdicts: every judge's verdicts.
        annotations: people's labels (several per item, sparse).
        judges: each judge's description (its model, scorer or assertion), in the file's order.
        pairwise: the two fields holding response A and response B, when the judges compared
            two responses; None otherwise.
    """

    source: str
    format: str
    items: list[Item] = field(default_factory=list)
    verdicts: list[ImportedVerdict] = field(default_factory=list)
    annotations: list[ImportedAnnotation] = field(default_factory=list)
    judges: dict[str, str] = field(default_factory=dict)
    pairwise: tuple[str, str] | None = None

    @property
    def numeric(self) -> bool:
        """Whether the verdicts are scores (no verdict holds a label)."""
        return bool(self.verdicts) and all(v.label is None for v in self.verdicts)

    @property
    def labels(self) -> list[str]:
        """The labels the judges and annotators gave, in order of first appearance."""
        seen: dict[str, None] = {}
        for v in self.verdicts:
            if v.label is not None:
                seen.setdefault(v.label)
        for a in self.annotations:
            if a.label is not None:
                seen.setdefault(a.label)
        return list(seen)
