"""The schema, as named migrations recorded in `_sqlite_migrations`.

Never edit a migration that has shipped: add a new one below it. Each step runs in a
transaction with the record of it (sqlite-utils `Migrations`), so a failed step leaves nothing.
"""

from __future__ import annotations

import sqlite3

import sqlite_utils
from sqlite_utils import Migrations

from storage.keys import cache_hash

MIGRATION_SET = "jurybox"

# The CHECK constraint of 0001 as it shipped: written out, not read from `RunStatus`, because a
# shipped migration never changes (a new status needs a new migration; a test holds the two equal).
RUN_STATUSES = ("pending", "running", "done", "cancelled", "interrupted", "failed")

migrations = Migrations(MIGRATION_SET)


def _script(db: sqlite_utils.Database, sql: str) -> None:
    # Statement by statement so everything stays inside the migration's transaction
    # (sqlite3's executescript would COMMIT first).
    pending = ""
    for piece in sql.split(";"):
        pending += piece + ";"
        # A trigger body holds semicolons of its own: wait until the statement is complete.
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                db.execute(pending)
            pending = ""
    if pending.strip(" \n;"):
        raise ValueError(f"incomplete SQL in migration: {pending[:80]!r}")


@migrations(name="0001_initial_schema")
def _initial(db: sqlite_utils.Database) -> None:
    statuses = ", ".join(f"'{s}'" for s in RUN_STATUSES)
    _script(
        db,
        f"""
        CREATE TABLE datasets (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            filename TEXT,
            format TEXT,
            content_hash TEXT NOT NULL UNIQUE,
            file_hash TEXT,
            n_items INTEGER NOT NULL,
            columns TEXT NOT NULL DEFAULT '[]',
            fields TEXT NOT NULL DEFAULT '[]',
            id_column TEXT,
            gold_column TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE items (
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            fields TEXT NOT NULL,
            gold TEXT,
            PRIMARY KEY (dataset_id, item_id)
        );
        CREATE INDEX items_position ON items (dataset_id, position);
        CREATE TABLE panels (
            hash TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            yaml TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            name TEXT,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id),
            panel_hash TEXT NOT NULL REFERENCES panels(hash),
            status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ({statuses})),
            created_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT,
            n_items INTEGER NOT NULL DEFAULT 0,
            critics TEXT NOT NULL DEFAULT '[]',
            total_calls INTEGER NOT NULL DEFAULT 0,
            ok_calls INTEGER NOT NULL DEFAULT 0,
            failed_calls INTEGER NOT NULL DEFAULT 0,
            cached_calls INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL,
            simulated INTEGER NOT NULL DEFAULT 0,
            error TEXT
        );
        CREATE INDEX runs_status ON runs (status);
        CREATE TABLE calls (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            critic TEXT NOT NULL,
            label TEXT,
            score REAL,
            confidence REAL,
            reasoning TEXT,
            failure TEXT,
            message TEXT,
            raw_request TEXT,
            raw_response TEXT,
            latency_ms REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER,
            tokens_out INTEGER,
            cost_usd REAL,
            cache_key TEXT,
            vendor TEXT,
            model TEXT,
            simulated INTEGER NOT NULL DEFAULT 0,
            cached INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX calls_pair ON calls (run_id, item_id, critic);
        CREATE INDEX calls_cache_key ON calls (cache_key) WHERE failure IS NULL;
        CREATE TABLE consensus (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            position INTEGER NOT NULL DEFAULT 0,
            consensus TEXT,
            score REAL,
            agreement REAL,
            disagreement INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            counts TEXT NOT NULL DEFAULT '{{}}',
            item_alpha REAL,
            tier INTEGER NOT NULL DEFAULT 0,
            settled_by TEXT,
            strategy TEXT,
            recommendation TEXT,
            spread REAL,
            tie INTEGER NOT NULL DEFAULT 0,
            note TEXT,
            PRIMARY KEY (run_id, item_id)
        );
        CREATE INDEX consensus_contested ON consensus (run_id, disagreement, agreement);
        CREATE INDEX consensus_label ON consensus (run_id, consensus);
        CREATE INDEX consensus_alpha ON consensus (run_id, item_alpha);
        CREATE INDEX consensus_failed ON consensus (run_id, failed);
        CREATE TABLE overrides (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            item_id TEXT NOT NULL,
            label TEXT NOT NULL,
            note TEXT NOT NULL DEFAULT '',
            reviewer TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX overrides_item ON overrides (run_id, item_id, id);
        CREATE TRIGGER overrides_no_update BEFORE UPDATE ON overrides
        BEGIN SELECT RAISE(ABORT, 'overrides are append-only: add a new override instead'); END;
        CREATE TRIGGER overrides_no_delete BEFORE DELETE ON overrides
        BEGIN SELECT RAISE(ABORT, 'overrides are append-only: they are never deleted'); END
        """,
    )


@migrations(name="0002_run_owner_heartbeat")
def _run_owner(db: sqlite_utils.Database) -> None:
    # Which process works on a running run, and when it last showed signs of life: so a start-up
    # check can tell a run whose process died (interrupted) from one another process (the CLI
    # next to the app) is still working on.
    _script(
        db,
        """
        ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
        ALTER TABLE runs ADD COLUMN owner_host TEXT;
        ALTER TABLE runs ADD COLUMN heartbeat_at TEXT
        """,
    )


@migrations(name="0003_cache_key_hash_index")
def _cache_hash(db: sqlite_utils.Database) -> None:
    # The cache index on the 64-character key was half the cost of writing a verdict (random
    # inserts of long keys): index a 64-bit hash of it instead; lookups still compare the key.
    db.execute("ALTER TABLE calls ADD COLUMN cache_hash INTEGER")
    rows = db.execute("SELECT id, cache_key FROM calls WHERE cache_key IS NOT NULL").fetchall()
    db.conn.executemany(
        "UPDATE calls SET cache_hash = ? WHERE id = ?", [(cache_hash(k), i) for i, k in rows]
    )
    db.execute("DROP INDEX calls_cache_key")
    db.execute("CREATE INDEX calls_cache_hash ON calls (cache_hash) WHERE failure IS NULL")


@migrations(name="0004_two_level_cache_index")
def _two_level_cache(db: sqlite_utils.Database) -> None:
    # Why two levels: cache hashes are random, so each batch of 200 verdicts dirtied ~160 random
    # pages of the one big index on calls.cache_hash, and every commit writes its dirty pages to
    # the WAL: 260 of the 420 MB written for 100,000 verdicts (measured). New entries now land in
    # a small table (`call_cache_recent`, a few dozen pages) that `storage.results.calls` merges into
    # the big one in sorted order every few thousand entries. A lookup reads both; it checks the
    # full key and `failure IS NULL` on the call row, so a stale entry (a deleted or re-judged
    # call) can never serve a wrong verdict, which is why deletes need no trigger here.
    # New rows are indexed by `write_verdicts` itself, with one INSERT ... SELECT over the
    # batch's new rowids: an AFTER INSERT trigger did the same at 6.8 us per row (measured),
    # more than the index it replaced. Only a row that turns into a success by an UPDATE (a
    # failure re-run, a re-judged item: rare) goes through the trigger below.
    _script(
        db,
        """
        CREATE TABLE call_cache (
            cache_hash INTEGER NOT NULL,
            call_id INTEGER NOT NULL,
            PRIMARY KEY (cache_hash, call_id)
        ) WITHOUT ROWID;
        CREATE TABLE call_cache_recent (
            cache_hash INTEGER NOT NULL,
            call_id INTEGER NOT NULL
        );
        CREATE INDEX call_cache_recent_hash ON call_cache_recent (cache_hash);
        INSERT INTO call_cache (cache_hash, call_id)
            SELECT cache_hash, id FROM calls
            WHERE failure IS NULL AND cache_hash IS NOT NULL ORDER BY 1, 2;
        DROP INDEX calls_cache_hash;
        CREATE TRIGGER calls_cache_update AFTER UPDATE OF failure, cache_hash ON calls
        WHEN NEW.failure IS NULL AND NEW.cache_hash IS NOT NULL
        BEGIN
            INSERT INTO call_cache_recent (cache_hash, call_id) VALUES (NEW.cache_hash, NEW.id);
        END
        """,
    )

@migrations(name="0005_run_ledger")
def _run_ledger(db: sqlite_utils.Database) -> None:
    # The run ledger (`judging.engine.ledger.Ledger`): what a run sent and paid, accumulated by its jobs
    # as JSON, so a re-run failure's first attempts stay paid and a cache hit never is. Runs made
    # before it get their ledger rebuilt from their calls, counting as `Ledger.add` does (cached
    # rows carry the tokens and cost of the call that first made them: not paid again).
    _script(
        db,
        """
        ALTER TABLE runs ADD COLUMN ledger TEXT;
        UPDATE runs SET ledger = (
            SELECT json_object(
                'calls', count(*),
                'failed', count(*) FILTER (WHERE failure IS NOT NULL),
                'cancelled', count(*) FILTER (WHERE failure = 'cancelled'),
                'cache_hits', count(*) FILTER (WHERE cached),
                'sent_calls', count(*) FILTER (WHERE NOT cached AND attempts > 0),
                'http_attempts', coalesce(sum(attempts) FILTER (WHERE NOT cached), 0),
                'calls_saved', 0,
                'tokens_in', coalesce(sum(tokens_in) FILTER (WHERE NOT cached AND attempts > 0), 0),
                'tokens_out', coalesce(sum(tokens_out) FILTER (WHERE NOT cached AND attempts > 0), 0),
                'cost_usd', coalesce(sum(cost_usd) FILTER (WHERE NOT cached AND attempts > 0), 0.0),
                'unpriced_calls', count(*) FILTER (
                    WHERE NOT cached AND attempts > 0 AND cost_usd IS NULL
                    AND (failure IS NULL OR coalesce(tokens_in, 0) + coalesce(tokens_out, 0) > 0))
            ) FROM calls WHERE calls.run_id = runs.id
        )
        """,
    )


@migrations(name="0006_run_owner_token")
def _run_owner_token(db: sqlite_utils.Database) -> None:
    # One owner per run: a job claims a run with a conditional UPDATE that writes its own token
    # (`storage.results.runs.claim_run`); its heartbeats and final status only land while it still
    # holds the token. Process ids alone could not tell two jobs of one process apart.
    db.execute("ALTER TABLE runs ADD COLUMN owner_token TEXT")


@migrations(name="0011_override_blind")
def _override_blind(db: sqlite_utils.Database) -> None:
    # A label given in a blind first pass, before the reviewer saw any critic: kept apart from
    # the revisions made after the reveal, so judge-vs-human figures are not anchored.
    db.execute("ALTER TABLE overrides ADD COLUMN blind INTEGER NOT NULL DEFAULT 0")


@migrations(name="0012_override_curation")
def _override_curation(db: sqlite_utils.Database) -> None:
    # A taxonomy decision's detail: the new child classes of a split (a JSON list) and the class
    # a merge goes into.
    db.execute("ALTER TABLE overrides ADD COLUMN children TEXT")
    db.execute("ALTER TABLE overrides ADD COLUMN merge_into TEXT")


@migrations(name="0013_review_assignments")
def _review_assignments(db: sqlite_utils.Database) -> None:
    # Several reviewers: which items each one reviews (some by two, to measure their own
    # agreement), and the lead's adjudication of a conflict (an override marked as such).
    _script(
        db,
        """
        CREATE TABLE assignments (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            reviewer TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, item_id, reviewer)
        );
        CREATE INDEX assignments_reviewer ON assignments (run_id, reviewer);
        ALTER TABLE overrides ADD COLUMN adjudication INTEGER NOT NULL DEFAULT 0;
        """,
    )


@migrations(name="0014_run_budget")
def _run_budget(db: sqlite_utils.Database) -> None:
    # A run's budget cap (dollars and/or tokens) and why it stopped short: a run stopped by its
    # cap is "cancelled" with stop_reason 'budget' (resumable like any cancelled run; a new
    # status would need the runs table rebuilt, which its foreign keys make unsafe).
    db.execute("ALTER TABLE runs ADD COLUMN budget_usd REAL")
    db.execute("ALTER TABLE runs ADD COLUMN budget_tokens INTEGER")
    db.execute("ALTER TABLE runs ADD COLUMN stop_reason TEXT")


@migrations(name="0015_call_steps")
def _call_steps(db: sqlite_utils.Database) -> None:
    # The calls behind one critic's verdict when it takes more than one (a compound critic's
    # chain, a critic's repeats, a pairwise critic's two orders): each with its own evidence and
    # cache key. `calls` keeps one
    # row per run x item x critic, the critic's verdict, so every reader of it stays as it was.
    # Cache lookups read this table too (by key, a plain index: it is small next to `calls`).
    _script(
        db,
        """
        CREATE TABLE call_steps (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            critic TEXT NOT NULL,
            sample INTEGER NOT NULL DEFAULT 0,
            swapped INTEGER NOT NULL DEFAULT 0,
            position INTEGER NOT NULL,
            role TEXT NOT NULL,
            final INTEGER NOT NULL DEFAULT 0,
            label TEXT,
            score REAL,
            confidence REAL,
            reasoning TEXT,
            failure TEXT,
            message TEXT,
            raw_request TEXT,
            raw_response TEXT,
            latency_ms REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER,
            tokens_out INTEGER,
            cost_usd REAL,
            cache_key TEXT,
            vendor TEXT,
            model TEXT,
            simulated INTEGER NOT NULL DEFAULT 0,
            cached INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX call_steps_place ON call_steps (run_id, item_id, critic, position);
        CREATE INDEX call_steps_cache_key ON call_steps (cache_key) WHERE failure IS NULL;
        """,
    )


@migrations(name="0016_rubric_marks")
def _rubric_marks(db: sqlite_utils.Database) -> None:
    # Rubric panels: each critic's mark and reason per criterion (on its call row), the panel's
    # vote per criterion (on the consensus row), and a reviewer's mark for one criterion, kept
    # apart from item overrides (append-only like them: the history is the audit trail).
    _script(
        db,
        """
        ALTER TABLE calls ADD COLUMN marks TEXT;
        ALTER TABLE consensus ADD COLUMN marks TEXT;
        CREATE TABLE criterion_overrides (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            criterion TEXT NOT NULL,
            mark TEXT NOT NULL,
            note TEXT NOT NULL DEFAULT '',
            reviewer TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX criterion_overrides_item ON criterion_overrides (run_id, item_id, id);
        CREATE TRIGGER criterion_overrides_no_update BEFORE UPDATE ON criterion_overrides
        BEGIN SELECT RAISE(ABORT, 'overrides are append-only: add a new one instead'); END;
        """,
    )


@migrations(name="0017_request_templates")
def _request_templates(db: sqlite_utils.Database) -> None:
    # A critic's request for any item, with each field marked, stored once per run
    # (`judging.engine.calls.template`): a plain call's request is then rebuilt from it and the item
    # instead of being stored whole (about 1.5 KB a verdict). `request_rebuilt` marks the rows
    # whose request was left to the template because the rebuild was checked to give exactly
    # the bytes sent; rows from before keep their request as they were.
    _script(
        db,
        """
        CREATE TABLE request_templates (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            critic TEXT NOT NULL,
            url TEXT NOT NULL,
            prefix TEXT NOT NULL,
            content TEXT NOT NULL,
            PRIMARY KEY (run_id, critic)
        );
        ALTER TABLE calls ADD COLUMN request_rebuilt INTEGER NOT NULL DEFAULT 0;
        """,
    )


@migrations(name="0018_vendor_batches")
def _vendor_batches(db: sqlite_utils.Database) -> None:
    # Batch mode (`judging.engine.batches`): the batches a run handed to a vendor, so polling
    # survives any restart (`jurybox resume`, the app's Resume), and each result line as the
    # vendor wrote it until the run has read it into its calls (then it is deleted: the call
    # row keeps the reply). A result's key is its call's cache key (the line's custom_id).
    _script(
        db,
        """
        CREATE TABLE vendor_batches (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            critic TEXT NOT NULL,
            api TEXT NOT NULL CHECK (api IN ('openai', 'anthropic')),
            base_url TEXT NOT NULL,
            batch_id TEXT NOT NULL,
            requests INTEGER NOT NULL,
            state TEXT NOT NULL DEFAULT 'submitted'
                CHECK (state IN ('submitted', 'collected', 'failed', 'cancelled')),
            vendor_status TEXT,
            succeeded INTEGER NOT NULL DEFAULT 0,
            errored INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            submitted_at TEXT NOT NULL,
            checked_at TEXT,
            collected_at TEXT
        );
        CREATE INDEX vendor_batches_run ON vendor_batches (run_id, state);
        CREATE TABLE batch_results (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            custom_id TEXT NOT NULL,
            api TEXT NOT NULL,
            line TEXT NOT NULL,
            PRIMARY KEY (run_id, custom_id)
        ) WITHOUT ROWID;
        """,
    )


@migrations(name="0019_reply_dictionaries")
def _reply_dictionaries(db: sqlite_utils.Database) -> None:
    # Replies compressed (`storage.results.replies`): each critic's first stored reply of a run is kept
    # as a zstd raw-content dictionary, and later replies of that critic are stored as zstd
    # frames against it (a BLOB in `raw_response`, `reply_dict` naming the dictionary). A
    # 525-byte chat completion becomes about 110 bytes. Rows from before, and replies that
    # would not shrink, keep their text; `reply_dict` is NULL for them.
    _script(
        db,
        """
        CREATE TABLE reply_dictionaries (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            critic TEXT NOT NULL,
            content BLOB NOT NULL,
            UNIQUE (run_id, critic)
        );
        ALTER TABLE calls ADD COLUMN reply_dict INTEGER REFERENCES reply_dictionaries(id);
        """,
    )



@migrations(name="0020_review_order_indexes")
def _review_order_indexes(db: sqlite_utils.Database) -> None:
    # Review's first page at 1,000,000 items: the default "most contested first" order sorted
    # every matching row in a temporary B-tree (0.26 s, and 1.7 s to reach the last page). An
    # index on exactly the expressions of `storage.reviewing.review_queue.SORTS["contested"]` hands the rows
    # over in that order, so LIMIT stops after one page. Its first two columns are those of
    # consensus_contested (the count of disagreements), which it replaces. "File order" gets
    # its own index, and tied votes a partial one (the Agreement page counts them every rerun).
    _script(
        db,
        """
        CREATE INDEX consensus_contested_order ON consensus (run_id, disagreement DESC,
            coalesce(agreement, -1), coalesce(item_alpha, 2), failed DESC, position);
        DROP INDEX consensus_contested;
        CREATE INDEX consensus_position ON consensus (run_id, position);
        CREATE INDEX consensus_ties ON consensus (run_id, consensus) WHERE tie;
        """,
    )


@migrations(name="0021_cached_tokens")
def _cached_tokens(db: sqlite_utils.Database) -> None:
    # Input tokens the vendor read from its prompt cache (OpenAI `cached_tokens`, Anthropic
    # `cache_read_input_tokens`): part of tokens_in, priced at the cached rate. Older rows: NULL
    # (not reported), never 0.
    _script(
        db,
        """
        ALTER TABLE calls ADD COLUMN tokens_cached INTEGER;
        ALTER TABLE call_steps ADD COLUMN tokens_cached INTEGER;
        """,
    )


@migrations(name="0022_panel_drafts")
def _panel_drafts(db: sqlite_utils.Database) -> None:
    # The Panel page's unsaved draft outlives a reload or a typed URL (a Streamlit session does
    # not): one row per owner (the signed-in email, or "" for the single user of a local app),
    # the draft as JSON, written on each change and removed once the draft is saved.
    _script(
        db,
        """
        CREATE TABLE panel_drafts (
            owner TEXT PRIMARY KEY,
            draft TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        """,
    )


@migrations(name="0023_review_leases")
def _review_leases(db: sqlite_utils.Database) -> None:
    # Two reviewers walking one list must not be handed the same item: the item a reviewer has
    # open is theirs until the lease expires (a closed tab frees it by itself), as in the
    # queues of Label Studio or LangSmith. One row per item; `storage.reviewing.leases` renews, hands
    # over an expired one, and frees it on a save.
    _script(
        db,
        """
        CREATE TABLE review_leases (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            reviewer TEXT NOT NULL,
            taken_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            PRIMARY KEY (run_id, item_id)
        );
        CREATE INDEX review_leases_reviewer ON review_leases (run_id, reviewer);
        """,
    )


@migrations(name="0024_audit_sample")
def _audit_sample(db: sqlite_utils.Database) -> None:
    # An audit sample (`storage.reviewing.audit`): items drawn at random within the panel's agreement
    # strata and labelled blind, from which `judging.analysis.audit_stats` estimates the panel's accuracy
    # on every item. Each row keeps its design: the stratum it was drawn from, that stratum's
    # size and the item's weight when drawn, and whether a draw ("Draw an audit sample") or
    # the label-next queue drew it. `draw_order` is the order to label in (random within a
    # draw); `queue_rank` the item's place in the label-next queue (NULL: not queued).
    _script(
        db,
        """
        CREATE TABLE audit_items (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            stratum TEXT NOT NULL,
            stratum_size INTEGER NOT NULL,
            weight REAL NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('draw', 'next')),
            draw_order INTEGER NOT NULL,
            queue_rank INTEGER,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, item_id)
        );
        CREATE UNIQUE INDEX audit_items_order ON audit_items (run_id, draw_order);
        """,
    )


@migrations(name="0025_record_chain")
def _record_chain(db: sqlite_utils.Database) -> None:
    # The verifiable review record (`judging.analysis.hash_chain`, `storage.reviewing.record_chain`): one hash
    # chain per run over every stored verdict, decision and override, in commit order. One
    # append-only table rather than a `chain_hash` column on each table: calls and decisions
    # are rewritten in place (a resume, a re-judge), and a column would lose the history that
    # the chain must keep. Digests are BLOBs (32 bytes, not 64 hex characters): about 110
    # bytes a record. No index beyond the key: `verify` reads a run's chain in order.
    _script(
        db,
        """
        CREATE TABLE record_chain (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            content BLOB NOT NULL,
            parts BLOB NOT NULL,
            sample_probability REAL,
            hash BLOB NOT NULL,
            PRIMARY KEY (run_id, seq)
        ) WITHOUT ROWID;
        CREATE TRIGGER record_chain_no_update BEFORE UPDATE ON record_chain
        BEGIN SELECT RAISE(ABORT, 'the record chain is append-only'); END;
        """,
    )


@migrations(name="0026_expected_scores")
def _expected_scores(db: sqlite_utils.Database) -> None:
    # Logprob scores in the vote (`judging.voting.pooling`): a call's label probabilities (JSON,
    # label -> p), its expected score (G-Eval) and that score's standard deviation, read once
    # from the reply when it came back, so a re-vote and the export need not decompress
    # replies; and the decision's pooled distribution, expected score and spread. NULL: the
    # critic did not ask for logprobs, its reply had none, or (the expected score) its labels
    # have no order.
    _script(
        db,
        """
        ALTER TABLE calls ADD COLUMN label_probs TEXT;
        ALTER TABLE calls ADD COLUMN expected_score REAL;
        ALTER TABLE calls ADD COLUMN expected_spread REAL;
        ALTER TABLE consensus ADD COLUMN label_probs TEXT;
        ALTER TABLE consensus ADD COLUMN expected_score REAL;
        ALTER TABLE consensus ADD COLUMN expected_spread REAL;
        """,
    )


@migrations(name="0027_jury_decisions")
def _jury_decisions(db: sqlite_utils.Database) -> None:
    # A panel of juries (`judging.voting.juries`): each jury's own decision per item, beside the
    # panel's (the `consensus` row holds the top vote over them). A table, not a JSON column
    # on `consensus`: the export, Review and Agreement read one jury's decisions across items,
    # and each row is sealed into the run's record as its own kind (`jury_decision`).
    # `position` is the jury's place in the panel, the order Review draws them in.
    _script(
        db,
        """
        CREATE TABLE jury_decisions (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            jury TEXT NOT NULL,
            position INTEGER NOT NULL DEFAULT 0,
            consensus TEXT,
            score REAL,
            agreement REAL,
            disagreement INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            counts TEXT NOT NULL DEFAULT '{}',
            recommendation TEXT,
            spread REAL,
            tie INTEGER NOT NULL DEFAULT 0,
            note TEXT,
            PRIMARY KEY (run_id, item_id, jury)
        ) WITHOUT ROWID;
        """,
    )


@migrations(name="0028_tier_verdicts")
def _tier_verdicts(db: sqlite_utils.Database) -> None:
    # A cascade's sub-verdicts (`judging.verdicts.TierVerdict`), one per tier called for the
    # item, as a JSON list on its decision: read with the decision, never filtered on, so a
    # column rather than a table. NULL for items judged without a cascade (and before this).
    _script(db, "ALTER TABLE consensus ADD COLUMN tiers TEXT;")


@migrations(name="0029_run_figures")
def _run_figures(db: sqlite_utils.Database) -> None:
    # A run's figures computed once and kept (`storage.results.run_figures`): the critics' agreement
    # report and the audit's population, each with the state of the verdicts it was computed
    # from (`stamp`). At 1,000,000 items the report took seconds to compute on the Agreement
    # page's first load; kept here, it is read. A stamp that no longer matches the run's
    # verdicts means the figures are stale: they are computed again and replaced.
    _script(
        db,
        """
        CREATE TABLE run_figures (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            stamp TEXT NOT NULL,
            payload BLOB NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, kind)
        );
        """,
    )


@migrations(name="0030_audit_confidence")
def _audit_confidence(db: sqlite_utils.Database) -> None:
    # Audit samples stratified by the panel's confidence (`judging.analysis.audit_design`).
    # `item_confidence`: each item's Dawid-Skene posterior that its consensus label is right,
    # fitted on the critics' labels alone (`judging.analysis.audit_strata`), for the state of
    # the verdicts named by the run's `consensus_confidence` figures (`run_figures`: a stale
    # stamp means these rows are computed again). Only items with a consensus label have a row
    # (none: doubtful). A table rather than a column on `consensus`: the posterior depends on
    # every verdict of the run, not on the item's alone, and the decisions are sealed into the
    # review record as they are. `audit_items.design`: the design a sample was drawn with; its
    # weights depend on it, so a sample keeps it. Samples drawn before this are by agreement.
    _script(
        db,
        """
        CREATE TABLE item_confidence (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            confidence REAL NOT NULL,
            PRIMARY KEY (run_id, item_id)
        ) WITHOUT ROWID;
        ALTER TABLE audit_items ADD COLUMN design TEXT NOT NULL DEFAULT 'agreement'
            CHECK (design IN ('agreement', 'confidence'));
        """,
    )


@migrations(name="0031_call_count_indexes")
def _call_count_indexes(db: sqlite_utils.Database) -> None:
    # The Run page's per-critic rows (`storage.results.calls.call_counts`, `adjusted_parameters`),
    # redrawn every second while another process works on a run: at 3,000,000 calls they read
    # every call row, replies and all (2.3 s and 1.5 s). A covering index answers the counts
    # from its small entries (0.3 s), and a partial one holds only the calls whose request
    # says a parameter was adjusted (none, usually): that read becomes a lookup. Writing a
    # call costs about 2% more (180,000 verdicts: 3.33 s -> 3.40 s, medians of 3).
    _script(
        db,
        """
        CREATE INDEX calls_counts ON calls (run_id, critic, failure, cached);
        CREATE INDEX calls_adjusted ON calls (run_id, critic)
            WHERE instr(raw_request, '"adjusted"') > 0;
        """,
    )


@migrations(name="0032_imported_verdicts")
def _imported_verdicts(db: sqlite_utils.Database) -> None:
    # Verdicts judges gave outside Jurybox, kept with the dataset they judged
    # (`storage.datasets.imported`): a run's imported critics replay them. Keyed as the engine asks
    # (judge, item, order of a pair, repeat); without rowid, the key is the row.
    _script(
        db,
        """
        CREATE TABLE imported_judges (
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            judge TEXT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            source TEXT NOT NULL,
            format TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            PRIMARY KEY (dataset_id, judge)
        );
        CREATE TABLE imported_verdicts (
            dataset_id INTEGER NOT NULL,
            judge TEXT NOT NULL,
            item_id TEXT NOT NULL,
            swapped INTEGER NOT NULL DEFAULT 0,
            sample INTEGER NOT NULL DEFAULT 0,
            label TEXT,
            score REAL,
            confidence REAL,
            reasoning TEXT,
            history TEXT,
            PRIMARY KEY (dataset_id, judge, item_id, swapped, sample),
            FOREIGN KEY (dataset_id, judge) REFERENCES imported_judges (dataset_id, judge)
                ON DELETE CASCADE,
            FOREIGN KEY (dataset_id, item_id) REFERENCES items (dataset_id, item_id)
                ON DELETE CASCADE
        ) WITHOUT ROWID;
        """,
    )


def migrate(db: sqlite_utils.Database) -> None:
    """Apply every pending migration (a no-op when the schema is current).

    Several processes or threads may open a fresh file at once. `BEGIN IMMEDIATE` takes the
    write lock before anything is read, so one opener migrates while the others wait for it
    (SQLite's busy timeout, set on every connection), then find nothing pending. Each step runs
    in a savepoint inside that one transaction, with its record in `_sqlite_migrations`.
    """
    if not migrations.pending(db):  # the common case: a read, no lock
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        migrations.apply(db)  # looks again at what is pending, now under the lock
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def applied_migrations(db: sqlite_utils.Database) -> list[str]:
    """Names of the migrations recorded in the database, in the order they ran."""
    return [m.name for m in migrations.applied(db)]
