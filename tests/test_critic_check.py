"""Checking critics before a run (`judging.runs.stored.critic_check`, `jurybox check`): one sentence per
critic naming the cause and the fix, from real requests to the simulator and to a scripted
vendor on 127.0.0.1; the cache makes a second check free, and a $0 cap sends nothing priced."""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import pytest
import yaml

from judging.engine.calls import CallRunner, CriticGate, MemoryCache, RetryPolicy
from judging.engine.panel_runner import judge_many
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.runs.commands.cli import main
from judging.runs.stored.critic_check import (
    CriticCheck,
    check_budget,
    check_critics,
    check_sentence,
    failed_checks,
)
from judging.simulator.sim_server import Profile
from judging.verdicts import FailureKind, Item, Verdict
from tests.fixtures_calls import KEY_VAR, SECRET_KEY
from tests.fixtures_network import LocalVendor, Reply, SeenRequest
from tests.fixtures_simulator import SimulatorFactory

UNSET = "JURYBOX_CHECK_TEST_UNSET_KEY"
SCALE = {"kind": "nominal", "labels": ["KEEP", "REJECT"]}
ITEM = Item("i1", {"text": "running shoes"})
FAST = RetryPolicy(max_retries=1, time_scale=0.0, max_rate_limit_retries=1)


def critic(name: str = "c", **settings: Any) -> Critic:
    return Critic.model_validate({"name": name, "model": "m", "prompt_template": "Judge {text}",
                                  **settings})


def failed(kind: FailureKind, message: str, **fields: Any) -> Verdict:
    return Verdict(critic="c", item_id="i1", failure=kind, message=message, **fields)


# -- the sentence, table-driven over every failure kind ---------------------------------------

# (kind, the call layer's message, critic settings, words the sentence must hold, ok)
CASES: list[tuple[FailureKind | None, str, dict[str, Any], tuple[str, ...], bool]] = [
    (None, "", {}, ("critic 'c': OK (KEEP in 1.2 s, $0.0021)",), True),
    (FailureKind.CRITIC_ERROR,
     f"critic 'c': no API key: the variable {UNSET} is not set. Set it in the environment (or "
     "in Streamlit secrets under [jurybox]) and run again.",
     {"vendor": "openai", "api_key_env": UNSET}, ("no API key", UNSET, "Set it"), False),
    (FailureKind.CRITIC_ERROR,
     "critic 'c': the vendor refused the API key (HTTP 401): Incorrect API key provided",
     {"vendor": "openai", "api_key_env": "MY_KEY"}, ("refused the API key", "check the key in "
                                                     "MY_KEY"), False),
    (FailureKind.CRITIC_ERROR,
     "critic 'c': model or endpoint not found (HTTP 404): The model `claude-opsu-4-7` does not "
     "exist", {"vendor": "anthropic", "model": "claude-opsu-4-7"},
     ("does not know the model 'claude-opsu-4-7'", "HTTP 404", "check the model name"), False),
    (FailureKind.CRITIC_ERROR,
     "critic 'c': out of quota or credit (HTTP 429): You exceeded your current quota; "
     "insufficient_quota", {"vendor": "openai"},
     ("out of credit or quota", "add credit", "OPENAI_API_KEY"), False),
    (FailureKind.CRITIC_ERROR,
     "critic 'c': the daily quota is used up (quota GenerateRequestsPerDayPerProjectPerModel-"
     "FreeTier, HTTP 429): it resets at midnight Pacific time; resume the run then, or raise "
     "the quota (a paid tier) on the vendor's billing page: You exceeded your current quota",
     {"vendor": "gemini"}, ("daily quota is used up", "midnight Pacific", "raise the quota"),
     False),
    (FailureKind.CRITIC_ERROR,
     "unknown vendor 'opneai'; use one of: openai, anthropic (or 'custom' with a base_url)",
     {}, ("unknown vendor 'opneai'", "fix the critic's vendor or base_url"), False),
    (FailureKind.CRITIC_ERROR, "not called: critic 'c': the vendor refused the API key "
     "(HTTP 403). Check the key in OPENAI_API_KEY.", {"vendor": "openai"},
     ("refused the API key", "Check the key in OPENAI_API_KEY"), False),
    (FailureKind.ERROR,
     "HTTP 429: Rate limit reached for requests; rate_limit_exceeded (gave up after 3 attempts)",
     {"vendor": "openai"}, ("rate limited", "after 3 tries", "requests_per_minute", "'openai'"),
     False),
    (FailureKind.ERROR, "timed out after 60 s (gave up after 3 attempts)", {},
     ("no answer within 60 s", "timeout_s"), False),
    (FailureKind.ERROR, "HTTP 503: overloaded (gave up after 3 attempts)", {},
     ("server failed", "check again later"), False),
    (FailureKind.ERROR, "could not connect to the vendor: [Errno 111] Connection refused", {},
     ("could not be reached", "base_url"), False),
    (FailureKind.ITEM_ERROR,
     "the vendor rejected this request (HTTP 400): Unsupported parameter: 'max_tokens' is not "
     "supported with this model. Use 'max_completion_tokens' instead.", {"vendor": "openai"},
     ("refused the request", "'max_tokens'", "`name: null`"), False),
    (FailureKind.ITEM_ERROR,
     "the vendor rejected this request (HTTP 400): Your credit balance is too low to access the "
     "Anthropic API.", {"vendor": "anthropic"},
     ("out of credit or quota", "ANTHROPIC_API_KEY"), False),
    (FailureKind.ITEM_ERROR,
     "the prompt is too long for the model (HTTP 400): context_length_exceeded", {},
     ("too long", "shorten the prompt"), False),
    (FailureKind.ITEM_ERROR,
     "Critic 'c': the prompt uses {question} but the items have no field 'question'. Fields "
     "available: text.", {}, ("{question}", "fix the prompt"), False),
    (FailureKind.REFUSAL, "the model declined to judge: I'm sorry, I can't help", {},
     ("declined to judge", "another item"), False),
    (FailureKind.TRUNCATED, "the reply was cut off (finish_reason=length) before a verdict",
     {"max_tokens": 64}, ("cut off", "raise max_tokens (now 64"), False),
    (FailureKind.PARSE_FAIL, "no JSON object with a label in the reply", {},
     ("does not answer in the format asked", "json_mode"), False),
    (FailureKind.CANCELLED,
     "not called: the run's budget cap could be passed (resume with a higher cap)", {},
     ("not sent", "budget cap of $0.0100", "raise the cap"), False),
    (FailureKind.CANCELLED, "not called: the run was cancelled", {}, ("not sent", "cancelled"),
     False),
    (FailureKind.INCONSISTENT, "the answer changed when the responses were swapped", {},
     ("answers, but", "swapped", "position bias"), True),
]


@pytest.mark.parametrize(("kind", "message", "settings", "words", "ok"), CASES,
                         ids=[f"{c[0] or 'ok'}-{n}" for n, c in enumerate(CASES)])
def test_the_sentence_names_the_cause_and_the_fix(
    kind: FailureKind | None, message: str, settings: dict[str, Any], words: tuple[str, ...],
    ok: bool,
) -> None:
    who = critic(**settings)
    verdict = (Verdict(critic="c", item_id="i1", label="KEEP", latency_ms=1234.0,
                       cost_usd=0.0021, attempts=1) if kind is None
               else failed(kind, message, attempts=3))
    check = check_sentence(who, verdict, cap="$0.0100")
    assert check.ok is ok and check.critic == "c" and check.verdict is verdict
    assert check.sentence.startswith("critic 'c': ") and check.sentence.endswith(".")
    for word in words:
        assert word in check.sentence, (word, check.sentence)
    # Said once: the critic's name is not repeated from the call layer's own prefix.
    assert check.sentence.count("critic 'c'") == 1, check.sentence


def test_a_used_up_daily_quota_is_not_told_to_add_credit() -> None:
    """Gemini's day quota comes back at midnight Pacific; "add credit" would send the user to
    a billing page that cannot give today's requests back on the free tier."""
    message = next(m for k, m, *_ in CASES if "daily quota" in m)
    check = check_sentence(critic(vendor="gemini"), failed(FailureKind.CRITIC_ERROR, message),
                           cap=None)
    assert "midnight Pacific" in check.sentence and "add credit" not in check.sentence


def test_a_model_without_quota_on_the_plan_is_told_to_choose_another() -> None:
    """Gemini's "limit: 0" (the free tier does not include the model): the fix is billing or
    another model, which the parser's sentence says; not "add credit" on a billing page."""
    message = ("critic 'c': the plan has no quota for this model (limit 0 on generativelanguage."
               "googleapis.com/generate_content_free_tier_requests, HTTP 429): the free tier "
               "does not include it; enable billing on the vendor's project, or choose a model "
               "the plan includes: You exceeded your current quota, please check your plan and "
               "billing details.")
    check = check_sentence(critic(vendor="gemini"), failed(FailureKind.CRITIC_ERROR, message),
                           cap=None)
    assert "choose a model the plan includes" in check.sentence
    assert "add credit" not in check.sentence


def test_every_failure_kind_has_a_row_in_the_table() -> None:
    assert {kind for kind, *_ in CASES} >= {*FailureKind, None}


def test_an_ok_sentence_says_cache_simulation_calls_and_an_unknown_price() -> None:
    base: dict[str, Any] = {"critic": "c", "item_id": "i1", "label": "KEEP", "latency_ms": 80.0,
                            "attempts": 1}
    assert "KEEP, from the cache: nothing sent or paid" in check_sentence(
        critic(), Verdict(**base, cached=True)).sentence
    assert "KEEP in 80 ms, simulated: nothing paid" in check_sentence(
        critic(), Verdict(**base, simulated=True, cost_usd=0.0)).sentence
    assert "cost unknown: no price set" in check_sentence(critic(), Verdict(**base)).sentence
    steps = [Verdict(**base), Verdict(**base)]
    assert "over 2 calls" in check_sentence(critic(), Verdict(**base, steps=steps)).sentence
    score = Verdict(critic="c", item_id="i1", score=7.5, latency_ms=80.0, cost_usd=0.01)
    assert "OK (7.5 in 80 ms, $0.0100)" in check_sentence(critic(), score).sentence


def test_notes_follow_the_sentence() -> None:
    ok = Verdict(critic="c", item_id="i1", label="KEEP", latency_ms=10.0, cost_usd=0.001)
    check = check_sentence(critic(), ok, ["temperature is not sent for this model",
                                          "max_tokens was sent as max_completion_tokens."])
    assert check.sentence == ("critic 'c': OK (KEEP in 10 ms, $0.0010). temperature is not "
                              "sent for this model. max_tokens was sent as "
                              "max_completion_tokens.")
    assert failed_checks([check]) == []


# -- real requests ------------------------------------------------------------------------------


def panel_of(*critics: dict[str, Any], **settings: Any) -> Panel:
    return Panel.model_validate({"name": "checked", "scale": SCALE, "critics": list(critics),
                                 **settings})


def at(base_url: str, name: str, model: str, **settings: Any) -> dict[str, Any]:
    return {"name": name, "vendor": "custom", "base_url": base_url, "model": model,
            "prompt_template": "Judge {text}", "timeout_s": 10, **settings}


def by_name(checks: list[CriticCheck]) -> dict[str, CriticCheck]:
    return {check.critic: check for check in checks}


def test_check_against_the_simulator_tells_each_critic_apart(
    simulator_factory: SimulatorFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    server = simulator_factory(profiles={
        "good": Profile(accuracy=1.0), "busy": Profile(rate_429=1.0, retry_after_ms=1),
        "mumbles": Profile(rate_malformed=1.0), "nokey-model": Profile(),
    })
    url = server.base_url
    panel = panel_of(
        at(url, "good", "good", price_in_per_mtok=1.0, price_out_per_mtok=2.0),
        at(url, "nokey", "nokey-model", api_key_env=UNSET),
        at(url, "busy", "busy"),
        at(url, "mumbles", "mumbles"),
    )
    with CallRunner(retry=FAST) as runner:
        checks = by_name(check_critics(panel, ITEM, runner))
    assert checks["good"].ok and checks["good"].sentence.startswith("critic 'good': OK (KEEP in ")
    assert "$0.0" in checks["good"].sentence  # priced: 1 and 2 dollars per million tokens
    assert not checks["nokey"].ok and UNSET in checks["nokey"].sentence
    assert "no API key" in checks["nokey"].sentence
    assert not checks["busy"].ok
    assert "rate limited by the vendor after 2 tries" in checks["busy"].sentence
    assert not checks["mumbles"].ok
    assert "does not answer in the format asked" in checks["mumbles"].sentence
    stats = server.stats()["by_model"]
    assert stats.get("nokey-model", 0) == 0, "a critic without its key sends nothing"
    # A 429 is retried (one retry here); a reply without a verdict is not.
    assert stats["good"] == 1 and stats["busy"] == 2 and stats["mumbles"] == 1
    assert [c.critic for c in failed_checks(checks.values())] == ["nokey", "busy", "mumbles"]


# The vendors' documented bodies, served on 127.0.0.1.
# https://platform.openai.com/docs/guides/error-codes (model_not_found, insufficient_quota)
MODEL_NOT_FOUND = {"error": {
    "message": "The model `gpt-4.1-typo` does not exist or you do not have access to it.",
    "type": "invalid_request_error", "param": None, "code": "model_not_found"}}
INSUFFICIENT_QUOTA = {"error": {
    "message": "You exceeded your current quota, please check your plan and billing details. "
               "For more information on this error, read the docs: "
               "https://platform.openai.com/docs/guides/error-codes/api-errors.",
    "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
# https://docs.anthropic.com/en/api/errors (a 400 invalid_request_error; the credit message as
# Anthropic's API sends it)
CREDIT_TOO_LOW = {"type": "error", "error": {
    "type": "invalid_request_error",
    "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans "
               "& Billing to upgrade or purchase credits."}}


def _vendor_errors(seen: SeenRequest) -> Reply:
    model = json.loads(seen.body).get("model")
    if model == "gpt-4.1-typo":
        return Reply(404, json.dumps(MODEL_NOT_FOUND).encode())
    if model == "broke":
        return Reply(429, json.dumps(INSUFFICIENT_QUOTA).encode())
    return Reply(400, json.dumps(CREDIT_TOO_LOW).encode())


def test_check_reads_the_vendors_documented_errors(
    local_vendor: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_VAR, SECRET_KEY)
    vendor: LocalVendor = local_vendor(_vendor_errors)
    url = vendor.base_url
    panel = panel_of(
        at(url, "typo", "gpt-4.1-typo", api_key_env=KEY_VAR),
        at(url, "broke", "broke", api_key_env=KEY_VAR),
        at(url, "claude", "claude-sonnet-4-5", api_key_env=KEY_VAR),
    )
    with CallRunner(retry=FAST) as runner:
        checks = by_name(check_critics(panel, ITEM, runner))
    typo = checks["typo"].sentence
    assert "the vendor does not know the model 'gpt-4.1-typo'" in typo and "404" in typo
    assert "check the model name" in typo
    for name in ("broke", "claude"):
        assert "out of credit or quota" in checks[name].sentence, checks[name].sentence
        assert f"another key in {KEY_VAR}" in checks[name].sentence
    assert not any(c.ok for c in checks.values())
    assert SECRET_KEY not in " ".join(c.sentence for c in checks.values())
    # Each critic asked once: a fatal answer is not retried.
    assert len(vendor.seen) == 3


class _AdjustingRunner(CallRunner):
    """The real runner, plus what the call layer does when a vendor refuses a parameter of a
    model it did not know (`CriticGate.adjust`, filled by `judging.engine.calls.call_runner`)."""

    def call(self, critic: Critic, item: Item, scale: Any, **kwargs: Any) -> Verdict:
        gate: CriticGate = kwargs["gate"]
        gate.adjust(critic.name, "temperature", None,
                    "The vendor refused temperature for this model: it is no longer sent.")
        return super().call(critic, item, scale, **kwargs)


def test_the_sentence_carries_request_rules_and_the_gates_adjustments(
    simulator_factory: SimulatorFactory,
) -> None:
    server = simulator_factory(profiles={"o3": Profile(accuracy=1.0)})
    # vendor openai with the simulator's URL: the request rules of an OpenAI reasoning model.
    panel = panel_of({"name": "o3", "vendor": "openai", "model": "o3", "base_url":
                      server.base_url, "api_key_env": KEY_VAR, "prompt_template": "Judge {text}"})
    with _AdjustingRunner(retry=FAST, key_lookup={KEY_VAR: SECRET_KEY}.get) as runner:
        (check,) = check_critics(panel, ITEM, runner)
    assert check.ok, check.sentence
    assert "o3 is a reasoning model: temperature, top_p, stop and the penalties are not sent" in check.sentence
    assert "The vendor refused temperature for this model: it is no longer sent." in check.sentence


def test_a_second_check_sends_nothing_and_a_run_reuses_the_answers(
    simulator_factory: SimulatorFactory,
) -> None:
    server = simulator_factory(profiles={"good": Profile(accuracy=1.0)})
    url = server.base_url
    panel = panel_of(at(url, "plain", "good"), at(url, "verify", "good", kind="self-verify",
                                                  temperature=0.3, samples=3))
    cache = MemoryCache()
    with CallRunner(cache=cache, retry=FAST) as runner:
        first = check_critics(panel, ITEM, runner)
        sent = server.stats()["total"]
        # plain: 1 request; self-verify, one sample of three: judge + verify.
        assert sent == 3 and all(c.ok for c in first)
        again = check_critics(panel, ITEM, runner)
        assert server.stats()["total"] == sent, "the second check is answered from the cache"
        assert all("from the cache: nothing sent or paid" in c.sentence for c in again)
        # A run over the same item with the same cache pays only for the samples not checked.
        judge_many(panel, [ITEM], runner=runner)
    assert server.stats()["total"] == sent + 2 * 2  # verify's samples 2 and 3, two calls each


def test_a_cached_answer_does_not_hide_a_missing_key(
    simulator_factory: SimulatorFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    server = simulator_factory()
    cache = MemoryCache()
    keyed = panel_of(at(server.base_url, "a", "m"))
    keyless = panel_of(at(server.base_url, "a", "m", api_key_env=UNSET))
    with CallRunner(cache=cache, retry=FAST) as runner:
        assert check_critics(keyed, ITEM, runner)[0].ok
        (check,) = check_critics(keyless, ITEM, runner)  # the same request: a cache hit
    assert not check.ok and f"the variable {UNSET} is not set" in check.sentence
    assert server.stats()["total"] == 1


def test_a_zero_cap_sends_no_priced_call_and_says_so(simulator_factory: SimulatorFactory) -> None:
    server = simulator_factory()
    priced = {"price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0}
    panel = panel_of(at(server.base_url, "a", "m1", **priced),
                     at(server.base_url, "b", "m2", **priced),
                     {"name": "sim", "model": "sim-careful", "prompt_template": "Judge {text}"})
    with CallRunner(retry=FAST) as runner:
        checks = by_name(check_critics(panel, ITEM, runner, budget=check_budget(0)))
    assert server.stats()["total"] == 0, "nothing priced was sent"
    for name in ("a", "b"):
        assert not checks[name].ok
        assert "not sent: it could cost more than the check's budget cap of $0.0000" in \
            checks[name].sentence
    # Unlike a run's cap, one refused call does not stop the others: the free one is asked.
    assert checks["sim"].ok, checks["sim"].sentence


def test_a_cap_lets_through_what_fits() -> None:
    guard = check_budget(0.01)
    small = guard.worst_case(400, 100, 1.0, 1.0)
    big = guard.worst_case(400, 100_000, 1.0, 1.0)
    assert guard.reserve(big) is None
    assert guard.reserve(small) is not None, "a refused call does not latch the check's cap"
    with pytest.raises(Exception, match="0 or more dollars"):
        check_budget(-1)


def test_critics_are_checked_at_once(simulator_factory: SimulatorFactory) -> None:
    server = simulator_factory(latency_ms=300)
    panel = panel_of(*(at(server.base_url, f"c{n}", f"m{n}") for n in range(4)))
    with CallRunner(retry=FAST) as runner:
        check_critics(panel, ITEM, runner)
    assert server.stats()["peak_in_flight"] == 4


# -- the command line --------------------------------------------------------------------------


def _panel_file(path: pathlib.Path, critics: list[dict[str, Any]]) -> pathlib.Path:
    path.write_text(yaml.safe_dump({"name": "cli check", "scale": SCALE, "critics": critics}),
                    encoding="utf-8")
    return path


def test_cli_exits_0_when_every_critic_answers_and_2_otherwise(
    simulator_factory: SimulatorFactory, tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "none.db"))
    monkeypatch.delenv(UNSET, raising=False)
    server = simulator_factory(profiles={"good": Profile(accuracy=1.0)})
    data = tmp_path / "items.csv"
    data.write_text("id,text\nr1,shoes\nr2,hats\n", encoding="utf-8")
    good = _panel_file(tmp_path / "good.yaml", [at(server.base_url, "good", "good")])
    assert main(["check", str(good), "--dataset", str(data), "--item", "r2"]) == 0
    out = capsys.readouterr().out
    assert "Checking 1 critic of 'cli check' on item 'r2' of" in out
    assert re.search(r"ok     critic 'good': OK \((KEEP|REJECT) in \d+ ms, cost unknown", out)
    assert "Every critic can answer." in out

    bad = _panel_file(tmp_path / "bad.yaml", [at(server.base_url, "good", "good"),
                                              at(server.base_url, "nokey", "good",
                                                 api_key_env=UNSET)])
    assert main(["check", str(bad), "--dataset", str(data)]) == 2
    out = capsys.readouterr().out
    assert f"FAILS  critic 'nokey': no API key: the variable {UNSET} is not set" in out
    assert "1 of 2 critics cannot answer ('nokey')" in out

    assert main(["check", str(good), "--dataset", str(data), "--item", "zz"]) == 2
    assert "has no item 'zz'" in capsys.readouterr().err
    assert main(["check", str(good)]) == 2
    assert "give --dataset FILE" in capsys.readouterr().err


def test_cli_checks_on_a_stored_dataset_and_answers_from_stored_calls(
    simulator_factory: SimulatorFactory, tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "runs.db"))
    server = simulator_factory(profiles={"good": Profile(accuracy=1.0)})
    data = tmp_path / "items.csv"
    data.write_text("id,text\nr1,shoes\nr2,hats\n", encoding="utf-8")
    panel = _panel_file(tmp_path / "p.yaml", [at(server.base_url, "good", "good")])
    assert main(["judge", "--data", str(data), "--panel", str(panel), "--quiet"]) == 0
    sent = server.stats()["total"]
    capsys.readouterr()
    # The newest stored dataset (#1) by default; its first item was judged by the run.
    assert main(["check", str(panel), "--max-cost", "0"]) == 0
    out = capsys.readouterr().out
    assert "on item 'r1' of dataset #1" in out and "from the cache: nothing sent" in out
    assert server.stats()["total"] == sent
    assert main(["check", str(panel), "--dataset", "7"]) == 2
    assert "there is no dataset with id 7; give the id of a dataset" in capsys.readouterr().err
    assert main(["check", str(panel), "--dataset", "1", "--item", "zz"]) == 2
    assert "dataset #1 has no item 'zz'" in capsys.readouterr().err
