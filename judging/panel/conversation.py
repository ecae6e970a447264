"""Conversations and agent trajectories, judged one assistant turn at a time.

A dataset field may hold a conversation in one of these shapes (`parse_conversation`):

- a list of messages in the OpenAI chat shape: `role` (system, user, assistant, tool),
  `content` (text, or a list of `{"type": "text", "text": ...}` parts), optional `name`,
  `tool_calls` (`[{"id", "function": {"name", "arguments"}}]`) and, on a tool result,
  `tool_call_id`; or an object holding such a list under `messages`;
- the same as a JSON string (a CSV cell);
- an ATIF v1.x trajectory: `{"steps": [{"source": "user" | "agent" | "system", "message",
  "tool_calls": [{"function_name", "arguments"}], "observation": {"results": [{"content"}]}}]}`
  (an agent step's observation becomes the tool results that follow it);
- a role-tagged transcript: lines starting `USER:`, `ASSISTANT:`, `SYSTEM:` or `TOOL:` (also
  `Human:`, `AI:`, `Agent:`, `Bot:`), each message running to the next tag.

`conversation_fields` says which fields of a few rows look like conversations, for the user
to confirm on import. `turn_items` then makes one item per assistant turn (`"{thread}#t{n}"`):
each turn is a unit of voting, agreement, review and export like any item, and keeps its
thread's id. A turn's fields hold text, never JSON, so a prompt shows what a reader would:

- `turn`: the assistant's message, its tool calls folded into lines `-> tool call name(args)`;
- `context`: what came before it, as the importer chose (`ContextChoice`): nothing (the turn
  alone), the last k messages, or the whole thread up to the turn; tool results in or out;
- `thread`: the whole conversation, for a critic that must see how it ended;
- `thread_id`, `turn_index` (1 for the first assistant turn), and the item's other fields.

The text of `context` and `thread` is a transcript in the tagged form above, so it reads back
as a conversation (Review draws it as bubbles; the context guard keeps a window of its last
messages). `thread_verdicts` rolls the turns' final decisions up to a verdict per thread: it
fails when any turn fails, and names the first failing turn (for a trajectory, the step where
the agent went wrong).

Pure: no storage, no HTTP.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from judging.errors import DataError
from judging.verdicts import Item

# The fields a per-turn item gets (beside the item's own): what prompts may name.
TURN_FIELDS = ("thread_id", "turn_index", "turn", "context", "thread")
# How a tool call is folded into a turn's text, one line each.
TOOL_CALL_MARK = "-> tool call "

_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user",
          "assistant": "assistant", "ai": "assistant", "agent": "assistant", "bot": "assistant",
          "model": "assistant", "tool": "tool", "function": "tool", "observation": "tool"}
# A transcript's role tag: at the start of a line, an optional name in brackets, a colon.
_TAG = re.compile(r"^(system|developer|user|human|assistant|ai|agent|bot|tool|function)"
                  r"(?: \(([^()\n]{1,80})\))?:[ \t]?", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call an assistant asked for: the tool's name and its arguments as text (JSON)."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation.

    Attributes:
        role: "system", "user", "assistant" or "tool".
        content: its text ("" for an assistant message that only calls tools).
        name: the speaker's or the tool's name, when given.
        tool_calls: the calls an assistant message asks for.
        gold: a label given to this message in the file (`gold` or `label` on the message), the
            turn's gold when the message is an assistant turn.
    """

    role: str
    content: str
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    gold: str | None = None

    @property
    def text(self) -> str:
        """The content with each tool call folded into a line of its own."""
        calls = [f"{TOOL_CALL_MARK}{c.name}({c.arguments})" for c in self.tool_calls]
        return "\n".join(part for part in (self.content, *calls) if part)

    @property
    def tag(self) -> str:
        """The message's role tag in a transcript: `ASSISTANT`, `TOOL (lookup_order)`."""
        return self.role.upper() + (f" ({self.name})" if self.name else "")


ContextKind = Literal["alone", "last", "before"]


@dataclass(frozen=True, slots=True)
class ContextChoice:
    """What a turn's `context` field holds.

    Attributes:
        kind: "alone" (nothing: the turn is judged by itself), "last" (the last `k` messages
            before the turn) or "before" (the whole thread up to the turn).
        k: how many messages "last" keeps.
        tools: keep tool results (and the tool calls folded into assistant turns) in the
            context; off, the context reads as the chat the user saw.
    """

    kind: ContextKind = "before"
    k: int = 4
    tools: bool = True

    def __post_init__(self) -> None:
        if self.kind not in ("alone", "last", "before"):
            raise DataError(f"A turn's context is 'alone', 'last' or 'before', not {self.kind!r}.")
        if self.k < 1:
            raise DataError(f"The last k messages needs k of 1 or more, not {self.k}.")

    def describe(self) -> str:
        """The choice in words, for a page or a note."""
        tools = "" if self.tools else ", tool results left out"
        if self.kind == "alone":
            return "the turn alone"
        if self.kind == "last":
            return f"the last {self.k} messages before the turn{tools}"
        return f"the thread up to the turn{tools}"


def parse_conversation(value: Any) -> list[Message] | None:
    """The messages of a field's value, or None when it does not hold a conversation.

    A conversation has at least two messages and at least one from the assistant (a single
    tagged line is more likely prose that starts with "User:").
    """
    messages = _parse(value)
    if messages is None or len(messages) < 2 or not any(m.role == "assistant" for m in messages):
        return None
    return messages


def _parse(value: Any) -> list[Message] | None:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "{"):
            try:
                return _parse(json.loads(text))
            except (ValueError, RecursionError):
                return None
        return _transcript(text)
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            return _chat(value["messages"])
        if isinstance(value.get("steps"), list):
            return _atif(value["steps"])
        return None
    if isinstance(value, list):
        return _chat(value)
    return None


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
                         for part in content).strip()
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)


def _gold(message: Mapping[str, Any]) -> str | None:
    value = message.get("gold", message.get("label"))
    return None if value is None else str(value)


def _chat(values: list[Any]) -> list[Message] | None:
    if not values or not all(isinstance(m, Mapping) and isinstance(m.get("role"), str)
                             for m in values):
        return None
    messages: list[Message] = []
    names: dict[str, str] = {}  # tool_call_id -> the tool's name, for the result's tag
    for message in values:
        role = _ROLES.get(message["role"].lower())
        if role is None:
            return None
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function", call) if isinstance(call, Mapping) else {}
            tool = str(function.get("name", "?"))
            calls.append(ToolCall(tool, _arguments(function.get("arguments", ""))))
            if isinstance(call, Mapping) and call.get("id") is not None:
                names[str(call["id"])] = tool
        name = message.get("name")
        if role == "tool" and name is None and message.get("tool_call_id") is not None:
            name = names.get(str(message["tool_call_id"]))
        messages.append(Message(role, _text(message.get("content")),
                                None if name is None else str(name), tuple(calls),
                                _gold(message)))
    return messages


def _atif(steps: list[Any]) -> list[Message] | None:
    if not steps or not all(isinstance(s, Mapping) and isinstance(s.get("source"), str)
                            for s in steps):
        return None
    messages: list[Message] = []
    for step in steps:
        role = _ROLES.get(step["source"].lower())
        if role is None:
            return None
        calls = tuple(
            ToolCall(str(c.get("function_name", c.get("name", "?"))),
                     _arguments(c.get("arguments", "")))
            for c in step.get("tool_calls") or [] if isinstance(c, Mapping))
        messages.append(Message(role, _text(step.get("message")), None, calls, _gold(step)))
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, Mapping) else None
        by_id = {}
        for call in step.get("tool_calls") or []:
            if isinstance(call, Mapping) and call.get("tool_call_id") is not None:
                by_id[str(call["tool_call_id"])] = str(call.get("function_name", "?"))
        for result in results or []:
            if isinstance(result, Mapping):
                name = by_id.get(str(result.get("source_call_id")))
                messages.append(Message("tool", _text(result.get("content")), name))
    return messages


def _transcript(text: str) -> list[Message] | None:
    tags = list(_TAG.finditer(text))
    if not tags or tags[0].start() != 0:
        return None
    messages: list[Message] = []
    for tag, following in zip(tags, [*tags[1:], None], strict=True):
        body = text[tag.end():following.start() if following is not None else len(text)]
        role = _ROLES[tag.group(1).lower()]
        lines = body.strip("\n").split("\n")
        calls = tuple(_folded_call(line) for line in lines if line.startswith(TOOL_CALL_MARK))
        content = "\n".join(line for line in lines if not line.startswith(TOOL_CALL_MARK))
        messages.append(Message(role, content.strip(), tag.group(2), calls))
    return messages


def _folded_call(line: str) -> ToolCall:
    call = line[len(TOOL_CALL_MARK):]
    name, _, rest = call.partition("(")
    return ToolCall(name.strip(), rest[:-1] if rest.endswith(")") else rest)


def transcript(messages: Iterable[Message], *, tools: bool = True) -> str:
    """Messages as a tagged transcript (`parse_conversation` reads it back), a blank line
    between messages. Without `tools`, tool results and folded tool calls are left out (an
    assistant message that only called tools is left out with them)."""
    parts = []
    for message in messages:
        if not tools and message.role == "tool":
            continue
        text = message.text if tools else message.content
        if not text and not tools:
            continue
        parts.append(f"{message.tag}: {text}")
    return "\n\n".join(parts)


def conversation_fields(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The fields whose values in these rows (a file's first rows) all look like conversations
    (empty values aside), in the rows' field order: what the import offers to judge per turn."""
    names: list[str] = []
    for row in rows:
        names += [str(n) for n in row if str(n) not in names]
    found = []
    for name in names:
        values = [row.get(name) for row in rows if row.get(name) not in (None, "")]
        if values and all(parse_conversation(v) is not None for v in values):
            found.append(name)
    return found


def turn_items(items: Sequence[Item], field: str, *,
               context: ContextChoice | None = None) -> list[Item]:
    """One item per assistant turn of each item's conversation (see the module docstring).

    Args:
        items: the items, each holding a conversation in `field`.
        field: the field holding the conversation; it is replaced by the turn's fields.
        context: what each turn's `context` holds (default: the thread up to the turn, tool
            results included).

    Raises:
        DataError: an item without the field, a value that is not a conversation, or items
            that already have a field a turn adds.
    """
    context = context or ContextChoice()
    clash = [name for name in TURN_FIELDS
             if name != field and any(name in item.fields for item in items[:1])]
    if clash:
        raise DataError(f"The items already have a field {clash[0]!r}: rename it before judging "
                        f"per turn (a turn's fields are {', '.join(TURN_FIELDS)}).")
    turns: list[Item] = []
    for item in items:
        if field not in item.fields:
            raise DataError(f"Item {item.id!r} has no field {field!r}; every item needs its "
                            "conversation to be judged per turn.")
        messages = parse_conversation(item.fields[field])
        if messages is None:
            raise DataError(
                f"Item {item.id!r}: the field {field!r} does not hold a conversation (a list "
                "of role/content messages, its JSON, an ATIF trajectory, or a transcript of "
                "USER: / ASSISTANT: lines with an assistant turn).")
        shared = {k: v for k, v in item.fields.items() if k != field}
        thread = transcript(messages)
        n = 0
        for index, message in enumerate(messages):
            if message.role != "assistant":
                continue
            n += 1
            turns.append(Item(
                id=f"{item.id}#t{n}",
                fields={**shared, "thread_id": item.id, "turn_index": n, "turn": message.text,
                        "context": _context(messages[:index], context), "thread": thread},
                gold=message.gold,
            ))
    return turns


def _context(before: Sequence[Message], choice: ContextChoice) -> str:
    if choice.kind == "alone":
        return ""
    # Without tools, a message that only called tools says nothing the user saw either.
    kept = [m for m in before if choice.tools or (m.role != "tool" and m.content)]
    if choice.kind == "last":
        kept = kept[-choice.k:]
    return transcript(kept, tools=choice.tools)


def last_messages(text: str, k: int) -> str | None:
    """The last `k` messages of a transcript, as a transcript; None when the text is not one.
    The context guard judges such a window of an over-long `context` or `thread`."""
    messages = _transcript(text.strip())
    if messages is None:
        return None
    return transcript(messages[-k:])


@dataclass(frozen=True, slots=True)
class ThreadVerdict:
    """A thread's verdict as a rule over its turns' final decisions.

    Attributes:
        thread_id: the thread.
        turns: its judged turns.
        decided: of them, those with a final decision.
        failing: the turn indices whose decision is a failing label, in order.
        verdict: "fails" when any turn fails, "passes" when every turn is decided and none
            fails, "open" otherwise (some turn has no decision yet).
    """

    thread_id: str
    turns: int
    decided: int
    failing: tuple[int, ...]
    verdict: Literal["fails", "passes", "open"]

    @property
    def first_failing(self) -> int | None:
        """The first turn that fails (for a trajectory: the step where it went wrong)."""
        return self.failing[0] if self.failing else None


def thread_verdicts(decisions: Iterable[tuple[str, int, str | None]],
                    failing_labels: Collection[str]) -> list[ThreadVerdict]:
    """Each thread's verdict from its turns' final decisions, threads in first-seen order.

    Args:
        decisions: (thread id, turn index, final label or None while undecided) per turn.
        failing_labels: the labels that count as a failed turn (`failing_labels` guesses them).
    """
    by_thread: dict[str, list[tuple[int, str | None]]] = {}
    for thread_id, index, label in decisions:
        by_thread.setdefault(str(thread_id), []).append((int(index), label))
    verdicts = []
    for thread_id, turns in by_thread.items():
        turns.sort()
        failing = tuple(i for i, label in turns if label is not None and label in failing_labels)
        decided = sum(label is not None for _, label in turns)
        verdict: Literal["fails", "passes", "open"] = (
            "fails" if failing else "passes" if decided == len(turns) else "open")
        verdicts.append(ThreadVerdict(thread_id, len(turns), decided, failing, verdict))
    return verdicts


# Labels that name a failure on the scales people write (case ignored).
_FAILING_WORDS = frozenset({"fail", "failed", "no", "bad", "wrong", "incorrect", "unsafe",
                            "unhelpful", "reject", "rejected", "violation", "error"})


def failing_labels(labels: Sequence[str]) -> list[str]:
    """The labels of a scale that read as a failed turn (FAIL, no, bad, wrong, unsafe...)."""
    return [label for label in labels if label.strip().lower() in _FAILING_WORDS]
