"""Functions for `kind: python` critics in tests (`function: tests.fixtures_plugins:NAME`).

`CALLS` counts how often each was called, so a test can see that a cached verdict did not
call the function again.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any

CALLS: Counter[str] = Counter()
_lock = threading.Lock()
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


def _count(name: str) -> None:
    with _lock:
        CALLS[name] += 1


def no_pii(item: dict[str, Any], reference: Any) -> tuple[bool, str]:
    """Passed unless the text holds an e-mail address."""
    _count("no_pii")
    found = _EMAIL.search(str(item["text"]))
    if found:
        return False, f"found the e-mail address {found.group(0)}"
    return True, "no e-mail address"


def matches_reference(item: dict[str, Any], reference: Any) -> str:
    """A label of its own: 'yes' when the answer equals the reference."""
    _count("matches_reference")
    return "yes" if str(item["answer"]).strip() == str(reference).strip() else "no"


def graded(item: dict[str, Any], reference: Any) -> dict[str, Any]:
    """A score with reasoning and confidence: the share of the reference's words used."""
    _count("graded")
    words = set(str(reference).lower().split())
    used = words & set(str(item["answer"]).lower().split())
    return {"score": len(used) / len(words), "reasoning": f"{len(used)} of {len(words)} words",
            "confidence": 0.5}


def broken(item: dict[str, Any], reference: Any) -> bool:
    raise ValueError("cannot read this item")


def off_scale(item: dict[str, Any], reference: Any) -> str:
    return "maybe"


NOT_A_FUNCTION = 42


def verdict_column(item: dict[str, Any], reference: Any) -> str:
    """A label of the scale as stored with the item: a benchmark's own decisions brought in
    (the `verdict` field; on a pairwise panel A, B or TIE, in the item's stored order)."""
    _count("verdict_column")
    return str(item["verdict"])


def passes(item: dict[str, Any], reference: Any) -> bool:
    """Passed, always: a bool, which needs pass / fail labels on a label scale."""
    return True
