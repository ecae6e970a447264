"""What the open item shows on Review: its fields, the consensus line, what each cascade tier
made of it, and each critic's card (with its chain of calls for a compound critic)."""

from __future__ import annotations

import json
from typing import Any, Literal

import streamlit as st

from judging.panel.conversation import Message, parse_conversation
from judging.panel.pairwise import PairwiseConfig
from judging.runs.stored.threads import run_threads
from judging.scales import Scale
from judging.verdicts import FailureKind, TierVerdict, Verdict
from pages.ui.cards import raw_exchange, verdict_card
from pages.ui.review.review_list import NO_CONSENSUS, shown_value
from pages.ui.state import db
from pages.ui.text_format import plain


def verdict_from_row(row: dict[str, Any]) -> Verdict:
    """A stored call (as `storage.reviewing.review_queue.item_detail` gives it) as a `Verdict`."""
    failure = row.get("failure")
    return Verdict(
        critic=row["critic"],
        item_id=str(row.get("item_id", "")),
        label=row.get("label"),
        score=row.get("score"),
        confidence=row.get("confidence"),
        reasoning=row.get("reasoning"),
        failure=FailureKind(failure) if failure else None,
        message=row.get("message"),
        raw_request=row.get("raw_request"),
        raw_response=row.get("raw_response"),
        latency_ms=row.get("latency_ms"),
        attempts=row.get("attempts") or 0,
        tokens_in=row.get("tokens_in"),
        tokens_out=row.get("tokens_out"),
        cost_usd=row.get("cost_usd"),
        vendor=row.get("vendor"),
        model=row.get("model"),
        simulated=bool(row.get("simulated")),
        cached=bool(row.get("cached")),
    )


# A pairwise item's two answers share the field column beside the decision, about 250 px
# each in a 1,400 px window: a long answer ran to 3,700 px, and reading it took the decision
# out of view. An answer longer than a box of this height scrolls inside it instead.
ANSWER_BOX_PX = 420
_TALL_CHARS, _TALL_LINES = 600, 16  # about what fills such a box at that width


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _tall(text: str) -> bool:
    """Whether `text` would run past an answer box in a column of about 250 px."""
    return len(text) > _TALL_CHARS or text.count("\n") >= _TALL_LINES


def item_fields(detail: dict[str, Any], pairwise: PairwiseConfig | None = None, *,
                show_gold: bool = True) -> None:
    """The item's fields as plain text (never markdown or HTML), plus its gold label (not in a
    blind first pass: `show_gold` False); on a pairwise panel, responses A and B side by side
    under the other fields."""
    fields = detail["fields"]
    compared = (pairwise.first_field, pairwise.second_field) if pairwise and pairwise.active \
        else ()
    per_turn = isinstance(fields.get("thread"), str) and "turn_index" in fields
    with st.container(border=True):
        for name, value in fields.items():
            if name in compared or (per_turn and name in ("turn", "context")):
                continue  # a turn and its context are drawn in the thread's transcript
            st.caption(plain(name))  # a column name is data
            # A conversation reads as one; the thread of a turn marks the turn judged.
            messages = (parse_conversation(value)
                        if (per_turn and name == "thread") or isinstance(value, (list, dict))
                        else None)
            if messages is not None:
                transcript_view(messages, fields.get("turn_index") if per_turn else None)
            elif isinstance(value, str):
                st.text(value)
            else:
                st.text(json.dumps(value, ensure_ascii=False, indent=2, default=str))
        if pairwise is not None and compared:
            systems = pairwise.systems(fields)
            texts = [_as_text(fields.get(name)) for name in compared]
            # Either long: both scroll in boxes of one height, side by side.
            height: int | Literal["content"] = ANSWER_BOX_PX if any(
                _tall(text) for text in texts) else "content"
            for column, side, name, system, text in zip(st.columns(2), "AB", compared, systems,
                                                        texts, strict=True):
                with column.container(border=True):
                    column_title = f"Response {side}" + (f" · {system}" if system != name else "")
                    st.markdown(f"**{plain(column_title)}**")
                    with st.container(height=height, border=False):
                        st.text(text)
        if show_gold and detail.get("gold") is not None:
            st.caption("gold label")
            st.text(str(detail["gold"]))


# A role's avatar in the transcript; user and assistant have Streamlit's own.
_AVATARS = {"system": ":material/settings:", "tool": ":material/build:"}


def transcript_view(messages: list[Message], judged: Any = None) -> None:
    """A conversation as chat bubbles, text only: each message's role, its tool calls folded
    in an expander, and the assistant turn `judged` (1 for the first) marked and boxed."""
    turns = sum(m.role == "assistant" for m in messages)
    n = 0
    for message in messages:
        here = False
        if message.role == "assistant":
            n += 1
            here = judged is not None and str(n) == str(judged)
        box = st.container(border=True, key=f"judged_turn_{n}") if here else st.container()
        with box:
            if here:
                st.caption(f"The turn judged here: turn {n} of {turns}")
            with st.chat_message(message.role, avatar=_AVATARS.get(message.role)):
                if message.name:
                    st.caption(plain(message.name))
                if message.content:
                    st.text(message.content)
                if message.tool_calls:
                    with st.expander(f"{len(message.tool_calls)} tool call"
                                     f"{'s' if len(message.tool_calls) != 1 else ''}",
                                     expanded=here and not message.content):
                        for call in message.tool_calls:
                            st.text(f"{call.name}({call.arguments})")


def thread_line(run_id: int, item_id: str, detail: dict[str, Any]) -> None:
    """For a turn of a conversation, its thread's verdict over the turns' final decisions
    (`judging.runs.stored.threads`): it fails when any turn fails, and the first failing turn."""
    fields = detail["fields"]
    if "thread_id" not in fields or "turn_index" not in fields:
        return
    # Its turns are THREAD#t1..#tN, N its assistant messages: read those, not the whole run.
    messages = parse_conversation(fields.get("thread")) or []
    turns = sum(m.role == "assistant" for m in messages)
    ids = [f"{fields['thread_id']}#t{n}" for n in range(1, turns + 1)] or [item_id]
    threads, failing = run_threads(db(), run_id, item_ids=ids)
    thread = next((t for t in threads if t.thread_id == str(fields["thread_id"])), None)
    if thread is None:
        return
    where = (f", first at turn {thread.first_failing} (turns failing: "
             f"{', '.join(map(str, thread.failing))})" if thread.failing else "")
    st.text(f"Thread {fields['thread_id']}: {thread.verdict}{where}; {thread.decided} of "
            f"{thread.turns} turns decided. A thread fails when any turn is "
            f"{' or '.join(failing)}.")


def consensus_line(detail: dict[str, Any]) -> str:
    """"consensus KEEP · agreement 0.50 · per-item alpha 0.12 · 1 failed · final MERGE (override)",
    as plain text (show it with `st.text`), with a tie marked and the vote's note (how a tie was
    broken, which critics were left out)."""
    c = detail.get("consensus") or {}
    consensus = c.get("consensus")
    parts = [f"consensus {NO_CONSENSUS if consensus is None else shown_value(consensus)}"]
    if c.get("tie"):  # the tie rule chose, not a majority: the note below says how
        parts[0] += " (tied vote: the panel's tie rule decided)"
    if c.get("agreement") is not None:
        parts.append(f"agreement {c['agreement']:.2f}")
    if c.get("item_alpha") is not None:
        parts.append(f"per-item alpha {c['item_alpha']:.2f}")
    if c.get("failed"):
        parts.append(f"{c['failed']} failed")
    final = detail.get("final_label")
    if detail.get("overrides"):
        parts.append(f"final {shown_value(final)} (override)")
    elif (detail.get("decision") or {}).get("marked"):  # a rubric rescored by a reviewer
        parts.append(f"final {shown_value(final)} (a reviewer's criterion marks)")
    if c.get("note"):
        parts.append(str(c["note"]))
    return " · ".join(parts)


def cascade_lines(detail: dict[str, Any]) -> list[str]:
    """One line per cascade tier called for the item, in order, as plain text (show each with
    `st.text`): "tier 1 guardrails: rejected by no_pii (REJECT)". None without a cascade."""
    tiers = (detail.get("consensus") or {}).get("tiers") or []
    return [TierVerdict.from_dict(entry).text for entry in tiers]


def critic_cards(detail: dict[str, Any], *, per_row: int = 4, scale: Scale | None = None) -> None:
    """Every critic's card side by side (wrapping after `per_row`); with the panel's `scale`,
    replies that carry logprobs show each label's probability."""
    verdicts = [verdict_from_row({**row, "item_id": detail["item_id"]}) for row in detail["verdicts"]]
    if not verdicts:
        st.info("No critic has answered for this item yet.")
        return
    for start in range(0, len(verdicts), per_row):
        chunk = verdicts[start : start + per_row]
        wanted = []
        for column, verdict in zip(st.columns(len(chunk)), chunk):
            with column:
                calls = len(detail.get("steps", {}).get(verdict.critic) or []) or 1
                if verdict_card(verdict, key=f"raw.{detail['item_id']}.{verdict.critic}",
                                scale=scale, calls=calls):
                    wanted.append(verdict)
        # A raw exchange is a long JSON document: drawn under the row of cards, at full width,
        # not squeezed into a card.
        for verdict in wanted:
            with st.container(border=True):
                st.markdown(f"**Raw exchange of {plain(verdict.critic)}**")
                raw_exchange(verdict)
        for verdict in chunk:
            steps = detail.get("steps", {}).get(verdict.critic)
            if steps:
                chain_of_calls(verdict.critic, steps)


def chain_of_calls(critic: str, steps: list[dict[str, Any]]) -> None:
    """The calls behind a compound or repeated critic's verdict, in the order they were made."""
    samples = len({s["sample"] for s in steps})
    with st.expander(f"How {plain(critic)} decided: {len(steps)} calls"
                     + (f" over {samples} samples" if samples > 1 else "")):
        for step in steps:
            where = f"sample {step['sample'] + 1} · " if samples > 1 else ""
            if step["failure"]:
                answer = f"⚠ {step['failure']}: {step['message'] or ''}"
            elif step["label"] is not None or step["score"] is not None:
                answer = str(step["label"] if step["label"] is not None else f"{step['score']:g}")
            else:
                answer = "(prose)"
            cached = " · from cache" if step["cached"] else ""
            st.markdown(f"**{plain(where + step['role'])}** → {plain(answer)}{cached}")
            if step["reasoning"]:
                st.text(step["reasoning"])
