"""Parameters a vendor refused, taken out (or renamed) for the rest of a run.

A model this project's table (`judging.panel.request_rules`) does not know yet may refuse a parameter
with HTTP 400 on every request. The call layer then drops the parameter (or renames it, when the
vendor says which name to use) once, sends the call again at once, and the run's `CriticGate`
remembers it: every later call of that critic goes out adjusted, and the run log and the
critic's card say so. A parameter is adjusted at most once per run; one that the call cannot do
without (the model, the messages, Anthropic's required `max_tokens`) is never dropped.

Pure functions: nothing here sends or sleeps.
"""

from __future__ import annotations

from typing import Any

from judging.errors import UnsupportedParameterError

# Never dropped: the call means nothing without them.
_REQUIRED = frozenset({"model", "messages"})


def adjustment_for(
    failure: UnsupportedParameterError, body: dict[str, Any], api: str
) -> tuple[str, str | None] | None:
    """What to change after `failure`: (parameter, new name or None to drop it), or None when
    the parameter is not in the body or cannot be done without."""
    name = failure.parameter
    if name not in body or name in _REQUIRED:
        return None
    if api == "messages" and name == "max_tokens":
        return None  # required by the Messages API: a refusal of it is not ours to fix
    replacement = failure.replacement
    if replacement is not None and (replacement == name or replacement in body):
        replacement = None
    return name, replacement


def adjusted_body(body: dict[str, Any], changes: dict[str, str | None]) -> dict[str, Any]:
    """The body with each refused parameter renamed or dropped (a new dict; `body` is kept)."""
    if not any(name in body for name in changes):
        return body
    out: dict[str, Any] = {}
    for name, value in body.items():
        if name in changes:
            replacement = changes[name]
            if replacement is not None and replacement not in body:
                out[replacement] = value
            continue
        out[name] = value
    return out


# The vendor's words kept in a note: enough to recognise the refusal, short enough for a card.
_SAID_CHARS = 200


def adjustment_note(model: str, name: str, replacement: str | None, reason: str) -> str:
    """The sentence the run log and the critic's card show."""
    said = _shortened(reason, _SAID_CHARS)
    if replacement is not None:
        return (f"{model} refused {name!r}, so it is sent as {replacement!r} for the rest of the "
                f"run (the vendor said: {said})")
    return (f"{model} refused {name!r}, so it is not sent for the rest of the run (the vendor "
            f"said: {said})")


def _shortened(text: str, limit: int) -> str:
    """`text` whole if it fits, else cut after its last whole word within `limit` with "…"
    (a word cut in half reads as a different word: "invalid_requ")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit + 1].rsplit(" ", 1)[0] if " " in text[:limit + 1] else text[:limit]
    return cut.rstrip(" ;,") + "…"
