"""Guessing the id column of an upload (Datasets page): by name, then by unique values."""

from __future__ import annotations

import pytest

from storage.datasets.column_guess import guess_id_column, is_gold_like


def _table(**columns: list[object]) -> tuple[list[str], dict[str, list[object]]]:
    return list(columns), columns


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (_table(text=["a b", "c d"], id=["1", "2"]), "id"),
        (_table(ID=[1, 2], text=["a b", "c d"]), "ID"),
        (_table(review_id=["r1", "r2"], text=["good", "bad"]), "review_id"),  # the reported case
        (_table(text=["x y", "z"], key=["k1", "k2"]), "key"),
        (_table(itemId=["a", "b"], body=["x y", "z w"]), "itemId"),
        (_table(**{"example-id": ["e1", "e2"], "q": ["x y", "z w"]}), "example-id"),
        # `id` beats a `*_id` column that comes first in the file
        (_table(user_id=["u1", "u2"], id=["1", "2"]), "id"),
        # a named column whose values repeat is not an item id: the next candidate wins
        (_table(user_id=["u1", "u1", "u2"], review_id=["r1", "r2", "r3"]), "review_id"),
        # no name says id: the first column of unique, id-like values
        (_table(text=["a b", "c d"], ref=["TX-0001", "TX-0002"]), "ref"),
        # unique single words are data, not ids; free text is not an id
        (_table(category=["Shoes", "Hats"], text=["a b", "c d"]), None),
        (_table(text=["a b", "c d"], label=["KEEP", "KEEP"]), None),
        # an empty cell rules a column out
        (_table(id=["1", None], text=["a b", "c d"]), None),
    ],
)
def test_guess_id_column(
    columns: tuple[list[str], dict[str, list[object]]], expected: str | None
) -> None:
    names, sample = columns
    assert guess_id_column(names, sample) == expected


def test_paid_is_not_an_id_by_its_name() -> None:
    # "paid" ends in "id" but not as a word of its own; its amounts look like ids by value only.
    sample = {"paid": ["10", "12"], "order_id": ["o1", "o2"]}
    assert guess_id_column(["paid", "order_id"], sample) == "order_id"


@pytest.mark.parametrize(("column", "gold_like"), [
    ("gold", True), ("quality_a", True), ("true_score", True), ("ground_truth", True),
    ("human_label", True), ("reference_answer", True), ("expected", True),
    ("answer_a", False), ("question", False), ("goldfish", False), ("labeler_id", False),
])
def test_gold_like_names_are_told_from_data(column: str, gold_like: bool) -> None:
    assert is_gold_like(column) is gold_like
