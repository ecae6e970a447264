"""Budget caps (issue 11 part 4): a run never passes its cap in dollars or tokens; it stops
with the reason ("budget reached"), resumes with a higher cap without paying any call twice;
a dollar cap refuses critics it cannot price; caps are validated with sentences."""

from __future__ import annotations

import pathlib

import pydantic
import pytest

from judging.engine.budget import BudgetCap, BudgetGuard
from judging.engine.ledger import Ledger
from judging.errors import ConfigError
from judging.panel.panel_files import load_panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.simulator.sim_server import Profile
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.calls import successful_pairs
from storage.results.runs import get_run

N_ITEMS = 40


def test_a_guard_reserves_the_worst_case_and_refuses_what_could_pass_the_cap():
    guard = BudgetGuard(BudgetCap(usd=1.0, tokens=1000), spent_usd=0.5, spent_tokens=100)
    worst = BudgetGuard.worst_case(prompt_chars=400, max_tokens=200, price_in=1000.0,
                                   price_out=1000.0)
    assert (worst.tokens, worst.usd) == (300, pytest.approx(0.3))
    held = guard.reserve(worst)
    assert held is not None and guard.reserved_tokens == 300
    assert guard.reserve(worst) is None and guard.reached  # 0.5 + 0.3 + 0.3 > 1.0
    guard.settle(held, usd=0.05, tokens=150)
    assert (guard.spent_usd, guard.spent_tokens, guard.reserved_tokens) == \
        (pytest.approx(0.55), 250, 0)
    assert guard.summary().startswith("Budget reached: $0.5500 of $1.0000 and 250 of 1,000")


def test_an_unpriced_call_counts_against_the_token_cap_only():
    guard = BudgetGuard(BudgetCap(usd=0.01, tokens=500))
    worst = BudgetGuard.worst_case(prompt_chars=40, max_tokens=100, price_in=None, price_out=None)
    assert guard.reserve(worst) is not None and guard.unpriced == 1
    assert "1 calls had no price" in guard.summary()


@pytest.mark.parametrize(("cap", "error"), [
    ({}, ConfigError), ({"usd": 0}, pydantic.ValidationError),
    ({"tokens": -5}, pydantic.ValidationError), ({"usd": float("inf")}, pydantic.ValidationError),
])
def test_a_cap_that_is_no_limit_is_refused(cap, error):
    with pytest.raises(error):
        BudgetCap(**cap)


def _setup(tmp_path: pathlib.Path, server, priced: bool) -> tuple[pathlib.Path, int, object]:
    data = tmp_path / "d.csv"
    data.write_text("id,text\n" + "".join(f"i{n:02d},item text {n}\n" for n in range(N_ITEMS)),
                    encoding="utf-8")
    prices = ", price_in_per_mtok: 1000, price_out_per_mtok: 2000" if priced else ""
    panel = load_panel(
        "schema_version: 1\nname: paid\nscale: {kind: nominal, labels: [KEEP, REJECT]}\n"
        "critics:\n" + "".join(
            f"  - {{name: {m}, vendor: custom, base_url: '{server.base_url}', model: {m},"
            f" max_tokens: 100, prompt_template: 'Judge {{text}}'{prices}}}\n"
            for m in ("a", "b")))
    db_path = tmp_path / "b.db"
    dataset = save_dataset(open_db(db_path), read_dataset(data, id_column="id"), name="d")
    return db_path, dataset.id, panel


def test_a_run_stops_at_its_dollar_cap_and_resumes_with_a_higher_one(tmp_path, simulator_factory):
    server = simulator_factory(profiles={"a": Profile(accuracy=0.9), "b": Profile(accuracy=0.9)},
                               gold=None)
    db_path, dataset_id, panel = _setup(tmp_path, server, priced=True)
    db = open_db(db_path)
    cap = BudgetCap(usd=10.0)  # a worst case is about $0.21 a call: some 40 of the 80 calls
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel, budget=cap)
    assert JobRegistry().start_run(str(db_path), run_id, concurrency=8).wait(60)
    run = get_run(db, run_id)
    ledger = Ledger.from_mapping(run["ledger"])
    assert (run["status"], run["stop_reason"]) == ("cancelled", "budget")
    assert run["error"].startswith("Budget reached:") and "higher cap" in run["error"]
    assert 0 < ledger.cost_usd <= cap.usd
    assert 0 < len(successful_pairs(db, run_id)) < 2 * N_ITEMS
    sent_first = server.stats()["total"]
    assert sent_first == ledger.sent_calls

    job = JobRegistry().resume(str(db_path), run_id, concurrency=8, budget=BudgetCap(usd=100.0))
    assert job.wait(60)
    run = get_run(db, run_id)
    assert (run["status"], run["stop_reason"]) == ("done", None)
    assert len(successful_pairs(db, run_id)) == 2 * N_ITEMS
    # Every call was paid once: the resume sent only the pairs the cap had held back.
    assert server.stats()["total"] == 2 * N_ITEMS
    assert Ledger.from_mapping(run["ledger"]).cost_usd <= 100.0


def test_a_token_cap_counts_unpriced_calls_and_a_dollar_cap_refuses_them(
    tmp_path, simulator_factory
):
    server = simulator_factory(profiles={"a": Profile(), "b": Profile()}, gold=None)
    db_path, dataset_id, panel = _setup(tmp_path, server, priced=False)
    db = open_db(db_path)
    with pytest.raises(ConfigError, match=r"A dollar cap cannot count the calls of a, b"):
        prepare_run(db, dataset_id=dataset_id, panel=panel, budget=BudgetCap(usd=1.0))
    assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # nothing created
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel,
                         budget=BudgetCap(usd=1.0, tokens=3000))
    assert JobRegistry().start_run(str(db_path), run_id, concurrency=4).wait(60)
    run = get_run(db, run_id)
    ledger = Ledger.from_mapping(run["ledger"])
    assert run["stop_reason"] == "budget"
    assert 0 < ledger.tokens_in + ledger.tokens_out <= 3000
    assert "had no price: they count against the token cap only" in run["error"]


def test_the_cli_stops_at_the_cap_says_how_to_go_on_and_resumes(tmp_path, simulator_factory,
                                                                 capsys):
    from judging.runs.commands.cli import main

    server = simulator_factory(profiles={"a": Profile(), "b": Profile()}, gold=None)
    _, _, panel = _setup(tmp_path, server, priced=True)
    from judging.panel.panel_files import save_panel

    panel_file = tmp_path / "p.yaml"
    save_panel(panel, panel_file)
    db = tmp_path / "cli.db"
    args = ["--data", str(tmp_path / "d.csv"), "--panel", str(panel_file), "--db", str(db),
            "--quiet", "--concurrency", "4"]
    assert main(["judge", *args, "--budget-usd", "0"]) == 2
    assert "--budget-usd must be a positive number" in capsys.readouterr().err
    assert main(["judge", *args, "--budget-usd", "5"]) == 1
    err = capsys.readouterr().err
    assert "Budget reached: $" in err and "jurybox resume 1 --budget-usd" in err
    assert main(["resume", "1", "--db", str(db), "--quiet", "--budget-usd", "100"]) == 0
    assert get_run(open_db(db), 1)["status"] == "done"
    assert server.stats()["total"] == 2 * N_ITEMS


def test_the_run_page_says_budget_reached_and_resumes_with_a_higher_cap(
    tmp_path, simulator_factory, monkeypatch
):
    from tests.fixtures_app import _clear_streamlit_caches
    from tests.test_app_smoke import no_exception, open_page

    server = simulator_factory(profiles={"a": Profile(), "b": Profile()}, gold=None)
    db_path, dataset_id, panel = _setup(tmp_path, server, priced=True)
    monkeypatch.setenv("JURYBOX_DB", str(db_path))
    monkeypatch.chdir(pathlib.Path(__file__).resolve().parent.parent)
    _clear_streamlit_caches()
    db = open_db(db_path)
    run_id = prepare_run(db, dataset_id=dataset_id, panel=panel, budget=BudgetCap(usd=5.0))
    assert JobRegistry().start_run(str(db_path), run_id, concurrency=4).wait(60)
    at = open_page("run", query={"run": str(run_id)})
    no_exception(at)
    assert any(f"Run #{run_id} · budget reached" in t.value for t in at.text)
    assert any(i.value.startswith("Budget reached") for i in at.info)
    assert at.number_input(key="resume.budget_usd").value == 5.0  # the cap it stopped at
    at.number_input(key="resume.budget_usd").set_value(500.0)
    at.button(key="FormSubmitter:resume_budget-Resume with this cap").click().run()
    no_exception(at)
    from pages.ui.state import registry

    assert registry().get(run_id).wait(60)
    run = get_run(db, run_id)
    assert (run["status"], run["budget_usd"]) == ("done", 500.0)
    _clear_streamlit_caches()
