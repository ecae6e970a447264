"""Checks of a panel's juries (`Panel.juries`, `judging.voting.juries`): what a sentence must refuse.

Each problem is a `ConfigError` starting with the field path and saying what to change, as in
`judging.panel.panel_checks`, whose voting checks every jury's `voting` goes through too (its
messages then start `juries[1].voting.`). The Panel model calls `check_juries` after
`check_panel`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Protocol

from judging.errors import ConfigError
from judging.panel.panel_checks import Panel as PanelParts
from judging.panel.panel_checks import check_vote
from judging.voting.juries import JuryConfig
from judging.voting.strategies import DATASET_STRATEGIES


class Panel(PanelParts, Protocol):
    """What these checks read of a panel (`panel_model.Panel` is one): a protocol, not an
    import, because the Panel model runs these checks from its own validator."""

    @property
    def juries(self) -> list[JuryConfig]: ...

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Panel: ...


def check_juries(panel: Panel) -> None:
    """Check that a panel's juries fit its critics and scale (nothing to check without juries).

    Raises:
        ConfigError: the first problem found, in a sentence naming the field and the fix.
    """
    if not panel.juries:
        return
    _check_combinations(panel)
    critics = [critic.name for critic in panel.critics]
    named: dict[str, int] = {}
    seated: dict[str, str] = {}  # critic -> its jury
    for index, jury in enumerate(panel.juries):
        where = f"juries[{index}]"
        if jury.name in named:
            raise ConfigError(
                f"{where}.name: {jury.name!r} is already the name of juries[{named[jury.name]}]; "
                "every jury needs its own name")
        named[jury.name] = index
        if not jury.critics:
            raise ConfigError(
                f"{where}.critics: jury {jury.name!r} has no critics, so it could never decide; "
                "list the names of the panel's critics that sit in it")
        for position, name in enumerate(jury.critics):
            if name not in critics:
                close = difflib.get_close_matches(name, critics, n=1)
                hint = f"did you mean {close[0]!r}?" if close else \
                    f"the panel's critics: {', '.join(critics)}"
                raise ConfigError(
                    f"{where}.critics[{position}]: no critic of the panel is named {name!r}; "
                    f"{hint}")
            if name in seated:
                raise ConfigError(
                    f"{where}.critics[{position}]: critic {name!r} already sits in jury "
                    f"{seated[name]!r}; critic names must be unique across juries (a critic "
                    "sits in one jury: copy it under another name to hear it twice)")
            seated[name] = jury.name
        _check_jury_voting(panel, index)
    for index, name in enumerate(critics):
        if name not in seated:
            raise ConfigError(
                f"critics[{index}]: critic {name!r} sits in no jury, so its verdict would count "
                "nowhere; add it to a jury's critics or remove it")
    if all(jury.weight == 0 for jury in panel.juries):
        raise ConfigError("juries: every jury has weight 0, so no jury's decision would count; "
                          "give at least one jury a weight above 0")


def _check_combinations(panel: Panel) -> None:
    """What juries are not combined with (yet): a dataset-level top vote, tiers, a rubric."""
    if panel.voting.strategy in DATASET_STRATEGIES:
        raise ConfigError(
            f"voting.strategy: {panel.voting.strategy!r} needs the whole dataset, but the top "
            "vote of a panel of juries decides item by item over the juries' decisions; use "
            "all-of, majority, weighted, plurality or another per-item strategy")
    if len({critic.tier for critic in panel.critics}) > 1:
        raise ConfigError(
            "juries: a panel of juries asks every critic about every item, but its critics sit "
            "in more than one tier; put every critic in the same tier (or drop the juries to "
            "cascade by tier)")
    if panel.rubric.active:
        raise ConfigError(
            "juries: a rubric panel votes per criterion and cannot also vote by juries; remove "
            "the rubric's criteria or the juries")


def _check_jury_voting(panel: Panel, index: int) -> None:
    """A jury's voting through the panel's own voting checks, with the jury's path."""
    jury = panel.juries[index]
    where = f"juries[{index}]"
    if jury.voting.strategy in DATASET_STRATEGIES:
        raise ConfigError(
            f"{where}.voting.strategy: {jury.voting.strategy!r} needs the whole dataset, but a "
            "jury decides item by item; use a per-item strategy such as plurality or weighted")
    try:
        # A copy is not validated again (pydantic's model_copy), so this cannot recurse.
        check_vote(panel.model_copy(update={"voting": jury.voting}))
    except ConfigError as error:
        raise ConfigError(f"{where}.{error}") from None
