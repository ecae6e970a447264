"""Taxonomy curation: which labels of a panel's scale keep, remove, split or merge a class, and
the curated taxonomy that a run's final decisions make.

A curation panel judges candidate classes (an item field names the class, another its parent).
A SPLIT decision says into which new child classes, a MERGE decision into which class; the
curated taxonomy lists the kept classes, the removed ones, the new children and the merges,
each with the note and the reviewer behind it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from judging.errors import DataError
from judging.known_fields import StrictModel

Action = Literal["keep", "remove", "split", "merge"]


class CurationConfig(StrictModel):
    """Taxonomy curation settings of a panel (off while `class_field` is unset).

    Attributes:
        class_field: the item field holding the candidate class's name.
        parent_field: the item field holding its parent (a name or a path), if any.
        keep_label, reject_label, split_label, merge_label: the scale's label for each action.
    """


    class_field: str | None = None
    parent_field: str | None = None
    keep_label: str | None = None
    reject_label: str | None = None
    split_label: str | None = None
    merge_label: str | None = None

    @property
    def active(self) -> bool:
        return self.class_field is not None

    def labels_by_action(self) -> dict[Action, str]:
        pairs: list[tuple[Action, str | None]] = [
            ("keep", self.keep_label), ("remove", self.reject_label),
            ("split", self.split_label), ("merge", self.merge_label)]
        return {action: label for action, label in pairs if label}

    def action_of(self, label: str | None) -> Action | None:
        """The action a final label stands for (None: a label with no curation meaning)."""
        for action, named in self.labels_by_action().items():
            if label == named:
                return action
        return None


def parse_children(text: str) -> list[str]:
    """New child class names typed one per line (or comma separated), trimmed, in order,
    without blanks or repeats."""
    names: list[str] = []
    for part in text.replace(",", "\n").splitlines():
        name = part.strip()
        if name and name not in names:
            names.append(name)
    return names


def check_decision(
    config: CurationConfig, label: str, children: list[str], merge_into: str | None,
    class_name: str,
) -> tuple[list[str], str | None]:
    """What a reviewer's curation decision records, checked: a split names its new children,
    a merge its target (another class); other decisions carry neither.

    Returns:
        (children, merge_into) to store.

    Raises:
        DataError: a sentence naming what is missing or does not belong, and what to do.
    """
    action = config.action_of(label) if config.active else None
    merge_into = (merge_into or "").strip() or None
    if action == "split":
        if not children:
            raise DataError(f"A {label} needs the new child classes: name at least one, one "
                            "per line.")
        if class_name in children:
            raise DataError(f"{class_name!r} cannot be a child of itself: name the new classes "
                            "it splits into.")
    elif children:
        raise DataError(f"New child classes go with {config.split_label or 'a split'} only: "
                        f"clear them, or choose {config.split_label or 'the split label'}.")
    if action == "merge":
        if merge_into is None:
            raise DataError(f"A {label} needs the class to merge into: pick it from the list.")
        if merge_into == class_name:
            raise DataError(f"{class_name!r} cannot merge into itself: pick another class.")
    elif merge_into is not None:
        raise DataError(f"A class to merge into goes with {config.merge_label or 'a merge'} "
                        f"only: clear it, or choose {config.merge_label or 'the merge label'}.")
    return children, merge_into


@dataclass(frozen=True)
class Decision:
    """One candidate class's final decision (a human's, else the panel's consensus)."""

    item_id: str
    class_name: str
    parent: str | None
    action: Action | None
    label: str | None
    children: tuple[str, ...] = ()
    merge_into: str | None = None
    note: str = ""
    reviewer: str | None = None  # None: the panel's consensus, no human decided
    why: str | None = None  # why it needs a decision (None: it is decided)

    def as_row(self) -> dict[str, Any]:
        return {"class": self.class_name, "parent": self.parent, "decision": self.action,
                "label": self.label, "children": list(self.children),
                "merge_into": self.merge_into, "note": self.note,
                "decided_by": self.reviewer or "panel consensus", "item_id": self.item_id,
                "needs_a_decision": self.why}


@dataclass
class CuratedTaxonomy:
    """The classes kept, removed, split (with their new children) and merged (with targets),
    and those that need a decision: no final label, a label with no curation meaning, a split
    without its children or a merge without its target (the panel's consensus never names
    them: only a reviewer does). Those are never counted as split or merged."""

    kept: list[Decision] = field(default_factory=list)
    removed: list[Decision] = field(default_factory=list)
    split: list[Decision] = field(default_factory=list)
    merged: list[Decision] = field(default_factory=list)
    needs_decision: list[Decision] = field(default_factory=list)

    @property
    def undecided(self) -> list[Decision]:
        """The classes that need a decision (the name before they were told apart)."""
        return self.needs_decision

    @property
    def changes(self) -> list[Decision]:
        """What curation changed: every class removed, split or merged."""
        return [*self.removed, *self.split, *self.merged]

    def as_json(self) -> dict[str, Any]:
        return {
            "kept": [d.as_row() for d in self.kept],
            "removed": [d.as_row() for d in self.removed],
            "split": [d.as_row() for d in self.split],
            "merged": [d.as_row() for d in self.merged],
            "needs_decision": [d.as_row() for d in self.needs_decision],
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row per class, in the order kept, removed, split, merged, needs a decision."""
        return [d.as_row() for d in
                (*self.kept, *self.removed, *self.split, *self.merged, *self.needs_decision)]


def unactionable(config: CurationConfig, label: str | None, children: Iterable[str] | None,
                 merge_into: str | None) -> str | None:
    """Why a final decision cannot be acted on, or None when it can: no label, a label with
    no curation meaning, a split without its new children, a merge without its target."""
    action = config.action_of(label)
    if label is None:
        return "no decision: the panel's vote abstained"
    if action is None:
        return f"{label} is none of the curation labels"
    if action == "split" and not list(children or ()):
        return f"a {label} needs its new child classes: only a reviewer names them"
    if action == "merge" and not merge_into:
        return f"a {label} needs the class to merge into: only a reviewer names it"
    return None


def curate(config: CurationConfig, decisions: Iterable[Mapping[str, Any]]) -> CuratedTaxonomy:
    """Sort each class's final decision into the curated taxonomy.

    Args:
        config: the panel's curation settings (must be active).
        decisions: one mapping per item: item_id, fields (the item's fields), final_label,
            and from its latest override, if any: children (a list), merge_into, note, reviewer;
            optionally why (the reason it needs a decision, `storage.reviewing.decisions`).
    """
    taxonomy = CuratedTaxonomy()
    buckets = {"keep": taxonomy.kept, "remove": taxonomy.removed, "split": taxonomy.split,
               "merge": taxonomy.merged}
    for row in decisions:
        fields = row.get("fields") or {}
        action = config.action_of(row.get("final_label"))
        parent = fields.get(config.parent_field) if config.parent_field else None
        # The rule's own reason when the row comes from `storage.reviewing.decisions`; the same test
        # here for rows built by hand (and for a label the curation gives no meaning).
        why = row.get("why") or unactionable(config, row.get("final_label"),
                                             row.get("children"), row.get("merge_into"))
        decision = Decision(
            item_id=str(row["item_id"]),
            class_name=str(fields.get(config.class_field or "", row["item_id"])),
            parent=None if parent is None else str(parent),
            action=action,
            label=row.get("final_label"),
            children=tuple(row.get("children") or ()) if action == "split" else (),
            merge_into=row.get("merge_into") if action == "merge" else None,
            note=str(row.get("note") or ""),
            reviewer=row.get("reviewer"),
            why=why,
        )
        (taxonomy.needs_decision if why else buckets[action or ""]).append(decision)
    return taxonomy
