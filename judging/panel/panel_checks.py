"""Cross-field checks of a panel: what pydantic's per-field validation cannot see.

Each problem is a `ConfigError` whose message starts with the field path (`voting.fallback:`,
`critics[2].base_url:`) and says what to change. The Panel model calls `check_panel` from its
validator, so a panel that exists is a panel that can run.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Protocol

from judging.errors import ConfigError
from judging.panel.cascade import CascadeConfig
from judging.panel.cascade_checks import check_tiers
from judging.panel.cascade_tiers import tier_count
from judging.panel.critics import Critic
from judging.panel.curation import CurationConfig
from judging.panel.pairwise import PairwiseConfig
from judging.panel.plugin_checks import check_plugin_critics
from judging.panel.request_rules import rules_for
from judging.panel.rubric import MARK_SCALE, RubricConfig
from judging.panel.vendors import PRESETS
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS
from judging.voting.pooling import label_values
from judging.voting.strategies import (
    DATASET_STRATEGIES,
    PROBABILITY_STRATEGIES,
    STRATEGIES,
    STRATEGY_KINDS,
    VotingConfig,
    unknown_strategy_message,
)


class Panel(Protocol):
    """The parts of a panel these checks read (`panel_model.Panel` is one).

    A protocol, not an import: the Panel model calls `check_panel` from its own validator, so
    importing the model here would be a circle."""

    @property
    def critics(self) -> list[Critic]: ...
    @property
    def scale(self) -> Scale: ...
    @property
    def voting(self) -> VotingConfig: ...
    @property
    def cascade(self) -> CascadeConfig: ...
    @property
    def limits(self) -> Mapping[str, Any]: ...
    @property
    def curation(self) -> CurationConfig: ...
    @property
    def pairwise(self) -> PairwiseConfig: ...
    @property
    def rubric(self) -> RubricConfig: ...

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Panel: ...

# Vendors that need no preset entry: the built-in simulator and any OpenAI-compatible URL.
_ALWAYS_KNOWN_VENDORS = ("simulated", "custom")


def check_panel(panel: Panel) -> None:
    """Check that a panel's parts fit together.

    Args:
        panel: the panel to check (its fields are already valid one by one).

    Raises:
        ConfigError: the first problem found, in a sentence naming the field and the fix.
    """
    _check_critics(panel)
    _check_chains(panel)
    check_plugin_critics(panel)
    _check_strategy(panel)
    # Policies before labels: "count_as needs a label scale" says more than "not a label".
    _check_policies(panel)
    _check_labels(panel)
    _check_cascade(panel)
    _check_limits(panel)
    _check_curation(panel)
    _check_pairwise(panel)
    _check_rubric(panel)
    _check_batch_mode(panel)


def check_vote(panel: Panel) -> None:
    """The checks of `panel.voting` alone: its strategy, policies and labels against the scale.
    A jury's voting goes through the same checks (`judging.panel.jury_checks`).

    Raises:
        ConfigError: as `check_panel`, with paths under `voting.`.
    """
    _check_strategy(panel)
    _check_policies(panel)
    _check_labels(panel)


def _labels_text(labels: list[str]) -> str:
    return ", ".join(labels) if labels else "(a score scale has no labels)"


def _check_critics(panel: Panel) -> None:
    seen: dict[str, int] = {}
    for index, critic in enumerate(panel.critics):
        if critic.logprobs:
            _check_logprobs(panel, index)
        if critic.name in seen:
            raise ConfigError(
                f"critics[{index}].name: {critic.name!r} is already the name of critics"
                f"[{seen[critic.name]}]; every critic needs its own name"
            )
        seen[critic.name] = index
    if all(critic.weight == 0 for critic in panel.critics):
        raise ConfigError(
            "critics: every critic has weight 0, so no vote would count; "
            "give at least one critic a weight above 0"
        )
    presets = PRESETS
    for index, critic in enumerate(panel.critics):
        if critic.vendor == "custom" and not critic.base_url:
            raise ConfigError(
                f"critics[{index}].base_url: vendor 'custom' needs the base URL of an "
                "OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1"
            )
        known = (
            critic.vendor in _ALWAYS_KNOWN_VENDORS or critic.vendor in presets
        )
        if not known:
            choices = sorted(set(presets) | set(_ALWAYS_KNOWN_VENDORS))
            raise ConfigError(
                f"critics[{index}].vendor: unknown vendor {critic.vendor!r}; choose one of "
                f"{', '.join(choices)} (or 'custom' with a base_url)"
            )


def _check_chains(panel: Panel) -> None:
    """Repeats and compound critics (`judging.engine.chains`)."""
    names = [critic.name for critic in panel.critics]
    for index, critic in enumerate(panel.critics):
        # (An imported critic's repeats are its judge's own, e.g. Inspect epochs.)
        if critic.samples > 1 and critic.temperature == 0 and critic.kind != "imported":
            raise ConfigError(
                f"critics[{index}].samples: {critic.samples} samples at temperature 0 ask the "
                "same question the same way, so they measure nothing; raise the temperature "
                "(0.7 is common) or set samples to 1"
            )
        if critic.reference_field is not None and critic.reference_field not in critic.placeholders:
            raise ConfigError(
                f"critics[{index}].reference_field: the prompt never shows "
                f"{{{critic.reference_field}}}; add it to the prompt template, or clear the field"
            )
        if critic.kind != "debate":
            if critic.debaters:
                raise ConfigError(
                    f"critics[{index}].debaters: only a debate critic has debaters; set kind "
                    "to debate or clear the list"
                )
            continue
        debaters = critic.debaters
        if len(debaters) != 2 or len(set(debaters)) != 2:
            raise ConfigError(
                f"critics[{index}].debaters: a debate needs the names of two different critics "
                f"of the panel to argue (choose from {', '.join(names)})"
            )
        for name in debaters:
            if name == critic.name:
                raise ConfigError(f"critics[{index}].debaters: {name!r} is the judge of this "
                                  "debate; name two other critics to argue")
            if name not in names:
                raise ConfigError(
                    f"critics[{index}].debaters: no critic is named {name!r}; choose from "
                    f"{', '.join(n for n in names if n != critic.name)}"
                )
            if panel.critics[names.index(name)].kind == "debate":
                raise ConfigError(f"critics[{index}].debaters: {name!r} is itself a debate; "
                                  "a debater must be a critic that argues in one call")


def _vote_scale(panel: Panel) -> Scale:
    """What the panel votes on: its scale, or a rubric's marks (one vote per criterion)."""
    return MARK_SCALE if panel.rubric.active else panel.scale


def _check_strategy(panel: Panel) -> None:
    vote_scale = _vote_scale(panel)
    voting = panel.voting
    name = voting.strategy
    if name not in STRATEGIES and name not in DATASET_STRATEGIES:
        raise ConfigError(unknown_strategy_message(name))
    kind = STRATEGY_KINDS.get(name, "both")
    if kind == "label" and vote_scale.is_numeric:
        raise ConfigError(
            f"voting.strategy: {name!r} votes on labels but the scale is a score scale; "
            "use mean, weighted-mean, median, max, min, mean-variance or spread"
        )
    if kind == "score" and not vote_scale.is_numeric:
        raise ConfigError(
            f"voting.strategy: {name!r} aggregates scores but the scale is {vote_scale.kind}; "
            "use plurality, majority, unanimous, weighted, any, all-of or first-disagreement"
        )
    if (name in ("median", "max", "min") and not vote_scale.is_numeric
            and vote_scale.level != "ordinal"):
        raise ConfigError(
            f"voting.strategy: {name!r} needs an order among the labels, but "
            f"{vote_scale.kind} labels have none; use an ordinal or likert scale, or plurality"
        )
    if name == "mean-expected-score" and label_values(vote_scale) is None:
        raise ConfigError(
            f"voting.strategy: 'mean-expected-score' needs labels with an order (likert, "
            f"ordinal or yes/no), but {vote_scale.kind} labels have none; use "
            "pooled-probability"
        )
    if name in PROBABILITY_STRATEGIES and not any(c.logprobs for c in panel.critics):
        raise ConfigError(
            f"voting.strategy: {name!r} pools label probabilities, but no critic asks for them; "
            "set logprobs: true on the critics whose vendor returns token logprobs"
        )
    if name == "any" and voting.target_label is None:
        raise ConfigError("voting.target_label: the 'any' strategy needs the label to look for")
    if name == "all-of" and voting.target_label is None:
        raise ConfigError("voting.target_label: the 'all-of' strategy needs the label every "
                          "member must give to accept (e.g. target_label: KEEP)")
    if name == "spread" and voting.max_spread is None:
        raise ConfigError("voting.max_spread: the 'spread' strategy needs a maximum spread")


def _check_labels(panel: Panel) -> None:
    labels = _vote_scale(panel).labels
    voting = panel.voting
    named: list[tuple[str, str | None]] = [
        (f"voting.priority[{i}]", label) for i, label in enumerate(voting.priority)
    ]
    named += [
        ("voting.fallback", voting.fallback),
        ("voting.error_label", voting.error_label),
        ("voting.target_label", voting.target_label),
        ("cascade.reject_label", panel.cascade.reject_label),
    ]
    for path, label in named:
        if label is not None and label not in labels:
            raise ConfigError(
                f"{path}: {label!r} is not a label of the scale; labels: {_labels_text(labels)}"
            )
    if len(set(voting.priority)) != len(voting.priority):
        raise ConfigError("voting.priority: a label is listed twice")


def _check_policies(panel: Panel) -> None:
    voting = panel.voting
    scale = _vote_scale(panel)
    if voting.error_policy == "count_as":
        if scale.is_numeric:
            raise ConfigError(
                "voting.error_policy: 'count_as' needs a label scale; on a score scale a failure "
                "cannot be counted as a number (it would bias the aggregate). Use 'ignore' or "
                "'abstain'."
            )
        if voting.error_label is None:
            raise ConfigError(
                "voting.error_label: error_policy 'count_as' needs the label a failure counts as"
            )
    if voting.thresholds:
        # A rubric votes on marks, but its thresholds band the item's score (its scale).
        scale = panel.scale if panel.rubric.active else scale
        if not scale.is_numeric:
            raise ConfigError(
                f"voting.thresholds: thresholds map a score to a recommendation, but the scale "
                f"is {scale.kind}; remove them or use a score scale"
            )
        assert scale.min is not None and scale.max is not None
        for name, lower in voting.thresholds.items():
            if not scale.min <= lower <= scale.max:
                raise ConfigError(
                    f"voting.thresholds[{name!r}]: {lower:g} is outside the scale "
                    f"{scale.min:g}..{scale.max:g}"
                )
    if voting.max_spread is not None and not scale.is_numeric:
        raise ConfigError(
            f"voting.max_spread: a spread applies to scores, but the scale is {scale.kind}"
        )


def _check_voting_of(panel: Panel, voting: VotingConfig) -> None:
    """The panel checks of one voting config (a cascade tier's own), as if it were the
    panel's; messages start with "voting."."""
    shadow = panel.model_copy(update={"voting": voting})
    _check_strategy(shadow)
    _check_policies(shadow)
    _check_labels(shadow)


def _check_cascade(panel: Panel) -> None:
    check_tiers(panel, _check_voting_of)
    tiers = sorted({critic.tier for critic in panel.critics})
    for index, tier in enumerate(panel.cascade.guard_tiers):
        if tier not in tiers:
            raise ConfigError(
                f"cascade.guard_tiers[{index}]: no critic is in tier {tier}; tiers in use: "
                f"{', '.join(str(t) for t in tiers)}"
            )


def _check_limits(panel: Panel) -> None:
    # Field types and signs are checked by the VendorLimits model; here: does the key name a
    # vendor, and does the entry say anything.
    presets = PRESETS
    choices = sorted(set(presets) | set(_ALWAYS_KNOWN_VENDORS))
    used = sorted({critic.vendor for critic in panel.critics})
    for vendor, limits in panel.limits.items():
        if vendor not in choices:
            close = difflib.get_close_matches(vendor, choices, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(
                f"limits.{vendor}: unknown vendor {vendor!r}; {hint}limits are keyed by vendor "
                f"preset name: {', '.join(choices)} (this panel's critics use "
                f"{', '.join(used)})"
            )
        if limits.max_concurrency is None and limits.requests_per_minute is None:
            raise ConfigError(
                f"limits.{vendor}: sets no limit; give max_concurrency (requests in flight), "
                "requests_per_minute, or both, or remove the entry"
            )


def _check_curation(panel: Panel) -> None:
    curation = panel.curation
    named = curation.labels_by_action()
    if named and not curation.active:
        raise ConfigError(
            "curation.class_field: name the item field that holds the candidate class (e.g. "
            "candidate_class), or clear the curation labels"
        )
    if curation.active and not panel.scale.labels:
        raise ConfigError("curation: taxonomy curation needs a label scale (KEEP, REJECT, ...), "
                          "not a score")
    for action, label in named.items():
        if label not in panel.scale.labels:
            setting = "reject_label" if action == "remove" else f"{action}_label"
            raise ConfigError(
                f"curation.{setting}: {label!r} is not a label of the scale "
                f"({_labels_text(panel.scale.labels)})"
            )
    if len(set(named.values())) < len(named):
        raise ConfigError("curation: each action needs its own label (one label cannot both "
                          "keep and split a class, say)")


def _check_logprobs(panel: Panel, index: int) -> None:
    critic = panel.critics[index]
    if critic.vendor in PRESETS and not PRESETS[critic.vendor].logprobs:
        raise ConfigError(
            f"critics[{index}].logprobs: {PRESETS[critic.vendor].title} returns no token "
            "logprobs; turn logprobs off for this critic or use a vendor that has them "
            "(OpenAI, DeepSeek, OpenRouter, a local OpenAI-compatible server)"
        )
    if critic.vendor in PRESETS and not rules_for(critic).logprobs:
        raise ConfigError(
            f"critics[{index}].logprobs: {critic.model} errors when asked for token logprobs "
            "(the vendor documents it); turn logprobs off for this critic or pick a model "
            "that has them"
        )
    if panel.scale.is_numeric:
        raise ConfigError(
            f"critics[{index}].logprobs: logprob scores need labels (a likert scale for "
            "scores 1..5, say), not a continuous score scale"
        )


def _check_pairwise(panel: Panel) -> None:
    pairwise = panel.pairwise
    if not pairwise.active:
        return
    if pairwise.second_field is None or pairwise.second_field == pairwise.first_field:
        raise ConfigError("pairwise.second_field: a comparison needs the field of response B, "
                          "other than response A's")
    if (pairwise.first_system is None) != (pairwise.second_system is None):
        raise ConfigError("pairwise.first_system / second_system: name the system field of "
                          "both responses, or of neither")
    if panel.scale.is_numeric:
        raise ConfigError("pairwise: a comparison needs a label scale (A, B, TIE), not scores")
    wanted = [pairwise.a_label, pairwise.b_label] + (
        [pairwise.tie_label] if pairwise.tie_label is not None else [])
    missing = [label for label in wanted if label not in panel.scale.labels]
    if missing or len(set(wanted)) != len(wanted):
        raise ConfigError(
            f"pairwise: the scale needs the labels {', '.join(wanted)} (three different labels; "
            f"it has {_labels_text(panel.scale.labels)}); e.g. scale: {{kind: nominal, "
            "labels: [A, B, TIE]}")
    if pairwise.inconsistent == "tie" and pairwise.tie_label is None:
        raise ConfigError("pairwise.inconsistent: 'tie' needs a tie_label; use 'flag' for a "
                          "forced choice")
    for index, critic in enumerate(panel.critics):
        # No prompt: a python function gets every field; an imported critic replays verdicts.
        if critic.kind in PLUGIN_KINDS:
            continue
        used = critic.placeholders
        unseen = [(setting, name) for setting, name in (
            ("first_field", pairwise.first_field), ("second_field", pairwise.second_field))
            if name not in used]
        if unseen:
            # Either side may be wrong: the prompt, or a pairwise field naming no column.
            said = " and ".join(f"pairwise.{setting} is {name!r}" for setting, name in unseen)
            shown = ", ".join(f"{{{name}}}" for name in used) or "no field"
            which = "which the prompt does not show" if len(unseen) == 1 else (
                "neither of which the prompt shows")
            raise ConfigError(
                f"critics[{index}].prompt_template: a pairwise critic must show both responses: "
                f"{said}, {which} (it shows {shown}). Set pairwise.first_field and "
                "second_field to the columns holding responses A and B, or show those fields "
                "in the prompt.")


def _check_rubric(panel: Panel) -> None:
    rubric = panel.rubric
    if not rubric.active:
        return
    ids = rubric.ids
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ConfigError(f"rubric.criteria: the id {twice[0]!r} is used twice; every criterion "
                          "needs its own id")
    if sum(c.weight for c in rubric.criteria if c.weight > 0) <= 0:
        raise ConfigError("rubric.criteria: no criterion has a positive weight, so no item could "
                          "score; give at least one a weight above 0 (negative ones are penalties)")
    scale = panel.scale
    if scale.kind != "score" or scale.min != 0 or scale.max != 1:
        raise ConfigError("scale: a rubric panel's scale is the item's score; use "
                          "{kind: score, min: 0, max: 1}")
    if panel.voting.strategy in DATASET_STRATEGIES:
        raise ConfigError(f"voting.strategy: a rubric panel votes per item and criterion; "
                          f"{panel.voting.strategy!r} needs the whole dataset")
    if tier_count(panel.critics, panel.cascade.tiers) > 1:
        raise ConfigError("critics: a rubric panel has no cascade yet; put every critic in one "
                          "tier")
    if panel.pairwise.active:
        raise ConfigError("rubric: a panel grades against a rubric or compares pairs, not both")
    for index, critic in enumerate(panel.critics):
        if critic.kind != "single" or critic.samples > 1 or critic.logprobs:
            raise ConfigError(
                f"critics[{index}]: a rubric critic is a single call (kind single, samples 1, "
                "no logprobs); for long rubrics set rubric.per_criterion for a call per criterion"
            )


def _check_batch_mode(panel: Panel) -> None:
    """Critics sent through a vendor's batch API (`judging.engine.batches`): one request per item,
    submitted for every item at once."""
    tiers = tier_count(panel.critics, panel.cascade.tiers)
    for index, critic in enumerate(panel.critics):
        if critic.mode != "batch":
            if critic.batch_api is not None:
                raise ConfigError(
                    f"critics[{index}].batch_api: only a critic with mode: batch uses a batch "
                    "API; set mode: batch or remove batch_api"
                )
            continue
        preset = PRESETS.get(critic.vendor)
        own_api = preset.batch_api if preset is not None else None
        if own_api is None:
            title = preset.title if preset is not None else critic.vendor
            raise ConfigError(
                f"critics[{index}].mode: {title} has no batch API that Jurybox drives (OpenAI, "
                "Anthropic, custom OpenAI-compatible servers and the simulator do); use "
                "mode: live for this critic"
            )
        if (critic.batch_api is not None and critic.batch_api != own_api
                and critic.vendor not in _ALWAYS_KNOWN_VENDORS):
            raise ConfigError(
                f"critics[{index}].batch_api: {preset.title if preset else critic.vendor} "
                f"speaks the {own_api} batch API, not {critic.batch_api}; remove batch_api"
            )
        if critic.kind != "single" or critic.samples > 1:
            raise ConfigError(
                f"critics[{index}].mode: a batch critic makes one request per item; compound "
                "kinds and repeats need the answer of one call before the next, so use "
                "mode: live for them"
            )
        if panel.pairwise.active or panel.rubric.active:
            raise ConfigError(
                f"critics[{index}].mode: batch mode takes critics of a label or score scale; "
                "pairwise and rubric panels run live for now (mode: live)"
            )
        if tiers > 1:
            raise ConfigError(
                f"critics[{index}].mode: a batch critic is asked about every item at once, but "
                "a cascade asks later tiers only when they are needed; put every critic in one "
                "tier or use mode: live"
            )
