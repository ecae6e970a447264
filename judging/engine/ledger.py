"""The run ledger: what a run asked for, what it sent and what it paid — one set of totals.

Every figure a user sees about a run's calls, tokens and money (the CLI summary, `jurybox
runs`, the Run and Home pages, the export) comes from a `Ledger`: the runner keeps one live, the
job's writer adds each batch's share to the run's stored ledger, and readers format it with
`cost_text`. The rule for what counts lives in `Ledger.add` only.

- A cache hit is never paid: it counts in `cache_hits`, not in attempts, tokens or cost, even
  though the cached verdict still carries the tokens and cost of the call that first made it.
- A call that never reached the vendor (cancelled before sending, critic stopped) costs nothing.
- A cancelled call is "not sent", never "failed": it counts in `cancelled` only, not in `calls`
  or `failed` (it gave no outcome, and a resume sends it). So a run cancelled with 40 calls
  done and 246 never sent says "40 calls · 246 not sent", not "246 failed".
- A call a cascade did not make (an item an earlier tier stopped) is "saved": counted in
  `calls_saved`, with what it would have cost at the critic's prices, estimated from the prompt
  it would have sent (`judging.engine.cascade_savings`), in `saved_usd` (`saved_unpriced` when the
  critic has no price). Saved dollars are an estimate, never part of `cost_usd`.
- A sent call without a price (no price set for the critic, or no token counts in a successful
  reply) counts in `unpriced_calls`; the known cost is then a lower bound, and `cost_text` says
  "at least". A failed reply without token counts was not billed and is not "unpriced".
- A rule or python critic's verdict (`judging.engine.plugin_critics`) is an outcome like any call's,
  but no request: it counts in `rule_evaluations`, never in `sent_calls`, tokens or cost ($0).
  An imported critic's replayed verdict counts in `replayed` the same way.
  One from the cache is a cache hit, as any call's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from judging.verdicts import PLUGIN_KINDS, FailureKind, Verdict


@dataclass(slots=True)
class Ledger:
    """Totals of a run (or of one job on it).

    Attributes:
        calls: item x critic outcomes counted (successes, failures, cache hits); a cancelled
            call is not an outcome (see `cancelled`).
        failed: outcomes without a verdict (any failure kind but CANCELLED).
        cancelled: calls stopped by a cancel, a budget or a lost lease before they gave an
            outcome ("not sent"; a call cancelled between retries may still have been paid).
        cache_hits: requests answered from stored successes: nothing sent, nothing paid.
        sent_calls: requests that reached the vendor (at least one HTTP attempt). A compound or
            repeated critic makes several requests for one outcome in `calls`.
        http_attempts: HTTP requests sent (first tries and retries).
        calls_saved: calls a cascade did not need to make (item x critic outcomes).
        saved_usd: the estimated cost of those calls at the critics' prices (prompt length and a
            typical reply: `judging.engine.cascade_savings`); a lower bound when `saved_unpriced`.
        saved_unpriced: saved calls whose critic has no price (not in `saved_usd`).
        tokens_in / tokens_out: tokens of the requests sent.
        tokens_cached: of tokens_in, those the vendors read from their prompt caches (priced
            at the cached rate, already in `cost_usd`).
        cost_usd: the known cost of the requests sent.
        unpriced_calls: sent calls whose cost is unknown (not in `cost_usd`).
        rule_evaluations: verdicts of rule and python critics judged in the run (free, no
            request; those served from the cache are cache hits instead).
        replayed: verdicts judges gave outside Jurybox, replayed by imported critics (no
            request, no cost: what they cost was paid elsewhere, and is not known here).
    """

    calls: int = 0
    failed: int = 0
    cancelled: int = 0
    cache_hits: int = 0
    sent_calls: int = 0
    http_attempts: int = 0
    calls_saved: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    tokens_cached: int = 0
    saved_usd: float = 0.0
    saved_unpriced: int = 0
    rule_evaluations: int = 0
    replayed: int = 0

    def add(self, verdict: Verdict) -> None:
        """Count one item x critic outcome and pay for the requests behind it (the one place
        that decides what was paid). A compound or repeated critic's verdict counts once in
        `calls`; each of its steps counts as a request, sent or from the cache."""
        if is_cancelled(verdict):
            self.cancelled += 1  # not an outcome: a resume sends it (what it paid still counts)
        else:
            self.calls += 1
            if verdict.failure is not None:
                self.failed += 1
        for call in verdict.calls:
            self._pay(call)

    def _pay(self, verdict: Verdict) -> None:
        if verdict.cached:
            self.cache_hits += 1
            return
        if verdict.vendor == "imported":
            if not is_cancelled(verdict):
                self.replayed += 1  # given elsewhere: nothing sent, nothing known of its cost
            return
        if verdict.vendor in PLUGIN_KINDS:
            if not is_cancelled(verdict):
                self.rule_evaluations += 1  # judged here: no request, no token, $0
            return
        if not verdict.attempts:
            return  # never sent: no request, no cost
        self.sent_calls += 1
        self.http_attempts += verdict.attempts
        self.tokens_in += verdict.tokens_in or 0
        self.tokens_out += verdict.tokens_out or 0
        self.tokens_cached += verdict.tokens_cached or 0
        if verdict.cost_usd is not None:
            self.cost_usd += verdict.cost_usd
        elif verdict.failure is None or verdict.tokens_in or verdict.tokens_out:
            self.unpriced_calls += 1

    def add_all(self, verdicts: Iterable[Verdict]) -> Ledger:
        for verdict in verdicts:
            self.add(verdict)
        return self

    def merge(self, other: Ledger) -> None:
        """Add another ledger's totals to this one (e.g. a resumed job's to the run's)."""
        for name in LEDGER_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def copy(self) -> Ledger:
        return dataclasses.replace(self)

    def paid_only(self) -> Ledger:
        """Only what was sent and paid, without the outcome counts (calls, failed, cancelled,
        cache hits): the share of a job that lost its run to another process, whose outcomes
        are the new owner's to count, while the money it spent was spent all the same."""
        return dataclasses.replace(self, calls=0, failed=0, cancelled=0, cache_hits=0,
                                   calls_saved=0, saved_usd=0.0, saved_unpriced=0)

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in LEDGER_FIELDS}

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> Ledger:
        """The ledger stored in a run row (`storage.results.runs.get_run` / `list_runs`); missing or
        NULL columns read as 0."""
        values: dict[str, Any] = {}
        for name in LEDGER_FIELDS:
            value = row.get(name)
            values[name] = (0.0 if name in _MONEY_FIELDS else 0) if value is None else value
        return cls(**values)

    @property
    def empty(self) -> bool:
        return not any(getattr(self, name) for name in LEDGER_FIELDS)

    def cost_text(self) -> str:
        """"$0.0055", "at least $0.0055 (3 calls without a price)", "unknown (3 calls
        without a price)" when nothing sent had a price, or "none here (imported)" for a run
        that only replayed verdicts given elsewhere."""
        if self.replayed and not self.sent_calls and not self.unpriced_calls:
            return "none here (imported)"
        if not self.unpriced_calls:
            return format_usd(self.cost_usd)
        without = f"{self.unpriced_calls:,} call{'s' if self.unpriced_calls != 1 else ''} " \
                  "without a price"
        if self.cost_usd:
            return f"at least {format_usd(self.cost_usd)} ({without})"
        return f"unknown ({without})"

    def saved_text(self) -> str:
        """"about $0.0123 at the critics' prices", "about at least $0.0123 (4 calls without a
        price)" or "cost unknown (4 calls without a price)": what the cascade's saved calls
        would have cost."""
        if not self.saved_unpriced:
            return f"about {format_usd(self.saved_usd)} at the critics' prices"
        without = (f"{self.saved_unpriced:,} call{'s' if self.saved_unpriced != 1 else ''} "
                   "without a price")
        if self.saved_usd:
            return f"about at least {format_usd(self.saved_usd)} ({without})"
        return f"cost unknown ({without})"

    def add_saved(self, calls: int, usd: float | None) -> None:
        """Count `calls` a cascade did not make, which would have cost `usd` (None: unknown)."""
        self.calls_saved += calls
        if usd is None:
            self.saved_unpriced += calls
        else:
            self.saved_usd += usd

    def sent_text(self) -> str:
        """"1,200 calls sent (1,260 HTTP attempts) · 30 from cache · 91,000 + 4,000 tokens"."""
        if self.replayed and not self.sent_calls and not self.rule_evaluations:
            return f"{self.replayed:,} imported verdicts replayed (nothing sent)"
        parts = [f"{self.sent_calls:,} calls sent ({self.http_attempts:,} HTTP attempts)"]
        if self.cache_hits:
            parts.append(f"{self.cache_hits:,} from cache (not paid)")
        if self.calls_saved:
            parts.append(f"{self.calls_saved:,} saved by the cascade ({self.saved_text()})")
        if self.rule_evaluations:
            parts.append(f"{self.rule_evaluations:,} rule evaluations ($0)")
        if self.replayed:
            parts.append(f"{self.replayed:,} imported verdicts replayed")
        cached = f" ({self.tokens_cached:,} input from the vendor's prompt cache)" if (
            self.tokens_cached) else ""
        parts.append(f"{self.tokens_in:,} + {self.tokens_out:,} tokens{cached}")
        return " · ".join(parts)


LEDGER_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Ledger))
_MONEY_FIELDS = ("cost_usd", "saved_usd")


class LedgerTotals:
    """The run-wide figures of a progress snapshot, read from its `ledger` (never counted apart).

    Mixed into `judging.engine.panel_runner.RunProgress` (a `ledger` field) and
    `judging.runs.background.job.JobProgress` (its run's ledger).
    """

    __slots__ = ()

    @property
    def ledger(self) -> Ledger:
        raise NotImplementedError  # a field (or property) of the class it is mixed into

    @property
    def done(self) -> int:
        """Calls finished (successes and failures, cached included; cancelled ones are not)."""
        return self.ledger.calls

    @property
    def failed(self) -> int:
        """Calls that gave no verdict (any failure kind; a cancelled call is not failed)."""
        return self.ledger.failed

    @property
    def cached(self) -> int:
        """Calls served from stored successes (no request sent, nothing paid)."""
        return self.ledger.cache_hits

    @property
    def cancelled(self) -> int:
        """Calls stopped before they gave an outcome ("not sent"; never in `done` or `failed`)."""
        return self.ledger.cancelled

    @property
    def calls_saved(self) -> int:
        return self.ledger.calls_saved

    @property
    def tokens_in(self) -> int:
        return self.ledger.tokens_in

    @property
    def tokens_out(self) -> int:
        return self.ledger.tokens_out

    @property
    def cost_usd(self) -> float:
        """The known cost of the calls sent (cache hits are never paid)."""
        return self.ledger.cost_usd

    @property
    def cost_unknown(self) -> int:
        """Sent calls whose price is unknown (their cost is not in `cost_usd`)."""
        return self.ledger.unpriced_calls


def is_cancelled(verdict: Verdict) -> bool:
    """Whether an outcome is a call stopped before it gave one (the run was cancelled, its
    budget reached or its lease lost): "not sent", never counted as done or failed. The one
    rule every count of a run's calls (the ledger, each critic's figures) follows."""
    return verdict.failure is FailureKind.CANCELLED


def format_usd(amount: float) -> str:
    """"$0.0123"; a cost too small for four decimals reads "< $0.0001", never "$0.0000"."""
    if 0 < amount < 0.00005:
        return "< $0.0001"
    return f"${amount:,.4f}"
