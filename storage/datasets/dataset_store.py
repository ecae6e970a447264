"""Datasets and their items: saved in one transaction, recognised by content hash."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol, overload

import pandas as pd
import sqlite_utils

from judging.verdicts import Item
from storage.db import NotFoundError, StorageError, dumps, loads, now


class ParsedLike(Protocol):
    """What `save_dataset` needs from `storage.datasets.importing.ParsedDataset`."""

    # Read-only: a frozen ParsedDataset fits, and storage never changes what it is given.
    @property
    def items(self) -> Iterable[Item]: ...

    @property
    def columns(self) -> list[str]: ...

    @property
    def fields(self) -> list[str]: ...

    @property
    def id_column(self) -> str | None: ...

    @property
    def gold_column(self) -> str | None: ...

    @property
    def filename(self) -> str: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def format(self) -> str: ...


# Items inserted per statement while a dataset is saved (all in one transaction).
SAVE_CHUNK = 5000


class SavedDataset(NamedTuple):
    """Result of `save_dataset`: the dataset id, and False when the same content was already there."""

    id: int
    created: bool


def _item_rows(dataset_id: int, items: Iterable[Item]) -> Iterator[tuple[Any, ...]]:
    for position, item in enumerate(items):
        yield (
            dataset_id,
            str(item.id),
            position,
            dumps(item.fields),
            None if item.gold is None else str(item.gold),
        )


def dataset_hash(file_hash: str, id_column: str | None, gold_column: str | None, fields: list[str]) -> str:
    """A dataset's identity: the file's bytes AND how its columns were mapped.

    The same file imported with another id or gold column makes different items, so it is a
    different dataset; the same file with the same mapping is recognised.
    """
    mapping = dumps([file_hash, id_column, gold_column, list(fields)]) or ""
    return hashlib.sha256(mapping.encode("utf-8")).hexdigest()


def find_dataset_by_hash(db: sqlite_utils.Database, content_hash: str) -> int | None:
    """The id of the dataset with this content hash (see `dataset_hash`), or None."""
    row = db.execute("SELECT id FROM datasets WHERE content_hash = ?", [content_hash]).fetchone()
    return None if row is None else int(row[0])


def save_dataset(
    db: sqlite_utils.Database,
    parsed: ParsedLike,
    *,
    name: str | None = None,
) -> SavedDataset:
    """Save an imported dataset and its items in ONE transaction.

    Args:
        db: a connection from `open_db` (this thread's).
        parsed: a `ParsedDataset` from `storage.datasets.importing.read_dataset` (items, columns, fields,
            content_hash, format). Its items are read once, in chunks of `SAVE_CHUNK`: a
            streamed import (`read_dataset(stream=True)`) is saved without being held.
            Its filename, id_column and gold_column are recorded with it.
        name: the name shown in the app (default: the file name).

    Returns:
        `SavedDataset(id, created)`. When the same file was already imported with the same
        column mapping (`dataset_hash`), nothing is written and that dataset's id is returned
        with `created=False`.

    Raises:
        StorageError: the dataset has no items.
        Any error while reading the items or writing (a repeated id is an IntegrityError):
            the transaction is rolled back, nothing is left behind.
    """
    fields = list(getattr(parsed, "fields", None) or parsed.columns)
    filename = getattr(parsed, "filename", None)
    id_column = getattr(parsed, "id_column", None)
    gold_column = getattr(parsed, "gold_column", None)
    identity = dataset_hash(parsed.content_hash, id_column, gold_column, fields)
    existing = find_dataset_by_hash(db, identity)
    if existing is not None:
        return SavedDataset(existing, False)
    # The items are written as they are iterated (a streamed import holds none of them), all
    # in this one transaction: an error part way (a bad row, a repeated id, a full disk)
    # rolls the whole dataset back, so a half dataset is never left behind.
    with db.atomic():
        cursor = db.execute(
            "INSERT INTO datasets (name, filename, format, content_hash, file_hash, n_items,"
            " columns, fields, id_column, gold_column, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                name or filename or "dataset",
                filename,
                parsed.format,
                identity,
                parsed.content_hash,
                0,  # counted below, as the items go in
                dumps(list(parsed.columns)),
                dumps(fields),
                id_column,
                gold_column,
                now(),
            ],
        )
        dataset_id = int(cursor.lastrowid or 0)
        rows = _item_rows(dataset_id, parsed.items)
        while chunk := list(itertools.islice(rows, SAVE_CHUNK)):
            db.conn.executemany(
                "INSERT INTO items (dataset_id, item_id, position, fields, gold)"
                " VALUES (?, ?, ?, ?, ?)", chunk)
        n_items = int(db.execute(
            "SELECT count(*) FROM items WHERE dataset_id = ?", [dataset_id]).fetchone()[0])
        if not n_items:
            raise StorageError("The dataset has no items: nothing was saved.")
        db.execute("UPDATE datasets SET n_items = ? WHERE id = ?", [n_items, dataset_id])
    return SavedDataset(dataset_id, True)


def _dataset_dict(row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    row["columns"] = loads(row["columns"])
    row["fields"] = loads(row["fields"])
    return row


# Every dataset read carries how many runs use it (a dataset with runs cannot be deleted).
_DATASET_SELECT = (
    "SELECT d.*, (SELECT count(*) FROM runs r WHERE r.dataset_id = d.id) AS n_runs "
    "FROM datasets d"
)


def list_datasets(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Every dataset, newest first: id, name, filename, format, content_hash, n_items, columns,
    fields, id_column, gold_column, created_at, n_runs."""
    rows = db.query(_DATASET_SELECT + " ORDER BY d.id DESC")
    return [_dataset_dict(row) for row in rows]


def get_dataset(db: sqlite_utils.Database, dataset_id: int) -> dict[str, Any]:
    """One dataset's metadata (as in `list_datasets`).

    Raises:
        NotFoundError: no dataset has this id.
    """
    rows = list(
        db.query(_DATASET_SELECT + " WHERE d.id = ?", [dataset_id])
    )
    if not rows:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    return _dataset_dict(rows[0])


def load_items(
    db: sqlite_utils.Database, dataset_id: int, *, limit: int | None = None, offset: int = 0
) -> list[Item]:
    """The dataset's items in their file order (all of them unless `limit` is given)."""
    sql = "SELECT item_id, fields, gold FROM items WHERE dataset_id = ? ORDER BY position"
    params: list[Any] = [dataset_id]
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]
    return [
        Item(id=item_id, fields=loads(fields), gold=gold)
        for item_id, fields, gold in db.execute(sql, params).fetchall()
    ]


def load_items_of(
    db: sqlite_utils.Database, dataset_id: int, item_ids: Iterable[str]
) -> list[Item]:
    """Some of the dataset's items, in file order (one query; unknown ids are left out)."""
    return [
        Item(id=item_id, fields=loads(fields), gold=gold)
        for item_id, fields, gold in db.execute(
            "SELECT item_id, fields, gold FROM items WHERE dataset_id = ?"
            " AND item_id IN (SELECT value FROM json_each(?)) ORDER BY position",
            [dataset_id, dumps(list(item_ids))],
        ).fetchall()
    ]


class DatasetItems(Sequence[Item]):
    """A dataset's items in file order, read from SQLite a page at a time as they are iterated.

    What a run iterates instead of `load_items`: it holds one page, never the dataset. Each
    page is its own short query (keyset on `position`, never OFFSET), so no read stays open
    across the run (a long read would keep the WAL from being checkpointed while the run
    writes). `len()` is the item count, counted once. Iterate it on the thread that owns `db`.
    Indexing (`items[i]`) reads one item; slices are not supported.
    """

    def __init__(
        self,
        db: sqlite_utils.Database,
        dataset_id: int,
        *,
        page_size: int = 2000,
        on_page: Callable[[list[Item]], None] | None = None,
    ) -> None:
        """`on_page(items)` is called with each page as it is read, before its items are
        handed out (to load what goes with them, such as their stored successes)."""
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, not {page_size}")
        self.on_page = on_page
        self.db = db
        self.dataset_id = int(dataset_id)
        self.page_size = int(page_size)
        self._len = int(db.execute(
            "SELECT count(*) FROM items WHERE dataset_id = ?", [self.dataset_id]).fetchone()[0])

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Item]:
        after = -1
        while True:
            rows = self.db.execute(
                "SELECT position, item_id, fields, gold FROM items WHERE dataset_id = ?"
                " AND position > ? ORDER BY position LIMIT ?",
                [self.dataset_id, after, self.page_size],
            ).fetchall()
            page = [Item(id=item_id, fields=loads(fields), gold=gold)
                    for _, item_id, fields, gold in rows]
            if self.on_page is not None and page:
                self.on_page(page)
            yield from page
            if len(rows) < self.page_size:
                return
            after = rows[-1][0]

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Item]: ...

    def __getitem__(self, index: int | slice) -> Item | Sequence[Item]:
        if isinstance(index, slice):
            raise TypeError("DatasetItems cannot be sliced: use load_items(limit=, offset=)")
        position = index + self._len if index < 0 else index
        if not 0 <= position < self._len:
            raise IndexError(f"item index {index} out of range for {self._len} items")
        return load_items(self.db, self.dataset_id, limit=1, offset=position)[0]


def get_item(db: sqlite_utils.Database, dataset_id: int, item_id: str) -> Item:
    """One item.

    Raises:
        NotFoundError: the dataset has no item with this id.
    """
    row = db.execute(
        "SELECT item_id, fields, gold FROM items WHERE dataset_id = ? AND item_id = ?",
        [dataset_id, item_id],
    ).fetchone()
    if row is None:
        raise NotFoundError(f"Dataset {dataset_id} has no item {item_id!r}.")
    return Item(id=row[0], fields=loads(row[1]), gold=row[2])


def items_frame(db: sqlite_utils.Database, dataset_id: int, *, limit: int = 1000) -> pd.DataFrame:
    """A preview table: `id`, one column per field, and `gold` (first `limit` items)."""
    items = load_items(db, dataset_id, limit=limit)
    records = [{"id": it.id, **{str(k): v for k, v in it.fields.items()}, "gold": it.gold} for it in items]
    return pd.DataFrame.from_records(records)


def delete_dataset(db: sqlite_utils.Database, dataset_id: int) -> None:
    """Delete a dataset and its items.

    Raises:
        NotFoundError: no dataset has this id.
        StorageError: runs use it (their verdicts and overrides are kept, so the dataset stays).
    """
    info = get_dataset(db, dataset_id)
    if info["n_runs"]:
        raise StorageError(
            f"Dataset {info['name']!r} is used by {info['n_runs']} run(s); it cannot be deleted "
            "while their results and overrides depend on it."
        )
    with db.atomic():
        db.execute("DELETE FROM items WHERE dataset_id = ?", [dataset_id])
        db.execute("DELETE FROM datasets WHERE id = ?", [dataset_id])


def field_values(
    db: sqlite_utils.Database, dataset_id: int, field: str, *, limit: int = 20_000
) -> list[str]:
    """The distinct values of one field over the dataset's items, sorted (for a picker, such
    as the class a taxonomy merge goes into). At most `limit` values."""
    rows = db.execute(
        "SELECT DISTINCT CAST(j.value AS TEXT) FROM items i, json_each(i.fields) j"
        " WHERE i.dataset_id = ? AND j.key = ? AND j.value IS NOT NULL"
        " ORDER BY 1 LIMIT ?",
        [dataset_id, field, limit],
    ).fetchall()
    return [str(value) for (value,) in rows]


def text_field_lengths(db: sqlite_utils.Database, dataset_id: int, *,
                       sample: int | None = None) -> dict[str, float]:
    """Each field's mean length in characters over the items where it holds text (a field
    that never does is left out). Counted by SQLite: no item is loaded.

    Args:
        sample: only the dataset's first `sample` items (in file order), e.g. to tell which
            field is the longest without reading a million items; None: every item.
    """
    return dict(db.execute(  # (a negative LIMIT is none: every item)
        "SELECT j.key, avg(length(j.value)) FROM (SELECT fields FROM items"
        " WHERE dataset_id = :ds ORDER BY position LIMIT :n) i, json_each(i.fields) j"
        " WHERE j.type = 'text' GROUP BY j.key",
        {"ds": dataset_id, "n": -1 if sample is None else sample},
    ).fetchall())


def field_lengths(db: sqlite_utils.Database, dataset_id: int, field: str) -> dict[str, int]:
    """item_id -> the length in characters of the item's `field`, for the items where it
    holds text or a number (a number counts as JSON writes it); other items are left out."""
    return dict(db.execute(
        "SELECT i.item_id, length(j.value) FROM items i, json_each(i.fields) j"
        " WHERE i.dataset_id = ? AND j.key = ? AND j.type IN ('text', 'integer', 'real')",
        [dataset_id, field],
    ).fetchall())
