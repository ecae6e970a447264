"""Pairwise panels: a critic sees two responses and says which is better, A, B or a tie.

LLM judges prefer the response shown first far more often than chance. So a pairwise panel
asks each critic twice, the second time with the two responses swapped (`swap: true`), and
reads the second answer back in the first order. When the two answers differ, the critic was
moved by the position, not the content: that item counts as a tie (`inconsistent: tie`), or the
critic's verdict is flagged and left out of the vote (`inconsistent: flag`). Either way it
counts towards the critic's position-bias rate (`judging.analysis.pairwise_stats`). `judging.engine.chains`
asks both orders and combines the answers.

Data whose items hold several systems' responses side by side (one field per system) becomes a
dataset of comparisons with `compared_in_pairs`: one item per item and pair of systems, with
the two responses in `response_a` / `response_b` and the systems in `system_a` / `system_b`.
Which goes first is drawn at random with a seed, so the first position carries no hint (or, with
`keep_order`, the column listed first is always A). An item's gold label follows the
assignment: a gold naming the winning response column becomes A or B in each comparison.

The swap is on the item: the two response fields (and the fields naming their systems) trade
values, so every prompt, compound critic and repeat works on swapped items unchanged.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Literal

from judging.errors import DataError
from judging.known_fields import StrictModel
from judging.verdicts import Item


class PairwiseConfig(StrictModel):
    """A panel's pairwise settings (off while `first_field` is unset).

    Attributes:
        first_field / second_field: the item fields holding response A and response B.
        first_system / second_system: item fields naming the system behind each response (for
            more than two systems: win rates per system and Bradley-Terry strengths). Unset,
            the two systems are named after the response fields.
        swap: ask each critic both orders.
        inconsistent: what an answer that changes with the order counts as: "tie" (the tie
            label), or "flag" (no verdict from that critic on that item, kind `inconsistent`).
        a_label / b_label / tie_label: the scale's labels for "A is better", "B is better" and a
            tie (tie_label None: a forced choice).
    """


    first_field: str | None = None
    second_field: str | None = None
    first_system: str | None = None
    second_system: str | None = None
    swap: bool = True
    inconsistent: Literal["tie", "flag"] = "tie"
    a_label: str = "A"
    b_label: str = "B"
    tie_label: str | None = "TIE"

    @property
    def active(self) -> bool:
        return self.first_field is not None

    def swapped(self, item: Item) -> Item:
        """The item with its two responses (and their systems' names) traded."""
        fields = dict(item.fields)
        for first, second in ((self.first_field, self.second_field),
                              (self.first_system, self.second_system)):
            if first is not None and second is not None and first in fields and second in fields:
                fields[first], fields[second] = fields[second], fields[first]
        return Item(id=item.id, fields=fields, gold=self.flip(item.gold),
                    swapped=not item.swapped)

    def flip(self, label: str | None) -> str | None:
        """A label given on the swapped item, read in the original order (A <-> B)."""
        if label == self.a_label:
            return self.b_label
        if label == self.b_label:
            return self.a_label
        return label

    def missing_field(self, fields: Sequence[str]) -> str | None:
        """A sentence naming the first field these settings name that the items do not have,
        and the fields they do have; None when every one is there (or pairwise is off)."""
        if not self.active:
            return None
        named = (("first_field", self.first_field), ("second_field", self.second_field),
                 ("first_system", self.first_system), ("second_system", self.second_system))
        for setting, name in named:
            if name is not None and name not in fields:
                return (f"pairwise.{setting}: the items have no column {name!r}; name the "
                        f"column that holds {_WHAT[setting]}. Columns available: "
                        f"{', '.join(sorted(fields)) or '(none)'}.")
        return None

    def systems(self, fields: dict[str, object]) -> tuple[str, str]:
        """The names of the systems behind response A and response B of an item."""
        assert self.first_field is not None and self.second_field is not None
        first = fields.get(self.first_system) if self.first_system else None
        second = fields.get(self.second_system) if self.second_system else None
        return (str(first) if first is not None else self.first_field,
                str(second) if second is not None else self.second_field)


# What each field setting of `PairwiseConfig` holds (for `missing_field`'s sentence).
_WHAT = {"first_field": "response A", "second_field": "response B",
         "first_system": "the system behind response A",
         "second_system": "the system behind response B"}

# The fields of a comparison made by `compared_in_pairs`: what a pairwise panel names.
PAIR_FIELDS = ("system_a", "response_a", "system_b", "response_b")


def compared_in_pairs(items: Sequence[Item], responses: Sequence[str], *,
                      seed: int = 0, keep_order: bool = False) -> list[Item]:
    """One item per item and pair of response fields (see the module docstring).

    Args:
        items: the items, each holding every field of `responses`.
        responses: the fields holding each system's response; the field name is the system's
            name. At least two.
        seed: which response goes first in each pair.
        keep_order: no draw: in each pair the field listed first in `responses` is A.

    Returns:
        The comparisons. Each carries its item's gold label read in its own order
        (`pair_gold`): the default labels A and B, or the gold unchanged when it names no
        response.

    Raises:
        DataError: fewer than two response fields, a field named twice, an item without one,
            or a gold label that names a position (A / B) where the order is drawn.
    """
    if len(responses) < 2 or len(set(responses)) != len(responses):
        raise DataError("Pick at least two different response columns to compare in pairs.")
    clash = [name for name in PAIR_FIELDS if name in (items[0].fields if items else {})]
    if clash:
        raise DataError(f"The items already have a field {clash[0]!r}: rename it before making "
                        "pairs (the pairs use system_a, response_a, system_b and response_b).")
    rng = random.Random(seed)
    pairs: list[Item] = []
    for item in items:
        missing = [name for name in responses if name not in item.fields]
        if missing:
            raise DataError(f"Item {item.id!r} has no field {missing[0]!r}; every item needs a "
                            "response from every system compared.")
        shared = {k: v for k, v in item.fields.items() if k not in responses}
        for first, second in itertools.combinations(responses, 2):
            if not keep_order and rng.random() < 0.5:
                first, second = second, first
            pairs.append(Item(
                id=f"{item.id}:{first}-vs-{second}",
                fields={**shared, "system_a": first, "response_a": item.fields[first],
                        "system_b": second, "response_b": item.fields[second]},
                gold=pair_gold(item, responses, first, second, keep_order=keep_order),
            ))
    return pairs


# The labels a comparison's gold is written in: `PairwiseConfig`'s defaults.
_A, _B = PairwiseConfig.model_fields["a_label"].default, PairwiseConfig.model_fields[
    "b_label"].default


def pair_gold(item: Item, responses: Sequence[str], first: str, second: str, *,
              keep_order: bool) -> str | None:
    """The item's gold label for its comparison of `first` (A) with `second` (B).

    A gold naming a response field (case aside) says which system won: A or B when that
    system is in the pair, None when neither is (the item does not say which of the two is
    better). A gold of A or B that names no field names a position, which is right only
    while the positions are the order of `responses` (`keep_order`, two responses). Any
    other gold (a tie label, say) is the same for every pair.

    Raises:
        DataError: a positional gold where the positions are drawn or more than two responses
            share them.
    """
    gold = item.gold
    if gold is None:
        return None
    named = {name.strip().casefold(): name for name in responses}
    winner = named.get(str(gold).strip().casefold())
    if winner is not None:
        return _A if winner == first else _B if winner == second else None
    if str(gold).strip().casefold() in (_A.casefold(), _B.casefold()):
        if keep_order and len(responses) == 2:
            return _A if str(gold).strip().casefold() == _A.casefold() else _B
        why = "drawn at random" if not keep_order else "shared by more than two columns"
        raise DataError(
            f"Item {item.id!r} has the gold label {gold!r}, a position, but the positions of "
            f"the comparisons are {why}: give the gold as the name of the winning column "
            f"({', '.join(responses)}), or keep the column order with exactly two response "
            "columns.")
    return gold
