"""One attempt: one HTTP request under a wall-clock deadline, and what its failure means.

`send_once` sends and reads a reply whole, or raises; `failure_of` turns what it raised into the
`CallFailure` the retry policy decides on. Nothing here retries or sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

from judging.engine.anthropic_messages import ANTHROPIC_VERSION
from judging.engine.calls.deadline import DeadlineExceededError, Watchdog
from judging.engine.transport import StaleConnectionError
from judging.errors import CallFailure, CriticCallError, RetryableCallError


@dataclass(frozen=True, slots=True)
class Route:
    """What every call to one base URL shares, built once: the parsed endpoint URL and the
    headers every request to it carries (never the key: that is added per call)."""

    url: str
    parsed: httpx.URL
    headers: httpx.Headers


def make_route(base_url: str, extra_headers: dict[str, str] | None = None,
               api: str = "chat") -> Route:
    """The endpoint of a base URL with the headers every call to it sends: chat completions,
    or Anthropic's Messages API (`api="messages"`, which also names its version)."""
    url = f"{base_url}/messages" if api == "messages" else f"{base_url}/chat/completions"
    parsed = httpx.URL(url)
    headers = httpx.Headers({
        # Host and Content-Length are ours to set: requests are built from a stream (the body
        # is already bytes), which httpx does not annotate.
        "Host": parsed.netloc.decode("ascii"),
        "User-Agent": "jurybox",
        "Accept": "application/json",
        "Content-Type": "application/json",
        **({"anthropic-version": ANTHROPIC_VERSION} if api == "messages" else {}),
        **(extra_headers or {}),
    })
    return Route(url=url, parsed=parsed, headers=headers)


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply read whole."""

    status: int
    headers: httpx.Headers
    body: str


def send_once(
    transport: httpx.BaseTransport,
    watchdog: Watchdog,
    route: Route,
    headers: httpx.Headers,
    content: bytes,
    timeouts: dict[str, float],
    timeout_s: float,
) -> Reply:
    """One HTTP request with a wall-clock deadline of `timeout_s` over connect, headers and
    body (the header wait by the socket timeouts, the body by the watchdog).

    Raises:
        DeadlineExceededError: the body was still arriving at the deadline.
        httpx.HTTPError: whatever the transport or the decoder raised.
    """
    deadline = time.monotonic() + timeout_s
    request = httpx.Request(
        "POST", route.parsed, headers=headers, stream=httpx.ByteStream(content),
        extensions={"timeout": timeouts},
    )
    response = transport.handle_request(request)
    try:
        token = watchdog.watch(deadline, response)
        chunks: list[bytes] = []
        reply_headers = response.headers
        # The transport's byte stream as it is, unless the vendor compressed it (we never ask
        # it to) or the body is already in memory (MockTransport replies): then httpx decodes.
        # (iter_raw's re-chunking and counters cost ~5 % of a call's CPU.)
        reader: Iterable[bytes]
        if response.is_stream_consumed or "content-encoding" in reply_headers:
            reader = response.iter_bytes()
        else:
            reader = response.stream  # type: ignore[assignment]  # a SyncByteStream here
        try:
            for chunk in reader:
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise DeadlineExceededError
        except httpx.TransportError:
            if time.monotonic() >= deadline:
                raise DeadlineExceededError from None
            raise
        finally:
            watchdog.release(token)
    finally:
        response.close()  # hands a fully read keep-alive connection back to the transport
    # JSON is UTF-8 (RFC 8259); only a declared charset says otherwise.
    content_type = reply_headers.get("content-type", "")
    encoding = (response.encoding or "utf-8") if "charset" in content_type else "utf-8"
    body = b"".join(chunks).decode(encoding, errors="replace")
    return Reply(response.status_code, reply_headers, body)


def failure_of(error: Exception, timeout_s: float) -> CallFailure | None:
    """The `CallFailure` an exception from `send_once` stands for, or None for one that is not
    a known HTTP failure (a bug: the caller reports it as unexpected).

    The messages may quote the transport's text; the caller scrubs keys from them.
    """
    if isinstance(error, DeadlineExceededError):
        return RetryableCallError(f"no complete reply within the deadline of {timeout_s:g} s")
    if isinstance(error, StaleConnectionError):
        # The server closed an idle connection as we reused it and never saw the request:
        # a fresh connection at once, not a backoff.
        return RetryableCallError(f"connection problem: {error}", retry_after=0.0)
    if isinstance(error, httpx.LocalProtocolError | httpx.UnsupportedProtocol):
        # The request itself is invalid (a base URL that is not http/https, a header that
        # cannot be sent): every retry and every later item would fail the same way.
        return CriticCallError(f"could not send a valid request: {error}")
    if isinstance(error, httpx.TimeoutException):
        return RetryableCallError(f"timed out (deadline {timeout_s:g} s) waiting for the vendor")
    if isinstance(error, httpx.DecodingError):
        # A body the server said was compressed but is not (a broken gzip from a proxy or a
        # cut connection): as transient as a reset.
        return RetryableCallError(f"could not decode the reply: {error}")
    if isinstance(error, httpx.TransportError):
        return RetryableCallError(f"connection problem: {type(error).__name__}: {error}")
    return None
