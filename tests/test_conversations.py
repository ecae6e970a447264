"""Conversations judged per assistant turn: the shapes a conversation comes in, one item per
turn with the context the importer chose, what a critic is sent (byte for byte), the thread's
verdict over its turns, the Datasets page's import and the demo run on the simulator."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import pathlib

import httpx
import pytest

from judging.demo import conversation_dataset_path, conversation_panel_path, demo_gold
from judging.engine.calls import CallRunner, MemoryCache
from judging.engine.panel_runner import judge
from judging.errors import DataError
from judging.panel.conversation import (
    ContextChoice,
    Message,
    ToolCall,
    conversation_fields,
    failing_labels,
    last_messages,
    parse_conversation,
    thread_verdicts,
    transcript,
    turn_items,
)
from judging.panel.critics import DATA_PREAMBLE, Critic
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.cli import main
from judging.runs.intake.turn_dataset import turns_dataset
from judging.runs.stored.stored_run import run_decisions
from judging.runs.stored.threads import run_threads, threads_csv
from judging.scales import Scale
from judging.simulator.sim_server import Profile
from judging.verdicts import Item
from storage.datasets.dataset_store import list_datasets, load_items, save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from tests.test_app_smoke import no_exception, open_page

CHAT = [
    {"role": "system", "content": "Refunds within 30 days only."},
    {"role": "user", "content": "Can I return my blender?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "lookup_order", "arguments": '{"order": "A-1"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"delivered_days_ago": 45}'},
    {"role": "assistant", "content": "Yes, full refund.", "gold": "FAIL"},
    {"role": "user", "content": "Thanks"},
    {"role": "assistant", "content": [{"type": "text", "text": "You're welcome."}]},
]
MESSAGES = [
    Message("system", "Refunds within 30 days only."),
    Message("user", "Can I return my blender?"),
    Message("assistant", "", None, (ToolCall("lookup_order", '{"order": "A-1"}'),)),
    Message("tool", '{"delivered_days_ago": 45}', "lookup_order"),
    Message("assistant", "Yes, full refund.", gold="FAIL"),
    Message("user", "Thanks"),
    Message("assistant", "You're welcome."),
]
ATIF = {"schema_version": "ATIF-v1.4", "session_id": "s1", "steps": [
    {"step_id": 1, "source": "user", "message": "Can I return my blender?"},
    {"step_id": 2, "source": "agent", "message": "",
     "tool_calls": [{"tool_call_id": "c1", "function_name": "lookup_order",
                     "arguments": {"order": "A-1"}}],
     "observation": {"results": [{"source_call_id": "c1",
                                  "content": '{"delivered_days_ago": 45}'}]}},
    {"step_id": 3, "source": "agent", "message": "Yes, full refund."},
]}


@pytest.mark.parametrize("value", [CHAT, json.dumps(CHAT), {"messages": CHAT}])
def test_openai_messages_as_a_list_its_json_or_under_messages_read_alike(value):
    assert parse_conversation(value) == MESSAGES


def test_an_atif_trajectory_reads_as_messages_with_its_observations_as_tool_results():
    assert parse_conversation(ATIF) == [
        Message("user", "Can I return my blender?"),
        Message("assistant", "", None, (ToolCall("lookup_order", '{"order": "A-1"}'),)),
        Message("tool", '{"delivered_days_ago": 45}', "lookup_order"),
        Message("assistant", "Yes, full refund."),
    ]


def test_a_tagged_transcript_reads_back_what_transcript_writes():
    text = ("User: Is the jug dishwasher safe?\nAssistant: Yes.\n\nHUMAN: And the blades?\n"
            "AI: No, by hand:\nthey dull.")
    assert parse_conversation(text) == [
        Message("user", "Is the jug dishwasher safe?"), Message("assistant", "Yes."),
        Message("user", "And the blades?"), Message("assistant", "No, by hand:\nthey dull.")]
    without_gold = [Message(m.role, m.content, m.name, m.tool_calls) for m in MESSAGES]
    assert parse_conversation(transcript(MESSAGES)) == without_gold
    assert transcript(MESSAGES[:5]) == (
        "SYSTEM: Refunds within 30 days only.\n\nUSER: Can I return my blender?\n\n"
        'ASSISTANT: -> tool call lookup_order({"order": "A-1"})\n\n'
        'TOOL (lookup_order): {"delivered_days_ago": 45}\n\nASSISTANT: Yes, full refund.')


@pytest.mark.parametrize("value", [
    "The user: asked", "User: only one line", "USER: hi\nUSER: hello", ["a", "b"],
    [{"role": "user", "content": "hi"}], [{"role": "wizard", "content": "x"},
                                          {"role": "assistant", "content": "y"}],
    {"steps": "no"}, 3, None, "[not json", {"text": "x"},
])
def test_what_is_not_a_conversation_is_none(value):
    assert parse_conversation(value) is None


def test_the_import_offers_the_fields_whose_rows_all_hold_conversations():
    rows = [{"id": "1", "chat": CHAT, "note": "User: hi", "log": json.dumps(CHAT)},
            {"id": "2", "chat": ATIF, "note": "x", "log": None}]
    assert conversation_fields(rows) == ["chat", "log"]


def test_each_assistant_turn_becomes_an_item_with_the_context_chosen():
    item = Item("c9", {"conversation": CHAT, "channel": "chat"})
    turns = turn_items([item], "conversation")
    assert [t.id for t in turns] == ["c9#t1", "c9#t2", "c9#t3"]
    second = turns[1]
    assert second.gold == "FAIL" and turns[0].gold is None
    assert set(second.fields) == {"channel", "thread_id", "turn_index", "turn", "context",
                                  "thread"}
    assert (second.fields["thread_id"], second.fields["turn_index"]) == ("c9", 2)
    assert second.fields["turn"] == "Yes, full refund."
    assert second.fields["context"] == transcript(MESSAGES[:4])
    assert second.fields["thread"] == transcript(MESSAGES)
    assert turns[0].fields["turn"] == '-> tool call lookup_order({"order": "A-1"})'

    def context(choice: ContextChoice) -> str:
        return str(turn_items([item], "conversation", context=choice)[1].fields["context"])

    assert context(ContextChoice("alone")) == ""
    assert context(ContextChoice("last", k=2)) == (
        'ASSISTANT: -> tool call lookup_order({"order": "A-1"})\n\n'
        'TOOL (lookup_order): {"delivered_days_ago": 45}')
    assert context(ContextChoice("before", tools=False)) == (
        "SYSTEM: Refunds within 30 days only.\n\nUSER: Can I return my blender?")
    assert context(ContextChoice("last", k=1, tools=False)) == "USER: Can I return my blender?"
    assert last_messages(transcript(MESSAGES), 2) == "USER: Thanks\n\nASSISTANT: You're welcome."


@pytest.mark.parametrize(("items", "message"), [
    ([Item("a", {"x": 1})], "Item 'a' has no field 'conversation'"),
    ([Item("a", {"conversation": "just text"})], "does not hold a conversation"),
    ([Item("a", {"conversation": CHAT, "turn": "x"})], "already have a field 'turn'"),
])
def test_turns_that_cannot_be_made_are_refused_with_a_sentence(items, message):
    with pytest.raises(DataError, match=message):
        turn_items(items, "conversation")
    with pytest.raises(DataError, match="'alone', 'last' or 'before'"):
        ContextChoice("all")  # type: ignore[arg-type]


def test_a_thread_fails_when_any_turn_fails_and_names_its_first_failing_turn():
    verdicts = thread_verdicts(
        [("t1", 2, "PASS"), ("t1", 1, "PASS"), ("t2", 3, "FAIL"), ("t2", 1, "PASS"),
         ("t2", 2, "FAIL"), ("t3", 1, "PASS"), ("t3", 2, None), ("t4", 1, None),
         ("t4", 2, "FAIL")], failing_labels(["PASS", "FAIL"]))
    assert [(v.thread_id, v.verdict, v.first_failing, v.decided) for v in verdicts] == [
        ("t1", "passes", None, 2), ("t2", "fails", 2, 3), ("t3", "open", None, 1),
        ("t4", "fails", 2, 1)]
    assert failing_labels(["yes", "no", "Unsafe", "ok"]) == ["no", "Unsafe"]


def _sent_bodies(panel: Panel, items: list[Item]) -> list[bytes]:
    sent: list[bytes] = []

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(200, json={
            "choices": [{"message": {"content": '{"label": "PASS", "confidence": 0.9}'},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

    with CallRunner(cache=MemoryCache(), transport=httpx.MockTransport(reply)) as runner:
        for item in items:
            judge(panel, item, runner=runner)
    return sent


def test_the_context_chosen_is_what_the_critic_is_sent_byte_for_byte():
    critic = Critic(name="c", vendor="custom", base_url="http://127.0.0.1:9/v1", model="m",
                    prompt_template="Before:\n{context}\nReply:\n{turn}")
    panel = Panel(scale=Scale(kind="nominal", labels=["PASS", "FAIL"]), critics=[critic])
    item = Item("c9", {"conversation": CHAT})
    bodies = {kind: _sent_bodies(panel, [turn_items([item], "conversation", context=ContextChoice(
        kind))[1]])[0] for kind in ("alone", "before")}
    expected = {
        "alone": "Before:\n<item field=\"context\">\n\n</item>\nReply:\n"
                 "<item field=\"turn\">\nYes, full refund.\n</item>",
        "before": "Before:\n<item field=\"context\">\n" + transcript(MESSAGES[:4]) +
                  "\n</item>\nReply:\n<item field=\"turn\">\nYes, full refund.\n</item>",
    }
    for kind, body in bodies.items():
        want = {"model": "m", "messages": [
            {"role": "system", "content": DATA_PREAMBLE},
            {"role": "user", "content": expected[kind] + "\n\n" + (
                'Answer with one JSON object only: {"label": exactly one of: PASS, FAIL, '
                '"confidence": a number from 0 to 1, "reasoning": "one or two sentences"}.')}],
            "temperature": 0.0, "max_tokens": 512, "response_format": {"type": "json_object"}}
        assert body == json.dumps(want, sort_keys=True).encode(), kind
    assert bodies["alone"] != bodies["before"]


def _demo_run(db_path: pathlib.Path, simulator_factory) -> tuple[int, int]:
    """The demo panel on the demo chats, imported per turn (thread up to the turn), on a
    simulator whose critics answer what their text shows (`demo_gold`): (dataset, run)."""
    server = simulator_factory(profiles={name: Profile(accuracy=1.0)
                                         for name in ("sim-careful", "sim-strict")},
                               gold=demo_gold())
    panel = load_panel(conversation_panel_path().read_text(encoding="utf-8"))
    panel = panel.model_copy(update={"critics": [
        c.model_copy(update={"vendor": "custom", "base_url": server.base_url})
        for c in panel.critics]})
    db = open_db(db_path)
    parsed = turns_dataset(read_dataset(conversation_dataset_path(), id_column="id"),
                           "conversation")
    dataset = save_dataset(db, parsed, name="chats")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(str(db_path), run_id).wait(60)
    return dataset.id, run_id


def test_the_demo_run_per_turn_flips_between_the_turn_alone_and_the_thread(
        tmp_path: pathlib.Path, simulator_factory):
    """The planted turns split the panel two against two (the turn alone against the thread),
    and the thread verdict names the first failing step."""
    db_path = tmp_path / "c.db"
    dataset_id, run_id = _demo_run(db_path, simulator_factory)
    db = open_db(db_path)
    rows = db.execute("SELECT item_id, critic, label FROM calls WHERE run_id = ?",
                      [run_id]).fetchall()
    by_item: dict[str, dict[str, str]] = {}
    for item_id, critic, label in rows:
        by_item.setdefault(item_id, {})[critic] = label
    flipped = {i: v for i, v in by_item.items() if v["alone-careful"] != v["thread-careful"]}
    assert flipped == {
        "refund-late#t3": {"alone-careful": "PASS", "alone-strict": "PASS",
                           "thread-careful": "FAIL", "thread-strict": "FAIL"},
        "dishwasher-yes#t1": {"alone-careful": "FAIL", "alone-strict": "FAIL",
                              "thread-careful": "PASS", "thread-strict": "PASS"},
        "wrong-order#t1": {"alone-careful": "PASS", "alone-strict": "PASS",
                           "thread-careful": "FAIL", "thread-strict": "FAIL"},
    }
    decisions = run_decisions(db, run_id)
    fields = {i.id: i.fields for i in load_items(db, dataset_id)}
    threads = thread_verdicts(
        [(fields[i]["thread_id"], fields[i]["turn_index"], label) for i, label in
         zip(decisions["item_id"], decisions["final_label"], strict=True)], ["FAIL"])
    assert {t.thread_id: (t.verdict, t.first_failing) for t in threads} == {
        "refund-late": ("fails", 3), "dishwasher-yes": ("fails", 1),
        "wrong-order": ("fails", 1), "descale": ("passes", None)}


def test_review_shows_the_thread_as_a_transcript_and_next_moves_to_the_next_turn(
        app_db: pathlib.Path, simulator_factory) -> None:
    _, run_id = _demo_run(app_db, simulator_factory)
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id), "item": "refund-late#t3"})
    no_exception(at)
    at.toggle(key=k + "disagree").set_value(False).run()
    at.selectbox(key=k + "sort").set_value("item").run()
    no_exception(at)
    roles = [m.name for m in at.chat_message]
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool", "assistant",
                     "user", "assistant"]
    captions = [c.value for c in at.caption]
    assert "The turn judged here: turn 3 of 4" in captions
    texts = [t.value for t in at.text]
    assert "Yes, you can get a full refund. I have started it for you." in texts
    assert not any(isinstance(v, str) and v.startswith("[{") for v in texts)  # no repr
    assert [e.label for e in at.expander if "tool call" in e.label] == ["1 tool call"]
    assert ("Thread refund-late: fails, first at turn 3 (turns failing: 3); 4 of 4 turns "
            "decided. A thread fails when any turn is FAIL.") in texts
    at.button(key=k + "next").click().run()
    no_exception(at)
    assert "The turn judged here: turn 4 of 4" in [c.value for c in at.caption]

    exported = open_page("export", query={"run": str(run_id)})
    no_exception(exported)
    (threads,) = [d.value for d in exported.dataframe if "verdict" in d.value.columns]
    assert threads.to_dict("records")[0] == {"thread": "refund-late", "verdict": "fails",
                                             "first failing turn": 3, "turns": 4, "decided": 4}
    threads_found, _ = run_threads(open_db(app_db), run_id)
    assert threads_csv(threads_found).decode().splitlines() == [
        "thread_id,thread_verdict,first_failing_turn,failing_turns,turns,decided",
        "refund-late,fails,3,3,4,4", "dishwasher-yes,fails,1,1,2,2",
        "wrong-order,fails,1,1 2,3,3", "descale,passes,,,2,2"]


def test_the_cli_writes_turns_that_jurybox_judge_reads(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "turns.csv"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["turns", "--data", str(conversation_dataset_path()), "--field",
                     "conversation", "--context", "last", "--last", "2", "--no-tools",
                     "--out", str(out)]) == 0
    assert ("Wrote 11 turns of 4 conversations to" in printed.getvalue()
            and "the last 2 messages before the turn, tool results left out" in
            printed.getvalue())
    rows = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    assert [r["id"] for r in rows][:3] == ["refund-late#t1", "refund-late#t2", "refund-late#t3"]
    assert rows[2]["context"] == ("ASSISTANT: I'm sorry to hear that. Could you give me your "
                                  "order number?\n\nUSER: It's A-1042.")
    assert rows[2]["gold"] == "FAIL" and rows[2]["turn_index"] == "3"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["turns", "--data", str(conversation_dataset_path()), "--field", "nope",
                     "--out", str(out)]) == 2


def test_the_datasets_page_imports_a_conversation_field_per_turn(app_db: pathlib.Path) -> None:
    at = open_page("datasets")
    data = conversation_dataset_path().read_bytes()
    at.file_uploader(key="dataset_upload").upload("chats.jsonl", data, "application/json").run()
    no_exception(at)
    assert at.selectbox[-1].label == "Judge this conversation field per turn"
    assert at.selectbox[-1].value == "conversation"
    at.radio(key="turns_context").set_value("last")
    at.number_input(key="turns_k").set_value(2)
    at.button(key="FormSubmitter:mapping-Import").click().run()
    no_exception(at)
    assert any("Imported 11 turns" in s.value for s in at.success)
    (dataset,) = list_datasets(open_db(app_db))
    assert dataset["fields"] == ["channel", "thread_id", "turn_index", "turn", "context",
                                 "thread"]
    first = load_items(open_db(app_db), dataset["id"], limit=1)[0]
    assert first.id == "refund-late#t1"
    assert first.fields["context"].startswith("SYSTEM: You are the support assistant")
    third = load_items(open_db(app_db), dataset["id"], limit=3)[2]
    assert third.fields["context"] == (  # k = 2
        'ASSISTANT: -> tool call lookup_order({"order": "A-1042"})\n\nTOOL (lookup_order): '
        '{"order": "A-1042", "item": "blender", "delivered_days_ago": 45}')

