"""AppTest: "Check critics" on the Panel and Run pages shows one line per critic (green when
it can answer, red with the cause and the fix), and the Run page warns before a start when
the last check of the panel found a critic that cannot answer, without refusing the start."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterable
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from judging.panel.panel_files import dump_panel, panel_hash
from judging.panel.panel_model import Panel
from judging.simulator.sim_server import Profile, SimulatorServer
from storage.db import open_db
from storage.panels import save_panel
from storage.results.runs import list_runs
from tests.fixtures_simulator import SimulatorFactory
from tests.test_app_smoke import no_exception, open_page

UNSET = "JURYBOX_CHECK_PAGE_UNSET_KEY"


def _panel(server: SimulatorServer, *names: str, **settings: object) -> Panel:
    """A panel of critics on the simulator: "ready", and "keyless" whose key is not set."""
    def at(name: str) -> dict[str, object]:
        keyless = {"api_key_env": UNSET} if name == "keyless" else {}
        return {"name": name, "vendor": "custom", "base_url": server.base_url, "model": "good",
                "prompt_template": "Keep {candidate_class}?", "timeout_s": 10, **keyless,
                **settings}

    return Panel.model_validate({
        "name": "checked", "scale": {"kind": "nominal", "labels": ["KEEP", "REJECT"]},
        "critics": [at(name) for name in names or ("ready", "keyless")],
    })


def _text(elements: Iterable[Any]) -> list[str]:
    """Alert bodies as the user reads them (`plain` escapes punctuation for markdown)."""
    return [str(e.value).replace("\\", "").replace("\u2060", "") for e in elements]


def _warnings(at: AppTest) -> list[str]:
    return [w for w in _text(at.warning) if "cannot answer" in w]


@pytest.fixture
def server(simulator_factory: SimulatorFactory, monkeypatch: pytest.MonkeyPatch
           ) -> SimulatorServer:
    monkeypatch.delenv(UNSET, raising=False)
    return simulator_factory(profiles={"good": Profile(accuracy=1.0)})


def test_panel_page_checks_every_critic_and_the_run_page_warns_before_start(
    demo_db: tuple[pathlib.Path, int], server: SimulatorServer,
) -> None:
    at = open_page("panel")
    at.file_uploader(key="panel_yaml_upload").upload(
        "checked.yaml", dump_panel(_panel(server)).encode(), "application/x-yaml").run()
    at.button(key="import_panel_yaml").click().run()
    no_exception(at)
    assert not at.button(key="check_critics").disabled
    at.button(key="check_critics").click().run()
    no_exception(at)
    (ok,) = _text(at.success)
    assert re.match(r"critic 'ready': OK \((KEEP|REJECT) in \d+ ms, cost unknown", ok), ok
    (bad,) = [e for e in _text(at.error) if "keyless" in e]
    assert bad.startswith(f"critic 'keyless': no API key: the variable {UNSET} is not set"), bad
    assert server.stats()["total"] == 1, "one request: the keyless critic sends nothing"

    at.button(key="check_critics").click().run()  # again: answered from the app's memory
    assert server.stats()["total"] == 1
    assert "from the cache: nothing sent or paid" in _text(at.success)[0]

    # The Run page offers the unsaved panel and names the critic that cannot answer.
    at.switch_page("pages/run.py").run()
    no_exception(at)
    (warning,) = _warnings(at)
    assert "'keyless' cannot answer" in warning and "start anyway" in warning
    assert "'ready'" not in warning


def test_run_page_checks_before_start_and_a_warning_never_blocks_the_start(
    demo_db: tuple[pathlib.Path, int], server: SimulatorServer,
) -> None:
    from pages.ui.state import registry

    path, first = demo_db
    panel = _panel(server)
    version = panel_hash(panel)
    save_panel(open_db(path), panel_hash=version, name=panel.name, yaml_text=dump_panel(panel))
    at = open_page("run")
    at.selectbox(key="new_run_panel").set_value(version).run()
    no_exception(at)
    assert _warnings(at) == [], "no warning before a check"
    at.button(key="check_run_critics").click().run()
    no_exception(at)
    assert any(s.startswith("critic 'ready': OK") for s in _text(at.success))
    assert any(e.startswith("critic 'keyless': no API key") for e in _text(at.error))
    (warning,) = _warnings(at)
    assert "'keyless'" in warning

    at.button(key="start_run").click().run()  # the user insists: the run starts
    no_exception(at)
    new = int(at.query_params["run"])
    assert new != first and next(r["id"] for r in list_runs(open_db(path))) == new
    job = registry().get(new)
    assert job is not None
    job.cancel()
    assert job.wait(60)


def test_a_check_stays_under_the_run_pages_budget_cap(
    demo_db: tuple[pathlib.Path, int], server: SimulatorServer,
) -> None:
    path, _ = demo_db
    panel = _panel(server, "ready", price_in_per_mtok=100.0, price_out_per_mtok=100.0)
    version = panel_hash(panel)
    save_panel(open_db(path), panel_hash=version, name=panel.name, yaml_text=dump_panel(panel))
    at = open_page("run")
    at.selectbox(key="new_run_panel").set_value(version).run()
    at.number_input(key="new_run.budget_usd").set_value(0.0001).run()
    at.button(key="check_run_critics").click().run()
    no_exception(at)
    (refused,) = _text(at.error)
    assert "not sent: it could cost more than the check's budget cap of $0.0001" in refused
    assert server.stats()["total"] == 0


def test_panel_page_says_what_is_not_sent_for_each_model(demo_db: tuple[pathlib.Path, int]
                                                         ) -> None:
    """Decided when the panel is built, before any call: a reasoning model's critic says its
    temperature is not sent; a critic whose model takes everything says nothing."""
    panel = Panel.model_validate({
        "name": "today", "scale": {"kind": "nominal", "labels": ["KEEP", "REJECT"]},
        "critics": [
            {"name": "o3", "vendor": "openai", "model": "o3",
             "prompt_template": "Keep {candidate_class}?"},
            {"name": "opus", "vendor": "anthropic", "model": "claude-opus-4-7",
             "prompt_template": "Keep {candidate_class}?"},
            {"name": "plain", "vendor": "simulated", "model": "good",
             "prompt_template": "Keep {candidate_class}?"}]})
    at = open_page("panel")
    at.file_uploader(key="panel_yaml_upload").upload(
        "today.yaml", dump_panel(panel).encode(), "application/x-yaml").run()
    at.button(key="import_panel_yaml").click().run()
    no_exception(at)
    captions = [str(c.value).replace("\\", "") for c in at.caption]
    (o3,) = [c for c in captions if c.startswith("o3:")]
    assert "temperature" in o3 and "max_completion_tokens" in o3
    (opus,) = [c for c in captions if c.startswith("opus:")]
    assert "temperature and top_p are not sent for claude-opus-4-7" in opus
    assert not [c for c in captions if c.startswith("plain:")]
