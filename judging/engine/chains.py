"""One critic's verdict on one item, however many calls it takes: a compound critic's chain
(`judging.panel.compound`) and a critic's repeats (`Critic.samples`).

A single call is its own verdict. Otherwise the critic's verdict is *derived*: from the chain's
last step, or by a vote over the samples. It carries every call in `Verdict.steps`, in the
order made, so the ledger pays each one and storage keeps each one's evidence; it is never a
cache entry itself (its `cache_key` is None), while every step is cached as any call is, so a
resumed chain only sends the steps it had not finished.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

from judging.panel.compound import (
    Argument,
    argue_messages,
    judge_after_debate,
    judge_after_reasoning,
    reason_messages,
    verify_messages,
)
from judging.panel.critics import Critic
from judging.panel.pairwise import PairwiseConfig
from judging.panel.rubric import (
    MARK_SCALE,
    RubricConfig,
    all_criteria_context,
    marks_text,
    one_criterion_context,
    rubric_answer,
    rubric_score,
)
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS, FailureKind, Item, Verdict


class Send(Protocol):
    """`CallRunner.call` with the run's cancel, gate, limits and budget already bound."""

    def __call__(
        self,
        critic: Critic,
        item: Item,
        scale: Scale | RubricConfig,
        *,
        messages: list[dict[str, str]] | None = None,
        free_text: bool = False,
        sample: int = 0,
    ) -> Verdict: ...


def sample_offsets(critics: Sequence[Critic]) -> dict[str, int]:
    """The first sample number of each critic's calls.

    Identical critics at a temperature above 0 are more draws from one model, so each copy's
    samples continue the numbering of the copies before it: their cache keys differ and every
    copy is really asked (without this, five copies shared one cached answer). At temperature 0
    identical critics ask the same question and share the answer, as before.
    """
    taken: dict[str, int] = {}
    offsets: dict[str, int] = {}
    for critic in critics:
        if critic.temperature <= 0:
            offsets[critic.name] = 0
            continue
        identity = critic.model_dump_json(
            exclude={"name", "weight", "tier", "price_in_per_mtok", "price_out_per_mtok"}
        )
        offsets[critic.name] = taken.get(identity, 0)
        taken[identity] = offsets[critic.name] + critic.samples
    return offsets


def planned_calls(critic: Critic, critics: Mapping[str, Critic],
                  rubric: RubricConfig | None = None) -> list[tuple[Critic, int]]:
    """Who sends how many calls per item for this critic's verdict, as `judge_with` makes them:
    the critic itself, and for a debate each debater's turns (at the debater's model and
    price). Used by the estimate before a run."""
    # A rule or python critic sends no request (`judging.engine.plugin_critics`).
    own = {"single": 1, "reason-then-judge": 2, "self-verify": 2, "debate": 1, "rule": 0,
           "python": 0, "imported": 0}[critic.kind]
    if rubric is not None and rubric.active and rubric.per_criterion:
        own = len(rubric.criteria)
    plan = [(critic, own * critic.samples)]
    if critic.kind == "debate":
        plan += [(critics[name], critic.rounds * critic.samples) for name in critic.debaters
                 if name in critics]
    return plan


def judge_with(
    critic: Critic,
    item: Item,
    scale: Scale,
    send: Send,
    *,
    critics: Mapping[str, Critic],
    first_sample: int = 0,
    pairwise: PairwiseConfig | None = None,
    rubric: RubricConfig | None = None,
) -> Verdict:
    """The critic's verdict on the item, sending every call it needs through `send`.

    Args:
        critics: the panel's critics by name (a debate's debaters are among them).
        first_sample: the number of this critic's first sample (see `sample_offsets`).
        pairwise: the panel's pairwise settings: with `swap`, the critic is asked again with
            the two responses swapped (`judging.panel.pairwise`); a python critic is not.
        rubric: the panel's rubric: the critic marks every criterion, in one call or one call
            per criterion (`judging.panel.rubric`).

    Never raises: a failed step ends the chain and the verdict says which step failed.
    """
    if rubric is not None and rubric.active:
        return _graded(critic, item, send, rubric, first_sample)
    # A python critic is asked once, in the stored order: a function has no position bias to
    # measure, and one reading a stored decision would answer the swapped pair as the stored one.
    if pairwise is not None and pairwise.active and pairwise.swap and critic.kind != "python":
        forward = _asked(critic, item, scale, send, critics, first_sample)
        backward = _asked(critic, pairwise.swapped(item), scale, send, critics, first_sample)
        return both_orders(pairwise, critic, item, forward, backward)
    return _asked(critic, item, scale, send, critics, first_sample)


def _asked(critic: Critic, item: Item, scale: Scale, send: Send,
           critics: Mapping[str, Critic], first_sample: int) -> Verdict:
    """The critic's answer on the item as given: one call, a chain, or a vote over samples."""
    if critic.samples == 1:
        if critic.kind == "single" or critic.kind in PLUGIN_KINDS:  # `CallRunner.call` judges
            return send(critic, item, scale, sample=first_sample)
        return _chain(critic, item, scale, send, critics, first_sample)
    # Repeats: each sample one call (an imported critic's repeat is the judge's own, e.g. an
    # Inspect epoch), or one chain.
    one_call = critic.kind == "single" or critic.kind in PLUGIN_KINDS
    made = [
        _chain(critic, item, scale, send, critics, first_sample + k)
        if not one_call else _as_step(send(critic, item, scale,
                                           sample=first_sample + k), "sample")
        for k in range(critic.samples)
    ]
    return vote_samples(critic, item, made, scale)


def _graded(critic: Critic, item: Item, send: Send, rubric: RubricConfig,
            sample: int) -> Verdict:
    """A rubric critic's marks: one call for every criterion, or a call per criterion."""
    if not rubric.per_criterion:
        messages = critic.build_messages(item.fields, MARK_SCALE,
                                         context=all_criteria_context(rubric),
                                         answer=rubric_answer(rubric))
        return send(critic, item, rubric, messages=messages, sample=sample)
    steps: list[Verdict] = []
    for criterion in rubric.criteria:
        messages = critic.build_messages(item.fields, MARK_SCALE,
                                         context=one_criterion_context(criterion))
        step = _as_step(send(critic, item, MARK_SCALE, messages=messages, sample=sample),
                        f"criterion {criterion.id}")
        steps.append(step)
        if not step.ok:
            return derived(critic, item, steps)
    verdict = derived(critic, item, steps)
    verdict.marks = {c.id: (str(s.label), s.reasoning) for c, s in zip(rubric.criteria, steps,
                                                                        strict=True)}
    verdict.score = rubric_score({c: m for c, (m, _) in verdict.marks.items()}, rubric)
    verdict.label, verdict.confidence = None, None
    verdict.reasoning = marks_text(verdict.marks)
    return verdict


def _as_step(verdict: Verdict, role: str) -> Verdict:
    verdict.role = role
    return verdict


def _chain(
    critic: Critic, item: Item, scale: Scale, send: Send, critics: Mapping[str, Critic],
    sample: int,
) -> Verdict:
    steps: list[Verdict] = []

    def step(who: Critic, role: str, messages: list[dict[str, str]] | None,
             free_text: bool = False) -> Verdict:
        made = _as_step(send(who, item, scale, messages=messages, free_text=free_text,
                             sample=sample), role)
        steps.append(made)
        return made

    if critic.kind == "reason-then-judge":
        reasoning = step(critic, "reason", reason_messages(critic, item, scale), True)
        if not reasoning.ok:
            return derived(critic, item, steps)
        step(critic, "judge", judge_after_reasoning(critic, item, scale, reasoning.reasoning or ""))
        return derived(critic, item, steps)
    if critic.kind == "self-verify":
        first = step(critic, "judge", None)
        if not first.ok:
            return derived(critic, item, steps)
        check = step(critic, "verify", verify_messages(critic, item, scale, first))
        verdict = derived(critic, item, steps)
        if check.ok and check.value != first.value:
            verdict.reasoning = f"Overturned the first verdict ({first.value}): {check.reasoning or ''}"
        return verdict
    if critic.kind == "debate":
        said: list[Argument] = []
        for round_number in range(1, critic.rounds + 1):
            for side, name in zip("AB", critic.debaters, strict=True):
                debater = critics[name]
                turn = step(debater, f"round {round_number} · {side} · {name}",
                            argue_messages(debater, side, item, scale, said), True)
                if not turn.ok:
                    return derived(critic, item, steps)
                said.append(Argument(round_number, side, name, turn.reasoning or ""))
        step(critic, "judge", judge_after_debate(critic, item, scale, said))
        return derived(critic, item, steps)
    raise ValueError(f"unknown critic kind {critic.kind!r}")  # the Critic model forbids it


def _sum(values: Sequence[int | float | None]) -> int | float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def derived(critic: Critic, item: Item, steps: list[Verdict], chosen: Verdict | None = None,
            failure: tuple[FailureKind, str] | None = None) -> Verdict:
    """A critic's verdict made from several calls: the `chosen` call's answer and evidence,
    the calls' summed latency, attempts, tokens and cost, and `steps`. Without a `chosen` call,
    the chain's last step decides, its failure included (a failed step ends a chain)."""
    if chosen is None:
        chosen = steps[-1]
        if failure is None and chosen.failure is not None:
            failure = (chosen.failure, f"{chosen.role} step: {chosen.message}")
    kind, message = failure or (None, None)
    paid = [s for s in steps if not s.cached]
    costs = [s.cost_usd for s in paid if s.attempts]
    return Verdict(
        critic=critic.name,
        item_id=item.id,
        label=chosen.label if kind is None else None,
        score=chosen.score if kind is None else None,
        confidence=chosen.confidence if kind is None else None,
        reasoning=chosen.reasoning if kind is None else None,
        failure=kind,
        message=message,
        raw_request=chosen.raw_request,
        raw_response=chosen.raw_response,
        latency_ms=_sum([s.latency_ms for s in steps]),
        attempts=sum(s.attempts for s in steps),
        tokens_in=_sum([s.tokens_in for s in steps]),  # type: ignore[arg-type]
        tokens_out=_sum([s.tokens_out for s in steps]),  # type: ignore[arg-type]
        tokens_cached=_sum([s.tokens_cached for s in steps]),  # type: ignore[arg-type]
        # Unknown if any sent call had no price: a partial sum would read as the whole cost.
        cost_usd=None if any(c is None for c in costs) else _sum(costs),
        # A plug-in critic's verdict names its kind, as each of its calls does: the ledger and
        # the cards tell a check or a replayed verdict from a model's call by it.
        vendor=critic.kind if critic.kind in PLUGIN_KINDS else critic.vendor,
        model=chosen.model if critic.kind in PLUGIN_KINDS else critic.model,
        simulated=any(s.simulated for s in steps),
        cached=all(s.cached for s in steps),
        steps=steps,
    )


def vote_samples(critic: Critic, item: Item, samples: list[Verdict], scale: Scale) -> Verdict:
    """The critic's verdict over its repeats: the most frequent label (the earliest sample's on
    a tie) or the median score. Any sample cancelled: cancelled (a resume asks the missing
    ones again; the others come from the cache). Every sample failed: failed."""
    steps: list[Verdict] = []
    for number, made in enumerate(samples):
        for call in made.calls:
            call.sample = number
            steps.append(call)
    ok = [s for s in samples if s.ok]
    if any(s.failure is FailureKind.CANCELLED for s in samples):
        return derived(critic, item, steps, failure=(
            FailureKind.CANCELLED, f"not every sample was made ({len(ok)} of {len(samples)})"))
    if not ok:
        last = samples[-1]
        assert last.failure is not None
        return derived(critic, item, steps, failure=(
            last.failure, f"all {len(samples)} samples failed; the last: {last.message}"))
    if scale.is_numeric:
        scores = [s.score for s in ok if s.score is not None]
        middle = statistics.median(scores)
        chosen = min(ok, key=lambda s: abs((s.score or 0.0) - middle))
        verdict = derived(critic, item, steps, chosen)
        verdict.score = middle
        verdict.reasoning = (f"median of {len(ok)} samples "
                             f"({', '.join(f'{x:g}' for x in scores)}): {chosen.reasoning or ''}")
        return verdict
    counts = Counter(s.label for s in ok)
    top = max(counts.values())
    chosen = next(s for s in ok if counts[s.label] == top)
    verdict = derived(critic, item, steps, chosen)
    backing = [s.confidence for s in ok if s.label == chosen.label and s.confidence is not None]
    verdict.confidence = statistics.fmean(backing) if backing else None
    verdict.reasoning = f"{top} of {len(samples)} samples: {chosen.reasoning or ''}"
    return verdict


def both_orders(config: PairwiseConfig, critic: Critic, item: Item, forward: Verdict,
                backward: Verdict) -> Verdict:
    """A pairwise critic's verdict from its answers in the two orders (`backward` as given on
    the swapped item). Every call of both is kept as a step, the second order's marked
    `swapped`. An answer that changes with the order is a tie, or flagged `inconsistent`."""
    steps: list[Verdict] = []
    for answer, order in ((forward, "A first"), (backward, "B first")):
        for call in answer.calls:
            call.role = f"{order} · {call.role}" if call.role else order
            call.swapped = order == "B first"
            steps.append(call)
    failed = (next((a for a in (forward, backward) if a.failure is FailureKind.CANCELLED), None)
              or next((a for a in (forward, backward) if a.failure is not None), None))
    if failed is not None:
        assert failed.failure is not None
        which = "with A first" if failed is forward else "with B first"
        return derived(critic, item, steps, failed, (failed.failure, f"{which}: {failed.message}"))
    back = config.flip(backward.label)
    if back == forward.label:
        return derived(critic, item, steps, forward)
    said = (f"said {forward.label} with A first and {back} with B first (it answered "
            f"{backward.label} to the swapped pair)")
    if config.inconsistent == "tie" and config.tie_label is not None:
        verdict = derived(critic, item, steps, forward)
        verdict.label = config.tie_label
        verdict.reasoning = f"Inconsistent when the order was swapped: {said}; counted as a tie."
        return verdict
    return derived(critic, item, steps, forward, (
        FailureKind.INCONSISTENT, f"inconsistent when the order was swapped: {said}"))
