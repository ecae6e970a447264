"""Plug-in critics: `kind: rule`, `kind: python` and `kind: imported` critics, judged here
without any HTTP call.

They sit on a panel like any critic: they vote, they are stored and shown on Review with their
reasoning (which rule matched and why, or what the function said), and a cascade can put them
in a guard tier in front of the model critics (a failed check there rejects the item, see
`judging.panel.cascade`). They cost nothing: no request, no token, no dollar; the ledger counts them
as rule evaluations (`Ledger.rule_evaluations`). Their verdicts go through the call cache like
any call's, so a resumed run does not run them again.

A check passes or fails; the verdict is then the critic's pass or fail value on the scale:
`pass_label` / `fail_label` on a label scale (a yes/no scale defaults to yes / no), the top and
bottom of a score scale. A python critic may return a label or score of its own instead
(`judging.panel.python_critics`), and then needs no pass or fail label; its verdict counts as
failed only when it is the fail value. On a pairwise panel it returns the pairwise label (A, B
or the tie) of the item in its stored order, once: `judging.engine.chains` does not ask it the
swapped order.

An imported critic replays the verdicts one judge gave outside Jurybox (a column of a table,
an Inspect scorer, a Label Studio model version): its verdict on an item is the one the run's
`ImportedAnswers` hold for that judge, item, order and repeat, with the judge's reasoning. It is
never cached (a lookup costs less than the cache's), and an item the judge gave no verdict on is
a failed call (kind `item_error`), a missing value in every statistic.

`CallRunner.call` hands every plug-in critic's call to `judge_plugin`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any, Protocol

from judging.errors import ConfigError, ParseError
from judging.panel.critics import Critic
from judging.panel.pairwise import PairwiseConfig
from judging.panel.python_critics import load_function, read_returned
from judging.panel.rule_checks import evaluate_rule
from judging.panel.web_policy import WEB_PYTHON_REFUSAL
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS, FailureKind, ImportedVerdict, Item, Verdict

# What a python critic's call says when the process does not import code named in panels.
WEB_REFUSAL = "not run: " + WEB_PYTHON_REFUSAL
_SHOWN_REPLY = 2000  # characters of a python critic's return value kept as its raw reply


class ImportedAnswers(Protocol):
    """The verdicts imported critics replay (`judging.runs.intake.verdict_import` gives a run's)."""

    def answer(self, judge: str, item_id: str, swapped: bool, sample: int
               ) -> ImportedVerdict | None:
        """The judge's verdict on the item, its label as presented (on a swapped pairwise
        item, A is the item's second response); None when the judge gave none."""
        ...


class Replayed:
    """`ImportedAnswers` over verdicts held in memory (a run's, `storage.datasets.imported`), keyed by
    (judge, item id, swapped, sample). A stored label is in the item's own order; on a swapped
    pairwise item it is given as presented (A and B traded), as a model's answer would be, so
    `judging.engine.chains.both_orders` reads both orders alike."""

    def __init__(self, verdicts: Mapping[tuple[str, str, bool, int], ImportedVerdict],
                 pairwise: PairwiseConfig | None = None) -> None:
        self.verdicts = verdicts
        self.pairwise = pairwise if pairwise is not None and pairwise.active else None

    def answer(self, judge: str, item_id: str, swapped: bool, sample: int
               ) -> ImportedVerdict | None:
        found = self.verdicts.get((judge, item_id, swapped, sample))
        if found is None or not swapped or self.pairwise is None:
            return found
        return dataclasses.replace(found, label=self.pairwise.flip(found.label))


def is_plugin(critic: Critic) -> bool:
    """Whether a critic is judged by a rule or a python function (no model, no request)."""
    return critic.kind in PLUGIN_KINDS


def pass_fail_values(critic: Critic, scale: Scale) -> tuple[str | float, str | float]:
    """The verdicts a plug-in critic gives for a passed and a failed check.

    Raises:
        ConfigError: a label scale other than yes/no without `pass_label` / `fail_label`
            (`judging.panel.plugin_checks` refuses such a panel when it is built).
    """
    if scale.is_numeric:
        assert scale.max is not None and scale.min is not None
        return scale.max, scale.min
    passed = critic.pass_label or ("yes" if scale.kind == "yesno" else None)
    failed = critic.fail_label or ("no" if scale.kind == "yesno" else None)
    if passed is None or failed is None:
        raise ConfigError(f"critic {critic.name!r}: set pass_label and fail_label to labels of "
                          f"the scale ({', '.join(scale.labels)})")
    return scale.normalize(passed), scale.normalize(failed)


def plugin_cache_key(critic: Critic, item: Item, scale: Scale) -> str:
    """The cache key of a plug-in critic's verdict on an item: what it checks (the rule, or the
    function's path and code), what it reads (the fields), and the values it gives."""
    what: dict[str, Any] = {"kind": critic.kind, "scale": scale.model_dump(mode="json"),
                            "pass": critic.pass_label, "fail": critic.fail_label,
                            "reference_field": critic.reference_field}
    if critic.rule is not None:
        wanted = [critic.rule.field, critic.reference_field]
        what["rule"] = critic.rule.model_dump(mode="json")
        what["fields"] = {name: item.fields.get(name) for name in wanted if name}
    else:
        what["function"] = critic.function
        what["code"] = _code_digest(critic.function or "")
        what["fields"] = item.fields
    text = json.dumps(what, sort_keys=True, ensure_ascii=False, default=str)
    return "plugin:" + hashlib.sha256(text.encode()).hexdigest()


def _code_digest(path: str) -> str | None:
    """A digest of the function's bytecode, so an edited function is not answered from the
    cache of the old one (None when it cannot be loaded: the call then fails anyway)."""
    try:
        code = getattr(load_function(path), "__code__", None)
    except ConfigError:
        return None
    if code is None:
        return None
    return hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest()[:16]


def mark_passed(verdict: Verdict, critic: Critic, scale: Scale) -> Verdict:
    """Set `verdict.passed` from its value: True for the pass value, False for the fail value
    (a guard tier rejects on it), None for anything else or a failure."""
    if not verdict.ok:
        verdict.passed = None
        return verdict
    try:
        passed, failed = pass_fail_values(critic, scale)
    except ConfigError:
        verdict.passed = None
        return verdict
    value = verdict.value
    verdict.passed = True if value == passed else False if value == failed else None
    return verdict


def judge_plugin(critic: Critic, item: Item, scale: Scale, *, python_critics: bool,
                 imported: ImportedAnswers | None = None, sample: int = 0) -> Verdict:
    """A plug-in critic's verdict on an item. Never raises: a failure comes back as a verdict.

    Args:
        python_critics: whether this process may import and call the function a python critic
            names (False in the web app: such a call fails with `WEB_REFUSAL`).
        imported: the verdicts an imported critic replays (None: it has none to give).
        sample: which repeat of the item this call is (an imported critic's repeats).
    """
    if critic.kind == "imported":
        return _replayed(critic, item, scale, imported, sample)
    started = time.perf_counter()
    verdict = Verdict(critic=critic.name, item_id=item.id, vendor=critic.kind,
                      model=plugin_name(critic), raw_request=_request(critic))
    reference = item.fields.get(critic.reference_field) if critic.reference_field else None
    confidence: float | None = None
    try:
        if critic.rule is not None:
            result = evaluate_rule(critic.rule, item.fields, reference)
            value: Any = result.passed
            reasoning: str | None = result.reasoning
            verdict.raw_response = json.dumps({"passed": result.passed,
                                               "reasoning": result.reasoning}, ensure_ascii=False)
        elif not python_critics:
            return _failed(verdict, FailureKind.CRITIC_ERROR, WEB_REFUSAL, started)
        else:
            function = load_function(critic.function or "")
            returned = function(dict(item.fields), reference)
            verdict.raw_response = _shown(returned)
            answer = read_returned(returned)
            value, reasoning, confidence = answer.value, answer.reasoning, answer.confidence
        verdict.cache_key = plugin_cache_key(critic, item, scale)
    except KeyError as error:
        return _failed(verdict, FailureKind.ITEM_ERROR,
                       f"the item has no field {error.args[0]!r} for {critic.name!r} to check",
                       started)
    except ConfigError as error:
        return _failed(verdict, FailureKind.CRITIC_ERROR, str(error), started)
    except Exception as error:  # noqa: BLE001 - the user's function failed on this item
        return _failed(verdict, FailureKind.ERROR,
                       f"{critic.function} raised {type(error).__name__}: {error}"
                       if critic.kind == "python" else f"rule failed: {error}", started)
    try:
        if isinstance(value, bool):
            passed, failed = pass_fail_values(critic, scale)
            value = passed if value else failed
        normalized = scale.normalize(value)
    except ConfigError:  # a bool, on a label scale without pass / fail labels
        return _failed(verdict, FailureKind.PARSE_FAIL, (
            f"{critic.function} returned {value!r}, a pass or a fail, but the critic has no "
            f"pass_label and fail_label for it on the {scale.kind} scale: set them, or return "
            f"a label of the scale ({', '.join(scale.labels)})"), started)
    except ParseError as error:
        return _failed(verdict, FailureKind.PARSE_FAIL, f"{critic.function or critic.name} "
                       f"returned {error}", started)
    if isinstance(normalized, float):
        verdict.score = normalized
    else:
        verdict.label = normalized
    verdict.reasoning = reasoning
    verdict.confidence = confidence
    verdict.latency_ms = (time.perf_counter() - started) * 1000
    return mark_passed(verdict, critic, scale)


def _replayed(critic: Critic, item: Item, scale: Scale, imported: ImportedAnswers | None,
              sample: int) -> Verdict:
    """An imported critic's verdict: the judge's own, looked up."""
    judge = critic.judge or critic.name
    verdict = Verdict(critic=critic.name, item_id=item.id, vendor=critic.kind, model=judge,
                      sample=sample,
                      raw_request={"kind": "imported", "judge": judge, "swapped": item.swapped,
                                   "sample": sample})
    found = None if imported is None else imported.answer(judge, item.id, item.swapped, sample)
    if found is None:
        order = " in the swapped order" if item.swapped else ""
        repeat = f" (repeat {sample + 1})" if sample else ""
        return _failed(verdict, FailureKind.ITEM_ERROR,
                       f"{judge} gave no verdict on this item{order}{repeat}", time.perf_counter())
    verdict.raw_response = json.dumps({"label": found.label, "score": found.score,
                                       "reasoning": found.reasoning,
                                       "confidence": found.confidence}, ensure_ascii=False)
    try:
        normalized = scale.normalize(found.label if found.label is not None else found.score)
    except ParseError as error:  # refused at import; kept as a failure if the scale changed
        return _failed(verdict, FailureKind.PARSE_FAIL, f"{judge} said {error}",
                       time.perf_counter())
    if isinstance(normalized, float):
        verdict.score = normalized
    else:
        verdict.label = normalized
    verdict.reasoning = found.reasoning
    verdict.confidence = found.confidence
    # What was replayed, hashed: two imports of the same verdict share a key.
    asked = json.dumps(verdict.raw_request, sort_keys=True, ensure_ascii=False)
    verdict.cache_key = "imported:" + hashlib.sha256(
        (asked + verdict.raw_response).encode()).hexdigest()
    verdict.latency_ms = 0.0
    return verdict


def plugin_name(critic: Critic) -> str:
    """What a plug-in critic's verdicts name as their model: the rule's check or the
    function's path ("no-regex", "mypkg.checks:no_pii")."""
    if critic.rule is not None:
        return critic.rule.check
    return critic.function or "python"


def _request(critic: Critic) -> dict[str, Any]:
    """The plug-in's stand-in for a raw request: what it checks (shown as the evidence)."""
    if critic.rule is not None:
        return {"kind": "rule", "rule": critic.rule.model_dump(mode="json", exclude_defaults=True),
                "reference_field": critic.reference_field}
    return {"kind": "python", "function": critic.function,
            "reference_field": critic.reference_field}


def _shown(returned: Any) -> str:
    try:
        text = json.dumps(returned, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(returned)
    return text[:_SHOWN_REPLY]


def _failed(verdict: Verdict, kind: FailureKind, message: str, started: float) -> Verdict:
    verdict.failure = kind
    verdict.message = message
    verdict.latency_ms = (time.perf_counter() - started) * 1000
    return verdict
