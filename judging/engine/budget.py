"""A run's budget cap: a limit in dollars and/or tokens that the run never passes, and reaches.

Never passes: a call is sent only when its worst case (the prompt's tokens, estimated from its
length, plus the critic's `max_tokens`, at the critic's prices) fits beside the worst cases of
every call in flight and what the run has spent. Whatever the replies, the cap holds.

Reaches: a reply is usually far below its worst case (a verdict of some 80 tokens against a
`max_tokens` of 512), so reserving worst cases and stopping at the first call that did not fit
left most of the cap unspent at normal concurrency (a $0.05 cap stopped at $0.014 with 32 calls
in flight, a token cap at 45%). So each call also carries what it will LIKELY cost: its
prompt's tokens, scaled by how the critic's estimates compared with the vendor's counts so far,
plus the critic's mean reply so far (`TYPICAL_REPLY_TOKENS` before its first reply), in dollars
scaled by what the critic's replies so far were billed against their tokens at the list price
(a prompt read from the vendor's cache is billed at the cached rate, an OpenRouter reply at its
reported cost: a panel with a long cached system prompt pays a fifth of the list price, and
counting its calls in flight at the list price stopped it far below its cap). Far from
the cap the worst cases fit and nothing changes. Near it, a call that does not fit yet but would
once the calls in flight come back as likely waits for them; a call that would not fit even
then is refused and the run is "budget reached": it starts no new item, and only the calls of
items already under way are still sent, while they fit (a finished item can be voted and
reviewed; a half-judged one waits for the resume). A resume with a higher cap finishes the run
without paying twice. A reply settles its reservation with what it really used. A call whose
price is unknown counts against the token cap only, and is counted in `unpriced` so the run can
say so. Where a prompt may be written to the vendor's cache at a premium (Anthropic: 1.25x the
input price), the worst case prices the prompt at that premium.

Measured (tests/test_budget_cap.py, the simulator, 32 calls in flight): see that test's
docstring.
"""

from __future__ import annotations

import collections
import math
import threading
from dataclasses import dataclass

from pydantic import ConfigDict, Field, model_validator

from judging.errors import ConfigError
from judging.known_fields import StrictModel

# Characters per token, the rule of thumb of this cap's worst case and of `judging.engine.estimate`.
CHARS_PER_TOKEN = 4.0
# A verdict's reply before a critic has answered once: {"label": ..., "confidence": ...,
# "reasoning": "one or two sentences"}. `judging.engine.estimate` assumes it too.
TYPICAL_REPLY_TOKENS = 80
# Items that had a call sent lately: after "budget reached" their other calls may still go.
_OPEN_ITEMS = 8192


class BudgetCap(StrictModel):
    """A cap in US dollars and/or tokens (input + output); at least one."""

    model_config = ConfigDict(frozen=True)

    usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    tokens: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_at_least(self) -> BudgetCap:
        if self.usd is None and self.tokens is None:
            raise ConfigError("A budget cap needs a limit in dollars, in tokens, or both.")
        return self

    def describe(self) -> str:
        parts = ([f"${self.usd:,.4f}"] if self.usd is not None else []) + (
            [f"{self.tokens:,} tokens"] if self.tokens is not None else [])
        return " and ".join(parts)


@dataclass
class Reservation:
    """What one call holds of the cap while it is in flight.

    Attributes:
        usd / tokens: its worst case (None: unpriced), what the cap's guarantee counts.
        likely_usd / likely_tokens: what it will likely cost (None: as the worst case).
        critic / item: whose call it is, for learning its replies and finishing its item.
        prompt_tokens: the prompt's estimated tokens, compared with the vendor's count.
        price_in / price_out: the critic's list prices, to compare a reply's bill with.
    """

    usd: float | None
    tokens: int
    likely_usd: float | None = None
    likely_tokens: int | None = None
    critic: str | None = None
    item: str | None = None
    prompt_tokens: int = 0
    price_in: float | None = None
    price_out: float | None = None
    # The likely cost at the list price, before the critic's bill ratio (None: as expected_usd).
    listed_usd: float | None = None

    @property
    def expected_usd(self) -> float:
        return (self.likely_usd if self.likely_usd is not None else self.usd) or 0.0

    @property
    def listed(self) -> float:
        """Its likely dollars at the list price (0 when unpriced)."""
        if self.usd is None:
            return 0.0
        return self.listed_usd if self.listed_usd is not None else self.expected_usd

    @property
    def expected_tokens(self) -> int:
        return self.likely_tokens if self.likely_tokens is not None else self.tokens


class BudgetGuard:
    """The cap of one run, shared by its call threads.

    Args:
        cap: the limits.
        spent_usd, spent_tokens: what the run had already spent (a resumed run's ledger).
    """

    def __init__(self, cap: BudgetCap, *, spent_usd: float = 0.0, spent_tokens: int = 0) -> None:
        self.cap = cap
        self.spent_usd = spent_usd
        self.spent_tokens = spent_tokens
        self.reserved_usd = 0.0  # worst cases of the calls in flight
        self.reserved_tokens = 0
        self.likely_tokens = 0  # what the calls in flight will likely use (their dollars: _flight)
        self.in_flight = 0
        self.reached = False
        self.unpriced = 0  # calls sent whose price is unknown (against the token cap only)
        # Per critic: [replies, reply tokens, prompt tokens estimated, prompt tokens counted].
        self._seen: dict[str, list[int]] = {}
        # Per critic: [dollars billed, the same replies' tokens at the list price].
        self._billed: dict[str, list[float]] = {}
        # Per critic, its calls in flight: [likely cost at the list price, worst cases]. Their
        # likely dollars are re-read at each decision with what the critic's bill ratio is by
        # then: a reservation made before the first cached reply came back (at the list price)
        # would otherwise count at 4x what it will be billed until it settles.
        self._flight: dict[str | None, list[float]] = {}
        self._open: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)

    @staticmethod
    def worst_case(prompt_chars: int, max_tokens: int, price_in: float | None,
                   price_out: float | None, *, cache_write_factor: float = 1.0) -> Reservation:
        """The most one call can cost: its prompt's estimated tokens (at `cache_write_factor`
        times the input price when the vendor may bill it as a cache write) plus
        `max_tokens`."""
        tokens_in = math.ceil(prompt_chars / CHARS_PER_TOKEN)
        usd = None
        if price_in is not None and price_out is not None:
            usd = (tokens_in * price_in * max(1.0, cache_write_factor)
                   + max_tokens * price_out) / 1e6
        return Reservation(usd=usd, tokens=tokens_in + max_tokens, prompt_tokens=tokens_in,
                           price_in=price_in, price_out=price_out)

    def reservation_for(self, critic: str, item: str, prompt_chars: int, max_tokens: int,
                        price_in: float | None, price_out: float | None, *,
                        cache_write_factor: float = 1.0) -> Reservation:
        """One call's worst case and likely cost, from what the critic's replies were so far."""
        held = self.worst_case(prompt_chars, max_tokens, price_in, price_out,
                               cache_write_factor=cache_write_factor)
        with self._lock:
            replies, out, estimated, counted = self._seen.get(critic, (0, 0, 0, 0))
            billed, listed = self._billed.get(critic, (0.0, 0.0))
        likely_out = min(max_tokens, math.ceil(out / replies) if replies else TYPICAL_REPLY_TOKENS)
        likely_in = held.prompt_tokens
        if estimated and counted:  # the vendor counts the critic's prompts its own way
            likely_in = min(likely_in, math.ceil(likely_in * counted / estimated))
        held.critic, held.item = critic, item
        held.likely_tokens = likely_in + likely_out
        if price_in is not None and price_out is not None and held.usd is not None:
            likely = (likely_in * price_in + likely_out * price_out) / 1e6
            held.listed_usd = min(held.usd, likely)
            if listed > 0:  # the vendor's cache discount (or its own bill) so far
                likely *= billed / listed
            held.likely_usd = min(held.usd, likely)
        return held

    def _likely_in_flight_usd(self) -> float:
        """What the calls in flight will likely be billed, at each critic's bill ratio as it is
        now (never more than their worst cases). Called under the lock."""
        total = 0.0
        for critic, (listed_usd, worst_usd) in self._flight.items():
            billed, listed = self._billed.get(critic, (0.0, 0.0)) if critic else (0.0, 0.0)
            ratio = billed / listed if listed > 0 else 1.0
            total += min(worst_usd, max(0.0, listed_usd) * ratio)
        return total

    def _fits(self, usd: float, tokens: int, held: Reservation) -> bool:
        """Whether `held`'s worst case fits beside the spend and `usd` / `tokens` in flight."""
        if self.cap.tokens is not None and self.spent_tokens + tokens + held.tokens > self.cap.tokens:
            return False
        return not (self.cap.usd is not None and held.usd is not None
                    and self.spent_usd + usd + held.usd > self.cap.usd)

    def reserve(self, held: Reservation, *, cancel: threading.Event | None = None
                ) -> Reservation | None:
        """Hold `held` for a call about to be sent, waiting while calls in flight may make room
        for it; None when it cannot fit (the run is then "budget reached"), or on `cancel`."""
        with self._settled:
            while True:
                if self.reached and (held.item is None or held.item not in self._open):
                    return None  # no new item once the cap is reached
                if self._fits(self.reserved_usd, self.reserved_tokens, held):
                    break
                if not (self.in_flight and self._fits(self._likely_in_flight_usd(),
                                                      self.likely_tokens, held)):
                    self.reached = True  # it would not fit even once the calls in flight are back
                    return None
                if cancel is not None and cancel.is_set():
                    return None
                self._settled.wait(0.05 if cancel is not None else None)
            self.reserved_tokens += held.tokens
            self.reserved_usd += held.usd or 0.0
            self.likely_tokens += held.expected_tokens
            flight = self._flight.setdefault(held.critic, [0.0, 0.0])
            flight[0] += held.listed
            flight[1] += held.usd or 0.0
            self.in_flight += 1
            if held.usd is None:
                self.unpriced += 1
            if held.item is not None:
                self._open[held.item] = None
                self._open.move_to_end(held.item)
                if len(self._open) > _OPEN_ITEMS:
                    self._open.popitem(last=False)
            return held

    def settle(self, held: Reservation, usd: float | None, tokens: int, *,
               tokens_in: int | None = None, tokens_out: int | None = None) -> None:
        """Replace a reservation by what the call really used; `tokens_in` / `tokens_out` (the
        vendor's counts, when a reply came) teach the likely cost of the critic's next calls."""
        with self._settled:
            self.reserved_tokens -= held.tokens
            self.reserved_usd -= held.usd or 0.0
            self.likely_tokens -= held.expected_tokens
            flight = self._flight.get(held.critic)
            if flight is not None:
                flight[0] -= held.listed
                flight[1] -= held.usd or 0.0
            self.in_flight -= 1
            self.spent_tokens += tokens
            self.spent_usd += usd or 0.0
            if held.critic is not None and tokens_out is not None:
                seen = self._seen.setdefault(held.critic, [0, 0, 0, 0])
                seen[0] += 1
                seen[1] += tokens_out
                if tokens_in:
                    seen[2] += held.prompt_tokens
                    seen[3] += tokens_in
                    if usd is not None and held.price_in is not None \
                            and held.price_out is not None:
                        listed = (tokens_in * held.price_in + tokens_out * held.price_out) / 1e6
                        if listed > 0:
                            bill = self._billed.setdefault(held.critic, [0.0, 0.0])
                            bill[0] += usd
                            bill[1] += listed
            self._settled.notify_all()
    def summary(self) -> str:
        """"Budget reached: $0.0123 of $0.0150 and 9,800 of 10,000 tokens spent." (or "... so
        far"), with the unpriced calls if any."""
        parts = []
        if self.cap.usd is not None:
            parts.append(f"${self.spent_usd:,.4f} of ${self.cap.usd:,.4f}")
        if self.cap.tokens is not None:
            parts.append(f"{self.spent_tokens:,} of {self.cap.tokens:,} tokens")
        text = ("Budget reached: " if self.reached else "Budget: ") + " and ".join(parts) + " spent"
        if self.reached:
            text += "; the next call could have passed the cap, so it was not sent. Resume the "
            text += "run with a higher cap to finish it"
        if self.unpriced:
            text += (f". {self.unpriced:,} calls had no price: they count against the token cap "
                     "only")
        return text + "."
