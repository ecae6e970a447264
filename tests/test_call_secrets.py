"""Secrets scrubbed everywhere: a vendor on 127.0.0.1 that echoes every key it has seen, in a
200 reply's content and reasoning, in error bodies and in headers. No text of the verdicts may
hold any key in use (or its `Bearer` form)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from judging.engine.calls import CallRunner, RetryPolicy
from judging.engine.calls.scrub import Scrubber
from judging.panel.critics import Critic
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, Verdict
from tests.fixtures_calls import chat_body
from tests.fixtures_network import LocalVendor, Reply, SeenRequest

KEYS = {"JURYBOX_KEY_A": "sk-echo-AAAA-0123456789abcdef",
        "JURYBOX_KEY_B": "sk-echo-BBBB-fedcba9876"}
SCALE = Scale(kind="nominal", labels=["KEEP", "REJECT"])


def echoing_vendor(seen_keys: list[str]) -> Callable[[SeenRequest], Reply]:
    """Replies by the path's mode, quoting every key it has been sent so far."""

    def reply(seen: SeenRequest) -> Reply:
        authorization = seen.headers.get("Authorization", "")
        if authorization not in seen_keys:
            seen_keys.append(authorization)
        echo = " and ".join(seen_keys)  # "Bearer sk-..." forms, as received
        bare = " ".join(a.removeprefix("Bearer ") for a in seen_keys)
        headers = [("X-Echo-Key", bare), ("X-Echo-Auth", echo)]
        mode = seen.path.split("/")[1]
        if mode == "ok":
            content = json.dumps({"label": "KEEP", "reasoning": f"you sent {bare}"})
            body = chat_body(content, reasoning_content=f"Authorization: {echo}")
        elif mode == "refusal":
            body = chat_body(None, refusal=f"I will not use {bare}")
        elif mode == "prose":
            body = chat_body(f"Your key {bare} looks fine to me.")
        elif mode == "filtered":
            body = chat_body('{"label": "KEEP", "reasoning": "' + bare,
                             finish_reason="content_filter")
        elif mode == "think":
            body = chat_body(f"<think>{echo}</think>KEEP")
        else:  # an HTTP error: 400, 401, 500 or 429 with the key in the body
            status = int(mode)
            return Reply(status=status, headers=headers, body=json.dumps(
                {"error": {"message": f"Incorrect API key provided: {bare} ({echo})"}}).encode())
        return Reply(headers=headers, body=json.dumps(body).encode())

    return reply


def critic(vendor: LocalVendor, mode: str, variable: str = "JURYBOX_KEY_A") -> Critic:
    return Critic(name=f"critic-{mode}-{variable[-1]}", vendor="custom", model="m",
                  prompt_template="Judge {text}", base_url=f"{vendor.base_url[:-3]}/{mode}",
                  api_key_env=variable)


def leaked(verdict: Verdict) -> list[str]:
    """Which keys appear anywhere in the verdict, serialised fully."""
    text = json.dumps(verdict.to_dict(), default=str) + repr(verdict)
    return [name for name, key in KEYS.items() if key in text or key[8:] in text]


@pytest.mark.parametrize(
    ("mode", "kind"),
    [("ok", None), ("refusal", FailureKind.REFUSAL), ("prose", FailureKind.PARSE_FAIL),
     ("filtered", FailureKind.REFUSAL), ("think", None), ("400", FailureKind.ITEM_ERROR),
     ("401", FailureKind.CRITIC_ERROR), ("500", FailureKind.ERROR)],
)
def test_no_key_in_any_verdict(local_vendor: Callable[..., LocalVendor], mode: str,
                               kind: FailureKind | None) -> None:
    seen_keys: list[str] = []
    vendor = local_vendor(echoing_vendor(seen_keys))
    # The item itself quotes a key: the raw request kept for the reviewer must not.
    item = Item("i1", {"text": f"is {KEYS['JURYBOX_KEY_A']} a key?"})
    with CallRunner(key_lookup=KEYS.get, retry=RetryPolicy(time_scale=0)) as runner:
        # Key B is in use first, so the vendor echoes BOTH keys in the replies to key A.
        warm = runner.call(critic(vendor, "ok", "JURYBOX_KEY_B"), Item("i0", {"text": "x"}),
                           SCALE)
        verdict = runner.call(critic(vendor, mode), item, SCALE)
        later = runner.call(critic(vendor, mode), Item("i2", {"text": "y"}), SCALE)
    assert len(seen_keys) == 2  # the vendor really did see (and echo) both keys
    assert warm.ok and verdict.failure is kind, verdict.message
    assert verdict.raw_response and "***" in verdict.raw_response
    for each in (warm, verdict, later):
        assert leaked(each) == [], each
    if kind is FailureKind.CRITIC_ERROR:
        assert runner.gate.reason(verdict.critic) is not None
        assert all(k not in json.dumps(runner.gate.stopped) for k in KEYS.values())
        assert (later.message or "").startswith("not called:")


def test_the_scrubber_masks_keys_and_bearer_tokens_only() -> None:
    scrub = Scrubber(["sk-abc-123456", 'k"ey\\with-quote'])
    assert scrub.text("key sk-abc-123456!") == "key ***!"
    assert scrub.text(json.dumps({"k": 'k"ey\\with-quote'})) == '{"k": "***"}'
    assert scrub.text("Authorization: bearer eyJhbGciOiJIUzI1NiJ9.e30.x") == (
        "Authorization: Bearer ***")
    # Prose about bearer bonds is left alone; so is everything without a secret.
    assert scrub.text("bearer bonds pay") == "bearer bonds pay"
    assert scrub.value({"url": "u", "body": {"messages": [{"content": "sk-abc-123456"}]}}) == {
        "url": "u", "body": {"messages": [{"content": "***"}]}}
    assert not Scrubber([None, ""])
    assert re.fullmatch(r"\*+", scrub.text("sk-abc-123456") or "")
