"""Checks of a panel's `cascade.tiers` when the panel is built (`judging.panel.panel_checks` calls
`check_tiers`): every critic in exactly one tier, the last tier final and only it, each policy's
labels on the scale, each tier's voting config valid. Each problem is one `ConfigError` that
names the field and the fix, as every panel check does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Literal, Protocol, TypeVar

from judging.errors import ConfigError
from judging.panel.cascade import CascadeConfig
from judging.panel.cascade_tiers import CascadeTier, default_labels
from judging.panel.critics import Critic
from judging.scales import Scale
from judging.voting.strategies import DATASET_STRATEGIES, VotingConfig


class Panel(Protocol):
    """What these checks read of a panel (`panel_model.Panel` is one): a protocol, not an
    import, because the Panel model runs these checks from its own validator."""

    @property
    def cascade(self) -> CascadeConfig: ...
    @property
    def critics(self) -> list[Critic]: ...
    @property
    def scale(self) -> Scale: ...
    @property
    def voting(self) -> VotingConfig: ...

# Checks one voting config against the panel (its strategy, policies and labels); raises a
# ConfigError whose message starts with "voting.".
PanelT = TypeVar("PanelT", bound=Panel)


def check_tiers(panel: PanelT, check_voting: Callable[[PanelT, VotingConfig], None]) -> None:
    """Check `panel.cascade.tiers` (nothing to check when it is empty).

    Raises:
        ConfigError: the first problem, e.g. "cascade.tiers[2].policy: the last tier must be
            final ...".
    """
    cascade = panel.cascade
    tiers = cascade.tiers
    if not tiers:
        return
    if cascade.settle != "unanimous" or cascade.min_agreement != 1.0:
        raise ConfigError("cascade.settle: with cascade.tiers each tier's policy says when it "
                          "stops an item; remove settle and min_agreement")
    if cascade.guard_tiers:
        raise ConfigError("cascade.guard_tiers: with cascade.tiers a guard is a tier with "
                          "policy: reject_on_any_fail; remove guard_tiers")
    _check_members(panel)
    _check_policies(tiers)
    labels = panel.scale.labels
    for index, tier in enumerate(tiers):
        _check_labels(panel, index, tier, labels)
        _check_tier_voting(panel, index, tier, check_voting)
    if panel.voting.strategy in DATASET_STRATEGIES:
        raise ConfigError(
            f"voting.strategy: {panel.voting.strategy!r} needs the whole dataset, but each tier "
            "of cascade.tiers decides item by item; use a per-item strategy such as plurality")


def _check_members(panel: Panel) -> None:
    names = [critic.name for critic in panel.critics]
    seen: dict[str, int] = {}
    tier_names: dict[str, int] = {}
    for index, tier in enumerate(panel.cascade.tiers):
        where = f"cascade.tiers[{index}]"
        if tier.name:
            if tier.name in tier_names:
                raise ConfigError(f"{where}.name: {tier.name!r} is already the name of "
                                  f"cascade.tiers[{tier_names[tier.name]}]; give each tier "
                                  "its own name")
            tier_names[tier.name] = index
        for name in tier.critics:
            if name not in names:
                close = difflib.get_close_matches(name, names, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"critics: {', '.join(names)}"
                raise ConfigError(f"{where}.critics: {name!r} is not a critic of the panel; "
                                  f"{hint}")
            if name in seen:
                raise ConfigError(
                    f"{where}.critics: {name!r} is already in cascade.tiers[{seen[name]}]; a "
                    "critic sits in one tier (duplicate it under another name to ask it twice)")
            seen[name] = index
    for index, critic in enumerate(panel.critics):
        if critic.tier != 0:
            raise ConfigError(
                f"critics[{index}].tier: with cascade.tiers the tiers name their critics; "
                f"remove tier: {critic.tier} from {critic.name!r}")
        if critic.name not in seen:
            raise ConfigError(
                f"critics[{index}]: {critic.name!r} is in no tier of cascade.tiers; add it to "
                "a tier's critics, or remove the critic")


def _check_policies(tiers: list[CascadeTier]) -> None:
    last = len(tiers) - 1
    for index, tier in enumerate(tiers):
        where = f"cascade.tiers[{index}].policy"
        if index == last and tier.policy != "final":
            raise ConfigError(
                f"{where}: the last tier must be final (it decides every item the tiers before "
                f"it did not stop), not {tier.policy}; add a final tier after it or make it "
                "final")
        if index < last and tier.policy == "final":
            raise ConfigError(
                f"{where}: only the last tier can be final: a final tier decides every item, so "
                "the tiers after it would never be called; use reject_on_any_fail or "
                "accept_on_all_pass, or move it last")


def _check_labels(panel: Panel, index: int, tier: CascadeTier, labels: list[str]) -> None:
    where = f"cascade.tiers[{index}]"
    shown = ", ".join(labels) if labels else "(a score scale has no labels)"
    uses = {"reject_on_any_fail": "fail_labels", "accept_on_all_pass": "pass_labels"}
    for field, values in (("fail_labels", tier.fail_labels), ("pass_labels", tier.pass_labels)):
        if values and uses.get(tier.policy) != field:
            user = next(p for p, f in uses.items() if f == field)
            raise ConfigError(f"{where}.{field}: only a tier with policy {user} uses them; "
                              f"this tier's policy is {tier.policy}, so remove them")
        for label in values:
            if label not in labels:
                raise ConfigError(f"{where}.{field}: {label!r} is not a label of the scale; "
                                  f"labels: {shown}")
        if len(set(values)) != len(values):
            raise ConfigError(f"{where}.{field}: a label is listed twice")
    if tier.policy == "final":
        if tier.on_failure != "fail":
            raise ConfigError(
                f"{where}.on_failure: a final tier decides by its vote, whose error_policy says "
                "what a failed critic counts as; remove on_failure")
        return
    field = uses[tier.policy]
    kind: Literal["pass", "fail"] = "fail" if tier.policy == "reject_on_any_fail" else "pass"
    if panel.scale.is_numeric:
        raise ConfigError(
            f"{where}.policy: {tier.policy} looks for {kind} labels, but the scale is a score "
            "scale; use policy: final for every tier of a score panel, or a label scale")
    if not (getattr(tier, field) or default_labels(labels, kind)):
        raise ConfigError(
            f"{where}.{field}: policy {tier.policy} needs the labels that count as {kind}, and "
            f"none of the scale's labels ({shown}) reads as {kind}; name them, e.g. "
            f"{field}: [{labels[0]}]")


def _check_tier_voting(panel: PanelT, index: int, tier: CascadeTier,
                       check_voting: Callable[[PanelT, VotingConfig], None]) -> None:
    if tier.voting is None:
        return
    where = f"cascade.tiers[{index}]"
    if tier.voting.strategy in DATASET_STRATEGIES:
        raise ConfigError(
            f"{where}.voting.strategy: {tier.voting.strategy!r} needs the whole dataset, but a "
            "tier decides item by item; use a per-item strategy such as plurality")
    try:
        check_voting(panel, tier.voting)
    except ConfigError as error:
        message = str(error)
        raise ConfigError(f"{where}.{message}" if message.startswith("voting.")
                          else f"{where}.voting: {message}") from None
