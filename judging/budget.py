"""A run's budget cap: a limit in dollars and/or tokens that the run never passes.

Before a call is sent (a cache hit is free and never refused), it reserves its worst case: the
prompt's tokens (estimated from its length) plus the critic's `max_tokens`, priced with the
critic's prices. If the spend so far, the reservations of the calls in flight and this one would
pass a cap, the call is not sent and the run stops once the calls in flight are back ("budget
reached": resume it with a higher cap). A reply settles its reservation with what it really
used. A call whose price is unknown counts against the token cap only, and is counted in
`unpriced` so the run can say so.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judging.errors import ConfigError

# Characters per token, the rule of thumb of this cap's worst case and of `judging.estimate`.
CHARS_PER_TOKEN = 4.0


class BudgetCap(BaseModel):
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
    usd: float | None
    tokens: int


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
        self.reserved_usd = 0.0
        self.reserved_tokens = 0
        self.reached = False
        self.unpriced = 0  # calls sent whose price is unknown (against the token cap only)
        self._lock = threading.Lock()

    @staticmethod
    def worst_case(prompt_chars: int, max_tokens: int, price_in: float | None,
                   price_out: float | None) -> Reservation:
        """The most one call can cost: its prompt's estimated tokens plus `max_tokens`."""
        tokens_in = math.ceil(prompt_chars / CHARS_PER_TOKEN)
        usd = None
        if price_in is not None and price_out is not None:
            usd = (tokens_in * price_in + max_tokens * price_out) / 1e6
        return Reservation(usd=usd, tokens=tokens_in + max_tokens)

    def reserve(self, worst: Reservation) -> Reservation | None:
        """Hold `worst` for a call about to be sent; None (and `reached`) if it could pass a cap."""
        with self._lock:
            if self.reached:
                return None
            over_tokens = (self.cap.tokens is not None and self.spent_tokens
                           + self.reserved_tokens + worst.tokens > self.cap.tokens)
            over_usd = (self.cap.usd is not None and worst.usd is not None and self.spent_usd
                        + self.reserved_usd + worst.usd > self.cap.usd)
            if over_tokens or over_usd:
                self.reached = True
                return None
            self.reserved_tokens += worst.tokens
            self.reserved_usd += worst.usd or 0.0
            if worst.usd is None:
                self.unpriced += 1
            return worst

    def settle(self, held: Reservation, usd: float | None, tokens: int) -> None:
        """Replace a reservation by what the call really used."""
        with self._lock:
            self.reserved_tokens -= held.tokens
            self.reserved_usd -= held.usd or 0.0
            self.spent_tokens += tokens
            self.spent_usd += usd or 0.0

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
