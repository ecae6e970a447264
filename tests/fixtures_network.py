"""Fixtures for the call layer over real sockets, all on 127.0.0.1: a scriptable vendor (plain or
TLS), a test certificate authority, and a CONNECT proxy.

- `local_vendor(reply, tls=False)`: an HTTP/1.1 keep-alive server whose every POST is answered by
  `reply(seen) -> Reply | None` (None hangs up without a reply). It records each request
  (`SeenRequest`: path, headers, body, which connection, its number on that connection).
  `tls=True` serves HTTPS with a certificate for `vendor.test` and 127.0.0.1 signed by
  `test_ca`.
- `test_ca`: a `trustme.CA`; `ca_file` is its certificate as a PEM file (for SSL_CERT_FILE).
- `connect_proxy(routes)`: a threaded HTTP CONNECT proxy; `routes` maps a CONNECT target
  ("vendor.test:443") to the local address it really reaches (any 127.0.0.1 target is reached
  as it is). It records every target it was asked for in `connects`.
- `network_env`: clears every proxy and CA variable for the test, so the machine's own
  settings never leak in; tests then set what they need with `monkeypatch`.
"""

from __future__ import annotations

import http.server
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.fixtures_calls import chat_body

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD")
CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")


@dataclass(frozen=True)
class SeenRequest:
    """One request as the local vendor received it."""

    path: str
    headers: dict[str, str]
    body: bytes
    connection: int  # the client's port: one per TCP connection
    nth_on_connection: int  # 1 for the first request on its connection
    number: int  # 1 for the first request the server saw, 2 for the next...


@dataclass
class Reply:
    """What the local vendor answers. `trickle_s` > 0 sends the body one byte at a time with
    that pause; `stall_after` bytes then silence for `stall_s` (the body is never finished)."""

    status: int = 200
    body: bytes = field(default_factory=lambda: json.dumps(chat_body()).encode())
    headers: list[tuple[str, str]] = field(default_factory=list)
    trickle_s: float = 0.0
    stall_after: int | None = None
    stall_s: float = 0.0


ReplyFn = Callable[[SeenRequest], "Reply | None"]


def ok_reply(seen: SeenRequest) -> Reply:
    """A KEEP verdict."""
    return Reply()


class _VendorHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless a reply says otherwise

    def setup(self) -> None:
        super().setup()
        self.served = 0

    def do_POST(self) -> None:
        server: LocalVendor = self.server  # type: ignore[assignment]
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.served += 1
        with server.lock:
            seen = SeenRequest(self.path, dict(self.headers.items()), body,
                               self.client_address[1], self.served, len(server.seen) + 1)
            server.seen.append(seen)
        reply = server.reply(seen)
        if reply is None:
            self.close_connection = True  # hang up without a word
            return
        self.send_response(reply.status)
        names = {name.lower() for name, _ in reply.headers}
        if "content-type" not in names:
            self.send_header("Content-Type", "application/json")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        try:
            if reply.stall_after is not None:
                self.wfile.write(reply.body[:reply.stall_after])
                self.wfile.flush()
                time.sleep(reply.stall_s)
                self.close_connection = True
            elif reply.trickle_s:
                for byte in reply.body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(reply.trickle_s)
            else:
                self.wfile.write(reply.body)
        except OSError:
            self.close_connection = True  # the client hung up (a deadline): as it should

    def log_message(self, *args: object) -> None:
        pass


class LocalVendor(http.server.ThreadingHTTPServer):
    """See the module docstring."""

    daemon_threads = True

    def __init__(self, reply: ReplyFn, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _VendorHandler)
        self.reply = reply
        self.tls = tls
        self.lock = threading.Lock()
        self.seen: list[SeenRequest] = []
        self.scheme = "https" if tls else "http"

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/v1"

    @property
    def connections(self) -> set[int]:
        with self.lock:
            return {seen.connection for seen in self.seen}

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake in the connection's own thread, never in the accept loop.
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                request.close()
                return
        super().finish_request(request, client_address)


@pytest.fixture(scope="session")
def test_ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="session")
def ca_file(test_ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ca") / "test-ca.pem"
    test_ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture(scope="session")
def vendor_tls(test_ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    test_ca.issue_cert("vendor.test", "127.0.0.1").configure_cert(context)
    return context


@pytest.fixture
def local_vendor(vendor_tls: ssl.SSLContext) -> Iterator[Callable[..., LocalVendor]]:
    servers: list[LocalVendor] = []

    def start(reply: ReplyFn = ok_reply, *, tls: bool = False) -> LocalVendor:
        server = LocalVendor(reply, vendor_tls if tls else None)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class ConnectProxy:
    """See the module docstring."""

    def __init__(self, routes: dict[str, tuple[str, int]]) -> None:
        self.routes = routes
        self.connects: list[str] = []
        self.other_requests: list[str] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                self._sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        method, target = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[:2]
        with self._lock:
            (self.connects if method == "CONNECT" else self.other_requests).append(target)
        host, _, port = target.rpartition(":")
        upstream_address = self.routes.get(target) or (
            (host, int(port)) if method == "CONNECT" and host == "127.0.0.1" else None
        )
        if upstream_address is None:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        upstream = socket.create_connection(upstream_address, timeout=10)
        with self._lock:
            self._sockets.append(upstream)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
        _pipe(client, upstream)

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for sock in self._sockets:
                sock.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes one way until either side ends."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


@pytest.fixture
def connect_proxy() -> Iterator[Callable[..., ConnectProxy]]:
    proxies: list[ConnectProxy] = []

    def start(routes: dict[str, tuple[str, int]] | None = None) -> ConnectProxy:
        proxies.append(ConnectProxy(routes or {}))
        return proxies[-1]

    yield start
    for proxy in proxies:
        proxy.close()


@pytest.fixture
def network_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy or CA variable from the machine: the test sets what it needs."""
    for name in PROXY_VARIABLES + CA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch
