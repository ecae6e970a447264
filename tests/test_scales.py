"""Scales: normalising replies, rejecting values off the scale, measurement levels."""

from __future__ import annotations

import math

import pytest

from judging.errors import CallFailure, ConfigError, ParseError
from judging.scales import Scale

TAXONOMY = Scale(
    kind="nominal",
    labels=["KEEP", "REJECT", "SPLIT", "MERGE"],
    synonyms={"drop": "REJECT", "combine": "MERGE"},
)


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("KEEP", "KEEP"),
        ("keep", "KEEP"),
        ("  Keep \n", "KEEP"),
        ('"split"', "SPLIT"),
        ("merge.", "MERGE"),
        ("**REJECT**", "REJECT"),
        ("Drop", "REJECT"),  # declared synonym, any case
        (" COMBINE ", "MERGE"),
    ],
)
def test_nominal_normalises_case_whitespace_quotes_and_synonyms(raw: str, label: str) -> None:
    assert TAXONOMY.normalize(raw) == label


@pytest.mark.parametrize("raw", ["KEEPS", "maybe", "", "KEEP or REJECT", None, 3, ["KEEP"]])
def test_values_off_the_scale_are_parse_failures_that_keep_the_raw_text(raw: object) -> None:
    with pytest.raises(ParseError) as caught:
        TAXONOMY.normalize(raw)
    assert caught.value.kind == "parse_fail"
    assert isinstance(caught.value, CallFailure)
    assert caught.value.raw is not None
    if isinstance(raw, str) and raw:
        assert caught.value.raw == raw
    assert "KEEP, REJECT, SPLIT, MERGE" in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("yes", "yes"),
        ("YES", "yes"),
        ("y", "yes"),
        ("true", "yes"),
        (True, "yes"),
        ("pass", "yes"),
        (1, "yes"),
        ("no", "no"),
        ("N", "no"),
        ("false", "no"),
        (False, "no"),
        ("fail", "no"),
        (0, "no"),
    ],
)
def test_yes_no(raw: object, label: str) -> None:
    scale = Scale(kind="yesno")
    assert scale.labels == ["yes", "no"]
    assert scale.normalize(raw) == label


def test_yes_no_rejects_maybe() -> None:
    with pytest.raises(ParseError, match="maybe"):
        Scale(kind="yesno").normalize("maybe")


def test_likert_labels_and_numbers() -> None:
    scale = Scale(kind="likert", min=1, max=5)
    assert scale.labels == ["1", "2", "3", "4", "5"]
    assert scale.normalize(4) == "4"
    assert scale.normalize(4.0) == "4"
    assert scale.normalize(" 2 ") == "2"
    for bad in (0, 6, 3.5, "five"):
        with pytest.raises(ParseError):
            scale.normalize(bad)
    assert scale.rank("1") < scale.rank("5")


@pytest.mark.parametrize(("raw", "value"), [(0.25, 0.25), ("0.75", 0.75), (1, 1.0), (" 0 ", 0.0)])
def test_score_range(raw: object, value: float) -> None:
    scale = Scale(kind="score", min=0, max=1)
    result = scale.normalize(raw)
    assert result == value
    assert isinstance(result, float)


@pytest.mark.parametrize("raw", [1.5, -0.1, "high", "nan", math.inf, True])
def test_score_out_of_range_or_not_a_number(raw: object) -> None:
    with pytest.raises(ParseError) as caught:
        Scale(kind="score", min=0, max=1).normalize(raw)
    assert caught.value.raw == str(raw)


@pytest.mark.parametrize(
    ("scale", "level", "numeric"),
    [
        (Scale(kind="nominal", labels=["a", "b"]), "nominal", False),
        (Scale(kind="yesno"), "nominal", False),
        (Scale(kind="ordinal", labels=["low", "high"]), "ordinal", False),
        (Scale(kind="likert", min=1, max=7), "ordinal", False),
        (Scale(kind="score", min=0, max=10), "interval", True),
    ],
)
def test_measurement_levels(scale: Scale, level: str, numeric: bool) -> None:
    assert scale.level == level
    assert scale.is_numeric is numeric


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "nominal", "labels": ["only"]}, "at least two labels"),
        ({"kind": "nominal", "labels": ["Keep", "keep "]}, "must differ beyond case"),
        ({"kind": "likert", "min": 1}, "needs integer 'min' and 'max'"),
        ({"kind": "likert", "min": 1.5, "max": 5}, "must be integers"),
        ({"kind": "score", "min": 1, "max": 1}, "'min' < 'max'"),
        (
            {"kind": "nominal", "labels": ["a", "b"], "synonyms": {"x": "c"}},
            "not one of the labels",
        ),
    ],
)
def test_bad_scales(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Scale(**fields)  # type: ignore[arg-type]


def test_describe_tells_the_model_what_to_answer() -> None:
    assert TAXONOMY.describe() == "exactly one of: KEEP, REJECT, SPLIT, MERGE"
    assert Scale(kind="score", min=0, max=1).describe() == "a number from 0 to 1"
