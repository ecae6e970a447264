"""Throughput of the engine: 1000 items x 3 critics against the simulator at 100 ms latency,
concurrency 64, through `Panel.judge_many`.

The simulator runs in a SUBPROCESS (`python -m judging.runs.commands.cli simulator`), so the CPU time measured
here (`time.process_time`) is the client's alone: pooling, threads, retries, parsing, voting.

Figures (medians of `REPEATS` runs):
    throughput_wall_s              wall time of one run
    throughput_ideal_s             calls x latency / concurrency: what perfect overlap would take
    throughput_ratio               wall / ideal                          (target <= 1.3)
    throughput_client_cpu_ms_per_call  client CPU time / calls           (target <= 1 ms)
    throughput_peak_in_flight      the most requests the simulator saw at once (ideally 64)
    throughput_floor_ratio         the same calls from 64 threads, each with its own stdlib
    throughput_floor_cpu_ms_per_call  http.client connection, measured side by side: what the
                                   machine and the simulator allow, so a bad ratio is blamed
                                   fairly (engine vs machine).
    throughput_load_average        1-minute load average at the end (2 cores, shared machine).
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from benchmarks.figures import bench_line
from judging.engine.panel_runner import judge_many
from judging.panel.panel_model import Panel
from judging.scales import Scale

ITEMS = 1000
CRITICS = 3
CONCURRENCY = 64
LATENCY_MS = 100.0
REPEATS = 3
ROOT = Path(__file__).resolve().parents[1]


class SimulatorProcess:
    """`jurybox simulator` in a child process, with no failures (every model gets the default
    profile) and a fixed latency."""

    def __init__(self, latency_ms: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "judging.runs.commands.cli", "simulator", "--port", "0", "--plain",
             "--latency-ms", str(latency_ms)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.stop()
            raise RuntimeError(f"the simulator did not start: {line!r}")
        self.base_url = line.rsplit(" ", 1)[1].strip()
        self.root_url = self.base_url.removesuffix("/v1")
        self.http = httpx.Client(timeout=10)

    def reset(self) -> None:
        self.http.post(f"{self.root_url}/stats/reset").raise_for_status()

    def stats(self) -> dict[str, Any]:
        return self.http.get(f"{self.root_url}/stats").json()

    def stop(self) -> None:
        if hasattr(self, "http"):
            self.http.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def make_panel(base_url: str) -> Panel:
    return Panel(
        name="throughput",
        scale=Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"]),
        critics=[
            {
                "name": f"critic-{i}",
                "vendor": "custom",
                "base_url": base_url,
                "model": f"bench-{i}",
                "prompt_template": "Candidate class: {text}\nParent: {parent}\nDecide.",
                "timeout_s": 30,
            }
            for i in range(CRITICS)
        ],
    )


def make_items() -> list[dict[str, Any]]:
    return [
        {"id": f"i{i:05d}", "text": f"Candidate class number {i}", "parent": f"Parent {i % 17}"}
        for i in range(ITEMS)
    ]


def run_engine(panel: Panel, items: list[dict[str, Any]]) -> tuple[float, float, int]:
    """One run through the engine: (wall s, client CPU s, failed verdicts)."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    verdicts = judge_many(panel, items, concurrency=CONCURRENCY)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    failed = sum(1 for pv in verdicts for v in pv.verdicts if not v.ok)
    return wall, cpu, failed


def run_floor(panel: Panel, items: list[dict[str, Any]], base_url: str) -> tuple[float, float]:
    """The same requests from 64 threads, each with its own stdlib keep-alive connection: the
    floor this machine and the simulator allow (wall s, CPU s). If this is slow too, blame the
    machine or the simulator, not the engine."""
    bodies = [
        json.dumps({"model": c.model, "messages": c.build_messages(fields, panel.scale)}).encode()
        for fields in ({k: v for k, v in it.items() if k != "id"} for it in items)
        for c in panel.critics
    ]
    url = urlsplit(f"{base_url}/chat/completions")
    local = threading.local()
    connections: list[http.client.HTTPConnection] = []

    def send(body: bytes) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
            connections.append(conn)
        conn.request("POST", url.path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"the simulator answered {response.status}")

    wall0, cpu0 = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(send, bodies))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    for conn in connections:
        conn.close()
    return wall, cpu


def run() -> None:
    sim = SimulatorProcess(LATENCY_MS)
    try:
        panel = make_panel(sim.base_url)
        items = make_items()
        calls = ITEMS * CRITICS
        ideal = calls * LATENCY_MS / 1000.0 / CONCURRENCY
        # Warm-up: imports, first connections, the simulator's threads.
        judge_many(panel, items[:100], concurrency=CONCURRENCY)
        walls, cpus, peaks, floor_walls, floor_cpus = [], [], [], [], []
        for _ in range(REPEATS):
            sim.reset()
            wall, cpu, failed = run_engine(panel, items)
            stats = sim.stats()
            if failed or stats["total"] != calls:
                raise RuntimeError(
                    f"expected {calls} clean calls, the simulator saw {stats['total']} and "
                    f"{failed} verdicts failed"
                )
            walls.append(wall)
            cpus.append(cpu)
            peaks.append(stats["peak_in_flight"])
            sim.reset()
            floor_wall, floor_cpu = run_floor(panel, items, sim.base_url)
            floor_walls.append(floor_wall)
            floor_cpus.append(floor_cpu)
        wall = statistics.median(walls)
        bench_line("throughput_wall_s", wall, "s")
        bench_line("throughput_ideal_s", ideal, "s")
        bench_line("throughput_ratio", wall / ideal, "x")
        cpu_ms = statistics.median(cpus) / calls * 1000
        bench_line("throughput_client_cpu_ms_per_call", cpu_ms, "ms")
        bench_line("throughput_peak_in_flight", statistics.median(peaks), "requests")
        bench_line("throughput_floor_ratio", statistics.median(floor_walls) / ideal, "x")
        bench_line(
            "throughput_floor_cpu_ms_per_call", statistics.median(floor_cpus) / calls * 1000, "ms"
        )
        # The machine is shared: a figure measured under load says so.
        bench_line("throughput_load_average", os.getloadavg()[0], "runnable")
    finally:
        sim.stop()


if __name__ == "__main__":
    run()
