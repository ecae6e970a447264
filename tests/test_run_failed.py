"""A run in which every call of a critic failed ends `failed` with the cause (issue 22, item 7).

Before, a critic that could not answer at all (its key missing, a reply it could never give)
left the run `done` with exit code 0, and the panel's votes were short of it unnoticed. Now
the run is failed, the status line names the critic and its first failure, the CLI exits 2, the
Run page says the same, the other critics' verdicts stay stored and reviewable, and a resume
once the cause is fixed sends only the failed calls.
"""

from __future__ import annotations

import pathlib

import pytest
import yaml

from judging.panel.panel_files import load_panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.cli import main
from judging.simulator.sim_server import Profile, SimulatorServer
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.calls import successful_pairs
from storage.results.consensus import decision_counts
from storage.results.runs import get_run
from tests.fixtures_simulator import SimulatorFactory

N_ITEMS = 8
KEY_VARIABLE = "JURYBOX_TEST_NO_SUCH_KEY"


def panel_dict(server: SimulatorServer, *, second: dict[str, object]) -> dict[str, object]:
    critics = [{"name": "sound", "vendor": "custom", "base_url": server.base_url,
                "model": "sound", "prompt_template": "Judge {text}", "timeout_s": 10},
               {"name": "broken", "vendor": "custom", "base_url": server.base_url,
                "model": "broken", "prompt_template": "Judge {text}", "timeout_s": 10, **second}]
    return {"schema_version": 1, "name": "p", "scale": {"kind": "nominal",
            "labels": ["KEEP", "REJECT"]}, "critics": critics}


def write_inputs(tmp_path: pathlib.Path, panel: dict[str, object]) -> tuple[pathlib.Path,
                                                                             pathlib.Path]:
    data = tmp_path / "d.csv"
    data.write_text("id,text\n" + "".join(f"i{n},item {n}\n" for n in range(N_ITEMS)),
                    encoding="utf-8")
    panel_file = tmp_path / "p.yaml"
    panel_file.write_text(yaml.safe_dump(panel), encoding="utf-8")
    return data, panel_file


@pytest.fixture
def server(simulator_factory: SimulatorFactory) -> SimulatorServer:
    # "broken" answers with broken JSON every time: a critic that never gives a verdict.
    return simulator_factory(profiles={"sound": Profile(accuracy=0.9),
                                       "broken": Profile(rate_malformed=1.0)})


def test_a_critic_with_no_verdict_fails_the_run_and_keeps_the_others(
        tmp_path: pathlib.Path, server: SimulatorServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    # Its key is not set: every call fails before it is sent (a model that answers fine).
    panel = load_panel(yaml.safe_dump(panel_dict(
        server, second={"api_key_env": KEY_VARIABLE, "model": "answers-fine"})))
    data, _ = write_inputs(tmp_path, panel_dict(server, second={}))
    db_path = tmp_path / "runs.db"
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="d")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    job = JobRegistry().start_run(str(db_path), run_id, concurrency=8)
    assert job.wait(60)
    run = get_run(db, run_id)
    assert (run["status"], job.progress().status) == ("failed", "failed")
    assert run["error"] == job.progress().error
    assert run["error"].startswith(f"Critic 'broken' gave no verdict: all {N_ITEMS} of its "
                                   "calls failed (the first: ")
    assert KEY_VARIABLE in run["error"]  # the cause, as the call said it
    assert "The other critics' verdicts are kept and can be reviewed" in run["error"]
    # The sound critic's verdicts are stored, and every item has a decision to review.
    assert {critic for _, critic in successful_pairs(db, run_id)} == {"sound"}
    assert sum(n for *_, n, _ in decision_counts(db, run_id)) == N_ITEMS

    # The key set, a resume sends only the failed calls and the run is done.
    monkeypatch.setenv(KEY_VARIABLE, "sk-test-local-only")
    sent_before = server.stats()["total"]
    job = JobRegistry().resume(str(db_path), run_id, concurrency=8)
    assert job.wait(60)
    assert get_run(db, run_id)["status"] == "done" or pytest.fail(get_run(db, run_id)["error"])
    assert server.stats()["total"] - sent_before == N_ITEMS  # the broken critic's calls only


def test_the_cli_exits_2_and_the_run_page_says_failed(
        tmp_path: pathlib.Path, server: SimulatorServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fixtures_app import _clear_streamlit_caches
    from tests.test_app_smoke import no_exception, open_page

    db_path = tmp_path / "cli.db"
    data, panel_file = write_inputs(tmp_path, panel_dict(server, second={}))
    code = main(["judge", "--data", str(data), "--panel", str(panel_file), "--db", str(db_path),
                 "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "Critic 'broken' gave no verdict: all 8 of its calls failed" in err
    assert "jurybox: error: run 1 failed:" in err and "Traceback" not in err
    assert "sound" in out and "Consensus:" in out  # the summary of what the run did judge
    assert get_run(open_db(db_path), 1)["status"] == "failed"

    # The app reads the same run the same way.
    monkeypatch.setenv("JURYBOX_DB", str(db_path))
    monkeypatch.chdir(pathlib.Path(__file__).resolve().parent.parent)
    _clear_streamlit_caches()
    try:
        at = open_page("run", query={"run": "1"})
        no_exception(at)
        assert any(t.value.startswith("Run #1 · failed") for t in at.text)
        assert any("Critic 'broken' gave no verdict" in e.value for e in at.error)
    finally:
        _clear_streamlit_caches()


def test_a_critic_that_fails_only_sometimes_leaves_the_run_done(
        tmp_path: pathlib.Path, simulator_factory: SimulatorFactory,
        capsys: pytest.CaptureFixture[str]) -> None:
    server = simulator_factory(profiles={"sound": Profile(), "broken": Profile(rate_malformed=0.5)},
                               seed=3)
    data, panel_file = write_inputs(tmp_path, panel_dict(server, second={}))
    code = main(["judge", "--data", str(data), "--panel", str(panel_file),
                 "--db", str(tmp_path / "cli.db"), "--quiet"])
    out, _ = capsys.readouterr()
    db = open_db(tmp_path / "cli.db")
    broken_ok = sum(1 for _, critic in successful_pairs(db, 1) if critic == "broken")
    assert 0 < broken_ok < N_ITEMS, "the seed must give the broken critic some of each"
    assert code == 0 and get_run(db, 1)["status"] == "done"
