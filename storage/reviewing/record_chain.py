"""The verifiable review record in SQLite: the chain table, sealing rows into it, checking it.

What is hashed, and how, is `judging.analysis.hash_chain` (pure). Here: `record_chain(run_id, seq,
kind, key, content, parts, sample_probability, hash)`, one row per record version, appended in
commit order (migration 0025_record_chain says why a table and not a column per row).

Sealing happens in the transaction that writes the rows (`sealing`): a crash leaves both or
neither. The writer thread seals each committed batch of verdicts, then each batch of
decisions; an override is sealed as it is added. The sealed content is read back from the rows
just written, not taken from the objects handed in: the upsert may have kept a stored success
instead of a failure, and a reply is stored compressed; what is hashed is what a later check
reads.

Cost, measured side by side per batch on the verdicts of `benchmarks storage` (100,000 with
their requests stored whole, batches of 200, a loaded shared machine, CPU seconds):
write_verdicts 3.03 s; the chain 3.91 s more (reading the batch back 1.22, hashing 1.82,
appending 0.87), so sealing costs about 1.3x the write it seals. A run's CPU is mostly its
calls: see NOTES_record.md for the throughput figures. The table takes about 117 bytes a
record.

Versions: what a record's hash covers is versioned (`judging.analysis.hash_chain.VERSIONS`;
version 2 added a call's and a decision's label probabilities and expected scores, and a
decision's cascade sub-verdicts; version 3 the audit sample's draws). A run keeps the version
of its first entry, read from the chain (`chain_version`: each version links its first entry to
its own genesis), so a run sealed by an earlier release is extended and checked with that
release's field lists, and a new run is sealed with the current one. Knowing the version costs
the writer one primary-key read a batch.

Sampling: a decision's entry holds the probability that its item was judged: 1.0, since a run
judges every item of its dataset. The audit sample is where items are drawn at random: from
chain version 3 each draw (`audit_items`: its stratum, the stratum's size, its weight, the
design, where it came from and its place in the labelling order) is sealed in the transaction
that adds it (`seal_audit_items`), with its inclusion probability when drawn (1 / weight) in the
chain's `sample_probability` column and hashed; `verify_run` names an audit row edited, deleted
or inserted since, and reports each stratum's sampled share. The labels the audit's estimate
reads are sealed already: the first blind override, the consensus and the critics' calls. A run
recorded with version 1 or 2 keeps its version and so has no audit entries: `verify_run` counts
its audit rows as outside the record (`Verification.unsealed`) rather than calling them edits.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

from judging.analysis.hash_chain import (
    AUDIT_ITEM,
    CALL,
    CHAIN_VERSION,
    CRITERION_OVERRIDE,
    DECISION,
    DELETED,
    JURY_DECISION,
    OVERRIDE,
    SAMPLED,
    VERSIONS,
    RecordKind,
    Sealed,
    changed_groups,
    describe_groups,
    genesis,
    kinds_of,
    link,
    record_key,
    seal,
    seal_many,
    version_of_chain,
)
from storage.db import NotFoundError, write_transaction

# A run judges every item of its dataset: each decision's item was judged with probability 1.
FULL_RUN_PROBABILITY = 1.0
# The chain version a run without a record starts with. A run already recorded keeps the
# version of its first entry (`chain_version`). A module value so that a test or a benchmark
# can make a run as an earlier release did.
NEW_RUNS_VERSION = CHAIN_VERSION


@contextlib.contextmanager
def sealing(db: sqlite_utils.Database) -> Iterator[None]:
    """A write transaction for rows and their chain entries (BEGIN IMMEDIATE: the chain's head
    is read after the write lock is held, so two writers of one run never take the same
    place); inside a caller's transaction, a savepoint of it."""
    with write_transaction(db):
        yield


def chain_version(db: sqlite_utils.Database, run_id: int) -> int:
    """The chain version of the run's record: the one its first entry was sealed with
    (`judging.analysis.hash_chain.version_of_chain`), or `NEW_RUNS_VERSION` for a run with no
    record yet. One primary-key read and a sha256 or two: the writer asks once a batch, inside
    the batch's transaction. A first entry that follows from no version's genesis (edited
    behind the app's back) reads as the current version; `verify_run` reports that entry."""
    row = db.conn.execute(
        "SELECT content, hash FROM record_chain WHERE run_id = ? ORDER BY seq LIMIT 1",
        [run_id]).fetchone()
    if row is None:
        return NEW_RUNS_VERSION
    return version_of_chain(run_id, bytes(row[0]), bytes(row[1])) or CHAIN_VERSION


def _head(db: sqlite_utils.Database, run_id: int, version: int) -> tuple[int, bytes]:
    row = db.conn.execute(
        "SELECT seq, hash FROM record_chain WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
        [run_id]).fetchone()
    return (int(row[0]), bytes(row[1])) if row else (0, genesis(run_id, version))


def append(db: sqlite_utils.Database, run_id: int, records: Sequence[Sealed],
           version: int) -> None:
    """Append sealed records (sealed with chain version `version`, the run's: see
    `chain_version`) to the run's chain, in order (call inside `sealing`)."""
    if not records:
        return
    seq, previous = _head(db, run_id, version)
    rows = []
    for record in records:
        seq += 1
        previous = link(previous, record.content)
        rows.append((run_id, seq, record.kind, record.key, record.content, record.parts,
                     record.sample_probability, previous))
    db.conn.executemany(
        "INSERT INTO record_chain (run_id, seq, kind, key, content, parts, sample_probability,"
        " hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def _select(kind: RecordKind) -> str:
    """The key columns then the hashed fields of `kind` (names from the fixed lists only)."""
    columns = [f"t.{c}" for c in kind.key]
    columns += ["NULL" if f == SAMPLED else f"t.{f}" for f in kind.fields]
    return ", ".join(columns)


def _chances(kind: RecordKind, values: Sequence[Sequence[Any]]) -> list[float | None]:
    """The sample probability each row is sealed with (None: its kind has none): 1.0 for a
    decision (every item is judged); for an audit draw, its inclusion probability when drawn,
    1 / its weight (the weight is the stratum's items per sampled item)."""
    if kind.fields[-1] != SAMPLED:
        return [None] * len(values)
    if kind.name == AUDIT_ITEM.name:
        at = kind.fields.index("weight")
        return [1.0 / float(v[at]) if v[at] else None for v in values]
    return [FULL_RUN_PROBABILITY] * len(values)


def _sealed_rows(kind: RecordKind, rows: Sequence[Sequence[Any]]) -> list[Sealed]:
    n_key = len(kind.key)
    if n_key == 1:
        keys = [str(row[0]) for row in rows]
    else:
        keys = [record_key(kind, row[:n_key]) for row in rows]
    values: list[Sequence[Any]] = [row[n_key:] for row in rows]
    chances = _chances(kind, values)
    if kind.fields[-1] == SAMPLED:  # its last field is the chain's: the sample probability
        values = [(*v[:-1], p) for v, p in zip(values, chances, strict=True)]
    return [Sealed(kind.name, key, content, parts, p) for key, (content, parts), p
            in zip(keys, seal_many(kind, keys, values), chances, strict=True)]


def seal_calls(db: sqlite_utils.Database, run_id: int, pairs: Iterable[tuple[str, str]]) -> int:
    """Seal the stored calls of these (item, critic) pairs, in the given order (a pair with no
    stored row, e.g. a call cancelled before it was sent, is skipped). Returns how many."""
    keys = list(dict.fromkeys((str(i), str(c)) for i, c in pairs))
    if not keys:
        return 0
    version = chain_version(db, run_id)
    kind = kinds_of(version)[CALL.name]
    rows = db.conn.execute(
        f"SELECT {_select(kind)} FROM json_each(?) j JOIN calls t ON t.run_id = ?"
        " AND t.item_id = json_extract(j.value, '$[0]')"
        " AND t.critic = json_extract(j.value, '$[1]') ORDER BY j.key",
        [json.dumps(keys), run_id]).fetchall()
    sealed = _sealed_rows(kind, rows)
    append(db, run_id, sealed, version)
    return len(sealed)


def seal_decisions(db: sqlite_utils.Database, run_id: int, item_ids: Iterable[str]) -> int:
    """Seal the stored decisions of these items, in the given order, then their juries'
    decisions (a panel of juries, `storage.results.jury_decisions`). Returns how many items."""
    ids = list(dict.fromkeys(str(i) for i in item_ids))
    if not ids:
        return 0
    version = chain_version(db, run_id)
    kinds = kinds_of(version)
    decision, jury = kinds[DECISION.name], kinds[JURY_DECISION.name]
    rows = db.conn.execute(
        f"SELECT {_select(decision)} FROM json_each(?) j JOIN consensus t ON t.run_id = ?"
        " AND t.item_id = j.value ORDER BY j.key", [json.dumps(ids), run_id]).fetchall()
    sealed = _sealed_rows(decision, rows)
    jury_rows = db.conn.execute(
        f"SELECT {_select(jury)} FROM json_each(?) j JOIN jury_decisions t"
        " ON t.run_id = ? AND t.item_id = j.value ORDER BY j.key, t.position",
        [json.dumps(ids), run_id]).fetchall()
    append(db, run_id, sealed + _sealed_rows(jury, jury_rows), version)
    return len(sealed)


def seal_audit_items(db: sqlite_utils.Database, run_id: int, item_ids: Iterable[str]) -> int:
    """Seal these items' audit draws (`audit_items` rows), in the given order (call inside
    `sealing`, in the transaction that adds them). A run recorded with a chain version before 3
    keeps its version, which has no audit kind: nothing is sealed there. Returns how many."""
    ids = list(dict.fromkeys(str(i) for i in item_ids))
    version = chain_version(db, run_id)
    kind = kinds_of(version).get(AUDIT_ITEM.name)
    if not ids or kind is None:
        return 0
    rows = db.conn.execute(
        f"SELECT {_select(kind)} FROM json_each(?) j JOIN audit_items t ON t.run_id = ?"
        " AND t.item_id = j.value ORDER BY j.key", [json.dumps(ids), run_id]).fetchall()
    sealed = _sealed_rows(kind, rows)
    append(db, run_id, sealed, version)
    return len(sealed)


def _seal_ids(db: sqlite_utils.Database, run_id: int, name: str, ids: Iterable[int]) -> int:
    wanted = sorted({int(i) for i in ids})
    if not wanted:
        return 0
    version = chain_version(db, run_id)
    kind = kinds_of(version)[name]
    rows = db.conn.execute(
        f"SELECT {_select(kind)} FROM {kind.table} t WHERE t.run_id = ?"
        " AND t.id IN (SELECT value FROM json_each(?)) ORDER BY t.id",
        [run_id, json.dumps(wanted)]).fetchall()
    sealed = _sealed_rows(kind, rows)
    append(db, run_id, sealed, version)
    return len(sealed)


def seal_overrides(db: sqlite_utils.Database, run_id: int, ids: Iterable[int]) -> int:
    """Seal these overrides of the run (oldest first). Returns how many."""
    return _seal_ids(db, run_id, OVERRIDE.name, ids)


def seal_criterion_overrides(db: sqlite_utils.Database, run_id: int, ids: Iterable[int]) -> int:
    """Seal these criterion overrides of the run (oldest first). Returns how many."""
    return _seal_ids(db, run_id, CRITERION_OVERRIDE.name, ids)


def seal_deleted_calls(db: sqlite_utils.Database, run_id: int,
                       pairs: Iterable[tuple[str, str]]) -> int:
    """Record that the calls of these (item, critic) pairs were deleted on purpose (a
    re-judged item whose critic was not called again), so their absence is in the record."""
    sealed = [Sealed(CALL.name, record_key(CALL, pair), DELETED, b"")
              for pair in dict.fromkeys((str(i), str(c)) for i, c in pairs)]
    if sealed:
        append(db, run_id, sealed, chain_version(db, run_id))
    return len(sealed)


def chain_head(db: sqlite_utils.Database, run_id: int) -> tuple[int, str] | None:
    """(how many records the run's chain holds, its last link as hex), or None without one."""
    try:
        row = db.execute(
            "SELECT seq, hash FROM record_chain WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
            [run_id]).fetchone()
    except sqlite3.OperationalError:  # a read-only file from before migration 0025
        return None
    return (int(row[0]), bytes(row[1]).hex()) if row else None


# -- checking -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    """One record that does not match the chain.

    Attributes:
        seq: its place in the chain (None: a row the chain never recorded).
        table: the table ("record_chain" when the chain itself was edited).
        key: the row's key (item id; item and critic; override id).
        what: what is wrong, as a sentence fragment.
    """

    seq: int | None
    table: str
    key: str
    what: str

    def sentence(self) -> str:
        where = f"record #{self.seq}" if self.seq is not None else "not in the record"
        return f"{self.table} row {self.key} ({where}): {self.what}"


@dataclass
class Verification:
    """What `verify_run` found."""

    run_id: int
    records: int = 0
    head: str | None = None  # the recomputed last link, hex
    version: int | None = None  # the chain version the record was sealed with
    by_kind: dict[str, int] = field(default_factory=dict)
    mismatches: list[Mismatch] = field(default_factory=list)
    probabilities: dict[float, int] = field(default_factory=dict)  # decisions per probability
    # The audit sample as sealed: stratum -> (items drawn from it, the stratum's size at its
    # latest draw), so its sampled share is drawn / size. Empty without audit entries.
    audit: dict[str, tuple[int, int]] = field(default_factory=dict)
    # table -> rows the record's chain version does not cover (an audit sample of a run
    # recorded before version 3): neither verified nor reported as edits.
    unsealed: dict[str, int] = field(default_factory=dict)

    @property
    def intact(self) -> bool:
        return self.records > 0 and not self.mismatches

    @property
    def first(self) -> Mismatch | None:
        """The first record that does not match: the lowest place in the chain, then the rows
        the chain never recorded."""
        if not self.mismatches:
            return None
        return min(self.mismatches, key=lambda m: (m.seq is None, m.seq or 0))


def _chain_entries(db: sqlite_utils.Database, run_id: int,
                   kind: str | None = None) -> Iterator[tuple[Any, ...]]:
    sql = ("SELECT seq, kind, key, content, parts, sample_probability, hash FROM record_chain"
           " WHERE run_id = ?" + (" AND kind = ?" if kind else "") + " ORDER BY seq")
    yield from db.conn.execute(sql, [run_id, kind] if kind else [run_id])


def _describe_row(kind: RecordKind, values: Sequence[Any], groups: list[str]) -> str:
    """The current values of the changed groups (short), for the sentence."""
    now = dict(zip(kind.fields, values, strict=True))
    shown = []
    for name, fields in kind.groups:
        if name not in groups:
            continue
        for f in fields:
            value = now[f]
            if isinstance(value, (bytes, bytearray)):
                text = f"{len(value)} bytes"
            else:
                text = repr(value)
                text = text if len(text) <= 60 else text[:57] + "..."
            shown.append(f"{f}={text}")
    return ", ".join(shown)


def verify_run(db: sqlite_utils.Database, run_id: int, *, head: str | None = None) -> Verification:
    """Recompute run `run_id`'s chain and check every stored record against it.

    Args:
        head: a head kept from an earlier export (hex): also check that the chain still holds
            it, unchanged up to it.

    Raises:
        NotFoundError: no such run.
    """
    if db.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is None:
        raise NotFoundError(f"There is no run with id {run_id}.")
    result = Verification(run_id)
    if not db["record_chain"].exists():  # a read-only file from before migration 0025
        result.mismatches.append(Mismatch(None, "record_chain", "(none)",
                                          "this database was written before Jurybox kept a "
                                          "record (migration 0025_record_chain)"))
        return result
    first = db.conn.execute(
        "SELECT content, hash FROM record_chain WHERE run_id = ? ORDER BY seq LIMIT 1",
        [run_id]).fetchone()
    # The version the record was sealed with, from its first link (None: that entry follows
    # from no version's genesis; the loop below reports it, and the rows are checked with the
    # current lists).
    result.version = version_of_chain(run_id, bytes(first[0]), bytes(first[1])) if first \
        else None
    version = result.version or CHAIN_VERSION
    previous = genesis(run_id, version)
    broken = False
    head_found = head is None
    for seq, kind, key, content, _parts, probability, stored in _chain_entries(db, run_id):
        previous = link(previous, bytes(content))
        result.records += 1
        result.by_kind[kind] = result.by_kind.get(kind, 0) + 1
        if kind == DECISION.name and probability is not None:
            result.probabilities[probability] = result.probabilities.get(probability, 0) + 1
        if not broken and previous != bytes(stored):
            broken = True
            what = ("the chain entry itself was changed, removed or inserted: its link does not "
                    "follow from the entries before it")
            if result.records == 1:
                what = ("the run's first chain entry was changed, removed or inserted: its link "
                        "follows from no chain version this Jurybox knows "
                        f"({', '.join(map(str, VERSIONS))}; a later release may have sealed it)")
            result.mismatches.append(Mismatch(seq, "record_chain", f"{kind} {key}", what))
        if head is not None and not head_found and not broken and bytes(stored).hex() == head.lower():
            head_found = True
    result.head = previous.hex() if result.records else None
    if not head_found:
        result.mismatches.append(Mismatch(
            None, "record_chain", f"head {head}",
            "the chain does not hold this head: the record was rewritten since it was exported"))
    kinds = kinds_of(version)
    for kind in kinds.values():
        result.mismatches += _check_kind(db, run_id, kind)
    if AUDIT_ITEM.name not in kinds:
        result.unsealed = _uncovered(db, run_id)
    elif result.by_kind.get(AUDIT_ITEM.name):
        result.audit = _audit_shares(db, run_id)
    return result


def _uncovered(db: sqlite_utils.Database, run_id: int) -> dict[str, int]:
    """table -> rows of the run in tables its chain version has no kind for."""
    if not db["audit_items"].exists():
        return {}
    n = int(db.conn.execute("SELECT count(*) FROM audit_items WHERE run_id = ?",
                            [run_id]).fetchone()[0])
    return {"audit_items": n} if n else {}


def _audit_shares(db: sqlite_utils.Database, run_id: int) -> dict[str, tuple[int, int]]:
    """stratum -> (audit items drawn from it, its size at the latest draw), in draw order."""
    out: dict[str, tuple[int, int]] = {}
    for stratum, drawn, size in db.conn.execute(
            "SELECT stratum, count(*), (SELECT b.stratum_size FROM audit_items b WHERE"
            " b.run_id = a.run_id AND b.stratum = a.stratum ORDER BY b.draw_order DESC LIMIT 1)"
            " FROM audit_items a WHERE a.run_id = ? GROUP BY stratum ORDER BY min(draw_order)",
            [run_id]):
        out[str(stratum)] = (int(drawn), int(size))
    return out


def _check_kind(db: sqlite_utils.Database, run_id: int, kind: RecordKind) -> list[Mismatch]:
    latest: dict[str, tuple[int, bytes, bytes, float | None]] = {}
    for seq, _kind, key, content, parts, probability, _hash in _chain_entries(db, run_id,
                                                                              kind.name):
        latest[key] = (seq, bytes(content), bytes(parts), probability)
    found: list[Mismatch] = []
    if not db[kind.table].exists():  # a read-only file from before the kind's migration
        return found
    n_key = len(kind.key)
    for row in db.conn.execute(
            f"SELECT {_select(kind)} FROM {kind.table} t WHERE t.run_id = ?", [run_id]):
        key = record_key(kind, row[:n_key])
        values = list(row[n_key:])
        entry = latest.pop(key, None)
        if entry is None or entry[1] == DELETED:
            found.append(Mismatch(None, kind.table, key,
                                  "this row was never recorded (inserted behind the app's back, "
                                  "or written before the record was kept)"))
            continue
        seq, content, parts, probability = entry
        if kind.fields[-1] == SAMPLED:  # the chain column holds it: hashed as kept there
            values[-1] = probability
        if seal(kind, key, values, probability).content == content:
            continue
        groups = changed_groups(kind, parts, values)
        if groups:
            what = (f"its {describe_groups(kind, groups)} changed since it was recorded; now "
                    f"{_describe_row(kind, values, groups)}")
        else:
            what = "its content changed since it was recorded"
        found.append(Mismatch(seq, kind.table, key, what))
    for key, (seq, content, _parts, _p) in latest.items():
        if content != DELETED:
            found.append(Mismatch(seq, kind.table, key,
                                  "this row was deleted since it was recorded"))
    return found
