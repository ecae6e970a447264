"""Paid twice after kill -9: SIGKILL a running job at random moments, resume, and count the
replies the vendor made twice — against the calls in flight at each kill.

A call in flight when the process dies is paid again on resume whatever we do; a reply that
arrived but was not yet written is the part the writer's group commit controls. Both writer
settings run side by side (the 20 ms group commit of today, the 0.25 s batches of before), on
the simulator in this (unkilled) process, the job in a child process.

Figures (per setting, FLUSH = 20ms or 250ms):
    kill_FLUSH_paid_twice_per_kill   median over the kills of replies paid twice per kill
    kill_FLUSH_in_flight_per_kill    median of the calls in flight at the kill (the floor)
    kill_FLUSH_paid_twice_total / kill_FLUSH_in_flight_total   sums over every kill
    kill_FLUSH_duplicates_seen       the simulator's own count of distinct requests answered
                                     more than once (a reply lost at two kills counts once
                                     here and twice in paid_twice_total: at most that)
"""

from __future__ import annotations

import os
import pathlib
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

from benchmarks.figures import bench_line

ROOT = pathlib.Path(__file__).resolve().parent.parent
KILLS = 8
N_ITEMS = 600
CONCURRENCY = 16
LATENCY_MS = 50

CHILD = textwrap.dedent(
    """
    import sys
    from judging.runs.background.jobs import JobRegistry
    registry = JobRegistry(flush_interval_s=float(sys.argv[4]))
    db, run_id, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    start = registry.start_run if sys.argv[5] == "start" else registry.resume
    job = start(db, run_id, concurrency=concurrency)
    job.wait()
    """
)


def _stored(db_path: str, run_id: int) -> int:
    from storage.db import open_db

    db = open_db(db_path)
    try:
        return int(db.execute("SELECT count(*) FROM calls WHERE run_id = ? AND failure IS NULL",
                              [run_id]).fetchone()[0])
    finally:
        db.close()


def _one_setting(flush_s: float, rng: random.Random) -> tuple[list[int], list[int], int]:
    from judging.runs.background.jobs import JobRegistry, mark_interrupted_runs, prepare_run
    from judging.simulator.sim_server import Profile, SimulatorServer
    from storage.datasets.dataset_store import save_dataset
    from storage.db import open_db
    from tests.fixtures_storage import make_parsed, tiny_panel

    sim = SimulatorServer(profiles={"perfect": Profile(accuracy=1.0)}, gold=None,
                          latency_ms=LATENCY_MS).start()
    tmp = tempfile.mkdtemp(prefix="jurybox-kill-")
    db_path = str(pathlib.Path(tmp) / "kill.db")
    try:
        db = open_db(db_path)
        dataset_id = save_dataset(db, make_parsed(N_ITEMS, salt=f"kill{flush_s}")).id
        run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(sim.base_url))
        db.close()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        paid_twice: list[int] = []
        in_flight: list[int] = []
        lost_so_far = 0
        for kill in range(KILLS):
            child = subprocess.Popen(
                [sys.executable, "-c", CHILD, db_path, str(run_id), str(CONCURRENCY),
                 str(flush_s), "start" if kill == 0 else "resume"],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            # Wait until the job is sending, then a random moment more.
            while sim.stats()["in_flight"] == 0 and child.poll() is None:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.1, 0.6))
            in_flight.append(int(sim.stats()["in_flight"]))
            child.send_signal(signal.SIGKILL)
            child.wait()
            while sim.stats()["in_flight"]:  # replies to the dead process are made all the same
                time.sleep(0.005)
            # Every success the vendor made is stored, or will be asked for again on resume.
            lost = int(sim.stats()["successes"]) - _stored(db_path, run_id) - lost_so_far
            paid_twice.append(lost)
            lost_so_far += lost
            db = open_db(db_path)
            mark_interrupted_runs(db, set())
            db.close()
        job = JobRegistry(flush_interval_s=flush_s).resume(db_path, run_id,
                                                           concurrency=CONCURRENCY)
        job.wait()
        return paid_twice, in_flight, int(sim.stats()["duplicate_successes"])
    finally:
        sim.stop()


def run() -> None:
    rng = random.Random(11)
    for flush_s, name in ((0.02, "20ms"), (0.25, "250ms")):
        paid, flight, dupes = _one_setting(flush_s, rng)
        bench_line(f"kill_{name}_paid_twice_per_kill", statistics.median(paid), "calls")
        bench_line(f"kill_{name}_in_flight_per_kill", statistics.median(flight), "calls")
        bench_line(f"kill_{name}_paid_twice_total", sum(paid), "calls")
        bench_line(f"kill_{name}_in_flight_total", sum(flight), "calls")
        bench_line(f"kill_{name}_duplicates_seen", dupes, "calls")
