"""The fast loopback transport on its own, against a real HTTP server on 127.0.0.1: keep-alive
reuse, every body framing, broken connections classified as httpx errors, plain HTTP only,
closing. (httpx's route, proxies and TLS: tests/test_vendor_transport.py.)"""

from __future__ import annotations

import http.server
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from judging.engine.calls import CallRunner, RetryPolicy
from judging.engine.transport import ThreadLocalTransport
from judging.panel.critics import Critic
from judging.scales import Scale
from judging.verdicts import FailureKind, Item
from tests.fixtures_calls import chat_body

BODY = json.dumps(chat_body()).encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless a reply says otherwise

    def do_POST(self) -> None:
        server: _Server = self.server  # type: ignore[assignment]
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with server.lock:
            server.requests.append((self.client_address[1], self.path))
            count = len(server.requests)
        mode = self.path.strip("/")
        if mode == "chat/completions":  # the first request is reset mid-body, later ones succeed
            mode = "reset" if count == 1 else "sized"
        if mode == "sized":
            self._reply(BODY)
        elif mode == "echo":
            headers = [[k, v] for k, v in self.headers.items()]
            self._reply(json.dumps({"headers": headers, "body": body.decode()}).encode())
        elif mode == "chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(BODY), 40):
                piece = BODY[start:start + 40]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif mode == "close":  # no length: the body ends when the server closes
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(BODY)
            self.close_connection = True
        elif mode == "drop-after":  # keep-alive promised, then the server closes anyway
            self._reply(BODY)
            self.close_connection = True
        elif mode == "short":  # promises more bytes than it sends, then closes
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY) + 50))
            self.end_headers()
            self.wfile.write(BODY)
            self.close_connection = True
        elif mode == "reset":  # a few bytes of the body, then a TCP reset
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:10])
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
        elif mode == "hangup":  # no response at all
            self.close_connection = True

    def _reply(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[tuple[int, str]] = []  # (client port, path)
        self.closed: list[int] = []  # client ports whose connection ended

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        # Recorded once the socket is really closed: the handler's finish() runs before
        # socketserver closes it, so a client that waited on finish() could still find the
        # socket open and reuse it (a race seen once in CI, on a loaded machine).
        super().process_request_thread(request, client_address)
        with self.lock:
            self.closed.append(client_address[1])

    def url(self, path: str, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.server_address[1]}/{path}"

    @property
    def ports(self) -> set[int]:
        with self.lock:
            return {port for port, _ in self.requests}


def _serve(server: _Server) -> Iterator[_Server]:
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    yield from _serve(_Server())


@pytest.fixture
def transport() -> Iterator[ThreadLocalTransport]:
    transport = ThreadLocalTransport()
    yield transport
    transport.close()


def post(transport: httpx.BaseTransport, url: str, body: bytes = b'{"q": 1}',
         timeout: float = 5.0) -> tuple[int, bytes]:
    request = httpx.Request("POST", url, content=body,
                            headers={"Content-Type": "application/json"},
                            extensions={"timeout": {"connect": timeout, "read": timeout,
                                                    "write": timeout, "pool": timeout}})
    response = transport.handle_request(request)
    try:
        return response.status_code, response.read()
    finally:
        response.close()


def wait_for(condition: Callable[[], bool], seconds: float = 3.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


# -- framing and keep-alive ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["sized", "chunked", "close"])
def test_every_body_framing_is_read_whole(server: _Server, transport: ThreadLocalTransport,
                                          path: str) -> None:
    assert post(transport, server.url(path)) == (200, BODY)


def test_one_thread_reuses_one_connection(server: _Server,
                                          transport: ThreadLocalTransport) -> None:
    for path in ["sized", "chunked", "sized", "echo", "sized"]:
        assert post(transport, server.url(path))[0] == 200
    assert len(server.ports) == 1


def test_each_thread_has_its_own_connection(server: _Server,
                                            transport: ThreadLocalTransport) -> None:
    def work() -> None:
        for _ in range(5):
            assert post(transport, server.url("sized")) == (200, BODY)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(server.requests) == 15 and len(server.ports) == 3


def test_close_delimited_reply_is_not_reused(server: _Server,
                                             transport: ThreadLocalTransport) -> None:
    post(transport, server.url("close"))
    post(transport, server.url("sized"))
    assert len(server.ports) == 2


def test_connection_the_server_dropped_is_replaced(server: _Server,
                                                   transport: ThreadLocalTransport) -> None:
    # The server closes after the reply without saying so; the idle socket is seen dead
    # before reuse, so the next request goes out on a fresh connection instead of failing.
    assert post(transport, server.url("drop-after")) == (200, BODY)
    assert wait_for(lambda: len(server.closed) == 1)
    assert post(transport, server.url("sized")) == (200, BODY)
    assert len(server.ports) == 2


def test_request_goes_out_with_its_own_headers_once(server: _Server,
                                                    transport: ThreadLocalTransport) -> None:
    body = '{"x": "\u00e9"}'.encode()
    status, raw = post(transport, server.url("echo"), body=body)
    echoed = json.loads(raw)
    names = [name.lower() for name, _ in echoed["headers"]]
    assert status == 200 and echoed["body"] == '{"x": "\u00e9"}'
    assert names.count("host") == 1 and names.count("content-length") == 1
    assert "accept-encoding" not in names  # we never ask for compression
    assert {k.lower(): v for k, v in echoed["headers"]}["content-length"] == str(len(body))


def test_header_with_a_line_break_is_never_sent(server: _Server,
                                                transport: ThreadLocalTransport) -> None:
    request = httpx.Request("POST", server.url("sized"), content=b"{}",
                            headers=[(b"X-Bad", b"a\r\nX-Forged: 1")])
    with pytest.raises(httpx.LocalProtocolError, match="line break"):
        transport.handle_request(request)
    assert server.requests == []


# -- broken connections are httpx errors (retryable in the call layer) -----------------------


@pytest.mark.parametrize(
    ("path", "error"),
    [
        # A reset shows as ECONNRESET or as an early EOF, depending on when it lands.
        ("reset", (httpx.ReadError, httpx.RemoteProtocolError)),
        ("short", httpx.RemoteProtocolError),
        ("hangup", httpx.RemoteProtocolError),
    ],
)
def test_broken_replies_raise_transport_errors(
    server: _Server, transport: ThreadLocalTransport, path: str,
    error: type[httpx.TransportError] | tuple[type[httpx.TransportError], ...],
) -> None:
    with pytest.raises(error):
        post(transport, server.url(path))
    # The broken connection is not reused: the next request works on a fresh one.
    assert post(transport, server.url("sized")) == (200, BODY)


def test_refused_connection_is_a_connect_error(transport: ThreadLocalTransport) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(httpx.ConnectError):
        post(transport, f"http://127.0.0.1:{port}/v1")


@pytest.mark.parametrize("scheme", ["ftp", "https"])
def test_anything_but_plain_http_is_refused(server: _Server, transport: ThreadLocalTransport,
                                            scheme: str) -> None:
    # https never comes here: httpx's own transport verifies certificates the way the user's
    # environment says (SSL_CERT_FILE, SSL_CERT_DIR), this one could not.
    with pytest.raises(httpx.UnsupportedProtocol, match="http://"):
        post(transport, server.url("sized", scheme=scheme))
    assert server.requests == []


def test_reset_mid_body_is_retried_by_the_call_layer(server: _Server) -> None:
    # The critic posts to <base_url>/chat/completions; the handler reads its mode from the path.
    critic = Critic(name="c", vendor="custom", model="m", prompt_template="Judge {text}",
                    base_url=f"http://127.0.0.1:{server.server_address[1]}")
    waits: list[float] = []
    scale = Scale(kind="nominal", labels=["KEEP", "REJECT"])
    with CallRunner(retry=RetryPolicy(), sleep=waits.append, seed=1) as runner:
        verdict = runner.call(critic, Item("i", {"text": "x"}), scale)
    assert verdict.ok and verdict.label == "KEEP" and verdict.attempts == 2
    assert len(waits) == 1  # one backoff, from the one retry layer


def test_an_invalid_base_url_scheme_stops_the_critic_without_retries(server: _Server) -> None:
    port = server.server_address[1]
    critic = Critic(name="c", vendor="custom", model="m", prompt_template="Judge {text}",
                    base_url=f"ftp://127.0.0.1:{port}")
    waits: list[float] = []
    with CallRunner(sleep=waits.append) as runner:
        verdict = runner.call(critic, Item("i", {"text": "x"}), Scale(kind="yesno"))
    assert verdict.failure is FailureKind.CRITIC_ERROR and verdict.attempts == 1 and not waits
    assert "valid request" in (verdict.message or "")
    assert runner.gate.reason("c") is not None  # later items are not sent
    assert server.requests == []


def test_a_key_with_a_line_break_is_a_configuration_error(server: _Server) -> None:
    port = server.server_address[1]
    critic = Critic(name="c", vendor="custom", model="m", prompt_template="Judge {text}",
                    base_url=f"http://127.0.0.1:{port}", api_key_env="JURYBOX_FORGED_KEY")
    forged = "sk-secret-123\r\nX-Forged: 1"
    with CallRunner(key_lookup={"JURYBOX_FORGED_KEY": forged}.get) as runner:
        verdict = runner.call(critic, Item("i", {"text": "x"}), Scale(kind="yesno"))
    assert verdict.failure is FailureKind.CRITIC_ERROR and verdict.attempts == 0
    assert "JURYBOX_FORGED_KEY" in (verdict.message or "")
    assert "line break" in (verdict.message or "")
    assert "sk-secret" not in json.dumps(verdict.to_dict(), default=str)
    assert server.requests == []


# -- lifecycle ---------------------------------------------------------------------------------


def test_close_closes_idle_connections_and_stays_usable(server: _Server) -> None:
    transport = ThreadLocalTransport()
    post(transport, server.url("sized"))
    transport.close()
    assert wait_for(lambda: len(server.closed) == 1)  # the server saw the connection end
    assert post(transport, server.url("sized")) == (200, BODY)  # a fresh connection
    assert len(server.ports) == 2
    transport.close()


def test_a_finished_thread_leaves_no_open_connection(server: _Server,
                                                     transport: ThreadLocalTransport) -> None:
    thread = threading.Thread(target=post, args=(transport, server.url("sized")))
    thread.start()
    thread.join()
    assert wait_for(lambda: len(server.closed) == 1)


# -- the reply reader, byte by byte ------------------------------------------------------------


class _RawServer:
    """Answers each request with the next scripted bytes, verbatim; counts connections."""

    def __init__(self, *replies: bytes) -> None:
        self.replies = list(replies)
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        with conn, reader:
            while self.replies:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                reader.read(length)
                conn.sendall(self.replies.pop(0))

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def raw_server() -> Iterator[Callable[..., _RawServer]]:
    servers: list[_RawServer] = []

    def start(*replies: bytes) -> _RawServer:
        servers.append(_RawServer(*replies))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


OK_REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@pytest.mark.parametrize(
    ("reply", "body", "reused"),
    [
        # chunk extensions and trailers are read and dropped
        ((b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"3;name=x\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n"), b"abcde", True),
        # an interim 100 Continue before the real reply
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
         b"abc", True),
        # no body at all, connection kept
        (b"HTTP/1.1 204 No Content\r\n\r\n", b"", True),
        # HTTP/1.0 without keep-alive: not reused
        (b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc", b"abc", False),
        # HTTP/1.1 asking to close: not reused
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc", b"abc", False),
        # repeated identical Content-Length is accepted
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", b"abc", True),
    ],
    ids=["chunked-extensions-trailers", "100-continue", "204", "http10", "close", "dup-length"],
)
def test_reply_framings(raw_server: Callable[..., _RawServer], transport: ThreadLocalTransport,
                        reply: bytes, body: bytes, reused: bool) -> None:
    server = raw_server(reply, OK_REPLY)
    status = 204 if b" 204 " in reply else 200
    assert post(transport, server.url, timeout=3) == (status, body)
    assert post(transport, server.url, timeout=3) == (200, b"ok")
    assert server.connections == (1 if reused else 2)


def test_folded_header_is_joined(raw_server: Callable[..., _RawServer],
                                 transport: ThreadLocalTransport) -> None:
    server = raw_server(b"HTTP/1.1 200 OK\r\nX-Note: one\r\n  two\r\nContent-Length: 0\r\n\r\n")
    request = httpx.Request("POST", server.url, content=b"{}")
    response = transport.handle_request(request)
    response.read()
    response.close()
    assert response.headers["x-note"] == "one two"


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/2 200 OK\r\n\r\n",
        b"garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBroken header\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n",
    ],
    ids=["http2-status", "no-status", "two-lengths", "negative-length", "no-colon",
         "bad-chunk-size", "chunk-overrun"],
)
def test_malformed_replies_are_protocol_errors(raw_server: Callable[..., _RawServer],
                                               transport: ThreadLocalTransport,
                                               reply: bytes) -> None:
    server = raw_server(reply, OK_REPLY)
    with pytest.raises(httpx.RemoteProtocolError):
        post(transport, server.url, timeout=3)
    assert post(transport, server.url, timeout=3) == (200, b"ok")  # on a fresh connection
    assert server.connections == 2
