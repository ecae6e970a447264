"""Rule critics' checks: what a `kind: rule` critic tests, and the test itself (pure, no calls).

A rule reads one field of the item and passes or fails:

    regex        the field matches `pattern` (Python `re.search`)
    no-regex     the field does not match `pattern` (e.g. no e-mail address, no card number)
    json-schema  the field is JSON valid against `json_schema` (the `jsonschema` package,
                 the draft the schema's `$schema` names, else the latest)
    length       the field's length in `unit`s (characters or words) is within `min`..`max`
    keywords     every word of `all_of`, at least one of `any_of`, none of `none_of` occurs
                 (as a substring; `ignore_case` folds case)
    range        the field is a number within `min`..`max`
    exact        the field equals the critic's `reference_field` (surrounding whitespace
                 ignored; `ignore_case` folds case)

Each result carries its reasoning: which rule matched, where, and why the item passed or
failed, as a reviewer reads it on Review. A field that is not text is checked as its JSON text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from judging.known_fields import StrictModel

RuleCheck = Literal["regex", "no-regex", "json-schema", "length", "keywords", "range", "exact"]

# Which parameter each check reads: a parameter set for a check that ignores it is refused
# (a `pattern` on a length rule is a mistake the user should hear about, not a silent no-op).
_PARAMETERS: dict[str, tuple[str, ...]] = {
    "pattern": ("regex", "no-regex"),
    "ignore_case": ("regex", "no-regex", "keywords", "exact"),
    "json_schema": ("json-schema",),
    "min": ("length", "range"),
    "max": ("length", "range"),
    "unit": ("length",),
    "all_of": ("keywords",),
    "any_of": ("keywords",),
    "none_of": ("keywords",),
}
_SNIPPET = 60  # characters of a match shown in the reasoning


class Rule(StrictModel):
    """What a rule critic checks (`Critic.rule`); see the module docstring for each check.

    Attributes:
        check: the kind of check.
        field: the item field it reads.
        pattern: regex / no-regex: a Python regular expression, searched anywhere in the field.
        ignore_case: regex, no-regex, keywords, exact: compare without case.
        json_schema: json-schema: the JSON Schema the field must satisfy.
        min / max: length: bounds in `unit`s; range: bounds of the number (inclusive).
        unit: length: "characters" or "words".
        all_of / any_of / none_of: keywords: the lists (at least one of them non-empty).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: RuleCheck
    field: str = Field(min_length=1)
    pattern: str | None = None
    ignore_case: bool = False
    json_schema: dict[str, Any] | None = None
    min: float | None = None
    max: float | None = None
    unit: Literal["characters", "words"] = "characters"
    all_of: list[str] = Field(default_factory=list)
    any_of: list[str] = Field(default_factory=list)
    none_of: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _parameters_fit_the_check(self) -> Rule:
        problem = rule_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self

    def describe(self) -> str:
        """One line naming the check, e.g. "no-regex /\\d{16}/ on answer"."""
        if self.check in ("regex", "no-regex"):
            what = f"{self.check} /{self.pattern}/"
        elif self.check == "length":
            what = f"length {_bounds(self.min, self.max)} {self.unit}"
        elif self.check == "range":
            what = f"range {_bounds(self.min, self.max)}"
        elif self.check == "exact":
            what = "exact match with the reference"
        else:
            what = self.check
        return f"{what} on {self.field}"


def rule_problem(rule: Rule) -> str | None:
    """What is wrong with a rule's parameters, as a sentence naming the fix; None when fine."""
    check = rule.check
    for name, allowed in _PARAMETERS.items():
        # Set to something else than its default (a form sends every field, defaults included).
        default = Rule.model_fields[name].get_default(call_default_factory=True)
        if check not in allowed and getattr(rule, name) != default:
            return (f"{name} applies to {', '.join(allowed)} rules, not to a {check} rule; "
                    "remove it")
    if check in ("regex", "no-regex"):
        if not rule.pattern:
            return f"a {check} rule needs a pattern (a regular expression), e.g. pattern: '\\d+'"
        try:
            re.compile(rule.pattern)
        except re.error as error:
            at = f" at position {error.pos}" if error.pos is not None else ""
            return (f"pattern {rule.pattern!r} is not a valid regular expression ({error.msg}"
                    f"{at}); fix it, or escape special characters with a backslash")
    if check == "json-schema":
        if not rule.json_schema:
            return ("a json-schema rule needs json_schema, e.g. json_schema: {type: object, "
                    "required: [name]}")
        import jsonschema  # here, not at the top: reading a panel must not pay for it

        try:
            jsonschema.validators.validator_for(rule.json_schema).check_schema(rule.json_schema)
        except jsonschema.SchemaError as error:
            return f"json_schema is not a valid JSON Schema ({error.message}); fix the schema"
    if check in ("length", "range"):
        if rule.min is None and rule.max is None:
            return f"a {check} rule needs min, max or both"
        if rule.min is not None and rule.max is not None and rule.min > rule.max:
            return f"min {rule.min:g} is above max {rule.max:g}; swap them"
        if check == "length" and any(b is not None and b < 0 for b in (rule.min, rule.max)):
            return "a length cannot be negative; give min and max of 0 or more"
    if check == "keywords":
        lists = (rule.all_of, rule.any_of, rule.none_of)
        if not any(lists):
            return "a keywords rule needs at least one of all_of, any_of or none_of"
        if any(not word.strip() for words in lists for word in words):
            return "a keyword is empty; remove it from the list"
    return None


@dataclass(frozen=True, slots=True)
class RuleResult:
    """A rule's outcome on one item: passed or not, and why, in a sentence."""

    passed: bool
    reasoning: str


def field_text(value: Any) -> str:
    """A field's value as the rules read it: text as is, None as "", anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def evaluate_rule(rule: Rule, fields: dict[str, Any], reference: Any = None) -> RuleResult:
    """Apply a rule to an item's fields.

    Args:
        rule: the rule.
        fields: the item's fields.
        reference: the reference answer (an exact rule compares the field with it).

    Raises:
        KeyError: the item has no field `rule.field` (the caller names the item and field).
    """
    value = fields[rule.field]
    text = field_text(value)
    if rule.check in ("regex", "no-regex"):
        return _regex(rule, text)
    if rule.check == "json-schema":
        return _json_schema(rule, value)
    if rule.check == "length":
        return _length(rule, text)
    if rule.check == "keywords":
        return _keywords(rule, text)
    if rule.check == "range":
        return _range(rule, value)
    return _exact(rule, text, reference)


def _quote(text: str) -> str:
    short = text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"
    return json.dumps(short, ensure_ascii=False)


def _bounds(low: float | None, high: float | None) -> str:
    if low is None:
        return f"at most {high:g}"
    if high is None:
        return f"at least {low:g}"
    return f"{low:g}..{high:g}"


def _regex(rule: Rule, text: str) -> RuleResult:
    assert rule.pattern is not None
    found = re.search(rule.pattern, text, re.IGNORECASE if rule.ignore_case else 0)
    where = (f"/{rule.pattern}/ matched {_quote(found.group(0))} at characters "
             f"{found.start()}-{found.end()} of {rule.field}") if found else (
        f"/{rule.pattern}/ does not match {rule.field}")
    if rule.check == "regex":
        return RuleResult(found is not None, f"regex: {where}")
    return RuleResult(found is None, f"no-regex: {where}")


def _json_schema(rule: Rule, value: Any) -> RuleResult:
    assert rule.json_schema is not None
    data = value
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as error:
            return RuleResult(False, f"json-schema: {rule.field} is not JSON ({error.msg} at "
                                     f"line {error.lineno} column {error.colno})")
    import jsonschema  # only json-schema rules pay for the import

    validator = jsonschema.validators.validator_for(rule.json_schema)(rule.json_schema)
    worst = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if worst is None:
        return RuleResult(True, f"json-schema: {rule.field} is valid against the schema")
    return RuleResult(False, f"json-schema: at {worst.json_path} of {rule.field}: "
                             f"{worst.message}")


def _within(number: float, rule: Rule) -> bool:
    return ((rule.min is None or number >= rule.min)
            and (rule.max is None or number <= rule.max))


def _length(rule: Rule, text: str) -> RuleResult:
    size = len(text.split()) if rule.unit == "words" else len(text)
    ok = _within(size, rule)
    return RuleResult(ok, f"length: {rule.field} has {size} {rule.unit}, "
                          f"{'within' if ok else 'outside'} {_bounds(rule.min, rule.max)}")


def _keywords(rule: Rule, text: str) -> RuleResult:
    def fold(word: str) -> str:
        return word.casefold() if rule.ignore_case else word

    haystack = fold(text)
    present = [w for w in (*rule.all_of, *rule.any_of, *rule.none_of) if fold(w) in haystack]
    problems = [f"missing {json.dumps(w, ensure_ascii=False)}" for w in rule.all_of
                if w not in present]
    if rule.any_of and not any(w in present for w in rule.any_of):
        problems.append("none of " + ", ".join(json.dumps(w, ensure_ascii=False)
                                               for w in rule.any_of))
    problems += [f"forbidden {json.dumps(w, ensure_ascii=False)} found" for w in rule.none_of
                 if w in present]
    if problems:
        return RuleResult(False, f"keywords: {rule.field}: {'; '.join(problems)}")
    found = [json.dumps(w, ensure_ascii=False) for w in (*rule.all_of, *rule.any_of)
             if w in present]
    said = f"found {', '.join(found)}" if found else "no forbidden keyword"
    return RuleResult(True, f"keywords: {rule.field}: {said}")


def _range(rule: Rule, value: Any) -> RuleResult:
    bounds = _bounds(rule.min, rule.max)
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or number != number:  # NaN is no number to compare
        return RuleResult(False, f"range: {rule.field} {_quote(field_text(value))} is not a "
                                 f"number (wanted {bounds})")
    ok = _within(number, rule)
    return RuleResult(ok, f"range: {rule.field} is {number:g}, "
                          f"{'within' if ok else 'outside'} {bounds}")


def _exact(rule: Rule, text: str, reference: Any) -> RuleResult:
    want = field_text(reference).strip()
    got = text.strip()
    same = got.casefold() == want.casefold() if rule.ignore_case else got == want
    if same:
        return RuleResult(True, f"exact: {rule.field} equals the reference {_quote(want)}")
    return RuleResult(False, f"exact: {rule.field} {_quote(got)} differs from the reference "
                             f"{_quote(want)}")
