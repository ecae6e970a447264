"""A panel: a scale, critics, and how they vote. Judging items is added by the engine."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from judging.critics import Critic
from judging.scales import Scale
from judging.voting import VotingConfig

PANEL_SCHEMA_VERSION = 1


class CascadeConfig(BaseModel):
    """Tiered panels: critics grouped by `Critic.tier`, cheapest (lowest) first.

    A tier settles an item when its vote meets `settle` (and `min_agreement`); a failure in a
    `guard_tiers` tier rejects the item at once with `reject_label`; otherwise the item goes on
    to the next tier. The last tier always decides.
    """

    settle: Literal["unanimous", "agreement"] = "unanimous"
    min_agreement: float = Field(default=1.0, gt=0.0, le=1.0)
    guard_tiers: list[int] = Field(default_factory=list)
    reject_label: str | None = None


class Panel(BaseModel):
    schema_version: int = PANEL_SCHEMA_VERSION
    name: str = "panel"
    description: str = ""
    scale: Scale
    critics: list[Critic] = Field(min_length=1)
    voting: VotingConfig = Field(default_factory=VotingConfig)
    cascade: CascadeConfig = Field(default_factory=CascadeConfig)
