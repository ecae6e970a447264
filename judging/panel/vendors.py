"""Vendor presets: where a critic's requests go, which key they carry, and each vendor's quirks.

Every vendor speaks the OpenAI chat-completions protocol; a preset only knows the defaults and
the oddities (JSON mode support, reasoning fields, errors inside HTTP 200 replies). Requests are
sent by `judging.engine.calls`; replies are read by `judging.engine.parsing`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from judging.errors import CriticCallError
from judging.panel.critics import Critic
from judging.verdicts import PLUGIN_KINDS

KeyLookup = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class VendorPreset:
    """What Jurybox knows about one vendor.

    Attributes:
        name: the value of `Critic.vendor` that selects this preset.
        title: a human name for the UI.
        base_url: the default OpenAI-compatible base URL (None: the critic must give one).
        key_env: the default environment variable holding the key (None: no key is sent unless
            the critic names a variable).
        key_required: True when a call without a key cannot succeed (a missing key is then a
            CRITIC_ERROR verdict without a request).
        json_mode: True when `response_format: {"type": "json_object"}` is honoured; False when it
            is ignored or rejected (we then rely on the prompt and the tolerant parser).
        max_concurrency: a default cap on requests in flight to this vendor (None: only the run's
            concurrency limits it). Local servers get a small cap so a laptop GPU is not flooded.
            A panel's `limits` entry for the vendor replaces it (`Panel.limits_for`). There is
            no default requests-per-minute: vendors' rate limits depend on the account tier,
            so a built-in pace would silently slow some users down for nothing.
        simulated: True for the built-in simulator; its verdicts are labelled simulated.
        logprobs: False when the endpoint does not return token logprobs (a critic asking for
            them is refused at panel check time, `judging.voting.logprobs`).
        extra_headers: headers sent with every request (never a key).
        batch_api: the vendor's batch API, "openai" (files + `/v1/batches`) or "anthropic"
            (Message Batches), or None when it has none we drive (`judging.engine.batches`).
        batch_price_factor: what a batched call costs against a live one (both OpenAI and
            Anthropic charge half); 1.0 where the discount is unknown.
        quirks: sentences shown in the UI and docs/vendors.md about what this vendor does differently.
        api: the protocol of live calls: "chat" (OpenAI chat completions, `POST
            {base}/chat/completions`) or "messages" (Anthropic's Messages API, `POST
            {base}/messages`, `judging.engine.anthropic_messages`). A critic's `api` overrides it.
        cached_input_factor: what an input token read from the vendor's prompt cache costs
            against a plain one (Anthropic 0.1; OpenAI from 0.5 to 0.1 by model family, see
            `cached_price_factor`); 1.0 where no discount is documented.
        cache_write_factor: what an input token written to the prompt cache costs against a
            plain one (Anthropic: 1.25 for the 5-minute cache); 1.0 elsewhere.
    """

    name: str
    title: str
    base_url: str | None
    key_env: str | None
    key_required: bool = True
    json_mode: bool = True
    max_concurrency: int | None = None
    simulated: bool = False
    logprobs: bool = True
    extra_headers: dict[str, str] = field(default_factory=dict)
    batch_api: str | None = None
    batch_price_factor: float = 1.0
    quirks: tuple[str, ...] = ()
    api: str = "chat"
    cached_input_factor: float = 1.0
    cache_write_factor: float = 1.0


PRESETS: dict[str, VendorPreset] = {
    preset.name: preset
    for preset in (
        VendorPreset(
            name="openai",
            title="OpenAI",
            base_url="https://api.openai.com/v1",
            key_env="OPENAI_API_KEY",
            batch_api="openai",
            batch_price_factor=0.5,
            cached_input_factor=0.5,
            quirks=(
                "429 insufficient_quota means out of credit: fatal, never retried; any other "
                "429 is a rate limit, retried after the wait it asks for.",
                "Reasoning models (o-series, gpt-5.x) get max_completion_tokens and no "
                "temperature; every model gets max_completion_tokens, never the deprecated "
                "max_tokens.",
                "Prompt caching is automatic for a shared prefix of 1,024 tokens or more: the "
                "system prompt (with few-shot examples) goes first; cached tokens are priced "
                "at the cached rate.",
            ),
        ),
        VendorPreset(
            name="deepseek",
            title="DeepSeek",
            base_url="https://api.deepseek.com/v1",
            key_env="DEEPSEEK_API_KEY",
            cached_input_factor=0.1,
            quirks=(
                "deepseek-reasoner returns its thinking in `reasoning_content`.",
                "R1-style models may emit `</think>` without an opening tag.",
                "deepseek-reasoner errors when asked for logprobs: such a critic is refused "
                "when the panel is checked.",
            ),
        ),
        VendorPreset(
            name="openrouter",
            title="OpenRouter",
            base_url="https://openrouter.ai/api/v1",
            key_env="OPENROUTER_API_KEY",
            extra_headers={"X-Title": "Jurybox"},
            quirks=(
                "Sends upstream errors inside HTTP 200 bodies (an `error` object).",
                "Reasoning models may return a `reasoning` field.",
                "A moderation flag on one input (HTTP 403, `metadata.reasons`) is a refusal "
                "of that item, not a bad key.",
                "The billed cost reported in `usage.cost` is what the ledger counts.",
            ),
        ),
        VendorPreset(
            name="anthropic",
            title="Anthropic (Messages API)",
            base_url="https://api.anthropic.com/v1",
            key_env="ANTHROPIC_API_KEY",
            json_mode=False,
            logprobs=False,
            batch_api="anthropic",
            batch_price_factor=0.5,
            api="messages",
            cached_input_factor=0.1,
            cache_write_factor=1.25,
            quirks=(
                "Live calls use the native Messages API (x-api-key, anthropic-version, a "
                "top-level system prompt); set a critic's api to chat for the "
                "OpenAI-compatible endpoint, which Anthropic calls not production-ready.",
                "The shared system prompt is marked cacheable (cache_control) when it is long "
                "enough to be cached: written at 1.25x, read at 0.1x the input price.",
                "temperature is not sent (the SDK no longer defines it; Claude Opus 4.7 and "
                "later refuse it): name it in extra to send it to an older model.",
                "No JSON mode and no token logprobs: JSON comes from the prompt.",
                "stop_reason refusal is a refusal; max_tokens and "
                "model_context_window_exceeded are truncations.",
            ),
        ),
        VendorPreset(
            name="gemini",
            title="Google Gemini (OpenAI-compatible endpoint)",
            base_url="https://generativelanguage.googleapis.com/v1beta/openai/",
            key_env="GEMINI_API_KEY",
            logprobs=False,
            cached_input_factor=0.25,
            quirks=("Errors may arrive as a JSON array of error objects.",
                    "A per-minute RESOURCE_EXHAUSTED says \"exceeded your current quota ... "
                    "billing\": it is a rate limit, retried after the delay it gives. The same "
                    "words with a per-day quota id (QuotaFailure ...PerDay...) stop the critic: "
                    "the day's quota comes back at midnight Pacific time. A metric whose limit "
                    "is 0 (\"limit: 0, model: gemini-2.5-pro\": the plan does not include the "
                    "model) stops the critic too: no wait helps.",
                    "The compatible endpoint returns no token logprobs: logprob scores are not "
                    "available."),
        ),
        VendorPreset(
            name="ollama",
            title="Ollama (local)",
            base_url="http://127.0.0.1:11434/v1",
            key_env=None,
            key_required=False,
            max_concurrency=4,
            quirks=("Thinking models return a `reasoning` field or <think> tags.",),
        ),
        VendorPreset(
            name="custom",
            title="Custom OpenAI-compatible server (vLLM, llama.cpp, ...)",
            base_url=None,
            key_env=None,
            key_required=False,
            batch_api="openai",
            quirks=(
                "Needs `base_url`. A key is sent only if the critic names `api_key_env`.",
                "vLLM returns reasoning in a `reasoning` field.",
            ),
        ),
        VendorPreset(
            name="simulated",
            title="Simulated vendor (built in, no key)",
            base_url=None,  # the in-process simulator's URL, known once it has started
            key_env=None,
            key_required=False,
            simulated=True,
            batch_api="openai",
            batch_price_factor=0.5,  # as the vendors it stands in for, so demo costs read true
            cached_input_factor=0.1,
            cache_write_factor=1.25,
            quirks=("Runs on 127.0.0.1; its verdicts are always labelled simulated.",),
        ),
    )
}


def get_preset(vendor: str) -> VendorPreset:
    """The preset for a vendor name.

    Raises:
        CriticCallError: the name is not a known preset (the message lists the known ones).
    """
    try:
        return PRESETS[vendor]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        raise CriticCallError(
            f"unknown vendor {vendor!r}; use one of: {known} (or 'custom' with a base_url)"
        ) from None


# What answers a critic: a rule or python check (it calls nothing), the built-in simulator, or
# a vendor's model.
CriticSource = Literal["check", "imported", "simulated", "vendor"]


def critic_source(critic: Critic) -> CriticSource:
    """What answers `critic`. A rule or python critic is a check, and an imported critic replays
    verdicts given elsewhere, whatever their `vendor` says (the field keeps its default,
    "simulated", and is never used): they call no model."""
    if critic.kind == "imported":
        return "imported"
    if critic.kind in PLUGIN_KINDS:
        return "check"
    preset = PRESETS.get(critic.vendor)
    return "simulated" if preset is not None and preset.simulated else "vendor"


@dataclass(frozen=True, slots=True)
class PanelSources:
    """Which critics of a panel are answered by what (`critic_source`), names in panel order.

    Attributes:
        simulated: critics that call the built-in simulator (it does not read the items of
            data it was not built for: its agreement with gold labels there is chance).
        checks: rule and python critics (they call nothing).
        imported: critics replaying verdicts given outside Jurybox (they call nothing).
        vendors: vendor preset name -> its critics (a real model answers them).
    """

    simulated: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    imported: tuple[str, ...] = ()
    vendors: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, critics: Iterable[Critic]) -> PanelSources:
        """The sources of `critics` (a panel's `critics`)."""
        by_source: dict[str, list[str]] = {"simulated": [], "check": [], "imported": []}
        vendors: dict[str, list[str]] = {}
        for critic in critics:
            source = critic_source(critic)
            if source == "vendor":
                vendors.setdefault(critic.vendor, []).append(critic.name)
            else:
                by_source[source].append(critic.name)
        return cls(simulated=tuple(by_source["simulated"]), checks=tuple(by_source["check"]),
                   imported=tuple(by_source["imported"]),
                   vendors={vendor: tuple(names) for vendor, names in vendors.items()})

    @property
    def calls_simulator(self) -> bool:
        """A critic calls the simulator: the run is simulated (`storage.results.runs.create_run`)."""
        return bool(self.simulated)

    @property
    def calls_vendor(self) -> bool:
        """A critic calls a real vendor (money may be spent, data leaves the machine)."""
        return bool(self.vendors)


def key_variable(critic: Critic) -> str | None:
    """The name of the variable that holds a critic's key (never the key), or None."""
    return critic.api_key_env or get_preset(critic.vendor).key_env


def resolve_key(critic: Critic, key_lookup: KeyLookup | None = None) -> str | None:
    """Look a critic's key up by its variable name.

    Args:
        critic: the critic.
        key_lookup: maps a variable name to its value (default `os.environ.get`; the app passes
            one that also reads Streamlit secrets).

    Returns:
        The key, or None when the vendor needs none.

    Raises:
        CriticCallError: the vendor needs a key (or the critic names a variable) and it is not
            set; or the key holds a line break, a space, a control or a non-ASCII character
            (a configuration mistake no request could survive). The message names the
            variable, never a value.
    """
    lookup = key_lookup or os.environ.get
    preset = get_preset(critic.vendor)
    variable = key_variable(critic)
    if variable is None:
        return None
    key = lookup(variable)
    if key and key.strip():
        key = key.strip()
        problem = _key_problem(key)
        if problem is not None:
            # Caught before any request: sent, it would be refused by httpx (or forge a
            # header), and every later item would fail the same way.
            raise CriticCallError(
                f"critic {critic.name!r}: the API key in {variable} {problem}, so it cannot be "
                f"sent. Fix the value of {variable} (copy the key again) and run again."
            )
        return key
    # A critic that names a variable explicitly expects it set, even for keyless vendors.
    if preset.key_required or critic.api_key_env:
        raise CriticCallError(
            f"critic {critic.name!r}: no API key: the variable {variable} is not set. Set it in "
            "the environment (or in Streamlit secrets under [jurybox]) and run again."
        )
    return None


def _key_problem(key: str) -> str | None:
    """What makes a key unusable in an `Authorization` header, in words (never the key)."""
    for position, char in enumerate(key, start=1):
        if char in "\r\n":
            return f"holds a line break (character {position})"
        if not "!" <= char <= "~":  # visible ASCII only: keys never hold spaces or controls
            what = "a space" if char == " " else "a control character" if char < " " else (
                "a non-ASCII character")
            return f"holds {what} (character {position})"
    return None


def json_mode_for(critic: Critic) -> bool:
    """Whether to ask this critic for `response_format: json_object`."""
    if critic.json_mode is False:
        return False
    preset = get_preset(critic.vendor)
    # An explicit True still cannot make a vendor honour it: Anthropic ignores the field.
    return preset.json_mode


def api_of(critic: Critic) -> str:
    """The protocol a critic's live calls speak: "chat" or "messages" (its own `api`, else its
    vendor's)."""
    return critic.api or get_preset(critic.vendor).api


def caches_prompts(critic: Critic) -> bool:
    """Whether the critic's vendor reuses a long shared prompt prefix at a discount
    (automatically, or for Anthropic through the cache marks of the Messages API)."""
    preset = get_preset(critic.vendor)
    if critic.vendor == "anthropic":
        return api_of(critic) == "messages"
    return preset.cached_input_factor < 1.0


def cached_price_factor(critic: Critic) -> float:
    """What a cached input token costs against a plain one, for this critic's model.

    OpenAI's discount depends on the family (pricing page, 2026): gpt-5.x 90 %, gpt-4.1 and
    the o-series 75 %, gpt-4o 50 %. Elsewhere the preset's figure.
    """
    preset = get_preset(critic.vendor)
    if critic.vendor == "openai":
        model = critic.model.lower()
        if model.startswith("gpt-5"):
            return 0.1
        if model.startswith(("gpt-4.1", "o3", "o4")):
            return 0.25
    return preset.cached_input_factor


def cost_usd(
    critic: Critic, tokens_in: int | None, tokens_out: int | None, *, batched: bool = False,
    cached: int | None = None, cache_write: int | None = None, reported: float | None = None,
) -> float | None:
    """The price of one call in US dollars.

    Unknown is None, never 0: a critic without prices, or a reply without token counts. Simulated
    critics without prices cost exactly 0.0 because no money changes hands; give them prices to
    demo cost figures. A call answered through the vendor's batch API (`batched`) costs the
    preset's `batch_price_factor` of the live price.

    Args:
        tokens_in: every input token, cached ones included.
        cached: of those, the tokens read from the vendor's prompt cache (priced at
            `price_cached_in_per_mtok`, else the input price times `cached_price_factor`).
        cache_write: of those, the tokens written to the cache (Anthropic: 1.25x input).
        reported: the cost the vendor itself billed (OpenRouter's `usage.cost`): used as it is.
    """
    if reported is not None:
        return reported
    preset = get_preset(critic.vendor)
    if critic.price_in_per_mtok is None or critic.price_out_per_mtok is None:
        return 0.0 if preset.simulated else None
    if tokens_in is None or tokens_out is None:
        return None
    price_in = critic.price_in_per_mtok
    price_cached = (critic.price_cached_in_per_mtok if critic.price_cached_in_per_mtok is not None
                    else price_in * cached_price_factor(critic))
    cached = min(cached or 0, tokens_in)
    cache_write = min(cache_write or 0, tokens_in - cached)
    plain = tokens_in - cached - cache_write
    factor = preset.batch_price_factor if batched else 1.0
    return factor * (plain * price_in + cached * price_cached
                     + cache_write * price_in * preset.cache_write_factor
                     + tokens_out * critic.price_out_per_mtok) / 1e6
