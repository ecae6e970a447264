"""The context budget guard: an over-long prompt is named before the run (the estimate, the Run
page), and sent whole, skipped or windowed as the panel says, never cut silently; a server that
reports far fewer prompt tokens than were sent is flagged as having cut the prompt."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib

import httpx
import pytest

from judging.engine.calls import CallRunner, MemoryCache
from judging.engine.calls.prepare import prepare_call
from judging.engine.context_guard import guard, likely_truncated, needed_tokens, over_long
from judging.engine.estimate import estimate_run
from judging.engine.panel_runner import judge
from judging.panel.context_limits import ContextGuard, context_window
from judging.panel.conversation import Message, last_messages, transcript
from judging.panel.critics import Critic
from judging.panel.panel_files import dump_panel, load_panel
from judging.panel.panel_model import Panel
from judging.runs.background.batch_phase import _missing
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.cli import main
from judging.runs.stored.stored_run import load_run
from judging.scales import Scale
from judging.simulator.sim_server import Profile
from judging.verdicts import FailureKind, Item, Verdict
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.panels import save_panel
from tests.test_app_smoke import no_exception, open_page

SCALE = Scale(kind="nominal", labels=["PASS", "FAIL"])
# A thread of 300 messages of 1,000 characters: 300,000 characters of context.
LONG = transcript([Message("user" if n % 2 == 0 else "assistant", f"{n:04d}" + "x" * 994)
                   for n in range(300)])
SHORT = "USER: Can I return it?\n\nASSISTANT: Within 30 days, yes."


def _critic(name: str, model: str, **more: object) -> Critic:
    return Critic.model_validate({"name": name, "vendor": "custom", "model": model,
                                  "base_url": "http://127.0.0.1:9/v1",
                                  "prompt_template": "{context}\nReply: {turn}", **more})


def _item(item_id: str, context: str) -> Item:
    return Item(item_id, {"context": context, "turn": "Yes.", "thread": context})


def test_known_windows_and_a_critic_s_own_override():
    assert context_window(_critic("a", "gpt-4o-mini")) == 128_000
    assert context_window(_critic("a", "gpt-4.1")) == 1_047_576
    assert context_window(_critic("a", "openai/gpt-5.1")) == 400_000
    assert context_window(_critic("a", "claude-sonnet-4-5")) == 200_000
    assert context_window(_critic("a", "gemini-2.5-pro")) == 1_048_576
    assert context_window(_critic("a", "o3")) == 200_000
    ollama = Critic(name="l", vendor="ollama", model="llama3", prompt_template="{turn}")
    assert context_window(ollama) == 4096
    assert context_window(_critic("a", "my-model")) is None
    assert context_window(_critic("a", "my-model", context_window=32_000)) == 32_000


def test_the_estimate_names_a_300000_character_item_for_each_critic_it_overflows():
    assert len(LONG) > 300_000
    # 300,000 characters are about 75,000 tokens: they fit gpt-4o-mini's 128,000 once, not
    # twice (a prompt showing the context and the whole thread), nor a local 4,096.
    both = "{context}\n{thread}\nReply: {turn}"
    panel = Panel(scale=SCALE, critics=[_critic("mini", "gpt-4o-mini"),
                                        _critic("mini-both", "gpt-4o-mini", prompt_template=both),
                                        _critic("local", "llama3", context_window=4096)])
    items = [_item("short", SHORT), _item("long", LONG)]
    estimate = estimate_run(panel, items, 2, items=items)
    assert [(o.item_id, o.critic) for o in estimate.over_long] == [("long", "mini-both"),
                                                                   ("long", "local")]
    tokens = estimate.over_long[1].tokens
    # Its characters at four a token, plus the reply's max_tokens.
    assert 75_000 + 512 < tokens < 76_000 + 512
    assert estimate.over_long[1].sentence() == (
        f"long: about {tokens:,} tokens for local, whose window is 4,096")
    assert 150_000 < estimate.over_long[0].tokens < 152_000
    assert "1 items are too long for a critic's context window" in estimate.note
    assert "sent whole anyway" in estimate.note
    assert estimate_run(panel, items, 2).over_long == []  # not asked: not checked


def _served(panel: Panel, item: Item) -> tuple[Verdict, list[bytes]]:
    sent: list[bytes] = []

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(200, json={
            "choices": [{"message": {"content": '{"label": "PASS", "confidence": 0.9}'},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(request.content) // 4, "completion_tokens": 5}})

    with CallRunner(cache=MemoryCache(), transport=httpx.MockTransport(reply)) as runner:
        outcome = judge(panel, item, runner=runner)
    return outcome.verdicts[0], sent


@pytest.mark.parametrize("over", ["send", "skip", "window"])
def test_an_over_long_prompt_is_sent_skipped_or_windowed_as_the_panel_says(over):
    panel = Panel(scale=SCALE, critics=[_critic("local", "llama3", context_window=32_000)],
                  context_guard=ContextGuard(over_long=over, window=3))
    verdict, sent = _served(panel, _item("long", LONG))
    need = needed_tokens(panel.critics[0], _item("long", LONG), SCALE)
    if over == "send":
        (body,) = sent
        assert LONG in json.loads(body)["messages"][1]["content"]
        assert verdict.ok and verdict.message is None
    elif over == "skip":
        assert sent == []
        assert verdict.failure is FailureKind.ITEM_ERROR and verdict.attempts == 0
        assert verdict.message == (
            f"Not sent: the prompt is about {need:,} tokens, over the window of 32,000 of "
            "llama3 (the panel's context guard skips over-long items). Judge a window of it, "
            "or send anyway.")
    else:
        (body,) = sent
        window = last_messages(LONG, 3)
        assert window is not None and window.startswith("ASSISTANT: 0297") and len(window) < 3100
        assert json.loads(body)["messages"][1]["content"].startswith(
            f'<item field="context">\n{window}\n</item>\nReply: ')
        assert verdict.ok
        assert verdict.message == (
            "Judged on a window: the last 3 messages of context and thread (the whole prompt "
            f"was about {need:,} tokens, over the window of 32,000 of llama3).")
    # A short item goes as it is, whatever the policy.
    verdict, sent = _served(panel, _item("short", SHORT))
    assert len(sent) == 1 and verdict.ok and verdict.message is None


def test_a_window_that_still_does_not_fit_or_a_field_without_messages_is_skipped():
    critic = _critic("local", "llama3", context_window=1000)
    policy = ContextGuard(over_long="window", window=50)
    outcome = guard(critic, _item("long", LONG), SCALE, policy)
    assert isinstance(outcome, Verdict) and "the last 50 messages do not fit" in str(
        outcome.message)
    prose = Item("p", {"context": "x" * 300_000, "turn": "y"})
    outcome = guard(critic, prose, SCALE, policy)
    assert isinstance(outcome, Verdict) and outcome.failure is FailureKind.ITEM_ERROR


def test_a_server_that_reports_truncated_prompt_tokens_is_flagged(simulator_factory):
    """The simulator plays Ollama with num_ctx 2048: it counts 2,048 prompt tokens for a
    prompt of some 75,000 and answers as usual. The verdict stands, flagged."""
    server = simulator_factory(profiles={"llama3": Profile(accuracy=1.0, num_ctx=2048),
                                         "roomy": Profile(accuracy=1.0)})
    critics = [Critic(name=m, vendor="custom", base_url=server.base_url, model=m,
                      prompt_template="{context}\nReply: {turn}") for m in ("llama3", "roomy")]
    panel = Panel(scale=SCALE, critics=critics)
    outcome = judge(panel, _item("long", LONG))
    cut, whole = outcome.verdicts
    assert cut.ok and cut.tokens_in == 2048
    assert likely_truncated(cut) == (
        "Likely cut by the server: it counted 2,048 prompt tokens for about "
        f"{(sum(len(m['content']) for m in cut.raw_request['body']['messages']) + 3) // 4:,} sent, so "
        "it judged part of the prompt (a local server's context length, e.g. Ollama's "
        "num_ctx, is the usual cause).")
    assert whole.ok and whole.tokens_in > 75_000 and likely_truncated(whole) is None
    short = judge(panel, _item("short", SHORT)).verdicts[0]
    assert likely_truncated(short) is None  # too short to tell


def test_over_long_skips_plugin_critics_and_unknown_windows():
    rule = Critic.model_validate({"name": "r", "kind": "rule",
                                  "rule": {"field": "turn", "check": "length", "max": 10}})
    found = over_long([rule, _critic("u", "my-model")], [_item("long", LONG)], SCALE)
    assert found == []


def test_the_run_page_names_over_long_items_and_the_choice_changes_the_panel(
        app_db: pathlib.Path, tmp_path: pathlib.Path) -> None:
    data = tmp_path / "turns.jsonl"
    data.write_text("\n".join(json.dumps({"id": i.id, **i.fields}) for i in (
        _item("short", SHORT), _item("long", LONG))), encoding="utf-8")
    db = open_db(app_db)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="turns")
    panel = Panel(name="local", scale=SCALE,
                  critics=[_critic("local", "llama3", context_window=32_000)])
    save_panel(db, panel_hash="p" * 16, name=panel.name, yaml_text=dump_panel(panel))
    at = open_page("run")
    no_exception(at)
    assert any("1 item is too long for a critic's context window" in w.value
               for w in at.warning)
    at.radio(key="new_run_over_long").set_value("skip").run()
    no_exception(at)
    at.button(key="start_run").click().run()
    no_exception(at)
    (run_id,) = [r[0] for r in db.execute("SELECT id FROM runs").fetchall()]
    assert load_run(db, run_id).panel.context_guard.over_long == "skip"
    assert load_run(db, run_id).dataset_id == dataset.id


def test_review_flags_a_verdict_the_server_cut_and_notes_a_window(
        app_db: pathlib.Path, tmp_path: pathlib.Path, simulator_factory) -> None:
    server = simulator_factory(profiles={"llama3": Profile(accuracy=1.0, num_ctx=2048),
                                         "small": Profile(accuracy=1.0)})
    data = tmp_path / "turns.jsonl"
    data.write_text(json.dumps({"id": "long", **_item("long", LONG).fields}), encoding="utf-8")
    db = open_db(app_db)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="turns")
    panel = Panel(scale=SCALE, context_guard=ContextGuard(over_long="window", window=2),
                  critics=[Critic(name=m, vendor="custom", base_url=server.base_url, model=m,
                                  prompt_template="{context}\nReply: {turn}",
                                  context_window=window)
                           for m, window in (("llama3", None), ("small", 8000))])
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(str(app_db), run_id).wait(60)
    at = open_page("review", query={"run": str(run_id), "item": "long"})
    no_exception(at)
    at.toggle(key=f"rv{run_id}.disagree").set_value(False).run()
    no_exception(at)
    warnings = [w.value for w in at.warning]
    assert any(w.startswith("Likely cut by the server: it counted 2,048 prompt tokens")
               for w in warnings), warnings
    # A caption is markdown: the page escapes the note's colons (`pages.ui.text_format.plain`).
    assert any(c.value.startswith("Judged on a window")
               and "the last 2 messages of context and thread" in c.value for c in at.caption)


def test_jurybox_judge_names_the_over_long_items_before_it_sends_anything(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "turns.jsonl"
    data.write_text("\n".join(json.dumps({"id": i.id, **i.fields}) for i in (
        _item("short", SHORT), _item("long", LONG))), encoding="utf-8")
    panel = tmp_path / "panel.yaml"
    panel.write_text(dump_panel(Panel(
        scale=SCALE, context_guard=ContextGuard(over_long="skip"),
        critics=[Critic(name="small", model="sim-careful", context_window=4096,
                        prompt_template="{context}\nReply: {turn}")])), encoding="utf-8")
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "cli.db"))
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["judge", "--data", str(data), "--panel", str(panel), "--quiet"])
    tokens = needed_tokens(load_panel(panel.read_text()).critics[0], _item("long", LONG), SCALE)
    assert ("1 item is too long for a critic's context window (estimated at 4 characters a "
            "token, plus max_tokens); the run skips them (context_guard.over_long: skip):\n"
            f"  long: about {tokens:,} tokens for small, whose window is 4,096\n"
            ) in err.getvalue()
    assert code == 0
    assert "Calls:          2 (1 verdicts, 1 failed)" in out.getvalue()


@pytest.mark.parametrize("over", ["skip", "window"])
def test_a_batch_critic_submits_what_the_live_phase_will_ask(tmp_path: pathlib.Path, over):
    """A batch line is the very request the live phase makes: an over-long item goes windowed,
    or not at all when the guard skips it (the live phase then stores why)."""
    critic = _critic("b", "llama3", context_window=32_000, mode="batch")
    panel = Panel(scale=SCALE, critics=[critic],
                  context_guard=ContextGuard(over_long=over, window=3))
    db = open_db(tmp_path / "b.db")
    items = [_item("short", SHORT), _item("long", LONG)]
    prepared = list(_missing(db, 1, critic, panel, items, None))
    if over == "skip":
        assert len(prepared) == 1 and SHORT in prepared[0].body["messages"][1]["content"]
        return
    windowed = guard(critic, items[1], SCALE, panel.context_guard)
    assert not isinstance(windowed, Verdict)
    assert [p.content for p in prepared] == [
        prepare_call(critic, items[0], SCALE).content,
        prepare_call(critic, windowed.item, SCALE).content]
