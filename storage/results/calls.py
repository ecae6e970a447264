"""Call outcomes (one row per run x item x critic) and the cache of successful calls.

A row holds the parsed verdict and its evidence: what was sent (never the key), what came back,
latency, attempts, tokens, cost and the cache key. A re-run replaces a failed row with the new
outcome; a successful row is never replaced by a failure (only `rejudge` replaces on purpose).
"""

from __future__ import annotations

import collections
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import sqlite_utils

from judging.verdicts import FailureKind, Verdict
from storage.db import DbPath, connect, dumps, loads, now, write_transaction
from storage.keys import cache_hash
from storage.results.replies import RunPacker, packer_for, unpack
from storage.results.runs import refresh_run_totals
from storage.reviewing.record_chain import seal_calls

# Header or parameter names that could carry a credential. The call layer already strips the
# key before handing over `raw_request`; this is the second lock on the door, because a key in
# the database would be copied into every backup and export of it.
_SECRET_NAMES = frozenset(
    {"authorization", "api_key", "api-key", "apikey", "x-api-key", "x-goog-api-key", "key",
     "proxy-authorization", "cookie", "set-cookie"}
)


def scrub(value: Any) -> Any:
    """A copy of a raw request with any credential-looking entry replaced by "***"."""
    if isinstance(value, dict):
        return {
            k: "***" if str(k).lower() in _SECRET_NAMES else scrub(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


_COLUMNS = (
    "run_id", "item_id", "critic", "label", "score", "confidence", "reasoning", "failure",
    "message", "raw_request", "raw_response", "latency_ms", "attempts", "tokens_in",
    "tokens_out", "cost_usd", "cache_key", "vendor", "model", "simulated", "cached", "created_at",
    "cache_hash", "marks", "request_rebuilt", "reply_dict", "tokens_cached",
    "label_probs", "expected_score", "expected_spread",
)
_UPDATE = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c not in ("run_id", "item_id", "critic"))
_INSERT = (
    f"INSERT INTO calls ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' for _ in _COLUMNS)}) "
    f"ON CONFLICT (run_id, item_id, critic) DO UPDATE SET {_UPDATE}"
)
# Never let a failure (or a replay from the cache) overwrite a success already stored.
_KEEP_SUCCESS = " WHERE calls.failure IS NOT NULL"


# Matched against the lower-cased JSON text: a case-sensitive search of the lowered text is
# about 3x faster than an IGNORECASE one (measured: 1.3 us against 4.5 us per request), and
# this scan runs once per stored call.
_SECRET_KEY_RE = re.compile(
    '"(?:' + "|".join(re.escape(name) for name in sorted(_SECRET_NAMES)) + ')"'
)


def request_json(raw_request: dict[str, Any] | None) -> str | None:
    """The raw request as JSON text, with credential-looking entries scrubbed.

    Serialising first and scanning the text keeps the common case (nothing to scrub) cheap:
    walking every message of every request in Python was most of the write time. A hit in
    the text (a message that merely says "key") only costs the slow, exact path.
    """
    text = dumps(raw_request)
    if text is not None and _SECRET_KEY_RE.search(text.lower()):
        text = dumps(scrub(raw_request))
    return text


def _rows(run_id: int, verdicts: Iterable[Verdict], stamp: str,
          rebuilt: Sequence[bool] | None = None,
          packer: RunPacker | None = None) -> list[tuple[Any, ...]]:
    """One parameter tuple per verdict, in `_COLUMNS` order; cancelled verdicts are skipped.
    A verdict flagged in `rebuilt` stores no request: its run's template rebuilds it. With a
    `packer`, replies are stored compressed (`storage.results.replies`).

    The hot loop of writing a run: plain tuples for one `executemany` (not a dict per row
    through sqlite-utils), the request encoded to JSON once, locals instead of globals.
    """
    cancelled = FailureKind.CANCELLED
    encode, hash_key = request_json, cache_hash
    pack = packer.pack if packer is not None else None
    rows: list[tuple[Any, ...]] = []
    append = rows.append
    for index, v in enumerate(verdicts):
        failure: str | None = None
        if v.failure is not None:
            if v.failure == cancelled:
                continue  # never sent: nothing to keep, and resume must send it
            # sqlite3 would bind a StrEnum as its text anyway; .value keeps it a plain str.
            failure = v.failure.value if isinstance(v.failure, FailureKind) else str(v.failure)
        key = v.cache_key
        from_template = rebuilt is not None and rebuilt[index]
        reply, reply_dict = pack(v.critic, v.raw_response) if pack else (v.raw_response, None)
        append((
            run_id, str(v.item_id), v.critic, v.label, v.score, v.confidence, v.reasoning,
            failure, v.message, None if from_template else encode(v.raw_request),
            reply, v.latency_ms, v.attempts,
            v.tokens_in, v.tokens_out, v.cost_usd, key, v.vendor, v.model, int(v.simulated),
            int(v.cached), stamp, hash_key(key), _marks_json(v), int(from_template), reply_dict,
            v.tokens_cached, dumps(v.label_probs) if v.label_probs else None, v.expected_score,
            v.expected_spread,
        ))
    return rows


_STEP_COLUMNS = (
    "run_id", "item_id", "critic", "sample", "swapped", "position", "role", "final", "label",
    "score",
    "confidence", "reasoning", "failure", "message", "raw_request", "raw_response", "latency_ms",
    "attempts", "tokens_in", "tokens_out", "cost_usd", "cache_key", "vendor", "model",
    "simulated", "cached", "created_at", "tokens_cached",
)
_STEP_KEY = ("run_id", "item_id", "critic", "position")
_INSERT_STEP = (
    f"INSERT INTO call_steps ({', '.join(_STEP_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _STEP_COLUMNS)}) ON CONFLICT ({', '.join(_STEP_KEY)}) "
    "DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _STEP_COLUMNS if c not in _STEP_KEY)
)


def _step_rows(run_id: int, verdicts: Iterable[Verdict], stamp: str) -> list[tuple[Any, ...]]:
    """One row per step of the verdicts that have steps (a compound or repeated critic), the
    steps of a cancelled verdict included: they were paid, and resume reads them back from the
    cache. A step that was itself cancelled was never sent and is skipped."""
    rows: list[tuple[Any, ...]] = []
    for v in verdicts:
        steps = v.steps
        for position, step in enumerate(steps):
            if step.failure == FailureKind.CANCELLED:
                continue
            # The last call of a sample (in one order) gives that sample's answer.
            final = position == len(steps) - 1 or (
                (steps[position + 1].sample, steps[position + 1].swapped)
                != (step.sample, step.swapped))
            rows.append((
                run_id, str(v.item_id), v.critic, step.sample, int(step.swapped), position,
                step.role or "", int(final), step.label, step.score, step.confidence,
                step.reasoning,
                step.failure.value if step.failure is not None else None, step.message,
                request_json(step.raw_request), step.raw_response, step.latency_ms,
                step.attempts, step.tokens_in, step.tokens_out, step.cost_usd, step.cache_key,
                step.vendor, step.model, int(step.simulated), int(step.cached), stamp,
                step.tokens_cached,
            ))
    return rows


def _marks_json(verdict: Verdict) -> str | None:
    """A rubric critic's marks as {"criterion": {"mark": ..., "reasoning": ...}} (or None)."""
    if not verdict.marks:
        return None
    return dumps({criterion: {"mark": mark, "reasoning": reason}
                  for criterion, (mark, reason) in verdict.marks.items()})


def write_verdicts(
    db: sqlite_utils.Database,
    run_id: int,
    verdicts: Iterable[Verdict],
    *,
    replace_success: bool = False,
    refresh_totals: bool = True,
    rebuilt: Sequence[bool] | None = None,
    record: bool = False,
) -> int:
    """Write a batch of verdicts in ONE transaction and refresh the run's totals.

    This is the hot path of a run, so it bypasses sqlite-utils' `insert_all` (a dict per row,
    re-chunked at 999 / columns parameters) for one `executemany` of prepared tuples over a
    fixed column list; the rule "a stored success is never overwritten by a failure" is the
    `WHERE` of the upsert, so no row is read back first.

    Args:
        db: this thread's connection.
        run_id: the run they belong to.
        verdicts: outcomes; `CANCELLED` ones (never sent) are skipped, every other failure is kept.
        replace_success: overwrite a stored success too (re-judging an item on purpose).
        refresh_totals: recompute the run's totals in the same transaction (a job's writer
            turns this off and refreshes every few seconds: it costs a scan of the run).
        rebuilt: per verdict, True when its request is left to the run's request template
            (`save_request_template`; the writer checked the rebuild gives the bytes sent).
        record: also seal the rows as stored into the run's verifiable record
            (`storage.reviewing.record_chain`), in the same transaction (the job's writer does). Here
            and not around this call: inside a caller's transaction replies are stored
            uncompressed (`storage.results.replies.packer_for`).

    Returns:
        How many verdicts were written (or offered to the upsert: a failure that met a stored
        success counts, though the success stays).
    """

    verdicts = list(verdicts)
    stamp = now()
    packer = packer_for(db, run_id)
    if packer is not None:
        packer.learn(db.conn, verdicts)
    rows = _rows(run_id, verdicts, stamp, rebuilt, packer)
    step_rows = _step_rows(run_id, verdicts, stamp)
    if not rows and not step_rows:
        return 0
    sql = _INSERT if replace_success else _INSERT + _KEEP_SUCCESS
    with write_transaction(db):
        conn = db.conn
        if step_rows:
            if replace_success:  # a re-judged chain may take another path: drop the old one
                conn.executemany(
                    "DELETE FROM call_steps WHERE run_id = ? AND item_id = ? AND critic = ?",
                    sorted({row[:3] for row in step_rows}),
                )
            conn.executemany(_INSERT_STEP if replace_success
                             else _INSERT_STEP + " WHERE call_steps.failure IS NOT NULL",
                             step_rows)
        before = conn.execute("SELECT coalesce(max(id), 0) FROM calls").fetchone()[0]
        conn.executemany(sql, rows)
        # New successes into the small level of the cache index, in one statement over the
        # rowids this batch added (rows updated in place are indexed by a trigger instead).
        conn.execute(
            "INSERT INTO call_cache_recent (cache_hash, call_id) SELECT cache_hash, id"
            " FROM calls WHERE id > ? AND failure IS NULL AND cache_hash IS NOT NULL",
            [before],
        )
        _merge_cache_index_if_due(db)
        if record:
            seal_calls(db, run_id, ((row[1], row[2]) for row in rows))
        if refresh_totals:
            refresh_run_totals(db, run_id)
    return len(rows)



# Entries the small level of the cache index holds before they are merged into the big one.
# Each commit rewrites the small level's dirty pages (about CACHE_MERGE_AT / 440 on average)
# and each merge dirties at most about CACHE_MERGE_AT pages of the big one; 4096 keeps the
# sum lowest (measured, 100k verdicts in batches of 200: 1024 -> 330 MB written, 4096 -> 245,
# 32768 -> 437; the one big index wrote 419 MB). See migration 0004.
CACHE_MERGE_AT = 4096


def _merge_cache_index_if_due(db: sqlite_utils.Database) -> None:
    """Move the small level of the cache index into the big one once it is full enough.

    Runs inside the writer's transaction, so a crash leaves either level intact (entries are
    never lost, at worst still in the small level, where lookups find them too).
    """
    # rowids count up from 1 again once the table is emptied: max(rowid) is a cheap size.
    pending = db.conn.execute("SELECT max(rowid) FROM call_cache_recent").fetchone()[0]
    if pending is not None and pending >= CACHE_MERGE_AT:
        merge_cache_index(db)


def merge_cache_index(db: sqlite_utils.Database) -> None:
    """Merge every entry of the small cache-index level into the big one (sorted, so each
    page of the big index is touched once), then empty the small level."""
    with db.atomic():
        db.conn.execute(
            "INSERT OR IGNORE INTO call_cache (cache_hash, call_id)"
            " SELECT cache_hash, call_id FROM call_cache_recent ORDER BY cache_hash, call_id"
        )
        db.conn.execute("DELETE FROM call_cache_recent")


def save_request_template(db: sqlite_utils.Database, run_id: int, critic: str, url: str,
                          prefix: str, content: str) -> None:
    """Keep a critic's request template for the run (the first one stays: a run's panel, and
    so its requests, never change)."""
    db.execute(
        "INSERT OR IGNORE INTO request_templates (run_id, critic, url, prefix, content)"
        " VALUES (?, ?, ?, ?, ?)", [run_id, critic, url, prefix, content])


def request_templates(db: sqlite_utils.Database, run_id: int) -> dict[str, tuple[str, str, str]]:
    """The run's request templates: critic -> (url, prefix, content)."""
    return {critic: (url, prefix, content) for critic, url, prefix, content in db.execute(
        "SELECT critic, url, prefix, content FROM request_templates WHERE run_id = ?", [run_id])}


def successful_pairs(db: sqlite_utils.Database, run_id: int) -> set[tuple[str, str]]:
    """(item_id, critic) pairs of the run that already have a successful verdict."""
    return {
        (item_id, critic)
        for item_id, critic in db.execute(
            "SELECT item_id, critic FROM calls WHERE run_id = ? AND failure IS NULL", [run_id]
        )
    }


def successful_pairs_of(
    db: sqlite_utils.Database, run_id: int, item_ids: Sequence[str]
) -> set[tuple[str, str]]:
    """`successful_pairs` for some items of the run only (one query)."""
    return {
        (item_id, critic)
        for item_id, critic in db.execute(
            "SELECT item_id, critic FROM calls WHERE run_id = ? AND failure IS NULL"
            " AND item_id IN (SELECT value FROM json_each(?))",
            [run_id, dumps(list(item_ids))],
        )
    }


def call_counts(db: sqlite_utils.Database, run_id: int) -> dict[str, dict[str, int]]:
    """Per critic: {"ok": n, "failed": n, "cached": n} for the run."""
    out: dict[str, dict[str, int]] = {}
    for critic, ok, failed, cached in db.execute(
        "SELECT critic, count(*) FILTER (WHERE failure IS NULL),"
        " count(*) FILTER (WHERE failure IS NOT NULL), count(*) FILTER (WHERE cached)"
        " FROM calls WHERE run_id = ? GROUP BY critic",
        [run_id],
    ):
        out[critic] = {"ok": ok, "failed": failed, "cached": cached}
    return out


def adjusted_parameters(db: sqlite_utils.Database, run_id: int) -> dict[str, list[str]]:
    """Per critic, the parameters a vendor refused and the run dropped or renamed (one
    sentence each), read from its last call that says so: the call layer puts them in the
    raw request (`"adjusted"`), and such a request is stored whole, never left to a template,
    so only calls with a stored request are read."""
    out: dict[str, list[str]] = {}
    for critic, notes in db.execute(
        "SELECT c.critic, json_extract(c.raw_request, '$.adjusted') FROM calls c JOIN ("
        " SELECT max(id) AS id FROM calls WHERE run_id = ? AND raw_request IS NOT NULL"
        " AND instr(raw_request, '\"adjusted\"') > 0 GROUP BY critic) last ON c.id = last.id",
        [run_id],
    ):
        said = loads(notes) if isinstance(notes, str) else None
        if isinstance(said, list) and said:
            out[critic] = [str(note) for note in said]
    return out


def failure_summary(db: sqlite_utils.Database, run_id: int) -> list[dict[str, Any]]:
    """Failures of the run grouped by critic and kind, with one example message each."""
    return list(
        db.query(
            "SELECT critic, failure, count(*) AS n, max(message) AS example FROM calls"
            " WHERE run_id = ? AND failure IS NOT NULL GROUP BY critic, failure"
            " ORDER BY critic, n DESC",
            [run_id],
        )
    )


def delete_item_calls(
    db: sqlite_utils.Database, run_id: int, item_id: str, *, critic: str | None = None
) -> None:
    """Forget the stored outcomes of one item (of one critic only, when given), steps too."""
    for table in ("calls", "call_steps"):
        if critic is None:
            db.execute(f"DELETE FROM {table} WHERE run_id = ? AND item_id = ?", [run_id, item_id])
        else:
            db.execute(
                f"DELETE FROM {table} WHERE run_id = ? AND item_id = ? AND critic = ?",
                [run_id, item_id, critic],
            )


def stored_critics(db: sqlite_utils.Database, run_id: int, item_id: str) -> list[str]:
    """The critics with a stored outcome (success or failure) for one item of a run."""
    return [row[0] for row in db.execute(
        "SELECT critic FROM calls WHERE run_id = ? AND item_id = ? ORDER BY critic",
        [run_id, item_id],
    )]


# The reply's dictionary comes with it (NULL for a reply stored as text): `storage.results.replies`.
REPLY_DICTIONARY = "(SELECT content FROM reply_dictionaries WHERE id = reply_dict)"
_VERDICT_SELECT = (
    "SELECT critic, item_id, label, score, confidence, reasoning, failure, message, raw_request,"
    f" raw_response, {REPLY_DICTIONARY}, latency_ms, attempts, tokens_in, tokens_out, cost_usd,"
    " cache_key, vendor, model, simulated, marks, label_probs, expected_score, expected_spread"
    " FROM calls"
)


def _verdict(row: tuple[Any, ...], *, cached: bool = False) -> Verdict:
    (critic, item_id, label, score, confidence, reasoning, failure, message, raw_request,
     raw_response, dictionary, latency_ms, attempts, tokens_in, tokens_out, cost_usd, cache_key,
     vendor, model, simulated, marks, label_probs, expected_score, expected_spread) = row
    return Verdict(
        critic=critic, item_id=item_id, label=label, score=score, confidence=confidence,
        reasoning=reasoning, failure=FailureKind(failure) if failure else None, message=message,
        raw_request=loads(raw_request), raw_response=unpack(raw_response, dictionary),
        latency_ms=latency_ms,
        attempts=attempts, tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost_usd,
        cache_key=cache_key, vendor=vendor, model=model, simulated=bool(simulated), cached=cached,
        marks={c: (m["mark"], m.get("reasoning")) for c, m in (loads(marks) or {}).items()},
        label_probs=loads(label_probs), expected_score=expected_score,
        expected_spread=expected_spread,
    )


def load_verdicts(
    db: sqlite_utils.Database, run_id: int, item_id: str | None = None
) -> list[Verdict]:
    """Stored verdicts of a run (or of one item of it), in write order."""
    if item_id is None:
        rows = db.execute(_VERDICT_SELECT + " WHERE run_id = ? ORDER BY id", [run_id])
    else:
        rows = db.execute(
            _VERDICT_SELECT + " WHERE run_id = ? AND item_id = ? ORDER BY id", [run_id, item_id]
        )
    return [_verdict(tuple(r)) for r in rows]

def load_verdicts_of(
    db: sqlite_utils.Database, run_id: int, item_ids: Sequence[str]
) -> list[Verdict]:
    """Stored verdicts of some items of a run, in write order (one query)."""
    rows = db.execute(
        _VERDICT_SELECT + " WHERE run_id = ? AND item_id IN (SELECT value FROM json_each(?))"
        " ORDER BY id", [run_id, dumps(list(item_ids))])
    return [_verdict(tuple(r)) for r in rows]


# What a vote reads of a verdict (`judging.voting.strategies`, Dawid-Skene, calibration): not the evidence.
_VOTE_SELECT = ("SELECT critic, item_id, label, score, confidence, failure, marks, label_probs,"
                " expected_score, expected_spread FROM calls")


def load_votes_of(
    db: sqlite_utils.Database, run_id: int, item_ids: Sequence[str]
) -> list[Verdict]:
    """`load_verdicts_of` without the evidence (request, reply, reasoning, message, usage):
    verdicts to vote again. Why apart: with every reply decompressed, calibrating 100,000 items
    x 3 critics took 13.0 s and 842 MB; with the votes alone, 7.6 s and 305 MB."""
    rows = db.execute(
        _VOTE_SELECT + " WHERE run_id = ? AND item_id IN (SELECT value FROM json_each(?))"
        " ORDER BY id", [run_id, dumps(list(item_ids))])
    return [
        Verdict(critic=critic, item_id=item_id, label=label, score=score, confidence=confidence,
                failure=FailureKind(failure) if failure else None,
                marks={c: (m["mark"], m.get("reasoning"))
                       for c, m in (loads(marks) or {}).items()},
                label_probs=loads(probs), expected_score=expected, expected_spread=spread)
        for critic, item_id, label, score, confidence, failure, marks, probs, expected, spread
        in rows
    ]


# Both levels of the cache index (migration 0004); the call row itself confirms the full key
# and that it is still a success.
_CACHE_LOOKUP = (
    _VERDICT_SELECT + " WHERE id IN (SELECT call_id FROM call_cache WHERE cache_hash = ?"
    " UNION ALL SELECT call_id FROM call_cache_recent WHERE cache_hash = ?)"
    " AND cache_key = ? AND failure IS NULL ORDER BY id DESC LIMIT 1"
)


_STEP_CACHE_LOOKUP = (  # a step has no marks of its own (a criterion's call is a label)
    _VERDICT_SELECT.replace(" marks, label_probs, expected_score, expected_spread FROM calls",
                            " NULL, NULL, NULL, NULL FROM call_steps")
    .replace(REPLY_DICTIONARY, "NULL")
    + " WHERE cache_key = ? AND failure IS NULL ORDER BY id DESC LIMIT 1"
)


def load_steps(
    db: sqlite_utils.Database, run_id: int, item_id: str
) -> dict[str, list[dict[str, Any]]]:
    """The calls behind each critic's verdict on one item, for the critics that made more than
    one (critic -> its steps in order, as rows)."""
    steps: dict[str, list[dict[str, Any]]] = {}
    for row in db.query(
        "SELECT critic, sample, swapped, role, final, label, score, confidence, reasoning, failure,"
        " message, latency_ms, attempts, tokens_in, tokens_out, cost_usd, cached, raw_request,"
        " raw_response FROM call_steps WHERE run_id = ? AND item_id = ? ORDER BY critic, position",
        [run_id, item_id],
    ):
        steps.setdefault(row["critic"], []).append(row)
    return steps


def sample_values(db: sqlite_utils.Database, run_id: int) -> dict[str, dict[str, list[Any]]]:
    """Each repeated critic's answers per item, one per sample (its final step, in the order the
    responses were given; None where the sample failed): critic -> item id -> values in sample
    order."""
    values: dict[str, dict[str, list[Any]]] = {}
    for critic, item_id, value in db.execute(
        "SELECT critic, item_id, CASE WHEN failure IS NULL THEN coalesce(label, score) END"
        " FROM call_steps WHERE run_id = ? AND final AND NOT swapped AND (critic, item_id) IN ("
        "  SELECT critic, item_id FROM call_steps WHERE run_id = ? AND final AND NOT swapped"
        "  GROUP BY critic, item_id HAVING count(*) > 1)"
        " ORDER BY critic, item_id, sample",
        [run_id, run_id],
    ):
        values.setdefault(critic, {}).setdefault(item_id, []).append(value)
    return values


class CallCacheStore:
    """The call cache over the database: successful calls found by their cache key.

    Implements the cache protocol of `Panel.judge_many`: `get(key) -> Verdict | None` and
    `put(verdict) -> None`. Safe to use from many worker threads: each thread gets its own
    connection (a sqlite3 connection must not be shared). `put` keeps the verdict in memory
    (bounded) so a repeat within the same run hits before the batch writer has stored it; what
    makes the cache durable across a crash is the run's batch writer storing every verdict with
    its key.

    Args:
        db_path: the database file.
        memory_limit: how many recent `put` verdicts to keep in memory.
    """

    def __init__(self, db_path: DbPath, *, memory_limit: int = 20_000) -> None:
        self.db_path = db_path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._recent: collections.OrderedDict[str, Verdict] = collections.OrderedDict()
        self._memory_limit = memory_limit
        self.hits = 0
        self.misses = 0

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # check_same_thread=False only so that close() may close it from the owner thread;
            # it is used by the thread that opened it and no other.
            conn = connect(self.db_path, check_same_thread=False)
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def get(self, key: str) -> Verdict | None:
        """The stored successful verdict for `key` (marked `cached=True`), or None."""
        with self._lock:
            recent = self._recent.get(key)
        if recent is None:
            digest = cache_hash(key)
            conn = self._conn()
            row = conn.execute(_CACHE_LOOKUP, [digest, digest, key]).fetchone()
            if row is None:  # a step of a compound or repeated critic, maybe
                row = conn.execute(_STEP_CACHE_LOOKUP, [key]).fetchone()
            found = None if row is None else _verdict(tuple(row), cached=True)
        else:
            found = _copy_cached(recent)
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    def put(self, verdict: Verdict) -> None:
        """Remember a successful verdict by its cache key (failures are ignored)."""
        if verdict.failure is not None or not verdict.cache_key:
            return
        with self._lock:
            self._recent[verdict.cache_key] = verdict
            self._recent.move_to_end(verdict.cache_key)
            while len(self._recent) > self._memory_limit:
                self._recent.popitem(last=False)

    def close(self) -> None:
        """Close every thread's connection (call once the run's threads have finished)."""
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            try:
                conn.close()
            except sqlite3.Error:
                pass


def _copy_cached(v: Verdict) -> Verdict:
    data = {name: getattr(v, name) for name in Verdict.__slots__}
    data["cached"] = True
    return Verdict(**data)


def order_answers(
    db: sqlite_utils.Database, run_id: int
) -> dict[str, dict[str, list[tuple[str | None, str | None]]]]:
    """Each pairwise critic's answers per item in both orders, one pair per sample:
    (the label with A first, the label with B first as it was given on the swapped pair; None
    where that call failed). critic -> item id -> pairs in sample order."""
    answers: dict[str, dict[str, dict[int, list[str | None]]]] = {}
    for critic, item_id, sample, swapped, label in db.execute(
        "SELECT critic, item_id, sample, swapped, CASE WHEN failure IS NULL THEN label END"
        " FROM call_steps WHERE run_id = ? AND final ORDER BY critic, item_id, sample",
        [run_id],
    ):
        pair = answers.setdefault(critic, {}).setdefault(item_id, {}).setdefault(
            sample, [None, None])
        pair[int(swapped)] = label
    return {critic: {item: [(p[0], p[1]) for _, p in sorted(samples.items())]
                     for item, samples in items.items()}
            for critic, items in answers.items()}


def critic_costs(db: sqlite_utils.Database, run_id: int) -> dict[str, float | None]:
    """Each critic's known cost per verdict in the run (USD; None when none of its calls had a
    price): what choosing a cheaper panel saves."""
    return {critic: None if paid is None else float(paid) / max(int(n), 1)
            for critic, paid, n in db.execute(
                "SELECT critic, sum(cost_usd), count(*) FROM calls WHERE run_id = ?"
                " GROUP BY critic", [run_id])}
