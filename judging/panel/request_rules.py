"""Which sampling and length parameters a model takes: the one place that knows it.

Vendors refuse some parameters for some model families, with HTTP 400 on every request:

    OpenAI reasoning models (o1, o3, o4-mini, gpt-5.x ...)
        `max_tokens` -> "Unsupported parameter ... Use 'max_completion_tokens' instead";
        `temperature` other than 1 and `top_p` -> "Unsupported value"; no logprobs.
        (The `openai` SDK's docstring: `max_tokens` "is not compatible with o-series models".)
    OpenAI, every model: `max_completion_tokens` is the documented name; `max_tokens` is
        deprecated, so it is never sent to OpenAI.
    Claude Opus 4.7 and later families (Claude 4.7+, 5.x)
        `temperature` -> "`temperature` is deprecated for this model" (later models: "may only
        be set to 1 when thinking is enabled"); `top_p` likewise.
    DeepSeek `deepseek-reasoner`: `logprobs` / `top_logprobs` "will trigger an error"
        (DeepSeek's reasoning-model guide); temperature and top_p are accepted and ignored.

`rules_for(critic)` decides this once, when a request is built; `request_notes(critic)` says it
in sentences for the Panel page and `jurybox check`. A model this table does not know yet is
handled at run time instead: a 400 naming an unsupported parameter makes the call layer drop or
rename it once and remember it for the run (`judging.engine.calls.adjust`).

An OpenRouter model id carries its maker (`openai/o3`, `anthropic/claude-opus-4.7`): the same
families apply to the part after the slash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from judging.panel.critics import Critic
from judging.panel.vendors import PRESETS, api_of

__all__ = ["RequestRules", "request_notes", "rules_for"]

# o1, o3-mini, o4-mini-high, gpt-5, gpt-5.1, gpt-5-mini, gpt-5.2-pro ... (not gpt-5-chat-*,
# which is the non-reasoning chat model and takes temperature).
_OPENAI_REASONING = re.compile(r"^(o\d+(?:-[a-z0-9.-]+)?|gpt-5(?:\.\d+)?(?!-chat)(?:-[a-z0-9.-]+)?)$")
# claude-opus-4-7, claude-opus-4.7, claude-sonnet-5, claude-opus-5-1-20270101 ...
_CLAUDE = re.compile(r"^claude-(?:opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?:$|-)")
# claude-3-5-sonnet-20241022, claude-3-opus ... (the older naming: version first)
_CLAUDE_OLD = re.compile(r"^claude-(\d+)(?:-(\d))?-(?:opus|sonnet|haiku)")


@dataclass(frozen=True, slots=True)
class RequestRules:
    """What one critic's requests may carry.

    Attributes:
        length_param: the name of the reply-length limit ("max_tokens" or
            "max_completion_tokens").
        temperature: False when the model refuses `temperature` (it is then not sent).
        top_p: False when the model refuses `top_p`.
        logprobs: False when asking for logprobs makes the model error.
        refused: other parameters the model refuses; an `extra` naming one is not sent.
        notes: one sentence per rule that changes what is sent, for people.
    """

    length_param: str = "max_tokens"
    temperature: bool = True
    top_p: bool = True
    logprobs: bool = True
    refused: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()


def _bare_model(critic: Critic) -> str:
    """The model id without an OpenRouter maker prefix, lower case."""
    model = critic.model.strip().lower()
    if critic.vendor == "openrouter" and "/" in model:
        model = model.split("/", 1)[1]
    return model.removesuffix(":thinking").removesuffix(":free")


def _claude_version(model: str) -> tuple[int, int] | None:
    match = _CLAUDE.match(model)
    if match:
        major = int(match.group(1))
        minor = int(match.group(2)) if match.group(2) and len(match.group(2)) <= 2 else 0
        return major, minor
    match = _CLAUDE_OLD.match(model)
    if match:
        return int(match.group(1)), int(match.group(2) or 0)
    return None


def is_openai_reasoning(model: str) -> bool:
    """True for OpenAI's reasoning families (o-series, gpt-5.x except gpt-5-chat)."""
    return bool(_OPENAI_REASONING.match(model))


def refuses_temperature_claude(model: str) -> bool:
    """True for Claude families that refuse `temperature` (Opus 4.7 and later, any 5.x)."""
    version = _claude_version(model)
    return version is not None and version >= (4, 7)


def rules_for(critic: Critic) -> RequestRules:
    """The parameters this critic's model takes, by vendor and model family."""
    model = _bare_model(critic)
    vendor = critic.vendor
    api = api_of(critic) if vendor in PRESETS else "chat"
    openai_family = vendor == "openai" or (vendor == "openrouter" and
                                          critic.model.lower().startswith("openai/"))
    anthropic_family = vendor == "anthropic" or (vendor == "openrouter" and
                                                 critic.model.lower().startswith("anthropic/"))
    if openai_family and is_openai_reasoning(model):
        # OpenRouter takes `max_tokens` for every model and maps it itself.
        length = "max_completion_tokens" if vendor == "openai" else "max_tokens"
        return RequestRules(
            length_param=length, temperature=False, top_p=False, logprobs=False,
            # "Not supported with latest reasoning models o3 and o4-mini" (the SDK's `stop`).
            refused=frozenset({"stop", "presence_penalty", "frequency_penalty", "logit_bias"}),
            notes=(
                f"{critic.model} is a reasoning model: temperature, top_p, stop and the "
                "penalties are not sent (it takes only the defaults), and no logprobs are "
                "asked for.",
                *(("The reply limit is sent as max_completion_tokens (the model refuses "
                   "max_tokens); it also covers the model's hidden reasoning, so keep it "
                   "generous.",) if length == "max_completion_tokens" else ()),
            ),
        )
    if vendor == "openai":
        return RequestRules(length_param="max_completion_tokens")
    if vendor == "anthropic" and api == "messages":
        return RequestRules(
            temperature=False, top_p=False, logprobs=False,
            notes=((f"temperature and top_p are not sent for {critic.model}: Claude Opus 4.7 "
                    "and later models refuse them." if refuses_temperature_claude(model) else
                    "temperature and top_p are not sent: Anthropic's Messages API (SDK 2.14) "
                    "no longer defines them (api: chat sends them to an older model)."),),
        )
    if anthropic_family and refuses_temperature_claude(model):
        return RequestRules(
            temperature=False, top_p=False,
            notes=(f"temperature and top_p are not sent for {critic.model}: Claude Opus 4.7 "
                   "and later models refuse them.",),
        )
    if vendor == "deepseek" and model.startswith("deepseek-reasoner"):
        return RequestRules(
            logprobs=False,
            notes=("deepseek-reasoner errors when asked for logprobs; temperature is sent but "
                   "has no effect on it (DeepSeek's reasoning-model guide).",),
        )
    return RequestRules()


def request_notes(critic: Critic) -> list[str]:
    """Sentences saying what is sent differently for this critic's model (empty: as set)."""
    notes = list(rules_for(critic).notes)
    removed = sorted(name for name, value in critic.extra.items() if value is None)
    if removed:
        notes.append("Not sent, as extra asks: " + ", ".join(removed) + ".")
    return notes
