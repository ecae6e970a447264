"""The simulator's HTTP plumbing: the threaded server and the routes.

Routes (the paths the official `openai` and `anthropic` SDKs call):

    POST /v1/chat/completions          chat; `stream: true` answers with server-sent events
    POST /v1/messages                  Anthropic's Messages API; `stream: true` likewise
    GET  /v1/models                    the simulated models
    POST /v1/files                     upload (multipart, purpose=batch)
    GET  /v1/files, /v1/files/{id}, /v1/files/{id}/content
    POST /v1/batches, /v1/batches/{id}/cancel;  GET /v1/batches, /v1/batches/{id}
    POST /v1/messages/batches, /v1/messages/batches/{id}/cancel
    GET  /v1/messages/batches, /v1/messages/batches/{id}, /v1/messages/batches/{id}/results
    GET  /stats, POST /stats/reset, GET /health

Why apart from `judging.simulator.sim_server`: that module decides replies; this one only moves bytes.
Headers are read for the Messages API's required ones and never stored or logged.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qsl

from judging.simulator.sim_batches import BatchDesk
from judging.simulator.sim_sse import chat_events, message_events


class SimReply(Protocol):
    """What the server answers a model route with (`sim_server`'s reply record)."""

    status: int
    body: dict[str, Any] | list[Any]
    headers: dict[str, str]


class SimulatorBackend(Protocol):
    """What this transport needs of the simulator: `sim_server.SimulatorBackend` is one.

    A protocol, not an import: the server starts this transport, so importing it back would
    be a circle."""

    @property
    def batches(self) -> BatchDesk: ...

    @property
    def profiles(self) -> Mapping[str, Any]: ...

    @property
    def root_url(self) -> str: ...

    def stats(self) -> dict[str, Any]: ...

    def reset_stats(self) -> None: ...

    def serve_chat(self, request: Any, *, live: bool) -> SimReply: ...

    def serve_message(self, request: Any, headers: dict[str, str] | None, *,
                      live: bool) -> SimReply: ...


__all__ = ["SimulatorHttpd"]


def _not_found(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None,
                      "code": "not_found"}}


def _anthropic_not_found(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "not_found_error", "message": message}}


class SimulatorHttpd(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # socketserver's default backlog of 5 drops SYNs when 64 clients connect at once, and a
    # dropped SYN costs a 1 s retransmit: that alone would ruin the throughput figures.
    request_queue_size = 512
    simulator: SimulatorBackend

    def __init__(self, address: tuple[str, int], simulator: SimulatorBackend) -> None:
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        self.simulator = simulator
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-reply (a cancelled run, a deadline) is normal here: no
        # traceback on stderr. Anything else is still reported.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)

    def close_all_connections(self) -> None:
        # Keep-alive connections would otherwise hold their handler threads after stop().
        with self._conn_lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as vendors do; httpx pools connections
    # Without TCP_NODELAY, Nagle's algorithm meets the client's delayed ACK and every reply
    # costs an extra 40 ms on loopback.
    disable_nagle_algorithm = True
    server: SimulatorHttpd
    server_version = "JuryboxSimulator/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        # Silent: request lines would flood the CLI, and headers must never be logged.
        return

    # -- writing ---------------------------------------------------------------------------

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_bytes(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/jsonl")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: list[bytes]) -> None:
        # Chunked, one chunk per event, as a vendor's stream arrives.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _target(self) -> tuple[str, dict[str, str]]:
        path, _, query = self.path.partition("?")
        return path.rstrip("/"), dict(parse_qsl(query))

    # -- batches and files -----------------------------------------------------------------

    def _batch_get(self, sim: SimulatorBackend, path: str, query: dict[str, str]) -> None:
        desk = sim.batches
        parts = path.split("/")  # ["", "v1", ...]
        if path == "/v1/batches":
            self._send_json(200, desk.list_openai(query))
        elif path == "/v1/files":
            self._send_json(200, desk.list_files(query))
        elif path == "/v1/messages/batches":
            self._send_json(200, desk.list_anthropic(query, sim.root_url))
        elif parts[2] == "files" and len(parts) == 5 and parts[4] == "content":
            data = desk.file_content(parts[3])
            if data is None:
                self._send_json(404, _not_found(f"No such File object: {parts[3]}"))
            else:
                self._send_bytes(data)
        elif parts[2] == "files" and len(parts) == 4:
            found = desk.file_object(parts[3])
            if found is None:
                self._send_json(404, _not_found(f"No such File object: {parts[3]}"))
            else:
                self._send_json(200, found)
        elif parts[2] == "batches" and len(parts) == 4:
            self._send_json(*desk.get_openai(parts[3]))
        elif parts[2] == "messages" and len(parts) == 5:
            self._send_json(*desk.get_anthropic(parts[4], sim.root_url))
        elif parts[2] == "messages" and len(parts) == 6 and parts[5] == "results":
            results = desk.anthropic_results(parts[4])
            if results is None:
                self._send_json(404, _anthropic_not_found("no results yet"))
            else:
                self._send_bytes(results)
        else:
            self._send_json(404, _not_found(f"no route {path!r}"))

    def _batch_post(self, sim: SimulatorBackend, path: str, raw: bytes) -> None:
        desk = sim.batches
        if path == "/v1/files":
            self._send_json(*desk.upload(self.headers.get("Content-Type") or "", raw))
            return
        try:
            request = json.loads(raw or b"null")
        except ValueError:
            request = None
        parts = path.split("/")
        if path == "/v1/batches":
            self._send_json(*desk.create_openai(request))
        elif path == "/v1/messages/batches":
            self._send_json(*desk.create_anthropic(request))
        elif parts[-1] == "cancel" and len(parts) in (5, 6):
            batch = desk.cancel(parts[-2])
            if batch is None:
                self._send_json(404, _not_found(f"no batch {parts[-2]!r}"))
            elif parts[2] == "messages":
                self._send_json(*desk.get_anthropic(batch.id, sim.root_url))
            else:
                self._send_json(*desk.get_openai(batch.id))
        else:
            self._send_json(404, _not_found(f"no route {path!r}"))

    # -- the model routes --------------------------------------------------------------------

    def _chat(self, sim: SimulatorBackend, raw: bytes) -> None:
        try:
            request = json.loads(raw or b"null")
        except ValueError:
            request = None
        reply = sim.serve_chat(request, live=True)
        if (isinstance(request, dict) and request.get("stream") and reply.status == 200
                and isinstance(reply.body, dict)):
            options = request.get("stream_options")
            usage = isinstance(options, dict) and bool(options.get("include_usage"))
            self._send_events(chat_events(reply.body, usage))
        else:
            self._send_json(reply.status, reply.body, reply.headers)

    def _message(self, sim: SimulatorBackend, raw: bytes) -> None:
        try:
            request = json.loads(raw or b"null")
        except ValueError:
            request = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = sim.serve_message(request, headers, live=True)
        if (isinstance(request, dict) and request.get("stream") and reply.status == 200
                and isinstance(reply.body, dict)):
            self._send_events(message_events(reply.body))
        else:
            self._send_json(reply.status, reply.body, reply.headers)

    def do_GET(self) -> None:  # noqa: N802
        sim = self.server.simulator
        path, query = self._target()
        if path == "/stats":
            self._send_json(200, sim.stats())
        elif path in ("/v1/models", "/models"):
            names = sorted(set(sim.profiles) | {"sim-default"})
            self._send_json(200, {"object": "list", "data": [
                {"id": n, "object": "model", "created": 0, "owned_by": "jurybox-simulator"}
                for n in names]})
        elif path in ("", "/health"):
            self._send_json(200, {"status": "ok"})
        elif path.startswith(("/v1/batches", "/v1/files", "/v1/messages/batches")):
            self._batch_get(sim, path, query)
        else:
            self._send_json(404, _not_found(f"no route {path!r}"))

    def do_POST(self) -> None:  # noqa: N802
        sim = self.server.simulator
        path, _ = self._target()
        raw = self._read_body()
        if path == "/stats/reset":
            sim.reset_stats()
            self._send_json(200, {"reset": True})
        elif path.startswith(("/v1/files", "/v1/batches", "/v1/messages/batches")):
            self._batch_post(sim, path, raw)
        elif path == "/v1/messages":
            self._message(sim, raw)
        elif path in ("/v1/chat/completions", "/chat/completions"):
            self._chat(sim, raw)
        else:
            self._send_json(404, _not_found(f"no route {path!r}"))
