"""Panel runs: judge / judge_many order, callbacks, failures, cascades, cancel, cache."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from judging.engine.calls import CallRunner, MemoryCache, RetryPolicy
from judging.engine.panel_runner import RunProgress, judge, judge_many, panel_limiter, run_panel
from judging.errors import PlaceholderError
from judging.panel.critics import Critic
from judging.panel.panel_model import CascadeConfig, Panel
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, Verdict
from judging.voting.strategies import VotingConfig
from tests.fixtures_calls import KEY_VAR, Script, error, ok

MakeRunner = Callable[..., CallRunner]
SCALE = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])


def critic(name: str, *, model: str | None = None, tier: int = 0, **extra: Any) -> Critic:
    return Critic(
        name=name,
        vendor="openai",
        model=model or name,
        prompt_template="Judge this class: {text}",
        api_key_env=KEY_VAR,
        tier=tier,
        **extra,
    )


def answer(label: str) -> httpx.Response:
    return ok(json.dumps({"label": label, "confidence": 0.8}))


class Vendor:
    """A mock vendor whose answer depends on the model and the item: `rules[model](text)`."""

    def __init__(self, rules: dict[str, Callable[[str], httpx.Response]]) -> None:
        self.rules = rules
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        model = body["model"]
        text = body["messages"][-1]["content"]
        with self.lock:
            self.calls[model] += 1
        return self.rules[model](text)


def dataset(n: int) -> list[dict[str, Any]]:
    # Even items are plain, odd ones contested; ids are given so order can be checked.
    return [{"id": f"i{k:03d}", "text": f"class {k} {'odd' if k % 2 else 'even'}"}
            for k in range(n)]


def always(label: str) -> Callable[[str], httpx.Response]:
    return lambda text: answer(label)


def panel_of(*critics: Critic, **kwargs: Any) -> Panel:
    return Panel(scale=SCALE, critics=list(critics), **kwargs)


def test_judge_one_item(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": always("KEEP"), "c": always("REJECT")})
    panel = panel_of(critic("a"), critic("b"), critic("c"))
    runner = make_runner(Script(vendor))
    result = judge(panel, {"id": "x", "text": "Birds > Penguins"}, runner=runner)
    assert result.item_id == "x"
    assert [v.critic for v in result.verdicts] == ["a", "b", "c"]
    assert result.consensus == "KEEP" and result.disagreement
    assert result.agreement == pytest.approx(2 / 3)


def test_judge_many_keeps_input_order_and_reports(make_runner: MakeRunner) -> None:
    vendor = Vendor({
        "a": always("KEEP"),
        "b": lambda text: answer("REJECT" if "odd" in text else "KEEP"),
        "c": always("KEEP"),
    })
    panel = panel_of(critic("a"), critic("b"), critic("c"))
    data: list[Any] = dataset(40)
    data[5] = Item(id="given", fields={"text": "class 5 odd"})
    seen: list[tuple[str, str]] = []
    seen_lock = threading.Lock()
    snapshots: list[RunProgress] = []

    def on_verdict(verdict: Verdict, item: Item) -> None:
        with seen_lock:
            seen.append((verdict.critic, item.id))

    results = judge_many(panel,
        data, concurrency=8, runner=make_runner(Script(vendor)),
        on_verdict=on_verdict, on_progress=snapshots.append,
    )
    expected_ids = [d.id if isinstance(d, Item) else d["id"] for d in data]
    assert [r.item_id for r in results] == expected_ids
    assert len(seen) == 120 and len(set(seen)) == 120
    assert all(r.consensus == "KEEP" for r in results)
    assert [r.disagreement for r in results] == [k % 2 == 1 for k in range(40)]
    final = snapshots[-1]
    assert (final.total, final.done, final.failed, final.items_done) == (120, 120, 0, 40)
    assert final.critic_done == {"a": 40, "b": 40, "c": 40}
    assert (final.tokens_in, final.tokens_out) == (120 * 100, 120 * 20)
    assert final.cost_usd == 0.0 and final.cost_unknown == 120  # no prices: unknown, not 0
    assert final.fraction == 1.0 and final.calls_per_second > 0


def test_failed_critic_is_counted_and_stopped_once(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": always("KEEP"),
                     "bad": lambda text: error(401, "invalid key")})
    panel = panel_of(critic("a"), critic("b"), critic("bad"))
    snapshots: list[RunProgress] = []
    results = judge_many(panel, dataset(20), concurrency=4, runner=make_runner(Script(vendor)),
                               on_progress=snapshots.append)
    assert vendor.calls["bad"] == 1
    for result in results:
        assert result.failed == 1
        assert result.consensus == "KEEP"
        assert result.disagreement  # a failed critic never makes a vote look agreed
        bad = result.verdicts[2]
        assert bad.failure is FailureKind.CRITIC_ERROR and KEY_VAR in (bad.message or "")
    final = snapshots[-1]
    assert final.critic_failed == {"a": 0, "b": 0, "bad": 20} and final.failed == 20


def test_cascade_calls_the_next_tier_only_when_unsettled(make_runner: MakeRunner) -> None:
    vendor = Vendor({
        "cheap1": always("KEEP"),
        "cheap2": lambda text: answer("SPLIT" if "odd" in text else "KEEP"),
        "strong": always("SPLIT"),
    })
    panel = panel_of(critic("cheap1"), critic("cheap2"), critic("strong", tier=1),
                     cascade=CascadeConfig(settle="unanimous"))
    snapshots: list[RunProgress] = []
    results = judge_many(panel, dataset(10), concurrency=4, runner=make_runner(Script(vendor)),
                               on_progress=snapshots.append)
    assert vendor.calls == Counter({"cheap1": 10, "cheap2": 10, "strong": 5})
    assert snapshots[-1].calls_saved == 5 and snapshots[-1].total == 30
    for k, result in enumerate(results):
        if k % 2:
            assert result.tier == 1 and result.settled_by == "tier 1: last tier"
            assert [v.critic for v in result.verdicts] == ["cheap1", "cheap2", "strong"]
            assert result.consensus == "SPLIT"  # 2 of 3 over all tiers called
            assert result.disagreement
        else:
            assert result.tier == 0 and result.settled_by == "tier 0: unanimous"
            assert len(result.verdicts) == 2 and result.consensus == "KEEP"


def test_cascade_last_tier_only_vote(make_runner: MakeRunner) -> None:
    vendor = Vendor({"cheap1": always("KEEP"), "cheap2": always("REJECT"),
                     "strong": always("MERGE")})
    panel = panel_of(critic("cheap1"), critic("cheap2"), critic("strong", tier=1),
                     cascade=CascadeConfig(final_vote="last_tier"))
    result = judge(panel, {"text": "x"}, runner=make_runner(Script(vendor)))
    assert result.consensus == "MERGE" and not result.disagreement and len(result.verdicts) == 3


def test_guard_tier_failure_rejects_at_once(make_runner: MakeRunner) -> None:
    vendor = Vendor({
        "guard": lambda text: ok("I'm sorry, I cannot judge this.") if "odd" in text
        else answer("KEEP"),
        "guard2": always("REJECT"),  # disagrees with guard: tier 0 never settles by itself
        "judge": always("KEEP"),
    })
    panel = panel_of(critic("guard"), critic("guard2"), critic("judge", tier=1),
                     cascade=CascadeConfig(guard_tiers=[0], reject_label="REJECT"))
    results = judge_many(panel, dataset(6), concurrency=3, runner=make_runner(Script(vendor)))
    assert vendor.calls == Counter({"guard": 6, "guard2": 6, "judge": 3})
    for k, result in enumerate(results):
        if k % 2:
            assert result.consensus == "REJECT" and result.tier == 0
            assert result.settled_by == "tier 0: guard failure (guard: refusal)"
            assert result.outcome.note and "rejected by the cascade" in result.outcome.note
        else:
            assert result.consensus == "KEEP" and result.tier == 1


def test_cancel_stops_new_requests_and_keeps_everything(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": always("KEEP")})
    panel = panel_of(critic("a"), critic("b"))
    cancel = threading.Event()
    sent_at_cancel: list[int] = []

    def on_verdict(verdict: Verdict, item: Item) -> None:
        if verdict.ok and sum(vendor.calls.values()) >= 10 and not cancel.is_set():
            sent_at_cancel.append(sum(vendor.calls.values()))
            cancel.set()

    results = judge_many(panel, dataset(50), concurrency=2, runner=make_runner(Script(vendor)),
                               cancel=cancel, on_verdict=on_verdict)
    assert len(results) == 50 and all(len(r.verdicts) == 2 for r in results)
    sent = sum(vendor.calls.values())
    assert sent <= sent_at_cancel[0] + 2  # only calls already in flight (concurrency 2)
    kinds = Counter(v.failure for r in results for v in r.verdicts)
    assert kinds[None] == sent and kinds[FailureKind.CANCELLED] == 100 - sent


def test_cache_makes_a_rerun_free(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": always("REJECT")})
    panel = panel_of(critic("a"), critic("b"))
    cache = MemoryCache()
    runner = make_runner(Script(vendor), cache=cache)
    first = judge_many(panel, dataset(10), runner=runner)
    snapshots: list[RunProgress] = []
    again = judge_many(panel, dataset(10), runner=runner, on_progress=snapshots.append)
    assert sum(vendor.calls.values()) == 20
    assert all(v.cached for r in again for v in r.verdicts)
    assert [r.consensus for r in again] == [r.consensus for r in first]
    assert snapshots[-1].cached == 20 and snapshots[-1].tokens_in == 0


def test_dataset_strategy_applied_after_the_run(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "b": always("KEEP"),
                     "c": lambda text: answer("REJECT" if "odd" in text else "KEEP")})
    panel = panel_of(critic("a"), critic("b"), critic("c"),
                     voting=VotingConfig(strategy="dawid-skene"))
    runner = make_runner(Script(vendor))
    results = judge_many(panel, dataset(12), runner=runner)
    assert all(r.strategy == "dawid-skene" and r.consensus == "KEEP" for r in results)
    single = judge(panel, {"text": "class 1 odd"}, runner=runner)
    assert single.consensus == "KEEP"
    assert single.outcome.note and "plurality" in single.outcome.note


def test_callback_errors_stop_the_run_and_surface(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP")})
    panel = panel_of(critic("a"))

    def broken(verdict: Verdict, item: Item) -> None:
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        judge_many(panel, dataset(30), concurrency=2, runner=make_runner(Script(vendor)),
                         on_verdict=broken)
    assert sum(vendor.calls.values()) <= 3


def test_unknown_placeholder_is_reported_before_any_call(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP")})
    panel = panel_of(critic("a"))
    with pytest.raises(PlaceholderError, match="title"):
        judge_many(panel, [{"title": "no text field"}], runner=make_runner(Script(vendor)))
    assert sum(vendor.calls.values()) == 0
    with pytest.raises(PlaceholderError, match="text"):
        panel.check_fields(["title"])
    panel.check_fields(["text", "title"])


def test_item_missing_a_field_later_is_an_item_error(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP")})
    results = judge_many(panel_of(critic("a")),
        [{"text": "ok"}, {"title": "no text"}], runner=make_runner(Script(vendor))
    )
    assert results[0].verdicts[0].ok
    assert results[1].verdicts[0].failure is FailureKind.ITEM_ERROR


def test_run_panel_reports_stopped_critics(make_runner: MakeRunner) -> None:
    vendor = Vendor({"a": always("KEEP"), "bad": lambda text: error(404, "no such model")})
    result = run_panel(panel_of(critic("a"), critic("bad")), dataset(4),
                       runner=make_runner(Script(vendor)))
    assert list(result.stopped_critics) == ["bad"]
    assert "404" in result.stopped_critics["bad"]
    assert result.progress.items_done == 4


def test_empty_input_gives_empty_output(make_runner: MakeRunner) -> None:
    assert judge_many(panel_of(critic("a")), [], runner=make_runner(Script(ok()))) == []


@pytest.mark.timeout(60)
def test_against_the_simulator_every_outcome_is_a_verdict() -> None:
    """Real HTTP: flaky simulated critics; nothing raises, nothing is dropped, retries help."""
    from judging.simulator.sim_server import SimulatorServer

    flaky = {"rate_429": 0.1, "retry_after_ms": 20, "rate_500": 0.05, "rate_error_in_200": 0.05,
             "rate_malformed": 0.05, "rate_truncated": 0.05, "rate_refusal": 0.05,
             "rate_fenced": 0.2, "rate_think": 0.2, "rate_prose": 0.1}
    profiles = {"steady": {"accuracy": 0.9}, "flaky": flaky, "flaky2": flaky}
    with SimulatorServer(profiles=profiles, seed=3, latency_ms=5) as sim:
        critics = [
            Critic(name=model, vendor="simulated", base_url=sim.base_url, model=model,
                   prompt_template="Judge this class: {text}")
            for model in profiles
        ]
        runner = CallRunner(retry=RetryPolicy(time_scale=0.01))
        with runner:
            results = judge_many(panel_of(*critics), dataset(40), concurrency=8, runner=runner)
        stats = sim.stats()
    verdicts = [v for r in results for v in r.verdicts]
    assert len(verdicts) == 120 and all(v.simulated for v in verdicts)
    kinds = Counter(v.failure for v in verdicts)
    assert kinds[None] >= 80  # retries turn most 429/500/error-in-200 into successes
    assert set(kinds) <= {None, FailureKind.ERROR, FailureKind.PARSE_FAIL,
                          FailureKind.TRUNCATED, FailureKind.REFUSAL}
    assert all(v.message for v in verdicts if not v.ok)
    assert all(r.failed == sum(not v.ok for v in r.verdicts) for r in results)
    assert any(v.attempts > 1 for v in verdicts)
    assert stats["peak_in_flight"] <= 8


# ----------------------------------------------------------------------------- vendor limits


def sim_panel(base_url: str, *, vendor: str = "simulated", n_critics: int = 2,
              limits: dict[str, Any] | None = None) -> Panel:
    critics = [
        Critic(name=f"c{k}", vendor=vendor, base_url=base_url, model=f"model-{k}",
               prompt_template="Judge this class: {text}")
        for k in range(n_critics)
    ]
    return panel_of(*critics, limits=limits or {})


@pytest.mark.timeout(60)
def test_panel_limit_caps_requests_in_flight_over_http(simulator_factory: Any) -> None:
    """limits: {simulated: {max_concurrency: 2}} holds at concurrency 64, real HTTP; without it
    the same run piles far more requests on the server (so the cap is what held it)."""
    sim = simulator_factory(latency_ms=20)
    limited = sim_panel(sim.base_url, limits={"simulated": {"max_concurrency": 2}})
    results = judge_many(limited, dataset(30), concurrency=64)
    stats = sim.stats()
    assert stats["total"] == 60 and all(v.ok for r in results for v in r.verdicts)
    assert stats["peak_in_flight"] == 2

    sim.reset_stats()
    judge_many(sim_panel(sim.base_url), dataset(30), concurrency=64)
    assert sim.stats()["peak_in_flight"] > 2


@pytest.mark.timeout(60)
def test_preset_default_cap_holds_and_a_panel_can_raise_it(simulator_factory: Any) -> None:
    """ollama's preset caps it at 4 in flight (a laptop GPU); a panel's limit replaces that."""
    # Replies slow enough (150 ms) that the queued calls always pile up to the cap, even on a
    # loaded machine where threads start late (at 20 ms the peak was sometimes 3).
    sim = simulator_factory(latency_ms=150)
    judge_many(sim_panel(sim.base_url, vendor="ollama"), dataset(12), concurrency=64)
    assert sim.stats()["peak_in_flight"] == 4

    sim.reset_stats()
    raised = sim_panel(sim.base_url, vendor="ollama", limits={"ollama": {"max_concurrency": 6}})
    judge_many(raised, dataset(12), concurrency=64)
    assert sim.stats()["peak_in_flight"] == 6


class InFlight:
    """A mock vendor that counts requests in flight; each is held until `hold` are in flight
    (or 0.08 s), so the peak does not depend on how fast threads start."""

    def __init__(self, hold: int) -> None:
        self.hold = hold
        self.now = 0
        self.peak = 0
        self.changed = threading.Condition()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.changed:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.changed.notify_all()
            self.changed.wait_for(lambda: self.now >= self.hold, timeout=0.08)
            self.now -= 1
        return answer("KEEP")


@pytest.mark.parametrize(
    ("runner_cap", "panel_cap", "peak"),
    # Unlimited: 6, not 8: each critic's first call is its probe (see CriticGate); the other
    # six follow once it is back.
    [(None, 3, 3), (1, 3, 1), (3, 1, 1), (None, None, 6)],
    ids=["panel-only", "runner-stricter", "panel-stricter", "no-limit"],
)
def test_panel_limits_hold_with_a_runner_you_pass(
    make_runner: MakeRunner, runner_cap: int | None, panel_cap: int | None, peak: int
) -> None:
    """A runner you pass keeps its own cap and the panel's holds as well: the stricter wins."""
    vendor = InFlight(hold=6)
    runner = make_runner(Script(vendor),
                         vendor_limits={"openai": runner_cap} if runner_cap else None)
    limits = {"openai": {"max_concurrency": panel_cap}} if panel_cap else {}
    panel = panel_of(critic("a"), critic("b"), limits=limits)
    results = judge_many(panel, dataset(4), concurrency=8, runner=runner)
    assert all(v.ok for r in results for v in r.verdicts)
    assert vendor.peak == peak


def test_panel_requests_per_minute_spaces_requests(make_runner: MakeRunner) -> None:
    """120 requests a minute: each request takes the next slot 0.5 s after the previous one.

    The clock is frozen and sleeps are recorded, not slept: slot k is a wait of k * 0.5 s from
    the same instant, whichever worker thread takes it. Without the limit nothing waits."""
    waits: list[float] = []
    runner = make_runner(Script(answer("KEEP")), sleep=waits.append, clock=lambda: 1000.0)
    panel = panel_of(critic("a"), critic("b"),
                     limits={"openai": {"requests_per_minute": 120}})
    results = judge_many(panel, dataset(5), concurrency=4, runner=runner)
    assert all(v.ok for r in results for v in r.verdicts)
    assert sorted(waits) == pytest.approx([0.5 * k for k in range(1, 10)])

    waits.clear()
    judge_many(panel_of(critic("a"), critic("b")), dataset(5), concurrency=4, runner=runner)
    assert waits == []


def test_requests_per_minute_is_per_vendor(make_runner: MakeRunner) -> None:
    """A paced vendor does not slow another one down."""
    waits: list[float] = []
    runner = make_runner(Script(answer("KEEP")), sleep=waits.append, clock=lambda: 0.0)
    other = critic("b").model_copy(update={"vendor": "deepseek"})
    panel = panel_of(critic("a"), other, limits={"deepseek": {"requests_per_minute": 6}})
    judge_many(panel, dataset(3), concurrency=2, runner=runner)
    assert sorted(waits) == pytest.approx([10.0, 20.0])  # deepseek's 2nd and 3rd; openai none


def test_each_run_starts_its_own_pace(make_runner: MakeRunner) -> None:
    waits: list[float] = []
    runner = make_runner(Script(answer("KEEP")), sleep=waits.append, clock=lambda: 0.0)
    panel = panel_of(critic("a"), limits={"openai": {"requests_per_minute": 60}})
    judge_many(panel, dataset(2), runner=runner)
    judge_many(panel, dataset(2), runner=runner)
    assert waits == [1.0, 1.0]


def test_limits_for_merges_the_preset_default() -> None:
    panel = panel_of(critic("a"), limits={"ollama": {"requests_per_minute": 30}})
    assert panel.limits_for("ollama").max_concurrency == 4  # the preset's default
    assert panel.limits_for("ollama").requests_per_minute == 30
    assert panel.limits_for("openai").max_concurrency is None
    raised = panel_of(critic("a"), limits={"ollama": {"max_concurrency": 16}})
    assert raised.limits_for("ollama").max_concurrency == 16
    assert panel_limiter(raised).concurrency_for("ollama") == 16
    assert panel_limiter(panel).concurrency_for("ollama") == 4


def test_judge_on_the_default_runner_shares_one_limiter_per_set_of_limits() -> None:
    """A notebook loop of judge() calls (one run each) is paced as a whole, not per call."""
    from judging.engine.panel_runner import _shared_limiter

    paced = panel_of(critic("a"), limits={"openai": {"requests_per_minute": 60}})
    same = panel_of(critic("b"), limits={"openai": {"requests_per_minute": 60}})
    other = panel_of(critic("a"), limits={"openai": {"requests_per_minute": 30}})
    assert _shared_limiter(paced) is _shared_limiter(same)
    assert _shared_limiter(paced) is not _shared_limiter(other)
    assert _shared_limiter(paced) is not _shared_limiter(panel_of(critic("a")))
