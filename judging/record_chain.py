"""The verifiable review record: pure hashing (no I/O), so storage may use it as a leaf.

Every stored verdict (a `calls` row), decision (`consensus`), override (`overrides`) and
criterion override (`criterion_overrides`) of a run enters one hash chain per run, in the order
it was committed. `storage.record_chain` keeps the chain and checks it; this module says what a
record's hash is.

A record's content is a fixed, versioned list of its stored fields (`KINDS`), in groups:

    group digest   sha256 of the group's values as canonical JSON (a list in the declared
                   field order, compact separators, no NaN; a BLOB stands in as
                   "sha256:<hex of its bytes>", so a compressed reply is hashed as stored)
    content        sha256 over the chain version, the kind, the key and every group digest
    link           sha256 over the previous link and the content; the first link's previous
                   is `genesis(run_id)`, so a run's chain cannot be passed off as another's

Why groups and not one digest: the chain keeps four bytes of each group digest (`parts`), so a
check that finds a record changed can name what changed (a call's "verdict" fields, its
"reasoning", its "reply"...), at one hash per group instead of one per field (a call has 24
fields; hashing each was most of the cost). An override's groups are its single fields.

Why an explicit field list: a migration that adds a column must not change the hash of every
record written before it. A new field means a new `CHAIN_VERSION`.

What the chain proves: a row edited, inserted or deleted behind the app's back no longer
matches its latest chain entry; a chain entry edited or removed breaks every link after it.
Whoever can write the file can also rewrite the whole chain, so the head (the last link) is
what an auditor keeps outside the database: the export carries it, and `jurybox verify RUN
--head HEX` checks that the record is still the one that head sealed.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CHAIN_VERSION = 1
PART_BYTES = 4  # of each group digest kept in the chain: enough to name a changed group

# kind -> (its table, the columns that make its key, its groups of (name, fields)).
Groups = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class RecordKind:
    """One kind of record: where it is stored and which of its fields are hashed."""

    name: str
    table: str
    key: tuple[str, ...]
    groups: Groups

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for _, fields in self.groups for f in fields)


CALL = RecordKind(
    "call", "calls", ("item_id", "critic"),
    (
        ("verdict", ("label", "score", "confidence", "marks")),
        ("reasoning", ("reasoning",)),
        ("failure", ("failure", "message")),
        ("request", ("raw_request", "request_rebuilt")),
        ("reply", ("raw_response", "reply_dict")),
        ("cost", ("latency_ms", "attempts", "tokens_in", "tokens_out", "tokens_cached",
                  "cost_usd", "cached")),
        ("source", ("cache_key", "vendor", "model", "simulated", "created_at")),
    ),
)
# A decision's `sample_probability` is not a column of `consensus`: the chain entry holds it
# (the probability that the item was in the judged sample; 1.0 in a full run).
DECISION = RecordKind(
    "decision", "consensus", ("item_id",),
    (
        ("decision", ("consensus", "score", "recommendation")),
        ("agreement", ("agreement", "disagreement", "failed", "counts", "spread", "tie",
                       "marks")),
        ("how", ("tier", "settled_by", "strategy", "note")),
        ("sample", ("sample_probability",)),
    ),
)
OVERRIDE = RecordKind(
    "override", "overrides", ("id",),
    tuple((f, (f,)) for f in ("item_id", "label", "note", "reviewer", "created_at", "blind",
                              "children", "merge_into", "adjudication")),
)
CRITERION_OVERRIDE = RecordKind(
    "criterion_override", "criterion_overrides", ("id",),
    tuple((f, (f,)) for f in ("item_id", "criterion", "mark", "note", "reviewer",
                              "created_at")),
)
KINDS: dict[str, RecordKind] = {k.name: k for k in (CALL, DECISION, OVERRIDE,
                                                     CRITERION_OVERRIDE)}

# The content of a record that was deleted on purpose (a re-judged item's critic no longer
# called): an entry saying so, so that the row's absence is part of the record.
DELETED = hashlib.sha256(b"jurybox record deleted").digest()


def genesis(run_id: int) -> bytes:
    """The "previous link" of a run's first record."""
    return hashlib.sha256(f"jurybox record chain v{CHAIN_VERSION} run {run_id}".encode()).digest()


def record_key(kind: RecordKind, row: Sequence[Any]) -> str:
    """A record's key as text: a single column as it is, several as a JSON list (an item id
    may hold any character, so no separator would do)."""
    if len(kind.key) == 1:
        return str(row[0])
    return json.dumps([str(v) for v in row], ensure_ascii=False, separators=(",", ":"))


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "sha256:" + hashlib.sha256(bytes(value)).hexdigest()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def canonical(values: Sequence[Any]) -> bytes:
    """Values as canonical JSON: a list in the given order, compact, UTF-8, no NaN."""
    return json.dumps([_plain(v) for v in values], ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


def group_digests(kind: RecordKind, values: Sequence[Any]) -> list[bytes]:
    """One sha256 digest per group of `kind`, from the record's values in `kind.fields` order."""
    out: list[bytes] = []
    at = 0
    sha = hashlib.sha256
    for _, fields in kind.groups:
        out.append(sha(canonical(values[at:at + len(fields)])).digest())
        at += len(fields)
    return out


def content_hash(kind: RecordKind, key: str, digests: Sequence[bytes]) -> bytes:
    """The record's content hash: version, kind, key and its group digests."""
    head = f"{CHAIN_VERSION}\x1f{kind.name}\x1f{key}\x1f".encode()
    return hashlib.sha256(head + b"".join(digests)).digest()


def parts_of(digests: Sequence[bytes]) -> bytes:
    """What the chain keeps of each group digest, to name a changed group later."""
    return b"".join(d[:PART_BYTES] for d in digests)


def link(previous: bytes, content: bytes) -> bytes:
    """The chain's next link."""
    return hashlib.sha256(previous + content).digest()


@dataclass(frozen=True)
class Sealed:
    """A record ready to enter the chain (its link is computed when it is appended)."""

    kind: str
    key: str
    content: bytes
    parts: bytes
    sample_probability: float | None = None


def seal(kind: RecordKind, key: str, values: Sequence[Any],
         sample_probability: float | None = None) -> Sealed:
    """A record's chain entry from its stored values (in `kind.fields` order; a decision's
    last value is its sample probability)."""
    digests = group_digests(kind, values)
    return Sealed(kind.name, key, content_hash(kind, key, digests), parts_of(digests),
                  sample_probability)


def changed_groups(kind: RecordKind, parts: bytes, values: Sequence[Any]) -> list[str]:
    """The groups whose stored values no longer match the kept `parts` (empty when the parts
    match: then the change is in the key or the entry itself)."""
    now = parts_of(group_digests(kind, values))
    names = [name for name, _ in kind.groups]
    return [names[n] for n in range(len(names))
            if now[n * PART_BYTES:(n + 1) * PART_BYTES] != parts[n * PART_BYTES:(n + 1) * PART_BYTES]]


def describe_groups(kind: RecordKind, groups: Sequence[str]) -> str:
    """"verdict (label, score, confidence, marks)" for the named groups of `kind`."""
    fields = dict(kind.groups)
    return "; ".join(name if fields[name] == (name,) else f"{name} ({', '.join(fields[name])})"
                     for name in groups)


def chain_links(run_id: int, contents: Sequence[bytes],
                previous: bytes | None = None) -> list[bytes]:
    """The links of consecutive records with these content hashes."""
    prev = genesis(run_id) if previous is None else previous
    out = []
    for content in contents:
        prev = link(prev, content)
        out.append(prev)
    return out


def values_of(kind: RecordKind, row: Mapping[str, Any]) -> list[Any]:
    """A row's values in `kind.fields` order (a missing field is None)."""
    return [row.get(f) for f in kind.fields]
