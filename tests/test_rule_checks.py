"""Rule critics' checks (`judging.panel.rule_checks`): each check passes and fails as documented, says
why in its reasoning, and a rule that cannot work is refused with a sentence."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from judging.errors import ConfigError
from judging.panel.panel_files import panel_from_dict
from judging.panel.rule_checks import Rule, evaluate_rule

PERSON = {"type": "object", "required": ["name", "age"],
          "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}}

# (rule, field value, reference, passed, words the reasoning must hold)
CASES: list[tuple[dict[str, Any], Any, Any, bool, tuple[str, ...]]] = [
    ({"check": "regex", "pattern": r"^\d{3}-\d{4}$"}, "555-1234", None, True,
     ("matched", '"555-1234"', "characters 0-8")),
    ({"check": "regex", "pattern": r"^\d{3}-\d{4}$"}, "call me", None, False,
     ("does not match",)),
    ({"check": "regex", "pattern": "paris", "ignore_case": True}, "In PARIS.", None, True,
     ('"PARIS"',)),
    ({"check": "regex", "pattern": "paris"}, "In PARIS.", None, False, ("does not match",)),
    ({"check": "no-regex", "pattern": r"\b\d{4} \d{4} \d{4} \d{4}\b"},
     "card 4111 1111 1111 1111 here", None, False, ("no-regex", '"4111 1111 1111 1111"')),
    ({"check": "no-regex", "pattern": r"[\w.]+@[\w.]+"}, "no address here", None, True,
     ("does not match",)),
    ({"check": "json-schema", "json_schema": PERSON}, '{"name": "Ada", "age": 36}', None, True,
     ("valid",)),
    ({"check": "json-schema", "json_schema": PERSON}, '{"name": "Ada", "age": -1}', None, False,
     ("$.age", "minimum")),
    ({"check": "json-schema", "json_schema": PERSON}, '{"name": "Ada"}', None, False,
     ("'age' is a required property",)),
    ({"check": "json-schema", "json_schema": PERSON}, "{name: Ada}", None, False,
     ("not JSON", "line 1 column 2")),
    ({"check": "json-schema", "json_schema": PERSON}, {"name": "Ada", "age": 3}, None, True,
     ("valid",)),  # a field already holding data is checked as data
    ({"check": "length", "min": 3, "max": 5}, "abcd", None, True, ("4 characters", "3..5")),
    ({"check": "length", "max": 5}, "abcdef", None, False, ("6 characters", "at most 5")),
    ({"check": "length", "min": 2, "unit": "words"}, "one", None, False,
     ("1 words", "at least 2")),
    ({"check": "length", "min": 2, "max": 2, "unit": "words"}, " two  words ", None, True,
     ("2 words",)),
    ({"check": "keywords", "all_of": ["refund", "order"]}, "your order refund", None, True,
     ('found "refund", "order"',)),
    ({"check": "keywords", "all_of": ["refund", "order"]}, "your order", None, False,
     ('missing "refund"',)),
    ({"check": "keywords", "any_of": ["sorry", "apologise"]}, "We apologise.", None, True,
     ('"apologise"',)),
    ({"check": "keywords", "any_of": ["sorry", "apologise"]}, "Tough luck.", None, False,
     ('none of "sorry", "apologise"',)),
    ({"check": "keywords", "none_of": ["guarantee"]}, "We GUARANTEE it", None, True,
     ("no forbidden keyword",)),
    ({"check": "keywords", "none_of": ["guarantee"], "ignore_case": True}, "We GUARANTEE it",
     None, False, ('forbidden "guarantee" found',)),
    ({"check": "range", "min": 0, "max": 10}, "7.5", None, True, ("7.5", "within 0..10")),
    ({"check": "range", "min": 0, "max": 10}, 11, None, False, ("11", "outside 0..10")),
    ({"check": "range", "min": 0}, "seven", None, False, ('"seven" is not a number',)),
    ({"check": "range", "max": 1}, True, None, False, ("not a number",)),  # a bool is no number
    ({"check": "exact"}, " Paris ", "Paris", True, ('equals the reference "Paris"',)),
    ({"check": "exact"}, "paris", "Paris", False, ('"paris" differs from the reference "Paris"',)),
    ({"check": "exact", "ignore_case": True}, "paris", "Paris", True, ("equals",)),
]


@pytest.mark.parametrize(("params", "value", "reference", "passed", "words"), CASES)
def test_each_check_passes_fails_and_says_why(params: dict[str, Any], value: Any,
                                             reference: Any, passed: bool,
                                             words: tuple[str, ...]) -> None:
    rule = Rule(field="answer", **params)
    result = evaluate_rule(rule, {"answer": value, "other": "x"}, reference)
    assert result.passed is passed, result.reasoning
    assert result.reasoning.startswith(rule.check), result.reasoning
    for word in words:
        assert word in result.reasoning, (word, result.reasoning)


@pytest.mark.parametrize("document", [
    {"name": "Ada", "age": 36}, {"name": "Ada", "age": "36"}, {"age": 1}, [], {"name": 5, "age": 1},
    {"name": "Ada", "age": 1.5}, {"name": "Ada", "age": -3},
])
def test_json_schema_agrees_with_the_jsonschema_package(document: Any) -> None:
    # The check is the package's own validation; the verdict must be exactly its answer.
    rule = Rule(check="json-schema", field="answer", json_schema=PERSON)
    expected = jsonschema.Draft202012Validator(PERSON).is_valid(document)
    assert evaluate_rule(rule, {"answer": document}).passed is expected


def test_a_missing_field_is_a_key_error_for_the_caller_to_name() -> None:
    with pytest.raises(KeyError):
        evaluate_rule(Rule(check="length", field="answer", max=3), {"text": "abc"})


# Bad rules: the panel file's loader names the field and the fix in one sentence.
BAD_RULES: list[tuple[dict[str, Any], str]] = [
    ({"check": "regex", "field": "a", "pattern": "(unclosed"},
     r"pattern '\(unclosed' is not a valid regular expression \(missing \), unterminated "
     r"subpattern at position 0\); fix it"),
    ({"check": "regex", "field": "a"}, "a regex rule needs a pattern"),
    ({"check": "regexp", "field": "a", "pattern": "x"},
     r"critics\[0\]\.rule\.check: must be one of 'regex', 'no-regex', 'json-schema'"),
    ({"check": "length", "field": "a"}, "a length rule needs min, max or both"),
    ({"check": "length", "field": "a", "min": 5, "max": 2}, "min 5 is above max 2; swap them"),
    ({"check": "length", "field": "a", "max": -1}, "a length cannot be negative"),
    ({"check": "length", "field": "a", "max": 3, "pattern": "x"},
     "pattern applies to regex, no-regex rules, not to a length rule; remove it"),
    ({"check": "keywords", "field": "a"}, "needs at least one of all_of, any_of or none_of"),
    ({"check": "keywords", "field": "a", "all_of": ["ok", " "]}, "a keyword is empty"),
    ({"check": "json-schema", "field": "a"}, "a json-schema rule needs json_schema"),
    ({"check": "json-schema", "field": "a", "json_schema": {"type": "thing"}},
     "json_schema is not a valid JSON Schema"),
    ({"check": "range", "field": "a", "min": 1, "patern": "x"},
     r"critics\[0\]\.rule\.patern: unknown field; did you mean .pattern.\?"),
]


def _panel(critic: dict[str, Any], scale: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"scale": scale or {"kind": "yesno"}, "critics": [
        {"name": "check", "kind": "rule", **critic},
        {"name": "model", "model": "m", "prompt_template": "Judge {a}"}]}


@pytest.mark.parametrize(("rule", "message"), BAD_RULES)
def test_a_rule_that_cannot_work_is_refused_with_a_sentence(rule: dict[str, Any],
                                                             message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        panel_from_dict(_panel({"rule": rule}))


BAD_CRITICS: list[tuple[dict[str, Any], dict[str, Any] | None, str]] = [
    ({}, None, r"critics\[0\]: a rule critic needs a rule"),
    ({"rule": {"check": "exact", "field": "a"}}, None,
     r"critics\[0\]\.reference_field: an exact rule compares a with a reference; name the item"),
    ({"rule": {"check": "exact", "field": "a"}, "reference_field": "a"}, None,
     r"would compare a with itself"),
    ({"rule": {"check": "length", "field": "a", "max": 3}},
     {"kind": "nominal", "labels": ["good", "bad"]},
     r"critics\[0\]\.pass_label: a rule critic on a nominal scale needs the labels a passed and "
     r"a failed check give; choose from good, bad"),
    ({"rule": {"check": "length", "field": "a", "max": 3}, "pass_label": "good",
      "fail_label": "awful"}, {"kind": "nominal", "labels": ["good", "bad"]},
     r"critics\[0\]\.fail_label: 'awful' is not a label of the scale"),
    ({"rule": {"check": "length", "field": "a", "max": 3}, "pass_label": "yes"},
     {"kind": "score", "min": 0, "max": 1}, r"critics\[0\]\.pass_label: on a score scale"),
    ({"rule": {"check": "length", "field": "a", "max": 3}, "samples": 3, "temperature": 1},
     None, r"critics\[0\]\.samples: a rule critic gives the same verdict every time"),
    ({"rule": {"check": "length", "field": "a", "max": 3}, "function": "m:f"}, None,
     r"function: only a python critic names a function"),
]


@pytest.mark.parametrize(("critic", "scale", "message"), BAD_CRITICS)
def test_a_rule_critic_that_does_not_fit_the_panel_is_refused(
        critic: dict[str, Any], scale: dict[str, Any] | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        panel_from_dict(_panel(critic, scale))


def test_a_rule_critic_file_round_trips_without_a_model_or_prompt() -> None:
    from judging.panel.panel_files import dump_panel, load_panel, panel_hash

    panel = panel_from_dict(_panel({"rule": {"check": "length", "field": "a", "max": 3}}))
    text = dump_panel(panel)
    assert "sends no prompt" not in text and "model: rule" not in text
    again = load_panel(text)
    assert again == panel and panel_hash(again) == panel_hash(panel)
    assert again.critics[0].placeholders == ["a"]


def test_a_rule_on_a_field_the_dataset_lacks_is_named_as_a_rule() -> None:
    from judging.errors import PlaceholderError

    panel = panel_from_dict(_panel({"rule": {"check": "length", "field": "answer", "max": 3}}))
    with pytest.raises(PlaceholderError, match=r"Critic 'check': the rule checks \{answer\} but "
                                               r"the items have no field 'answer'"):
        panel.check_fields(["a"])


@pytest.mark.parametrize(("params", "said"), [
    ({"check": "regex", "pattern": "^a"}, "regex /^a/ on answer"),
    ({"check": "no-regex", "pattern": "x"}, "no-regex /x/ on answer"),
    ({"check": "length", "max": 3, "unit": "words"}, "length at most 3 words on answer"),
    ({"check": "range", "min": 1, "max": 2}, "range 1..2 on answer"),
    ({"check": "keywords", "none_of": ["x"]}, "keywords on answer"),
    ({"check": "json-schema", "json_schema": PERSON}, "json-schema on answer"),
    ({"check": "exact"}, "exact match with the reference on answer"),
])
def test_a_rule_describes_itself_in_a_line(params: dict[str, Any], said: str) -> None:
    assert Rule(field="answer", **params).describe() == said


def test_a_form_sending_every_default_is_not_taken_for_a_stray_parameter() -> None:
    rule = Rule(check="regex", field="a", pattern="x")
    assert Rule.model_validate(rule.model_dump(mode="json")) == rule
