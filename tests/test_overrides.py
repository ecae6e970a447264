"""Overrides: append-only history, latest wins, concurrent reviewers lose nothing."""

from __future__ import annotations

import sqlite3
import threading
from types import SimpleNamespace

import pytest

from storage.datasets.dataset_store import save_dataset
from storage.db import NotFoundError, StorageError, open_db
from storage.panels import save_panel
from storage.results.runs import create_run
from storage.reviewing.overrides import (
    accept_consensus,
    add_override,
    final_labels,
    human_labels,
    override_history,
)
from tests.fixtures_storage import make_parsed, seed_run


@pytest.fixture
def run(db):
    return seed_run(db, 20)


def test_latest_override_wins_and_history_is_kept(db, run):
    add_override(db, run.run_id, "item-000004", "SPLIT", "two kinds of shoe", "ann")
    add_override(db, run.run_id, "item-000004", "MERGE", "no: duplicate of Trainers", "bob")
    history = override_history(db, run.run_id, "item-000004")
    assert [(h["label"], h["reviewer"], h["note"]) for h in history] == [
        ("SPLIT", "ann", "two kinds of shoe"),
        ("MERGE", "bob", "no: duplicate of Trainers"),
    ]
    final = final_labels(db, run.run_id).set_index("item_id")
    assert final.loc["item-000004", "final_label"] == "MERGE"
    assert final.loc["item-000004", "override_note"] == "no: duplicate of Trainers"
    assert bool(final.loc["item-000004", "overridden"])
    untouched = final.drop(index="item-000004")
    assert not untouched["overridden"].any()
    assert list(untouched["final_label"]) == list(untouched["consensus"])
    assert human_labels(db, run.run_id) == {"item-000004": "MERGE"}


def test_the_table_refuses_updates_and_deletes(db, run):
    override_id = add_override(db, run.run_id, "item-000001", "KEEP", "", "ann")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE overrides SET label = 'REJECT' WHERE id = ?", [override_id])
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM overrides WHERE id = ?", [override_id])
    assert override_history(db, run.run_id, "item-000001")[0]["label"] == "KEEP"


@pytest.mark.parametrize(
    ("item", "label", "reviewer", "error", "message"),
    [
        ("item-000001", "  ", "ann", StorageError, "needs a label"),
        ("item-000001", "KEEP", "", StorageError, "reviewer"),
        ("no-such-item", "KEEP", "ann", NotFoundError, "no item 'no-such-item'"),
    ],
)
def test_bad_overrides_are_refused_with_a_reason(db, run, item, label, reviewer, error, message):
    with pytest.raises(error, match=message):
        add_override(db, run.run_id, item, label, "", reviewer)
    assert db.execute("SELECT count(*) FROM overrides").fetchone()[0] == 0


def test_unknown_run(db, run):
    with pytest.raises(NotFoundError, match="no run with id 77"):
        add_override(db, 77, "item-000001", "KEEP", "", "ann")


def test_two_reviewers_at_once_lose_nothing(db_path):
    setup = open_db(db_path)
    run = seed_run(setup, 30)
    setup.close()
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def reviewer(name: str) -> None:
        db = open_db(db_path)  # each reviewer's session has its own connection
        try:
            start.wait()
            for n in range(100):
                add_override(db, run.run_id, f"item-{n % 30:06d}", "KEEP", f"{name} #{n}", name)
        except BaseException as error:  # noqa: BLE001
            errors.append(error)
        finally:
            db.close()

    threads = [threading.Thread(target=reviewer, args=(name,)) for name in ("ann", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    db = open_db(db_path)
    notes = {r[0] for r in db.execute("SELECT note FROM overrides")}
    assert notes == {f"{name} #{n}" for name in ("ann", "bob") for n in range(100)}
    assert len(override_history(db, run.run_id, "item-000000")) == 8  # 4 per reviewer


def test_accept_consensus_for_a_filtered_set(db, run):
    ids = ["item-000001", "item-000002", "item-000003"]
    added = accept_consensus(db, run.run_id, ids, "ann").added
    with_consensus = [i for i in ids if run.outcomes[i].consensus is not None]
    assert added == len(with_consensus)
    labels = human_labels(db, run.run_id)
    assert labels == {i: run.outcomes[i].consensus for i in with_consensus}
    assert override_history(db, run.run_id, with_consensus[0])[0]["note"] == "accepted the consensus"
    with pytest.raises(StorageError):
        accept_consensus(db, run.run_id, ids, " ")


def test_a_blind_label_is_the_human_label_even_after_a_revision(db, run):
    from storage.reviewing.overrides import blind_label, blind_labels

    add_override(db, run.run_id, "item-000002", "KEEP", "before the critics", "ann", blind=True)
    add_override(db, run.run_id, "item-000002", "SPLIT", "they convinced me", "ann")
    add_override(db, run.run_id, "item-000003", "REJECT", "", "bob")  # no blind pass here
    # The final label is the latest decision; agreement with the humans uses the blind one.
    final = final_labels(db, run.run_id).set_index("item_id")
    assert final.loc["item-000002", "final_label"] == "SPLIT"
    assert human_labels(db, run.run_id) == {"item-000002": "KEEP", "item-000003": "REJECT"}
    assert blind_labels(db, run.run_id) == {"item-000002": "KEEP"}
    assert [h["blind"] for h in override_history(db, run.run_id, "item-000002")] == [True, False]
    assert blind_label(db, run.run_id, "item-000002", " ann ")["label"] == "KEEP"
    assert blind_label(db, run.run_id, "item-000002", "bob") is None  # per reviewer


def test_the_first_blind_label_of_an_item_is_the_one_counted(db, run):
    add_override(db, run.run_id, "item-000005", "MERGE", "", "ann", blind=True)
    add_override(db, run.run_id, "item-000005", "KEEP", "", "bob", blind=True)
    assert human_labels(db, run.run_id) == {"item-000005": "MERGE"}


def test_an_older_database_gets_the_blind_column_and_keeps_its_overrides(tmp_path):
    import sqlite_utils

    from storage.db import connect
    from storage.migrations import migrations

    path = tmp_path / "old.db"
    old = sqlite_utils.Database(connect(path))
    migrations.apply(old, stop_before="0011_override_blind")
    # A run with items but no verdicts: today's writer would write columns of later migrations.
    parsed = make_parsed(3, salt="old")
    dataset_id = save_dataset(old, parsed, name="old").id
    save_panel(old, panel_hash="old-panel", name="old", yaml_text="name: old\n")
    seeded = SimpleNamespace(run_id=create_run(old, dataset_id=dataset_id, panel_hash="old-panel",
                                               critics=["alpha"]))
    old.execute("INSERT INTO overrides (run_id, item_id, label, note, reviewer, created_at)"
                " VALUES (?, 'item-000001', 'KEEP', 'old note', 'ann', 'then')", [seeded.run_id])
    old.close()
    db = open_db(path)
    (row,) = override_history(db, seeded.run_id, "item-000001")
    assert (row["label"], row["note"], row["blind"]) == ("KEEP", "old note", False)
    assert human_labels(db, seeded.run_id) == {"item-000001": "KEEP"}
