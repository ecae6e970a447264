"""The simulated vendor over real HTTP on 127.0.0.1: determinism, accuracy, failure modes, stats."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import httpx
import pytest

from judging.engine.panel_runner import judge_many
from judging.panel.critics import Critic
from judging.scales import Scale
from judging.simulator.sim_server import Profile, SimulatorServer
from judging.simulator.sim_vendor import shared_simulator
from tests.fixtures_simulator import SimulatorFactory

LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]
NOMINAL = Scale(kind="nominal", labels=LABELS)
CRITIC = Critic(
    name="c", model="m", prompt_template="Class: {name}\nParent: {parent}\nDecide."
)


def messages(name: str, scale: Scale = NOMINAL, parent: str = "Audio") -> list[dict[str, str]]:
    """Exactly what a critic sends: the simulator must understand the real prompt format."""
    return CRITIC.build_messages({"name": name, "parent": parent}, scale)


def post(
    client: httpx.Client, server: SimulatorServer, model: str, msgs: list[dict[str, str]]
) -> httpx.Response:
    return client.post(
        f"{server.base_url}/chat/completions",
        json={"model": model, "messages": msgs, "max_tokens": 77},
        headers={"Authorization": "Bearer sk-test-not-a-key"},
    )


def content(response: httpx.Response) -> str:
    return response.json()["choices"][0]["message"]["content"]


def label_of(response: httpx.Response) -> str:
    return json.loads(content(response))["label"]


@pytest.fixture(scope="module")
def client() -> httpx.Client:
    with httpx.Client(timeout=10) as c:
        yield c


def _stable(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "created"}  # wall-clock seconds


def test_same_seed_same_replies_different_seed_different(
    simulator_factory: SimulatorFactory, client: httpx.Client
) -> None:
    profile = {"m": Profile(accuracy=0.6, rate_429=0.2, rate_500=0.1, rate_fenced=0.3)}
    names = [f"class {i}" for i in range(40)]

    def replay(seed: int, order: list[str]) -> dict[str, tuple[int, Any]]:
        server = simulator_factory(profiles=profile, seed=seed)
        replies = {}
        for name in order:
            r = post(client, server, "m", messages(name))
            replies[name] = (r.status_code, _stable(r.json()), r.headers.get("retry-after"))
        return replies

    first = replay(7, names)
    # Arrival order must not matter: each request's randomness depends on the request itself.
    assert replay(7, list(reversed(names))) == first
    other = replay(8, names)
    assert other != first
    assert {s for s, _, _ in first.values()} >= {200, 429}


def test_a_retried_request_draws_afresh_and_reset_replays(
    simulator_factory: SimulatorFactory, client: httpx.Client
) -> None:
    server = simulator_factory(profiles={"m": Profile(rate_429=0.5)})
    msgs = messages("Soundbars")
    statuses = [post(client, server, "m", msgs).status_code for _ in range(24)]
    assert set(statuses) == {200, 429}  # a retry can succeed after a 429
    reset = client.post(f"{server.root_url}/stats/reset")
    assert reset.status_code == 200 and server.stats()["total"] == 0
    assert [post(client, server, "m", msgs).status_code for _ in range(24)] == statuses


def test_accuracy_and_bias_follow_the_profile_with_gold(
    simulator_factory: SimulatorFactory, client: httpx.Client
) -> None:
    names = [f"candidate {i}" for i in range(200)]
    gold = {name: LABELS[i % 4] for i, name in enumerate(names)}
    server = simulator_factory(
        profiles={
            "good": Profile(accuracy=0.7),
            "lenient": Profile(accuracy=0.0, bias={"KEEP": 50.0}),
        },
        gold=gold,
    )
    good = [label_of(post(client, server, "good", messages(n))) == gold[n] for n in names]
    assert 0.6 <= sum(good) / len(good) <= 0.8
    lenient = [label_of(post(client, server, "lenient", messages(n))) for n in names]
    assert all(label != gold[n] for label, n in zip(lenient, names, strict=True))
    wrong_for_non_keep = [lab for lab, n in zip(lenient, names, strict=True) if gold[n] != "KEEP"]
    assert Counter(wrong_for_non_keep)["KEEP"] / len(wrong_for_non_keep) > 0.85


def test_gold_is_found_in_any_item_block_and_perfect_critic_always_matches(
    simulator_factory: SimulatorFactory, client: httpx.Client
) -> None:
    # Gold keyed by the SECOND field of the prompt (parent): the first matching block wins.
    server = simulator_factory(profiles={"p": Profile(accuracy=1.0)}, gold={"Lighting": "MERGE"})
    for i in range(10):
        assert label_of(post(client, server, "p", messages(f"x{i}", parent="Lighting"))) == "MERGE"


def test_without_gold_critics_agree_as_often_as_their_accuracy_implies(
    simulator_factory: SimulatorFactory, client: httpx.Client
) -> None:
    server = simulator_factory(profiles={"a": Profile(accuracy=1.0), "b": Profile(accuracy=1.0)})
    for i in range(20):
        msgs = messages(f"item {i}")
        a, b = post(client, server, "a", msgs), post(client, server, "b", msgs)
        assert label_of(a) == label_of(b)


def test_scale_is_read_from_the_answer_instructions(
    simulator_factory: SimulatorFactory, client: httpx.Client
) -> None:
    server = simulator_factory()
    yesno = Scale(kind="yesno")
    assert {label_of(post(client, server, "any", messages(f"q{i}", yesno))) for i in range(30)} == {
        "yes",
        "no",
    }
    score_scale = Scale(kind="score", min=1, max=5)
    scores = [
        json.loads(content(post(client, server, "any", messages(f"s{i}", score_scale))))["score"]
        for i in range(30)
    ]
    assert all(1 <= s <= 5 for s in scores) and len(set(scores)) > 1


@pytest.mark.parametrize(
    ("setting", "check"),
    [
        ("rate_429", "rate_limited"),
        ("rate_500", "server_error"),
        ("rate_error_in_200", "error_in_200"),
        ("rate_malformed", "malformed"),
        ("rate_truncated", "truncated"),
        ("rate_refusal", "refusal"),
        ("rate_fenced", "fenced"),
        ("rate_think", "think"),
        ("rate_prose", "prose"),
    ],
)
def test_each_failure_mode_appears_when_its_rate_is_one(
    simulator_factory: SimulatorFactory, client: httpx.Client, setting: str, check: str
) -> None:
    server = simulator_factory(profiles={"m": Profile(**{setting: 1.0}, retry_after_ms=1500)})
    for i in range(5):
        r = post(client, server, "m", messages(f"item {i}"))
        if check == "rate_limited":
            assert r.status_code == 429
            assert r.headers["Retry-After"] == "2"  # whole seconds, rounded up
            assert r.headers["retry-after-ms"] == "1500"
            assert r.json()["error"]["type"] == "rate_limit_exceeded"
            continue
        if check == "server_error":
            assert r.status_code == 500 and "error" in r.json()
            continue
        assert r.status_code == 200
        body = r.json()
        if check == "error_in_200":
            assert "error" in body and "choices" not in body
            continue
        choice = body["choices"][0]
        text = choice["message"]["content"]
        if check == "truncated":
            assert choice["finish_reason"] == "length" and text == ""
            assert body["usage"]["completion_tokens"] == 77  # the budget was used up
        elif check == "refusal":
            assert choice["message"]["refusal"] and "can't" in text
        elif check == "malformed":
            with pytest.raises(ValueError):
                json.loads(text)
            assert "{" in text
        elif check == "fenced":
            assert text.startswith("```json\n") and text.endswith("\n```")
            assert json.loads(text[8:-4])["label"] in LABELS
        elif check == "think":
            assert text.startswith("<think>")
            assert json.loads(text.rsplit("</think>", 1)[1])["label"] in LABELS
        elif check == "prose":
            start, end = text.index("{"), text.rindex("}") + 1
            assert text[:start].strip() and text[end:].strip()
            assert json.loads(text[start:end])["label"] in LABELS
    assert server.stats()["outcomes"] == {check: 5}


def test_think_decoy_holds_a_different_label(
    simulator_factory: SimulatorFactory, client: httpx.Client
) -> None:
    server = simulator_factory(profiles={"m": Profile(rate_think=1.0, decoy_rate=1.0)})
    for i in range(5):
        text = content(post(client, server, "m", messages(f"item {i}")))
        thought, answer = text.split("</think>")
        decoy = json.loads(thought[thought.index("{") : thought.index("}") + 1])
        assert decoy["label"] != json.loads(answer)["label"]


def test_reply_is_a_real_chat_completion_with_usage(
    simulator: SimulatorServer, client: httpx.Client
) -> None:
    r = post(client, simulator, "sim-careful", messages("Turntables"))
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == "sim-careful"
    assert body["choices"][0]["message"]["role"] == "assistant"
    prompt_chars = sum(len(m["content"]) for m in messages("Turntables"))
    assert abs(body["usage"]["prompt_tokens"] - prompt_chars / 4) <= 1
    assert body["usage"]["total_tokens"] == (
        body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )
    models = client.get(f"{simulator.base_url}/models").json()
    assert {"sim-careful", "sim-flaky"} <= {m["id"] for m in models["data"]}


def test_bad_request_is_a_400_not_a_crash(simulator: SimulatorServer, client: httpx.Client) -> None:
    r = client.post(f"{simulator.base_url}/chat/completions", content=b"{not json")
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    no_messages = client.post(f"{simulator.base_url}/chat/completions", json={"model": "m"})
    assert no_messages.status_code == 400
    assert simulator.stats()["bad_requests"] == 2
    assert post(client, simulator, "m", messages("still alive")).status_code == 200


def test_stats_count_models_successes_duplicates_and_peak_in_flight(
    simulator_factory: SimulatorFactory,
) -> None:
    server = simulator_factory(profiles={"slow": Profile()}, latency_ms=300)
    n = 16
    barrier = threading.Barrier(n)
    statuses: list[int] = []

    shared = httpx.Client(timeout=10, limits=httpx.Limits(max_connections=n))

    def one(i: int) -> None:
        barrier.wait()
        statuses.append(post(shared, server, "slow", messages(f"item {i}")).status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shared.close()
    assert statuses == [200] * n
    with httpx.Client(timeout=10) as c:
        post(c, server, "other", messages("item 0"))
        post(c, server, "other", messages("item 0"))  # the same request answered twice
        stats = c.get(f"{server.root_url}/stats").json()
    assert stats["total"] == n + 2
    assert stats["by_model"] == {"slow": n, "other": 2}
    assert stats["successes"] == n + 2 and stats["failures"] == 0
    assert stats["distinct_requests"] == n + 1
    assert stats["duplicate_successes"] == 1
    assert stats["in_flight"] == 0
    # All 16 were sent at once and each took 300 ms: a serialising server would show 1.
    assert stats["peak_in_flight"] >= n // 2
    assert stats["tokens_in"] > 0 and stats["tokens_out"] > 0


def test_failures_are_not_counted_as_successes(
    simulator_factory: SimulatorFactory, client: httpx.Client
) -> None:
    server = simulator_factory(profiles={"m": Profile(rate_500=1.0)})
    post(client, server, "m", messages("x"))
    post(client, server, "m", messages("x"))
    stats = server.stats()
    assert stats["successes"] == 0 and stats["failures"] == 2
    assert stats["duplicate_successes"] == 0


def test_profile_rejects_out_of_range_settings() -> None:
    with pytest.raises(ValueError, match="rate_500"):
        Profile(rate_500=1.5)
    with pytest.raises(ValueError, match="unknown simulator profile setting"):
        Profile.from_dict({"acuracy": 0.9})


def test_stop_closes_the_port_and_base_url_needs_a_running_server(
    simulator_factory: SimulatorFactory,
) -> None:
    server = simulator_factory()
    url = server.base_url
    with httpx.Client(timeout=2) as c:
        assert c.get(f"{url}/models").status_code == 200  # opens a keep-alive connection
        server.stop()
        server.stop()  # twice is fine
        with pytest.raises(httpx.TransportError):
            c.get(f"{url}/models")
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url


def test_shared_simulator_is_one_running_server_with_demo_gold() -> None:
    server = shared_simulator()
    assert shared_simulator() is server and server.running
    assert server.gold["Sneakers"] == "KEEP"
    assert "sim-flaky" in server.profiles


def test_the_engine_gets_every_verdict_through_429s_and_pays_once(
    simulator_factory: SimulatorFactory,
) -> None:
    """The simulator as the engine's vendor: rate limits are retried (honouring the short
    retry-after-ms), every item gets its verdicts, and no request is answered twice."""
    from judging.panel.panel_model import Panel

    server = simulator_factory(
        profiles={"busy": Profile(rate_429=0.4, retry_after_ms=10), "calm": Profile()}
    )
    panel = Panel(
        scale=NOMINAL,
        critics=[
            {"name": m, "vendor": "custom", "base_url": server.base_url, "model": m,
             "prompt_template": "Class: {name}\nParent: {parent}", "timeout_s": 10}
            for m in ("busy", "calm")
        ],
    )
    items = [{"id": str(i), "name": f"class {i}", "parent": "Audio"} for i in range(30)]
    verdicts = judge_many(panel, items, concurrency=8)
    flat = [v for pv in verdicts for v in pv.verdicts]
    ok = [v for v in flat if v.ok]
    stats = server.stats()
    # A verdict is a success, or a 429 given up on after the engine's retries: never dropped.
    assert all(v.ok or "429" in (v.message or "") for v in flat) and len(flat) == 60
    assert len(ok) >= 50 and all(v.critic == "busy" for v in flat if not v.ok)
    assert any(v.attempts > 1 and v.ok for v in flat)  # a retry after a 429 succeeded
    # The simulator's books match the engine's: one request per attempt, one success per ok
    # verdict, nothing paid for twice.
    assert stats["total"] == sum(v.attempts for v in flat)
    assert stats["outcomes"]["rate_limited"] == stats["total"] - len(ok)
    assert stats["successes"] == len(ok) and stats["duplicate_successes"] == 0
