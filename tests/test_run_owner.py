"""One owner per run: simultaneous resumes (app registry and CLI processes) never both run it,
and a run whose owner went silent can be taken over."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import threading
import time

import pytest

from judging.errors import JobConflict
from judging.panel.panel_files import dump_panel, load_panel, panel_hash
from judging.runs.background.jobs import JobRegistry
from judging.simulator.sim_server import Profile
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.panels import save_panel
from storage.results.runs import claim_run, create_run, get_run, heartbeat, set_run_status
from tests.fixtures_suite import trials

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Each trial of the app-and-CLI race starts two CLI processes: a few locally, 20 in CI.
TRIALS = trials(few=4, many=20)


def _run_fixtures(db_path: pathlib.Path, tmp_path: pathlib.Path, base_url: str) -> list[int]:
    """TRIALS interrupted runs over one small dataset; each run's panel differs (its prompt), so
    no run is served from another's cache: a second owner would show as requests sent twice."""
    data = tmp_path / "d.csv"
    data.write_text("id,text\n" + "".join(f"r{i},item {i}\n" for i in range(4)), encoding="utf-8")
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(data, id_column="id", fields=["text"]), name="d")
    runs = []
    for trial in range(TRIALS):
        panel = load_panel(
            "schema_version: 1\nname: p\nscale: {kind: yesno}\ncritics:\n"
            + "".join(f"  - {{name: c{i}, vendor: custom, base_url: '{base_url}', model: m{i},"
                      f" prompt_template: 'Trial {trial}: is this fine? {{text}}'}}\n"
                      for i in range(2))
        )
        version = panel_hash(panel)
        save_panel(db, panel_hash=version, name=f"p{trial}", yaml_text=dump_panel(panel))
        run_id = create_run(db, dataset_id=dataset.id, panel_hash=version, critics=["c0", "c1"])
        set_run_status(db, run_id, "interrupted")
        runs.append(run_id)
    db.close()
    return runs


@pytest.mark.stress
def test_a_claim_is_won_by_exactly_one_of_many_at_once(db_path: str, seed_run) -> None:
    run = seed_run(open_db(db_path))
    won: list[str] = []
    barrier = threading.Barrier(12)

    def claim(n: int) -> None:
        db = open_db(db_path)
        barrier.wait()
        if claim_run(db, run.run_id, ("pending", "interrupted"), f"owner-{n}"):
            won.append(f"owner-{n}")
        db.close()

    for trial in range(TRIALS):
        won.clear()
        set_run_status(open_db(db_path), run.run_id, "interrupted")
        threads = [threading.Thread(target=claim, args=(n,)) for n in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1, (trial, won)
        assert get_run(open_db(db_path), run.run_id)["status"] == "running"


def test_a_run_whose_owner_went_silent_can_be_taken_over(db_path: str, seed_run) -> None:
    run = seed_run(open_db(db_path))
    db = open_db(db_path)
    set_run_status(db, run.run_id, "pending")
    assert claim_run(db, run.run_id, ("pending",), "first")
    assert not claim_run(db, run.run_id, ("pending", "interrupted"), "second")  # alive: no
    assert heartbeat(db, run.run_id, "first")
    # The first owner stops beating; after the lease a resume may take the run over...
    assert claim_run(db, run.run_id, ("interrupted",), "second", take_over_after_s=0.0)
    # ...and the first owner learns it has lost it, and cannot set the run's status any more.
    assert not heartbeat(db, run.run_id, "first")
    set_run_status(db, run.run_id, "done", owner="first")
    assert get_run(db, run.run_id)["status"] == "running"
    set_run_status(db, run.run_id, "done", owner="second")
    assert get_run(db, run.run_id)["status"] == "done"


@pytest.mark.stress
# About 12 s a trial on two cores under a load of 15: the limit stays twice that and more.
@pytest.mark.timeout(60 + 30 * TRIALS)
def test_simultaneous_resumes_from_the_app_and_the_cli_run_a_run_once(
    tmp_path: pathlib.Path, simulator_factory,
) -> None:
    server = simulator_factory(profiles={"m0": Profile(accuracy=1.0), "m1": Profile(accuracy=1.0)},
                               gold=None, latency_ms=100)
    db_path = tmp_path / "runs.db"
    runs = _run_fixtures(db_path, tmp_path, server.base_url)
    registry = JobRegistry()
    winners: dict[int, list[str]] = {}
    for run_id in runs:
        # Two CLI processes and the app's registry, all at once.
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "judging.runs.commands.cli", "resume", str(run_id), "--db", str(db_path),
                 "--quiet"],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            for _ in range(2)
        ]
        time.sleep(0.05 * (run_id % 10))  # the app's click lands anywhere in the race
        won = []
        try:
            job = registry.resume(str(db_path), run_id, concurrency=4)
            job.wait(timeout=60)
            won.append("app")
        except JobConflict as conflict:
            assert "another process started working on it" in str(conflict) \
                or "is running" in str(conflict) or "already" in str(conflict)
        for n, proc in enumerate(procs):
            out, err = proc.communicate(timeout=120)
            if proc.returncode == 0:
                won.append(f"cli{n}")
            else:
                assert "Traceback" not in err, err
                assert "error" in err, err
        winners[run_id] = won
    assert {run_id: len(won) for run_id, won in winners.items()} == {r: 1 for r in runs}, winners
    stats = server.stats()
    assert stats["duplicate_successes"] == 0, stats  # no request was paid twice
    db = open_db(db_path)
    assert {get_run(db, r)["status"] for r in runs} == {"done"}
    assert db.execute("SELECT count(*) FROM calls").fetchone()[0] == TRIALS * 4 * 2


@pytest.fixture
def db_path(tmp_path: pathlib.Path) -> str:
    return str(tmp_path / "owner.db")
