"""Test a panel's critics before a run: one real answer per critic, one sentence per critic.

`check_critics(panel, item, runner)` asks every critic of the panel to judge one sample item,
all at once (a thread per critic), through the same `CallRunner.call` a run uses, with the
panel's vendor limits, a fresh `CriticGate` and an optional budget cap. What comes back is what
a run would get on that item, said as one sentence per critic that names the cause and the
fix (`check_sentence`, pure, table-tested): no key, a key refused, a model the vendor does not
know, a parameter refused, rate limited, out of credit, no answer in the format asked ... or
"OK" with the label, the latency and the cost. The sentence also carries what is sent
differently for the model (`judging.panel.request_rules.request_notes`) and the parameters the
vendor refused during the check and the call layer dropped or renamed
(`CriticGate.adjustments`).

What is sent: the critic as a run asks it, one sample of it. A single critic is one request;
a compound critic's chain is the whole chain (its first step alone can pass a critic whose
judging step never parses: reason-then-judge and debate start in prose); a repeated critic
(`samples: N`) is asked once. Every request has the cache key of the run's own first sample,
so with the run's cache (`storage.results.calls.CallCacheStore`) or any `CallCache` on the runner a
second check sends nothing, and a run sharing that cache does not pay for them again. (A
stored run's worker reads only the database's calls: the answers of a check made in the app or
by `jurybox check` live in that process's memory and are not stored, so such a run pays for
them once more. Storing them needs a home in `storage`.)

What it costs: priced like any call (the verdict's `cost_usd`), and under the cap of the
`BudgetGuard` given (`check_budget(usd)`): a call that could pass it is not sent and its
sentence says so. A cache hit is free and is never refused.

This module reads storage (`sample_item_of_dataset`), so it lives on the orchestration floor.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from judging.engine.budget import BudgetCap, BudgetGuard, Reservation
from judging.engine.calls import CallCache, CallRunner, CriticGate
from judging.engine.chains import judge_with, sample_offsets
from judging.engine.ledger import format_usd
from judging.engine.panel_runner import panel_limiter
from judging.errors import CallFailure, ConfigError, DataError, NotFoundError
from judging.panel.critics import Critic
from judging.panel.request_rules import request_notes
from judging.panel.vendors import key_variable, resolve_key
from judging.verdicts import PLUGIN_KINDS, FailureKind, Item, Verdict
from storage.datasets.dataset_store import get_dataset, get_item, load_items

if TYPE_CHECKING:
    import sqlite_utils

    from judging.panel.panel_model import Panel

__all__ = [
    "CheckBudget",
    "CriticCheck",
    "LayeredCache",
    "check_budget",
    "check_critics",
    "check_sentence",
    "failed_checks",
    "sample_item",
    "sample_item_of_dataset",
]


@dataclass(frozen=True, slots=True)
class CriticCheck:
    """The outcome of checking one critic.

    Attributes:
        critic: the critic's name.
        ok: True when the critic answered (a run can start on it).
        sentence: what would fail and how to fix it, or "OK" with label, latency and cost.
        verdict: the verdict behind it (its raw request and reply are the evidence).
    """

    critic: str
    ok: bool
    sentence: str
    verdict: Verdict


# -- the sentence (pure) ---------------------------------------------------------------------

_HTTP = re.compile(r"\(HTTP (\d{3})\)")


def _own_words(critic: str, message: str | None) -> str:
    """The verdict's message without the prefixes the sentence already says: who the critic is
    (the gate and key lookup start with "critic 'x': "), and "not called: " (a critic stopped
    earlier in the check)."""
    text = (message or "").strip()
    for prefix in (f"critic {critic!r}: ", f"Critic {critic!r}: "):
        text = text.replace(prefix, "")
    text = text.removeprefix("not called: ")
    return text.rstrip(". ") or "no reason given"


def _out_of_credit(said: str) -> bool:
    folded = said.casefold()
    return any(marker in folded for marker in ("quota", "credit", "billing", "payment"))


def _no_credit(critic: Critic, said: str) -> str:
    variable = key_variable(critic)
    where = f", or use another key in {variable}" if variable else ""
    return (f"the account is out of credit or quota ({said}): add credit or raise the limit on "
            f"the vendor's billing page{where}")


def _critic_error(critic: Critic, said: str) -> str:
    folded = said.casefold()
    variable = key_variable(critic)
    if "no api key" in folded or ("api key in" in folded and "cannot be sent" in folded):
        return said  # the key lookup's sentence already names the variable and the fix
    if "refused the api key" in folded:
        fix = f"check the key in {variable}" if variable else "set api_key_env to the key's variable"
        return said if "check the key" in folded else f"{said}: {fix}"
    if "daily quota is used up" in folded or "no quota for this model" in folded:
        return said  # the parser's sentence names when it comes back, or what to choose
    if _out_of_credit(said):
        return _no_credit(critic, said)
    status = _HTTP.search(said)
    if "not found" in folded or (status is not None and status.group(1) == "404"):
        return (f"the vendor does not know the model {critic.model!r} ({said}): check the model "
                "name against the vendor's model list (and the base_url, if the critic sets one)")
    if "vendor" in folded or "base url" in folded or "base_url" in folded:
        return f"{said}: fix the critic's vendor or base_url"
    return f"{said}: fix the critic's settings and check again"


def _retries_failed(critic: Critic, verdict: Verdict, said: str) -> str:
    folded = said.casefold()
    tries = f"{verdict.attempts} tries" if verdict.attempts > 1 else "one try"
    status = _HTTP.search(said)
    code = status.group(1) if status else ("429" if "http 429" in folded else "")
    if code == "429" or "rate limit" in folded or "rate_limit" in folded:
        return (f"rate limited by the vendor after {tries} ({said}): wait a minute and check "
                f"again, or set a requests_per_minute limit for {critic.vendor!r} in the "
                "panel's limits")
    if any(marker in folded for marker in ("timed out", "timeout", "deadline")):
        return (f"no answer within {critic.timeout_s:g} s ({said}): check again later, or raise "
                "the critic's timeout_s")
    if any(marker in folded for marker in ("connect", "connection", "resolve", "unreachable")):
        return (f"the vendor could not be reached ({said}): check the base_url and that the "
                "server is running")
    if code.startswith("5") or "http 5" in folded:
        return (f"the vendor's server failed after {tries} ({said}): check again later (the "
                "vendor's status page says more)")
    return (f"the call failed after {tries} ({said}): check again later; if it repeats, read "
            "the raw reply (Panel page, Test this critic)")


def _item_error(critic: Critic, said: str) -> str:
    folded = said.casefold()
    if _out_of_credit(said):  # Anthropic says "credit balance is too low" with HTTP 400
        return _no_credit(critic, said)
    if "too long" in folded or "context" in folded:
        return (f"{said}: shorten the prompt or the item, or pick a model with a longer "
                "context")
    if "the prompt uses {" in folded or "placeholder" in folded:
        return f"{said}: fix the prompt, or check the panel on the dataset it was written for"
    if "could not build" in folded:
        return f"{said}: fix the critic's prompt or extra parameters"
    return (f"the vendor refused the request ({said}): change or remove the parameter it "
            "names (under extra, `name: null` stops sending one)")


def _failure_text(critic: Critic, verdict: Verdict, cap: str | None) -> str:
    """Cause and fix for a verdict that failed, in one clause (no critic name, no period)."""
    said = _own_words(critic.name, verdict.message)
    kind = verdict.failure
    if kind is FailureKind.CRITIC_ERROR:
        return _critic_error(critic, said)
    if kind is FailureKind.ERROR:
        return _retries_failed(critic, verdict, said)
    if kind is FailureKind.ITEM_ERROR:
        return _item_error(critic, said)
    if kind is FailureKind.REFUSAL:
        return (f"the model declined to judge the sample item ({said}): check another item, "
                "or reword the prompt")
    if kind is FailureKind.TRUNCATED:
        return (f"the reply was cut off before a verdict ({said}): raise max_tokens (now "
                f"{critic.max_tokens}; a reasoning model spends them thinking)")
    if kind is FailureKind.PARSE_FAIL:
        return (f"the model does not answer in the format asked ({said}): turn json_mode on "
                "where the vendor has it, or pick a model that follows the answer format")
    if kind is FailureKind.CANCELLED:
        if "budget" in said.casefold():
            limit = f" of {cap}" if cap else ""
            return (f"not sent: it could cost more than the check's budget cap{limit}: raise "
                    "the cap to check this critic")
        return "not sent: the check was cancelled: check again"
    return said  # a kind added later: its own message is the best sentence there is


def _answer_text(verdict: Verdict) -> str:
    """ "KEEP in 1.2 s, $0.0021" (or "... from the cache: nothing sent or paid")."""
    value = verdict.value
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    calls = len(verdict.calls)
    if verdict.cached:
        return f"{shown}, from the cache: nothing sent or paid"
    parts = [shown]
    if verdict.latency_ms is not None:
        ms = verdict.latency_ms
        parts[0] += f" in {ms:.0f} ms" if ms < 1000 else f" in {ms / 1000:.1f} s"
    if calls > 1:
        parts[0] += f" over {calls} calls"
    if verdict.simulated:
        parts.append("simulated: nothing paid")
    elif verdict.vendor in PLUGIN_KINDS:
        parts.append(f"a {verdict.vendor} check: free")
    elif verdict.cost_usd is None:
        parts.append("cost unknown: no price set")
    else:
        parts.append(format_usd(verdict.cost_usd))
    return ", ".join(parts)


def check_sentence(
    critic: Critic, verdict: Verdict, notes: Sequence[str] = (), *, cap: str | None = None
) -> CriticCheck:
    """Say in one sentence what a critic's check found (pure: nothing is sent or read).

    Args:
        critic: the critic checked.
        verdict: its verdict on the sample item.
        notes: sentences on what is sent differently for this model (`request_notes`) and which
            parameters the vendor refused and the call layer adjusted (`CriticGate.adjustments`):
            appended after the sentence.
        cap: the budget cap as text (e.g. "$0.0100"), for a call the cap kept from being sent.

    Returns:
        The `CriticCheck`: "critic 'o3': OK (KEEP in 1.2 s, $0.0021). <notes>", or
        "critic 'gpt': <cause>: <fix>. <notes>". A critic whose pairwise answer changed with
        the order (`inconsistent`) did answer: it is ok, and the sentence says so.
    """
    if verdict.ok:
        main, ok = f"OK ({_answer_text(verdict)})", True
    elif verdict.failure is FailureKind.INCONSISTENT:
        main, ok = ("answers, but its answer changed when the two responses were swapped "
                    f"({_own_words(critic.name, verdict.message)}): it can run; expect "
                    "position bias on such items"), True
    else:
        main, ok = _failure_text(critic, verdict, cap), False
    sentence = f"critic {critic.name!r}: {main}."
    extra = [note.strip() for note in notes if note.strip()]
    if extra:
        sentence += " " + " ".join(note if note.endswith(".") else note + "." for note in extra)
    return CriticCheck(critic=critic.name, ok=ok, sentence=sentence, verdict=verdict)


def failed_checks(checks: Iterable[CriticCheck]) -> list[CriticCheck]:
    """The checks of critics that cannot answer."""
    return [check for check in checks if not check.ok]


# -- the check (sends) -----------------------------------------------------------------------


def check_budget(max_cost_usd: float | None = None, *, tokens: int | None = None) -> CheckBudget:
    """The budget guard of a check: at most `max_cost_usd` dollars (0 included) and/or
    `tokens` tokens (see `CheckBudget`).

    A run's `BudgetCap` refuses 0 (a run that may spend nothing is no run); a check capped at
    $0 is useful: it answers from the cache only, and says which critics it could not ask. So
    the cap is built here without that rule (`model_construct`, on a number checked here).

    Raises:
        ConfigError: a negative or non-finite amount.
    """
    if max_cost_usd is not None and not 0 <= max_cost_usd < math.inf:
        raise ConfigError(f"the check's cost cap must be 0 or more dollars, not {max_cost_usd}; "
                          "give e.g. --max-cost 0.05")
    if max_cost_usd == 0:
        tokens = None if tokens is None else int(tokens)
        return CheckBudget(BudgetCap.model_construct(usd=0.0, tokens=tokens))
    return CheckBudget(BudgetCap(usd=max_cost_usd, tokens=tokens))


class LayeredCache:
    """A `CallCache` that looks in each cache in turn and stores in the first one: the app's
    process-wide memory of earlier checks, then the database's stored calls (whose `put` would
    keep a check's answer only as long as that store lives)."""

    def __init__(self, *caches: CallCache) -> None:
        self.caches = caches

    def get(self, key: str) -> Verdict | None:
        for cache in self.caches:
            found = cache.get(key)
            if found is not None:
                return found
        return None

    def put(self, verdict: Verdict) -> None:
        self.caches[0].put(verdict)


class CheckBudget(BudgetGuard):
    """A check's budget cap: a call that could pass it is not sent, as in a run, but the check
    goes on with the critics that still fit (a run's guard stops every later call once one was
    refused; in a check that would make which critics are asked depend on thread timing)."""

    def __init__(self, cap: BudgetCap) -> None:
        super().__init__(cap)
        self._one_at_a_time = threading.Lock()

    def reserve(self, held: Reservation, *, cancel: threading.Event | None = None
                ) -> Reservation | None:
        # Under our own lock, so no other critic's call ever sees the latch set by this one.
        with self._one_at_a_time:
            taken = super().reserve(held, cancel=cancel)
            self.reached = False
            return taken


def _one_sample(critic: Critic) -> Critic:
    # The run's first sample only: its cache keys are the run's own (see prepare_call).
    return critic if critic.samples == 1 else critic.model_copy(update={"samples": 1})


def check_critics(
    panel: Panel,
    item: Item,
    runner: CallRunner,
    *,
    budget: BudgetGuard | None = None,
) -> list[CriticCheck]:
    """Ask every critic of `panel` to judge `item` once, concurrently; one `CriticCheck` each.

    Args:
        panel: the panel whose critics to check (every tier's).
        item: the sample item (`sample_item` picks one).
        runner: the `CallRunner` to send with; give it the run's cache so a second check sends
            nothing and the run reuses the answers.
        budget: an optional cap for the whole check (`check_budget`).

    Returns:
        One check per critic, in the panel's order. Never raises for a call: every failure is
        a sentence.
    """
    gate = CriticGate()  # this check's own: a critic stopped here is not stopped elsewhere
    send = functools.partial(runner.call, gate=gate, limiter=panel_limiter(panel), budget=budget)
    critics = {critic.name: critic for critic in panel.critics}
    offsets = sample_offsets(panel.critics)
    cap = budget.cap.describe() if budget is not None else None

    def check(critic: Critic) -> CriticCheck:
        verdict = judge_with(_one_sample(critic), item, panel.scale, send, critics=critics,
                             first_sample=offsets[critic.name], pairwise=panel.pairwise,
                             rubric=panel.rubric)
        if verdict.ok and verdict.cached:
            # A cache hit is looked up before the key: another critic (or an earlier key) may
            # have paid for this answer. The run's other items would need this critic's key.
            try:
                resolve_key(critic, runner.key_lookup)
            except CallFailure as failure:
                verdict = dataclasses.replace(verdict, failure=FailureKind.CRITIC_ERROR,
                                              message=str(failure))
        notes = [*request_notes(critic), *gate.adjustments(critic.name)]
        return check_sentence(critic, verdict, notes, cap=cap)

    with ThreadPoolExecutor(max_workers=len(panel.critics),
                            thread_name_prefix="jurybox-check") as pool:
        return list(pool.map(check, panel.critics))


# -- the sample item -------------------------------------------------------------------------


def sample_item(items: Iterable[Item], item_id: str | None, where: str) -> Item:
    """The item to check on: the one with `item_id`, else the first.

    Args:
        where: the dataset, as the sentence names it (a file name, "dataset #3").

    Raises:
        DataError: no items, or no item with that id.
    """
    first = None
    for item in items:
        if item_id is None or item.id == item_id:
            return item
        first = first or item
    if first is None:
        raise DataError(f"{where} has no items to check a critic on; import a dataset with items")
    raise DataError(f"{where} has no item {item_id!r}; give --item one of its ids "
                    f"(the first is {first.id!r})")


def sample_item_of_dataset(db: sqlite_utils.Database, dataset_id: int,
                           item_id: str | None = None) -> Item:
    """The item to check on from a stored dataset: `item_id`, else its first item.

    Raises:
        DataError: no dataset with this id, no such item in it, or no items at all (the
            sentence says what to give instead).
    """
    try:
        get_dataset(db, dataset_id)
    except NotFoundError:
        raise DataError(f"there is no dataset with id {dataset_id}; give the id of a dataset "
                        "on the Datasets page, or a dataset file") from None
    first = load_items(db, dataset_id, limit=1)
    if not first:
        raise DataError(f"dataset #{dataset_id} has no items to check a critic on")
    if item_id is None:
        return first[0]
    try:
        return get_item(db, dataset_id, item_id)
    except NotFoundError:
        raise DataError(f"dataset #{dataset_id} has no item {item_id!r}; give --item one of "
                        f"its ids (the first is {first[0].id!r})") from None
