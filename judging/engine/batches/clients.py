"""The two batch APIs over httpx: submit a chunk of lines, ask how a batch is doing, read its
results, cancel it.

Through `httpx.Client(trust_env=True)`, as live calls to real vendors go: proxies and a
company's CA (`HTTPS_PROXY`, `SSL_CERT_FILE`, ...) apply to batches too. These are a few
requests per batch (an upload, a poll every half minute, a download), so nothing here is
tuned for speed. The key is sent in a header and never kept: errors are scrubbed of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

# One API version for live calls and batches: the one the official SDK pins.
from judging.engine.anthropic_messages import ANTHROPIC_VERSION
from judging.engine.batches.lines import CHAT_ENDPOINT, BatchApi, Chunk
from judging.engine.calls.scrub import Scrubber
from judging.errors import JuryboxError

_TIMEOUT = httpx.Timeout(300.0, connect=30.0)  # an upload may be a few hundred megabytes


class BatchApiError(JuryboxError):
    """The vendor refused or failed a batch request; the message says what it answered."""


@dataclass(frozen=True, slots=True)
class BatchState:
    """How a vendor batch is doing.

    Attributes:
        ended: the vendor has finished with it (every request answered, expired or cancelled):
            its results can be read.
        failed: the vendor refused the batch as a whole (e.g. the input file did not validate);
            `error` says why. No request of it ran.
        vendor_status: the vendor's own word for it ("in_progress", "finalizing", "ended", ...).
        total / succeeded / errored: request counts so far, as the vendor reports them.
        result_refs: where the results are (OpenAI: output and error file ids; Anthropic: the
            results URL), once ended.
    """

    vendor_status: str
    ended: bool = False
    failed: bool = False
    total: int = 0
    succeeded: int = 0
    errored: int = 0
    error: str | None = None
    result_refs: list[str] = field(default_factory=list)


class BatchClient(Protocol):
    def submit(self, chunk: Chunk, *, run_label: str) -> str: ...
    def state(self, batch_id: str) -> BatchState: ...
    def result_lines(self, state: BatchState) -> Iterator[str]: ...
    def cancel(self, batch_id: str) -> None: ...
    def close(self) -> None: ...


def client_for(api: BatchApi, base_url: str, key: str | None,
               extra_headers: dict[str, str] | None = None) -> BatchClient:
    """A client of `api` at a critic's base URL (e.g. https://api.openai.com/v1)."""
    kind = AnthropicBatches if api == "anthropic" else OpenAIBatches
    return kind(base_url, key, extra_headers)


class _Client:
    def __init__(self, base_url: str, key: str | None,
                 extra_headers: dict[str, str] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._scrubber = Scrubber((key,) if key else ())
        self._http = httpx.Client(trust_env=True, timeout=_TIMEOUT, follow_redirects=False,
                                  headers={"User-Agent": "jurybox", **(extra_headers or {}),
                                           **self._auth(key)})

    def _auth(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def close(self) -> None:
        self._http.close()

    def _json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        """A request whose reply must be a JSON object with status 2xx."""
        try:
            reply = self._http.request(method, url, **kwargs)
        except httpx.HTTPError as error:
            raise BatchApiError(self._scrubbed(
                f"{method} {url}: the vendor could not be reached: {error}")) from None
        if not 200 <= reply.status_code < 300:
            raise BatchApiError(self._scrubbed(
                f"{method} {url}: HTTP {reply.status_code}: {reply.text[:300]}"))
        try:
            data = reply.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise BatchApiError(f"{method} {url}: the reply is not a JSON object")
        return data

    def _lines(self, url: str) -> Iterator[str]:
        """A results file streamed line by line (it may be hundreds of megabytes)."""
        with self._http.stream("GET", url) as reply:
            if reply.status_code != 200:
                reply.read()
                raise BatchApiError(self._scrubbed(
                    f"GET {url}: HTTP {reply.status_code}: {reply.text[:300]}"))
            yield from reply.iter_lines()

    def _scrubbed(self, text: str) -> str:
        return self._scrubber.text(text) or text


class OpenAIBatches(_Client):
    """OpenAI's Batch API (and servers that copy it): upload a JSONL file with purpose "batch",
    create a batch on it, poll `/batches/{id}`, read its output and error files."""

    def submit(self, chunk: Chunk, *, run_label: str) -> str:
        content = ("\n".join(chunk.lines) + "\n").encode()
        upload = self._json("POST", f"{self.base_url}/files", data={"purpose": "batch"},
                            files={"file": ("jurybox-batch.jsonl", content,
                                            "application/jsonl")})
        batch = self._json("POST", f"{self.base_url}/batches", json={
            "input_file_id": upload.get("id"), "endpoint": CHAT_ENDPOINT,
            "completion_window": "24h", "metadata": {"source": "jurybox", "run": run_label},
        })
        return str(batch["id"])

    def state(self, batch_id: str) -> BatchState:
        data = self._json("GET", f"{self.base_url}/batches/{batch_id}")
        status = str(data.get("status"))
        counts = data.get("request_counts") or {}
        if status == "failed":
            errors = (data.get("errors") or {}).get("data") or []
            said = "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict))
            return BatchState(status, failed=True, error=self._scrubbed(
                f"the vendor refused the batch: {said or 'no reason given'}"))
        ended = status in ("completed", "expired", "cancelled")
        refs = [str(data[name]) for name in ("output_file_id", "error_file_id")
                if ended and data.get(name)]
        return BatchState(status, ended=ended, total=int(counts.get("total") or 0),
                          succeeded=int(counts.get("completed") or 0),
                          errored=int(counts.get("failed") or 0), result_refs=refs)

    def result_lines(self, state: BatchState) -> Iterator[str]:
        for file_id in state.result_refs:
            yield from self._lines(f"{self.base_url}/files/{file_id}/content")

    def cancel(self, batch_id: str) -> None:
        self._json("POST", f"{self.base_url}/batches/{batch_id}/cancel")


class AnthropicBatches(_Client):
    """Anthropic's Message Batches: the requests in one JSON body, poll
    `/messages/batches/{id}`, read the JSONL at its `results_url`."""

    def _auth(self, key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        return headers

    def submit(self, chunk: Chunk, *, run_label: str) -> str:
        # The lines are JSON already: joined as they are rather than parsed and dumped again.
        content = ('{"requests":[' + ",".join(chunk.lines) + "]}").encode()
        batch = self._json("POST", f"{self.base_url}/messages/batches", content=content,
                           headers={"Content-Type": "application/json"})
        return str(batch["id"])

    def state(self, batch_id: str) -> BatchState:
        data = self._json("GET", f"{self.base_url}/messages/batches/{batch_id}")
        status = str(data.get("processing_status"))
        counts = data.get("request_counts") or {}
        errored = sum(int(counts.get(name) or 0) for name in ("errored", "canceled", "expired"))
        succeeded = int(counts.get("succeeded") or 0)
        ended = status == "ended"
        return BatchState(status, ended=ended,
                          total=succeeded + errored + int(counts.get("processing") or 0),
                          succeeded=succeeded, errored=errored,
                          result_refs=[str(data["results_url"])]
                          if ended and data.get("results_url") else [])

    def result_lines(self, state: BatchState) -> Iterator[str]:
        for url in state.result_refs:
            yield from self._lines(url)

    def cancel(self, batch_id: str) -> None:
        self._json("POST", f"{self.base_url}/messages/batches/{batch_id}/cancel")


def describe(state: BatchState) -> str:
    """One line for progress displays: "in_progress: 120 of 300 answered, 2 failed"."""
    if state.failed:
        return f"{state.vendor_status}: {state.error}"
    done = state.succeeded + state.errored
    text = f"{state.vendor_status}: {done} of {state.total or '?'} answered"
    return text + (f", {state.errored} failed" if state.errored else "")


__all__ = ["BatchApiError", "BatchClient", "BatchState", "client_for", "describe"]
