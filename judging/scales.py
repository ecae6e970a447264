"""Scales: the verdicts a critic may give, and how a reply is normalised onto them."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import Field, model_validator

from judging.errors import ConfigError, ParseError
from judging.known_fields import StrictModel

ScaleKind = Literal["nominal", "ordinal", "likert", "score", "yesno"]
MeasurementLevel = Literal["nominal", "ordinal", "interval", "ratio"]

_YES_SYNONYMS = {"y": "yes", "true": "yes", "pass": "yes", "1": "yes"}
_NO_SYNONYMS = {"n": "no", "false": "no", "fail": "no", "0": "no"}


def _fold(text: str) -> str:
    """Case- and whitespace-insensitive form used to match labels and synonyms."""
    return re.sub(r"[\s_\-]+", " ", text.strip().strip("\"'.*`")).casefold()


class Scale(StrictModel):
    """The allowed verdicts of a panel.

    Kinds:
        nominal: unordered labels, e.g. KEEP / REJECT / SPLIT / MERGE.
        ordinal: ordered labels, worst to best (or any order you declare).
        likert: the integers `min`..`max` as ordered labels ("1".."5").
        score: a number in [`min`, `max`]; verdicts carry `score`, not `label`.
        yesno: the labels "yes" and "no".

    `synonyms` maps extra spellings to a label (`{"drop": "REJECT"}`); matching ignores case,
    surrounding whitespace and quotes.
    """

    kind: ScaleKind = "nominal"
    labels: list[str] = Field(default_factory=list)
    synonyms: dict[str, str] = Field(default_factory=dict)
    min: float | None = None
    max: float | None = None
    description: str = ""

    @model_validator(mode="after")
    def _check(self) -> Scale:
        if self.kind == "yesno":
            if not self.labels:
                self.labels = ["yes", "no"]
        elif self.kind == "likert":
            if self.min is None or self.max is None:
                raise ConfigError("scale: a likert scale needs integer 'min' and 'max'")
            if self.min != int(self.min) or self.max != int(self.max) or self.min >= self.max:
                raise ConfigError("scale: likert 'min' and 'max' must be integers with min < max")
            self.labels = [str(i) for i in range(int(self.min), int(self.max) + 1)]
        elif self.kind == "score":
            if self.min is None or self.max is None or not self.min < self.max:
                raise ConfigError("scale: a score scale needs numbers 'min' < 'max'")
        else:
            if len(self.labels) < 2:
                raise ConfigError(f"scale: a {self.kind} scale needs at least two labels")
        folded = [_fold(label) for label in self.labels]
        if len(set(folded)) != len(folded):
            raise ConfigError(f"scale: labels must differ beyond case and spacing: {self.labels}")
        for spelling, target in self.synonyms.items():
            if target not in self.labels:
                raise ConfigError(
                    f"scale: synonym {spelling!r} points to {target!r}, which is not one of "
                    f"the labels {self.labels}"
                )
        return self

    @property
    def is_numeric(self) -> bool:
        """True when verdicts on this scale are scores rather than labels."""
        return self.kind == "score"

    @property
    def level(self) -> MeasurementLevel:
        """The measurement level the agreement statistics should use."""
        return {
            "nominal": "nominal",
            "yesno": "nominal",
            "ordinal": "ordinal",
            "likert": "ordinal",
            "score": "interval",
        }[self.kind]  # type: ignore[return-value]

    def rank(self, label: str) -> int:
        """Position of a label on an ordered scale (0 = first declared)."""
        return self.labels.index(label)

    def describe(self) -> str:
        """One line telling a model what it may answer."""
        if self.kind == "score":
            return f"a number from {self.min:g} to {self.max:g}"
        return "exactly one of: " + ", ".join(self.labels)

    def normalize(self, value: Any) -> str | float:
        """Map a raw reply value onto the scale.

        Returns:
            The canonical label (a `str`), or for a score scale the number (a `float`).

        Raises:
            ParseError: the value is not on the scale; the message names the value and the scale.
        """
        if self.kind == "score":
            return self._normalize_score(value)
        if isinstance(value, bool) and self.kind == "yesno":
            return "yes" if value else "no"
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise ParseError(f"verdict {value!r} is not {self.describe()}", raw=repr(value))
        text = _fold(str(value))
        for label in self.labels:
            if _fold(label) == text:
                return label
        for spelling, target in self.synonyms.items():
            if _fold(spelling) == text:
                return target
        if self.kind == "yesno":
            builtin = _YES_SYNONYMS.get(text) or _NO_SYNONYMS.get(text)
            if builtin:
                return builtin
        raise ParseError(f"verdict {str(value)!r} is not {self.describe()}", raw=str(value))

    def _normalize_score(self, value: Any) -> float:
        assert self.min is not None and self.max is not None
        try:
            number = float(str(value).strip()) if not isinstance(value, (int, float)) else value
        except ValueError:
            raise ParseError(f"score {value!r} is not a number", raw=str(value)) from None
        if isinstance(number, bool) or not math.isfinite(number):
            raise ParseError(f"score {value!r} is not a finite number", raw=str(value))
        if not self.min <= number <= self.max:
            raise ParseError(
                f"score {number:g} is outside the scale {self.min:g}..{self.max:g}",
                raw=str(value),
            )
        return float(number)
