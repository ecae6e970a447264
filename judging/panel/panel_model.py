"""A panel: a scale, critics, how they vote, and how items are judged with it."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ConfigDict, Field, model_validator

from judging.errors import ConfigError
from judging.known_fields import StrictModel
from judging.panel.cascade import CascadeConfig
from judging.panel.context_limits import ContextGuard
from judging.panel.critics import Critic
from judging.panel.curation import CurationConfig
from judging.panel.jury_checks import check_juries
from judging.panel.pairwise import PairwiseConfig
from judging.panel.panel_checks import check_panel
from judging.panel.rubric import RubricConfig, rubric_vote
from judging.panel.vendors import get_preset
from judging.scales import Scale
from judging.verdicts import Verdict, VoteOutcome
from judging.voting.juries import JuryConfig, vote_juries
from judging.voting.strategies import VotingConfig, vote

__all__ = ["PANEL_SCHEMA_VERSION", "CascadeConfig", "Panel", "VendorLimits"]

PANEL_SCHEMA_VERSION = 1


class VendorLimits(StrictModel):
    """How hard a panel run may press one vendor (a `Panel.limits` entry, keyed by preset name).

    Both limits hold for each run of the panel (every critic of that vendor together, retries
    included); the run's own `concurrency` still caps the total. Vendor rate limits depend on
    your account, so only local servers have a default (ollama: 4 in flight).

    Attributes:
        max_concurrency: requests in flight to the vendor at once (None: the preset's default,
            `VendorPreset.max_concurrency`, else only the run's concurrency).
        requests_per_minute: requests sent per minute, spaced evenly 60/rpm seconds apart
            (None: not paced). Below your account's limit, it avoids 429s instead of
            retrying them.
    """

    # Strict: YAML `true` must not become a limit of 1, nor "8" pass as a number.
    model_config = ConfigDict(frozen=True)

    max_concurrency: int | None = Field(default=None, gt=0, strict=True)
    requests_per_minute: float | None = Field(
        default=None, gt=0, strict=True, allow_inf_nan=False
    )


class Panel(StrictModel):
    """A scale, critics and a voting configuration: data. `judging.judge(panel, item)` and
    `judging.judge_many(panel, items)` (`judging.engine.panel_runner`) judge items with it.

    Building a Panel checks that its parts fit together (`judging.panel.panel_checks`): a panel that
    exists is a panel that can run.
    """

    schema_version: int = PANEL_SCHEMA_VERSION
    name: str = "panel"
    description: str = ""
    scale: Scale
    critics: list[Critic] = Field(min_length=1)
    voting: VotingConfig = Field(default_factory=VotingConfig)
    cascade: CascadeConfig = Field(default_factory=CascadeConfig)
    # Keyed by vendor preset name ("openai", "ollama", ...): every critic of that vendor shares
    # the limits. Checked by panel_checks (known vendor, at least one limit set).
    limits: dict[str, VendorLimits] = Field(default_factory=dict)
    # Taxonomy curation (off by default): which item field names the class, which labels keep,
    # remove, split or merge it. Checked by panel_checks against the scale's labels.
    curation: CurationConfig = Field(default_factory=CurationConfig)
    # Pairwise judging (off by default): the item fields holding responses A and B, whether to
    # ask again with them swapped, and what an answer that changes with the order counts as.
    pairwise: PairwiseConfig = Field(default_factory=PairwiseConfig)
    # A rubric (off while it has no criteria): the item is graded against weighted criteria,
    # and the panel votes per criterion (`judging.panel.rubric`); the scale is then the score, 0..1.
    rubric: RubricConfig = Field(default_factory=RubricConfig)
    # Juries of juries (`judging.voting.juries`; empty: one flat panel): named groups of the critics,
    # each voting with its own `voting`; the panel's `voting` then votes over their decisions.
    # Checked by `judging.panel.jury_checks` (every critic in exactly one jury, none empty).
    juries: list[JuryConfig] = Field(
        default_factory=list,
        description="Named sub-panels: each jury names its critics and its own voting; the "
        "panel's voting then combines the juries' decisions (e.g. all-of: accept only if "
        "every jury accepts).")
    # Stop a critic for the rest of a run after the same error on this many items in a row (a
    # refused parameter, an empty account: every later call would fail alike); 0 never stops.
    # Rate limits never count: they are waited out (`judging.engine.calls.gate`).
    stop_after_repeated_errors: int = Field(default=3, ge=0, le=1000)
    # What a run does with a prompt over its critic's context window: send it whole, skip it,
    # or judge a window of its conversation (`judging.panel.context_limits`). Never silent.
    context_guard: ContextGuard = Field(default_factory=ContextGuard)

    @model_validator(mode="after")
    def _check_parts_fit(self) -> Panel:
        check_panel(self)
        check_juries(self)
        return self

    def limits_for(self, vendor: str) -> VendorLimits:
        """The limits a run of this panel applies to a vendor: the panel's own entry, with the
        preset's default `max_concurrency` where the entry leaves it unset.

        Raises:
            CriticCallError: `vendor` is not a known preset.
        """
        own = self.limits.get(vendor, VendorLimits())
        if own.max_concurrency is None and get_preset(vendor).max_concurrency is not None:
            return own.model_copy(update={"max_concurrency": get_preset(vendor).max_concurrency})
        return own

    def vote(self, verdicts: Sequence[Verdict], config: VotingConfig | None = None
             ) -> VoteOutcome:
        """The panel's decision on one item from its critics' verdicts: the vote of `config`
        (default: the panel's), per criterion for a rubric panel; for a panel of juries, each
        jury's own vote, then `config` over the juries' decisions (`judging.voting.juries`)."""
        weights = {critic.name: critic.weight for critic in self.critics}
        config = config or self.voting
        if self.juries:
            return vote_juries(verdicts, self.juries, weights, config, self.scale)
        if self.rubric.active:
            return rubric_vote(verdicts, weights, config, self.rubric)
        return vote(verdicts, weights, config, self.scale)

    def check_fields(self, fields: list[str]) -> None:
        """Check the pairwise settings' field names, then every critic's prompt placeholders,
        against the dataset's fields.

        Raises:
            ConfigError: a pairwise setting names a field the items do not have (the sentence
                names it and the fields that exist).
            PlaceholderError: a critic uses a placeholder that is not a field; the message
                names the critic, the placeholder and the fields that exist.
        """
        missing = self.pairwise.missing_field(fields)
        if missing is not None:
            raise ConfigError(missing)
        for critic in self.critics:
            critic.check_fields(fields)
