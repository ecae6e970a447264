"""Request lines of a vendor batch: one per distinct request, chunked within the vendor's limits."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from judging.engine.anthropic_messages import messages_params
from judging.engine.calls.prepare import PreparedCall
from judging.errors import ConfigError
from judging.panel.critics import Critic
from judging.panel.vendors import api_of, get_preset

BatchApi = Literal["openai", "anthropic"]

# Where a line's request goes on the vendor's side (OpenAI's `url` field of an input line).
CHAT_ENDPOINT = "/v1/chat/completions"

# The vendors' limits per batch (OpenAI: 50,000 requests and a 200 MB input file; Anthropic:
# 100,000 requests and 256 MB), kept a little under so a line's framing never tips one over.
MAX_REQUESTS = {"openai": 50_000, "anthropic": 100_000}
MAX_BYTES = {"openai": 190 * 2**20, "anthropic": 240 * 2**20}

def batch_api_of(critic: Critic) -> BatchApi:
    """The batch API a batch critic goes through: its own `batch_api`, else its vendor's."""
    api = critic.batch_api or get_preset(critic.vendor).batch_api
    if api not in ("openai", "anthropic"):
        raise ConfigError(f"critic {critic.name!r}: {critic.vendor} has no batch API; use "
                          "mode: live")
    return api  # type: ignore[return-value]  # checked just above


def sent_body(api: BatchApi, prepared: PreparedCall) -> dict[str, Any]:
    """What the batch line carries for this call (kept as the verdict's raw request): for
    Anthropic, the Messages API params, with only the fields that API defines (a chat-only key
    would make the vendor refuse the whole line)."""
    if api != "anthropic":
        return prepared.body
    if api_of(prepared.critic) == "messages":
        return prepared.body  # built as Messages params already (`prepare_call`)
    return messages_params(prepared.body)


def batch_line(api: BatchApi, prepared: PreparedCall) -> dict[str, Any]:
    """One request line. Its `custom_id` is the call's cache key (64 hex characters: within
    Anthropic's 64), so a result finds its call again after any restart."""
    if api == "anthropic":
        return {"custom_id": prepared.cache_key, "params": sent_body(api, prepared)}
    return {"custom_id": prepared.cache_key, "method": "POST", "url": CHAT_ENDPOINT,
            "body": prepared.body}


@dataclass(slots=True)
class Chunk:
    """The lines of one batch, each as its JSON text."""

    lines: list[str]
    n_bytes: int = 0


def chunked(api: BatchApi, calls: Iterable[PreparedCall]) -> Iterator[Chunk]:
    """The distinct requests of `calls` (by cache key: two items asking the same thing are one
    request) as batches within the vendor's limits."""
    seen: set[str] = set()
    chunk = Chunk([])
    for prepared in calls:
        if prepared.cache_key in seen:
            continue
        seen.add(prepared.cache_key)
        text = json.dumps(batch_line(api, prepared), ensure_ascii=False)
        size = len(text.encode()) + 1
        if chunk.lines and (len(chunk.lines) >= MAX_REQUESTS[api]
                            or chunk.n_bytes + size > MAX_BYTES[api]):
            yield chunk
            chunk = Chunk([])
        chunk.lines.append(text)
        chunk.n_bytes += size
    if chunk.lines:
        yield chunk
