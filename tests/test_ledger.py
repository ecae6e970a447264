"""The run ledger: one rule for what was sent and paid, read by every screen and command."""

from __future__ import annotations

import pathlib

import pytest

from judging.engine.ledger import Ledger
from judging.runs.commands.cli import main
from judging.simulator.sim_server import Profile
from judging.verdicts import FailureKind, Verdict
from pages.ui.run.progress import run_summary_line
from storage.db import open_db
from storage.results.runs import add_to_ledger, get_run
from tests.test_app_smoke import all_text, no_exception, open_page


def _v(**kwargs: object) -> Verdict:
    values: dict[str, object] = {"critic": "a", "item_id": "1", "label": "KEEP"}
    values.update(kwargs)
    return Verdict(**values)  # type: ignore[arg-type]


def test_a_cache_hit_is_never_paid() -> None:
    # A cached verdict still carries the tokens and cost of the call that first made it.
    ledger = Ledger().add_all([_v(cached=True, attempts=2, tokens_in=100, tokens_out=5,
                                  cost_usd=0.01)])
    assert (ledger.calls, ledger.cache_hits, ledger.sent_calls, ledger.http_attempts) == (1, 1, 0, 0)
    assert (ledger.tokens_in, ledger.cost_usd, ledger.unpriced_calls) == (0, 0.0, 0)
    assert ledger.cost_text() == "$0.0000"


@pytest.mark.parametrize(
    ("verdict", "sent", "unpriced"),
    [
        (_v(attempts=1, tokens_in=10, tokens_out=1, cost_usd=0.5), 1, 0),
        (_v(attempts=1, tokens_in=10, tokens_out=1, cost_usd=None), 1, 1),  # no price
        (_v(attempts=1, cost_usd=None), 1, 1),  # a success without token counts
        (_v(label=None, failure=FailureKind.ERROR, attempts=3), 1, 0),  # 500s: not billed
        (_v(label=None, failure=FailureKind.PARSE_FAIL, attempts=1, tokens_in=9, tokens_out=9),
         1, 1),  # billed reply without a verdict, no price
        (_v(label=None, failure=FailureKind.CANCELLED, attempts=0), 0, 0),  # never sent
        (_v(label=None, failure=FailureKind.CANCELLED, attempts=1), 1, 0),  # cancelled mid-retry
    ],
)
def test_what_counts_as_sent_and_unpriced(verdict: Verdict, sent: int, unpriced: int) -> None:
    ledger = Ledger().add_all([verdict])
    assert (ledger.sent_calls, ledger.unpriced_calls) == (sent, unpriced)
    assert ledger.http_attempts == verdict.attempts


def test_cost_text_says_at_least_when_a_price_is_missing() -> None:
    assert Ledger(cost_usd=0.0123).cost_text() == "$0.0123"
    assert Ledger(cost_usd=0.0123, unpriced_calls=3).cost_text() == \
        "at least $0.0123 (3 calls without a price)"
    assert Ledger(unpriced_calls=1).cost_text() == "unknown (1 call without a price)"


def _panel_files(tmp_path: pathlib.Path, base_url: str) -> tuple[pathlib.Path, pathlib.Path]:
    data = tmp_path / "d.csv"
    data.write_text("id,text\n" + "".join(f"r{i},item {i}\n" for i in range(20)), encoding="utf-8")
    panel = tmp_path / "p.yaml"
    panel.write_text(
        "schema_version: 1\nname: priced\nscale: {kind: nominal, labels: [KEEP, REJECT]}\n"
        "critics:\n"
        + "".join(
            f"  - {{name: c{i}, vendor: custom, base_url: '{base_url}', model: sure{i},"
            " prompt_template: 'Judge {text}', price_in_per_mtok: 1.0, price_out_per_mtok: 2.0}\n"
            for i in range(2)
        ),
        encoding="utf-8",
    )
    return data, panel


def test_a_run_repeated_from_cache_shows_nothing_sent_and_no_cost_everywhere(
    tmp_path: pathlib.Path, simulator_factory, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = simulator_factory(profiles={"sure0": Profile(accuracy=1.0),
                                         "sure1": Profile(accuracy=1.0)}, gold=None)
    data, panel = _panel_files(tmp_path, server.base_url)
    db_path = tmp_path / "runs.db"
    args = ["judge", "--data", str(data), "--panel", str(panel), "--db", str(db_path), "--quiet"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert "Sent:           40 calls sent (40 HTTP attempts)" in first
    paid = get_run(open_db(db_path), 1)["ledger"]
    assert paid["sent_calls"] == 40 and paid["cost_usd"] > 0

    served = server.stats()["total"]
    assert main(args) == 0
    second = capsys.readouterr().out
    assert server.stats()["total"] == served  # nothing went out
    # The CLI summary, `jurybox runs`, the Run page's line and the app's tables all say so.
    assert "Sent:           0 calls sent (0 HTTP attempts) · 40 from cache (not paid)" in second
    assert "Cost:           $0.0000" in second
    run2 = get_run(open_db(db_path), 2)
    assert run2["ledger"]["http_attempts"] == 0 and run2["ledger"]["cost_usd"] == 0
    assert "0 calls sent (0 HTTP attempts)" in run_summary_line(run2)
    assert run_summary_line(run2).endswith("$0.0000")

    assert main(["runs", "--db", str(db_path)]) == 0
    listing = capsys.readouterr().out.splitlines()
    row2 = next(line for line in listing if line.strip().startswith("2 "))
    assert row2.endswith("$0.0000")
    row1 = next(line for line in listing if line.strip().startswith("1 "))
    assert f"${paid['cost_usd']:.4f}" in row1

    monkeypatch.setenv("JURYBOX_DB", str(db_path))
    for page in ("run", "home"):
        at = open_page(page, query={"run": "2"})
        no_exception(at)
        text = all_text(at)
        assert f"${paid['cost_usd']:.4f}" in text or page == "run"
        assert "$0.0000" in text


def test_add_to_ledger_accumulates_and_refuses_what_is_not_a_number(demo_db) -> None:
    path, run_id = demo_db
    db = open_db(path)
    before = get_run(db, run_id)["ledger"]
    add_to_ledger(db, run_id, {"sent_calls": 2, "cost_usd": 0.25})
    add_to_ledger(db, run_id, {"sent_calls": 1})
    after = get_run(db, run_id)["ledger"]
    assert after["sent_calls"] == before.get("sent_calls", 0) + 3
    assert after["cost_usd"] == pytest.approx(before.get("cost_usd", 0) + 0.25)
    from storage.db import StorageError

    with pytest.raises(StorageError):
        add_to_ledger(db, run_id, {"sent_calls": "3"})
    with pytest.raises(StorageError):
        add_to_ledger(db, run_id, {"a.b') --": 1})
    assert get_run(db, run_id)["ledger"] == after
