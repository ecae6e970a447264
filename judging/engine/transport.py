"""The fast transport for plain HTTP to loopback (the simulator, a local vLLM or Ollama):
HTTP/1.1 keep-alive over plain sockets, one connection per worker thread and host.

It is used only where it is safe and pays (`judging.engine.calls.transports.VendorTransport` routes
there `http://` requests to 127.0.0.0/8, ::1 and localhost; everything else goes through httpx's
own pool, which honours proxies and the CA variables). Loopback needs no proxy and no TLS, and
there latencies are milliseconds, so the client's CPU per call is what limits a large local
run: httpx's pool (httpcore + h11) spent ~3x the CPU here assigning connections and parsing
replies. Each worker thread sends one request at a time, so a connection owned by the thread
needs no pool locks at all. (Side by side: `python -m benchmarks transport`.)

The request (line, headers, body) goes out in one `sendall`. The reply is read by the small
HTTP/1.1 reader below, over a buffered reader kept with the connection: status line, headers
(1xx skipped), then a sized, chunked or close-delimited body (RFC 9112 section 6.3). It replaces
`http.client.HTTPResponse`, whose header parsing through the `email` package cost ~80 us a
reply here, about a fifth of a call's client CPU; this reader takes ~10 us.

It is still an `httpx.BaseTransport`: critics speak httpx (`httpx.Request` in, `httpx.Response`
out), and tests swap in `httpx.MockTransport` as before. It does not retry (the one retry layer
is `judging.engine.calls`) and has no total deadline of its own: each response exposes its socket as
`response.extensions["network_stream"].get_extra_info("socket")`, which the call layer's
watchdog shuts down when a call's deadline passes. No proxy and no TLS: `https://` is refused.

Errors are raised as httpx's exception classes, so callers classify them as they would httpx's:
    httpx.ConnectError / ConnectTimeout   no connection (refused, unreachable)
    httpx.WriteError / WriteTimeout       the request could not be sent
    httpx.ReadTimeout                     no bytes within the read timeout
    StaleConnectionError                  a kept-alive connection was found closed by the
                                          server when reused, before any reply byte: the
                                          server never answered, so a retry may go at once
    httpx.RemoteProtocolError             the server hung up early or spoke broken HTTP
    httpx.ReadError                       the connection failed while reading
    httpx.LocalProtocolError              a request header holds a line break (never sent)
    httpx.UnsupportedProtocol             a scheme other than http
"""

from __future__ import annotations

import io
import re
import select
import socket
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import httpx

__all__ = ["StaleConnectionError", "ThreadLocalTransport"]

_READ_SIZE = 65536
_MAX_LINE = 65536  # longest status, header or chunk-size line accepted
_MAX_HEADERS = 200
_MAX_IDLE_PER_HOST = 4  # idle connections a thread keeps per host (it normally uses one)
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
_STALE = "the server had closed the kept-alive connection before it could answer"


class StaleConnectionError(httpx.RemoteProtocolError):
    """A kept-alive connection, reused for a new request, turned out closed by the server
    before a single byte of reply: the server's close crossed our request on the wire (its idle
    timeout ran out just then). The server never answered, so the request can go again at once
    on a fresh connection; the call layer retries it without a backoff."""


class _Connection:
    """One keep-alive socket with its buffered reader, tagged with the transport generation
    that opened it."""

    __slots__ = ("generation", "reader", "sock")

    def __init__(self, sock: socket.socket, generation: int) -> None:
        self.sock = sock
        self.reader: io.BufferedReader = sock.makefile("rb")
        self.generation = generation

    def close(self) -> None:
        for closable in (self.reader, self.sock):
            try:
                closable.close()
            except OSError:
                pass  # closing a broken socket: nothing left to free


class _ThreadPool:
    """The idle connections of ONE thread, per (scheme, host, port). Only that thread touches
    `idle` while it runs; `_close_all` runs when the thread is gone (or the transport closes)."""

    __slots__ = ("__weakref__", "idle")

    def __init__(self) -> None:
        self.idle: dict[tuple[str, str, int], list[_Connection]] = {}


def _close_all(idle: dict[tuple[str, str, int], list[_Connection]]) -> None:
    for connections in list(idle.values()):
        while connections:
            try:
                connections.pop().close()
            except IndexError:
                break  # another closer emptied it first


class _NetworkStream:
    """What the call layer's deadline watchdog needs of a response: its socket."""

    __slots__ = ("_sock",)

    def __init__(self, sock: socket.socket | None) -> None:
        self._sock = sock

    def get_extra_info(self, name: str) -> Any:
        return self._sock if name == "socket" else None


def _dead(sock: socket.socket) -> bool:
    """True when an idle keep-alive socket was closed by the server (or is gone).

    An idle HTTP/1.1 connection has nothing to read; readable means EOF or junk, so it must not
    carry the next request (the send may well succeed, and the reply be a hang-up that costs
    the call a retry and its backoff). httpcore makes the same check before reusing one.
    """
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


class _Head:
    """A reply's status line and headers, and how its body is framed."""

    __slots__ = ("framing", "headers", "keep_alive", "length", "reason", "status", "version")

    def __init__(self) -> None:
        self.status = 0
        self.version = b"HTTP/1.1"
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.framing = "none"  # "none", "length", "chunked" or "close"
        self.length = 0
        self.keep_alive = True


def _read_line(reader: io.BufferedReader, what: str, request: httpx.Request) -> bytes:
    line = reader.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise httpx.RemoteProtocolError(f"the server sent a {what} longer than {_MAX_LINE} "
                                        "bytes", request=request)
    return line


def _read_head(reader: io.BufferedReader, request: httpx.Request) -> _Head:
    """Read a reply's status line and headers (skipping 1xx interim replies) and work out how
    its body is framed. Raises httpx.RemoteProtocolError for anything that is not HTTP/1.x."""
    head = _Head()
    while True:
        line = _read_line(reader, "status line", request)
        if not line:
            raise httpx.RemoteProtocolError(
                "the server closed the connection without sending a response", request=request
            )
        parts = line.split(None, 2)
        if (len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[1]) != 3
                or not parts[1].isdigit()):
            raise httpx.RemoteProtocolError(
                f"the server sent a broken status line: {line[:100]!r}", request=request
            )
        head.version, head.status = parts[0], int(parts[1])
        head.reason = parts[2].strip() if len(parts) > 2 else b""
        head.headers = _read_headers(reader, request)
        if not (100 <= head.status < 200) or head.status == 101:
            break  # 100 Continue, 103 Early Hints: the real reply follows

    transfer_encoding: bytes | None = None
    content_length: bytes | None = None
    connection = b""
    for name, value in head.headers:
        lowered = name.lower()
        if lowered == b"content-length":
            content_length = value if content_length is None else content_length + b"," + value
        elif lowered == b"transfer-encoding":
            transfer_encoding = value.lower()
        elif lowered == b"connection":
            connection += b"," + value.lower()
    tokens = {token.strip() for token in connection.split(b",")}
    head.keep_alive = (b"close" not in tokens if head.version == b"HTTP/1.1"
                       else b"keep-alive" in tokens)
    if request.method == "HEAD" or head.status in (204, 304) or head.status < 200:
        head.framing = "none"
        head.keep_alive = head.keep_alive and head.status != 101
    elif transfer_encoding is not None:
        if transfer_encoding.rsplit(b",", 1)[-1].strip() == b"chunked":
            head.framing = "chunked"
        else:  # an encoding we cannot frame: the body runs to the end of the connection
            head.framing, head.keep_alive = "close", False
    elif content_length is not None:
        values = {value.strip() for value in content_length.split(b",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise httpx.RemoteProtocolError(
                f"the server sent a bad Content-Length: {content_length[:100]!r}",
                request=request,
            )
        head.framing, head.length = "length", int(values.pop())
    else:
        head.framing, head.keep_alive = "close", False
    return head


def _read_headers(reader: io.BufferedReader, request: httpx.Request) -> list[tuple[bytes, bytes]]:
    headers: list[tuple[bytes, bytes]] = []
    while True:
        line = _read_line(reader, "header line", request)
        if line == b"\r\n" or line == b"\n":
            return headers
        if not line:
            raise httpx.RemoteProtocolError(
                "the server closed the connection in the middle of the headers", request=request
            )
        if line[0] in b" \t" and headers:  # obsolete line folding: continues the last value
            name, value = headers[-1]
            headers[-1] = (name, value + b" " + line.strip())
            continue
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise httpx.RemoteProtocolError(
                f"the server sent a broken header line: {line[:100]!r}", request=request
            )
        headers.append((name, value.strip()))
        if len(headers) > _MAX_HEADERS:
            raise httpx.RemoteProtocolError(
                f"the server sent more than {_MAX_HEADERS} headers", request=request
            )


class _ResponseStream(httpx.SyncByteStream):
    """The body of one response, read straight from the connection.

    Closing it returns the connection to its thread's idle list when the body was read to the
    end and the server keeps the connection alive; otherwise the connection is closed.
    """

    def __init__(
        self,
        transport: ThreadLocalTransport,
        key: tuple[str, str, int],
        connection: _Connection,
        head: _Head,
        request: httpx.Request,
    ) -> None:
        self._transport = transport
        self._key = key
        self._connection: _Connection | None = connection
        self._head = head
        self._request = request
        self._complete = head.framing == "none"

    def __iter__(self) -> Iterator[bytes]:
        connection = self._connection
        if self._complete or connection is None:
            return
        request = self._request
        try:
            yield from self._body(connection.reader)
        except TimeoutError as error:
            raise httpx.ReadTimeout("timed out reading the body", request=request) from error
        except (OSError, ValueError) as error:  # ValueError: read from a closed file
            raise httpx.ReadError(f"the connection failed while reading the body: {error}",
                                  request=request) from error
        self._complete = True

    def _body(self, reader: io.BufferedReader) -> Iterator[bytes]:
        request = self._request
        framing = self._head.framing
        if framing == "length":
            remaining = self._head.length
            while remaining:
                chunk = reader.read1(min(remaining, _READ_SIZE))
                if not chunk:
                    raise httpx.RemoteProtocolError(
                        f"the server closed the connection {remaining} bytes before the end "
                        "of the body",
                        request=request,
                    )
                remaining -= len(chunk)
                yield chunk
        elif framing == "chunked":
            while True:
                line = _read_line(reader, "chunk size line", request)
                size_text = line.split(b";", 1)[0].strip()
                if not _CHUNK_SIZE.fullmatch(size_text):
                    raise httpx.RemoteProtocolError(
                        "the server closed the connection in the middle of a chunked body"
                        if not line else f"the server sent a bad chunk size: {line[:100]!r}",
                        request=request,
                    )
                remaining = int(size_text, 16)
                if remaining == 0:
                    _read_headers(reader, request)  # trailers: read and dropped
                    return
                while remaining:
                    chunk = reader.read1(min(remaining, _READ_SIZE))
                    if not chunk:
                        raise httpx.RemoteProtocolError(
                            "the server closed the connection in the middle of a chunk",
                            request=request,
                        )
                    remaining -= len(chunk)
                    yield chunk
                if _read_line(reader, "chunk end", request) not in (b"\r\n", b"\n"):
                    raise httpx.RemoteProtocolError("a chunk did not end where its size said",
                                                    request=request)
        else:  # "close": the body is whatever comes until the server closes
            while chunk := reader.read1(_READ_SIZE):
                yield chunk

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._complete and self._head.keep_alive:
            self._transport._release(self._key, connection)
        else:
            connection.close()


class ThreadLocalTransport(httpx.BaseTransport):
    """An `httpx.BaseTransport` for plain HTTP with per-thread keep-alive connections.

    Each thread that sends requests keeps its own idle connections per (host, port), so a
    worker thread reuses one connection for all its calls to a server, with no locking on the
    request path. A thread's connections are closed when the thread ends or the transport is
    closed; a transport stays usable after `close()` (a late request opens a fresh connection).
    No TLS and no proxy: meant for loopback servers (see the module docstring).

    Timeouts come from the request's `timeout` extension (as `httpx.Client` sets it):
    `connect` bounds connecting, `read` each socket read, `write` each send. None means none.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._pools: weakref.WeakSet[_ThreadPool] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._generation = 0

    # -- connections ----------------------------------------------------------------------

    def _thread_pool(self) -> _ThreadPool:
        pool: _ThreadPool | None = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = _ThreadPool()
            # The thread's local data dies with the thread: close its sockets then, so a
            # long-lived transport does not keep one per finished worker thread.
            weakref.finalize(pool, _close_all, pool.idle)
            with self._lock:
                self._pools.add(pool)
        return pool

    def _acquire(
        self, key: tuple[str, str, int], connect_timeout: float | None, request: httpx.Request
    ) -> tuple[_Connection, bool]:
        """A connection for `key`: an idle one of this thread if one is alive (reused: True),
        else a new one."""
        idle = self._thread_pool().idle.get(key)
        while idle:
            connection = idle.pop()
            if connection.generation == self._generation and not _dead(connection.sock):
                return connection, True
            connection.close()
        return _Connection(self._connect(key, connect_timeout, request), self._generation), False

    def _connect(
        self, key: tuple[str, str, int], timeout: float | None, request: httpx.Request
    ) -> socket.socket:
        _, host, port = key
        try:
            sock = socket.create_connection((host, port), timeout)
            try:
                # Small requests and replies: do not let Nagle hold a segment back.
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except BaseException:
                sock.close()
                raise
        except TimeoutError as error:
            raise httpx.ConnectTimeout(f"timed out connecting to {host}:{port}",
                                       request=request) from error
        except OSError as error:  # refused, unreachable, DNS
            raise httpx.ConnectError(f"could not connect to {host}:{port}: {error}",
                                     request=request) from error
        return sock

    def _release(self, key: tuple[str, str, int], connection: _Connection) -> None:
        if connection.generation != self._generation:  # made before close(): do not keep
            connection.close()
            return
        idle = self._thread_pool().idle.setdefault(key, [])
        if len(idle) >= _MAX_IDLE_PER_HOST:
            connection.close()
        else:
            idle.append(connection)

    # -- httpx.BaseTransport --------------------------------------------------------------

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request and return its response with the body still to be read.

        Raises:
            httpx.TransportError: a subclass naming what failed (see the module docstring).
            httpx.UnsupportedProtocol: a scheme other than http.
        """
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(
                f"the URL {url} must start with http:// (this transport speaks plain HTTP "
                "only)", request=request
            )
        host = url.raw_host.decode("ascii")
        key = ("http", host, url.port or 80)
        timeouts: dict[str, float | None] = request.extensions.get("timeout") or {}
        connect_timeout = timeouts.get("connect")
        read_timeout = timeouts.get("read")
        body = request.read()

        connection, reused = self._acquire(key, connect_timeout, request)
        sock = connection.sock
        try:
            write_timeout = timeouts.get("write", read_timeout)
            if sock.gettimeout() != write_timeout:
                sock.settimeout(write_timeout)
            try:
                self._send(sock, request, body)
            except httpx.WriteError as error:
                if reused:  # the server had already closed it
                    raise StaleConnectionError(_STALE, request=request) from error
                raise
            if write_timeout != read_timeout:
                sock.settimeout(read_timeout)
            if reused:
                self._await_reply(connection, request)
            head = self._receive_head(connection, request)
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            head.status,
            headers=head.headers,
            stream=_ResponseStream(self, key, connection, head, request),
            request=request,
            extensions={
                "http_version": head.version,
                "reason_phrase": head.reason,
                "network_stream": _NetworkStream(sock),
            },
        )

    @staticmethod
    def _send(sock: socket.socket, request: httpx.Request, body: bytes) -> None:
        """Write the request line, the request's own headers (httpx.Request holds Host and
        Content-Length) and the body in ONE send: one segment for a small request, instead of
        a headers segment and a body segment for both ends to handle."""
        lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
        has_length = False
        for name, value in request.headers.raw:
            lowered = name.lower()
            if lowered == b"content-length" or lowered == b"transfer-encoding":
                has_length = True
            if b"\n" in value or b"\r" in value or b"\n" in name or b"\r" in name:
                # A line break inside a header would let a value forge headers of its own.
                raise httpx.LocalProtocolError(
                    f"the request header {name.decode('latin-1')!r} contains a line break",
                    request=request,
                )
            lines.append(name + b": " + value)
        if body and not has_length:
            lines.append(b"Content-Length: %d" % len(body))
        head = b"\r\n".join(lines)
        try:
            sock.sendall(head + b"\r\n\r\n" + body)
        except TimeoutError as error:
            raise httpx.WriteTimeout("timed out sending the request", request=request) from error
        except OSError as error:
            raise httpx.WriteError(f"could not send the request: {error}",
                                   request=request) from error

    @staticmethod
    def _await_reply(connection: _Connection, request: httpx.Request) -> None:
        """Wait for the first byte of the reply on a reused connection; none at all (end of
        stream or a reset) means the server had closed it: a stale connection, not a failed
        request. The peeked byte stays in the buffer for the reply reader, so this costs no
        extra read."""
        try:
            first = connection.reader.peek(1)
        except TimeoutError as error:
            raise httpx.ReadTimeout("timed out waiting for the response",
                                    request=request) from error
        except ConnectionError as error:  # reset, aborted, broken pipe
            raise StaleConnectionError(_STALE, request=request) from error
        except (OSError, ValueError) as error:
            raise httpx.ReadError(f"the connection failed waiting for the response: {error}",
                                  request=request) from error
        if not first:
            raise StaleConnectionError(_STALE, request=request)

    @staticmethod
    def _receive_head(connection: _Connection, request: httpx.Request) -> _Head:
        try:
            return _read_head(connection.reader, request)
        except TimeoutError as error:
            raise httpx.ReadTimeout("timed out waiting for the response",
                                    request=request) from error
        except (OSError, ValueError) as error:
            raise httpx.ReadError(f"the connection failed waiting for the response: {error}",
                                  request=request) from error

    def close(self) -> None:
        """Close every idle connection of every thread. Connections busy with a response are
        closed when that response is closed. The transport stays usable."""
        with self._lock:
            self._generation += 1
            pools = list(self._pools)
        for pool in pools:
            _close_all(pool.idle)
