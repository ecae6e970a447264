"""Importing a dataset as comparisons: every pair of its response columns (`judging.panel.pairwise.
compared_in_pairs`), stored like any dataset. The Datasets page and `jurybox pairs` use it."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

from judging.panel.pairwise import PAIR_FIELDS, compared_in_pairs
from storage.importing import ParsedDataset


def pairs_dataset(parsed: ParsedDataset, responses: Sequence[str], *,
                  seed: int = 0) -> ParsedDataset:
    """A parsed dataset turned into its comparisons (`compared_in_pairs`), ready to store. Its
    content hash is the file's with the responses and the seed, so importing the same file the
    same way again is recognised."""
    pairs = compared_in_pairs(parsed.items, responses, seed=seed)
    shared = [f for f in parsed.fields if f not in responses]
    digest = hashlib.sha256(
        f"{parsed.content_hash}\npairs\n{','.join(responses)}\n{seed}".encode()).hexdigest()
    return replace(parsed, items=pairs, columns=["id", *shared, *PAIR_FIELDS],
                   fields=[*shared, *PAIR_FIELDS], id_column="id", gold_column=None,
                   content_hash=digest, n_rows=len(pairs))
