"""The verifiable review record: a run's verdicts, decisions, overrides and audit draws enter
one hash chain in the order they were committed; `jurybox verify RUN` recomputes it and names
the first record that an edit behind the app's back (a raw sqlite3 UPDATE) changed."""

from __future__ import annotations

import io
import json
import sqlite3

import pyarrow.parquet as pq
import pytest

from judging.analysis.audit_design import design_cuts
from judging.analysis.hash_chain import CALL, DECISION, OVERRIDE, changed_groups, seal
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.commands.cli import main
from judging.runs.stored.audit_run import draw_audit_sample, refresh_label_next, sample_design
from storage.datasets.dataset_store import save_dataset
from storage.results.export_files import export_bytes, override_history_bytes
from storage.reviewing.audit import audit_items
from storage.reviewing.criteria import add_criterion_override
from storage.reviewing.overrides import accept_consensus, add_override
from storage.reviewing.record_chain import chain_head, verify_run
from tests.fixtures_storage import make_parsed, tiny_panel

# -- the hashing itself (pure) ---------------------------------------------------------------


def test_a_record_s_hash_covers_its_content_and_key() -> None:
    values = ["KEEP", None, 0.9, None, "why", None, None,  # the verdict
              None, 1, b"\x28\xb5", 3, "k", "simulated", "m", 1,  # the evidence
              12.5, 1, 10, 5, None, 0.0001, 0, "2026-11-26",  # the accounting
              None, None, None]  # the probabilities (none asked for)
    one = seal(CALL, '["item-1","alpha"]', values)
    assert one == seal(CALL, '["item-1","alpha"]', list(values))  # deterministic
    assert one.content != seal(CALL, '["item-2","alpha"]', values).content  # key counts
    edited = list(values)
    edited[0] = "REJECT"
    assert seal(CALL, '["item-1","alpha"]', edited).content != one.content
    assert changed_groups(CALL, one.parts, edited) == ["verdict"]
    blob = list(values)
    blob[9] = b"\x28\xb6"  # a compressed reply is hashed as the bytes stored
    assert changed_groups(CALL, one.parts, blob) == ["evidence"]


def test_an_override_names_the_field_that_changed() -> None:
    values = ["item-1", "KEEP", "fine", "ana", "2026-11-26T10:00:00", 0, None, None, 0]
    sealed = seal(OVERRIDE, "7", values)
    assert changed_groups(OVERRIDE, sealed.parts, ["item-1", "REJECT", *values[2:]]) == ["label"]


# -- a run through the writer, over real HTTP -----------------------------------------------------


@pytest.fixture
def judged(db, db_path, simulator_factory):
    """A finished run of 12 items x 3 critics on the simulator, and two overrides."""
    sim = simulator_factory(latency_ms=1)
    dataset_id = save_dataset(db, make_parsed(12, salt="record")).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(sim.base_url))
    job = JobRegistry().start_run(db_path, run_id, concurrency=8)
    assert job.wait(60) and job.progress().status == "done"
    add_override(db, run_id, "item-000002", "REJECT", "a duplicate", "ana")
    accept_consensus(db, run_id, ["item-000003", "item-000004"], "bob")
    return run_id


def _raw(db_path: str, *sql: str) -> None:
    """Edit the file behind the app's back: a plain sqlite3 connection, no Jurybox code."""
    conn = sqlite3.connect(db_path)
    for statement in sql:
        conn.execute(statement)
    conn.commit()
    conn.close()


def test_every_stored_record_is_in_the_chain(db, judged) -> None:
    result = verify_run(db, judged)
    assert result.intact, [m.sentence() for m in result.mismatches]
    assert result.by_kind == {"call": 36, "decision": 12, "override": 3}
    assert result.probabilities == {1.0: 12}  # a full run: every item judged
    assert chain_head(db, judged) == (51, result.head)


def test_sealing_keeps_replies_compressed(db, judged) -> None:
    # Sealed in write_verdicts' own transaction: around it, replies were stored as text (a
    # batch inside a caller's transaction is never compressed), and a verdict took 1,133
    # bytes instead of 526 in `benchmarks storage`.
    total, packed = db.execute("SELECT count(*), count(reply_dict) FROM calls WHERE run_id = ?",
                               [judged]).fetchone()
    assert packed >= total - 3  # each critic's first reply is its dictionary, kept as text


def test_verify_exits_0_and_prints_the_head(db, db_path, judged, capsys) -> None:
    assert main(["verify", str(judged), "--db", db_path]) == 0
    out = capsys.readouterr().out
    assert f"Run {judged}'s record is intact: 51 records" in out
    assert verify_run(db, judged).head in out
    assert "12 decisions with sampling probability 1 (every item judged)" in out


def test_an_edited_verdict_is_named(db, db_path, judged, capsys) -> None:
    row = db.execute("SELECT item_id, critic, label FROM calls WHERE run_id = ? AND item_id ="
                     " 'item-000005' AND critic = 'critic_1'", [judged]).fetchone()
    other = "MERGE" if row[2] != "MERGE" else "KEEP"
    _raw(db_path, f"UPDATE calls SET label = '{other}' WHERE run_id = {judged} AND item_id ="
                  " 'item-000005' AND critic = 'critic_1'")
    assert main(["verify", str(judged), "--db", db_path]) == 2
    out = capsys.readouterr().out
    assert ('First: calls row ["item-000005","critic_1"]' in out), out
    assert "its verdict (label, score, confidence, marks, reasoning, failure, message)" \
        " changed since it was recorded; now label=" in out
    assert f"label='{other}'" in out


def test_an_edited_decision_is_named(db, db_path, judged) -> None:
    _raw(db_path, "UPDATE consensus SET disagreement = 1 - disagreement, agreement = 0.99"
                  f" WHERE run_id = {judged} AND item_id = 'item-000007'")
    first = verify_run(db, judged).first
    assert first is not None
    assert (first.table, first.key) == ("consensus", "item-000007")
    assert "its agreement (agreement, disagreement" in first.what
    # A statistic computed later (per-item alpha) is not part of the decision: no alarm.
    _raw(db_path, f"UPDATE consensus SET item_alpha = 0.5 WHERE run_id = {judged}")
    assert len(verify_run(db, judged).mismatches) == 1


def test_an_edited_override_is_named(db, db_path, judged, capsys) -> None:
    oid = db.execute("SELECT id FROM overrides WHERE run_id = ? AND item_id = 'item-000002'",
                     [judged]).fetchone()[0]
    # The table refuses UPDATE (a trigger): someone with the file drops it first.
    _raw(db_path, "DROP TRIGGER overrides_no_update",
         f"UPDATE overrides SET label = 'KEEP' WHERE id = {oid}")
    assert main(["verify", str(judged), "--db", db_path]) == 2
    out = capsys.readouterr().out
    assert f"First: overrides row {oid} (record #" in out
    assert "its label changed since it was recorded; now label='KEEP'" in out


def test_a_criterion_mark_is_sealed_and_checked(db, db_path, judged) -> None:
    mark = add_criterion_override(db, judged, "item-000001", "complete", "MET", "", "ana")
    assert verify_run(db, judged).intact
    _raw(db_path, "DROP TRIGGER criterion_overrides_no_update",
         f"UPDATE criterion_overrides SET mark = 'UNMET' WHERE id = {mark}")
    first = verify_run(db, judged).first
    assert first is not None and (first.table, first.key) == ("criterion_overrides", str(mark))
    assert "mark" in first.what


def test_inserted_and_deleted_rows_are_named(db, db_path, judged) -> None:
    _raw(db_path, f"DELETE FROM calls WHERE run_id = {judged} AND item_id = 'item-000009'"
                  " AND critic = 'critic_0'",
         "INSERT INTO overrides (run_id, item_id, label, note, reviewer, created_at) VALUES"
         f" ({judged}, 'item-000010', 'KEEP', 'forged', 'eve', '2026-11-26T00:00:00')")
    found = {(m.table, m.key): m.what for m in verify_run(db, judged).mismatches}
    assert "deleted since it was recorded" in found[("calls", '["item-000009","critic_0"]')]
    forged = [what for (table, _), what in found.items() if table == "overrides"]
    assert forged and "never recorded" in forged[0]


def test_an_edited_chain_breaks_at_that_entry(db, db_path, judged) -> None:
    _raw(db_path, f"DELETE FROM record_chain WHERE run_id = {judged} AND seq = 20")
    first = verify_run(db, judged).first
    assert first is not None and first.table == "record_chain" and first.seq == 21


def test_the_export_carries_the_head_and_verify_checks_it(db, db_path, judged, capsys) -> None:
    head = verify_run(db, judged).head
    table = pq.read_table(io.BytesIO(export_bytes(db, judged, "parquet")))
    assert table.schema.metadata[b"jurybox_chain_head"].decode() == head
    lines = [json.loads(line) for line in override_history_bytes(db, judged).splitlines()]
    assert lines and {line["chain_head"] for line in lines} == {head}
    # Later decisions extend the record: the exported head is still in it, unchanged.
    add_override(db, judged, "item-000008", "KEEP", "", "ana")
    assert verify_run(db, judged, head=head).intact
    assert main(["verify", str(judged), "--head", head, "--db", db_path]) == 0
    # Rewriting the chain from an edit onwards (what a careful forger would do) loses the head.
    assert not verify_run(db, judged, head="ab" * 32).intact


def test_a_run_from_before_the_record_is_not_called_intact(db, db_path, judged, capsys) -> None:
    _raw(db_path, f"DELETE FROM record_chain WHERE run_id = {judged}")
    assert main(["verify", str(judged), "--db", db_path]) == 2
    assert "has no record" in capsys.readouterr().out


def test_verify_an_unknown_run(db_path, capsys) -> None:
    assert main(["verify", "999", "--db", db_path]) == 2
    assert "there is no run with id 999" in capsys.readouterr().err


def test_decision_content_holds_the_sampling_probability() -> None:
    values = ["KEEP", None, None, 1.0, 0, 0, "{}", None, 0, None, 0, None, "plurality", None,
              None, None, None, None]  # no cascade, no probabilities
    full = seal(DECISION, "item-1", [*values, 1.0], 1.0)
    sampled = seal(DECISION, "item-1", [*values, 0.1], 0.1)
    assert full.content != sampled.content
    assert changed_groups(DECISION, full.parts, [*values, 0.1]) == ["sample"]


def test_a_cancelled_resumed_and_rejudged_run_stays_verifiable(db, db_path, simulator_factory):
    """Rows rewritten on purpose (a resume decides again, a re-judge replaces an item's calls)
    get new entries: the latest one per row is what the row must match."""
    sim = simulator_factory(latency_ms=20)
    dataset_id = save_dataset(db, make_parsed(40, salt="record-resume")).id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=tiny_panel(sim.base_url))
    registry = JobRegistry()
    job = registry.start_run(db_path, run_id, concurrency=2)
    while job.progress().written < 12:
        job.wait(0.05)
    assert registry.cancel(run_id) and job.wait(30)
    assert verify_run(db, run_id).intact  # a cancelled run's record holds what it stored
    assert registry.resume(db_path, run_id, concurrency=8).wait(60)
    assert registry.rejudge_item(db_path, run_id, "item-000004").wait(60)
    result = verify_run(db, run_id)
    assert result.intact, [m.sentence() for m in result.mismatches]
    assert result.by_kind["decision"] >= 41  # item-000004 decided twice


def test_a_call_deleted_on_purpose_is_recorded_as_deleted(db, judged) -> None:
    from storage.results.calls import delete_item_calls
    from storage.reviewing.record_chain import seal_deleted_calls, sealing

    # What a re-judge does when a critic is not called again (a later cascade tier).
    with sealing(db):
        delete_item_calls(db, judged, "item-000006", critic="critic_2")
        seal_deleted_calls(db, judged, [("item-000006", "critic_2")])
    assert verify_run(db, judged).intact


# -- the audit sample (chain version 3) ----------------------------------------------------------


@pytest.fixture
def audited(db, judged):
    """`judged` with an audit sample of 8 drawn (by confidence, as every new sample is) and
    its first 4 items labelled blind."""
    draw_audit_sample(db, judged, 8, seed=1)
    items = audit_items(db, judged, design_cuts(sample_design(db, judged)))
    for row in items[:4]:
        add_override(db, judged, row["item_id"], "KEEP", "", "ana", blind=True)
    return judged


def test_the_audit_draws_are_sealed_with_their_inclusion_probability(db, db_path, audited,
                                                                     capsys) -> None:
    result = verify_run(db, audited)
    assert result.intact, [m.sentence() for m in result.mismatches]
    assert result.by_kind["audit_item"] == 8
    rows = {r[0]: r[1:] for r in db.execute(
        "SELECT item_id, stratum, stratum_size, weight FROM audit_items WHERE run_id = ?",
        [audited])}
    # Each draw's chain entry holds its inclusion probability when drawn: 1 / its weight (the
    # stratum's items per sampled item), hashed with it; not 1.0.
    kept = dict(db.execute("SELECT key, sample_probability FROM record_chain WHERE run_id = ?"
                           " AND kind = 'audit_item'", [audited]).fetchall())
    assert kept.keys() == rows.keys()
    for item, (_, _, weight) in rows.items():
        assert kept[item] == pytest.approx(1.0 / weight)
    assert min(kept.values()) < 1.0  # 8 of 12 items: some stratum is not drawn whole
    # Each stratum's sampled share: drawn / its size.
    drawn: dict[str, int] = {}
    for stratum, _, _ in rows.values():
        drawn[stratum] = drawn.get(stratum, 0) + 1
    assert result.audit == {s: (n, next(size for st, size, _ in rows.values() if st == s))
                            for s, n in drawn.items()}
    assert main(["verify", str(audited), "--db", db_path]) == 0
    out = capsys.readouterr().out
    assert "8 audit draws" in out and "Audit sample: " in out
    stratum, (n, size) = next(iter(result.audit.items()))
    assert f"{n} of {size} {stratum} items (inclusion probability {n / size:.4g})" in out
    # The label-next queue reorders the sample (not sealed) and may draw more (sealed).
    refresh_label_next(db, audited)
    assert verify_run(db, audited).intact


def test_an_edited_audit_row_is_named(db, db_path, audited, capsys) -> None:
    item = db.execute("SELECT item_id FROM audit_items WHERE run_id = ? AND stratum != 'sure'"
                      " ORDER BY draw_order LIMIT 1", [audited]).fetchone()
    item = item[0] if item else db.execute(
        "SELECT item_id FROM audit_items WHERE run_id = ? ORDER BY draw_order LIMIT 1",
        [audited]).fetchone()[0]
    # Moving an item into the "sure" stratum with weight 1 changes what the estimate weighs.
    _raw(db_path, f"UPDATE audit_items SET stratum = 'sure', weight = 1.0 WHERE run_id ="
                  f" {audited} AND item_id = '{item}'")
    assert main(["verify", str(audited), "--db", db_path]) == 2
    out = capsys.readouterr().out
    assert f"First: audit_items row {item} (record #" in out, out
    assert "its draw (stratum, stratum_size, weight, design) changed since it was recorded;" \
        " now stratum='sure', " in out and "weight=1.0" in out


def test_deleted_and_inserted_audit_rows_and_a_deleted_blind_label_are_named(
        db, db_path, audited) -> None:
    gone, blind = db.execute("SELECT a.item_id, o.id FROM audit_items a JOIN overrides o ON"
                             " o.run_id = a.run_id AND o.item_id = a.item_id AND o.blind = 1"
                             " WHERE a.run_id = ? ORDER BY a.draw_order LIMIT 1",
                             [audited]).fetchone()
    outside = db.execute("SELECT item_id FROM consensus WHERE run_id = ? AND item_id NOT IN"
                         " (SELECT item_id FROM audit_items WHERE run_id = ?) LIMIT 1",
                         [audited, audited]).fetchone()[0]
    _raw(db_path, f"DELETE FROM audit_items WHERE run_id = {audited} AND item_id = '{gone}'",
         "INSERT INTO audit_items (run_id, item_id, stratum, stratum_size, weight, source,"
         f" draw_order, created_at, design) VALUES ({audited}, '{outside}', 'sure', 9, 1.0,"
         " 'draw', 99, '2026-12-01T00:00:00', 'confidence')",
         "DROP TRIGGER overrides_no_delete", f"DELETE FROM overrides WHERE id = {blind}")
    found = {(m.table, m.key): m.what for m in verify_run(db, audited).mismatches}
    assert "deleted since it was recorded" in found[("audit_items", gone)]
    assert "never recorded" in found[("audit_items", outside)]
    # The human label the estimate read for that item is sealed too.
    assert "deleted since it was recorded" in found[("overrides", str(blind))]
