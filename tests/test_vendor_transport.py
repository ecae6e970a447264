"""Real vendors go through httpx with `trust_env`: a CONNECT proxy, NO_PROXY, SSL_CERT_FILE /
SSL_CERT_DIR, a pool sized to the run; plain HTTP to loopback takes the fast transport. Both
routes keep the deadline, and both report a stale keep-alive connection. All on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from judging.engine.calls import CallRunner, RetryPolicy, VendorTransport, is_loopback
from judging.engine.calls.attempt import make_route, send_once
from judging.engine.calls.deadline import DeadlineExceededError, Watchdog
from judging.engine.panel_runner import judge_many
from judging.engine.transport import StaleConnectionError, ThreadLocalTransport
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.verdicts import FailureKind, Item
from tests.fixtures_calls import chat_body
from tests.fixtures_network import ConnectProxy, LocalVendor, Reply, SeenRequest

SCALE = Scale(kind="nominal", labels=["KEEP", "REJECT"])
ITEM = Item("i", {"text": "x"})
StartVendor = Callable[..., LocalVendor]
StartProxy = Callable[..., ConnectProxy]


def critic(base_url: str, **overrides: object) -> Critic:
    values: dict[str, object] = {"name": "c", "vendor": "custom", "model": "m",
                                 "prompt_template": "Judge {text}", "base_url": base_url}
    values.update(overrides)
    return Critic(**values)  # type: ignore[arg-type]


def items(n: int) -> list[Item]:
    return [Item(f"i{k}", {"text": f"x{k}"}) for k in range(n)]


# -- routing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("LocalHost", True), ("api.localhost", True),
     ("10.0.0.1", False), ("api.openai.com", False), ("localhost.evil.com", False),
     ("0.0.0.0", False), ("::ffff:8.8.8.8", False)],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_plain_http_to_loopback_takes_the_fast_transport_and_no_proxy(
    local_vendor: StartVendor, connect_proxy: StartProxy, network_env: pytest.MonkeyPatch,
) -> None:
    # A proxy could not reach this machine's loopback: the simulator is called directly even
    # when every proxy variable is set.
    proxy = connect_proxy()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        network_env.setenv(name, proxy.url)
    vendor = local_vendor()
    transport = VendorTransport()
    try:
        with CallRunner(transport=transport) as runner:
            assert runner.call(critic(vendor.base_url), ITEM, SCALE).ok
        assert transport._client is None  # httpx's client was never even built
    finally:
        transport.close()
    assert proxy.connects == [] and proxy.other_requests == []
    assert len(vendor.seen) == 1


# -- proxies and certificates ----------------------------------------------------------------


def test_a_critic_reaches_an_https_vendor_through_a_connect_proxy(
    local_vendor: StartVendor, connect_proxy: StartProxy, network_env: pytest.MonkeyPatch,
    ca_file: Path,
) -> None:
    vendor = local_vendor(tls=True)
    proxy = connect_proxy({"vendor.test:443": ("127.0.0.1", vendor.port)})
    network_env.setenv("HTTPS_PROXY", proxy.url)
    network_env.setenv("SSL_CERT_FILE", str(ca_file))  # the test CA signed vendor.test
    with CallRunner() as runner:
        verdicts = [runner.call(critic("https://vendor.test/v1"), item, SCALE)
                    for item in items(3)]
    assert [v.label for v in verdicts] == ["KEEP"] * 3, [v.message for v in verdicts]
    # One tunnel, kept alive for the three calls; the vendor saw its own name.
    assert proxy.connects == ["vendor.test:443"]
    assert [seen.headers["Host"] for seen in vendor.seen] == ["vendor.test"] * 3
    assert {seen.path for seen in vendor.seen} == {"/v1/chat/completions"}


def test_without_the_ca_variable_the_vendor_certificate_is_refused(
    local_vendor: StartVendor, connect_proxy: StartProxy, network_env: pytest.MonkeyPatch,
) -> None:
    vendor = local_vendor(tls=True)
    proxy = connect_proxy({"vendor.test:443": ("127.0.0.1", vendor.port)})
    network_env.setenv("HTTPS_PROXY", proxy.url)
    with CallRunner(retry=RetryPolicy(max_retries=0)) as runner:
        verdict = runner.call(critic("https://vendor.test/v1"), ITEM, SCALE)
    assert verdict.failure is FailureKind.ERROR
    assert "CERTIFICATE_VERIFY_FAILED" in (verdict.message or "")
    assert proxy.connects == ["vendor.test:443"] and vendor.seen == []


@pytest.mark.parametrize("no_proxy", [None, "127.0.0.1", "example.org, 127.0.0.1"])
def test_no_proxy_hosts_go_direct(
    local_vendor: StartVendor, connect_proxy: StartProxy, network_env: pytest.MonkeyPatch,
    ca_file: Path, no_proxy: str | None,
) -> None:
    vendor = local_vendor(tls=True)
    proxy = connect_proxy()
    network_env.setenv("HTTPS_PROXY", proxy.url)
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    if no_proxy is not None:
        network_env.setenv("NO_PROXY", no_proxy)
    with CallRunner() as runner:
        assert runner.call(critic(vendor.base_url), ITEM, SCALE).ok
    assert len(vendor.seen) == 1
    # Direct when NO_PROXY names the host; otherwise through the proxy (the control case).
    assert proxy.connects == ([] if no_proxy else [f"127.0.0.1:{vendor.port}"])


def test_ssl_cert_dir_is_honoured(local_vendor: StartVendor, network_env: pytest.MonkeyPatch,
                                  ca_file: Path, tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed: cannot name a certificate directory entry")
    # A CA directory holds certificates under their subject hash, as `c_rehash` names them.
    subject_hash = subprocess.run(
        [openssl, "x509", "-hash", "-noout", "-in", str(ca_file)],
        check=True, capture_output=True, text=True, timeout=30,
    ).stdout.strip()
    shutil.copy(ca_file, tmp_path / f"{subject_hash}.0")
    network_env.setenv("SSL_CERT_DIR", str(tmp_path))
    vendor = local_vendor(tls=True)
    with CallRunner() as runner:
        verdict = runner.call(critic(vendor.base_url), ITEM, SCALE)
    assert verdict.ok, verdict.message


@pytest.mark.timeout(60)
def test_the_pool_is_sized_to_the_run(local_vendor: StartVendor,
                                      network_env: pytest.MonkeyPatch, ca_file: Path) -> None:
    """concurrency 32: every worker keeps its connection for the whole run (httpx's default
    pool keeps 20 alive, so the second wave would open 12 new TLS connections)."""
    workers = 32
    wave = threading.Barrier(workers, timeout=20)

    def held(seen: SeenRequest) -> Reply:
        if seen.number > 1:  # after the critic's probe: all 32 in flight at once
            wave.wait()
        return Reply()

    vendor = local_vendor(held, tls=True)
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    panel = Panel(scale=SCALE, critics=[critic(vendor.base_url)])
    results = judge_many(panel, items(1 + 2 * workers), concurrency=workers)
    assert all(v.ok for r in results for v in r.verdicts)
    assert len(vendor.seen) == 1 + 2 * workers
    assert len(vendor.connections) == workers


# -- the deadline on both routes ------------------------------------------------------------


@pytest.fixture(params=["fast", "httpx", "httpx-tls"])
def route_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def transport_for(route_kind: str) -> Iterator[httpx.BaseTransport]:
    transport: httpx.BaseTransport = (
        ThreadLocalTransport() if route_kind == "fast" else VendorTransport(fast_loopback=False)
    )
    yield transport
    transport.close()


@pytest.mark.timeout(20)
def test_the_watchdog_cuts_a_stalled_body_on_every_route(
    local_vendor: StartVendor, network_env: pytest.MonkeyPatch, ca_file: Path, route_kind: str,
    transport_for: httpx.BaseTransport,
) -> None:
    """Socket timeouts of 30 s and a body that stalls for 30 s: only the 0.5 s wall-clock
    deadline can end the read (a missing watchdog fails this test by its timeout)."""
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    vendor = local_vendor(lambda seen: Reply(stall_after=20, stall_s=30),
                          tls=route_kind == "httpx-tls")
    route = make_route(vendor.base_url)
    headers = httpx.Headers(route.headers)
    headers["Content-Length"] = "2"
    watchdog = Watchdog()
    try:
        with pytest.raises(DeadlineExceededError):
            send_once(transport_for, watchdog, route, headers, b"{}",
                      {"connect": 30, "read": 30, "write": 30, "pool": 30}, timeout_s=0.5)
    finally:
        watchdog.close()


@pytest.mark.timeout(20)
@pytest.mark.parametrize("mode", ["trickle", "stall"])
def test_slow_body_through_httpx_hits_the_deadline(
    local_vendor: StartVendor, network_env: pytest.MonkeyPatch, ca_file: Path, mode: str,
) -> None:
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    reply = Reply(trickle_s=0.05) if mode == "trickle" else Reply(stall_after=20, stall_s=5)
    vendor = local_vendor(lambda seen: reply, tls=True)
    with CallRunner(retry=RetryPolicy(max_retries=0)) as runner:
        verdict = runner.call(critic(vendor.base_url, timeout_s=1.0), ITEM, SCALE)
    assert verdict.failure is FailureKind.ERROR and verdict.attempts == 1
    assert "deadline of 1 s" in (verdict.message or "")


# -- vendor edge cases over real sockets, on both routes ---------------------------------------


def _runner(transport: httpx.BaseTransport, waits: list[float]) -> CallRunner:
    return CallRunner(transport=transport, sleep=waits.append, seed=3)


def test_a_stale_keep_alive_connection_is_retried_at_once(
    local_vendor: StartVendor, network_env: pytest.MonkeyPatch, ca_file: Path, route_kind: str,
    transport_for: httpx.BaseTransport,
) -> None:
    """The server answers, keeps the connection open, and closes it when the next request
    arrives (its idle timeout crossing our request): the retry goes at once on a new
    connection, without the backoff a vendor error would cost."""
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    vendor = local_vendor(lambda seen: Reply() if seen.nth_on_connection == 1 else None,
                          tls=route_kind == "httpx-tls")
    waits: list[float] = []
    with _runner(transport_for, waits) as runner:
        first = runner.call(critic(vendor.base_url), items(2)[0], SCALE)
        second = runner.call(critic(vendor.base_url), items(2)[1], SCALE)
    assert first.ok and first.attempts == 1
    assert second.ok and second.attempts == 2, second.message
    assert waits == []  # no backoff
    assert len(vendor.connections) == 2


def test_a_hang_up_on_a_new_connection_still_backs_off(
    local_vendor: StartVendor, network_env: pytest.MonkeyPatch, ca_file: Path, route_kind: str,
    transport_for: httpx.BaseTransport,
) -> None:
    """Only a REUSED connection found closed is stale; a server that hangs up on a fresh one
    is failing, and gets the usual backoff."""
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    vendor = local_vendor(lambda seen: None if seen.number == 1 else Reply(),
                          tls=route_kind == "httpx-tls")
    waits: list[float] = []
    with _runner(transport_for, waits) as runner:
        verdict = runner.call(critic(vendor.base_url), ITEM, SCALE)
    assert verdict.ok and verdict.attempts == 2
    assert len(waits) == 1 and 0.375 <= waits[0] <= 0.5


def test_the_fast_transport_reports_a_stale_connection(local_vendor: StartVendor) -> None:
    vendor = local_vendor(lambda seen: Reply() if seen.nth_on_connection == 1 else None)
    transport = ThreadLocalTransport()
    url = f"{vendor.base_url}/chat/completions"
    try:
        first = transport.handle_request(httpx.Request("POST", url, content=b"{}"))
        first.read()
        first.close()
        with pytest.raises(StaleConnectionError):
            transport.handle_request(httpx.Request("POST", url, content=b"{}"))
    finally:
        transport.close()


def test_a_broken_gzip_body_is_retried(
    local_vendor: StartVendor, network_env: pytest.MonkeyPatch, ca_file: Path, route_kind: str,
    transport_for: httpx.BaseTransport,
) -> None:
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    good = gzip.compress(json.dumps(chat_body('{"label": "REJECT"}')).encode())

    def reply(seen: SeenRequest) -> Reply:
        body = good[:15] + b"garbage" if seen.number == 1 else good
        return Reply(body=body, headers=[("Content-Encoding", "gzip")])

    vendor = local_vendor(reply, tls=route_kind == "httpx-tls")
    waits: list[float] = []
    with _runner(transport_for, waits) as runner:
        verdict = runner.call(critic(vendor.base_url), ITEM, SCALE)
    assert verdict.ok and verdict.label == "REJECT" and verdict.attempts == 2
    assert len(waits) == 1  # retried like a transport error, with its backoff

    always_broken = local_vendor(
        lambda seen: Reply(body=b"\x1f\x8b\x08broken", headers=[("Content-Encoding", "gzip")]),
        tls=route_kind == "httpx-tls",
    )
    with CallRunner(transport=transport_for, sleep=waits.append,
                    retry=RetryPolicy(max_retries=1)) as runner:
        failed = runner.call(critic(always_broken.base_url), ITEM, SCALE)
    assert failed.failure is FailureKind.ERROR and failed.attempts == 2
    assert "could not decode the reply" in (failed.message or "")


def test_one_runner_reaches_loopback_over_http_and_https(
    local_vendor: StartVendor, network_env: pytest.MonkeyPatch, ca_file: Path,
) -> None:
    """https to 127.0.0.1 goes through httpx (verified against SSL_CERT_FILE), plain http to
    it through the fast transport: the same runner reaches both."""
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    plain, tls = local_vendor(), local_vendor(tls=True)
    with CallRunner() as runner:
        assert runner.call(critic(plain.base_url, name="plain"), ITEM, SCALE).ok
        assert runner.call(critic(tls.base_url, name="tls"), ITEM, SCALE).ok
        assert isinstance(runner.transport, VendorTransport)
        assert runner.transport._client is not None


def test_a_closed_transport_stays_usable(local_vendor: StartVendor,
                                         network_env: pytest.MonkeyPatch, ca_file: Path) -> None:
    network_env.setenv("SSL_CERT_FILE", str(ca_file))
    vendor = local_vendor(tls=True)
    runner = CallRunner()
    assert runner.call(critic(vendor.base_url), items(2)[0], SCALE).ok
    runner.close()
    # A straggling worker's call after close gets a verdict, on a fresh client.
    assert runner.call(critic(vendor.base_url), items(2)[1], SCALE).ok
    runner.close()
    assert len(vendor.connections) == 2


def test_pool_size_below_one_is_refused() -> None:
    from judging.errors import ConfigError

    with pytest.raises(ConfigError, match="max_connections"):
        CallRunner(max_connections=0)
    with pytest.raises(ValueError, match="max_connections"):
        VendorTransport(max_connections=0)


def test_tls_to_an_unknown_ca_is_never_sent(local_vendor: StartVendor,
                                            network_env: pytest.MonkeyPatch) -> None:
    vendor = local_vendor(tls=True)
    with CallRunner(retry=RetryPolicy(max_retries=0)) as runner:
        verdict = runner.call(critic(vendor.base_url), ITEM, SCALE)
    assert verdict.failure is FailureKind.ERROR and vendor.seen == []
    assert "CERTIFICATE_VERIFY_FAILED" in (verdict.message or "")
