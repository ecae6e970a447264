"""Reading a vendor's reply: a verdict on the scale, or a classified failure.

`parse_reply` takes an HTTP status and body and returns a `ParsedReply`, or raises the
`judging.errors.CallFailure` subclass that says whether a retry would help:

    RetryableCallError   429 and every other rate limit (whatever its wording: Gemini's
                         per-minute limit says "exceeded your current quota ... billing"),
                         408, 409, 5xx, 529, HTML from a proxy, an unknown error in a 200
    ItemCallError        400 context length (and other 4xx about this request)
      UnsupportedParameterError  400 naming a parameter or value the model refuses (the call
                         layer drops or renames it once and retries)
    CriticCallError      documented fatal codes only: 401 / 403 auth, 402, 404 model,
                         `insufficient_quota`, Anthropic's 400 "credit balance is too low",
                         Gemini's RESOURCE_EXHAUSTED whose quota id is a per-day one
    RefusalError         a `refusal` field, finish_reason=content_filter, Anthropic's
                         stop_reason=refusal, an OpenRouter moderation flag (403 with
                         `metadata.reasons`), or a refusal in prose with no label
    TruncatedError       finish_reason=length (Anthropic: max_tokens,
                         model_context_window_exceeded) with no usable answer
    ParseError           anything else that holds no verdict on the scale (raw text kept)

Replies are read by their shape: an OpenAI chat completion (`choices`), or an Anthropic
message (`"type": "message"`, content blocks, `judging.engine.anthropic_messages.read_message`), live
or from a batch result line alike.

This module never sleeps and never sends anything: retries live in `judging.engine.calls`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from judging.engine.anthropic_messages import is_message, read_message
from judging.errors import (
    CallFailure,
    CriticCallError,
    ItemCallError,
    ParseError,
    RefusalError,
    RetryableCallError,
    TruncatedError,
    UnsupportedParameterError,
)
from judging.panel.rubric import Marks, RubricConfig, marks_text, parse_marks, rubric_score
from judging.scales import Scale

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

_LABEL_KEYS = ("label", "kind", "verdict", "answer", "decision")
_SCORE_KEYS = ("score", "rating", "value")
_REASON_KEYS = ("reasoning", "rationale", "explanation", "reason")
_CONTEXT_MARKERS = (
    "context_length",
    "context length",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "reduce the length",
)
# Fatal for the critic, by the vendor's documented code or wording (never by words such as
# "quota" or "billing" alone: rate limits use them too).
_OUT_OF_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached",
                                 "billing_not_active"})
_CREDIT_TOO_LOW = "credit balance is too low"  # Anthropic: HTTP 400, every request alike
_RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded", "rate_limit_error", "resource_exhausted",
                               "tokens", "requests", "rate_limited"})
# "Please retry in 20.39s" (Gemini), "try again in 1.2s" / "in 450ms" / "in 7m12s" (OpenAI).
_RETRY_IN = re.compile(r"(?:retry|try again) in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)\b",
                       re.IGNORECASE)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)", re.IGNORECASE)
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# A parameter the model refuses, in each vendor's words (the name is group 1):
#   OpenAI: "Unsupported parameter: 'max_tokens' is not supported with this model. Use
#   'max_completion_tokens' instead." / "Unsupported value: 'temperature' does not support 0"
#   Anthropic: "`temperature` is deprecated for this model." / "temperature: may only be set
#   to 1 when thinking is enabled" / "top_p: Extra inputs are not permitted"
_UNSUPPORTED = (
    re.compile(r"unsupported (?:parameter|value): '([a-z_]+)'", re.IGNORECASE),
    re.compile(r"`([a-z_]+)` is (?:deprecated|not supported)", re.IGNORECASE),
    re.compile(r"^([a-z_]+): (?:extra inputs are not permitted|may only be set to)",
               re.IGNORECASE),
    re.compile(r"'([a-z_]+)' is not supported with this model", re.IGNORECASE),
)
_USE_INSTEAD = re.compile(r"use '([a-z_]+)' instead", re.IGNORECASE)
_REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry,|i can(?:'|no)?t|i cannot|i won'?t|i will not|"
    r"i am (?:not able|unable)|i'?m (?:not able|unable)|as an ai)",
    re.IGNORECASE,
)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_MAX_RAW = 2000  # characters of a bad reply quoted in a message (the full body is kept apart)


@dataclass(slots=True)
class ParsedReply:
    """A successful reply, reduced to what a `Verdict` needs."""

    label: str | None
    score: float | None
    confidence: float | None
    reasoning: str | None
    tokens_in: int | None
    tokens_out: int | None
    finish_reason: str | None
    marks: Marks = field(default_factory=dict)  # a rubric call's mark per criterion
    usage: Usage | None = None  # the reply's whole usage (cache and billed cost included)


def looks_like_html(text: str) -> bool:
    """True for an HTML page (a proxy's or load balancer's error page), not a JSON reply."""
    head = text[:300].lstrip().lower()  # slice first: never copy a whole large body
    return head.startswith(("<!doctype html", "<html")) or "<body" in head


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        parts = [str(error.get(k)) for k in ("message", "code", "type", "status") if error.get(k)]
        metadata = error.get("metadata")
        if isinstance(metadata, dict) and metadata.get("raw"):
            parts.append(str(metadata["raw"])[:300])
        return "; ".join(parts) or json.dumps(error)[:300]
    return str(error)[:300]


def _codes(error: Any) -> set[str]:
    """The machine-readable codes of an error object, lower case (`code`, `type`, `status`)."""
    if not isinstance(error, dict):
        return set()
    return {str(error.get(k)).lower() for k in ("code", "type", "status")
            if error.get(k) not in (None, "")}


def _retry_delay(error: Any, detail: str) -> float | None:
    """The wait an error body asks for: Gemini's `RetryInfo.retryDelay` ("20s") in `details`,
    else "retry in 20s" in the message. None when it names none."""
    details = error.get("details") if isinstance(error, dict) else None
    for entry in details if isinstance(details, list) else ():
        delay = entry.get("retryDelay") if isinstance(entry, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                pass
    match = _RETRY_IN.search(detail)
    if match:
        return sum(float(number) * _UNIT_S[unit.lower()]
                   for number, unit in _DURATION_PART.findall(match.group(1)))
    return None


def _daily_quota(error: Any) -> str | None:
    """The quota id of a Gemini per-day quota in a RESOURCE_EXHAUSTED error's `details`
    (`QuotaFailure.violations[].quotaId`, e.g. "GenerateRequestsPerDayPerProjectPerModel-
    FreeTier"), else None. Its wording is the per-minute limit's word for word ("exceeded your
    current quota ... retry in 20s"), but a day's quota comes back only at midnight Pacific
    time: waiting 20 s and retrying would be paid in retries on every item of the run."""
    details = error.get("details") if isinstance(error, dict) else None
    for entry in details if isinstance(details, list) else ():
        violations = entry.get("violations") if isinstance(entry, dict) else None
        for violation in violations if isinstance(violations, list) else ():
            quota_id = violation.get("quotaId") if isinstance(violation, dict) else None
            if isinstance(quota_id, str) and "perday" in quota_id.casefold():
                return quota_id
    return None


# "Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_
# requests, limit: 0, model: gemini-2.5-pro" (Gemini): the metric's limit, group 1.
_ZERO_LIMIT = re.compile(r"quota exceeded for metric: ([^,\s]+), limit: 0\b", re.IGNORECASE)


def _zero_quota(error: Any, detail: str) -> str | None:
    """The quota metric whose limit is 0 in a Gemini RESOURCE_EXHAUSTED error (message, or a
    QuotaFailure violation with `quotaValue` "0"), else None. Same words as the per-minute
    limit, but a limit of 0 means the model has no quota at all on this plan (the free tier
    does not include it): no wait ever helps, every item would pay its retries."""
    match = _ZERO_LIMIT.search(detail)
    if match:
        return match.group(1)
    details = error.get("details") if isinstance(error, dict) else None
    for entry in details if isinstance(details, list) else ():
        violations = entry.get("violations") if isinstance(entry, dict) else None
        for violation in violations if isinstance(violations, list) else ():
            if isinstance(violation, dict) and str(violation.get("quotaValue")) == "0":
                return str(violation.get("quotaMetric") or violation.get("quotaId") or "quota")
    return None


def _moderation_reasons(error: Any) -> str | None:
    """OpenRouter's moderation flag (HTTP 403, `metadata.reasons`): the reasons, else None."""
    if not isinstance(error, dict):
        return None
    metadata = error.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("reasons"), list):
        return ", ".join(str(r) for r in metadata["reasons"]) or "flagged"
    if "flagged" in str(error.get("message") or "").lower():
        return "flagged"
    return None


def _unsupported(error: Any, detail: str) -> UnsupportedParameterError | None:
    """A 400 that names a parameter or value the model refuses, with what to send instead."""
    message = str(error.get("message") or "") if isinstance(error, dict) else str(error or "")
    codes = _codes(error)
    name = error.get("param") if isinstance(error, dict) else None
    if not (isinstance(name, str) and codes & {"unsupported_parameter", "unsupported_value"}):
        name = None
        for pattern in _UNSUPPORTED:
            match = pattern.search(message.strip())
            if match:
                name = match.group(1)
                break
    if not name:
        return None
    instead = _USE_INSTEAD.search(message)
    return UnsupportedParameterError(
        f"the model refuses the parameter {name!r} (HTTP 400): {detail}",
        parameter=name, replacement=instead.group(1) if instead else None,
    )


def classify_error(status: int, error: Any, *, raw: str | None = None) -> CallFailure:
    """Turn a vendor error (HTTP status + the `error` object, if any) into a CallFailure.

    Read as the vendor means it: a critic is stopped only on a documented fatal code (bad key,
    unknown model, out of credit); a rate limit is retried whatever its wording; a moderation
    flag refuses one item; a refused parameter is for the call layer to adjust.

    Args:
        status: the HTTP status, or for an error inside a 200 the error's own numeric code
            when it has one (else 200).
        error: the decoded `error` value (dict or string), or None.
        raw: the reply body, kept on the failure.

    Returns:
        The failure to raise; `judging.engine.calls` decides about retries from its class.
    """
    detail = _error_text(error) if error is not None else (raw or "")[:300].strip()
    folded = detail.casefold()
    codes = _codes(error)
    said = f": {detail}" if detail else ""
    if codes & _OUT_OF_QUOTA_CODES:
        return CriticCallError(f"out of quota or credit (HTTP {status}){said}", raw=raw)
    if _CREDIT_TOO_LOW in folded:
        return CriticCallError(f"out of credit (HTTP {status}){said}", raw=raw)
    daily = _daily_quota(error)
    if daily is not None:
        return CriticCallError(
            f"the daily quota is used up (quota {daily}, HTTP {status}): it resets at midnight "
            "Pacific time; resume the run then, or raise the quota (a paid tier) on the "
            f"vendor's billing page{said}", raw=raw)
    zero = _zero_quota(error, detail)
    if zero is not None:
        return CriticCallError(
            f"the plan has no quota for this model (limit 0 on {zero}, HTTP {status}): the "
            "free tier does not include it; enable billing on the vendor's project, or "
            f"choose a model the plan includes{said}", raw=raw)
    if status == 429 or codes & _RATE_LIMIT_CODES:
        return RetryableCallError(f"rate limited (HTTP {status}){said}", raw=raw,
                                  retry_after=_retry_delay(error, detail), rate_limited=True)
    if any(marker in folded for marker in _CONTEXT_MARKERS):
        return ItemCallError(f"the prompt is too long for the model (HTTP {status}){said}", raw=raw)
    if status == 403:
        reasons = _moderation_reasons(error)
        if reasons is not None:
            return RefusalError(f"the vendor's moderation flagged this item ({reasons}){said}",
                                raw=raw)
    if status in (401, 403):
        return CriticCallError(f"the vendor refused the API key (HTTP {status}){said}", raw=raw)
    if status == 402:
        return CriticCallError(f"payment required (HTTP 402){said}", raw=raw)
    if status == 404:
        return CriticCallError(f"model or endpoint not found (HTTP 404){said}", raw=raw)
    if status in RETRYABLE_STATUSES or status >= 500:
        return RetryableCallError(f"HTTP {status}{said}", raw=raw)
    if status == 400:
        unsupported = _unsupported(error, detail)
        if unsupported is not None:
            unsupported.raw = raw
            return unsupported
    if 400 <= status < 500:
        return ItemCallError(f"the vendor rejected this request (HTTP {status}){said}", raw=raw)
    # An error object inside a 200 with no usable code: upstream hiccups (OpenRouter) are
    # usually transient, and the retry budget bounds the cost of being wrong.
    return RetryableCallError(f"error inside a {status} reply{said}", raw=raw)


def _embedded_error(data: Any, raw: str) -> CallFailure | None:
    """An error object inside an HTTP 200 body (OpenRouter) or a JSON array of them (Gemini)."""
    error: Any = None
    if isinstance(data, dict) and data.get("error") and not data.get("choices"):
        error = data["error"]
    elif isinstance(data, list):
        for entry in data:
            if isinstance(entry, dict) and entry.get("error"):
                error = entry["error"]
                break
        else:
            return ParseError("the reply is a JSON array, not a chat completion", raw=raw)
    if error is None:
        return None
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) and 100 <= code <= 599 else 200
    return classify_error(status, error, raw=raw)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def split_thinking(text: str) -> tuple[str, str | None]:
    """Split `text` at the LAST `</think>`: (the answer, the thinking before it or None).

    An opening `<think>` is optional (DeepSeek-R1 emits only the closing tag); JSON inside the
    thinking is never the answer.
    """
    if "</think>" not in text:
        return text, None
    thinking, _, answer = text.rpartition("</think>")
    thinking = thinking.replace("<think>", "").strip()
    return answer, thinking or None


def _objects_in(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text`, in order (fenced blocks first)."""
    found: list[dict[str, Any]] = []
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        stripped = chunk.strip()
        try:
            whole = json.loads(stripped)
        except ValueError:
            whole = None
        if isinstance(whole, dict):
            found.append(whole)
            continue
        index = stripped.find("{")
        while index != -1:
            try:
                value, end = decoder.raw_decode(stripped, index)
            except ValueError:
                index = stripped.find("{", index + 1)
                continue
            if isinstance(value, dict):
                found.append(value)
            index = stripped.find("{", end)
    return found


def _folded(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with its keys casefolded (done once per object, then picked from)."""
    return {str(k).casefold(): v for k, v in obj.items()}


def _pick(folded: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = folded.get(key)
        if value is not None:
            return value
    return None


def normalize_confidence(value: Any) -> float | None:
    """A confidence in 0..1, or None when it cannot be read as one.

    Values in 0..1 are kept. Values in (1, 100] are read as percentages (85 -> 0.85), as are
    strings like "85%". Anything else (negative, above 100, words like "high") is None: a made-up
    number would bias confidence-weighted votes.
    """
    if isinstance(value, bool) or value is None:
        return None
    percent = False
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            percent, text = True, text[:-1].strip()
        try:
            value = float(text)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or math.isnan(value):
        return None
    number = float(value)
    if percent or number > 1:
        number /= 100.0
    return number if 0.0 <= number <= 1.0 else None


@dataclass(frozen=True, slots=True)
class Usage:
    """What one reply says it used: every input token (cached ones included), the output
    tokens, how many input tokens were read from / written to the vendor's prompt cache, and
    the cost the vendor billed when it reports one (OpenRouter's `usage.cost`)."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    cached: int | None = None
    cache_write: int | None = None
    cost: float | None = None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(data: dict[str, Any]) -> Usage:
    """The usage of a chat completion (OpenAI's names, Anthropic's as a fallback)."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return Usage()
    if is_message(data):
        view = read_message(data)
        return Usage(view["tokens_in"], view["tokens_out"], view["tokens_cached"],
                     view["tokens_cache_write"])
    tokens_in = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    tokens_out = _int(usage.get("completion_tokens", usage.get("output_tokens")))
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cost = usage.get("cost")
    cached = _int(details.get("cached_tokens"))
    if cached is None:  # DeepSeek's own name for its context cache
        cached = _int(usage.get("prompt_cache_hit_tokens"))
    return Usage(
        tokens_in, tokens_out, cached, _int(details.get("cache_write_tokens")),
        float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
    )


def reply_usage(body: str) -> Usage:
    """What a reply body reports in `usage` (unknown fields None). For replies that hold no
    verdict but were billed all the same."""
    try:
        data = json.loads(body)
    except ValueError:
        return Usage()
    return _usage(data) if isinstance(data, dict) else Usage()


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_RAW else text[:_MAX_RAW] + "..."


def parse_reply(status: int, body: str, scale: Scale | RubricConfig | None) -> ParsedReply:
    """Read one chat-completions reply.

    Three jobs, one function each: the HTTP status and body into a JSON object or a classified
    failure (`_reply_object`), the vendor's envelope into the model's text (`_unwrap`), and
    that text into a verdict, by what the call asked for (`_free_text`, `_rubric_verdict`,
    `_scale_verdict`).

    Args:
        status: the HTTP status code.
        body: the reply body as text.
        scale: the panel's scale; the verdict is normalised onto it. None for a free-text step
            (a compound critic's reasoning or argument): its text is the `reasoning`. A rubric
            for a call that marks every criterion (`judging.panel.rubric`): the marks, and their
            score.

    Returns:
        The label (or score on numeric scales), confidence, reasoning, tokens and finish reason.

    Raises:
        CallFailure: a subclass saying what went wrong (see the module docstring). ParseError
            keeps the model's text in `raw`.
    """
    data = _reply_object(status, body)
    reply = _unwrap(data, body)
    if not reply.answer.strip():
        if reply.finish_reason == "length":
            raise TruncatedError(
                "the reply was cut off (finish_reason=length) before any answer: raise "
                "max_tokens (thinking may have used the budget)",
                raw=reply.content or None,
            )
        raise ParseError(
            f"the reply content is blank (finish_reason={reply.finish_reason})",
            raw=reply.content or None,
        )
    if scale is None:
        return _free_text(reply)
    if isinstance(scale, RubricConfig):
        return _rubric_verdict(reply, scale)
    return _scale_verdict(reply, scale)


def _reply_object(status: int, body: str) -> dict[str, Any]:
    """The reply's JSON object, or the failure its status and body say (an HTTP error, an
    HTML page, a body that is not JSON, an error inside a 200)."""
    if looks_like_html(body):
        raise RetryableCallError(
            f"HTTP {status} with an HTML page instead of JSON (a proxy or gateway error)",
            raw=body,
        )
    try:
        data = json.loads(body) if body.strip() else None
    except ValueError:
        data = None
        if status < 400:
            raise RetryableCallError(
                f"HTTP {status} reply is not JSON: {_clip(body.strip())[:200]!r}", raw=body
            ) from None
    if status >= 400 or status < 200:
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(data, list):
            error = next((e.get("error") for e in data if isinstance(e, dict)), None)
        raise classify_error(status, error, raw=body)
    if data is None:
        raise RetryableCallError(f"HTTP {status} with an empty body", raw=body)
    embedded = _embedded_error(data, body)
    if embedded is not None:
        raise embedded
    if not isinstance(data, dict):
        raise ParseError("the reply is not a JSON object", raw=body)
    return data


@dataclass(frozen=True, slots=True)
class _Reply:
    """What the model said, out of its vendor's envelope: the content as sent, the answer
    (what follows the last `</think>`), the reasoning it gave beside the answer, how it
    finished, and the usage."""

    content: str
    answer: str
    side_reasoning: str | None
    finish_reason: str | None
    usage: Usage

    def parsed(self, **verdict: Any) -> ParsedReply:
        return ParsedReply(**verdict, tokens_in=self.usage.tokens_in,
                           tokens_out=self.usage.tokens_out,
                           finish_reason=self.finish_reason, usage=self.usage)


def _unwrap(data: dict[str, Any], body: str) -> _Reply:
    """The model's text out of an Anthropic message or an OpenAI chat completion; a refusal
    the envelope itself states (a `refusal` field, a content filter, stop_reason=refusal)
    is raised here, before any text is read as a label."""
    if is_message(data):  # Anthropic's Messages API, live or from a batch
        view = read_message(data)
        content, finish_reason = view["content"], view["finish_reason"]
        side_reasoning: Any = view["reasoning"]
        if finish_reason == "refusal":
            # The model stopped to decline: whatever text came before is cut where it stopped
            # and may even parse to a label it never gave. A refusal, never a label.
            raise RefusalError("the model refused (stop_reason=refusal)", raw=content or None)
    else:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ParseError("the reply has no choices", raw=body)
        choice = choices[0]
        message = choice.get("message") or {}
        finish_reason = choice.get("finish_reason")

        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():
            raise RefusalError(f"the model refused: {_clip(refusal.strip())}", raw=refusal)

        content = _content_text(message.get("content"))
        if finish_reason == "content_filter":
            # The vendor's filter withheld the answer: whatever content came is cut where the
            # filter struck (blank, or JSON that may parse to a label the model never finished
            # giving). A refusal, never a label and never "no JSON".
            raise RefusalError(
                "the vendor's content filter withheld the answer (finish_reason=content_filter)",
                raw=content or None,
            )
        side_reasoning = message.get("reasoning_content") or message.get("reasoning")
    answer, thinking = split_thinking(content)
    if not isinstance(side_reasoning, str) or not side_reasoning.strip():
        side_reasoning = None
    return _Reply(content=content, answer=answer, side_reasoning=side_reasoning or thinking,
                  finish_reason=finish_reason if isinstance(finish_reason, str) else None,
                  usage=_usage(data))


def _free_text(reply: _Reply) -> ParsedReply:
    """A free-text step (a compound critic's reasoning or argument): its text is the reply."""
    if reply.finish_reason == "length":
        raise TruncatedError(
            "the reply was cut off (finish_reason=length): raise max_tokens", raw=reply.content
        )
    return reply.parsed(label=None, score=None, confidence=None,
                        reasoning=reply.answer.strip())


def _rubric_verdict(reply: _Reply, rubric: RubricConfig) -> ParsedReply:
    """A rubric call: a mark per criterion, and their score."""
    if reply.finish_reason == "length":
        raise TruncatedError(
            "the reply was cut off (finish_reason=length) before every criterion was "
            "marked: raise max_tokens", raw=reply.content)
    marks, said_confidence = parse_marks(reply.answer, rubric)
    return reply.parsed(
        label=None, score=rubric_score({c: m for c, (m, _) in marks.items()}, rubric),
        confidence=normalize_confidence(said_confidence), reasoning=marks_text(marks),
        marks=marks)


def _scale_verdict(reply: _Reply, scale: Scale) -> ParsedReply:
    """A label (or score) on the scale: from the first JSON object that holds one, else a
    bare label; prose with neither is a refusal, a truncation or a parse failure."""
    answer, content = reply.answer, reply.content
    confidence: float | None = None
    reasoning: str | None = None
    objects = [_folded(o) for o in _objects_in(answer)]
    chosen = next(
        (o for o in objects if _pick(o, _LABEL_KEYS + _SCORE_KEYS) is not None),
        None,
    )
    try:
        if chosen is not None:
            keys = _SCORE_KEYS + _LABEL_KEYS if scale.is_numeric else _LABEL_KEYS + _SCORE_KEYS
            value = scale.normalize(_pick(chosen, keys))
            confidence = normalize_confidence(_pick(chosen, ("confidence",)))
            found_reason = _pick(chosen, _REASON_KEYS)
            reasoning = str(found_reason) if found_reason not in (None, "") else None
        else:
            # A bare label ("KEEP") is a verdict too; prose is not.
            value = scale.normalize(answer.strip())
    except ParseError as error:
        if chosen is None and reply.finish_reason == "length":
            raise TruncatedError(
                "the reply was cut off (finish_reason=length) before a complete answer",
                raw=content,
            ) from None
        if chosen is None and _REFUSAL.search(answer):
            raise RefusalError(f"the model refused: {_clip(answer.strip())}", raw=content) from None
        if chosen is None:
            raise ParseError(
                f"no JSON verdict in the reply: {_clip(answer.strip())[:200]!r}", raw=content
            ) from None
        raise ParseError(str(error), raw=content) from None
    score, label = (value, None) if isinstance(value, float) else (None, value)
    return reply.parsed(label=label, score=score, confidence=confidence,
                        reasoning=reasoning or reply.side_reasoning)
