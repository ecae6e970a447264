"""The simulator's batch APIs: OpenAI's Batch API (files + `/v1/batches`) and Anthropic's
Message Batches, answered by the simulator's own critics, so batch mode runs with no key.

A batch is "in progress" for `batch_seconds` after it is created (the fast clock: a real vendor
takes minutes to hours), then every request is answered at once on the next look, exactly as
the chat endpoint would answer it live (same profiles, same seed: the same reply). Knobs for
tests: `expire_every` (every Nth request expires instead of running) and `refusal` (the vendor
refuses the whole batch with that sentence).

Nothing here imports the simulator: it is handed the function that answers one chat request.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Answers one chat-completions request: (HTTP status, reply body).
Answer = Callable[[dict[str, Any]], tuple[int, Any]]


@dataclass
class _Batch:
    id: str
    api: str  # "openai" or "anthropic"
    requests: list[dict[str, Any]]  # OpenAI input lines, or Anthropic {custom_id, params}
    created: float
    status: str = "in_progress"
    output_file: str | None = None
    error_file: str | None = None
    results: bytes = b""
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class BatchDesk:
    """Files and batches of one simulator (in memory; a restart of the simulator loses them,
    as a vendor never would: tests restart the client side, not the vendor)."""

    def __init__(self, answer: Answer, *, batch_seconds: float = 1.0, expire_every: int = 0,
                 refusal: str | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.answer = answer
        self.batch_seconds = batch_seconds
        self.expire_every = expire_every
        self.refusal = refusal
        self.clock = clock
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.submitted = 0  # batches created, for tests
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- OpenAI -----------------------------------------------------------------------------

    def upload(self, content_type: str, body: bytes) -> tuple[int, dict[str, Any]]:
        parts = _multipart(content_type, body)
        if parts.get("purpose") != b"batch" or "file" not in parts:
            return 400, _error("a batch upload needs purpose=batch and a file", "invalid_request")
        with self._lock:
            file_id = f"file-{next(self._ids)}"
            self.files[file_id] = parts["file"]
        return 200, {"id": file_id, "object": "file", "bytes": len(parts["file"]),
                     "purpose": "batch", "filename": "batch.jsonl"}

    def file_content(self, file_id: str) -> bytes | None:
        return self.files.get(file_id)

    def create_openai(self, request: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(request, dict) or request.get("input_file_id") not in self.files:
            return 400, _error("input_file_id names no uploaded file", "invalid_request")
        if request.get("endpoint") != "/v1/chat/completions":
            return 400, _error("only /v1/chat/completions is simulated", "invalid_request")
        lines, errors = [], []
        for number, text in enumerate(self.files[request["input_file_id"]].splitlines(), 1):
            try:
                line = json.loads(text)
                assert isinstance(line, dict) and line["custom_id"] and line["body"]
                lines.append(line)
            except Exception:  # noqa: BLE001 - a bad line fails the batch, as OpenAI's does
                errors.append(f"line {number} is not a request line")
        batch = self._new("batch", "openai", lines)
        if errors or self.refusal:
            batch.status, batch.errors = "failed", errors or [str(self.refusal)]
        return 200, self._openai_view(batch)

    def get_openai(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        batch = self._advance(batch_id)
        if batch is None or batch.api != "openai":
            return 404, _error(f"no batch {batch_id!r}", "not_found")
        return 200, self._openai_view(batch)

    def _openai_view(self, batch: _Batch) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
            "status": batch.status, "output_file_id": batch.output_file,
            "error_file_id": batch.error_file,
            "request_counts": {"total": len(batch.requests),
                               "completed": batch.counts.get("succeeded", 0),
                               "failed": batch.counts.get("errored", 0)},
        }
        if batch.errors:
            view["errors"] = {"object": "list",
                              "data": [{"code": "invalid", "message": m} for m in batch.errors]}
        return view

    # -- Anthropic --------------------------------------------------------------------------

    def create_anthropic(self, request: Any) -> tuple[int, dict[str, Any]]:
        requests = request.get("requests") if isinstance(request, dict) else None
        if not isinstance(requests, list) or not requests or not all(
                isinstance(r, dict) and r.get("custom_id") and isinstance(r.get("params"), dict)
                for r in requests):
            return 400, {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "requests must be a list of {custom_id, params}"}}
        if self.refusal:
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": self.refusal}}
        return 200, self._anthropic_view(self._new("msgbatch", "anthropic", requests), "")

    def get_anthropic(self, batch_id: str, root: str) -> tuple[int, dict[str, Any]]:
        batch = self._advance(batch_id)
        if batch is None or batch.api != "anthropic":
            return 404, {"type": "error", "error": {"type": "not_found_error",
                                                    "message": f"no batch {batch_id!r}"}}
        return 200, self._anthropic_view(batch, root)

    def anthropic_results(self, batch_id: str) -> bytes | None:
        batch = self.batches.get(batch_id)
        return batch.results if batch is not None and batch.status == "ended" else None

    def _anthropic_view(self, batch: _Batch, root: str) -> dict[str, Any]:
        ended = batch.status == "ended"
        counts = {name: batch.counts.get(name, 0)
                  for name in ("succeeded", "errored", "canceled", "expired")}
        counts["processing"] = 0 if ended else len(batch.requests)
        return {
            "id": batch.id, "type": "message_batch",
            "processing_status": "ended" if ended else batch.status,
            "request_counts": counts,
            "results_url": f"{root}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    # -- both -------------------------------------------------------------------------------

    def cancel(self, batch_id: str) -> _Batch | None:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is not None and batch.status == "in_progress":
                self._finish(batch, cancelled=True)
        return batch

    def _new(self, prefix: str, api: str, requests: list[dict[str, Any]]) -> _Batch:
        with self._lock:
            batch = _Batch(f"{prefix}_{next(self._ids)}", api, requests, self.clock())
            self.batches[batch.id] = batch
            self.submitted += 1
        return batch

    def _advance(self, batch_id: str) -> _Batch | None:
        """The batch, answered first if its time has come."""
        with self._lock:
            batch = self.batches.get(batch_id)
            if (batch is not None and batch.status == "in_progress"
                    and self.clock() - batch.created >= self.batch_seconds):
                self._finish(batch, cancelled=False)
        return batch

    def _finish(self, batch: _Batch, *, cancelled: bool) -> None:
        out: list[str] = []
        failed: list[str] = []
        counts = {"succeeded": 0, "errored": 0, "expired": 0, "canceled": 0}
        for number, line in enumerate(batch.requests, 1):
            custom_id = line["custom_id"]
            not_run = ("canceled" if cancelled else
                       "expired" if self.expire_every and number % self.expire_every == 0
                       else None)
            if batch.api == "openai":
                text, ok = self._openai_result(custom_id, line["body"], not_run)
            else:
                text, ok = self._anthropic_result(custom_id, line["params"], not_run)
            counts[not_run or ("succeeded" if ok else "errored")] += 1
            (out if ok or batch.api == "anthropic" else failed).append(text)
        batch.counts = {"succeeded": counts["succeeded"],
                        "errored": counts["errored"] + counts["expired"] + counts["canceled"],
                        "expired": counts["expired"], "canceled": counts["canceled"]}
        if batch.api == "anthropic":
            batch.status = "ended"
            batch.counts["errored"] = counts["errored"]
            batch.results = "".join(t + "\n" for t in out).encode()
            return
        batch.status = "cancelled" if cancelled else "completed"
        for lines, slot in ((out, "output_file"), (failed, "error_file")):
            if lines:
                file_id = f"file-{next(self._ids)}"
                self.files[file_id] = "".join(t + "\n" for t in lines).encode()
                setattr(batch, slot, file_id)

    def _openai_result(self, custom_id: str, body: dict[str, Any],
                       not_run: str | None) -> tuple[str, bool]:
        if not_run is not None:
            code = "batch_expired" if not_run == "expired" else "batch_cancelled"
            return json.dumps({"id": f"batch_req_{custom_id[:12]}", "custom_id": custom_id,
                               "response": None, "error": {"code": code, "message": not_run}}), False
        status, reply = self.answer(body)
        return json.dumps({
            "id": f"batch_req_{custom_id[:12]}", "custom_id": custom_id,
            "response": {"status_code": status, "request_id": custom_id[:16], "body": reply},
            "error": None,
        }), status == 200

    def _anthropic_result(self, custom_id: str, params: dict[str, Any],
                          not_run: str | None) -> tuple[str, bool]:
        if not_run is not None:
            return json.dumps({"custom_id": custom_id, "result": {"type": not_run}}), False
        messages = list(params.get("messages") or [])
        system = params.get("system")
        if isinstance(system, list):  # text blocks (the cacheable form): their text, joined
            system = "\n\n".join(str(b.get("text") or "") for b in system if isinstance(b, dict))
        if system:
            messages.insert(0, {"role": "system", "content": system})
        request = {k: v for k, v in params.items() if k != "system"} | {"messages": messages}
        status, reply = self.answer(request)
        choice = (reply.get("choices") or [{}])[0] if isinstance(reply, dict) else {}
        if status != 200 or not choice:
            error = reply.get("error") if isinstance(reply, dict) else None
            message = error.get("message") if isinstance(error, dict) else str(reply)[:200]
            kind = "rate_limit_error" if status == 429 else "api_error"
            return json.dumps({"custom_id": custom_id, "result": {
                "type": "errored",
                "error": {"type": "error", "error": {"type": kind, "message": message}}}}), False
        usage = reply.get("usage") or {}
        message = {
            "id": f"msg_{custom_id[:16]}", "type": "message", "role": "assistant",
            "model": request.get("model"),
            "content": [{"type": "text", "text": (choice.get("message") or {}).get("content")}],
            "stop_reason": "max_tokens" if choice.get("finish_reason") == "length"
            else "end_turn",
            "usage": {"input_tokens": usage.get("prompt_tokens"),
                      "output_tokens": usage.get("completion_tokens")},
        }
        return json.dumps({"custom_id": custom_id,
                           "result": {"type": "succeeded", "message": message}}), True


def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    """The named parts of a multipart/form-data body (the stdlib's MIME parser reads it)."""
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    message = parser.parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    parts: dict[str, bytes] = {}
    if not message.is_multipart():
        return parts
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            parts[name] = payload if isinstance(payload, bytes) else b""
    return parts


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}
