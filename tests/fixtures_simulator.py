"""Fixtures for tests that talk to the simulated vendor over real HTTP on 127.0.0.1.

- `simulator`: a running `SimulatorServer` with the demo profiles (sim-careful, sim-lenient,
  sim-strict, sim-flaky) and the demo gold labels, 1 ms latency, seed 0. Any other model name
  gets the default profile (80% accurate, no failures). Stopped after the test.
- `simulator_factory`: `simulator_factory(profiles=..., gold=..., seed=..., latency_ms=...)`
  starts a server with custom profiles (latency defaults to 1 ms so tests stay fast); every
  server it made is stopped after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from judging.demo import demo_gold, demo_profiles
from judging.simulator.sim_server import Profile, SimulatorServer

SimulatorFactory = Callable[..., SimulatorServer]


@pytest.fixture
def simulator_factory() -> Iterator[SimulatorFactory]:
    servers: list[SimulatorServer] = []

    def make(
        profiles: dict[str, Profile | dict[str, Any]] | None = None,
        gold: dict[str, str] | None = None,
        seed: int = 0,
        latency_ms: float | None = 1.0,
    ) -> SimulatorServer:
        server = SimulatorServer(profiles=profiles, gold=gold, seed=seed, latency_ms=latency_ms)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def simulator(simulator_factory: SimulatorFactory) -> SimulatorServer:
    return simulator_factory(profiles=demo_profiles(), gold=demo_gold())
