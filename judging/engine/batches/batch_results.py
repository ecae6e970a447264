"""A batch's result file, line by line, in the shape a live reply has.

Each line becomes a `BatchResult`: the HTTP status and body a live call would have received
(read by the same `parse_reply`), and the line as the vendor wrote it, kept as evidence.
An Anthropic message is read as the chat completion it stands for; a request the vendor never
ran (expired, cancelled) carries the sentence to show instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from judging.engine.batches.lines import BatchApi

# Anthropic's error types as the HTTP statuses its live API gives them (so `classify_error`
# reads a batch error exactly as it would read the same error live).
_ANTHROPIC_STATUS = {
    "invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
    "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
    "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529,
}

NOT_RUN = {
    "expired": "the vendor's batch expired before this request ran (24 h); resume the run to "
               "submit it again",
    "canceled": "the vendor's batch was cancelled before this request ran; resume the run to "
                "submit it again",
}


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One request's outcome in a batch.

    Attributes:
        custom_id: the call's cache key.
        status: the HTTP status of the vendor's reply (0: the request never ran).
        body: the reply as a live chat completion would read (`parse_reply`'s input).
        raw: the result line as the vendor wrote it (the evidence kept with the verdict).
        not_run: why the request never ran, when it did not.
    """

    custom_id: str
    status: int
    body: str
    raw: str
    not_run: str | None = None


def parse_results(api: BatchApi, lines: Iterable[str]) -> Iterator[BatchResult]:
    """The results in a result (or error) file. A line that cannot be read is skipped: its
    request then has no result, and the run says so for that call (it is never guessed)."""
    read = _anthropic_line if api == "anthropic" else _openai_line
    for text in lines:
        text = text.strip()
        if not text:
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("custom_id"), str):
            result = read(data, text)
            if result is not None:
                yield result


def _openai_line(data: dict[str, Any], raw: str) -> BatchResult | None:
    response = data.get("response")
    if isinstance(response, dict) and isinstance(response.get("status_code"), int):
        return BatchResult(data["custom_id"], response["status_code"],
                           json.dumps(response.get("body")), raw)
    error = data.get("error")
    if isinstance(error, dict):  # never sent on (e.g. the batch expired): an error object only
        code = str(error.get("code") or "")
        if code in ("batch_expired", "batch_cancelled"):
            return BatchResult(data["custom_id"], 0, "", raw,
                               NOT_RUN["expired" if code == "batch_expired" else "canceled"])
        return BatchResult(data["custom_id"], 400, json.dumps({"error": error}), raw)
    return None


def _anthropic_line(data: dict[str, Any], raw: str) -> BatchResult | None:
    result = data.get("result")
    if not isinstance(result, dict):
        return None
    kind = result.get("type")
    custom_id = data["custom_id"]
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        # The message as it is: `parse_reply` reads Anthropic's shape (thinking blocks,
        # stop_reason refusal / max_tokens / model_context_window_exceeded, cached tokens).
        return BatchResult(custom_id, 200, json.dumps(result["message"]), raw)
    if kind == "errored":
        error = result.get("error")
        error = error if isinstance(error, dict) else {}
        inner = error["error"] if isinstance(error.get("error"), dict) else error
        status = _ANTHROPIC_STATUS.get(str(inner.get("type")), 500)
        return BatchResult(custom_id, status, json.dumps({"error": inner}), raw)
    if kind in NOT_RUN:
        return BatchResult(custom_id, 0, "", raw, NOT_RUN[str(kind)])
    return None
