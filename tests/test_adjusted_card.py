"""A parameter a vendor refused is said where the user looks (issue 22, item 1): the run log,
the run's status note, and the critic's own row on the Run page, live and once stored.

The critic is a gateway (`custom`) in front of a reasoning model our request rules cannot
know: the simulator refuses `max_tokens` and `temperature` with the vendor's 400, the call
layer renames and drops them once, and every later item goes out right the first time.
"""

from __future__ import annotations

import logging
import pathlib
import re

import pytest

from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.scales import Scale
from pages.ui.run.progress import critic_rows, stored_critic_rows
from storage.datasets.dataset_store import save_dataset
from storage.db import open_db
from storage.results.calls import adjusted_parameters, call_counts
from storage.results.runs import get_run
from tests.fixtures_simulator import SimulatorFactory
from tests.fixtures_storage import make_parsed

N_ITEMS = 6


def _panel(base_url: str) -> Panel:
    def critic(name: str, model: str) -> Critic:
        return Critic(name=name, vendor="custom", base_url=base_url, model=model,
                      prompt_template="Judge {text}", timeout_s=10)
    return Panel(name="gateway", scale=Scale(kind="nominal", labels=["KEEP", "REJECT"]),
                 critics=[critic("plain", "sim-careful"), critic("gateway", "gpt-5.2")])


@pytest.fixture
def adjusted_run(tmp_path: pathlib.Path, simulator_factory: SimulatorFactory,
                 caplog: pytest.LogCaptureFixture) -> tuple[pathlib.Path, int, object]:
    server = simulator_factory()
    db_path = tmp_path / "adjusted.db"
    db = open_db(db_path)
    dataset_id = save_dataset(db, make_parsed(N_ITEMS), name="d").id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=_panel(server.base_url))
    db.close()
    with caplog.at_level(logging.WARNING, logger="judging.engine.calls.call_runner"):
        job = JobRegistry().start_run(str(db_path), run_id, concurrency=2)
        assert job.wait(60)
    assert server.stats()["bad_requests"] == 2  # each parameter refused once, for the run
    return db_path, run_id, job


def test_the_run_log_and_the_status_note_name_the_adjusted_parameters(
        adjusted_run: tuple[pathlib.Path, int, object], caplog: pytest.LogCaptureFixture
) -> None:
    db_path, run_id, _ = adjusted_run
    logged = [r.getMessage() for r in caplog.get_records("setup")  # the fixture ran the run
              if "critic 'gateway'" in r.getMessage()]
    assert len(logged) == 2, logged  # once per parameter, never once per item
    assert any("max_completion_tokens" in line for line in logged)
    assert any("temperature" in line for line in logged)
    run = get_run(open_db(db_path), run_id)
    assert run["status"] == "done"
    assert "Parameters the vendors refused, dropped or renamed for the run: gateway:" in (
        run["error"] or "")


def test_the_critics_row_says_what_was_adjusted_live_and_stored(
        adjusted_run: tuple[pathlib.Path, int, object]) -> None:
    db_path, run_id, job = adjusted_run
    live = {row["critic"]: row for row in critic_rows(job.progress())}  # type: ignore[attr-defined]
    assert "max_completion_tokens" in live["gateway"]["adjusted"]
    assert "temperature" in live["gateway"]["adjusted"]
    assert live["plain"]["adjusted"] == ""

    db = open_db(db_path)
    stored = adjusted_parameters(db, run_id)
    assert set(stored) == {"gateway"} and len(stored["gateway"]) == 2
    rows = {row["critic"]: row for row in stored_critic_rows(
        get_run(db, run_id), call_counts(db, run_id), stored)}
    assert "max_completion_tokens" in rows["gateway"]["adjusted"]
    assert rows["plain"]["adjusted"] == ""
    # A run with nothing adjusted keeps its table as it was.
    assert "adjusted" not in stored_critic_rows(get_run(db, run_id), call_counts(db, run_id),
                                                {})[0]


def test_the_run_page_shows_it_on_the_critics_row(
        adjusted_run: tuple[pathlib.Path, int, object], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fixtures_app import _clear_streamlit_caches
    from tests.test_app_smoke import no_exception, open_page

    db_path, run_id, _ = adjusted_run
    monkeypatch.setenv("JURYBOX_DB", str(db_path))
    monkeypatch.chdir(pathlib.Path(__file__).resolve().parent.parent)
    _clear_streamlit_caches()
    try:
        at = open_page("run", query={"run": str(run_id)})
        no_exception(at)
        tables = [frame.value for frame in at.dataframe]
        critic_tables = [t for t in tables if "critic" in t.columns and "adjusted" in t.columns]
        assert critic_tables, [list(t.columns) for t in tables]
        cells = dict(zip(critic_tables[0]["critic"], critic_tables[0]["adjusted"], strict=True))
        assert "max_completion_tokens" in cells["gateway"] and cells["plain"] == ""
    finally:
        _clear_streamlit_caches()


def test_the_cli_says_each_adjusted_parameter_once_whole_and_apart(
        tmp_path: pathlib.Path, simulator_factory: SimulatorFactory) -> None:
    """`jurybox judge`, in its own process (so its own stderr, not pytest's log capture): each
    refused parameter is said once (not in the live log and again in the closing note), the
    notes are separate sentences, and the vendor's words are not cut mid-word."""
    import subprocess
    import sys

    import yaml

    server = simulator_factory()
    panel = tmp_path / "panel.yaml"
    panel.write_text(yaml.safe_dump(_panel(server.base_url).model_dump(
        mode="json", exclude_defaults=True)), encoding="utf-8")
    data = tmp_path / "data.csv"
    data.write_text("id,text\n" + "".join(f"r{i},thing {i}\n" for i in range(N_ITEMS)),
                    encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "judging.runs.commands.cli", "judge", "--data", str(data), "--panel",
         str(panel), "--quiet", "--db", str(tmp_path / "cli.db")],
        cwd=pathlib.Path(__file__).resolve().parents[1], capture_output=True, text=True,
        timeout=120)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert said.count("refused 'max_tokens'") == 1, said
    assert said.count("refused 'temperature'") == 1, said
    note = next(line for line in said.splitlines() if "refused 'max_tokens'" in line)
    # One sentence per parameter, each ending where its words end.
    assert ".) gpt-5.2 refused" not in note and ") gpt-5.2 refused" not in note
    assert "invalid_request_error" in note or "…)" in note
    for cut in re.findall(r"(\S+)…\)", note):
        assert cut in note.replace("…", " "), cut
