"""Replies and errors as the vendors document them: the oracle of `test_vendor_contract.py`.

Each case is one vendor exchange: what the vendor answers (status, headers, body, in order for
a retried call), the page or report it was taken from, and what Jurybox must make of it (the
failure kind, the label, tokens, cost, attempts, whether the critic is stopped). Bodies are
the documented ones with only the answer text replaced by a verdict; ids and numbers are kept.

Prices of every case's critic: $2 in / $8 out per million tokens (`PRICE_IN`, `PRICE_OUT`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

PRICE_IN = 2.0
PRICE_OUT = 8.0
VERDICT = '{"label": "KEEP", "confidence": 0.9, "reasoning": "A distinct, useful class."}'


@dataclass(frozen=True)
class Exchange:
    status: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()

    def bytes(self) -> bytes:
        return json.dumps(self.body).encode()


@dataclass(frozen=True)
class Case:
    """One documented exchange and what Jurybox must make of it.

    Attributes:
        replies: the vendor's answers in order (the last one repeats).
        failure: the verdict's failure kind (None: a verdict).
        stops: True when the critic must be stopped for the run (a later item is not sent).
        asked_waits: the waits the vendor asked for, in seconds, as the runner must sleep them.
        adjusted: a parameter the runner must drop after the vendor refused it.
    """

    name: str
    source: str
    vendor: str
    model: str
    replies: tuple[Exchange, ...]
    failure: str | None = None
    label: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_cached: int | None = None
    cost_usd: float | None = None
    attempts: int = 1
    stops: bool = False
    asked_waits: tuple[float, ...] = ()
    adjusted: str | None = None
    reasoning: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    message_has: str = ""
    api: str | None = None  # the critic's `api` (None: its vendor's)


def openai_completion(content: str | None = VERDICT, *, finish: str = "stop",
                      refusal: str | None = None, usage: dict[str, Any] | None = None
                      ) -> dict[str, Any]:
    """The chat completion object of https://platform.openai.com/docs/api-reference/chat/object."""
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion",
        "created": 1741570283, "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                                              "refusal": refusal, "annotations": []},
                     "logprobs": None, "finish_reason": finish}],
        "usage": usage or {
            "prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0}},
        "service_tier": "default", "system_fingerprint": "fp_fc9f1d7035",
    }


def anthropic_message(content: list[dict[str, Any]] | None = None, *, stop: str = "end_turn",
                      usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Message object of https://docs.claude.com/en/api/messages (response example)."""
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content if content is not None else [{"type": "text", "text": VERDICT}],
        "stop_reason": stop, "stop_sequence": None,
        "usage": usage or {"input_tokens": 2095, "output_tokens": 503,
                           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """The error shape of https://docs.claude.com/en/api/errors."""
    return {"type": "error", "error": {"type": kind, "message": message},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}


def openai_error(message: str, kind: str, code: str | None, param: str | None = None
                 ) -> dict[str, Any]:
    """The error object of https://platform.openai.com/docs/guides/error-codes."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


OK = Exchange(200, openai_completion())
ANTHROPIC_OK = Exchange(200, anthropic_message())
PLAIN_COST = (1117 * PRICE_IN + 46 * PRICE_OUT) / 1e6

CASES: tuple[Case, ...] = (
    # -- OpenAI ---------------------------------------------------------------------------------
    Case("openai: a completion with cached prompt tokens",
         "https://platform.openai.com/docs/api-reference/chat/object and "
         "https://platform.openai.com/docs/guides/prompt-caching (cached_tokens)",
         "openai", "gpt-4o",
         (Exchange(200, openai_completion(usage={
             "prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
             "prompt_tokens_details": {"cached_tokens": 1920}})),),
         label="KEEP", tokens_in=2006, tokens_out=300, tokens_cached=1920,
         # gpt-4o's cached input costs half the input price.
         cost_usd=(86 * PRICE_IN + 1920 * PRICE_IN * 0.5 + 300 * PRICE_OUT) / 1e6),
    Case("openai: a refusal in the message's refusal field",
         "https://platform.openai.com/docs/guides/structured-outputs#refusals",
         "openai", "gpt-4o",
         (Exchange(200, openai_completion(None, refusal="I'm sorry, I cannot assist with that "
                                          "request.")),),
         failure="refusal", tokens_in=1117, tokens_out=46, cost_usd=PLAIN_COST),
    Case("openai: finish_reason content_filter",
         "https://platform.openai.com/docs/api-reference/chat/object (finish_reason)",
         "openai", "gpt-4o",
         (Exchange(200, openai_completion('{"label": "KE', finish="content_filter")),),
         failure="refusal", tokens_in=1117, tokens_out=46, cost_usd=PLAIN_COST),
    Case("openai: a reasoning model spends the budget on thinking (blank, length)",
         "https://platform.openai.com/docs/guides/reasoning#allocating-space-for-reasoning",
         "openai", "o4-mini",
         (Exchange(200, openai_completion("", finish="length", usage={
             "prompt_tokens": 1117, "completion_tokens": 512, "total_tokens": 1629,
             "completion_tokens_details": {"reasoning_tokens": 512}})),),
         failure="truncated", tokens_in=1117, tokens_out=512,
         cost_usd=(1117 * PRICE_IN + 512 * PRICE_OUT) / 1e6),
    Case("openai: 401 invalid_api_key stops the critic",
         "https://platform.openai.com/docs/guides/error-codes#api-errors (401 - Invalid "
         "Authentication)",
         "openai", "gpt-4o",
         (Exchange(401, openai_error(
             "Incorrect API key provided: sk-abc***. You can find your API key at "
             "https://platform.openai.com/account/api-keys.", "invalid_request_error",
             "invalid_api_key")),),
         failure="critic_error", stops=True, message_has="refused the API key"),
    Case("openai: 429 insufficient_quota stops the critic, never retried",
         "https://platform.openai.com/docs/guides/error-codes#api-errors (429 - You exceeded "
         "your current quota)",
         "openai", "gpt-4o",
         (Exchange(429, openai_error(
             "You exceeded your current quota, please check your plan and billing details. For "
             "more information on this error, read the docs: "
             "https://platform.openai.com/docs/guides/error-codes/api-errors.",
             "insufficient_quota", "insufficient_quota")),),
         failure="critic_error", stops=True, message_has="out of quota"),
    Case("openai: 429 rate_limit_exceeded is waited out as asked",
         "https://platform.openai.com/docs/guides/rate-limits#error-mitigation",
         "openai", "gpt-4o",
         (Exchange(429, openai_error(
             "Rate limit reached for gpt-4o in organization org-exampleorg on tokens per min "
             "(TPM): Limit 30000, Used 29600, Requested 1200. Please try again in 1.6s. Visit "
             "https://platform.openai.com/account/rate-limits to learn more.", "tokens",
             "rate_limit_exceeded")), OK),
         label="KEEP", attempts=2, asked_waits=(1.6,), tokens_in=1117, tokens_out=46,
         cost_usd=PLAIN_COST),
    Case("openai: a rate limit that links the billing page is still a rate limit",
         "https://community.openai.com/t/rate-limit-reached-for-default-gpt-3-5-turbo-in-"
         "organization-on-requests-per-min/ (accounts without a payment method)",
         "openai", "gpt-4o-mini",
         (Exchange(429, openai_error(
             "Rate limit reached for gpt-4o-mini in organization org-exampleorg on requests per "
             "min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit "
             "https://platform.openai.com/account/rate-limits to learn more. You can increase "
             "your rate limit by adding a payment method to your account at "
             "https://platform.openai.com/account/billing.", "requests",
             "rate_limit_exceeded")), OK),
         label="KEEP", attempts=2, asked_waits=(20.0,), tokens_in=1117, tokens_out=46,
         cost_usd=PLAIN_COST),
    Case("openai: 400 context_length_exceeded fails the item only",
         "https://platform.openai.com/docs/guides/error-codes (context_length_exceeded)",
         "openai", "gpt-4o",
         (Exchange(400, openai_error(
             "This model's maximum context length is 128000 tokens. However, your messages "
             "resulted in 130012 tokens. Please reduce the length of the messages.",
             "invalid_request_error", "context_length_exceeded", "messages")),),
         failure="item_error", message_has="too long"),
    Case("openai: 404 model_not_found stops the critic",
         "https://platform.openai.com/docs/guides/error-codes (404 model_not_found)",
         "openai", "gpt-4o",
         (Exchange(404, openai_error(
             "The model `gpt-4o-typo` does not exist or you do not have access to it.",
             "invalid_request_error", "model_not_found")),),
         failure="critic_error", stops=True, message_has="not found"),
    Case("openai: 500 is retried, then an error",
         "https://platform.openai.com/docs/guides/error-codes#api-errors (500 - The server had "
         "an error)",
         "openai", "gpt-4o",
         (Exchange(500, openai_error("The server had an error while processing your request. "
                                     "Sorry about that!", "server_error", None)),),
         failure="error", attempts=3),
    Case("openai: an unknown model refuses temperature: dropped once, sent again",
         "https://community.openai.com/t/o1-temperature-unsupported-value/ (Unsupported value)",
         "openai", "gpt-7-preview",
         (Exchange(400, openai_error(
             "Unsupported value: 'temperature' does not support 0 with this model. Only the "
             "default (1) value is supported.", "invalid_request_error", "unsupported_value",
             "temperature")), OK),
         label="KEEP", attempts=2, adjusted="temperature", tokens_in=1117, tokens_out=46,
         cost_usd=PLAIN_COST),
    Case("openai-compatible: 'Use max_completion_tokens instead' renames the parameter",
         "https://community.openai.com/t/max-tokens-unsupported-parameter-o1/ (Unsupported "
         "parameter)",
         "custom", "o3-via-gateway",
         (Exchange(400, openai_error(
             "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
             "'max_completion_tokens' instead.", "invalid_request_error",
             "unsupported_parameter", "max_tokens")), OK),
         label="KEEP", attempts=2, adjusted="max_tokens", tokens_in=1117, tokens_out=46,
         cost_usd=PLAIN_COST),
    # -- Anthropic (native Messages API) -------------------------------------------------------
    Case("anthropic: a message read from the prompt cache",
         "https://docs.claude.com/en/docs/build-with-claude/prompt-caching (usage fields)",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(200, anthropic_message(usage={
             "input_tokens": 21, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 2048, "output_tokens": 40})),),
         label="KEEP", tokens_in=2069, tokens_out=40, tokens_cached=2048,
         cost_usd=(21 * PRICE_IN + 2048 * PRICE_IN * 0.1 + 40 * PRICE_OUT) / 1e6),
    Case("anthropic: a message written to the prompt cache",
         "https://docs.claude.com/en/docs/build-with-claude/prompt-caching#pricing",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(200, anthropic_message(usage={
             "input_tokens": 21, "cache_creation_input_tokens": 2048,
             "cache_read_input_tokens": 0, "output_tokens": 40})),),
         label="KEEP", tokens_in=2069, tokens_out=40, tokens_cached=0,
         cost_usd=(21 * PRICE_IN + 2048 * PRICE_IN * 1.25 + 40 * PRICE_OUT) / 1e6),
    Case("anthropic: thinking blocks are the reasoning",
         "https://docs.claude.com/en/docs/build-with-claude/extended-thinking (response)",
         "anthropic", "claude-opus-4-7",
         (Exchange(200, anthropic_message([
             {"type": "thinking", "thinking": "The class is distinct from its siblings.",
              "signature": "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve"},
             {"type": "text", "text": '{"label": "KEEP", "confidence": 0.8}'}])),),
         label="KEEP", tokens_in=2095, tokens_out=503,
         cost_usd=(2095 * PRICE_IN + 503 * PRICE_OUT) / 1e6,
         reasoning="The class is distinct from its siblings."),
    Case("anthropic: stop_reason refusal is a refusal even when the cut text parses",
         "https://docs.claude.com/en/api/handling-stop-reasons#refusal",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(200, anthropic_message([{"type": "text", "text": '{"label": "KEEP"}'}],
                                          stop="refusal")),),
         failure="refusal", tokens_in=2095, tokens_out=503,
         cost_usd=(2095 * PRICE_IN + 503 * PRICE_OUT) / 1e6),
    Case("anthropic: stop_reason max_tokens cut the answer",
         "https://docs.claude.com/en/api/handling-stop-reasons#max-tokens",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(200, anthropic_message([{"type": "text", "text": '{"label": "KE'}],
                                          stop="max_tokens")),),
         failure="truncated", tokens_in=2095, tokens_out=503,
         cost_usd=(2095 * PRICE_IN + 503 * PRICE_OUT) / 1e6),
    Case("anthropic: model_context_window_exceeded cut the answer",
         "https://docs.claude.com/en/api/handling-stop-reasons#model-context-window-exceeded",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(200, anthropic_message([], stop="model_context_window_exceeded")),),
         failure="truncated", tokens_in=2095, tokens_out=503,
         cost_usd=(2095 * PRICE_IN + 503 * PRICE_OUT) / 1e6),
    Case("anthropic: credit balance too low (HTTP 400) stops the critic",
         "https://github.com/anthropics/anthropic-sdk-typescript/issues/618",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(400, anthropic_error(
             "invalid_request_error", "Your credit balance is too low to access the Anthropic "
             "API. Please go to Plans & Billing to upgrade or purchase credits.")),),
         failure="critic_error", stops=True, message_has="out of credit"),
    Case("anthropic (compatible endpoint): temperature deprecated: dropped once, sent again",
         "https://docs.claude.com/en/api/openai-sdk (errors in OpenAI's shape); the 400 as "
         "reported since 2026-04",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(400, {"error": {"type": "invalid_request_error",
                                   "message": "`temperature` is deprecated for this model."}}),
          OK),
         label="KEEP", attempts=2, adjusted="temperature", tokens_in=1117, tokens_out=46,
         cost_usd=PLAIN_COST, api="chat"),
    Case("anthropic: 429 rate_limit_error waits the retry-after it names",
         "https://docs.claude.com/en/api/rate-limits#response-headers",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(429, anthropic_error(
             "rate_limit_error", "This request would exceed the rate limit for your "
             "organization of 50,000 input tokens per minute."), (("retry-after", "7"),)),
          ANTHROPIC_OK),
         label="KEEP", attempts=2, asked_waits=(7.0,), tokens_in=2095, tokens_out=503,
         cost_usd=(2095 * PRICE_IN + 503 * PRICE_OUT) / 1e6),
    Case("anthropic: 529 overloaded_error is retried, then an error",
         "https://docs.claude.com/en/api/errors (529 - overloaded_error)",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(529, anthropic_error("overloaded_error", "Overloaded")),),
         failure="error", attempts=3),
    Case("anthropic: 401 authentication_error stops the critic",
         "https://docs.claude.com/en/api/errors (401 - authentication_error)",
         "anthropic", "claude-sonnet-4-5",
         (Exchange(401, anthropic_error("authentication_error", "invalid x-api-key")),),
         failure="critic_error", stops=True, message_has="refused the API key"),
    Case("anthropic: 404 not_found_error (a model name typo) stops the critic",
         "https://docs.claude.com/en/api/errors (404 - not_found_error)",
         "anthropic", "claude-opsu-4-7",
         (Exchange(404, anthropic_error("not_found_error", "model: claude-opsu-4-7")),),
         failure="critic_error", stops=True, message_has="not found"),
    # -- Google Gemini (OpenAI-compatible endpoint) -----------------------------------------------
    Case("gemini: per-minute RESOURCE_EXHAUSTED says 'quota ... billing' and is waited out",
         "https://ai.google.dev/gemini-api/docs/rate-limits and "
         "https://github.com/letterstory/lettertrace/pull/34 (RetryInfo.retryDelay)",
         "gemini", "gemini-2.5-flash",
         (Exchange(429, [{"error": {
             "code": 429,
             "message": "You exceeded your current quota, please check your plan and billing "
                        "details. For more information on this error, head to: "
                        "https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded "
                        "for metric: generativelanguage.googleapis.com/"
                        "generate_content_free_tier_requests, limit: 10\nPlease retry in "
                        "20.390725s.",
             "status": "RESOURCE_EXHAUSTED",
             "details": [
                 {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                     "quotaMetric": "generativelanguage.googleapis.com/"
                                    "generate_content_free_tier_requests",
                     "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
                 {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20s"}],
         }}]), OK),
         label="KEEP", attempts=2, asked_waits=(20.0,), tokens_in=1117, tokens_out=46),
    Case("gemini: per-day RESOURCE_EXHAUSTED (quota id PerDay) stops the critic, never retried",
         "https://ai.google.dev/gemini-api/docs/rate-limits (RPD resets at midnight Pacific) and "
         "https://github.com/googleapis/python-genai/issues/2044 (the QuotaFailure details)",
         "gemini", "gemini-2.0-flash",
         (Exchange(429, [{"error": {
             "code": 429,
             "message": "You exceeded your current quota, please check your plan and billing "
                        "details. For more information on this error, head to: "
                        "https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded "
                        "for metric: generativelanguage.googleapis.com/"
                        "generate_content_free_tier_requests, limit: 200, model: "
                        "gemini-2.0-flash\nPlease retry in 47.1s.",
             "status": "RESOURCE_EXHAUSTED",
             "details": [
                 {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
                     "description": "Learn more about Gemini API quotas",
                     "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
                 {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                     "quotaMetric": "generativelanguage.googleapis.com/"
                                    "generate_content_free_tier_requests",
                     "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                     "quotaDimensions": {"location": "global", "model": "gemini-2.0-flash"},
                     "quotaValue": "200"}]},
                 {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "47s"}],
         }}]),),
         failure="critic_error", stops=True, message_has="daily quota is used up"),
    Case("gemini: a model with no quota on this tier ('limit: 0') stops the critic, never "
         "retried",
         "https://ai.google.dev/gemini-api/docs/rate-limits (each tier's limits per model) and "
         "https://github.com/continuedev/continue/issues/10062 (this body, gemini-2.5-pro on "
         "the free tier; the same for gemini-3-pro in #9745)",
         "gemini", "gemini-2.5-pro",
         (Exchange(429, [{"error": {
             "code": 429,
             "message": "You exceeded your current quota, please check your plan and billing "
                        "details. For more information on this error, head to: "
                        "https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your "
                        "current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded "
                        "for metric: generativelanguage.googleapis.com/"
                        "generate_content_free_tier_input_token_count, limit: 0, model: "
                        "gemini-2.5-pro\n* Quota exceeded for metric: "
                        "generativelanguage.googleapis.com/generate_content_free_tier_requests, "
                        "limit: 0, model: gemini-2.5-pro\nPlease retry in 20.04466179s.",
             "status": "RESOURCE_EXHAUSTED",
             "details": [
                 {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
                     "description": "Learn more about Gemini API quotas",
                     "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]}],
         }}]),),
         failure="critic_error", stops=True, message_has="no quota for this model"),
    # -- OpenRouter ---------------------------------------------------------------------------------
    Case("openrouter: a moderation flag (403) refuses this item only",
         "https://openrouter.ai/docs/api/reference/errors-and-debugging (Moderation Errors)",
         "openrouter", "openai/gpt-4o",
         (Exchange(403, {"error": {"code": 403, "message": "gpt-4o requires moderation on "
                                   "OpenAI. Your input was flagged for \"violence\". No credits "
                                   "were charged.",
                                   "metadata": {"reasons": ["violence"],
                                                "flagged_input": "...knives...",
                                                "provider_name": "OpenAI",
                                                "model_slug": "openai/gpt-4o"}}}),),
         failure="refusal", message_has="moderation"),
    Case("openrouter: an upstream error inside a 200 is retried",
         "https://openrouter.ai/docs/api/reference/errors-and-debugging (errors after the model "
         "started)",
         "openrouter", "openai/gpt-4o",
         (Exchange(200, {"error": {"code": 502, "message": "Provider returned error",
                                   "metadata": {"provider_name": "OpenAI"}}}), OK),
         label="KEEP", attempts=2, tokens_in=1117, tokens_out=46),
    Case("openrouter: the billed usage.cost is the cost",
         "https://openrouter.ai/docs/use-cases/usage-accounting (usage.cost)",
         "openrouter", "anthropic/claude-sonnet-4.5",
         (Exchange(200, openai_completion(usage={
             "prompt_tokens": 194, "completion_tokens": 2, "total_tokens": 196,
             "cost": 0.00062, "prompt_tokens_details": {"cached_tokens": 0}})),),
         label="KEEP", tokens_in=194, tokens_out=2, cost_usd=0.00062),
    Case("openrouter: 402 insufficient credits stops the critic",
         "https://openrouter.ai/docs/api/reference/errors-and-debugging (402)",
         "openrouter", "openai/gpt-4o",
         (Exchange(402, {"error": {"code": 402, "message": "Insufficient credits. Add more "
                                   "using https://openrouter.ai/credits"}}),),
         failure="critic_error", stops=True, message_has="payment required"),
    # -- DeepSeek -------------------------------------------------------------------------------------
    Case("deepseek: reasoner's reasoning_content and context-cache hits",
         "https://api-docs.deepseek.com/guides/reasoning_model and "
         "https://api-docs.deepseek.com/guides/kv_cache (prompt_cache_hit_tokens)",
         "deepseek", "deepseek-reasoner",
         (Exchange(200, {
             "id": "930c60df-bf64-41c9-a88e-3ec75f81e00e", "object": "chat.completion",
             "created": 1705651092, "model": "deepseek-reasoner",
             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                 "role": "assistant", "content": '{"label": "KEEP"}',
                 "reasoning_content": "Distinct products; keep it."}}],
             "usage": {"prompt_tokens": 1200, "completion_tokens": 60, "total_tokens": 1260,
                       "prompt_cache_hit_tokens": 1024, "prompt_cache_miss_tokens": 176}}),),
         label="KEEP", tokens_in=1200, tokens_out=60, tokens_cached=1024,
         cost_usd=(176 * PRICE_IN + 1024 * PRICE_IN * 0.1 + 60 * PRICE_OUT) / 1e6,
         reasoning="Distinct products; keep it."),
    Case("deepseek: 402 Insufficient Balance stops the critic",
         "https://api-docs.deepseek.com/quick_start/error_codes (402)",
         "deepseek", "deepseek-chat",
         (Exchange(402, {"error": {"message": "Insufficient Balance", "type": "unknown_error",
                                   "param": None, "code": "invalid_request_error"}}),),
         failure="critic_error", stops=True, message_has="payment required"),
)
