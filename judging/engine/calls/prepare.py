"""Building one call before it is sent: the request body, the bytes on the wire, the cache key."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from judging.engine.anthropic_messages import messages_params
from judging.engine.endpoints import resolve_base_url
from judging.panel.critics import Critic
from judging.panel.request_rules import rules_for
from judging.panel.rubric import RubricConfig
from judging.panel.vendors import api_of, get_preset, json_mode_for
from judging.scales import Scale
from judging.verdicts import Item
from judging.voting.logprobs import logprobs_request


@dataclass(slots=True)
class PreparedCall:
    """One critic's request for one item, before it is sent."""

    critic: Critic
    item: Item
    url_key: str  # the base URL as it enters the cache key ("simulated://" for the simulator)
    body: dict[str, Any]
    content: bytes  # the body as sent (serialised once: it is also what the cache key hashes)
    cache_key: str


def _request_body(
    critic: Critic, messages: list[dict[str, str]], *, free_text: bool
) -> dict[str, Any]:
    """The chat-completions body of one call, as the critic's model takes it.

    `judging.panel.request_rules` decides which sampling and length parameters the model takes
    (a reasoning model gets `max_completion_tokens` and no `temperature`); `extra` then adds
    or overrides parameters, and an `extra` value of None removes that parameter altogether
    (`temperature: null` means "do not send a temperature").
    """
    rules = rules_for(critic)
    body: dict[str, Any] = {"model": critic.model, "messages": messages}
    if rules.temperature:
        body["temperature"] = critic.temperature
    body[rules.length_param] = critic.max_tokens
    # A free-text step (reasoning, a debater's argument) must not be forced into JSON.
    if json_mode_for(critic) and not free_text:
        body["response_format"] = {"type": "json_object"}
    if critic.logprobs and not free_text and rules.logprobs:
        body.update(logprobs_request(critic.top_logprobs))
    # Extra parameters (seed, top_p, ...) may override, except the two that define the call.
    for name, value in critic.extra.items():
        if name in ("model", "messages"):
            continue
        if value is None:
            body.pop(name, None)
        elif ((name == "top_p" and not rules.top_p) or name in rules.refused
              or (name == "temperature" and not rules.temperature)):
            continue  # the model refuses it on every request (see the Panel page's note)
        else:
            body[name] = value
    return body


def wire_body(critic: Critic, body: dict[str, Any]) -> dict[str, Any]:
    """The body as the critic's API takes it: the chat body itself, or for Anthropic's
    Messages API its `params` (system on top, cacheable; only Messages fields)."""
    if api_of(critic) == "messages":
        return messages_params(body)
    return body


def encode_body(body: dict[str, Any]) -> bytes:
    """A request body as the bytes sent. Sorted keys make the bytes (and so the cache key)
    independent of dict order."""
    return json.dumps(body, sort_keys=True, ensure_ascii=False, default=str).encode()


def prepare_call(
    critic: Critic,
    item: Item,
    scale: Scale | RubricConfig,
    *,
    messages: list[dict[str, str]] | None = None,
    free_text: bool = False,
    sample: int = 0,
) -> PreparedCall:
    """Build the request body and cache key for one call, without sending anything.

    The cache key is the sha256 of vendor, base URL, model, messages and parameters; never the
    key. The simulated vendor's key uses "simulated://" instead of its (random) port so a cache
    survives a restart of the simulator.

    Args:
        messages: the messages of a compound critic's step (default: the critic's own).
        free_text: a step whose reply is prose, not a verdict (no JSON mode, no logprobs).
        sample: which repeat this is. Repeats 1, 2, ... get keys of their own (the same request
            asked again is a new draw, not a cache hit); repeat 0 keeps the plain call's key,
            so a critic given more samples reuses the call it made before.

    Raises:
        PlaceholderError: the critic's prompt uses a field this item lacks.
        CriticCallError: unknown vendor, or a custom vendor without a base URL.
    """
    preset = get_preset(critic.vendor)
    if critic.base_url:
        url_key = critic.base_url.rstrip("/")
    elif preset.simulated:
        url_key = "simulated://"
    else:
        url_key = resolve_base_url(critic)
    if messages is None:
        if not isinstance(scale, Scale):  # a rubric call's messages come from judging.engine.chains
            raise TypeError("a rubric call needs its messages")
        messages = critic.build_messages(item.fields, scale)
    body = wire_body(critic, _request_body(critic, messages, free_text=free_text))
    # Sorted keys make the bytes (and so the key) independent of dict order; the model,
    # messages and every parameter are in the body, the API key never is.
    content = encode_body(body)
    digest = hashlib.sha256(f"{critic.vendor}\n{url_key}\n".encode())
    if sample:
        digest.update(f"sample {sample}\n".encode())
    digest.update(content)
    return PreparedCall(
        critic=critic, item=item, url_key=url_key, body=body, content=content,
        cache_key=digest.hexdigest(),
    )


def cache_key_for(critic: Critic, item: Item, scale: Scale) -> str:
    """The cache key of one call (see `prepare_call`). For resume bookkeeping in `storage`."""
    return prepare_call(critic, item, scale).cache_key
