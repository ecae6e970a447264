"""Importing a dataset as comparisons: every pair of its response columns (`judging.panel.pairwise.
compared_in_pairs`), stored like any dataset. The Datasets page and `jurybox pairs` use it, and
say what `pairs_note` says: how A and B were assigned, and what became of the gold labels."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

from judging.panel.pairwise import PAIR_FIELDS, compared_in_pairs
from storage.datasets.importing import ParsedDataset


def pairs_dataset(parsed: ParsedDataset, responses: Sequence[str], *,
                  seed: int = 0, keep_order: bool = False) -> ParsedDataset:
    """A parsed dataset turned into its comparisons (`compared_in_pairs`), ready to store. Its
    gold labels are read in each comparison's order (a gold naming the winning column becomes
    A or B), under the same gold column. Its content hash is the file's with the responses,
    the seed and the order rule, so importing the same file the same way again is recognised.
    """
    pairs = compared_in_pairs(parsed.items, responses, seed=seed, keep_order=keep_order)
    shared = [f for f in parsed.fields if f not in responses]
    order = "keep-order" if keep_order else str(seed)
    digest = hashlib.sha256(
        f"{parsed.content_hash}\npairs\n{','.join(responses)}\n{order}".encode()).hexdigest()
    return replace(parsed, items=pairs, columns=["id", *shared, *PAIR_FIELDS],
                   fields=[*shared, *PAIR_FIELDS], id_column="id",
                   gold_column=parsed.gold_column, content_hash=digest, n_rows=len(pairs))


def pairs_note(responses: Sequence[str], *, seed: int, keep_order: bool,
               gold_column: str | None) -> str:
    """What a user needs to know of comparisons just made, in two sentences: which response
    is A, and what the gold labels became."""
    if keep_order:
        order = (f"A is always the column listed first of each pair ({', '.join(responses)}, "
                 "in this order), B the other")
    else:
        order = (f"which response is A was drawn at random for each pair with seed {seed} "
                 "(the same file, columns and seed give the same draw), so the first position "
                 "carries no hint")
    if gold_column is None:
        gold = "There is no gold column."
    else:
        gold = (f"The gold column {gold_column!r} follows the draw: a gold naming the winning "
                "column became A or B in each comparison (none where neither response of the "
                "pair won); any other gold, a tie say, was kept as it was.")
    return f"{order[0].upper()}{order[1:]}. {gold}"
