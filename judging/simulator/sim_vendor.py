"""The built-in simulated vendor: one process-wide simulator serving the demo's critics.

Why its own module: the simulator is a general OpenAI-compatible test server and knows nothing
of the demo; the demo's data describes its critics with the simulator's `Profile`. This is the
one place that puts the two together, for the "simulated" vendor preset and the app.
"""

from __future__ import annotations

import atexit
import threading

from judging.demo import demo_gold, demo_profiles
from judging.simulator.sim_server import SimulatorServer

_shared: SimulatorServer | None = None
_shared_lock = threading.Lock()


def shared_simulator() -> SimulatorServer:
    """The process-wide simulator, started on first use and stopped at interpreter exit.

    It knows the demo panel's models and the demo dataset's gold labels. The vendor preset
    "simulated" and the app point their critics at its `base_url`. Thread-safe.

    Returns:
        The running shared `SimulatorServer`.
    """
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            server = SimulatorServer(profiles=demo_profiles(), gold=demo_gold(), seed=0)
            server.start()
            atexit.register(server.stop)
            _shared = server
        return _shared
