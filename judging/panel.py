"""A panel: a scale, critics, how they vote, and how items are judged with it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, model_validator

from judging.critics import Critic
from judging.scales import Scale
from judging.verdicts import Item, PanelVerdict, Verdict
from judging.voting import VotingConfig

if TYPE_CHECKING:
    from judging.calls import CallCache, CallRunner
    from judging.runner import RunProgress

PANEL_SCHEMA_VERSION = 1


class CascadeConfig(BaseModel):
    """Tiered panels: critics grouped by `Critic.tier`, cheapest (lowest) first.

    A tier settles an item when its own vote meets `settle` (and `min_agreement`); a failure in
    a `guard_tiers` tier rejects the item at once with `reject_label`; otherwise the item goes
    on to the next tier. The last tier always decides. `final_vote` says which verdicts the
    reported outcome counts: "all_tiers" (every critic called for the item, so an escalated item
    still shows the disagreement that escalated it) or "last_tier" (the deciding tier alone).
    See `judging.cascade`.
    """

    settle: Literal["unanimous", "agreement"] = "unanimous"
    min_agreement: float = Field(default=1.0, gt=0.0, le=1.0)
    guard_tiers: list[int] = Field(default_factory=list)
    reject_label: str | None = None
    final_vote: Literal["all_tiers", "last_tier"] = "all_tiers"


class Panel(BaseModel):
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

    @model_validator(mode="after")
    def _check_parts_fit(self) -> Panel:
        try:
            from judging.panel_checks import check_panel
        except ImportError:  # the checks module is optional while the engine is assembled
            return self
        check_panel(self)
        return self

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
                environment, so a loop of judge() calls reuses one connection pool).

        Returns:
            The panel verdict. A dataset-level strategy (e.g. "dawid-skene") falls back to
            plurality for a single item, with a note on the outcome.

        Raises:
            PlaceholderError: the item lacks a field a prompt uses.
        """
        from judging.runner import run_panel

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
            concurrency: calls in flight at once (worker threads over item x critic calls).
            on_progress: called with a `RunProgress` copy at most every 0.1 s from a worker
                thread, and once at the end from the calling thread.
            on_verdict: `on_verdict(verdict, item)` for every new verdict (cached and cancelled
                ones included), called from worker threads, possibly concurrently: it must be
                thread-safe (e.g. append to a queue or a list behind a lock and batch-write
                from one thread). An exception in it stops the run and is re-raised here.
            cancel: once set, no new request is sent (first tries and retries alike); calls in
                flight finish and are kept; the rest get CANCELLED verdicts.
            cache: a `CallCache`; validated successes are stored and hits send no request.
            runner: a `CallRunner` to use (then give cache/key_lookup to it instead).
            key_lookup: variable name -> key (default `os.environ.get`).

        Returns:
            One `PanelVerdict` per item, in input order. Dataset-level strategies (e.g.
            "dawid-skene") are applied once every item has been judged.

        Raises:
            ConfigError: bad arguments (e.g. concurrency < 1).
            PlaceholderError: the first item lacks a field a prompt uses.
        """
        from judging.runner import run_panel

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
