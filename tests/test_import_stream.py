"""Streamed imports (`read_dataset(stream=True)`): the same items, the same refusals and the
same sentences as a whole-file read, with no row kept; saving one is one transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import storage.datasets.dataset_store
import storage.datasets.importing
from judging.errors import DataError
from judging.verdicts import Item
from storage.datasets.dataset_store import list_datasets, load_items, save_dataset
from storage.datasets.import_limits import Budget
from storage.datasets.importing import ImportLimits, StreamedItems, dataset_columns, read_dataset
from storage.datasets.readers import iter_records, parquet_arrow
from tests.fixtures_import import write_dataset_file
from tests.test_import import BAD, FORMATS, ROWS


def _message(raw: bytes, **kwargs: Any) -> str:
    with pytest.raises(DataError) as caught:
        read_dataset(raw, **kwargs)
    return str(caught.value)


@pytest.mark.parametrize(("name", "raw", "kwargs"), [case[1:4] for case in BAD],
                         ids=[case[0] for case in BAD])
def test_a_streamed_read_refuses_what_a_whole_read_does_in_the_same_words(
    name: str, raw: bytes, kwargs: dict[str, Any]
) -> None:
    assert _message(raw, filename=name, stream=True, **kwargs) == _message(
        raw, filename=name, **kwargs)


@pytest.mark.parametrize("ext", FORMATS)
def test_a_streamed_read_gives_the_same_dataset(tmp_path: Path, ext: str) -> None:
    path = write_dataset_file(tmp_path / f"items.{ext}", ROWS)
    whole = read_dataset(path, id_column="id", gold_column="gold")
    streamed = read_dataset(path, id_column="id", gold_column="gold", stream=True)
    assert isinstance(streamed.items, StreamedItems)
    assert list(streamed.items) == list(whole.items) and len(streamed.items) == 3
    assert list(streamed.items) == list(whole.items)  # read again: the same
    assert streamed.items[0] == whole.items[0] and list(streamed.items[:2]) == whole.items[:2]
    for attribute in ("columns", "fields", "id_column", "gold_column", "format", "content_hash",
                      "filename", "n_rows", "encoding"):
        assert getattr(streamed, attribute) == getattr(whole, attribute), attribute
    assert dataset_columns(path) == whole.columns


def test_jsonl_columns_are_every_records_keys_streamed_too() -> None:
    raw = b'{"id": "a", "text": "x"}\n{"id": "b", "extra": 1}\n'
    streamed = read_dataset(raw, filename="a.jsonl", id_column="id", stream=True)
    assert streamed.fields == ["text", "extra"]
    assert [i.fields for i in streamed.items] == [{"text": "x", "extra": None},
                                                 {"text": None, "extra": 1}]
    assert dataset_columns(raw, filename="a.jsonl") == ["id", "text", "extra"]


def test_many_duplicates_are_summarised_across_id_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage.datasets.importing, "ID_CHUNK", 7)
    raw = b"id\n" + b"".join(b"%d\n%d\n" % (n, n) for n in range(40))
    assert _message(raw, filename="a.csv", id_column="id", stream=True) == _message(
        raw, filename="a.csv", id_column="id")


def test_a_duplicate_id_in_a_later_chunk_leaves_no_dataset_and_names_it(
    db: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage.datasets.importing, "ID_CHUNK", 5)
    monkeypatch.setattr(storage.datasets.dataset_store, "SAVE_CHUNK", 5)
    lines = [f"c{n:03d},class {n}" for n in range(23)] + ["c004,again"]
    path = tmp_path / "items.csv"
    path.write_text("id,text\n" + "\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        parsed = read_dataset(path, id_column="id", stream=True)
        save_dataset(db, parsed)
    message = str(caught.value)
    assert "duplicate ids: 'c004' at line 6 and line 25" in message
    assert "1 repeated row, 1 distinct id" in message
    assert list_datasets(db) == []
    assert db.execute("SELECT count(*) FROM items").fetchone()[0] == 0


class _Parsed:
    """A ParsedLike whose items fail part way, as a file changed under a streamed import."""

    columns = ["text"]
    fields = ["text"]
    id_column = None
    gold_column = None
    filename = "broken.csv"
    content_hash = "f" * 64
    format = "csv"

    @property
    def items(self) -> Any:
        for n in range(23):
            yield Item(id=f"row-{n}", fields={"text": str(n)})
        raise DataError("broken.csv, line 25: the file changed while it was read.")


def test_an_error_part_way_through_saving_rolls_the_whole_dataset_back(
    db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage.datasets.dataset_store, "SAVE_CHUNK", 5)
    with pytest.raises(DataError, match="changed while it was read"):
        save_dataset(db, _Parsed())
    assert list_datasets(db) == []
    assert db.execute("SELECT count(*) FROM items").fetchone()[0] == 0


def test_a_streamed_dataset_is_saved_in_chunks_whole(
    db: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage.datasets.dataset_store, "SAVE_CHUNK", 4)
    path = tmp_path / "items.csv"
    path.write_text("id,text\n" + "".join(f"i{n},t{n}\n" for n in range(11)), encoding="utf-8")
    saved = save_dataset(db, read_dataset(path, id_column="id", stream=True))
    assert saved.created and list_datasets(db)[0]["n_items"] == 11
    assert load_items(db, saved.id) == list(read_dataset(path, id_column="id").items)


def test_a_parquet_file_is_read_a_batch_at_a_time(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The first record of a 10,000-row Parquet file comes after one batch was decoded, not
    the file: a million-row file is never held as Python values."""
    rows = [{"id": f"c{n:05d}", "text": f"class {n}"} for n in range(10_000)]
    raw = write_dataset_file(tmp_path / "many.parquet", rows).read_bytes()
    decoded: list[int] = []
    decode = parquet_arrow.decode

    def counting(batch: Any) -> Any:
        decoded.append(batch.num_rows)
        return decode(batch)

    monkeypatch.setattr(parquet_arrow, "decode", counting)
    columns: list[str] = []
    records = iter_records(raw, "parquet", "many.parquet", Budget(ImportLimits(), "many.parquet"),
                           columns)
    first = next(records)
    assert first.values == {"id": "c00000", "text": "class 0"} and columns == ["id", "text"]
    assert len(decoded) == 1 and decoded[0] < len(rows)
    assert [r.values["id"] for r in records] == [row["id"] for row in rows[1:]]
    assert sum(decoded) == len(rows) and len(decoded) > 1
