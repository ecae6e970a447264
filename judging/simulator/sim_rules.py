"""The parameters the simulator refuses, the way the real vendors refuse them.

This table is written from the vendors' own documentation and the error bodies they are seen
to send, and deliberately NOT from `judging.panel.request_rules`: the simulator is the oracle the
client is tested against, so sharing the client's table would make every test circular.

    OpenAI reasoning models (o1, o3, o3-mini, o4-mini, gpt-5, gpt-5.1, gpt-5-mini, gpt-5.2 ...;
    not gpt-5-chat-latest) on /v1/chat/completions:
        `max_tokens` -> 400 unsupported_parameter (they take `max_completion_tokens`);
        `temperature` / `top_p` other than 1 -> 400 unsupported_value;
        `logprobs` -> 400 unsupported_parameter.
    Claude Opus 4.7 and later (any claude-{opus,sonnet,haiku}-X-Y with (X, Y) >= (4, 7)):
        `temperature` (and `top_p`, `top_k`) -> 400 "... is deprecated for this model.", in
        Anthropic's error shape on /v1/messages, OpenAI's on the compatibility route.
    Every Claude on /v1/messages: `max_tokens`, `model`, `messages` required; no "system" role
    inside `messages`; no field the Messages API does not define; with thinking on,
    `temperature` only 1 and `budget_tokens` at least 1024 and below `max_tokens`; from 4.7
    on, thinking only as `{"type": "adaptive"}`, which came with 4.6.
    `deepseek-reasoner`: `logprobs` / `top_logprobs` -> 400.

A model id with a maker prefix (`openai/o3`, OpenRouter's form) is not refused: OpenRouter
maps or drops parameters itself.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

__all__ = [
    "anthropic_error",
    "chat_refusal",
    "claude_refuses_sampling",
    "claude_version",
    "is_openai_reasoning",
    "messages_refusal",
]

Refusal = tuple[int, dict[str, Any]]

# o1, o3, o3-mini, o4-mini-high, gpt-5, gpt-5.1, gpt-5-mini, gpt-5.2-pro ...; gpt-5-chat-latest
# and gpt-5.1-chat-latest are the non-reasoning chat models and take temperature.
_OPENAI_REASONING = re.compile(r"^(?:o\d+(?:-[a-z0-9.-]+)?|gpt-5(?:\.\d+)?(?:-(?!chat)[a-z0-9.-]+)?)$")
# claude-opus-4-7, claude-opus-4.7, claude-sonnet-5, claude-opus-4-7-20260416 (a date is not a
# minor version: at most two digits are).
_CLAUDE = re.compile(r"^claude-(?:opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?=$|[-@.])")

# The top-level fields of a Messages API request (anthropic SDK 2.14's MessageCreateParams,
# plus the sampling fields older models take); any other field is "Extra inputs are not
# permitted" (https://docs.claude.com/en/api/messages).
_MESSAGES_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
    "temperature", "top_p", "top_k", "thinking", "tools", "tool_choice", "service_tier",
    "container", "cache_control", "inference_geo", "output_config", "speed", "diagnostics",
    "context_management", "mcp_servers",
})


def is_openai_reasoning(model: str) -> bool:
    """True for OpenAI's reasoning families (o-series, gpt-5.x except the -chat models)."""
    return bool(_OPENAI_REASONING.match(model.strip().lower()))


def claude_version(model: str) -> tuple[int, int] | None:
    """(major, minor) of a claude-{opus,sonnet,haiku}-X-Y name, None for any other name."""
    match = _CLAUDE.match(model.strip().lower())
    return None if match is None else (int(match.group(1)), int(match.group(2) or 0))


def claude_refuses_sampling(model: str) -> bool:
    """True for Claude Opus 4.7 and every later Claude (4.7+, 5.x), which refuse temperature."""
    version = claude_version(model)
    return version is not None and version >= (4, 7)


def _number(value: Any) -> str:
    # OpenAI quotes the value as sent: 0 -> "0", 0.0 -> "0.0", 0.2 -> "0.2".
    return repr(value) if isinstance(value, (int, float)) else str(value)


def _openai_error(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param,
                      "code": code}}


def _unsupported_parameter(name: str, hint: str = "") -> Refusal:
    # Seen verbatim from api.openai.com, e.g.
    # https://github.com/griptape-ai/ComfyUI-Griptape/issues/312 (gpt-5, max_tokens) and
    # https://github.com/ITSpecialist111/ai_automation_suggester/issues/38 (o1-preview).
    message = f"Unsupported parameter: '{name}' is not supported with this model.{hint}"
    return 400, _openai_error(message, name, "unsupported_parameter")


def _unsupported_value(name: str, value: Any) -> Refusal:
    # Seen verbatim from api.openai.com, e.g.
    # https://github.com/gabrii/Cursor-Azure-GPT-5/issues/33 (gpt-5, temperature 0) and
    # https://github.com/OpenHands/OpenHands/issues/4131 (o1-mini, temperature 0.0).
    message = (f"Unsupported value: '{name}' does not support {_number(value)} with this "
               "model. Only the default (1) value is supported.")
    return 400, _openai_error(message, name, "unsupported_value")


def _not_default(value: Any) -> bool:
    return value is not None and value != 1


def chat_refusal(request: dict[str, Any]) -> Refusal | None:
    """The 400 a vendor answers this chat-completions request with, or None if it takes it."""
    model = str(request.get("model") or "").strip().lower()
    if is_openai_reasoning(model):
        if request.get("max_tokens") is not None:
            return _unsupported_parameter("max_tokens",
                                          " Use 'max_completion_tokens' instead.")
        for name in ("temperature", "top_p"):
            if _not_default(request.get(name)):
                return _unsupported_value(name, request[name])
        if request.get("logprobs"):
            return _unsupported_parameter("logprobs")
        return None
    if claude_refuses_sampling(model):
        # Anthropic's OpenAI-compatibility endpoint passes the Messages API's refusal on in
        # OpenAI's error shape (https://docs.claude.com/en/api/openai-sdk).
        for name in ("temperature", "top_p"):
            if request.get(name) is not None:
                return 400, _openai_error(f"`{name}` is deprecated for this model.", name, None)
        return None
    if model == "deepseek-reasoner":
        # DeepSeek's reasoning-model guide: "setting logprobs or top_logprobs will cause an
        # error" (https://api-docs.deepseek.com/guides/reasoning_model); the wording follows
        # DeepSeek's refusal of other parameters for this model, seen in
        # https://github.com/lollipopkit/flutter_gpt_box/issues/213.
        for name in ("logprobs", "top_logprobs"):
            if request.get(name):
                return 400, _openai_error(
                    f"deepseek-reasoner does not support the parameter `{name}`", None,
                    "invalid_request_error")
    return None


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's error body (https://docs.claude.com/en/api/errors):
    `{"type": "error", "error": {"type": ..., "message": ...}, "request_id": "req_..."}`."""
    return {"type": "error", "error": {"type": kind, "message": message},
            "request_id": f"req_sim{uuid.uuid4().hex[:20]}"}


def _invalid(message: str) -> Refusal:
    return 400, anthropic_error("invalid_request_error", message)


def messages_refusal(request: Any, headers: dict[str, str] | None = None) -> Refusal | None:
    """The error Anthropic answers this `POST /v1/messages` request with, or None.

    Args:
        request: the parsed JSON body.
        headers: the request's headers, lower-cased names; None for a batch's params (the
            batch request itself carried them).
    """
    if headers is not None:
        # https://docs.claude.com/en/api/overview: a key and the API version on every
        # request. The key comes as `x-api-key`, or (as the anthropic SDK 2.x sends an
        # api_key) as `Authorization: Bearer`.
        if not headers.get("x-api-key") and not headers.get("authorization"):
            return 401, anthropic_error("authentication_error", "x-api-key header is required")
        if not headers.get("anthropic-version"):
            return _invalid("anthropic-version: header is required")
    if not isinstance(request, dict):
        return _invalid("The request body is not valid JSON: expected an object")
    # "max_tokens: Field required" (with request_id) and "The request body is not valid
    # JSON: ..." are what api.anthropic.com answers, recorded with curl in a public course on
    # https://platform.claude.com/docs/en/api/errors.
    for name in ("model", "messages", "max_tokens"):
        if request.get(name) is None:
            return _invalid(f"{name}: Field required")
    extra = sorted(set(request) - _MESSAGES_FIELDS)
    if extra:
        return _invalid(f"{extra[0]}: Extra inputs are not permitted")
    messages = request["messages"]
    if not isinstance(messages, list) or not messages:
        return _invalid("messages: at least one message is required")
    for number, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "system":
            return _invalid(
                f'messages.{number}.role: Unexpected role "system". The Messages API accepts '
                'a top-level `system` parameter, not "system" as an input message role.')
        if role not in ("user", "assistant"):
            return _invalid(f"messages.{number}.role: Input should be 'user' or 'assistant'")
    model = str(request["model"]).strip().lower()
    if claude_refuses_sampling(model):
        # Anthropic's reply to Opus 4.7 with temperature, seen verbatim in
        # https://github.com/UKGovernmentBEIS/inspect_ai/issues/3721; the model card lists
        # top_p and top_k as dropped with it
        # (https://platform.claude.com/docs/en/about-claude/models/migration-guide).
        for name in ("temperature", "top_p", "top_k"):
            if request.get(name) is not None:
                return _invalid(f"`{name}` is deprecated for this model.")
    thinking = request.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    version = claude_version(model)
    if kind == "enabled" and version is not None and version >= (4, 7):
        # Seen verbatim from Opus 4.7: https://github.com/earendil-works/pi/issues/3297
        return _invalid('"thinking.type.enabled" is not supported for this model. Use '
                        '"thinking.type.adaptive" and "output_config.effort" to control '
                        'thinking behavior.')
    if kind == "adaptive" and version is not None and version < (4, 6):
        # Adaptive thinking came with the 4.6 models; seen verbatim in
        # https://github.com/anthropics/claude-code/issues/51212
        return _invalid("adaptive thinking is not supported on this model")
    if kind == "enabled" and isinstance(thinking, dict):
        # https://docs.claude.com/en/docs/build-with-claude/extended-thinking
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return _invalid("thinking.enabled.budget_tokens: Input should be greater than or "
                            "equal to 1024")
        if isinstance(request["max_tokens"], int) and budget >= request["max_tokens"]:
            return _invalid("`max_tokens` must be greater than `thinking.budget_tokens`. "
                            "Please consult our documentation at https://docs.claude.com/en/"
                            "docs/build-with-claude/extended-thinking#max-tokens-and-context-"
                            "window-size")
        if _not_default(request.get("temperature")):
            return _invalid("`temperature` may only be set to 1 when thinking is enabled. "
                            "Please consult our documentation at https://docs.claude.com/en/"
                            "docs/build-with-claude/extended-thinking#feature-compatibility")
    return None
