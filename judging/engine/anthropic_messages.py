"""Anthropic's native Messages API: the request a chat body stands for, and how a reply reads.

Live Anthropic calls go to `POST {base}/messages` (Anthropic documents its OpenAI-compatible
endpoint as "not considered a long-term or production-ready solution", and it has no prompt
caching); batch lines carry the same `params`. The request differs from chat completions:

    headers   `x-api-key: KEY` (Anthropic's documented header; the SDK sends the key as a Bearer
              token and accepts either) and `anthropic-version` (the SDK's own)
    system    top-level, as text blocks; the last one marked `cache_control: ephemeral` so the
              panel's shared prefix (system prompt, preambles, few-shot examples, rubric) is
              written to the cache once and read at a tenth of the input price afterwards
    messages  user / assistant turns only
    params    only what the Messages API defines (`MESSAGES_PARAMS`): a chat-only key such as
              `response_format`, `logprobs`, `seed`, `reasoning_effort` or `user` is refused
              with HTTP 400, so it is never sent; `stop` is sent as `stop_sequences`;
              `temperature` / `top_p` / `top_k` are no longer in the SDK's request type
              (anthropic 2.14) and Claude Opus 4.7+ refuse them, so they are never sent

A reply's `content` is a list of blocks: `text` blocks are the answer, `thinking` blocks the
model's reasoning. `stop_reason` says how it ended (https://docs.claude.com/en/api/handling-stop-reasons):
`end_turn` / `stop_sequence` finished, `max_tokens` and `model_context_window_exceeded` cut it
off, `refusal` means the model declined. Usage counts `input_tokens` (not cached),
`cache_creation_input_tokens` (written to the cache) and `cache_read_input_tokens` (read from it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ANTHROPIC_VERSION", "MESSAGES_PARAMS", "is_message", "messages_params", "read_message"]

# The API version the official SDK (anthropic 2.14) pins, and whose request and response types
# the contract tests hold our requests and replies to (tests/test_vendor_contract.py).
ANTHROPIC_VERSION = "2026-10-21"

# The body fields of `POST /v1/messages` (anthropic SDK 2.14, MessageCreateParamsBase).
MESSAGES_PARAMS = frozenset({
    "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
    "thinking", "tools", "tool_choice", "service_tier", "container", "inference_geo",
    "output_config", "speed", "cache_control",
})
# Sampling parameters the SDK no longer defines (Claude Opus 4.7 and later refuse them): never
# sent on the Messages API. A critic that needs one for an older model can use `api: chat`.
SAMPLING_PARAMS = frozenset({"temperature", "top_p", "top_k"})

# Below these many characters (about 1,024 tokens, Anthropic's smallest cacheable prefix) a
# cache mark would be ignored by the vendor, so none is sent.
MIN_CACHED_CHARS = 4096


def messages_params(body: dict[str, Any], *, cache_system: bool = True) -> dict[str, Any]:
    """The Messages API form of a chat-completions body.

    Args:
        body: a chat-completions body (model, messages, max_tokens or max_completion_tokens,
            temperature, extra parameters...).
        cache_system: mark the system text cacheable when it is long enough to be cached.

    Returns:
        The `params` of a Messages API request: system messages moved to a top-level `system`
        list of text blocks, only Messages API fields kept (`stop` renamed `stop_sequences`,
        `max_completion_tokens` renamed `max_tokens`).
    """
    system = "\n\n".join(str(m.get("content") or "") for m in body["messages"]
                         if m.get("role") == "system")
    params: dict[str, Any] = {}
    for name, value in body.items():
        if name == "messages":
            continue
        if name == "max_completion_tokens":
            name = "max_tokens"
        elif name == "stop":
            name = "stop_sequences"
            value = [value] if isinstance(value, str) else value
        if name in MESSAGES_PARAMS:
            params[name] = value
    params["messages"] = [{"role": m["role"], "content": m["content"]}
                          for m in body["messages"] if m.get("role") != "system"]
    if system:
        block: dict[str, Any] = {"type": "text", "text": system}
        if cache_system and len(system) >= MIN_CACHED_CHARS:
            block["cache_control"] = {"type": "ephemeral"}
        params["system"] = [block]
    return params


def is_message(data: Any) -> bool:
    """True for a Messages API reply (`"type": "message"`, or content blocks and a stop
    reason without chat-completion `choices`)."""
    return isinstance(data, dict) and (data.get("type") == "message" or (
        "choices" not in data and isinstance(data.get("content"), list)
        and "stop_reason" in data))


def read_message(message: dict[str, Any]) -> dict[str, Any]:
    """What a Messages API reply says, in the terms `judging.engine.parsing` reads every reply in.

    Returns:
        {"content": the text blocks joined, "reasoning": the thinking blocks joined or None,
        "finish_reason": "stop" | "length" | "refusal" | the stop reason as given,
        "tokens_in": every input token (cached ones included), "tokens_out",
        "tokens_cached": tokens read from the prompt cache, "tokens_cache_write": tokens
        written to it}.
    """
    texts: list[str] = []
    thinking: list[str] = []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif block.get("type") == "thinking" and block.get("thinking"):
            thinking.append(str(block["thinking"]))
    stop = message.get("stop_reason")
    finish = {
        "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
        "model_context_window_exceeded": "length", "refusal": "refusal",
    }.get(str(stop), stop)
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
    assert isinstance(usage, dict)

    def count(name: str) -> int | None:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    plain, written, read = (count("input_tokens"), count("cache_creation_input_tokens"),
                            count("cache_read_input_tokens"))
    tokens_in = None if plain is None else plain + (written or 0) + (read or 0)
    return {
        "content": "".join(texts),
        "reasoning": "\n\n".join(thinking) or None,
        "finish_reason": finish,
        "stop_reason": stop,
        "tokens_in": tokens_in,
        "tokens_out": count("output_tokens"),
        "tokens_cached": read,
        "tokens_cache_write": written,
    }
