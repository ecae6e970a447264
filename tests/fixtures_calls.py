"""Fixtures for the call layer: scripted vendors over `httpx.MockTransport`, no network."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from judging.engine.calls import CallRunner, RetryPolicy
from judging.panel.critics import Critic
from judging.scales import Scale

SECRET_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"
KEY_VAR = "JURYBOX_TEST_KEY"


def chat_body(
    content: str | None = '{"label": "KEEP", "confidence": 0.9, "reasoning": "fine"}',
    *,
    finish_reason: str = "stop",
    usage: tuple[int, int] | None = (100, 20),
    **message: Any,
) -> dict[str, Any]:
    """A chat-completions reply body with `content` as the assistant message."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
    return body


def ok(content: str | None = None, **kwargs: Any) -> httpx.Response:
    """HTTP 200 with a chat reply (default: a KEEP verdict)."""
    if content is None:
        return httpx.Response(200, json=chat_body(**kwargs))
    return httpx.Response(200, json=chat_body(content, **kwargs))


def error(
    status: int, message: str = "boom", headers: dict[str, str] | None = None, **extra: Any
) -> httpx.Response:
    """An error reply with an OpenAI-style `error` object."""
    return httpx.Response(status, headers=headers, json={"error": {"message": message, **extra}})


class Script:
    """A scripted vendor: replies in order (the last one repeats), every request recorded.

    Each reply is an `httpx.Response`, or a callable taking the request (to raise transport
    errors or build a reply from the request).
    """

    def __init__(self, *replies: httpx.Response | Callable[[httpx.Request], httpx.Response]):
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            index = min(len(self.requests), len(self.replies) - 1)
            self.requests.append(request)
        reply = self.replies[index]
        if callable(reply) and not isinstance(reply, httpx.Response):
            return reply(request)
        # A Response can only be streamed once: hand out a fresh copy each time.
        return httpx.Response(reply.status_code, headers=reply.headers, content=reply.content)

    @property
    def count(self) -> int:
        return len(self.requests)

    def sent_json(self, index: int = 0) -> dict[str, Any]:
        return json.loads(self.requests[index].content)


@pytest.fixture
def label_scale() -> Scale:
    return Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])


@pytest.fixture
def make_critic() -> Callable[..., Critic]:
    def build(name: str = "alpha", **overrides: Any) -> Critic:
        values: dict[str, Any] = {
            "name": name,
            "vendor": "openai",
            "model": "gpt-test",
            "prompt_template": "Judge this class: {text}",
            "api_key_env": KEY_VAR,
        }
        values.update(overrides)
        return Critic(**values)

    return build


@pytest.fixture
def sleeps() -> list[float]:
    """The waits a runner asked for (recorded instead of slept)."""
    return []


@pytest.fixture
def make_runner(sleeps: list[float]) -> Iterator[Callable[..., CallRunner]]:
    """`make_runner(script, **kwargs)`: a CallRunner over a MockTransport that never sleeps."""
    runners: list[CallRunner] = []

    def build(script: Script, **kwargs: Any) -> CallRunner:
        kwargs.setdefault("key_lookup", {KEY_VAR: SECRET_KEY}.get)
        kwargs.setdefault("sleep", sleeps.append)
        kwargs.setdefault("retry", RetryPolicy())
        kwargs.setdefault("seed", 7)
        runner = CallRunner(transport=httpx.MockTransport(script), **kwargs)
        runners.append(runner)
        return runner

    yield build
    for runner in runners:
        runner.close()
