"""Chain versions of the verifiable review record. Version 2 seals a decision's cascade
sub-verdicts and pooled probabilities, and a call's label probabilities and expected score;
version 3 the audit sample's draws. A run sealed with an earlier version (before they were)
still verifies with its version's field lists, and is extended with them. Runs are real: the
simulator over HTTP on 127.0.0.1, the job's writer, a SQLite file edited behind the app's back
with a plain sqlite3 connection."""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import storage.reviewing.record_chain as record_chain
from judging.analysis.hash_chain import (
    CHAIN_VERSION,
    VERSIONS,
    changed_groups,
    genesis,
    link,
    seal,
    version_of_chain,
)
from judging.demo import demo_dataset_path, demo_gold, demo_profiles
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.cli import main
from judging.runs.stored.audit_run import draw_audit_sample
from judging.simulator.sim_server import Profile
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.reviewing.overrides import add_override
from storage.reviewing.record_chain import chain_version, verify_run
from tests.fixtures_simulator import SimulatorFactory
from tests.fixtures_storage import make_parsed, tiny_panel

V1, V2 = VERSIONS[1], VERSIONS[2]

# A call and a decision as version 1 lists them (tests/test_record_chain.py has the same).
CALL_V1_VALUES = ["KEEP", None, 0.9, None, "why", None, None,
                  None, 1, b"\x28\xb5", 3, "k", "simulated", "m", 1,
                  12.5, 1, 10, 5, None, 0.0001, 0, "2026-11-26"]
DECISION_V1_VALUES = ["KEEP", None, None, 1.0, 0, 0, "{}", None, 0, None, 0, None, "plurality",
                      None, 1.0]


# -- the hashing (pure) -----------------------------------------------------------------------


def test_version_1_hashes_as_the_release_that_sealed_it() -> None:
    # Computed with the first release's `judging.analysis.hash_chain` (commit 972827d, where
    # CHAIN_VERSION was 1): runs it sealed must keep verifying, so these never change.
    call = seal(V1["call"], '["item-1","alpha"]', CALL_V1_VALUES)
    assert call.content.hex() == \
        "246f712fe83598130f10e6790d609c160412418f4f4220a14b654153be044758"
    assert call.parts.hex() == "106dff699fc09a366540bb14"
    decision = seal(V1["decision"], "item-1", DECISION_V1_VALUES, 1.0)
    assert decision.content.hex() == \
        "83fa7a4ab94e3b09665e595d0dfc6f3ad1fda558644933212f8654121ba3b168"
    assert decision.parts.hex() == "e4229a189677ee6b09d6fb3d3939e653"
    assert genesis(7, 1).hex() == \
        "3f9c0d7cf0a0f3964949337f86f381d9563456ef4caf51bdd5384fe35553375a"
    assert link(genesis(7, 1), call.content).hex() == \
        "1256115c3c43e940fc15c4f018a1aabd52d081e36ebd0da5bb4a3fe102aeaa53"


def test_version_2_seals_the_probabilities_and_the_cascade() -> None:
    assert [name for name, _ in V2["call"].groups] == [
        "verdict", "evidence", "accounting", "probabilities"]
    assert dict(V2["decision"].groups)["cascade"] == ("tiers",)
    assert dict(V2["decision"].groups)["probabilities"] == (
        "label_probs", "expected_score", "expected_spread")
    assert V2["decision"].fields[-1] == "sample_probability"  # storage puts it last

    call = [*CALL_V1_VALUES, '{"KEEP":0.8,"REJECT":0.2}', 1.6, 0.4]
    sealed = seal(V2["call"], '["item-1","alpha"]', call)
    edited = [*call[:-2], 1.7, 0.4]
    assert seal(V2["call"], '["item-1","alpha"]', edited).content != sealed.content
    assert changed_groups(V2["call"], sealed.parts, edited) == ["probabilities"]

    decision = [*DECISION_V1_VALUES[:-1], '[{"tier":1}]', None, 2.5, 0.3, 1.0]
    sealed = seal(V2["decision"], "item-1", decision, 1.0)
    tiers = [*decision[:14], '[{"tier":2}]', *decision[15:]]
    assert changed_groups(V2["decision"], sealed.parts, tiers) == ["cascade"]
    # The version is in the content: the same fields sealed as version 1 and 2 differ, so a
    # record cannot be passed off as sealed with the shorter lists.
    assert seal(V1["override"], "3", ["i", "KEEP", "", "ana", "t", 0, None, None, 0]).content \
        != seal(V2["override"], "3", ["i", "KEEP", "", "ana", "t", 0, None, None, 0]).content
    with pytest.raises(ValueError, match="26 fields; 23 values"):
        seal(V2["call"], '["item-1","alpha"]', CALL_V1_VALUES)


def test_version_3_seals_the_audit_sample() -> None:
    assert CHAIN_VERSION == 3
    V3 = VERSIONS[3]
    assert "audit_item" not in V2 and "audit_item" not in V1
    # Everything version 2 sealed, sealed the same way (with the version in the content).
    for name, kind in V2.items():
        assert V3[name].groups == kind.groups and V3[name].table == kind.table
    audit = V3["audit_item"]
    assert (audit.table, audit.key) == ("audit_items", ("item_id",))
    assert [name for name, _ in audit.groups] == ["draw", "order", "sample"]
    assert dict(audit.groups)["draw"] == ("stratum", "stratum_size", "weight", "design")
    assert audit.fields[-1] == "sample_probability" and "queue_rank" not in audit.fields
    draw = ["likely", 40, 8.0, "confidence", "draw", 3, "2026-12-01", 0.125]
    sealed = seal(audit, "item-1", draw, 0.125)
    moved = ["sure", 40, 1.0, *draw[3:]]
    assert changed_groups(audit, sealed.parts, moved) == ["draw"]
    assert changed_groups(audit, sealed.parts, [*draw[:-1], 1.0]) == ["sample"]


def test_the_first_link_says_the_version() -> None:
    content = seal(V1["call"], '["item-1","alpha"]', CALL_V1_VALUES).content
    assert version_of_chain(7, content, link(genesis(7, 1), content)) == 1
    assert version_of_chain(7, content, link(genesis(7, 2), content)) == 2
    assert version_of_chain(8, content, link(genesis(7, 2), content)) is None  # another run's
    assert version_of_chain(7, content, b"\0" * 32) is None


# -- runs through the writer, over real HTTP -----------------------------------------------------


def _raw(db_path: str, *sql: str) -> None:
    """Edit the file behind the app's back: a plain sqlite3 connection, no Jurybox code."""
    conn = sqlite3.connect(db_path)
    for statement in sql:
        conn.execute(statement)
    conn.commit()
    conn.close()


def _run(db_path: str, panel: Panel, rows: list[dict[str, str]], id_column: str = "id",
         gold_column: str | None = "gold") -> int:
    path = Path(db_path).with_name("data.csv")
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(path, id_column=id_column, gold_column=gold_column),
                           name="d")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    job = JobRegistry().start_run(db_path, run_id, concurrency=8)
    assert job.wait(120) and job.progress().status == "done"
    db.close()
    return run_id


@pytest.fixture
def cascaded(db_path: str, simulator_factory: SimulatorFactory) -> int:
    """The demo cascade (rule -> cheap critic -> panel) over 30 demo items."""
    server = simulator_factory(profiles=demo_profiles(), gold=demo_gold(), seed=0)
    panel = load_panel(demo_dataset_path().with_name("cascade_panel.yaml"))
    panel = panel.model_copy(update={"critics": [
        c.model_copy(update={"base_url": server.base_url}) for c in panel.critics]})
    with Path(demo_dataset_path()).open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:30]
    return _run(db_path, panel, rows)


def _logprob_panel(base_url: str) -> Panel:
    return Panel.model_validate({
        "name": "lp", "scale": {"kind": "likert", "min": 1, "max": 5},
        "voting": {"strategy": "mean-expected-score"},
        "critics": [{"name": name, "vendor": "custom", "base_url": base_url, "model": model,
                     "prompt_template": "Rate {text}", "logprobs": True}
                    for name, model in (("lp", "m-lp"), ("lp2", "m-lp2"))],
    })


@pytest.fixture
def logprob_run(db_path: str, simulator_factory: SimulatorFactory) -> Iterator[tuple[int, str]]:
    """Two critics asked for logprobs over 8 items, voting on the pooled expected score; yields
    (run id, base URL of the simulator)."""
    gold = {f"answer {n}": str(1 + n % 5) for n in range(8)}
    server = simulator_factory(profiles={"m-lp": Profile(accuracy=0.7),
                                         "m-lp2": Profile(accuracy=0.6)}, gold=gold)
    rows = [{"id": f"i{n}", "text": f"answer {n}", "gold": str(1 + n % 5)} for n in range(8)]
    yield _run(db_path, _logprob_panel(server.base_url), rows), server.base_url


def test_an_edited_cascade_sub_verdict_is_named(db, db_path, cascaded, capsys) -> None:
    result = verify_run(db, cascaded)
    assert result.intact and result.version == CHAIN_VERSION, [m.sentence() for m in
                                                               result.mismatches]
    item, tiers = db.execute("SELECT item_id, tiers FROM consensus WHERE run_id = ? AND tiers"
                             " LIKE '%\"next\"%' ORDER BY item_id LIMIT 1", [cascaded]).fetchone()
    assert '"step": "next"' in tiers or '"step":"next"' in tiers
    # Someone rewrites the story of a cascade: the guard "rejected" an item it let through.
    forged = tiers.replace('"next"', '"rejected"', 1)
    _raw(db_path, "UPDATE consensus SET tiers = '" + forged.replace("'", "''") + "'"
                  f" WHERE run_id = {cascaded} AND item_id = '{item}'")
    assert main(["verify", str(cascaded), "--db", db_path]) == 2
    out = capsys.readouterr().out
    assert f"First: consensus row {item} (record #" in out, out
    assert "its cascade (tiers) changed since it was recorded; now tiers=" in out
    assert f"(chain version {CHAIN_VERSION})" in out


def test_an_edited_expected_score_of_a_decision_is_named(db, db_path, logprob_run,
                                                         capsys) -> None:
    run_id, _ = logprob_run
    assert verify_run(db, run_id).intact
    score = db.execute("SELECT expected_score FROM consensus WHERE run_id = ? AND item_id = 'i3'",
                       [run_id]).fetchone()[0]
    assert score is not None
    _raw(db_path, f"UPDATE consensus SET expected_score = {score + 0.25} WHERE run_id = {run_id}"
                  " AND item_id = 'i3'")
    assert main(["verify", str(run_id), "--db", db_path]) == 2
    out = capsys.readouterr().out
    assert "First: consensus row i3 (record #" in out, out
    assert "its probabilities (label_probs, expected_score, expected_spread) changed since it" \
        " was recorded; now" in out
    assert f"expected_score={score + 0.25!r}" in out


def test_an_edited_expected_score_of_a_call_is_named(db, db_path, logprob_run, capsys) -> None:
    run_id, _ = logprob_run
    _raw(db_path, f"UPDATE calls SET expected_score = 5.0 WHERE run_id = {run_id}"
                  " AND item_id = 'i5' AND critic = 'lp2'")
    assert main(["verify", str(run_id), "--db", db_path]) == 2
    out = capsys.readouterr().out
    assert 'First: calls row ["i5","lp2"] (record #' in out, out
    assert "its probabilities (label_probs, expected_score, expected_spread) changed" in out
    assert "expected_score=5.0" in out


def test_a_run_sealed_with_version_1_still_verifies(db, db_path, simulator_factory,
                                                    monkeypatch, capsys) -> None:
    """A run recorded by the release before version 2 (its writer sealed with version 1's
    lists), then extended after the upgrade (an override, a second job on the run)."""
    gold = {f"answer {n}": str(1 + n % 5) for n in range(8)}
    server = simulator_factory(profiles={"m-lp": Profile(accuracy=0.7),
                                         "m-lp2": Profile(accuracy=0.6)}, gold=gold)
    rows = [{"id": f"i{n}", "text": f"answer {n}", "gold": str(1 + n % 5)} for n in range(8)]
    monkeypatch.setattr(record_chain, "NEW_RUNS_VERSION", 1)
    run_id = _run(db_path, _logprob_panel(server.base_url), rows)
    monkeypatch.undo()  # the upgrade: new runs are sealed with the current version again
    assert record_chain.NEW_RUNS_VERSION == CHAIN_VERSION
    # Every entry of the run was sealed with version 1's lists: its first link says so, and
    # each call's content is what version 1 makes of the stored row.
    assert chain_version(db, run_id) == 1
    stored = db.execute("SELECT key, content FROM record_chain WHERE run_id = ? AND kind ="
                        " 'call' ORDER BY seq LIMIT 1", [run_id]).fetchone()
    cols = ", ".join(V1["call"].fields)
    item, critic = stored[0][2:-2].split('","')
    values = db.execute(f"SELECT {cols} FROM calls WHERE run_id = ? AND item_id = ? AND"
                        " critic = ?", [run_id, item, critic]).fetchone()
    assert seal(V1["call"], stored[0], list(values)).content == bytes(stored[1])

    # Extended after the upgrade: still version 1, still intact.
    add_override(db, run_id, "i2", "4", "a human read it", "ana")
    assert JobRegistry().rejudge_item(db_path, run_id, "i6").wait(60)
    result = verify_run(db, run_id)
    assert result.intact and result.version == 1, [m.sentence() for m in result.mismatches]
    assert result.by_kind["override"] == 1 and result.by_kind["decision"] == 9
    assert main(["verify", str(run_id), "--db", db_path]) == 0
    assert "(chain version 1)" in capsys.readouterr().out

    # Version 1 never sealed the expected scores: an edit there goes unseen in this run (the
    # reason for version 2), while an edit to a field version 1 sealed is named.
    _raw(db_path, f"UPDATE consensus SET expected_score = 4.5 WHERE run_id = {run_id}"
                  " AND item_id = 'i1'")
    assert verify_run(db, run_id).intact
    _raw(db_path, f"UPDATE calls SET confidence = 0.01 WHERE run_id = {run_id}"
                  " AND item_id = 'i4' AND critic = 'lp'")
    assert main(["verify", str(run_id), "--db", db_path]) == 2
    out = capsys.readouterr().out
    assert 'First: calls row ["i4","lp"] (record #' in out, out
    assert "its verdict (label, score, confidence" in out and "confidence=0.01" in out

    # A new run beside it is sealed with the current version.
    rows2 = [{"id": f"j{n}", "text": f"answer {n}", "gold": "1"} for n in range(3)]
    new_run = _run(db_path, _logprob_panel(server.base_url), rows2)
    assert chain_version(db, new_run) == CHAIN_VERSION
    assert verify_run(db, new_run).version == CHAIN_VERSION


def test_a_first_entry_of_no_known_version_is_reported(db, db_path, logprob_run) -> None:
    run_id, _ = logprob_run
    # Relinking the first entry to version 1's genesis (to claim the shorter lists) breaks it.
    content = db.execute("SELECT content FROM record_chain WHERE run_id = ? AND seq = 1",
                         [run_id]).fetchone()[0]
    relinked = link(genesis(run_id, 1), bytes(content)).hex()
    _raw(db_path, "DROP TRIGGER record_chain_no_update",
         f"UPDATE record_chain SET hash = x'{relinked}' WHERE run_id = {run_id} AND seq = 1")
    result = verify_run(db, run_id)
    assert result.version == 1 and not result.intact
    assert any((m.table, m.seq) == ("record_chain", 2) for m in result.mismatches)
    # An entry of no known version at all.
    _raw(db_path, f"UPDATE record_chain SET hash = zeroblob(32) WHERE run_id = {run_id}"
                  " AND seq = 1")
    first = verify_run(db, run_id).first
    assert first is not None and first.seq == 1
    assert "follows from no chain version this Jurybox knows (1, 2, 3" in first.what


def test_a_run_sealed_with_version_2_still_verifies_with_its_audit_sample_outside(
        db, db_path, simulator_factory, monkeypatch, capsys) -> None:
    """A run recorded by the release before version 3, its audit sample drawn and labelled
    after the upgrade: the run keeps version 2, which has no audit kind, so its draws are not
    sealed; verify still calls it intact, and says plainly that the audit sample is outside
    the record."""
    sim = simulator_factory(latency_ms=1)
    monkeypatch.setattr(record_chain, "NEW_RUNS_VERSION", 2)
    dataset_id = save_dataset(db, make_parsed(12, salt="v2-audit")).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(sim.base_url))
    job = JobRegistry().start_run(db_path, run_id, concurrency=8)
    assert job.wait(60) and job.progress().status == "done"
    monkeypatch.undo()
    assert chain_version(db, run_id) == 2
    draw_audit_sample(db, run_id, 6, seed=2)
    first = db.execute("SELECT item_id FROM audit_items WHERE run_id = ? ORDER BY draw_order"
                       " LIMIT 1", [run_id]).fetchone()[0]
    add_override(db, run_id, first, "KEEP", "", "ana", blind=True)
    result = verify_run(db, run_id)
    assert result.intact and result.version == 2, [m.sentence() for m in result.mismatches]
    assert "audit_item" not in result.by_kind and result.audit == {}
    assert result.unsealed == {"audit_items": 6}
    assert result.by_kind["override"] == 1  # the blind label is sealed, as in version 2
    assert main(["verify", str(run_id), "--db", db_path]) == 0
    out = capsys.readouterr().out
    assert "(chain version 2)" in out
    assert "Not in this record: 6 audit_items rows (chain version 2 did not seal the audit" \
        " sample" in out
