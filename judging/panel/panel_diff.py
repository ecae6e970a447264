"""What changed between two panel versions, in words ("critic 'lenient' removed", "voting
strategy: plurality -> weighted"): the first line of a version-against-version comparison, so
the figures below it can be read as the effect of that change.

A pure function over two `Panel`s; field paths come from the panel model itself, so a field
added to the model is compared without touching this module.
"""

from __future__ import annotations

from typing import Any

from judging.panel.panel_model import Panel

__all__ = ["panel_changes"]

# Long texts are named, not quoted: a changed prompt is "prompt_template changed".
_QUOTE_LIMIT = 40


def _value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _QUOTE_LIMIT else "(long)"


def _changed(prefix: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    for key in [k for k in old if k in new] + [k for k in new if k not in old]:
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if isinstance(before, str) and isinstance(after, str) and (
                len(before) > _QUOTE_LIMIT or len(after) > _QUOTE_LIMIT):
            out.append(f"{prefix}{key} changed")
        else:
            out.append(f"{prefix}{key}: {_value(before)} -> {_value(after)}")
    return out


def panel_changes(old: Panel, new: Panel) -> list[str]:
    """The differences from `old` to `new`, one short phrase each, critics by name.

    Returns:
        Phrases such as "critic 'lenient' removed", "critic 'second' added (simulated,
        sim-biased)", "critic 'careful': temperature: 0.0 -> 0.3", "voting: strategy:
        'plurality' -> 'weighted'"; an empty list when the two panels judge alike (only the name
        or description differ, or nothing).
    """
    a = old.model_dump(mode="json")
    b = new.model_dump(mode="json")
    changes: list[str] = []
    critics_a = {c["name"]: c for c in a.pop("critics")}
    critics_b = {c["name"]: c for c in b.pop("critics")}
    for name in critics_a:
        if name not in critics_b:
            changes.append(f"critic {name!r} removed")
    for name, critic in critics_b.items():
        if name not in critics_a:
            changes.append(f"critic {name!r} added ({critic.get('vendor')}, {critic.get('model')})")
        else:
            changes += _changed(f"critic {name!r}: ", critics_a[name], critic)
    if list(critics_a) != list(critics_b) and set(critics_a) == set(critics_b):
        changes.append("critics reordered")
    for section in [k for k in a if k not in ("name", "description")]:
        before, after = a.get(section), b.get(section)
        if isinstance(before, dict) and isinstance(after, dict):
            changes += _changed(f"{section}: ", before, after)
        elif before != after:
            changes.append(f"{section}: {_value(before)} -> {_value(after)}")
    return changes
