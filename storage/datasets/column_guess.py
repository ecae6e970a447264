"""Guess which column of a dataset holds the item ids (and which the gold labels): the one
rule the Datasets page uses to pre-fill its mapping form and `jurybox judge` uses when no
`--id-column` is given, so an item has the same id whichever way its file came in.

A guess only: the import itself checks that ids are present and unique, and says which row
breaks the rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from storage.datasets.importing import Source, preview_dataset, suggest_columns

# The rows the guess reads (the Datasets page previews as many): values unique over them.
GUESS_ROWS = 200

# Names that say "identifier", best first; `*_id` / `*-id` / `* id` / `*Id` (review_id,
# example-id, itemId) come after them.
_ID_NAMES = ("id", "key", "item_id", "itemid", "uid", "uuid", "_id", "example_id", "guid")
_ID_SUFFIX = re.compile(r"(?:[_\- ]id|[a-z]Id|ID)$")
# Beyond this a value reads as text (a sentence, a description), not as an identifier.
_MAX_ID_LENGTH = 64


def _name_rank(column: str) -> int | None:
    """How strongly the name alone says "id" (lower is stronger), or None."""
    lower = column.strip().lower()
    if lower in _ID_NAMES:
        return _ID_NAMES.index(lower)
    if _ID_SUFFIX.search(column.strip()):
        return len(_ID_NAMES)
    return None


def _texts(values: Sequence[Any]) -> list[str]:
    return ["" if v is None else str(v).strip() for v in values]


def _unique_present(values: Sequence[Any]) -> bool:
    texts = _texts(values)
    return bool(texts) and all(texts) and len(set(texts)) == len(texts)


def _looks_like_ids(values: Sequence[Any]) -> bool:
    """Present, unique, short, no spaces and each with a digit (TX-0006, 42, a UUID): a column
    of unique single words (category names) is data, not an identifier."""
    return _unique_present(values) and all(
        len(t) <= _MAX_ID_LENGTH and not any(c.isspace() for c in t)
        and any(c.isdigit() for c in t)
        for t in _texts(values)
    )


def guess_id_column(columns: Sequence[str], sample: Mapping[str, Sequence[Any]]) -> str | None:
    """The column most likely to hold item ids, or None (then the import generates ids).

    Args:
        columns: the table's columns, in file order.
        sample: column -> its values in the first rows of the file (the preview).

    Returns:
        By name first (`id`, `key`, `item_id`, ... then any `*_id` such as `review_id`), among
        the columns whose sampled values are present and unique; else the first column whose
        values look like identifiers (present, unique, short, no spaces, with a digit). A named
        column with repeated values (`user_id` of a review table) is not an item id: skipped.
    """
    named = sorted(
        (rank, position, column)
        for position, column in enumerate(columns)
        if (rank := _name_rank(column)) is not None
    )
    for _, _, column in named:
        if _unique_present(sample.get(column, ())):
            return column
    for column in columns:
        if _looks_like_ids(sample.get(column, ())):
            return column
    return None


# Names that say "the answer key", not "what to judge": gold, label(s), truth (ground_truth),
# true_*, quality (the pairwise demo's quality_a), reference, expected, as whole words of the name.
_GOLD_LIKE = re.compile(
    r"(?:^|[_\- ])(?:gold|labels?|truth|quality|reference|expected)(?:[_\- ]|$)|^true[_\- ]",
    re.IGNORECASE)


def is_gold_like(column: str) -> bool:
    """Whether a column's name says it holds a known answer (see `_GOLD_LIKE`)."""
    return bool(_GOLD_LIKE.search(column.strip()))


def prompt_columns(fields: Sequence[str], gold_column: str | None) -> list[str]:
    """The fields a starting prompt shows: all but the gold column and gold-like ones, whose
    values would hand a critic the answer. All of them when every field looks gold-like (a
    prompt must show something; the user edits it)."""
    shown = [f for f in fields if f != gold_column and not is_gold_like(f)]
    return shown or [f for f in fields if f != gold_column] or list(fields)


class ColumnGuess(TypedDict):
    """The guessed id and gold columns (None: ids are generated / no gold label)."""

    id: str | None
    gold: str | None


def guess_columns(columns: Sequence[str], sample: Mapping[str, Sequence[Any]]) -> ColumnGuess:
    """The id column (`guess_id_column`) and the gold column (by name: gold, label, answer,
    ...; never the id column) of a table.

    Args:
        columns: the table's columns, in file order.
        sample: column -> its values in the first `GUESS_ROWS` rows.
    """
    id_column = guess_id_column(columns, sample)
    gold = suggest_columns(columns)["gold"]
    return {"id": id_column, "gold": None if gold == id_column else gold}


def guess_file_columns(source: Source, *, filename: str | None = None) -> ColumnGuess:
    """`guess_columns` over the first `GUESS_ROWS` rows of a dataset file (what the Datasets
    page previews of an upload).

    Raises:
        DataError, ConfigError: as `storage.datasets.importing.preview_dataset`.
    """
    frame, _ = preview_dataset(source, filename=filename, n=GUESS_ROWS)
    columns = [str(c) for c in frame.columns]
    return guess_columns(columns, {str(c): list(frame[c]) for c in frame.columns})
