"""The two transports side by side: the fast loopback `ThreadLocalTransport` and httpx's own pool
(what real vendors go through), each carrying the same 300 calls from 64 threads through
`CallRunner.call` to the simulator at 100 ms latency.

The simulator runs in a SUBPROCESS (see `bench_throughput.SimulatorProcess`), so the CPU time
measured here is the client's alone. Each repeat builds a fresh runner per transport (a run
does) and the two alternate, so load on the shared machine falls on both alike.

Figures (medians of `REPEATS` runs):
    transport_ideal_wall_s           calls x latency / threads: what perfect overlap would take
    transport_fast_wall_s            wall time for the calls, fast loopback transport
    transport_httpx_wall_s           the same through httpx.Client (trust_env, pool of 64)
    transport_fast_cpu_ms_per_call   client CPU per call, fast loopback transport
    transport_httpx_cpu_ms_per_call  client CPU per call through httpx
    transport_httpx_cpu_ratio        httpx / fast, per call
    transport_load_average           1-minute load average at the end (2 cores, shared)
"""

from __future__ import annotations

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.bench_throughput import SimulatorProcess
from benchmarks.figures import bench_line
from judging.engine.calls import CallRunner, VendorTransport
from judging.panel.critics import Critic
from judging.scales import Scale
from judging.verdicts import Item

CALLS = 300
THREADS = 64
LATENCY_MS = 100.0
REPEATS = 5
SCALE = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])


def run_calls(base_url: str, fast_loopback: bool) -> tuple[float, float]:
    """`CALLS` calls from `THREADS` threads on a fresh runner: (wall s, client CPU s)."""
    critic = Critic(name="bench", vendor="custom", base_url=base_url, model="bench",
                    prompt_template="Candidate class: {text}\nDecide.", timeout_s=30)
    items = [Item(f"i{i:04d}", {"text": f"Candidate class number {i}"}) for i in range(CALLS)]
    transport = VendorTransport(max_connections=THREADS, fast_loopback=fast_loopback)
    with CallRunner(transport=transport) as runner:
        # The critic's probe call (the gate lets the first call of a critic go alone).
        if not runner.call(critic, Item("warm", {"text": "warm-up"}), SCALE).ok:
            raise RuntimeError("the warm-up call failed")
        wall0, cpu0 = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(THREADS) as pool:
            verdicts = list(pool.map(lambda item: runner.call(critic, item, SCALE), items))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    transport.close()
    failed = [v.message for v in verdicts if not v.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} calls failed, e.g. {failed[0]}")
    return wall, cpu


def run() -> None:
    sim = SimulatorProcess(LATENCY_MS)
    try:
        results: dict[bool, tuple[list[float], list[float]]] = {True: ([], []), False: ([], [])}
        run_calls(sim.base_url, True)  # warm-up: imports, the simulator's threads
        run_calls(sim.base_url, False)
        for repeat in range(REPEATS):
            for fast in ((True, False) if repeat % 2 == 0 else (False, True)):
                wall, cpu = run_calls(sim.base_url, fast)
                results[fast][0].append(wall)
                results[fast][1].append(cpu)
        ideal = CALLS * LATENCY_MS / 1000.0 / THREADS
        fast_cpu = statistics.median(results[True][1]) / CALLS * 1000
        httpx_cpu = statistics.median(results[False][1]) / CALLS * 1000
        bench_line("transport_ideal_wall_s", ideal, "s")
        bench_line("transport_fast_wall_s", statistics.median(results[True][0]), "s")
        bench_line("transport_httpx_wall_s", statistics.median(results[False][0]), "s")
        bench_line("transport_fast_cpu_ms_per_call", fast_cpu, "ms")
        bench_line("transport_httpx_cpu_ms_per_call", httpx_cpu, "ms")
        bench_line("transport_httpx_cpu_ratio", httpx_cpu / fast_cpu, "x")
        bench_line("transport_load_average", os.getloadavg()[0], "runnable")
    finally:
        sim.stop()


if __name__ == "__main__":
    run()
