"""A panel: a scale, critics, how they vote, and how items are judged with it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import ConfigDict, Field, model_validator

from judging.calls import CallCache, CallRunner, VendorLimiter
from judging.cascade import CascadeConfig
from judging.critics import Critic
from judging.curation import CurationConfig
from judging.known_fields import StrictModel
from judging.pairwise import PairwiseConfig
from judging.panel_checks import check_panel
from judging.rubric import RubricConfig, rubric_vote
from judging.runner import RunProgress, run_panel
from judging.scales import Scale
from judging.vendors import get_preset
from judging.verdicts import Item, PanelVerdict, Verdict, VoteOutcome
from judging.voting import VotingConfig, vote

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
    """A scale, critics and a voting configuration; judges items.

    Building a Panel checks that its parts fit together (`judging.panel_checks`): a panel that
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
    # and the panel votes per criterion (`judging.rubric`); the scale is then the score, 0..1.
    rubric: RubricConfig = Field(default_factory=RubricConfig)
    # Stop a critic for the rest of a run after the same error on this many items in a row (a
    # refused parameter, an empty account: every later call would fail alike); 0 never stops.
    # Rate limits never count: they are waited out (`judging.calls.gate`).
    stop_after_repeated_errors: int = Field(default=3, ge=0, le=1000)

    @model_validator(mode="after")
    def _check_parts_fit(self) -> Panel:
        check_panel(self)
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

    def limiter(self) -> VendorLimiter:
        """A fresh `VendorLimiter` holding this panel's limits (and the presets' defaults).

        `run_panel` makes one per run; make your own only to drive `CallRunner.call` yourself.
        """
        return VendorLimiter(
            {v: lim.max_concurrency for v, lim in self.limits.items() if lim.max_concurrency},
            {v: lim.requests_per_minute for v, lim in self.limits.items()
             if lim.requests_per_minute},
        )

    def vote(self, verdicts: Sequence[Verdict], config: VotingConfig | None = None
             ) -> VoteOutcome:
        """The panel's decision on one item from its critics' verdicts: the vote of `config`
        (default: the panel's), per criterion for a rubric panel."""
        weights = {critic.name: critic.weight for critic in self.critics}
        config = config or self.voting
        if self.rubric.active:
            return rubric_vote(verdicts, weights, config, self.rubric)
        return vote(verdicts, weights, config, self.scale)

    def check_fields(self, fields: list[str]) -> None:
        """Check every critic's prompt placeholders against the dataset's fields.

        Raises:
            PlaceholderError: a critic uses a placeholder that is not a field; the message
                names the critic, the placeholder and the fields that exist.
        """
        for critic in self.critics:
            critic.check_fields(fields)

    def judge(
        self, item: Item | dict[str, Any], *, runner: CallRunner | None = None
    ) -> PanelVerdict:
        """Judge one item with every critic (tier by tier for cascades), in parallel.

        Args:
            item: an `Item`, or a dict of fields (optional "id" and "gold" keys).
            runner: the `CallRunner` to use (default: a process-wide one reading keys from the
                environment, so a loop of judge() calls reuses one connection pool; the
                panel's `limits` then hold across the loop, not just within one call).

        Returns:
            The panel verdict. A dataset-level strategy (e.g. "dawid-skene") falls back to
            plurality for a single item, with a note on the outcome.

        Raises:
            PlaceholderError: the item lacks a field a prompt uses.
        """
        result = run_panel(
            self,
            [item],
            concurrency=max(len(self.critics), 1),
            runner=runner,
            single_item=True,
        )
        return result.verdicts[0]

    def judge_many(
        self,
        items: Iterable[Item | dict[str, Any]],
        *,
        concurrency: int = 64,
        on_progress: Callable[[RunProgress], None] | None = None,
        on_verdict: Callable[[Verdict, Item], None] | None = None,
        cancel: threading.Event | None = None,
        cache: CallCache | None = None,
        runner: CallRunner | None = None,
        key_lookup: Callable[[str], str | None] | None = None,
    ) -> list[PanelVerdict]:
        """Judge many items concurrently; nothing raises out of a call, nothing is dropped.

        Args:
            items: `Item`s or dicts of fields (optional "id" and "gold" keys).
            concurrency: calls in flight at once (worker threads over item x critic calls). The
                panel's `limits` cap each vendor further (requests in flight, requests per
                minute), for this run.
            on_progress: called with a `RunProgress` copy at most every 0.1 s from a worker
                thread, and once at the end from the calling thread.
            on_verdict: `on_verdict(verdict, item)` for every new verdict (cached and cancelled
                ones included), called from worker threads, possibly concurrently: it must be
                thread-safe (e.g. append to a queue or a list behind a lock and batch-write
                from one thread). An exception in it stops the run and is re-raised here.
            cancel: once set, no new request is sent (first tries and retries alike); calls in
                flight finish and are kept; the rest get CANCELLED verdicts.
            cache: a `CallCache`; validated successes are stored and hits send no request.
            runner: a `CallRunner` to use (then give cache/key_lookup to it instead). Its own
                `vendor_limits` / `requests_per_minute` hold as well as the panel's `limits`:
                the stricter wins.
            key_lookup: variable name -> key (default `os.environ.get`).

        Returns:
            One `PanelVerdict` per item, in input order. Dataset-level strategies (e.g.
            "dawid-skene") are applied once every item has been judged.

        Raises:
            ConfigError: bad arguments (e.g. concurrency < 1).
            PlaceholderError: the first item lacks a field a prompt uses.
        """
        return run_panel(
            self,
            items,
            concurrency=concurrency,
            on_progress=on_progress,
            on_verdict=on_verdict,
            cancel=cancel,
            cache=cache,
            runner=runner,
            key_lookup=key_lookup,
        ).verdicts
