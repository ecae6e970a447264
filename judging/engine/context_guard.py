"""The context budget guard: a prompt measured against its critic's context window
(`judging.panel.context_limits.context_window`) before it is sent, and a reply whose token count
says the server cut the prompt.

Measured how: the rendered messages' characters at `CHARS_PER_TOKEN` (four characters a token,
the vendors' published rule of thumb for English; code, numbers and non-Latin scripts take
more tokens, so this is an estimate, stated as one), plus the critic's `max_tokens`, which the
vendors count against the same window. No tokenizer is loaded: none covers every vendor, and
the guard's job is to catch prompts that are many times too long, not a few percent.

What happens to an over-long prompt is the panel's choice (`ContextGuard.over_long`), never
silent: "send" sends it whole (the Run page and the estimate name it first), "skip" records no
call and a verdict saying why (kind `item_error`), "window" sends the last
`ContextGuard.window` messages of the conversation fields (`context`, `thread`) and says so on
the verdict, or skips it when that is not enough.

A reply whose reported prompt tokens are under `TRUNCATION_RATIO` of the estimate is flagged
(`likely_truncated`): Ollama, for one, reports 2,048 prompt tokens for a prompt of 75,000 and
answers as if nothing happened.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from judging.engine.budget import CHARS_PER_TOKEN
from judging.panel.context_limits import ContextGuard, context_window
from judging.panel.conversation import last_messages
from judging.panel.critics import Critic
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS, FailureKind, Item, Verdict

# A reply whose prompt tokens fall under this share of the estimate was probably cut.
TRUNCATION_RATIO = 0.5
# Below this many estimated tokens the four-characters rule is too rough to call a cut.
_MIN_TOKENS_TO_FLAG = 1000
# Item fields holding a transcript that a window may shorten (`judging.panel.conversation`).
WINDOW_FIELDS = ("context", "thread")


@dataclass(frozen=True, slots=True)
class OverLong:
    """An item whose prompt does not fit a critic's window.

    Attributes:
        item_id / critic: which prompt.
        tokens: its estimated prompt tokens plus the critic's `max_tokens`.
        window: the critic's context window.
    """

    item_id: str
    critic: str
    tokens: int
    window: int

    def sentence(self) -> str:
        return (f"{self.item_id}: about {self.tokens:,} tokens for {self.critic}, whose "
                f"window is {self.window:,}")


def message_tokens(messages: Iterable[dict[str, str]]) -> int:
    """Estimated tokens of chat messages (their text at `CHARS_PER_TOKEN`)."""
    return math.ceil(sum(len(str(m.get("content") or "")) for m in messages) / CHARS_PER_TOKEN)


def needed_tokens(critic: Critic, item: Item, scale: Scale) -> int:
    """What one call of the critic on the item takes from its window: the prompt's estimated
    tokens plus the reply's `max_tokens`."""
    return message_tokens(critic.build_messages(item.fields, scale)) + critic.max_tokens


def over_long(critics: Iterable[Critic], items: Iterable[Item], scale: Scale) -> list[OverLong]:
    """Every (item, critic) whose call would not fit the critic's window, in item order.
    Critics without a known window and plug-in critics (no prompt) are not checked."""
    checked = [(c, w) for c in critics if c.kind not in PLUGIN_KINDS
               and (w := context_window(c)) is not None]
    if not checked:
        return []  # nothing to measure against: the items are not even read
    found = []
    for item in items:
        for critic, window in checked:
            tokens = needed_tokens(critic, item, scale)
            if tokens > window:
                found.append(OverLong(item.id, critic.name, tokens, window))
    return found


@dataclass(frozen=True, slots=True)
class Guarded:
    """What the guard lets through for one call: the item to send (maybe a window of it) and
    the note to put on the verdict ("" when the item went as it is)."""

    item: Item
    note: str = ""


def guard(critic: Critic, item: Item, scale: Scale, policy: ContextGuard) -> Guarded | Verdict:
    """The item as the critic should be sent it, or the verdict of a call not sent.

    Returns `Guarded(item)` unchanged when it fits, when the window is unknown, or when the
    policy is "send"; otherwise a window of it, or a failed verdict (`item_error`) saying why
    nothing was sent.
    """
    window = context_window(critic) if critic.kind not in PLUGIN_KINDS else None
    if window is None or policy.over_long == "send":
        return Guarded(item)
    tokens = needed_tokens(critic, item, scale)
    if tokens <= window:
        return Guarded(item)
    over = f"about {tokens:,} tokens, over the window of {window:,} of {critic.model}"
    if policy.over_long == "window":
        fields = dict(item.fields)
        for name in WINDOW_FIELDS:
            value = fields.get(name)
            if isinstance(value, str):
                kept = last_messages(value, policy.window)
                if kept is not None:
                    fields[name] = kept
        windowed = Item(id=item.id, fields=fields, gold=item.gold, swapped=item.swapped)
        if fields != item.fields and needed_tokens(critic, windowed, scale) <= window:
            shortened = [n for n in WINDOW_FIELDS if fields.get(n) != item.fields.get(n)]
            return Guarded(windowed, (
                f"Judged on a window: the last {policy.window} messages of "
                f"{' and '.join(shortened)} (the whole prompt was {over})."))
        return _not_sent(critic, item, f"Not sent: the prompt is {over}, and the last "
                         f"{policy.window} messages do not fit either (the panel's context "
                         "guard judges a window). Lower context_guard.window, or send anyway.")
    return _not_sent(critic, item, f"Not sent: the prompt is {over} (the panel's context guard "
                     "skips over-long items). Judge a window of it, or send anyway.")


def _not_sent(critic: Critic, item: Item, message: str) -> Verdict:
    return Verdict(critic=critic.name, item_id=item.id, failure=FailureKind.ITEM_ERROR,
                   message=message, vendor=critic.vendor, model=critic.model)


def over_long_report(found: list[OverLong], policy: ContextGuard, *, shown: int = 5) -> str:
    """The over-long items in a few lines, and what the run does with them (for the CLI)."""
    items = sorted({o.item_id for o in found})
    action = {"send": "sends them whole (context_guard.over_long: send)",
              "skip": "skips them (context_guard.over_long: skip)",
              "window": f"judges their last {policy.window} messages "
                        "(context_guard.over_long: window)"}[policy.over_long]
    lines = [f"{len(items):,} item{'s are' if len(items) != 1 else ' is'} too long for a "
             f"critic's context window (estimated at {CHARS_PER_TOKEN:g} characters a token, "
             f"plus max_tokens); the run {action}:"]
    lines += [f"  {o.sentence()}" for o in found[:shown]]
    if len(found) > shown:
        lines.append(f"  ... and {len(found) - shown:,} more")
    return "\n".join(lines)


def likely_truncated(verdict: Verdict) -> str | None:
    """A sentence when the server reported far fewer prompt tokens than were sent (it probably
    cut the prompt and judged what was left); None otherwise or when it cannot be told."""
    kept = verdict.raw_request  # {"url", "body"} as the call runner keeps it
    request = kept.get("body", kept) if isinstance(kept, dict) else None
    if not verdict.tokens_in or not isinstance(request, dict):
        return None
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    parts = [m for m in messages if isinstance(m, dict)]
    system = request.get("system")  # Anthropic's Messages API keeps it apart
    if isinstance(system, str):
        parts.append({"content": system})
    sent = math.ceil(sum(len(_content_text(m.get("content"))) for m in parts) / CHARS_PER_TOKEN)
    if sent < _MIN_TOKENS_TO_FLAG or verdict.tokens_in >= TRUNCATION_RATIO * sent:
        return None
    return (f"Likely cut by the server: it counted {verdict.tokens_in:,} prompt tokens for about "
            f"{sent:,} sent, so it judged part of the prompt (a local server's context length, "
            "e.g. Ollama's num_ctx, is the usual cause).")


def _content_text(content: object) -> str:
    """A message's content as text: a string, or the text of its content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""
