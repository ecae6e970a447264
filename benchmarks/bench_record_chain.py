"""Sealing figures: what the writer's part of the verifiable review record costs
(`storage.reviewing.record_chain`), apart from writing the rows it seals.

Figures:
    record_chain_seal_60k_calls_cpu_s      CPU seconds to seal 60,000 stored verdicts (every one
                                           with label probabilities and an expected score), in
                                           batches of 200 as the writer seals them, each batch in
                                           its own write transaction (median of 3)
    record_chain_seal_20k_decisions_cpu_s  the same for 20,000 stored decisions (each with a
                                           cascade's two sub-verdicts and pooled probabilities)
    record_chain_seal_calls_over_v1        the calls' figure over the same rows sealed with the
                                           chain version 1 field lists, side by side in this
                                           process (the cost of sealing the version 2 fields;
                                           printed only where a version 2 exists)
    record_chain_seal_decisions_over_v1    the same for decisions

CPU time rather than wall time: the machine is shared, and sealing is all CPU. The rows are
written beforehand without sealing, so the figures hold the seal alone: reading the batch back,
hashing it, appending the chain entries.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_storage import CRITICS, _seed_run, _verdict
from benchmarks.figures import bench_line
from judging.verdicts import PanelVerdict, TierVerdict, Verdict, VoteOutcome

N_ITEMS = 20_000
BATCH = 200
REPEATS = 3


def _with_probabilities(v: Verdict, rng: random.Random) -> Verdict:
    if v.ok:
        p = round(rng.random(), 4)
        v.label_probs = {"KEEP": p, "REJECT": round(1 - p, 4)}
        v.expected_score = round(rng.random() * 4, 4)
        v.expected_spread = round(rng.random(), 4)
    return v


def _decision(item_id: str, verdicts: list[Verdict]) -> PanelVerdict:
    ok = [v.label for v in verdicts if v.ok]
    counts = {str(label): ok.count(label) for label in set(ok)}
    top = max(counts, key=lambda k: counts[k]) if counts else None
    outcome = VoteOutcome(consensus=top, agreement=counts[top] / 3 if top else None,
                          disagreement=len(counts) > 1, counts=counts, failed=3 - len(ok),
                          label_probs={"KEEP": 0.61, "REJECT": 0.39}, expected_score=1.8,
                          expected_spread=0.4)
    tiers = [TierVerdict(1, "guard", "reject_on_any_fail", "next", "KEEP", 1.0, ["careful"],
                         "passed the guard"),
             TierVerdict(2, "panel", "final", "decided", top, outcome.agreement,
                         ["lenient", "strict"], "the panel decided")]
    return PanelVerdict(item_id, outcome, verdicts, "plurality", tier=2,
                        settled_by="tier 2: plurality", tiers=tiers)


def _fill(db: Any, tag: str) -> tuple[int, list[str], list[tuple[str, str]]]:
    """A run whose verdicts and decisions are stored but not sealed."""
    from storage.results.calls import write_verdicts
    from storage.results.consensus import write_consensus

    run_id, items = _seed_run(db, N_ITEMS, tag)
    rng = random.Random(3)
    decisions = []
    for item in items:
        vs = [_with_probabilities(_verdict(rng, item.id, c), rng) for c in CRITICS]
        decisions.append(_decision(item.id, vs))
    for at in range(0, len(decisions), BATCH):
        batch = decisions[at:at + BATCH]
        write_verdicts(db, run_id, [v for pv in batch for v in pv.verdicts],
                       refresh_totals=False)
        write_consensus(db, run_id, batch)
    return run_id, [item.id for item in items], [(i.id, c) for i in items for c in CRITICS]


def _seal_cpu(db: Any, run_id: int, item_ids: list[str],
              pairs: list[tuple[str, str]]) -> tuple[float, float]:
    """CPU seconds to seal the run's calls, then its decisions, batch by batch."""
    from storage.reviewing.record_chain import seal_calls, seal_decisions, sealing

    step = BATCH * len(CRITICS)
    start = time.process_time()
    for at in range(0, len(pairs), step):
        with sealing(db):
            seal_calls(db, run_id, pairs[at:at + step])
    calls = time.process_time() - start
    start = time.process_time()
    for at in range(0, len(item_ids), BATCH):
        with sealing(db):
            seal_decisions(db, run_id, item_ids[at:at + BATCH])
    return calls, time.process_time() - start


def run() -> None:
    import storage.reviewing.record_chain as record_chain
    from judging.analysis import hash_chain
    from storage.db import open_db

    current = int(hash_chain.CHAIN_VERSION)
    # Side by side with version 1 where a later version exists: a run's first record decides
    # its version, and `NEW_RUNS_VERSION` is what a run without a record starts with.
    versions = [current, 1] if current > 1 and hasattr(record_chain, "NEW_RUNS_VERSION") \
        else [current]
    cpu: dict[int, list[tuple[float, float]]] = {v: [] for v in versions}
    with tempfile.TemporaryDirectory(prefix="jurybox-bench-chain-") as tmp:
        db = open_db(Path(tmp) / "seal.db")
        for n in range(REPEATS):
            for version in versions:
                run_id, item_ids, pairs = _fill(db, f"seal-{n}-{version}")
                if len(versions) > 1:
                    record_chain.NEW_RUNS_VERSION = version
                try:
                    cpu[version].append(_seal_cpu(db, run_id, item_ids, pairs))
                finally:
                    if len(versions) > 1:
                        record_chain.NEW_RUNS_VERSION = current
        db.close()
    calls = statistics.median(c for c, _ in cpu[current])
    decisions = statistics.median(d for _, d in cpu[current])
    # Literal names (N_ITEMS = 20,000 items of 3 critics): tests/test_docs.py finds them.
    bench_line("record_chain_seal_60k_calls_cpu_s", calls, "s")
    bench_line("record_chain_seal_20k_decisions_cpu_s", decisions, "s")
    if 1 in cpu and current != 1:
        bench_line("record_chain_seal_calls_over_v1",
                   calls / statistics.median(c for c, _ in cpu[1]), "x")
        bench_line("record_chain_seal_decisions_over_v1",
                   decisions / statistics.median(d for _, d in cpu[1]), "x")


if __name__ == "__main__":
    run()
