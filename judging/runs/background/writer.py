"""The writer thread of a job: stores verdicts and decisions in short group commits (each
sealed into the run's verifiable record in the same transaction, `storage.reviewing.record_chain`), adds
the job's share to the run ledger, beats the run's heartbeat (its lease), and leaves the write
lock free now and then for the app's saves (`YIELD_S`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Container, Mapping
from typing import Any

from judging.engine.calls.template import RequestTemplate, rebuilds
from judging.engine.ledger import Ledger
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict
from storage.db import open_db
from storage.results.calls import save_request_template, write_verdicts
from storage.results.consensus import write_consensus
from storage.results.runs import add_to_ledger, heartbeat, refresh_run_totals
from storage.reviewing.record_chain import seal_decisions, sealing

# The stored totals (`refresh_run_totals`) are recounted at least this often during a run...
TOTALS_EVERY_S = 2.0
# ...and at most once per this many times the last count took: a count reads every call of the
# run (about 1 s at 3,000,000 calls), so at a fixed interval a large run's writer would spend
# most of its time counting, more with every item, instead of writing.
TOTALS_COST_RATIO = 10

# The app's saves share the write lock with the writer, and a save waiting for it looks again
# only every 100 ms (SQLite's busy handler, once it has waited a third of a second). A writer
# that always has work commits and begins again within microseconds, so the save missed every
# gap; and on a loaded machine a transaction of 200 verdicts held the lock for seconds (its
# thread waits for the GIL, shared with the call threads, between rows). Saves on Review took
# 5-10 s while a run wrote 560 calls/s. So the writer commits at most WRITE_ROWS verdicts or
# decisions per transaction, and leaves the lock free for YIELD_S (SQLite's longest sleep
# between looks) whenever it has written for YIELD_EVERY_S without such a pause: a waiting save
# gets in within about half a second, for at most a fifth of the writer's time, and none while
# the calls arrive slower than it writes.
WRITE_ROWS = 50
YIELD_S = 0.1
YIELD_EVERY_S = 0.4

# Verdicts queued for the writer thread at most (about 1-2 KB each): past this, a call thread
# handing one over waits for the writer to take a batch.
MAX_QUEUED = 10_000


class Writer:
    """Collects verdicts from the call threads; a dedicated thread writes them in batches."""

    def __init__(
        self,
        db_path: Any,
        run_id: int,
        *,
        already_ok: Container[tuple[str, str]],
        replace_success: bool,
        batch_size: int,
        flush_interval_s: float,
        owner: str | None = None,
        on_lost: Callable[[], None] | None = None,
        templates: Mapping[str, RequestTemplate | None] | None = None,
    ) -> None:
        self.db_path = db_path
        # Critic -> its request template: a request the template rebuilds exactly is not
        # stored whole (`judging.engine.calls.template`).
        self.templates = dict(templates or {})
        self._templates_saved: set[str] = set()
        self.run_id = run_id
        self.owner = owner
        self.on_lost = on_lost
        self.already_ok = already_ok
        self.replace_success = replace_success
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self._pending: list[Verdict] = []
        self._rebuilt: list[bool] = []  # per pending verdict: its request is the template's
        self._new_templates: list[tuple[str, str, RequestTemplate]] = []  # (critic, url, ...)
        self._decided: list[PanelVerdict] = []
        # This job's share of the run ledger not yet stored (taken with each batch).
        self._ledger = Ledger()
        self._first_at: float | None = None
        self._busy_since = time.monotonic()  # the writer's last pause (`_let_others_write`)
        lock = threading.RLock()
        self._cond = threading.Condition(lock)  # the writer thread waits here for work
        self._room = threading.Condition(lock)  # call threads wait here when it falls behind
        self.max_queued = max(MAX_QUEUED, 2 * batch_size)
        self._closing = False
        self._ledger_taken: Ledger | None = None
        self._rebuilt_taken: list[bool] = []
        self._templates_taken: list[tuple[str, str, RequestTemplate]] = []
        self.written = 0
        # Set once another job has taken the run over (a failed heartbeat): from then on this
        # job's share of the ledger is only what it paid, its outcomes are not the run's.
        self.lost = False
        self.error: BaseException | None = None
        self.decisions_error: Exception | None = None
        self._thread = threading.Thread(target=self._loop, name=f"jurybox-writer-{run_id}", daemon=True)
        self._thread.start()

    def add(self, verdict: Verdict, item: Item) -> None:
        """`on_verdict` callback: called from call threads, so it only queues."""
        if self.error is not None:
            raise RuntimeError(f"storing verdicts failed: {self.error}")
        if verdict.cached and (str(item.id), verdict.critic) in self.already_ok:
            return  # this run already holds that success: nothing new, nothing paid
        template = self.templates.get(verdict.critic)
        # Checked here, on the call thread: a hash of the rebuilt bytes (a few microseconds).
        rebuilt = template is not None and rebuilds(template, verdict, item)
        with self._cond:
            # Counted even when not stored: a call cancelled between retries was paid for.
            self._ledger.add(verdict)
            if verdict.failure == FailureKind.CANCELLED and not verdict.steps:
                return  # not stored: the pair stays open for a resume
            # (A cancelled chain is queued for its finished steps: paid, and cached for the
            # resume. Its own row is not stored, so the pair stays open.)
            if not self._pending and not self._decided:
                self._first_at = time.monotonic()
            if rebuilt and template is not None and verdict.critic not in self._templates_saved:
                # Stored before (in the same batch as) the first row that relies on it.
                self._templates_saved.add(verdict.critic)
                url = str((verdict.raw_request or {}).get("url") or template.url)
                self._new_templates.append((verdict.critic, url, template))
            # Backpressure: while the database is slower than the calls (a checkpoint, an index
            # merge), the calls wait instead of the queue holding a run's worth of replies.
            while (len(self._pending) >= self.max_queued and self.error is None
                   and not self._closing):
                self._cond.notify()
                self._room.wait(0.5)
            if self.error is not None:
                raise RuntimeError(f"storing verdicts failed: {self.error}")
            self._pending.append(verdict)
            self._rebuilt.append(rebuilt)
            if len(self._pending) >= self.batch_size:
                self._cond.notify()

    def saved_by_cascade(self, saved: Ledger) -> None:
        """Record the calls a cascade did not need and what they would have cost (the run's
        `calls_saved`, `saved_usd`, `saved_unpriced`; learnt at the end of the job)."""
        with self._cond:
            self._ledger.calls_saved += saved.calls_saved
            self._ledger.saved_usd += saved.saved_usd
            self._ledger.saved_unpriced += saved.saved_unpriced

    def decided(self, panel_verdict: PanelVerdict) -> None:
        """Queue an item's decision (the runner's `on_item`, called after its verdicts were
        queued by `add`): the one place a job's decisions are stored from."""
        with self._cond:
            if not self._pending and not self._decided:
                self._first_at = time.monotonic()
            self._decided.append(panel_verdict)

    def _take(self) -> tuple[list[Verdict], list[PanelVerdict], bool]:
        """The next batch: verdicts and decisions swapped out together, so a decision is never
        written before the verdicts it was made from. Empty on an idle tick. The flag says the
        writer is closing and nothing is left: decided here, under the lock, because a verdict
        queued between an idle tick and a look at `_closing` outside it would be lost (seen:
        a run's every verdict dropped while its last ones arrived just before close)."""
        waited = False
        with self._cond:
            while True:
                queued = len(self._pending) + len(self._decided)
                if queued and (
                    len(self._pending) >= self.batch_size
                    or self._closing
                    or time.monotonic() - (self._first_at or 0) >= self.flush_interval_s
                ):
                    batch, self._pending = self._pending, []
                    self._rebuilt_taken, self._rebuilt = self._rebuilt, []
                    self._templates_taken, self._new_templates = self._new_templates, []
                    decided, self._decided = self._decided, []
                    self._ledger_taken, self._ledger = self._ledger, Ledger()
                    self._room.notify_all()
                    return batch, decided, False
                if self._closing or waited:
                    # The end, or an idle tick that lets the loop send a heartbeat; a ledger
                    # share without verdicts to store (cancelled calls) is written then.
                    self._ledger_taken, self._ledger = self._ledger, Ledger()
                    return [], [], self._closing and not queued
                waited = True
                timeout = (
                    self.flush_interval_s
                    if not queued
                    else max(0.0, self.flush_interval_s - (time.monotonic() - (self._first_at or 0)))
                )
                self._cond.wait(timeout)

    def _loop(self) -> None:
        db = open_db(self.db_path, migrate=False)
        last_totals = last_beat = self._busy_since = time.monotonic()
        totals_every = TOTALS_EVERY_S
        try:
            while True:
                waiting = time.monotonic()
                batch, decided, finished = self._take()
                if time.monotonic() - waiting >= YIELD_S:  # the lock was free meanwhile
                    self._busy_since = time.monotonic()
                if time.monotonic() - last_beat >= 1.0:
                    if not self.lost and not heartbeat(db, self.run_id, self.owner):
                        # Another job took the run over (this one was silent past its lease):
                        # stop sending, so no call is paid twice.
                        self.lost = True
                        if self.on_lost is not None:
                            self.on_lost()
                    last_beat = time.monotonic()
                ledger, self._ledger_taken = self._ledger_taken, None
                if ledger is not None and self.lost:
                    ledger = ledger.paid_only()  # the calls it cancelled are not the run's
                if ledger is not None and not ledger.empty:
                    add_to_ledger(db, self.run_id, ledger.as_dict())
                if finished:
                    break
                if not batch and not decided:
                    continue
                if batch:
                    for critic, url, template in self._templates_taken:
                        save_request_template(db, self.run_id, critic, url, template.prefix,
                                              template.content)
                    # Each part and its place in the run's record (`storage.reviewing.record_chain`)
                    # commit together.
                    for start in range(0, len(batch), WRITE_ROWS):
                        self._let_others_write()
                        part = slice(start, start + WRITE_ROWS)
                        write_verdicts(
                            db, self.run_id, batch[part], replace_success=self.replace_success,
                            refresh_totals=False, rebuilt=self._rebuilt_taken[part],
                            record=True,
                        )
                        self.written += len(batch[part])
                if decided and self.decisions_error is None:
                    try:
                        # After all of the batch's verdicts: each decision after its own.
                        for start in range(0, len(decided), WRITE_ROWS):
                            self._let_others_write()
                            some = decided[start : start + WRITE_ROWS]
                            with sealing(db):
                                write_consensus(db, self.run_id, some)
                                seal_decisions(db, self.run_id, (str(pv.item_id) for pv in some))
                    except Exception as error:  # noqa: BLE001 - reported by close()
                        # Decisions can be recomputed from verdicts; verdicts are paid for.
                        # So the verdicts still arriving keep being stored; the job fails at
                        # the end with this error, and a resume decides again.
                        self.decisions_error = error
                if time.monotonic() - last_totals > totals_every:
                    started = time.monotonic()
                    refresh_run_totals(db, self.run_id)
                    last_totals = time.monotonic()
                    totals_every = max(TOTALS_EVERY_S,
                                       TOTALS_COST_RATIO * (last_totals - started))
            refresh_run_totals(db, self.run_id)
        except BaseException as error:  # noqa: BLE001 - reported through add() and close()
            with self._cond:
                self.error = error
                self._room.notify_all()  # a call thread waiting for room raises instead
        finally:
            db.close()

    def _let_others_write(self) -> None:
        """Before a write transaction: leave the write lock free for `YIELD_S` when the
        writer has written for `YIELD_EVERY_S` without a pause (see `YIELD_S`)."""
        if time.monotonic() - self._busy_since >= YIELD_EVERY_S:
            time.sleep(YIELD_S)
            self._busy_since = time.monotonic()

    def close(self) -> None:
        """Write what is left and stop; re-raises a write error."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        if self.error is not None:
            raise self.error
        if self.decisions_error is not None:
            raise self.decisions_error

