"""Importing a dataset of conversations per turn: one item per assistant turn
(`judging.panel.conversation.turn_items`), stored like any dataset. The Datasets page and
`jurybox turns` use it."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from judging.panel.conversation import TURN_FIELDS, ContextChoice, turn_items
from storage.datasets.importing import ParsedDataset


def turns_dataset(parsed: ParsedDataset, field: str, *,
                  context: ContextChoice | None = None) -> ParsedDataset:
    """A parsed dataset turned into its assistant turns, ready to store. Its content hash is
    the file's with the field and the context choice, so importing the same file the same way
    again is recognised, and another context makes another dataset.

    Raises:
        DataError: the field is missing or holds no conversation (`turn_items`).
    """
    context = context or ContextChoice()
    turns = turn_items(list(parsed.items), field, context=context)
    shared = [f for f in parsed.fields if f != field and f not in TURN_FIELDS]
    digest = hashlib.sha256(
        f"{parsed.content_hash}\nturns\n{field}\n{context.kind},{context.k},{context.tools}"
        .encode()).hexdigest()
    return replace(parsed, items=turns, columns=["id", *shared, *TURN_FIELDS],
                   fields=[*shared, *TURN_FIELDS], id_column="id",
                   # a turn's gold is the one its message carried in the file
                   gold_column="gold" if any(t.gold is not None for t in turns) else None,
                   content_hash=digest, n_rows=len(turns))
