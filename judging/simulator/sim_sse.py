"""Server-sent events for `stream: true`, as the vendors send them.

OpenAI (https://platform.openai.com/docs/api-reference/chat-streaming): `data: {chunk}` lines,
each a `chat.completion.chunk`; the first delta carries the role, the last choice chunk carries
`finish_reason` with an empty delta; with `stream_options.include_usage` every chunk has
`usage: null` and one more chunk with no choices carries the usage; then `data: [DONE]`. An
error inside a 200 (OpenRouter's habit) is a `data: {"error": ...}` line.

Anthropic (https://docs.claude.com/en/docs/build-with-claude/streaming): named events
`message_start` (the Message with empty content), per content block `content_block_start`,
`content_block_delta` (text_delta, thinking_delta, signature_delta) and `content_block_stop`,
then `message_delta` (stop_reason, output tokens) and `message_stop`.

Both are built whole from the reply the non-streaming route would give, so a streamed answer
and a plain one never differ.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["chat_events", "message_events"]

# Roughly what a vendor puts in one delta; enough pieces that a client must really join them.
_PIECE = 16


def _pieces(text: str) -> list[str]:
    return [text[i:i + _PIECE] for i in range(0, len(text), _PIECE)] or [""]


def _data(payload: Any) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


def chat_events(body: dict[str, Any], include_usage: bool) -> list[bytes]:
    """The event stream of a chat-completions reply body (a completion or an error in 200)."""
    if "choices" not in body:
        return [_data(body), b"data: [DONE]\n\n"]
    choice = body["choices"][0]
    message = choice["message"]
    head = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"],
            "model": body["model"], "system_fingerprint": body.get("system_fingerprint")}
    if include_usage:
        head["usage"] = None

    def chunk(delta: dict[str, Any], finish: str | None = None,
              logprobs: Any = None) -> bytes:
        return _data({**head, "choices": [{"index": 0, "delta": delta, "logprobs": logprobs,
                                           "finish_reason": finish}]})

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    tokens = (choice.get("logprobs") or {}).get("content")
    if tokens:  # one chunk per token, each with its own logprobs, as OpenAI streams them
        events += [chunk({"content": t["token"]}, logprobs={"content": [t], "refusal": None})
                   for t in tokens]
    else:
        events += [chunk({"content": piece}) for piece in _pieces(message.get("content") or "")]
    if message.get("refusal"):
        events.append(chunk({"refusal": message["refusal"]}))
    events.append(chunk({}, finish=choice.get("finish_reason")))
    if include_usage:
        events.append(_data({**head, "choices": [], "usage": body.get("usage")}))
    events.append(b"data: [DONE]\n\n")
    return events


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return (f"event: {name}\ndata: {json.dumps({'type': name, **payload}, ensure_ascii=False)}"
            "\n\n").encode()


def message_events(message: dict[str, Any]) -> list[bytes]:
    """The event stream of a Messages API reply body."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    events = [_event("message_start", {"message": start}), _event("ping", {})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": piece}
                      for piece in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            empty = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        events.append(_event("content_block_start", {"index": index, "content_block": empty}))
        events += [_event("content_block_delta", {"index": index, "delta": delta})
                   for delta in deltas]
        events.append(_event("content_block_stop", {"index": index}))
    events.append(_event("message_delta", {
        "delta": {"stop_reason": message["stop_reason"],
                  "stop_sequence": message["stop_sequence"]},
        "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(_event("message_stop", {}))
    return events
