"""Fixtures for storage and job tests.

- `db_path`: a fresh database file path (migrated) in the test's tmp dir.
- `db`: an open connection to it (closed after the test).
- `make_parsed(n, ...)`: a `ParsedDataset`-shaped object of n items (no file parsing).
- `seed_run(db, ...)`: a dataset + panel + run with verdicts and consensus written straight to
  the database (no HTTP), for review / override / export tests. Returns a `SeededRun`.
- `tiny_panel(base_url, models=...)`: a nominal panel whose critics call a simulator.
- autouse: `JURYBOX_DB` points at a fresh tmp file in every test, so nothing (CLI, app, jobs)
  writes ./jurybox.db in the working tree or reuses another test's cached calls.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import sqlite_utils

from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, PanelVerdict, Verdict, VoteOutcome
from storage.datasets.dataset_store import save_dataset
from storage.db import open_db
from storage.panels import save_panel
from storage.results.calls import write_verdicts
from storage.results.consensus import write_consensus
from storage.results.runs import create_run

LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]


@dataclass
class FakeParsed:
    items: list[Item]
    columns: list[str]
    fields: list[str]
    content_hash: str
    format: str = "csv"
    filename: str = "data.csv"
    id_column: str | None = "id"
    gold_column: str | None = "gold"


def make_parsed(n: int, *, salt: str = "", text: Callable[[int], str] | None = None) -> FakeParsed:
    items = [
        Item(
            id=f"item-{i:06d}",
            fields={"text": text(i) if text else f"candidate class number {i}{salt}", "n": i},
            gold=LABELS[i % 4],
        )
        for i in range(n)
    ]
    digest = hashlib.sha256(f"{n}:{salt}".encode()).hexdigest()
    return FakeParsed(items=items, columns=["id", "text", "n", "gold"], fields=["text", "n"],
                      content_hash=digest)


@pytest.fixture(name="make_parsed")
def make_parsed_fixture() -> Callable[..., FakeParsed]:
    return make_parsed


@pytest.fixture(autouse=True)
def _default_db_in_tmp(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test writes ./jurybox.db in the working tree (the CLI and app default to it), and no
    test sees another test's runs or cached calls through it."""
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path_factory.mktemp("db") / "jurybox.db"))


@pytest.fixture
def db_path(tmp_path: Any) -> str:
    path = str(tmp_path / "jurybox.db")
    open_db(path).close()
    return path


@pytest.fixture
def db(db_path: str) -> Iterator[sqlite_utils.Database]:
    database = open_db(db_path)
    yield database
    database.close()


def tiny_panel(base_url: str | None = None, models: tuple[str, ...] = ("m-a", "m-b", "m-c"),
               names: tuple[str, ...] | None = None) -> Panel:
    critics = [
        Critic(
            name=(names[i] if names else f"critic_{i}"),
            vendor="simulated",
            model=model,
            base_url=base_url,
            prompt_template="Judge this candidate class: {text}",
            max_tokens=100,
            timeout_s=10,
        )
        for i, model in enumerate(models)
    ]
    return Panel(name="tiny", scale=Scale(kind="nominal", labels=LABELS), critics=critics)


@dataclass
class SeededRun:
    run_id: int
    dataset_id: int
    critics: list[str]
    items: list[Item]
    verdicts: dict[tuple[str, str], Verdict] = field(default_factory=dict)
    outcomes: dict[str, VoteOutcome] = field(default_factory=dict)


def seed_run(
    db: sqlite_utils.Database,
    n_items: int = 40,
    *,
    critics: tuple[str, ...] = ("alpha", "beta", "gamma"),
    seed: int = 7,
    fail_rate: float = 0.1,
    reasoning: Callable[[int, str], str] | None = None,
    text: Callable[[int], str] | None = None,
) -> SeededRun:
    """A run with deterministic random verdicts, consensus (plurality) and item alphas."""
    rng = random.Random(seed)
    parsed = make_parsed(n_items, salt=f"seed{seed}", text=text)
    dataset_id = save_dataset(db, parsed, name="seeded").id
    panel_hash = hashlib.sha256(f"panel{seed}{critics}".encode()).hexdigest()[:16]
    save_panel(db, panel_hash=panel_hash, name="seeded panel", yaml_text="name: seeded\n")
    run_id = create_run(db, dataset_id=dataset_id, panel_hash=panel_hash, critics=list(critics))
    seeded = SeededRun(run_id, dataset_id, list(critics), parsed.items)
    panel_verdicts = []
    for index, item in enumerate(parsed.items):
        vs = []
        for critic in critics:
            if rng.random() < fail_rate:
                v = Verdict(critic=critic, item_id=item.id, failure=FailureKind.PARSE_FAIL,
                            message="no verdict in the reply", raw_response="garbage",
                            attempts=1)
            else:
                label = item.gold if rng.random() < 0.7 else rng.choice(LABELS)
                why = reasoning(index, critic) if reasoning else f"{critic} thinks {label}"
                v = Verdict(critic=critic, item_id=item.id, label=label,
                            confidence=round(rng.uniform(0.5, 1.0), 3), reasoning=why,
                            raw_request={"url": "http://x/v1/chat/completions", "body": {}},
                            raw_response=f'{{"label": "{label}"}}', attempts=1, tokens_in=10,
                            tokens_out=5, cost_usd=0.0001, cache_key=f"k-{seed}-{item.id}-{critic}",
                            vendor="simulated", model="m", simulated=True)
            vs.append(v)
            seeded.verdicts[(item.id, critic)] = v
        ok = [v.label for v in vs if v.ok]
        counts = {label: ok.count(label) for label in sorted(set(ok))}
        top = max(counts, key=lambda k: counts[k]) if counts else None
        agreement = counts[top] / len(vs) if top else None
        failed = len(vs) - len(ok)
        outcome = VoteOutcome(consensus=top, agreement=agreement,
                              disagreement=failed > 0 or len(counts) > 1, counts=counts,
                              failed=failed)
        seeded.outcomes[item.id] = outcome
        panel_verdicts.append(PanelVerdict(item_id=item.id, outcome=outcome, verdicts=vs,
                                           strategy="plurality"))
    write_verdicts(db, run_id, [v for pv in panel_verdicts for v in pv.verdicts])
    write_consensus(db, run_id, panel_verdicts)
    from storage.results.consensus import set_item_alpha

    set_item_alpha(db, run_id, {
        item.id: (None if i % 10 == 0 else round(-0.5 + (i % 7) / 4, 3))
        for i, item in enumerate(parsed.items)
    })
    db.execute("UPDATE runs SET status = 'done' WHERE id = ?", [run_id])
    return seeded


@pytest.fixture(name="seed_run")
def seed_run_fixture() -> Callable[..., SeededRun]:
    return seed_run


def assert_secret_stored_nowhere(db_path: str | pathlib.Path, secret: str) -> None:
    """Neither the database file (and its WAL) nor any stored reply, decompressed, holds
    `secret`. Replies are stored compressed (`storage.results.replies`): scanning the file's bytes
    alone could not see a key inside one."""
    from storage.results.calls import load_verdicts

    db = open_db(db_path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for (run_id,) in db.execute("SELECT id FROM runs").fetchall():
            for verdict in load_verdicts(db, run_id):
                assert secret not in (verdict.raw_response or ""), verdict.critic
                assert secret not in json.dumps(verdict.raw_request or {})
    finally:
        db.close()
    for suffix in ("", "-wal"):
        path = pathlib.Path(str(db_path) + suffix)
        if path.exists():
            assert secret.encode() not in path.read_bytes()
