"""Datasets: one transaction per import, recognised by content hash, typed reads."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

import storage.datasets.dataset_store as datasets_module
from storage.datasets.dataset_store import (
    delete_dataset,
    get_dataset,
    get_item,
    items_frame,
    list_datasets,
    load_items,
    load_items_of,
    save_dataset,
    text_field_lengths,
)
from storage.db import NotFoundError, StorageError
from tests.fixtures_storage import make_parsed, seed_run


def _counts(db):
    return (
        db.execute("SELECT count(*) FROM datasets").fetchone()[0],
        db.execute("SELECT count(*) FROM items").fetchone()[0],
    )


def test_save_and_read_back(db):
    parsed = make_parsed(25)
    saved = save_dataset(db, parsed, name="Curation batch 1")
    assert saved.created
    info = get_dataset(db, saved.id)
    assert info["name"] == "Curation batch 1"
    assert info["n_items"] == 25
    assert info["fields"] == ["text", "n"]
    assert info["columns"] == ["id", "text", "n", "gold"]
    assert info["file_hash"] == parsed.content_hash
    items = load_items(db, saved.id)
    assert [i.id for i in items] == [i.id for i in parsed.items]  # file order kept
    assert items[3].fields == parsed.items[3].fields
    assert items[3].gold == parsed.items[3].gold
    assert [i.id for i in load_items(db, saved.id, limit=5, offset=10)] == [
        i.id for i in parsed.items[10:15]
    ]
    assert get_item(db, saved.id, "item-000007").fields["n"] == 7
    frame = items_frame(db, saved.id, limit=4)
    assert list(frame.columns) == ["id", "text", "n", "gold"]
    assert len(frame) == 4
    assert [d["id"] for d in list_datasets(db)] == [saved.id]


def test_the_same_file_is_recognised_not_duplicated(db):
    first = save_dataset(db, make_parsed(10), name="a")
    again = save_dataset(db, make_parsed(10), name="a again")
    assert again == (first.id, False)
    assert _counts(db) == (1, 10)


def test_the_same_file_with_another_mapping_is_another_dataset(db):
    first = save_dataset(db, make_parsed(10))
    remapped = dataclasses.replace(make_parsed(10), gold_column=None)
    second = save_dataset(db, remapped)
    assert second.created and second.id != first.id


def test_a_failure_midway_writes_nothing(db, monkeypatch):
    real_rows = datasets_module._item_rows

    def failing_rows(dataset_id, items):
        for n, row in enumerate(real_rows(dataset_id, items)):
            if n == 500:
                raise OSError("disk unplugged (injected)")
            yield row

    monkeypatch.setattr(datasets_module, "_item_rows", failing_rows)
    with pytest.raises(OSError, match="injected"):
        save_dataset(db, make_parsed(2000))
    assert _counts(db) == (0, 0)
    monkeypatch.setattr(datasets_module, "_item_rows", real_rows)
    assert save_dataset(db, make_parsed(2000)).created  # and the retry works
    assert _counts(db) == (1, 2000)


def test_duplicate_ids_roll_the_whole_import_back(db):
    parsed = make_parsed(50)
    parsed.items[40].id = parsed.items[3].id
    with pytest.raises(sqlite3.IntegrityError):
        save_dataset(db, parsed)
    assert _counts(db) == (0, 0)


def test_an_empty_dataset_is_refused(db):
    parsed = make_parsed(3)
    parsed.items = []
    with pytest.raises(StorageError, match="no items"):
        save_dataset(db, parsed)
    assert _counts(db) == (0, 0)


def test_delete(db):
    saved = save_dataset(db, make_parsed(5))
    delete_dataset(db, saved.id)
    assert _counts(db) == (0, 0)
    with pytest.raises(NotFoundError):
        get_dataset(db, saved.id)


def test_a_dataset_with_runs_cannot_be_deleted(db):
    run = seed_run(db, 5)
    with pytest.raises(StorageError, match="used by 1 run"):
        delete_dataset(db, run.dataset_id)
    assert get_dataset(db, run.dataset_id)["n_runs"] == 1


def test_unknown_ids_raise_not_found(db):
    with pytest.raises(NotFoundError, match="no dataset with id 42"):
        get_dataset(db, 42)
    saved = save_dataset(db, make_parsed(2))
    with pytest.raises(NotFoundError, match="no item 'nope'"):
        get_item(db, saved.id, "nope")


def test_with_the_real_importer(db, tmp_path):
    from storage.datasets.importing import read_dataset

    path = tmp_path / "batch.csv"
    path.write_text("id,text,label\nA1,first,KEEP\nA2,second,REJECT\n", encoding="utf-8")
    parsed = read_dataset(path, filename="batch.csv", id_column="id", gold_column="label")
    saved = save_dataset(db, parsed)
    assert get_dataset(db, saved.id)["filename"] == "batch.csv"
    assert [(i.id, i.gold) for i in load_items(db, saved.id)] == [("A1", "KEEP"), ("A2", "REJECT")]
    assert not save_dataset(db, read_dataset(path, filename="batch.csv", id_column="id",
                                             gold_column="label")).created


def test_some_items_read_in_file_order_and_field_lengths_counted_by_sqlite(db):
    parsed = make_parsed(25)
    dataset_id = save_dataset(db, parsed).id
    every = load_items(db, dataset_id)
    wanted = [every[20].id, every[3].id, "not-an-item", every[11].id]
    assert load_items_of(db, dataset_id, wanted) == [every[3], every[11], every[20]]
    assert load_items_of(db, dataset_id, []) == []
    texts = [len(i.fields["text"]) for i in every if isinstance(i.fields["text"], str)]
    lengths = text_field_lengths(db, dataset_id)
    assert lengths["text"] == pytest.approx(sum(texts) / len(texts))
    assert set(lengths) == {"text"}  # "n" holds numbers: not a text to measure


def test_field_lengths_of_a_sample_read_only_the_first_items(db):
    # The first 5 items' texts are 10 characters long, the other 20 a thousand.
    parsed = make_parsed(25, text=lambda i: "x" * (10 if i < 5 else 1000))
    dataset_id = save_dataset(db, parsed).id
    assert text_field_lengths(db, dataset_id, sample=5) == {"text": 10.0}
    assert text_field_lengths(db, dataset_id) == {"text": (5 * 10 + 20 * 1000) / 25}
