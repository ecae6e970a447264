"""The simulated vendor: a real OpenAI-compatible HTTP server on 127.0.0.1.

It is the demo panel's backend and the integration tests' vendor. Each model name has a
`Profile` (accuracy, label bias, confidence, latency, failure rates); unknown model names get
`DEFAULT_PROFILE`. Replies are real chat-completions JSON sent over real sockets, so the whole
client stack (pooling, retries, deadlines, parsing) is exercised exactly as against a vendor.

How a reply is decided, for one request:

1. The allowed labels are read from the last user message: the answer instructions critics
   append (`{"label": exactly one of: A, B, C, "confidence": ...}`, see
   `judging.panel.critics.answer_instructions`); a score scale says `a number from X to Y`.
2. The item's true label: the text of each `<item field="...">...</item>` block (see
   `judging.panel.critics.render_template`) is looked up in `gold` (item text -> label), in order;
   the first block whose text is a key wins. So `gold` may be keyed by any ONE field the prompt
   shows; the demo keys it by `candidate_class`. Without a match, a pseudo-truth is derived
   from a hash of the item text, so that critics still agree with each other as often as their
   accuracies imply.
3. With probability `accuracy` the answer is the true label; otherwise a wrong label drawn with
   the profile's `bias` weights (labels it does not name weigh 1).
4. Failure modes and reply shapes are drawn from the profile's rates.

Rubrics: a prompt listing `<criteria>` is graded per criterion (see `_grade`).

References: a prompt with a `<reference>` block (`Critic.reference_field`) grades its items
against it: the share of the reference's words they contain sets the truth (see `_graded`).

Comparisons: a request whose labels include A and B and whose prompt shows at least two
`<item>` blocks is a pairwise one (`judging.panel.pairwise`): the last two blocks are the responses in
the order shown, and the better one (by `gold` quality, see `_compare`) is the truth; a
profile's `position_bias` makes it pick the first one shown regardless.

Determinism: every random choice comes from a generator seeded by (server seed, model, the
request's messages, how many times this same request was seen before). A retried request (after
a 429, say) draws afresh and may succeed; the same sequence of requests replayed against a fresh
server (or after `POST /stats/reset`) gets identical replies, in any arrival order.

Saying no like the vendors: a request a real vendor refuses for its model's family (an OpenAI
reasoning model sent `max_tokens` or `temperature: 0`, Claude Opus 4.7 sent `temperature`,
`deepseek-reasoner` asked for logprobs) gets the vendor's 400 and error body
(`judging.simulator.sim_rules`), counted as a bad request with outcome `unsupported_parameter`.

Two front doors to the same critics: chat completions (OpenAI's shape, also `stream: true` as
server-sent events, `judging.simulator.sim_sse`) and Anthropic's native Messages API
(`judging.simulator.sim_messages`). Both report prompt caching as their vendor does
(`judging.simulator.sim_cache`). The HTTP plumbing is `judging.simulator.sim_http`.

`GET /stats` counts requests per model, outcomes, the peak number in flight, and how many
distinct requests were answered with a success more than once (`duplicate_successes`), which a
crash/resume test uses to prove that nothing was paid for twice; `tokens_cached` and
`tokens_cache_written` count cached input tokens reported.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judging.simulator.sim_batches import BatchDesk
from judging.simulator.sim_cache import PromptCache
from judging.simulator.sim_http import SimulatorHttpd
from judging.simulator.sim_messages import to_chat, to_message
from judging.simulator.sim_rules import chat_refusal, messages_refusal

__all__ = [
    "DEFAULT_PROFILE",
    "Profile",
    "SimulatorServer",
]

# Outcomes a reply can have; `/stats` counts each.
_SUCCESS_SHAPES = ("ok", "fenced", "think", "prose")
_FAILURE_OUTCOMES = (
    "rate_limited",
    "server_error",
    "error_in_200",
    "malformed",
    "truncated",
    "refusal",
)


@dataclass(frozen=True)
class Profile:
    """How one simulated model behaves.

    Attributes:
        accuracy: probability of answering the item's true label (or, on a score scale, a score
            within 10% of the range from the true score).
        bias: label -> weight used to draw a WRONG answer; labels not named weigh 1. A lenient
            critic is `{"KEEP": 6}`: when it errs, it mostly says KEEP.
        confidence_mean: mean reported confidence of correct answers; wrong answers report about
            0.15 less, so confidence carries some information, as with real models.
        confidence_sd: spread of the reported confidence.
        latency_ms: time the server takes to answer; None uses the server's default.
        jitter_ms: uniform extra latency in [0, jitter_ms].
        rate_429: share of requests answered 429 with `Retry-After` and `retry-after-ms`.
        retry_after_ms: the wait the 429 asks for (`Retry-After` carries it rounded up to whole
            seconds, as HTTP requires; `retry-after-ms` carries it exactly).
        rate_500: share answered 500 with an OpenAI-style error body.
        rate_error_in_200: share answered 200 with an error object as the body (OpenRouter does
            this).
        rate_malformed: share whose content is broken JSON (no verdict can be read).
        rate_truncated: share cut off: `finish_reason="length"` with blank content.
        rate_refusal: share where the model declines to judge.
        rate_fenced: share of successes wrapped in a ```json fence.
        rate_think: share of successes preceded by a `<think>...</think>` block.
        decoy_rate: share of think replies whose think block holds a decoy JSON verdict with a
            different label (a "first JSON object" parser gets these wrong).
        rate_prose: share of successes with prose before and after the JSON object.
        position_bias: on a comparison (see below), the share of answers that pick whichever
            response is shown first, whatever its content.
        logprobs: False for a model that ignores `logprobs: true` and answers `"logprobs":
            null` (as servers without logprob support do), to see a panel fall back to labels.
        num_ctx: a server that keeps only this many prompt tokens and says nothing (Ollama's
            num_ctx): `usage.prompt_tokens` reports at most this many, the reply is as usual.
            None: the whole prompt is counted.
    """

    accuracy: float = 0.8
    bias: dict[str, float] = field(default_factory=dict)
    confidence_mean: float = 0.8
    confidence_sd: float = 0.08
    latency_ms: float | None = None
    jitter_ms: float = 0.0
    rate_429: float = 0.0
    retry_after_ms: int = 50
    rate_500: float = 0.0
    rate_error_in_200: float = 0.0
    rate_malformed: float = 0.0
    rate_truncated: float = 0.0
    rate_refusal: float = 0.0
    rate_fenced: float = 0.0
    rate_think: float = 0.0
    decoy_rate: float = 0.5
    rate_prose: float = 0.0
    position_bias: float = 0.0
    logprobs: bool = True
    num_ctx: int | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name.startswith("rate_") or f.name in ("accuracy", "decoy_rate",
                                                         "position_bias"):
                value = getattr(self, f.name)
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"Profile.{f.name} must be between 0 and 1, got {value!r}")
        for label, weight in self.bias.items():
            if weight < 0:
                raise ValueError(f"Profile.bias[{label!r}] must not be negative, got {weight!r}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        """Build a profile from plain data (e.g. a YAML mapping); unknown keys are an error.

        Raises:
            ValueError: a key is not a `Profile` field, or a value is out of range.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(
                f"unknown simulator profile setting(s) {unknown}; known: {sorted(names)}"
            )
        return cls(**data)


DEFAULT_PROFILE = Profile()

_LABELS_RE = re.compile(
    r'"(?:label|verdict|kind)":\s*exactly one of:\s*(.+?),\s*"confidence"', re.S
)
_NUMBER = r"(-?[\d.]+(?:e-?\d+)?)"
_SCORE_RE = re.compile(rf'"score":\s*a number from\s*{_NUMBER}\s*to\s*{_NUMBER}')
# How `judging.panel.compound` names the labels in a prose step ("The verdict will be exactly one of:
# KEEP, REJECT.").
_PROSE_LABELS_RE = re.compile(r"The verdict will be exactly one of:\s*(.+?)\.(?:\s|$)")
_PROSE_SCORE_RE = re.compile(rf"The verdict will be a number from\s*{_NUMBER}\s*to\s*{_NUMBER}")
_ITEM_RE = re.compile(r'<item field="[^"]*">\n?(.*?)\n?</item>', re.S)
# A rubric's criteria as `judging.panel.rubric` lists them: "<criteria>\n- id: text\n</criteria>".
_CRITERIA_RE = re.compile(r"<criteria>\n(.*?)\n</criteria>", re.S)
_CRITERION_RE = re.compile(r"^- ([A-Za-z0-9_.-]+):", re.M)
_REFERENCE_RE = re.compile(r'<reference field="[^"]*">\n?(.*?)\n?</reference>', re.S)
_FALLBACK_LABELS = ["yes", "no"]


def _estimate_tokens(text: str) -> int:
    # A rough but stable estimate (about four characters per token), like vendors' own.
    return max(1, math.ceil(len(text) / 4))


def _request_key(model: str, messages: Any) -> str:
    blob = json.dumps([model, messages], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class _Stats:
    """Counters behind one lock; cheap enough that they never become the bottleneck."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.total = 0
        self.by_model: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.successes = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.seen: Counter[str] = Counter()  # request key -> times seen (drives the seeds)
        self.served_ok: Counter[str] = Counter()  # request key -> successes served
        self.tokens_in = 0
        self.tokens_out = 0
        self.tokens_cached = 0
        self.tokens_cache_written = 0
        self.bad_requests = 0

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "total": self.total,
                "by_model": dict(self.by_model),
                "successes": self.successes,
                "failures": self.total - self.successes - self.bad_requests,
                "bad_requests": self.bad_requests,
                "outcomes": dict(self.outcomes),
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak_in_flight,
                "distinct_requests": len(self.seen),
                "duplicate_successes": sum(1 for n in self.served_ok.values() if n > 1),
                "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out,
                "tokens_cached": self.tokens_cached,
                "tokens_cache_written": self.tokens_cache_written,
            }


@dataclass
class _Reply:
    status: int
    body: dict[str, Any] | list[Any]
    headers: dict[str, str]
    latency_s: float
    outcome: str
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    tokens_cache_written: int = 0


class SimulatorServer:
    """An OpenAI-compatible chat-completions server with simulated critics.

    Endpoints: `POST /v1/chat/completions`, `POST /v1/messages` (Anthropic's native API),
    `GET /v1/models`, `GET /stats`, `POST /stats/reset`, and the two batch APIs
    (`judging.simulator.sim_batches`): `/v1/files`, `/v1/batches` and `/v1/messages/batches`; see
    `judging.simulator.sim_http` for every route. Point the official SDKs at it with
    `openai.OpenAI(base_url=server.base_url, ...)` and
    `anthropic.Anthropic(base_url=server.root_url, ...)`.
    Any key is accepted and never stored or logged.

    Args:
        profiles: model name -> `Profile` (or a plain dict of profile settings). Unknown model
            names get `DEFAULT_PROFILE`.
        gold: item text -> true label (see the module docstring for which text is the key).
        seed: makes every reply reproducible; two servers with the same seed, profiles and gold
            answer the same requests identically.
        latency_ms: overrides every profile's latency when given; otherwise a profile's own
            `latency_ms`, else 100 ms.
        host: interface to bind; keep the default, the simulator is for this machine only.
        port: 0 picks a free port.
        batch_seconds / batch_expire_every / batch_refusal: the batch APIs' fast clock and
            fault knobs (`judging.simulator.sim_batches`).

    Use as a context manager, or call `start()` and `stop()`.
    """

    DEFAULT_LATENCY_MS = 100.0

    def __init__(
        self,
        profiles: Mapping[str, Profile | dict[str, Any]] | None = None,
        gold: dict[str, str] | None = None,
        seed: int = 0,
        latency_ms: float | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        batch_seconds: float = 1.0,
        batch_expire_every: int = 0,
        batch_refusal: str | None = None,
    ) -> None:
        self.profiles: dict[str, Profile] = {
            name: p if isinstance(p, Profile) else Profile.from_dict(p)
            for name, p in (profiles or {}).items()
        }
        self.gold: dict[str, str] = dict(gold or {})
        self.seed = seed
        self.latency_ms = latency_ms
        self.host = host
        self.port = port
        self._stats = _Stats()
        self._cache = PromptCache()
        self.batches = BatchDesk(self.answer_now, self.answer_message_now,
                                 batch_seconds=batch_seconds,
                                 expire_every=batch_expire_every, refusal=batch_refusal)
        self._httpd: SimulatorHttpd | None = None
        self._thread: threading.Thread | None = None
        self._lifecycle = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> SimulatorServer:
        """Bind the port and serve in a daemon thread. Returns self; a second call is a no-op.

        Raises:
            OSError: the port cannot be bound (e.g. already in use).
        """
        with self._lifecycle:
            if self._httpd is not None:
                return self
            httpd = SimulatorHttpd((self.host, self.port), self)
            self._httpd = httpd
            self.port = httpd.server_address[1]
            self._thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"jurybox-simulator:{self.port}",
                daemon=True,
            )
            self._thread.start()
            return self

    def stop(self) -> None:
        """Stop serving and close every open connection. Safe to call twice."""
        with self._lifecycle:
            httpd, self._httpd = self._httpd, None
            if httpd is None:
                return
            httpd.shutdown()
            httpd.close_all_connections()
            httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
                self._thread = None

    def serve_forever(self) -> None:
        """Start (if needed) and block until interrupted (Ctrl-C), then stop.

        Used by `jurybox simulator`.
        """
        self.start()
        try:
            while True:
                time.sleep(3600)
        finally:
            self.stop()

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, e.g. `http://127.0.0.1:PORT/v1`.

        Raises:
            RuntimeError: the server has not been started.
        """
        if self._httpd is None:
            raise RuntimeError("the simulator is not running: call start() first")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:PORT`, where `/stats` lives."""
        return self.base_url.removesuffix("/v1")

    # -- stats -----------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The same figures as `GET /stats` (see the module docstring)."""
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        """Zero every counter, including how often each request was seen (so a replay of the
        same requests gets the same replies as the first time)."""
        with self._stats.lock:
            self._stats.reset()
        self._cache.clear()

    def profile_for(self, model: str) -> Profile:
        return self.profiles.get(model, DEFAULT_PROFILE)

    # -- the simulation --------------------------------------------------------------------

    def _enter(self, model: str, key: str) -> int:
        """Count a request in; returns how many times this same request was seen before."""
        st = self._stats
        with st.lock:
            st.total += 1
            st.by_model[model] += 1
            st.in_flight += 1
            if st.in_flight > st.peak_in_flight:
                st.peak_in_flight = st.in_flight
            nth = st.seen[key]
            st.seen[key] = nth + 1
            return nth

    def _leave(self) -> None:
        with self._stats.lock:
            self._stats.in_flight -= 1

    def _record(self, key: str, reply: _Reply) -> None:
        # Counted before the reply is written, as a vendor bills an answer once it exists: so a
        # client that reads /stats right after its last reply always sees that reply counted.
        st = self._stats
        with st.lock:
            st.outcomes[reply.outcome] += 1
            st.tokens_in += reply.tokens_in
            st.tokens_out += reply.tokens_out
            st.tokens_cached += reply.tokens_cached
            st.tokens_cache_written += reply.tokens_cache_written
            if reply.outcome in _SUCCESS_SHAPES:
                st.successes += 1
                st.served_ok[key] += 1

    def _count_bad_request(self, outcome: str | None = None) -> None:
        with self._stats.lock:
            self._stats.total += 1
            self._stats.bad_requests += 1
            if outcome is not None:
                self._stats.outcomes[outcome] += 1

    def _refused(self, refusal: tuple[int, dict[str, Any]]) -> _Reply:
        self._count_bad_request("unsupported_parameter" if refusal[0] == 400 else None)
        return _Reply(refusal[0], refusal[1], {}, 0.0, "unsupported_parameter")

    def serve_chat(self, request: Any, *, live: bool) -> _Reply:
        """Answer one chat-completions request, counted in the stats.

        Args:
            request: the parsed body (anything: a bad one is answered 400).
            live: wait the simulated latency (a live call) or answer at once (a batch's).

        Returns:
            The reply. The request is out of flight by the time it returns, so a client that
            sends its next request as soon as it reads this one never finds both counted.
        """
        valid = (isinstance(request, dict) and isinstance(request.get("messages"), list)
                 and bool(request.get("model")))
        if not valid:
            self._count_bad_request()
            return _Reply(400, _error_body("the body must be a JSON object with 'model' and "
                                           "'messages'", "invalid_request_error"), {}, 0.0,
                          "bad_request")
        refusal = chat_refusal(request)
        if refusal is not None:
            return self._refused(refusal)
        model = str(request["model"])
        key = _request_key(model, request["messages"])
        nth = self._enter(model, key)
        try:
            reply = self.simulate(request, nth, key)
            usage = reply.body.get("usage") if isinstance(reply.body, dict) else None
            if isinstance(usage, dict):
                prompt = "".join(str(m.get("content") or "") for m in request["messages"]
                                 if isinstance(m, dict))
                cached = self._cache.openai_cached(model, prompt)
                usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
                reply.tokens_cached = cached
            if live:
                time.sleep(reply.latency_s)  # the "model thinking": sleeps, never burns CPU
            self._record(key, reply)
        finally:
            self._leave()
        return reply

    def serve_message(self, request: Any, headers: dict[str, str] | None, *,
                      live: bool) -> _Reply:
        """Answer one Anthropic Messages API request (`judging.simulator.sim_messages`).

        Args:
            request: the parsed body.
            headers: the request's headers with lower-case names; None for a batch's params.
            live: as for `serve_chat`.
        """
        refusal = messages_refusal(request, headers)
        if refusal is not None:
            return self._refused(refusal)
        chat, prefixes = to_chat(request)
        model = str(chat["model"])
        key = _request_key(model, chat["messages"])
        nth = self._enter(model, key)
        try:
            reply = self.simulate(chat, nth, key)
            read = written = 0
            if reply.status == 200 and reply.outcome != "error_in_200":
                read, written = self._cache.anthropic_usage(model, prefixes)
            status, body, reply_headers = to_message(reply.status, reply.body, reply.outcome,
                                                     reply.headers, request, (read, written))
            reply = dataclasses.replace(reply, status=status, body=body, headers=reply_headers,
                                        tokens_cached=read, tokens_cache_written=written)
            if live:
                time.sleep(reply.latency_s)
            self._record(key, reply)
        finally:
            self._leave()
        return reply

    def answer_now(self, request: dict[str, Any]) -> tuple[int, Any]:
        """Answer one chat request at once (no latency): an OpenAI batch's request, counted in
        the stats like a live one."""
        reply = self.serve_chat(request, live=False)
        return reply.status, reply.body

    def answer_message_now(self, params: dict[str, Any]) -> tuple[int, Any]:
        """Answer one Messages API request at once: an Anthropic batch's request."""
        reply = self.serve_message(params, None, live=False)
        return reply.status, reply.body

    def simulate(self, request: dict[str, Any], nth: int, key: str | None = None) -> _Reply:
        """Decide the reply to one chat-completions request.

        Args:
            request: the request body.
            nth: how many times this same request was seen before (0 the first time).
            key: the request's key (`_request_key`), if already computed.

        Returns:
            The reply; a pure function of the seed, the request and `nth` (except `created`).
        """
        model = str(request.get("model", ""))
        messages = request.get("messages") or []
        profile = self.profile_for(model)
        key = key or _request_key(model, messages)
        rng = random.Random(hashlib.sha256(f"{self.seed}\x00{key}\x00{nth}".encode()).digest())
        latency_ms = (
            self.latency_ms
            if self.latency_ms is not None
            else profile.latency_ms
            if profile.latency_ms is not None
            else self.DEFAULT_LATENCY_MS
        )
        latency_s = (latency_ms + rng.random() * profile.jitter_ms) / 1000.0
        prompt_text = "".join(
            str(m.get("content") or "") for m in messages if isinstance(m, dict)
        )
        tokens_in = _estimate_tokens(prompt_text)
        if profile.num_ctx is not None:  # cut silently, as a local server does
            tokens_in = min(tokens_in, profile.num_ctx)

        # One draw picks the failure mode (if any), so rates add up and never shadow each other
        # unless they sum past 1.
        draw = rng.random()
        for outcome, rate in (  # noqa: B007 - the outcome drawn is read after the loop
            ("rate_limited", profile.rate_429),
            ("server_error", profile.rate_500),
            ("error_in_200", profile.rate_error_in_200),
            ("truncated", profile.rate_truncated),
            ("refusal", profile.rate_refusal),
            ("malformed", profile.rate_malformed),
        ):
            if draw < rate:
                break
            draw -= rate
        else:
            outcome = "answer"

        if outcome == "rate_limited":
            wait_ms = profile.retry_after_ms
            return _Reply(
                429,
                _error_body("Rate limit reached for requests (simulated).", "rate_limit_exceeded"),
                {
                    "Retry-After": str(max(1, math.ceil(wait_ms / 1000))),
                    "retry-after-ms": str(wait_ms),
                },
                latency_s,
                outcome,
            )
        if outcome == "server_error":
            return _Reply(
                500, _error_body("The server had an error (simulated).", "server_error"), {},
                latency_s, outcome,
            )
        if outcome == "error_in_200":
            failed = {"error": {"message": "Provider returned error (simulated)", "code": 502}}
            return _Reply(200, failed, {}, latency_s, outcome)

        budget = request.get("max_tokens") or request.get("max_completion_tokens") or 512
        try:
            max_tokens = int(budget)
        except (TypeError, ValueError):
            max_tokens = 512
        user_text = _last_user_text(messages)
        free_text = _is_free_text(user_text)
        answer = self._answer(user_text, profile, rng)
        finish = "stop"
        refusal: str | None = None
        if free_text and outcome in ("answer", "malformed"):
            # A compound critic's prose step (reasoning, a debater's turn): no JSON to break.
            value = answer.get("label", answer.get("score"))
            content = f"Weighing the item, I lean towards {value}. {answer['reasoning']}"
            tokens_out = _estimate_tokens(content)
            outcome = "ok"
        elif outcome == "truncated":
            content = ""
            finish = "length"
            tokens_out = max_tokens
        elif outcome == "refusal":
            content = "I'm sorry, but I can't help with evaluating this item."
            refusal = content
            tokens_out = _estimate_tokens(content)
        elif outcome == "malformed":
            content = _malformed(answer)
            tokens_out = _estimate_tokens(content)
        else:
            content, outcome = self._shape(answer, user_text, profile, rng)
            tokens_out = _estimate_tokens(content)

        message: dict[str, Any] = {"role": "assistant", "content": content}
        if refusal is not None:
            message["refusal"] = refusal
        logprobs = None
        if (request.get("logprobs") and profile.logprobs and "label" in answer
                and outcome not in ("malformed",)):
            logprobs = _logprobs_block(content, answer, _parse_labels(user_text)
                                       or _FALLBACK_LABELS, request.get("top_logprobs"))
        body: dict[str, Any] = {
            "id": f"chatcmpl-sim-{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "jurybox-simulator",
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }
        return _Reply(200, body, {}, latency_s, outcome, tokens_in, tokens_out)

    def _answer(self, user_text: str, profile: Profile, rng: random.Random) -> dict[str, Any]:
        """The verdict object the model means to give (before shaping or breaking it)."""
        items = _ITEM_RE.findall(user_text)
        item_text = next((t for t in items if t in self.gold), None)
        truth_text = self.gold.get(item_text) if item_text is not None else None
        reference = _REFERENCE_RE.search(user_text)
        if reference is not None:
            truth_text = _graded(" ".join(items), reference.group(1), user_text)
        anchor = item_text if item_text is not None else "\x1f".join(items) or user_text
        correct = rng.random() < profile.accuracy
        confidence_mean = profile.confidence_mean - (0.0 if correct else 0.15)
        confidence = round(min(1.0, max(0.0, rng.gauss(confidence_mean, profile.confidence_sd))), 2)

        listing = _CRITERIA_RE.search(user_text)
        criteria = _CRITERION_RE.findall(listing.group(1)) if listing else []
        if criteria:
            return self._grade(criteria, anchor, user_text, profile, rng, confidence)

        score_match = _SCORE_RE.search(user_text) or _PROSE_SCORE_RE.search(user_text)
        if score_match and "exactly one of" not in user_text:
            low, high = float(score_match.group(1)), float(score_match.group(2))
            truth = _as_float(truth_text)
            if truth is None:
                truth = low + (high - low) * _unit_hash(anchor)
            if correct:
                score = truth + rng.uniform(-0.1, 0.1) * (high - low)
            else:
                score = rng.uniform(low, high)
            score = min(high, max(low, score))
            # A wide integer range (1..5, 0..10) reads like a Likert answer: whole numbers.
            whole = low.is_integer() and high.is_integer() and high - low >= 4
            score = round(score) if whole else round(score, 2)
            return {
                "score": score,
                "confidence": confidence,
                "reasoning": f"On balance the item merits about {score:g} out of {high:g}.",
            }

        labels = _parse_labels(user_text) or _FALLBACK_LABELS
        if "A" in labels and "B" in labels and len(items) >= 2:
            return self._compare(items[-2], items[-1], labels, profile, rng, correct, confidence)
        truth_label = _match_label(truth_text, labels) if truth_text is not None else None
        if truth_label is None:
            truth_label = labels[int(_unit_hash(anchor) * len(labels)) % len(labels)]
        if correct or len(labels) == 1:
            label = truth_label
        else:
            wrong = [l for l in labels if l != truth_label]
            weights = [profile.bias.get(l, 1.0) for l in wrong]
            if sum(weights) <= 0:
                weights = [1.0] * len(wrong)
            label = rng.choices(wrong, weights=weights)[0]
        return {
            "label": label,
            "confidence": confidence,
            "reasoning": _REASONS.get(label.upper(), f"The item fits {label} best."),
        }

    def _compare(self, first: str, second: str, labels: list[str], profile: Profile,
                 rng: random.Random, correct: bool, confidence: float) -> dict[str, Any]:
        """A comparison: the last two item blocks are responses A and B (in the order shown).
        Each response's quality is its `gold` value when that is a number, else a stable hash
        of its text; the better by more than 0.1 is the truth (else TIE, when offered)."""
        quality_a, quality_b = self._quality(first), self._quality(second)
        if abs(quality_a - quality_b) <= 0.1 and "TIE" in labels:
            truth = "TIE"
        else:
            truth = "A" if quality_a > quality_b else "B"
        if rng.random() < profile.position_bias:
            label = "A"  # swayed by the order: the first response, whatever it says
        elif correct:
            label = truth
        else:
            label = rng.choice([l for l in labels if l != truth])
        reasons = {"A": "Response A answers the question more fully and more accurately.",
                   "B": "Response B answers the question more fully and more accurately.",
                   "TIE": "Both responses are about as good as each other."}
        return {"label": label, "confidence": confidence,
                "reasoning": reasons.get(label, f"{label} is the better response.")}

    def _grade(self, criteria: list[str], anchor: str, user_text: str, profile: Profile,
               rng: random.Random, confidence: float) -> dict[str, Any]:
        """A rubric call (`judging.panel.rubric`): each criterion's true mark comes from a hash of the
        item and the criterion (about 60% MET, 35% UNMET, 5% CANNOT_ASSESS), answered right
        with the profile's accuracy, per criterion. Every criterion in one JSON object, or a
        label when the call asks about one criterion."""
        marks = {}
        for criterion in criteria:
            draw = _unit_hash(f"{anchor}\x1f{criterion}")
            truth = "CANNOT_ASSESS" if draw > 0.95 else "MET" if draw < 0.6 else "UNMET"
            if rng.random() >= profile.accuracy:
                truth = rng.choice([m for m in ("MET", "UNMET", "CANNOT_ASSESS") if m != truth])
            marks[criterion] = truth
        if '"criteria": {' not in user_text:  # one call per criterion: a plain label
            (criterion, mark), = marks.items()
            said = {"MET": "meets", "UNMET": "does not meet"}.get(mark, "gives no way to assess")
            return {"label": mark, "confidence": confidence,
                    "reasoning": f"The item {said} {criterion}."}
        return {"criteria": {c: {"mark": m, "reasoning": f"{c}: {m.lower().replace('_', ' ')}."}
                             for c, m in marks.items()}, "confidence": confidence}

    def _quality(self, text: str) -> float:
        value = _as_float(self.gold.get(text))
        return value if value is not None else _unit_hash(text)

    def _shape(
        self, answer: dict[str, Any], user_text: str, profile: Profile, rng: random.Random
    ) -> tuple[str, str]:
        """Dress a valid answer the way real models do; returns (content, outcome)."""
        text = json.dumps(answer, ensure_ascii=False)
        roll = rng.random()
        if roll < profile.rate_think:
            decoy = ""
            if rng.random() < profile.decoy_rate and "label" in answer:
                labels = _parse_labels(user_text) or _FALLBACK_LABELS
                others = [l for l in labels if l != answer["label"]] or labels
                decoy_obj = {"label": rng.choice(others), "confidence": 0.5}
                decoy = f" A first guess would be {json.dumps(decoy_obj)}, but let me look again."
            thought = f"Let me weigh the item against the scale.{decoy} I am fairly sure now."
            return f"<think>{thought}</think>\n{text}", "think"
        roll -= profile.rate_think
        if roll < profile.rate_fenced:
            return f"```json\n{text}\n```", "fenced"
        roll -= profile.rate_fenced
        if roll < profile.rate_prose:
            return f"Here is my verdict:\n{text}\nLet me know if you need more detail.", "prose"
        return text, "ok"


_REASONS = {
    "KEEP": "The class is coherent, well named and sits at the right level under its parent.",
    "REJECT": "The class is not a real category of its parent: its members do not belong here.",
    "SPLIT": "The class lumps together two distinct kinds that deserve their own classes.",
    "MERGE": "The class duplicates a sibling class under another name; the two should be merged.",
}


_LABEL_VALUE = re.compile(r'"label"\s*:\s*"')


def _logprobs_block(
    content: str, answer: dict[str, Any], labels: list[str], top: Any
) -> dict[str, Any] | None:
    """An OpenAI-shaped `logprobs` block for `content`: three tokens (before the label, the
    label, after it); the label token's alternatives give the answer its confidence and share
    the rest evenly among the other labels."""
    matches = list(_LABEL_VALUE.finditer(content))  # the last: the answer, not a decoy
    found = matches[-1] if matches else None
    label = str(answer["label"])
    if found is None or not content.startswith(label, found.end()):
        return None
    chosen = min(max(float(answer.get("confidence") or 0.8), 0.01), 0.99)
    others = [other for other in labels if other != label]
    alternatives = [(label, chosen)] + [(o, (1 - chosen) / len(others)) for o in others]
    try:
        limit = max(1, min(20, int(top)))
    except (TypeError, ValueError):
        limit = 5
    cut = found.end() + len(label)
    pieces = [content[:found.end()], label, content[cut:]]
    return {"content": [
        {"token": piece, "logprob": math.log(chosen) if n == 1 else 0.0,
         "top_logprobs": ([{"token": tok, "logprob": math.log(p)} for tok, p in alternatives][:limit]
                          if n == 1 else [])}
        for n, piece in enumerate(pieces) if piece
    ]}


def _error_body(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "param": None, "code": code}}


def _malformed(answer: dict[str, Any]) -> str:
    # Broken beyond repair: no quotes round keys, and cut off mid-object.
    value = answer.get("label", answer.get("score"))
    return f"{{label: {value}, confidence: {answer.get('confidence')}, reasoning: 'the item"


def _last_user_text(messages: Any) -> str:
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return "\n".join(
                    str(p.get("text", "")) for p in content if isinstance(p, dict)
                )
            return str(content or "")
    return ""


_WORD = re.compile(r"[a-z0-9]+")
_YES = ("yes", "pass", "correct", "true", "match", "good")
_NO = ("no", "fail", "incorrect", "false", "mismatch", "bad")


def _graded(answer: str, reference: str, user_text: str) -> str | None:
    """The truth for an answer graded against a reference answer: the share of the reference's
    words the answer contains (recall). On a score scale, that share of the range; on a scale
    with a yes-like and a no-like label (yes/no, pass/fail, correct/incorrect, ...), yes when
    the share is at least 0.6. None for other scales (the usual truth then applies)."""
    wanted = set(_WORD.findall(reference.lower()))
    recall = len(wanted & set(_WORD.findall(answer.lower()))) / len(wanted) if wanted else 0.0
    score = _SCORE_RE.search(user_text)
    if score is not None and "exactly one of" not in user_text:
        low, high = float(score.group(1)), float(score.group(2))
        return str(low + recall * (high - low))
    labels = _parse_labels(user_text)
    yes = next((label for label in labels if label.casefold() in _YES), None)
    no = next((label for label in labels if label.casefold() in _NO), None)
    if yes is None or no is None:
        return None
    return yes if recall >= 0.6 else no


def _is_free_text(user_text: str) -> bool:
    """A request for prose (`judging.panel.compound`'s reasoning and debate steps), not a verdict."""
    return "Answer with one JSON object" not in user_text and "as plain text" in user_text


def _parse_labels(user_text: str) -> list[str]:
    match = _LABELS_RE.search(user_text) or _PROSE_LABELS_RE.search(user_text)
    if not match:
        return []
    return [part.strip() for part in match.group(1).split(",") if part.strip()]


def _match_label(value: str, labels: list[str]) -> str | None:
    folded = str(value).strip().casefold()
    return next((l for l in labels if l.casefold() == folded), None)


def _as_float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _unit_hash(text: str) -> float:
    """A stable number in [0, 1) from a text (independent of the seed: it is the item's truth)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


