"""Reply shapes real vendors send, and how each one is read or classified."""

from __future__ import annotations

import json

import pytest

from judging.engine.parsing import (
    normalize_confidence,
    parse_reply,
    reply_usage,
    split_thinking,
)
from judging.errors import (
    CriticCallError,
    ItemCallError,
    ParseError,
    RefusalError,
    RetryableCallError,
    TruncatedError,
)
from judging.scales import Scale
from tests.fixtures_calls import chat_body

LABELS = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])
SCORES = Scale(kind="score", min=0, max=1)


def reply(content: str | None, **kwargs: object) -> str:
    return json.dumps(chat_body(content, **kwargs))


@pytest.mark.parametrize("key", ["label", "kind", "verdict", "Label"])
def test_label_under_any_accepted_key(key: str) -> None:
    parsed = parse_reply(200, reply(json.dumps({key: "reject", "confidence": 0.7})), LABELS)
    assert parsed.label == "REJECT"
    assert parsed.confidence == 0.7


@pytest.mark.parametrize("key", ["reasoning", "rationale"])
def test_reasoning_under_either_key(key: str) -> None:
    parsed = parse_reply(200, reply(json.dumps({"label": "KEEP", key: "coherent"})), LABELS)
    assert parsed.reasoning == "coherent"


def test_tokens_and_finish_reason_are_read() -> None:
    parsed = parse_reply(200, reply('{"label": "KEEP"}', usage=(123, 45)), LABELS)
    assert (parsed.tokens_in, parsed.tokens_out, parsed.finish_reason) == (123, 45, "stop")


def test_score_scale_reads_score_key() -> None:
    parsed = parse_reply(200, reply('{"score": 0.75, "label": "meh"}'), SCORES)
    assert parsed.score == 0.75 and parsed.label is None


def test_fenced_json_is_a_verdict() -> None:
    content = 'Here you go:\n```json\n{"label": "SPLIT", "confidence": 0.6}\n```\nThanks.'
    assert parse_reply(200, reply(content), LABELS).label == "SPLIT"


def test_prose_before_and_after_the_object() -> None:
    content = 'I think {"label": "MERGE", "reasoning": "dup of {x}"} is right.'
    parsed = parse_reply(200, reply(content), LABELS)
    assert parsed.label == "MERGE"
    assert parsed.reasoning == "dup of {x}"


def test_only_what_follows_the_last_think_counts() -> None:
    # The decoy inside the thinking must not win (a first-object parser says REJECT).
    content = '<think>maybe {"label": "REJECT"}</think>{"label": "KEEP"}'
    parsed = parse_reply(200, reply(content), LABELS)
    assert parsed.label == "KEEP"
    assert parsed.reasoning == 'maybe {"label": "REJECT"}'  # thinking kept as reasoning


def test_closing_think_without_opening_tag() -> None:
    content = 'hmm {"label": "REJECT"} no wait </think> {"label": "SPLIT"}'
    assert parse_reply(200, reply(content), LABELS).label == "SPLIT"


def test_two_think_blocks_use_the_last() -> None:
    content = '<think>a</think>{"label":"REJECT"}<think>b</think>{"label":"MERGE"}'
    assert parse_reply(200, reply(content), LABELS).label == "MERGE"


def test_split_thinking_without_tags() -> None:
    assert split_thinking("plain") == ("plain", None)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_side_reasoning_kept_when_json_has_none(field: str) -> None:
    body = reply('{"label": "KEEP"}', **{field: "long chain of thought"})
    assert parse_reply(200, body, LABELS).reasoning == "long chain of thought"


def test_json_reasoning_wins_over_side_reasoning() -> None:
    body = reply('{"label": "KEEP", "reasoning": "short"}', reasoning_content="long")
    assert parse_reply(200, body, LABELS).reasoning == "short"


def test_bare_label_is_accepted() -> None:
    assert parse_reply(200, reply("  keep. "), LABELS).label == "KEEP"


def test_error_object_inside_200_is_not_a_verdict() -> None:
    body = json.dumps({"error": {"message": "Upstream overloaded", "code": 502}})
    with pytest.raises(RetryableCallError, match="Upstream overloaded"):
        parse_reply(200, body, LABELS)


def test_error_array_inside_200_as_gemini_sends() -> None:
    body = json.dumps(
        [{"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}]
    )
    with pytest.raises(RetryableCallError, match="Resource exhausted"):
        parse_reply(200, body, LABELS)


def test_error_inside_200_with_auth_code_is_fatal_for_critic() -> None:
    body = json.dumps({"error": {"message": "No auth credentials found", "code": 401}})
    with pytest.raises(CriticCallError):
        parse_reply(200, body, LABELS)


def test_blank_content_with_length_is_truncated() -> None:
    body = reply("", finish_reason="length", reasoning_content="thinking ate the budget")
    with pytest.raises(TruncatedError, match="max_tokens"):
        parse_reply(200, body, LABELS)


def test_null_content_with_only_thinking_and_length_is_truncated() -> None:
    with pytest.raises(TruncatedError):
        parse_reply(200, reply("<think>still thinking...</think>", finish_reason="length"), LABELS)


def test_json_cut_midway_with_length_is_truncated() -> None:
    with pytest.raises(TruncatedError):
        parse_reply(200, reply('{"label": "KE', finish_reason="length"), LABELS)


def test_blank_content_otherwise_is_parse_fail() -> None:
    with pytest.raises(ParseError, match="blank"):
        parse_reply(200, reply(None), LABELS)


def test_refusal_field_is_a_refusal() -> None:
    with pytest.raises(RefusalError, match="cannot help"):
        parse_reply(200, reply(None, refusal="I cannot help with that."), LABELS)


@pytest.mark.parametrize(
    ("content", "scale"),
    [(None, LABELS), ("", LABELS), ('{"label": "KEEP", "reasoning": "it is', LABELS),
     ('{"label": "KEEP"}', LABELS), ('{"score": 0.9', SCORES), ("KEEP", LABELS)],
    ids=["null", "blank", "partial-json", "complete-json", "partial-score", "bare-label"],
)
def test_content_filter_is_a_refusal_never_a_verdict(content: str | None, scale: Scale) -> None:
    # The vendor's filter withheld the answer: whatever came is cut where it struck.
    with pytest.raises(RefusalError, match="content_filter") as caught:
        parse_reply(200, reply(content, finish_reason="content_filter"), scale)
    assert caught.value.raw == (content or None)


def test_refusal_in_prose_without_label() -> None:
    with pytest.raises(RefusalError):
        parse_reply(200, reply("I'm sorry, but I can't evaluate this content."), LABELS)


def test_label_outside_scale_is_parse_fail_keeping_raw_text() -> None:
    content = '{"label": "MAYBE", "confidence": 0.5}'
    with pytest.raises(ParseError, match="MAYBE") as caught:
        parse_reply(200, reply(content), LABELS)
    assert caught.value.raw == content


def test_prose_without_verdict_is_parse_fail_keeping_raw_text() -> None:
    with pytest.raises(ParseError) as caught:
        parse_reply(200, reply("The class seems reasonable overall."), LABELS)
    assert caught.value.raw == "The class seems reasonable overall."


def test_score_outside_range_is_parse_fail() -> None:
    with pytest.raises(ParseError, match="outside"):
        parse_reply(200, reply('{"score": 7}'), SCORES)


def test_html_from_a_proxy_is_retryable() -> None:
    html = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    with pytest.raises(RetryableCallError, match="HTML"):
        parse_reply(502, html, LABELS)
    with pytest.raises(RetryableCallError, match="HTML"):
        parse_reply(200, html, LABELS)


@pytest.mark.parametrize(
    ("status", "error", "expected"),
    [
        (400, {"message": "maximum context length is 8192 tokens",
               "code": "context_length_exceeded"}, ItemCallError),
        (401, {"message": "Incorrect API key provided"}, CriticCallError),
        (403, {"message": "forbidden"}, CriticCallError),
        (404, {"message": "The model does not exist"}, CriticCallError),
        (429, {"message": "You exceeded your current quota", "type": "insufficient_quota"},
         CriticCallError),
        (429, {"message": "Rate limit reached"}, RetryableCallError),
        (500, {"message": "server error"}, RetryableCallError),
        (529, {"message": "overloaded"}, RetryableCallError),
        (408, None, RetryableCallError),
        (422, {"message": "bad parameter"}, ItemCallError),
    ],
)
def test_http_errors_are_classified(status: int, error: object, expected: type) -> None:
    body = json.dumps({"error": error}) if error is not None else ""
    with pytest.raises(expected):
        parse_reply(status, body, LABELS)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(0.8, 0.8), (1, 1.0), (85, 0.85), ("85%", 0.85), ("0.3", 0.3), (-1, None), (250, None),
     ("high", None), (True, None), (None, None)],
)
def test_confidence_normalisation(raw: object, expected: float | None) -> None:
    result = normalize_confidence(raw)
    if expected is None:
        assert result is None
    else:
        assert result == pytest.approx(expected)


def test_confidence_of_85_in_a_reply_means_85_percent() -> None:
    parsed = parse_reply(200, reply('{"label": "KEEP", "confidence": 85}'), LABELS)
    assert parsed.confidence == pytest.approx(0.85)


def test_reply_usage_reads_billed_tokens_of_any_reply() -> None:
    refusal = json.dumps(chat_body(None, refusal="no", usage=(70, 3)))
    def tokens(body: str) -> tuple[int | None, int | None]:
        usage = reply_usage(body)
        return usage.tokens_in, usage.tokens_out

    assert tokens(refusal) == (70, 3)
    assert tokens(json.dumps(chat_body(usage=None))) == (None, None)
    assert tokens('{"usage": {"input_tokens": 9, "output_tokens": 4}}') == (9, 4)
    assert tokens("<html>bad gateway</html>") == (None, None)
    assert tokens('[{"error": {"code": 429}}]') == (None, None)
