"""The `jurybox` command line: demo and judge over real HTTP, the simulator command, and
clear errors for bad input."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import httpx
import pytest
import yaml

from judging.engine.ledger import Ledger
from judging.panel.panel_model import Panel
from judging.runs.commands.cli import main
from judging.runs.commands.summary import format_summary, summarize, summarize_counts
from judging.scales import Scale
from judging.simulator.sim_server import Profile, SimulatorServer
from judging.simulator.sim_vendor import shared_simulator
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict, VoteOutcome
from tests.fixtures_simulator import SimulatorFactory

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _own_database(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # judge and demo store their runs; never in the working tree's ./jurybox.db.
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "cli.db"))


def write_panel(path: pathlib.Path, base_url: str, models: list[str], **extra: object) -> None:
    panel = {
        "schema_version": 1,
        "name": "cli test",
        "scale": {"kind": "nominal", "labels": ["KEEP", "REJECT"]},
        "voting": {"strategy": "plurality"},
        "critics": [
            {
                "name": f"critic-{model}",
                "vendor": "custom",
                "base_url": base_url,
                "model": model,
                "prompt_template": "Class: {name}. Decide.",
                "timeout_s": 10,
                **extra,
            }
            for model in models
        ],
    }
    path.write_text(yaml.safe_dump(panel, sort_keys=False), encoding="utf-8")


def write_data(path: pathlib.Path, n: int) -> dict[str, str]:
    gold = {f"class {i}": ("KEEP" if i % 3 else "REJECT") for i in range(n)}
    rows = [f"r{i},{name},{label}" for i, (name, label) in enumerate(gold.items())]
    lines = ["id,name,gold", *rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return gold


def test_demo_prints_a_summary_from_real_http_calls(capsys: pytest.CaptureFixture[str]) -> None:
    before = shared_simulator().stats()["total"]
    assert main(["demo", "--limit", "12", "--concurrency", "16"]) == 0
    out, err = capsys.readouterr()
    for heading in ("Consensus:", "Disagreements:", "Gold agreement:", "Calls:", "Sent:",
                    "Cost:", "Time:", "careful", "lenient", "strict", "flaky"):
        assert heading in out
    assert "12 items, 4 critics" in out and "(simulated vendor)" in out
    assert "12/12 items" in err  # the progress bar, on stderr
    # 12 items x 4 critics, each at least one real request to the simulator.
    assert shared_simulator().stats()["total"] - before >= 48


def test_judge_runs_a_panel_file_on_a_csv_and_writes_jsonl(
    simulator_factory: SimulatorFactory, tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = simulator_factory(profiles={"perfect": Profile(accuracy=1.0)}, gold=None)
    data, panel, out = tmp_path / "d.csv", tmp_path / "p.yaml", tmp_path / "out.jsonl"
    gold = write_data(data, 30)
    server.gold = gold  # keyed by the one field the prompt shows
    write_panel(panel, server.base_url, ["perfect", "other"])
    code = main(["judge", "--data", str(data), "--panel", str(panel), "--concurrency", "8",
                 "--out", str(out)])
    stdout, _ = capsys.readouterr()
    assert code == 0
    assert "30 items, 2 critics" in stdout
    assert "Cost:           unknown (60 calls without a price)" in stdout  # not $0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["item_id"] for r in rows] == [f"r{i}" for i in range(30)]
    perfect = [v for r in rows for v in r["verdicts"] if v["critic"] == "critic-perfect"]
    assert all(v["label"] == gold[f"class {i}"] for i, v in enumerate(perfect))
    assert server.stats()["by_model"] == {"perfect": 30, "other": 30}


def test_judge_reports_failures_per_critic(
    simulator_factory: SimulatorFactory, tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = simulator_factory(profiles={"refuser": Profile(rate_refusal=1.0)})
    write_data(tmp_path / "d.csv", 6)
    write_panel(tmp_path / "p.yaml", server.base_url, ["fine", "refuser"])
    # A critic that refused every item gave the panel nothing: the run failed (exit 2), and
    # the summary still shows what the run did (tests/test_run_failed.py).
    assert main(["judge", "--data", str(tmp_path / "d.csv"), "--panel", str(tmp_path / "p.yaml"),
                 "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("jurybox: error: run 1 failed: Critic 'critic-refuser' gave no "
                          "verdict: all 6 of its calls failed (the first: the model refused")
    assert err.count("\n") == 1  # --quiet: no progress bar, one sentence
    refuser = next(line for line in out.splitlines() if line.startswith("  critic-refuser"))
    assert "refusal 6" in refuser
    assert "(6 verdicts, 6 failed)" in out


@pytest.mark.parametrize(
    ("make_args", "needle"),
    [
        (lambda d, p: ["judge", "--data", str(d), "--panel", str(p.with_name("nope.yaml"))],
         "nope.yaml"),
        (lambda d, p: ["judge", "--data", str(d.with_name("nope.csv")), "--panel", str(p)],
         "nope.csv"),
    ],
)
def test_missing_files_exit_2_with_one_sentence(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], make_args, needle: str
) -> None:
    data, panel = tmp_path / "d.csv", tmp_path / "p.yaml"
    write_data(data, 3)
    write_panel(panel, "http://127.0.0.1:9/v1", ["m"])
    assert main(make_args(data, panel)) == 2
    _, err = capsys.readouterr()
    assert err.startswith("jurybox: error: ") and needle in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_invalid_panel_exits_2_naming_the_problem(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_data(tmp_path / "d.csv", 3)
    bad = tmp_path / "bad.yaml"
    write_panel(bad, "http://127.0.0.1:9/v1", ["m"])
    text = yaml.safe_load(bad.read_text())
    text["voting"]["strategy"] = "no-such-strategy"
    bad.write_text(yaml.safe_dump(text))
    assert main(["judge", "--data", str(tmp_path / "d.csv"), "--panel", str(bad)]) == 2
    _, err = capsys.readouterr()
    assert "no-such-strategy" in err and "Traceback" not in err


def test_placeholder_missing_from_data_exits_2_before_any_call(
    simulator_factory: SimulatorFactory, tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = simulator_factory()
    (tmp_path / "d.csv").write_text("id,title\n1,a\n", encoding="utf-8")
    write_panel(tmp_path / "p.yaml", server.base_url, ["m"])
    assert main(["judge", "--data", str(tmp_path / "d.csv"), "--panel",
                 str(tmp_path / "p.yaml")]) == 2
    _, err = capsys.readouterr()
    assert "{name}" in err and "title" in err and "Traceback" not in err
    assert server.stats()["total"] == 0


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["demo", "--concurrency", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err


def test_summary_counts_no_consensus_and_unknown_cost() -> None:
    panel = Panel(
        scale=Scale(kind="nominal", labels=["A", "B"]),
        critics=[{"name": n, "model": "m", "prompt_template": "{x}"} for n in ("p", "q")],
    )
    ok = Verdict(critic="p", item_id="1", label="A", attempts=1, tokens_in=10, tokens_out=2,
                 cost_usd=0.5)
    failed = Verdict(critic="q", item_id="1", failure=FailureKind.ERROR, message="500",
                     attempts=3)
    pv1 = PanelVerdict("1", VoteOutcome("A", 0.5, True, {"A": 1}, failed=1), [ok, failed],
                       "plurality")
    pv2 = PanelVerdict("2", VoteOutcome(None, None, True), [
        Verdict(critic="p", item_id="2", failure=FailureKind.CANCELLED, message="cancelled"),
        Verdict(critic="q", item_id="2", label="B", attempts=1, tokens_in=5, tokens_out=1,
                cost_usd=None),
    ], "plurality")
    items = [Item("1", {"x": 1}, gold="A"), Item("2", {"x": 2}, gold="A")]
    s = summarize(panel, items, [pv1, pv2], seconds=2.0)
    assert (s.consensus, s.no_consensus, s.disagreements) == ({"A": 1}, 1, 2)
    assert (s.gold_items, s.gold_correct) == (2, 1)
    # The never-sent cancelled call counts neither tokens nor an unknown cost; the failed 500
    # (sent three times, no usage: not billed) counts its attempts; q's success has no price.
    ledger = s.ledger
    assert (ledger.tokens_in, ledger.tokens_out, ledger.cost_usd) == (15, 3, 0.5)
    assert (ledger.sent_calls, ledger.http_attempts, ledger.cache_hits) == (3, 5, 0)
    assert ledger.unpriced_calls == 1 and s.unpriced_critics == ["q"]
    text = format_summary(s)
    assert "no consensus 1" in text
    assert "Cost:           at least $0.5000 (1 call without a price) (critics without a price: q)" in text
    assert "Gold agreement: consensus matches gold on 1 of 2 items (50%)" in text


@pytest.mark.parametrize(("thresholds", "line"), [
    ({}, "Consensus:      0-0.2 1, 0.2-0.4 0, 0.4-0.6 2, 0.6-0.8 1, 0.8-1 2 (items per score band)"),
    ({"uphold": 0.7, "borderline": 0.4},
     "Consensus:      escalate 1, borderline 2, uphold 3 (items per score band)"),
])
def test_the_summary_of_a_score_panel_counts_bands_not_every_score(
        thresholds: dict[str, float], line: str) -> None:
    """Six items, six different scores: the summary counts them per band (the panel's
    thresholds, else five equal parts of the scale), never one entry per distinct score."""
    panel = Panel(
        scale=Scale(kind="score", min=0, max=1),
        voting={"strategy": "mean", "thresholds": thresholds},
        critics=[{"name": "p", "model": "m", "prompt_template": "{x}"}],
    )
    scores = [0.05, 0.41, 0.5, 0.7, 0.83, 1.0]
    decisions = [(score, None, 1, 0) for score in scores]
    text = format_summary(summarize_counts(panel, decisions, [], [], Ledger(), 1.0))
    assert line in text.splitlines(), text
    assert "0.41" not in text


def test_simulator_command_serves_until_terminated() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "judging.runs.commands.cli", "simulator", "--port", "0", "--latency-ms", "1",
         "--seed", "3"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("jurybox simulator listening on http://127.0.0.1:")
        base_url = line.rsplit(" ", 1)[1].strip()
        with httpx.Client(timeout=5) as client:
            models = client.get(f"{base_url}/models").json()
            assert "sim-careful" in {m["id"] for m in models["data"]}
            assert client.get(base_url.removesuffix("/v1") + "/stats").json()["total"] == 0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: pathlib.Path) -> None:
    """`jurybox runs | head`: the reader has gone; like a Unix tool, the command stops with
    exit 141 (128 + SIGPIPE) and no message (it said "error: Broken pipe")."""
    from storage.db import open_db

    open_db(tmp_path / "pipe.db").close()
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "judging.runs.commands.cli", "runs", "--db", str(tmp_path / "pipe.db")],
            cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_simulator_command_refuses_a_busy_port(
    simulator: SimulatorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulator", "--port", str(simulator.port)]) == 2
    assert "choose another --port" in capsys.readouterr().err


def test_simulator_command_rejects_a_bad_profiles_file(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "profiles.yaml"
    bad.write_text("my-model: {acuracy: 0.9}\n", encoding="utf-8")
    assert main(["simulator", "--profiles", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "my-model" in err and "acuracy" in err and "Traceback" not in err


def test_demo_content_is_consistent() -> None:
    import csv
    from collections import Counter as C

    from judging.demo import demo_dataset_path, demo_gold, demo_panel_path, demo_profiles
    from judging.demo.make_dataset import build_rows
    from judging.panel.panel_files import load_panel

    with demo_dataset_path().open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    # The committed CSV is exactly what the deterministic generator builds.
    assert rows == [{k: str(v) for k, v in r.items()} for r in build_rows()]
    assert len(rows) == 300 and len({r["candidate_class"] for r in rows}) == 300
    assert set(C(r["gold"] for r in rows)) == {"KEEP", "REJECT", "SPLIT", "MERGE"}
    gold = demo_gold()
    assert {r["candidate_class"]: gold[r["candidate_class"]] for r in rows} == {
        r["candidate_class"]: r["gold"] for r in rows}
    # The pairwise demo: its CSV is what its generator builds, and the simulator gets each
    # answer's quality (the rest of the demo's gold).
    from judging.demo import pairwise_dataset_path
    from judging.demo.make_pairwise_dataset import build

    with pairwise_dataset_path().open(newline="", encoding="utf-8") as fh:
        pairs = list(csv.DictReader(fh))
    assert pairs == build()
    quality = {r[f"answer_{s}"]: r[f"quality_{s}"] for r in pairs for s in "ab"}
    # The conversation demo: what each turn reads as alone (a message's looks_alone, else its
    # gold) and in its thread up to the turn (its gold), keyed by the text a critic is shown.
    from judging.demo import conversation_dataset_path
    from judging.panel.conversation import turn_items
    from judging.verdicts import Item

    chats = [json.loads(line) for line in conversation_dataset_path().open(encoding="utf-8")]
    said = [m for chat in chats for m in chat["conversation"] if m["role"] == "assistant"]
    turns = turn_items([Item(c["id"], {"conversation": c["conversation"]}) for c in chats],
                       "conversation")
    assert len(turns) == len(said) == 11
    turn_gold = {}
    for turn, message in zip(turns, said, strict=True):
        turn_gold[turn.fields["turn"]] = message.get("looks_alone", message["gold"])
        turn_gold[turn.fields["context"]] = message["gold"]
    assert gold == {**{r["candidate_class"]: r["gold"] for r in rows}, **quality, **turn_gold}
    panel = load_panel(demo_panel_path())
    assert panel.scale.labels == ["KEEP", "REJECT", "SPLIT", "MERGE"]
    assert len(panel.critics) >= 3 and panel.voting.strategy == "plurality"
    assert {c.model for c in panel.critics} <= set(demo_profiles())
    panel.check_fields([k for k in rows[0] if k not in ("id", "gold")])


def test_the_progress_bar_counts_verdicts_as_the_run_page_does() -> None:
    from judging.engine.panel_runner import RunProgress
    from judging.runs.commands.summary import ProgressBar

    assert "0/4 verdicts" in ProgressBar.render(RunProgress(total=4, items_total=2))
