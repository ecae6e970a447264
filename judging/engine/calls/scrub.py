"""Keeping API keys out of everything a verdict carries.

Vendors echo keys back: in an error ("Incorrect API key provided: sk-..."), and a misbehaving
gateway or model can put one in a 200 reply's content or reasoning. Whatever the call layer
returns is stored, shown on Review cards, exported and logged, so every text of a verdict is
scrubbed: the exact value of every key in use (also as it appears inside JSON), and any
`Bearer <token>` form, become `***`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from judging.verdicts import Verdict

MASK = "***"

# A credential after "Bearer": long enough that prose ("bearer bonds") is left alone.
_BEARER = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}", re.IGNORECASE)


class Scrubber:
    """Removes a fixed set of secrets from text and from nested request data.

    Args:
        secrets: the exact values to remove (empty or None values are ignored).
    """

    __slots__ = ("_needles",)

    def __init__(self, secrets: Iterable[str | None]) -> None:
        needles: set[str] = set()
        for secret in secrets:
            if not secret:
                continue
            needles.add(secret)
            # Inside a JSON body a key with a quote, backslash or non-ASCII character is
            # escaped: remove that spelling too.
            needles.add(json.dumps(secret)[1:-1])
        # Longest first: a key that contains another key is masked whole.
        self._needles = tuple(sorted(needles, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self._needles)

    def text(self, text: str | None) -> str | None:
        """`text` without any secret or Bearer token."""
        if not text:
            return text
        for needle in self._needles:
            if needle in text:
                text = text.replace(needle, MASK)
        if "earer" in text:  # cheap test before the regex: most replies never say it
            text = _BEARER.sub("Bearer " + MASK, text)
        return text

    def value(self, value: Any) -> Any:
        """A copy of nested dicts/lists/strings with every string scrubbed (others as they are)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def verdict(self, verdict: Verdict) -> None:
        """Scrub every text a verdict carries, in place: label, reasoning, message, the raw
        request and the raw reply."""
        if not self._needles:
            return
        verdict.label = self.text(verdict.label)
        verdict.reasoning = self.text(verdict.reasoning)
        verdict.message = self.text(verdict.message)
        verdict.raw_response = self.text(verdict.raw_response)
        if verdict.raw_request is not None:
            verdict.raw_request = self.value(verdict.raw_request)
