"""The documented vendor cases as markdown tables, one per vendor, from what Jurybox really does.

`python -m tests.vendor_case_table` runs every case of `tests/vendor_documented.py` the way
`test_vendor_contract.py::test_documented_replies_read_as_the_vendor_means` does (served over
real HTTP on 127.0.0.1, read by the CallRunner, a second item sent to see whether the critic was
stopped), reads the documented batch result lines through the batch reader, and builds each
model family's request; the tables print what came out, not what the cases expect. Used for the
closing note of issue 22; the tests are what hold the behaviour.
"""

from __future__ import annotations

import collections
import json
import os
import threading
from typing import Any

from judging.engine.calls import CallRunner, RetryPolicy
from judging.engine.calls.gate import CriticGate
from judging.engine.calls.prepare import prepare_call
from judging.errors import CallFailure
from judging.panel.request_rules import request_notes
from judging.panel.vendors import api_of, caches_prompts
from judging.verdicts import Item
from tests.fixtures_network import LocalVendor, Reply, SeenRequest
from tests.test_vendor_contract import BATCH_LINES, FAMILIES, ITEM, KEY, KEY_VAR, SCALE, _critic
from tests.vendor_documented import CASES, Case

VENDOR_OF = {"custom": "Ollama/custom", "ollama": "Ollama/custom", "simulated": "Ollama/custom"}
CONTRACT = "tests/test_vendor_contract.py"


def _serve(case: Case) -> LocalVendor:
    def reply(seen: SeenRequest) -> Reply:
        exchange = case.replies[min(seen.number, len(case.replies)) - 1]
        return Reply(exchange.status, exchange.bytes(), list(exchange.headers))
    server = LocalVendor(reply)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.6f}"


def case_row(case: Case) -> tuple[str, str]:
    """(vendor group, markdown row) of one documented exchange, as Jurybox read it."""
    server = _serve(case)
    try:
        critic = _critic(case.vendor, case.model, base_url=server.base_url,
                         api_key_env=KEY_VAR, extra=case.extra, api=case.api)
        waits: list[float] = []
        gate = CriticGate()
        with CallRunner(retry=RetryPolicy(jitter=0.0), sleep=waits.append) as runner:
            verdict = runner.call(critic, ITEM, SCALE, gate=gate)
            waits = list(waits)  # the first item's waits only (the second one's are its own)
            before = len(server.seen)
            runner.call(critic, Item(id="TX-2", fields={"text": "Kettles"}), SCALE, gate=gate)
            stopped = len(server.seen) == before and gate.reason("c") is not None
    finally:
        server.shutdown()
        server.server_close()
    outcome = verdict.label or (verdict.failure.value if verdict.failure else "?")
    tokens = (f"{verdict.tokens_in} in / {verdict.tokens_out} out"
              + (f" / {verdict.tokens_cached} cached" if verdict.tokens_cached else "")
              if verdict.tokens_in is not None else "-")
    extra = []
    if waits:
        extra.append("waited " + ", ".join(f"{w:g} s" for w in waits))
    adjusted = gate.adjustments("c")
    if adjusted:
        extra.append("adjusted: " + "; ".join(a.split(" (the vendor said")[0] for a in adjusted))
    status = case.replies[0].status
    row = (f"| {case.name.split(': ', 1)[1]} (HTTP {status}) | {outcome} | {tokens} | "
           f"{_money(verdict.cost_usd)} | {verdict.attempts} | {'stopped' if stopped else 'no'} | "
           f"{'; '.join(extra) or '-'} | `{CONTRACT}::test_documented_replies_read_as_the_vendor_"
           f"means[{case.name}]` |")
    return VENDOR_OF.get(case.vendor, case.vendor), row


def batch_row(index: int, api: str, line: dict[str, Any], label: str | None,
              failure: str | None) -> tuple[str, str]:
    from judging.engine.batches.batch_results import parse_results
    from judging.engine.parsing import parse_reply, reply_usage

    (result,) = parse_results(api, [json.dumps(line)])  # type: ignore[arg-type]
    if result.not_run is not None:
        outcome, tokens = "not run (resumable)", "-"
    else:
        try:
            parsed = parse_reply(result.status, result.body, SCALE)
            outcome = parsed.label or "?"
            cached = parsed.usage.cached if parsed.usage else None
            tokens = f"{parsed.tokens_in} in / {parsed.tokens_out} out" + (
                f" / {cached} cached" if cached else "")
            if parsed.reasoning:
                outcome += f" (reasoning kept: {parsed.reasoning!r})"
        except CallFailure as error:
            outcome, tokens = error.kind.value, "-"
            usage = reply_usage(result.body) if 200 <= result.status < 300 else None
            if usage is not None and usage.tokens_in is not None:  # billed all the same
                tokens = f"{usage.tokens_in} in / {usage.tokens_out} out (billed)"
    what = line.get("result", {}).get("type") if api == "anthropic" else (
        "error" if line.get("error") else f"status {line['response']['status_code']}")
    if api == "anthropic" and what == "succeeded":
        what += f", stop_reason {line['result']['message']['stop_reason']}"
    vendor = "OpenAI" if api == "openai" else "Anthropic"
    return vendor, (f"| batch line: {what} | {outcome} | {tokens} | - | - | - | - | "
                    f"`{CONTRACT}::test_documented_batch_result_lines_read_as_live_replies"
                    f"[{api}-line{index}-{label}-{failure}]` |")


def family_row(vendor: str, model: str) -> tuple[str, str]:
    critic = _critic(vendor, model)
    body = prepare_call(critic, ITEM, SCALE).body
    length = next((k for k in ("max_completion_tokens", "max_tokens") if k in body), "-")
    sent = [k for k in ("temperature", "top_p", "response_format", "system") if k in body]
    cache = ("system block marked cache_control" if api_of(critic) == "messages" else
             "shared prefix first, cached reads priced" if caches_prompts(critic) else
             "no vendor cache priced")
    notes = " ".join(request_notes(critic)) or "-"
    return VENDOR_OF.get(vendor, vendor), (
        f"| request: `{model}` ({api_of(critic)}) | length as `{length}`; sends "
        f"{', '.join(f'`{k}`' for k in sent) or 'no sampling keys'}; {cache} | - | - | - | - | "
        f"{notes[:160]} | `{CONTRACT}::test_every_request_is_what_the_vendors_sdk_sends"
        f"[{vendor}-{model}-extra0]` |")


TITLES = {"openai": "OpenAI", "anthropic": "Anthropic", "gemini": "Gemini",
          "deepseek": "DeepSeek", "openrouter": "OpenRouter"}
ORDER = ["OpenAI", "Anthropic", "Gemini", "DeepSeek", "OpenRouter", "Ollama/custom"]
HEADER = ("| case | Jurybox's outcome (label / failure kind) | tokens | cost | requests | "
          "critic stopped | notes | asserted by |\n|---|---|---|---|---|---|---|---|")


def main() -> None:
    os.environ[KEY_VAR] = KEY  # a made-up key: the local server on 127.0.0.1 never checks it
    rows: dict[str, list[str]] = collections.defaultdict(list)
    for case in CASES:
        group, row = case_row(case)
        rows[TITLES.get(group, group)].append(row)
    for index, (api, line, label, failure) in enumerate(BATCH_LINES):
        group, row = batch_row(index, api, line, label, failure)
        rows[group].append(row)
    for vendor, models in FAMILIES.items():
        for model in models:
            group, row = family_row(vendor, model)
            rows[TITLES.get(group, group)].append(row)
    for group in ORDER:
        print(f"\n### {group}\n\n{HEADER}")
        print("\n".join(rows[group]))


if __name__ == "__main__":
    main()
