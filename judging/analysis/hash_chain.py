"""The verifiable review record: pure hashing (no I/O), so storage may use it as a leaf.

Every stored verdict (a `calls` row), decision (`consensus`), override (`overrides`),
criterion override (`criterion_overrides`) and audit draw (`audit_items`, from version 3) of a
run enters one hash chain per run, in the order it was committed. `storage.reviewing.record_chain` keeps
the chain and checks it; this module says what a record's hash is.

A record's content is a fixed, versioned list of its stored fields (`KINDS`), in groups:

    group text     the group's values as canonical JSON: a list in the declared field order,
                   compact separators, UTF-8, no NaN; a BLOB stands in as "sha256:<hex of its
                   bytes>", so a compressed reply is hashed as the bytes stored
    content        sha256 over the chain version, the kind, the key and the group texts
    link           sha256 over the previous link and the content; the first link's previous
                   is `genesis(run_id)`, so a run's chain cannot be passed off as another's

Why groups: the chain keeps a CRC-32 of each group text (`parts`, 4 bytes a group), so a check
that finds a record changed can name what changed (a call's "verdict", its "evidence", its
"accounting"), and the content hash, over everything, is what proves it. Groups rather than one
CRC per field because sealing runs in the writer's hot path: each group is one call into
json's C encoder (measured side by side: 7 groups a call cost 1.26x what 3 do). An
override, written at human speed, has one group per field.

Why an explicit field list: a migration that adds a column must not change the hash of every
record written before it. A new field means a new `CHAIN_VERSION`, with its own lists beside
the old ones (`VERSIONS`). A run's record keeps the version its first entry was sealed with,
and that version is readable from the chain itself: each version has its own genesis, so the
first entry's link says which one it follows (`version_of_chain`). No column holds it, so none
can be edited to claim an older version's shorter lists: a first entry relinked to another
genesis breaks its link, and the version is in every content hash besides. A run sealed with
version 1 is extended (a resume, an override) and checked with version 1's lists; a new run
is sealed with `CHAIN_VERSION`.

What the chain proves: a row edited, inserted or deleted behind the app's back no longer
matches its latest chain entry; a chain entry edited or removed breaks every link after it.
Whoever can write the file can also rewrite the whole chain, so the head (the last link) is
what an auditor keeps outside the database: the export carries it, and `jurybox verify RUN
--head HEX` checks that the record is still the one that head sealed.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NamedTuple

CHAIN_VERSION = 3  # what a new run's record is sealed with (`VERSIONS` holds every one)
PART_BYTES = 4  # a CRC-32 per group kept in the chain: enough to name a changed group

# kind -> (its table, the columns that make its key, its groups of (name, fields)).
Groups = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class RecordKind:
    """One kind of record in one chain version: where it is stored and which of its fields
    are hashed (the version is part of every content hash, so a record sealed with one
    version's field lists never matches another's)."""

    name: str
    table: str
    key: tuple[str, ...]
    groups: Groups
    version: int = CHAIN_VERSION

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for _, fields in self.groups for f in fields)


# -- version 1: the fields of the first release of the record ---------------------------------
_CALL_V1: Groups = (
    ("verdict", ("label", "score", "confidence", "marks", "reasoning", "failure", "message")),
    ("evidence", ("raw_request", "request_rebuilt", "raw_response", "reply_dict", "cache_key",
                  "vendor", "model", "simulated")),
    ("accounting", ("latency_ms", "attempts", "tokens_in", "tokens_out", "tokens_cached",
                    "cost_usd", "cached", "created_at")),
)
# A decision's `sample_probability` is not a column of `consensus`: the chain entry holds it
# (the probability that the item was judged: 1.0, a run judges every item of its dataset; the
# audit's sampling is sealed with its draws, version 3). It stays the last field in every
# version: `storage.reviewing.record_chain` puts it there.
_DECISION_V1: Groups = (
    ("decision", ("consensus", "score", "recommendation")),
    ("agreement", ("agreement", "disagreement", "failed", "counts", "spread", "tie", "marks")),
    ("how", ("tier", "settled_by", "strategy", "note")),
    ("sample", ("sample_probability",)),
)
_OVERRIDE: Groups = tuple((f, (f,)) for f in (
    "item_id", "label", "note", "reviewer", "created_at", "blind", "children", "merge_into",
    "adjudication"))
_CRITERION_OVERRIDE: Groups = tuple((f, (f,)) for f in (
    "item_id", "criterion", "mark", "note", "reviewer", "created_at"))
# A panel of juries' decision of one jury on one item (`judging.voting.juries`), sealed with
# the item's decision.
_JURY_DECISION: Groups = (
    ("decision", ("consensus", "score", "recommendation")),
    ("agreement", ("agreement", "disagreement", "failed", "counts", "spread", "tie")),
    ("how", ("position", "note")),
)

# -- version 2: what the first release stored but did not seal --------------------------------
# A call's label probabilities, expected score and its spread (migration 0026_expected_scores)
# are read from the sealed reply, but they are what a re-vote and the export use, so they are
# sealed as stored. A decision's cascade sub-verdicts (0028_tier_verdicts) and its pooled
# probabilities (0026). Each a group of its own, so `verify` names it; one group more a call
# is one more call into json's C encoder (`benchmarks record_chain` measures what it costs).
_PROBABILITIES = ("probabilities", ("label_probs", "expected_score", "expected_spread"))
_CALL_V2: Groups = (*_CALL_V1, _PROBABILITIES)
_DECISION_V2: Groups = (*_DECISION_V1[:3], ("cascade", ("tiers",)), _PROBABILITIES,
                        _DECISION_V1[3])


# -- version 3: the audit sample --------------------------------------------------------------
# The audit's estimate of the panel's accuracy (`judging.analysis.audit_stats`) is computed
# from the sampled items, their strata and weights (`audit_items`), and the labels it reads are
# already sealed (the first blind override, the consensus, the critics' calls). Version 3 seals
# each draw as it is made: the stratum it was drawn from, that stratum's size, its weight and
# the sample's design (group "draw"), where it came from and its place in the labelling order
# ("order"), and its inclusion probability when drawn (1 / weight; "sample", the chain's
# `sample_probability` column, last as in a decision). Not its `queue_rank`: the label-next
# queue rewrites it after every label, and it is an order to work in, not a figure.
_AUDIT_ITEM: Groups = (
    ("draw", ("stratum", "stratum_size", "weight", "design")),
    ("order", ("source", "draw_order", "created_at")),
    ("sample", ("sample_probability",)),
)


def _kinds(version: int, call: Groups, decision: Groups,
           audit: Groups | None = None) -> dict[str, RecordKind]:
    kinds = [
        RecordKind("call", "calls", ("item_id", "critic"), call, version),
        RecordKind("decision", "consensus", ("item_id",), decision, version),
        RecordKind("override", "overrides", ("id",), _OVERRIDE, version),
        RecordKind("criterion_override", "criterion_overrides", ("id",), _CRITERION_OVERRIDE,
                   version),
        RecordKind("jury_decision", "jury_decisions", ("item_id", "jury"), _JURY_DECISION,
                   version),
    ]
    if audit is not None:
        kinds.append(RecordKind("audit_item", "audit_items", ("item_id",), audit, version))
    return {k.name: k for k in kinds}


# version -> kind name -> kind. A version, once released, is never edited: runs sealed with it
# are checked with its lists for as long as they are kept.
VERSIONS: dict[int, dict[str, RecordKind]] = {
    1: _kinds(1, _CALL_V1, _DECISION_V1),
    2: _kinds(2, _CALL_V2, _DECISION_V2),
    3: _kinds(3, _CALL_V2, _DECISION_V2, _AUDIT_ITEM),
}
KINDS = VERSIONS[CHAIN_VERSION]
CALL = KINDS["call"]
DECISION = KINDS["decision"]
OVERRIDE = KINDS["override"]
CRITERION_OVERRIDE = KINDS["criterion_override"]
JURY_DECISION = KINDS["jury_decision"]
AUDIT_ITEM = KINDS["audit_item"]
SAMPLED = "sample_probability"  # the field a decision and an audit draw keep last: see `Sealed`


def kinds_of(version: int) -> dict[str, RecordKind]:
    """The kinds of records, with their field lists, of chain version `version`."""
    try:
        return VERSIONS[version]
    except KeyError:
        raise ValueError(f"chain version {version} is unknown to this Jurybox (it knows "
                         f"{', '.join(map(str, VERSIONS))}); open the file with the release "
                         "that wrote it") from None

# The content of a record that was deleted on purpose (a re-judged item's critic no longer
# called): an entry saying so, so that the row's absence is part of the record.
DELETED = hashlib.sha256(b"jurybox record deleted").digest()


def genesis(run_id: int, version: int = CHAIN_VERSION) -> bytes:
    """The "previous link" of a run's first record in chain version `version`."""
    return hashlib.sha256(f"jurybox record chain v{version} run {run_id}".encode()).digest()


def version_of_chain(run_id: int, first_content: bytes, first_link: bytes) -> int | None:
    """The chain version a run's record was sealed with: the version whose genesis its first
    entry links to (each version has its own), or None when the entry follows from none (it
    was edited, or is not the first)."""
    for version in VERSIONS:
        if link(genesis(run_id, version), first_content) == first_link:
            return version
    return None


def _blob(value: object) -> str:
    # json calls this for what it cannot encode: a BLOB (a compressed reply) is its digest.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "sha256:" + hashlib.sha256(bytes(value)).hexdigest()
    raise TypeError(f"a record cannot hold {type(value).__name__} values")


# json's C encoder, made once: compact separators, UTF-8 as is, no NaN (SQLite stores NaN as
# NULL, so none comes back), BLOBs by `_blob`. `json.dumps` with these options builds a new
# encoder on every call, which was most of the cost of sealing a batch.
_ENCODE = c_make_encoder(None, _blob, encode_basestring, None, ":", ",", False, False, False) \
    if c_make_encoder is not None else None
_SLOW = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                         default=_blob)


def canonical(values: Sequence[Any]) -> bytes:
    """Values as canonical JSON: a list in the given order, compact, UTF-8, no NaN."""
    if _ENCODE is not None:  # a tuple is encoded as a JSON list too
        return "".join(_ENCODE(values, 0)).encode("utf-8")
    return _SLOW.encode(list(values)).encode("utf-8")


def record_key(kind: RecordKind, row: Sequence[Any]) -> str:
    """A record's key as text: a single column as it is, several as a JSON list (an item id
    may hold any character, so no separator would do)."""
    if len(kind.key) == 1:
        return str(row[0])
    return canonical([str(v) for v in row]).decode("utf-8")


def group_texts(kind: RecordKind, values: Sequence[Any]) -> list[bytes]:
    """The canonical JSON of each group of `kind`, from the values in `kind.fields` order."""
    out: list[bytes] = []
    at = 0
    for _, fields in kind.groups:
        out.append(canonical(values[at:at + len(fields)]))
        at += len(fields)
    return out


def parts_of(texts: Sequence[bytes]) -> bytes:
    """What the chain keeps of each group, to name a changed group later: its CRC-32."""
    return b"".join(zlib.crc32(t).to_bytes(PART_BYTES, "big") for t in texts)


def link(previous: bytes, content: bytes) -> bytes:
    """The chain's next link."""
    return hashlib.sha256(previous + content).digest()


class Sealed(NamedTuple):
    """A record ready to enter the chain (its link is computed when it is appended). A named
    tuple: one is made per stored verdict, and a frozen dataclass costs several times more.

    `sample_probability` is set for the kinds whose last field is `SAMPLED` (a decision, an
    audit draw): the value hashed there, kept in its own chain column so `verify` can say it."""

    kind: str
    key: str
    content: bytes
    parts: bytes
    sample_probability: float | None = None


def seal(kind: RecordKind, key: str, values: Sequence[Any],
         sample_probability: float | None = None) -> Sealed:
    """A record's chain entry from its stored values (in `kind.fields` order; the last value
    of a decision or an audit draw is its sample probability)."""
    if len(values) != len(kind.fields):  # a short list would hash as empty groups, silently
        raise ValueError(f"a {kind.name} record of chain version {kind.version} has "
                         f"{len(kind.fields)} fields; {len(values)} values were given")
    ((content, parts),) = seal_many(kind, [key], [values])
    return Sealed(kind.name, key, content, parts, sample_probability)


def seal_many(kind: RecordKind, keys: Sequence[str],
              rows: Sequence[Sequence[Any]]) -> list[tuple[bytes, bytes]]:
    """(content hash, parts) of each row (its values in `kind.fields` order): `seal` for a
    batch, the writer's hot path, so the loop holds only calls into C (one JSON encoding per
    group, one sha256 and one CRC-32 per group) and no object per record."""
    bounds = []
    at = 0
    for _, fields in kind.groups:
        bounds.append((at, at + len(fields)))
        at += len(fields)
    prefix = f"{kind.version}\x1f{kind.name}\x1f"
    pack = struct.Struct(f">{len(bounds)}I").pack
    sha, crc, join, encode = hashlib.sha256, zlib.crc32, "".join, _ENCODE
    out = []
    for key, values in zip(keys, rows, strict=True):
        # `canonical` inlined where the C encoder exists: a Python call less a group, about 5%
        # of hashing a call (measured); the same bytes either way.
        texts = ([join(encode(values[a:b], 0)).encode() for a, b in bounds] if encode is not None
                 else [canonical(values[a:b]) for a, b in bounds])
        content = sha((prefix + key + "\x1f").encode() + b"\x1e".join(texts)).digest()
        out.append((content, pack(*[crc(t) for t in texts])))
    return out


def changed_groups(kind: RecordKind, parts: bytes, values: Sequence[Any]) -> list[str]:
    """The groups whose stored values no longer match the kept `parts` (empty when the parts
    match: then the change is in the key or the entry itself)."""
    now = parts_of(group_texts(kind, values))
    names = [name for name, _ in kind.groups]
    return [names[n] for n in range(len(names))
            if now[n * PART_BYTES:(n + 1) * PART_BYTES] != parts[n * PART_BYTES:(n + 1) * PART_BYTES]]


def describe_groups(kind: RecordKind, groups: Sequence[str]) -> str:
    """"verdict (label, score, confidence, marks)" for the named groups of `kind`."""
    fields = dict(kind.groups)
    return "; ".join(name if fields[name] == (name,) else f"{name} ({', '.join(fields[name])})"
                     for name in groups)


def chain_links(run_id: int, contents: Sequence[bytes], previous: bytes | None = None,
                version: int = CHAIN_VERSION) -> list[bytes]:
    """The links of consecutive records with these content hashes."""
    prev = genesis(run_id, version) if previous is None else previous
    out = []
    for content in contents:
        prev = link(prev, content)
        out.append(prev)
    return out


def values_of(kind: RecordKind, row: Mapping[str, Any]) -> list[Any]:
    """A row's values in `kind.fields` order (a missing field is None)."""
    return [row.get(f) for f in kind.fields]
