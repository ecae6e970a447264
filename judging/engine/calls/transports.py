"""Which transport carries a request: httpx's own for real vendors, the fast one for loopback.

Real vendors go through `httpx.Client(trust_env=True)`, the way users behind a company network
expect: `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` and `NO_PROXY` choose the route, and
`SSL_CERT_FILE` / `SSL_CERT_DIR` the trusted certificates (a TLS-inspecting proxy's CA), all read
by httpx itself when the client is built. Its pool holds as many connections as the run has
workers, so no call waits for a connection and none is closed for lack of room (httpx's default
keeps 20 alive: a run of 64 would redo TLS handshakes all the time).

Plain `http://` to loopback (127.0.0.0/8, ::1, localhost: the simulator, a local vLLM or Ollama)
goes through `judging.engine.transport.ThreadLocalTransport` instead. It is safe there (no TLS to
verify; a proxy could not reach this machine's loopback anyway, so none is used) and it pays:
at loopback latencies the client's CPU is what limits a run, and it costs about a third of
httpx's per call (`python -m benchmarks transport` measures both side by side).

Neither transport retries, and both expose each response's socket to the call layer's deadline
watchdog. Both report a kept-alive connection that the server had closed before answering as
`judging.engine.transport.StaleConnectionError`, which the call layer retries at once.
"""

from __future__ import annotations

import ipaddress
import threading
from typing import Any

import httpx

from judging.engine.transport import StaleConnectionError, ThreadLocalTransport

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """True for a host name or address that can only mean this machine (127.0.0.0/8, ::1,
    localhost). No DNS lookup: a name that merely resolves to 127.0.0.1 is not trusted."""
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _ConnectionTrace:
    """httpcore's `trace` extension for one request: notes whether it opened a connection.

    An error before the reply on a connection it did NOT open means the pooled connection was
    found closed by the server only when reused (httpcore checks idle ones before reuse, but
    the server's close can cross our request on the wire)."""

    __slots__ = ("opened",)

    def __init__(self) -> None:
        self.opened = False

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event.startswith("connection.connect_tcp."):
            self.opened = True


class VendorTransport(httpx.BaseTransport):
    """The default transport of a `CallRunner`: picks the route of each request.

    Args:
        max_connections: the size of httpx's pool (connections open at once, all kept alive
            between calls): the run's concurrency.
        fast_loopback: send plain HTTP to loopback through `ThreadLocalTransport` (default).
            False sends everything through httpx (the benchmark compares both).

    The httpx client is built on first use, so a run against the simulator alone never loads
    a CA bundle; environment variables are read then. `close()` closes both; a request after
    it builds a fresh client (a straggling thread gets a reply, not a crash).
    """

    def __init__(self, *, max_connections: int = 64, fast_loopback: bool = True) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.max_connections = max_connections
        self.fast_loopback = fast_loopback
        self._fast = ThreadLocalTransport()
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._loopback: dict[str, bool] = {}  # host -> is_loopback, a few entries per run

    def _is_fast(self, url: httpx.URL) -> bool:
        if not self.fast_loopback or url.scheme != "http":
            return False
        host = url.host
        known = self._loopback.get(host)
        if known is None:
            known = self._loopback[host] = is_loopback(host)
        return known

    def client(self) -> httpx.Client:
        """The httpx client for everything but loopback HTTP (built on first use)."""
        client = self._client
        if client is None:
            with self._lock:
                client = self._client
                if client is None:
                    size = self.max_connections
                    client = self._client = httpx.Client(
                        trust_env=True,
                        limits=httpx.Limits(max_connections=size,
                                            max_keepalive_connections=size),
                        # The call layer sets each request's timeouts (its `timeout`
                        # extension) and decides about redirects (none) and retries.
                        timeout=None,
                        follow_redirects=False,
                    )
        return client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request by its route; the response body is still to be read.

        Raises:
            httpx.TransportError: what failed; `StaleConnectionError` for a kept-alive
                connection the server had closed before answering.
        """
        if self._is_fast(request.url):
            return self._fast.handle_request(request)
        trace = _ConnectionTrace()
        request.extensions["trace"] = trace
        try:
            return self.client().send(request, stream=True)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as error:
            # Raised before any reply arrived (send returns once the headers are in): on a
            # connection this request did not open, the server had closed it.
            if not trace.opened:
                raise StaleConnectionError(
                    f"the server had closed the kept-alive connection before it could answer "
                    f"({error})", request=request,
                ) from error
            raise

    def close(self) -> None:
        """Close every idle connection of both routes. The transport stays usable."""
        with self._lock:
            client, self._client = self._client, None
        self._fast.close()
        if client is not None:
            client.close()
