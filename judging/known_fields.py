"""Models that refuse a field they do not have, whichever way the data comes in.

A typo must not vanish into a default: `Critic(temprature=1.2)` would otherwise judge at
temperature 0, and `Panel(votng=...)` vote by plurality. The panel's models (the panel, its
scale, critics, voting, cascade, limits, curation, pairwise and rubric settings) derive from
`StrictModel`, so the same check, with the same sentence, runs for a model built in Python, a
panel file, a panel form and an imported prompt: "temprature: unknown field; did you mean
'temperature'?".

The check is a pydantic validator, so the refusal arrives as a `ValidationError` carrying the
path of the model that holds the field (`critics.0`); its type is `UNKNOWN_FIELD` and its context
names the field, from which `judging.panel.panel_files.validation_message` writes the full path
("critics[0].temprature: ..."). A leaf: it imports pydantic only.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

# The pydantic error type of an unknown field; its context holds "field" and "reason".
UNKNOWN_FIELD = "unknown_field"


def unknown_field_reason(key: str, fields: Iterable[str]) -> str:
    """What is wrong with the field `key`, and the fix: the closest field, else the list."""
    names = list(fields)
    close = difflib.get_close_matches(key, names, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"fields: {', '.join(names)}"
    return f"unknown field; {hint}"


class StrictModel(BaseModel):
    """A pydantic model that refuses unknown fields with a "did you mean" sentence."""

    # `extra` also declared, so the JSON schema and pydantic's own checks say the same. The
    # input stays out of the error's text: `Critic(api_key="sk-...")` must not print the key
    # (`ValidationError.errors()` still holds it for the sentences of `panel_files`).
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    @model_validator(mode="before")
    @classmethod
    def _known_fields_only(cls, data: Any) -> Any:
        # Runs before pydantic's own `extra_forbidden`, whose message has no hint.
        if isinstance(data, dict):
            for key in data:
                if key not in cls.model_fields:
                    raise PydanticCustomError(
                        UNKNOWN_FIELD, "{field}: {reason}",
                        {"field": str(key),
                         "reason": unknown_field_reason(str(key), cls.model_fields)},
                    )
        return data
