"""Anthropic's native Messages API on the simulator: the request read as a chat request, the
chat reply written back as a Message (https://docs.claude.com/en/api/messages).

The simulator's critics answer chat requests (`SimulatorServer.simulate`); this module only
translates, both ways, so a `POST /v1/messages` and a chat request asking the same thing get
the same verdict, and failure injection speaks Anthropic: a rate limit is 429
`rate_limit_error`, a server error is 529 `overloaded_error`, a refusal is
`stop_reason: "refusal"`, a cut-off reply is `stop_reason: "max_tokens"`.

Nothing here imports the simulator.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from judging.simulator.sim_rules import anthropic_error, claude_version

__all__ = ["thinking_requested", "to_chat", "to_message"]

_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.S)


def _block_texts(content: Any) -> list[tuple[str, bool]]:
    """(text, marked for caching) of each block of a message's or the system's content."""
    if isinstance(content, str):
        return [(content, False)]
    blocks = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        text = block.get("text")
        if text is None and isinstance(block.get("content"), str):  # a tool_result block
            text = block["content"]
        blocks.append((str(text or ""), bool(block.get("cache_control"))))
    return blocks


def to_chat(request: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The chat-completions request a Messages request amounts to, and its cache prefixes.

    Blocks are joined with newlines; the prompt the caches see is the concatenation of the
    system text and each message's text, the same text the simulator counts input tokens of.

    Returns:
        (chat request, the prompt text before each `cache_control` breakpoint, shortest
        first). A top-level `cache_control` marks the end of the whole prompt.
    """
    messages: list[dict[str, Any]] = []
    prefixes: list[str] = []
    prompt = ""
    sections = [("system", request.get("system"))] if request.get("system") else []
    sections += [(str(m.get("role")), m.get("content")) for m in request["messages"]]
    for role, content in sections:
        blocks = _block_texts(content)
        for n, (_, marked) in enumerate(blocks):
            if marked:
                prefixes.append(prompt + "\n".join(text for text, _ in blocks[:n + 1]))
        text = "\n".join(text for text, _ in blocks)
        messages.append({"role": role, "content": text})
        prompt += text
    if request.get("cache_control") and (not prefixes or prefixes[-1] != prompt):
        prefixes.append(prompt)
    chat = {"model": request["model"], "messages": messages, "max_tokens": request["max_tokens"]}
    return chat, prefixes


def thinking_requested(request: dict[str, Any]) -> bool:
    thinking = request.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _thinking_omitted(request: dict[str, Any]) -> bool:
    """From Opus 4.7 on, thinking blocks come with empty text unless `display: "summarized"`
    (https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7)."""
    version = claude_version(str(request.get("model") or ""))
    return (version is not None and version >= (4, 7)
            and request["thinking"].get("display") != "summarized")


def _signature(thinking: str) -> str:
    # Anthropic's signature is an opaque base64 blob that verifies the thinking text; a hash
    # of the text stands in for it.
    return base64.b64encode(hashlib.sha512(thinking.encode()).digest()).decode()


def to_message(status: int, body: Any, outcome: str, headers: dict[str, str],
               request: dict[str, Any], cached: tuple[int, int]
               ) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The Messages API reply for a simulated chat reply.

    Args:
        status, body, outcome, headers: the chat reply (`SimulatorServer.simulate`).
        request: the Messages request.
        cached: (tokens read from cache, tokens written to it), see `judging.simulator.sim_cache`.

    Returns:
        (HTTP status, body, headers).
    """
    if status == 429:
        return 429, anthropic_error(
            "rate_limit_error", "This request would exceed your organization's rate limit "
            "(simulated)."), headers
    if status >= 500:
        return 529, anthropic_error("overloaded_error", "Overloaded"), headers
    if outcome == "error_in_200" or not isinstance(body, dict) or not body.get("choices"):
        return 500, anthropic_error("api_error", "Internal server error"), headers
    choice = body["choices"][0]
    text = str(choice["message"].get("content") or "")
    usage = body.get("usage") or {}
    output_tokens = int(usage.get("completion_tokens") or 0)
    content: list[dict[str, Any]] = []
    if thinking_requested(request):
        found = _THINK.match(text)
        thought = (found.group(1).strip() if found else
                   "Let me weigh the item against the scale before I answer.")
        text = text[found.end():] if found else text
        output_tokens += max(1, len(thought) // 4)  # billed even when not shown
        if _thinking_omitted(request):
            thought = ""
        content.append({"type": "thinking", "thinking": thought,
                        "signature": _signature(thought)})
    content.append({"type": "text", "text": text})
    read, written = cached
    stop = ("refusal" if outcome == "refusal" else
            "max_tokens" if choice.get("finish_reason") == "length" else "end_turn")
    message = {
        "id": "msg_" + str(body.get("id", "")).removeprefix("chatcmpl-").replace("-", ""),
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(0, int(usage.get("prompt_tokens") or 0) - read - written),
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        },
    }
    return 200, message, {}
