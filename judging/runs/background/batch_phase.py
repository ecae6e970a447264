"""A run's batch critics (`mode: batch`): hand the vendor what the run still lacks, then poll
until every batch has ended, keeping each result line for the run's calls to read.

The order of a job on a run with batch critics (`judging.runs.background.worker`):
1. `submit_missing`: for each batch critic, the requests of items without a stored success,
   minus cache hits and results already waiting, go to the vendor in batches (nothing new is
   submitted while an earlier batch of the run is still open: its results come first). Each
   batch is recorded the moment the vendor accepts it.
2. `poll_open` every `poll_interval_s` until no batch is open; an ended batch's result file is
   streamed into `batch_results`. The job keeps its lease meanwhile; a cancel cancels the
   vendor's batches too (their finished requests are still collected by the next resume).
3. The live phase: `run_panel` over the items, batch critics answered from their result lines
   (`CallRunner.batch_answers`), live critics called as usual; then the lines are deleted.
Polling survives restarts because everything it needs is in the database: a resumed run (the
CLI's `resume`, the app's Resume) starts again at step 1, which finds the open batches.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from judging.engine.batches.batch_results import BatchResult, parse_results
from judging.engine.batches.clients import BatchApiError, BatchClient, client_for, describe
from judging.engine.batches.lines import BatchApi, batch_api_of, chunked
from judging.engine.calls.cache import CallCache
from judging.engine.calls.prepare import PreparedCall, prepare_call
from judging.engine.calls.transports import is_loopback
from judging.engine.context_guard import guard
from judging.engine.endpoints import resolve_base_url
from judging.errors import CallFailure, ConfigError
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.panel.vendors import KeyLookup, get_preset, resolve_key
from judging.verdicts import Item, Verdict
from storage.results.calls import successful_pairs_of
from storage.results.vendor_batches import (
    BatchResultStore,
    record_batch,
    record_refusal,
    refusals,
    result_keys,
    run_batches,
    store_results,
    update_batch,
)

log = logging.getLogger(__name__)

# How often a batch is polled: vendors take minutes to hours, and count polls against the
# rate limit; a server on this machine (the simulator's fast clock) is asked far more often.
POLL_INTERVAL_S = 30.0
LOCAL_POLL_INTERVAL_S = 0.25
BEAT_EVERY_S = 5.0  # the run's heartbeat while it waits (its lease lapses after 30 s)


def batch_critics(panel: Panel) -> list[Critic]:
    return [critic for critic in panel.critics if critic.mode == "batch"]


def poll_interval_s(panel: Panel) -> float:
    """The pause between polls: short only when every batch critic's server is on loopback."""
    urls = [resolve_base_url(critic) for critic in batch_critics(panel)]
    local = all(is_loopback(httpx.URL(url).host) for url in urls)
    return LOCAL_POLL_INTERVAL_S if urls and local else POLL_INTERVAL_S


@dataclass(slots=True)
class Clients:
    """One API client per critic endpoint, closed together."""

    key_lookup: KeyLookup | None
    _open: dict[tuple[str, str], BatchClient] | None = None

    def for_critic(self, critic: Critic) -> tuple[BatchApi, BatchClient]:
        api = batch_api_of(critic)
        base_url = resolve_base_url(critic)
        self._open = self._open if self._open is not None else {}
        client = self._open.get((api, base_url))
        if client is None:
            try:
                key = resolve_key(critic, self.key_lookup)
            except CallFailure as failure:
                raise ConfigError(f"critic {critic.name!r}: {failure}") from None
            client = client_for(api, base_url, key, get_preset(critic.vendor).extra_headers)
            self._open[(api, base_url)] = client
        return api, client

    def close(self) -> None:
        for client in (self._open or {}).values():
            client.close()
        self._open = None


# Items read, and their stored successes and waiting results looked up, this many at a time:
# a resumed million-item run is never held as a set of every pair it has answered.
PAGE_ITEMS = 2000


def submit_missing(db: Any, run_id: int, panel: Panel, items: Sequence[Item],
                   clients: Clients, cache: CallCache | None) -> list[str]:
    """Submit what the run's batch critics still lack; returns the new batches' ids.

    `items` is read once per batch critic, a page at a time (`DatasetItems` for a run).

    A submission the vendor refuses (HTTP 400 for a line it will not take, an account
    without batch access) is recorded with the vendor's reason (`record_refusal`) and the
    next critic's batches are still submitted: the refused critic's calls of this run then
    fail with that reason, and a resume tries again.

    Raises:
        ConfigError: a critic's key is missing.
    """
    if run_batches(db, run_id, open_only=True):
        return []
    submitted: list[str] = []
    for critic in batch_critics(panel):
        api, client = clients.for_critic(critic)
        requests = _missing(db, run_id, critic, panel, items, cache)
        for chunk in chunked(api, requests):
            try:
                batch_id = client.submit(chunk, run_label=str(run_id))
            except BatchApiError as error:
                log.warning("run %s: the vendor refused the batch of %s: %s", run_id,
                            critic.name, error)
                record_refusal(db, run_id, critic=critic.name, api=api,
                               base_url=resolve_base_url(critic), requests=len(chunk.lines),
                               reason=f"the vendor refused the batch submission: {error}")
                break  # the critic's other chunks would be refused alike
            record_batch(db, run_id, critic=critic.name, api=api,
                         base_url=resolve_base_url(critic), batch_id=batch_id,
                         requests=len(chunk.lines))
            submitted.append(batch_id)
    return submitted


def _missing(db: Any, run_id: int, critic: Critic, panel: Panel, items: Iterable[Item],
             cache: CallCache | None) -> Iterator[PreparedCall]:
    """The calls of `critic` the vendor must answer, one at a time (a million items are never
    all prepared at once): not those with a stored success or a result waiting to be read, nor
    those the cache answers."""
    pages = iter(items)
    while page := list(itertools.islice(pages, PAGE_ITEMS)):
        done = successful_pairs_of(db, run_id, [str(item.id) for item in page])
        prepared_page = []
        for item in page:
            if (str(item.id), critic.name) in done:
                continue
            # As the live phase will ask it: an over-long item windowed, or not sent at all
            # (its failure is stored then), so the batch answers the very request it makes.
            guarded = guard(critic, item, panel.scale, panel.context_guard)
            if isinstance(guarded, Verdict):
                continue
            try:
                prepared_page.append(prepare_call(critic, guarded.item, panel.scale))
            except Exception:  # noqa: BLE001 - the live phase stores the reason as its failure
                continue
        waiting = result_keys(db, run_id, among=[p.cache_key for p in prepared_page])
        for prepared in prepared_page:
            if prepared.cache_key in waiting:
                continue
            if cache is not None and cache.get(prepared.cache_key) is not None:
                continue  # answered before, by any run: free
            yield prepared


def poll_open(db: Any, run_id: int, panel: Panel, clients: Clients) -> list[str]:
    """Ask the vendor about each open batch of the run; an ended one's results are stored.
    Returns a line per batch still open (for progress displays); empty once all have ended.

    A batch the vendor no longer knows (HTTP 404) or refused is marked failed with the reason;
    its requests are submitted again by the next resume. Any other error (the network, a 5xx)
    is logged and the batch polled again next time.
    """
    critics = {critic.name: critic for critic in panel.critics}
    still_open: list[str] = []
    for row in run_batches(db, run_id, open_only=True):
        critic = critics.get(row["critic"])
        if critic is None:  # the panel of a run never changes; a hand-edited database might
            update_batch(db, row["id"], vendor_status="unknown", state="failed",
                         error=f"the run's panel has no critic {row['critic']!r}")
            continue
        api, client = clients.for_critic(critic)
        try:
            state = client.state(row["batch_id"])
        except BatchApiError as error:
            if "HTTP 404" in str(error) or "HTTP 400" in str(error):
                update_batch(db, row["id"], vendor_status="unknown", state="failed",
                             error=f"the vendor no longer knows this batch ({error}); resume "
                                   "the run to submit its requests again")
            else:
                log.warning("polling batch %s of run %s: %s", row["batch_id"], run_id, error)
                still_open.append(f"{row['batch_id']} ({critic.name}): could not ask: {error}")
            continue
        if state.failed:
            update_batch(db, row["id"], vendor_status=state.vendor_status, state="failed",
                         error=state.error)
        elif state.ended:
            store_results(db, run_id, api, ((result.custom_id, result.raw) for result in
                                            parse_results(api, client.result_lines(state))))
            update_batch(db, row["id"], vendor_status=state.vendor_status,
                         succeeded=state.succeeded, errored=state.errored, state="collected")
        else:
            update_batch(db, row["id"], vendor_status=state.vendor_status,
                         succeeded=state.succeeded, errored=state.errored)
            still_open.append(f"{row['batch_id']} ({critic.name}) {describe(state)}")
    return still_open


class StoredAnswers:
    """The run's stored result lines as `CallRunner.batch_answers`: read back through the
    same `parse_results` that checked them when they arrived."""

    def __init__(self, store: BatchResultStore) -> None:
        self.store = store
        # Critics whose latest submission the vendor refused: their calls say why.
        self.refused = refusals(store.db_path, store.run_id)

    def why_missing(self, critic: str) -> str | None:
        """Why a critic's calls have no result line, when the vendor refused its batch."""
        return self.refused.get(critic)

    def result(self, custom_id: str) -> BatchResult | None:
        found = self.store.line(custom_id)
        if found is None:
            return None
        api, line = found
        return next(parse_results(api, [line]), None)  # type: ignore[arg-type]

    def close(self) -> None:
        self.store.close()


def cancel_open(db: Any, run_id: int, panel: Panel, clients: Clients) -> None:
    """Ask the vendor to cancel the run's open batches (what they finished stays collectable:
    they stay open here until a poll finds them ended)."""
    critics = {critic.name: critic for critic in panel.critics}
    for row in run_batches(db, run_id, open_only=True):
        critic = critics.get(row["critic"])
        if critic is None:
            continue
        try:
            clients.for_critic(critic)[1].cancel(row["batch_id"])
        except (BatchApiError, ConfigError) as error:
            log.warning("cancelling batch %s of run %s: %s", row["batch_id"], run_id, error)


def wait_for_batches(db: Any, run_id: int, panel: Panel, clients: Clients, *,
                     cancel: threading.Event, interval_s: float,
                     on_wait: Callable[[list[str]], None], beat: Callable[[], bool]) -> bool:
    """Poll until no batch of the run is open. Returns False when cancelled (the vendor is
    asked to cancel them) or when the run's lease was lost (`beat` returned False)."""
    while True:
        still_open = poll_open(db, run_id, panel, clients)
        if not still_open:
            return True
        on_wait(still_open)
        waited = 0.0
        while waited < interval_s:
            # The lease lapses after 30 s without a heartbeat: beat well within it.
            if not beat():
                return False
            step = min(BEAT_EVERY_S, interval_s - waited)
            if cancel.wait(step):
                cancel_open(db, run_id, panel, clients)
                return False
            waited += step

