"""The simulator's batch APIs: OpenAI's Batch API (files + `/v1/batches`) and Anthropic's
Message Batches, answered by the simulator's own critics, so batch mode runs with no key.

A batch is "in progress" for `batch_seconds` after it is created (the fast clock: a real vendor
takes minutes to hours), then every request is answered at once on the next look, exactly as
the chat endpoint would answer it live (same profiles, same seed: the same reply). Knobs for
tests: `expire_every` (every Nth request expires instead of running) and `refusal` (the vendor
refuses the whole batch with that sentence).

Objects carry every field the official SDKs require (`openai.types.Batch`, `FileObject`;
`anthropic.types.messages.MessageBatch`), and the list routes page as the vendors do: newest
first, `limit` (default 20), OpenAI's `after` cursor, Anthropic's `after_id` / `before_id`.

Nothing here imports the simulator: it is handed the functions that answer one chat request
and one Messages API request.
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
from datetime import UTC, datetime
from typing import Any

# Answers one chat-completions request (or one Messages API request): (HTTP status, body).
Answer = Callable[[dict[str, Any]], tuple[int, Any]]

_DAY = 24 * 3600


@dataclass
class _File:
    data: bytes
    filename: str
    purpose: str
    created_at: int


@dataclass
class _Batch:
    id: str
    api: str  # "openai" or "anthropic"
    requests: list[dict[str, Any]]  # OpenAI input lines, or Anthropic {custom_id, params}
    created: float  # on the desk's clock (drives the fast clock)
    created_at: int  # Unix seconds, what the vendors report
    input_file: str | None = None
    status: str = "in_progress"
    ended_at: int | None = None
    cancel_at: int | None = None
    output_file: str | None = None
    error_file: str | None = None
    results: bytes = b""
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class BatchDesk:
    """Files and batches of one simulator (in memory; a restart of the simulator loses them,
    as a vendor never would: tests restart the client side, not the vendor)."""

    def __init__(self, answer: Answer, answer_message: Answer, *, batch_seconds: float = 1.0,
                 expire_every: int = 0, refusal: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.answer = answer
        self.answer_message = answer_message
        self.batch_seconds = batch_seconds
        self.expire_every = expire_every
        self.refusal = refusal
        self.clock = clock
        self.files: dict[str, _File] = {}
        self.batches: dict[str, _Batch] = {}
        self.submitted = 0  # batches created, for tests
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- OpenAI -----------------------------------------------------------------------------

    def upload(self, content_type: str, body: bytes) -> tuple[int, dict[str, Any]]:
        parts, names = _multipart(content_type, body)
        if parts.get("purpose") != b"batch" or "file" not in parts:
            return 400, _error("a batch upload needs purpose=batch and a file", "invalid_request")
        file_id = self._store(parts["file"], names.get("file") or "batch.jsonl", "batch")
        return 200, self.file_object(file_id) or {}

    def _store(self, data: bytes, filename: str, purpose: str) -> str:
        with self._lock:
            file_id = f"file-{next(self._ids)}"
            self.files[file_id] = _File(data, filename, purpose, int(time.time()))
        return file_id

    def file_content(self, file_id: str) -> bytes | None:
        found = self.files.get(file_id)
        return found.data if found is not None else None

    def file_object(self, file_id: str) -> dict[str, Any] | None:
        """OpenAI's FileObject for `GET /v1/files/{id}`, or None."""
        found = self.files.get(file_id)
        if found is None:
            return None
        return {"id": file_id, "object": "file", "bytes": len(found.data),
                "created_at": found.created_at, "filename": found.filename,
                "purpose": found.purpose, "status": "processed", "expires_at": None,
                "status_details": None}

    def list_files(self, query: dict[str, str]) -> dict[str, Any]:
        ids = list(reversed(self.files))
        return _openai_page([self.file_object(i) or {} for i in _after(ids, query)], query)

    def list_openai(self, query: dict[str, str]) -> dict[str, Any]:
        """`GET /v1/batches`: newest first, `limit` and the `after` cursor."""
        ids = [b.id for b in reversed(self.batches.values()) if b.api == "openai"]
        return _openai_page([self.get_openai(i)[1] for i in _after(ids, query)], query)

    def create_openai(self, request: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(request, dict) or request.get("input_file_id") not in self.files:
            return 400, _error("input_file_id names no uploaded file", "invalid_request")
        if request.get("endpoint") != "/v1/chat/completions":
            return 400, _error("only /v1/chat/completions is simulated", "invalid_request")
        lines, errors = [], []
        for number, text in enumerate(self.files[request["input_file_id"]].data.splitlines(), 1):
            try:
                line = json.loads(text)
                assert isinstance(line, dict) and line["custom_id"] and line["body"]
                lines.append(line)
            except Exception:  # noqa: BLE001 - a bad line fails the batch, as OpenAI's does
                errors.append(f"line {number} is not a request line")
        batch = self._new("batch", "openai", lines)
        batch.input_file = request["input_file_id"]
        if errors or self.refusal:
            batch.status, batch.errors = "failed", errors or [str(self.refusal)]
            batch.ended_at = batch.created_at
        return 200, self._openai_view(batch)

    def get_openai(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        batch = self._advance(batch_id)
        if batch is None or batch.api != "openai":
            return 404, _error(f"no batch {batch_id!r}", "not_found")
        return 200, self._openai_view(batch)

    def _openai_view(self, batch: _Batch) -> dict[str, Any]:
        # https://platform.openai.com/docs/api-reference/batch/object
        ended = batch.ended_at
        view: dict[str, Any] = {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
            "input_file_id": batch.input_file, "completion_window": "24h",
            "status": batch.status, "output_file_id": batch.output_file,
            "error_file_id": batch.error_file, "created_at": batch.created_at,
            "in_progress_at": batch.created_at if batch.status != "failed" else None,
            "expires_at": batch.created_at + _DAY,
            "finalizing_at": ended if batch.status == "completed" else None,
            "completed_at": ended if batch.status == "completed" else None,
            "failed_at": ended if batch.status == "failed" else None,
            "expired_at": None,
            "cancelling_at": batch.cancel_at,
            "cancelled_at": ended if batch.status == "cancelled" else None,
            "request_counts": {"total": len(batch.requests),
                               "completed": batch.counts.get("succeeded", 0),
                               "failed": batch.counts.get("errored", 0)},
            "metadata": None,
            "errors": None,
        }
        if batch.errors:
            view["errors"] = {"object": "list",
                              "data": [{"code": "invalid", "message": m, "param": None,
                                        "line": None} for m in batch.errors]}
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

    def list_anthropic(self, query: dict[str, str], root: str) -> dict[str, Any]:
        """`GET /v1/messages/batches`: newest first, `limit`, `after_id` / `before_id`."""
        ids = [b.id for b in reversed(self.batches.values()) if b.api == "anthropic"]
        limit = _limit(query)
        if query.get("before_id") in ids:
            end = ids.index(query["before_id"])
            chosen, more = ids[max(0, end - limit):end], end > limit
        else:
            rest = _after(ids, {"after": query.get("after_id", "")})
            chosen, more = rest[:limit], len(rest) > limit
        data = [self.get_anthropic(i, root)[1] for i in chosen]
        return {"data": data, "has_more": more, "first_id": chosen[0] if chosen else None,
                "last_id": chosen[-1] if chosen else None}

    def anthropic_results(self, batch_id: str) -> bytes | None:
        batch = self.batches.get(batch_id)
        return batch.results if batch is not None and batch.status == "ended" else None

    def _anthropic_view(self, batch: _Batch, root: str) -> dict[str, Any]:
        ended = batch.status == "ended"
        counts = {name: batch.counts.get(name, 0)
                  for name in ("succeeded", "errored", "canceled", "expired")}
        counts["processing"] = 0 if ended else len(batch.requests)
        # https://docs.claude.com/en/api/creating-message-batches: times are RFC 3339 strings.
        return {
            "id": batch.id, "type": "message_batch",
            "processing_status": "ended" if ended else batch.status,
            "request_counts": counts,
            "created_at": _rfc3339(batch.created_at),
            "expires_at": _rfc3339(batch.created_at + _DAY),
            "ended_at": _rfc3339(batch.ended_at) if batch.ended_at is not None else None,
            "cancel_initiated_at": (_rfc3339(batch.cancel_at) if batch.cancel_at is not None
                                    else None),
            "archived_at": None,
            "results_url": f"{root}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    # -- both -------------------------------------------------------------------------------

    def cancel(self, batch_id: str) -> _Batch | None:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is not None and batch.status == "in_progress":
                batch.cancel_at = int(time.time())
                self._finish(batch, cancelled=True)
        return batch

    def _new(self, prefix: str, api: str, requests: list[dict[str, Any]]) -> _Batch:
        with self._lock:
            batch = _Batch(f"{prefix}_{next(self._ids)}", api, requests, self.clock(),
                           int(time.time()))
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
        batch.ended_at = int(time.time())
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
                kind = slot.removesuffix("_file")
                file_id = f"file-{next(self._ids)}"
                self.files[file_id] = _File("".join(t + "\n" for t in lines).encode(),
                                            f"{batch.id}_{kind}.jsonl", f"batch_{kind}",
                                            int(time.time()))
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
        status, reply = self.answer_message(params)
        if status != 200:
            # An errored result carries Anthropic's error body, as a live call would get it
            # (https://docs.claude.com/en/docs/build-with-claude/batch-processing).
            error = reply if isinstance(reply, dict) and reply.get("type") == "error" else {
                "type": "error", "error": {"type": "api_error", "message": str(reply)[:200]}}
            return json.dumps({"custom_id": custom_id,
                               "result": {"type": "errored", "error": error}}), False
        return json.dumps({"custom_id": custom_id,
                           "result": {"type": "succeeded", "message": reply}}), True


def _multipart(content_type: str, body: bytes) -> tuple[dict[str, bytes], dict[str, str]]:
    """The named parts of a multipart/form-data body (the stdlib's MIME parser reads it), and
    the file name each file part was sent with."""
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    message = parser.parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    parts: dict[str, bytes] = {}
    names: dict[str, str] = {}
    if not message.is_multipart():
        return parts, names
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            parts[name] = payload if isinstance(payload, bytes) else b""
            filename = part.get_filename()
            if filename:
                names[name] = filename
    return parts, names


def _limit(query: dict[str, str]) -> int:
    try:
        return max(1, min(100, int(query.get("limit") or 20)))
    except ValueError:
        return 20


def _after(ids: list[str], query: dict[str, str]) -> list[str]:
    """The ids after the `after` cursor (all of them without one)."""
    after = query.get("after")
    return ids[ids.index(after) + 1:] if after in ids else ids


def _openai_page(items: list[dict[str, Any]], query: dict[str, str]) -> dict[str, Any]:
    """One page of an OpenAI list (https://platform.openai.com/docs/api-reference/batch/list)."""
    page = items[:_limit(query)]
    return {"object": "list", "data": page, "has_more": len(items) > len(page),
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None}


def _rfc3339(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}
