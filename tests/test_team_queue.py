"""The team's shared review queue (`storage.reviewing.leases.claim_next`): each reviewer is handed the next
item nobody has decided or holds, chosen and leased in one write, so several reviewers on one
list (threads of one server, or two servers on one file) decide each item once."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from storage.db import StorageError, open_db
from storage.reviewing.assignments import save_assignment
from storage.reviewing.leases import claim_next
from storage.reviewing.overrides import add_override
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import review_table
from tests.fixtures_storage import seed_run

ROOT = pathlib.Path(__file__).resolve().parent.parent
T0 = "2026-11-26T10:00:00.000000+00:00"
T_LATE = "2026-11-26T11:00:00.000000+00:00"  # past every lease taken at T0


def test_the_queue_passes_over_what_a_teammate_decided_or_holds(db) -> None:
    run = seed_run(db, 12)
    order = [str(i) for i in review_table(db, run.run_id, limit=None)[0]["item_id"]]

    def claim(who: str, after: str | None, **how: object) -> str | None:
        return claim_next(db, run.run_id, who, after=after, at=T0, **how)

    assert claim("ana", None) == order[0]
    assert claim("bob", None) == order[1]  # order[0] is Ana's
    # Ana runs ahead while Bob reads: she decides 0, 2 and 3 and is on 4.
    here = order[0]
    for _ in range(3):
        add_override(db, run.run_id, here, "KEEP", "", "ana")
        here = claim("ana", here)
    assert here == order[4]
    # Bob saves: not one of the items Ana decided, nor the one she holds.
    add_override(db, run.run_id, order[1], "KEEP", "", "bob")
    assert claim("bob", order[1]) == order[5]
    # Next (a walk to look) hands a decided item, never a held one, and stops at the end.
    assert claim("cy", order[1], undecided=False) == order[2]
    assert claim("cy", order[3], undecided=False) == order[6]  # 4 is Ana's, 5 Bob's
    assert claim("cy", order[-1], undecided=False) is None
    # Skip (no save): the queue goes on after the item; at the list's end it ends, and what
    # was passed over is found again from the top.
    assert claim("cy", order[5]) == order[6]
    for item in order[7:]:
        add_override(db, run.run_id, item, "REJECT", "", "cy")
    assert claim("cy", order[6]) is None
    assert claim("cy", None) == order[6]
    # A lease that expired (a closed tab) is the team's again.
    assert claim_next(db, run.run_id, "dan", at=T_LATE) == order[4]


def test_the_queue_keeps_to_the_list_and_its_meaning_of_decided(db) -> None:
    run = seed_run(db, 10)
    run_id = run.run_id
    order = [str(i) for i in review_table(db, run_id, limit=None)[0]["item_id"]]
    add_override(db, run_id, order[0], "KEEP", "", "ana")
    add_override(db, run_id, order[1], "KEEP", "", "ana", blind=True)  # a blind label decides
    assert claim_next(db, run_id, "bob", at=T0) == order[2]
    # A revision pass over the decided items asked for them: it walks them.
    revise = ReviewFilter(overridden=True)
    assert claim_next(db, run_id, "bob", revise, at=T0) == order[0]
    assert claim_next(db, run_id, "bob", revise, after=order[0], at=T0) == order[1]
    assert claim_next(db, run_id, "bob", revise, after=order[1], at=T0) is None
    # "Overridden: not yet": the item just saved has left the list; the queue goes on from
    # where it stood.
    not_yet = ReviewFilter(overridden=False)
    add_override(db, run_id, order[2], "KEEP", "", "bob")
    assert claim_next(db, run_id, "bob", not_yet, after=order[2], at=T0) == order[3]
    # An item assigned to two is labelled by both: on Bob's assignment list, decided is Bob's.
    save_assignment(db, run_id, {item: ["ana", "bob"] for item in order[:3]})
    mine = ReviewFilter(assigned_to="bob")
    assert claim_next(db, run_id, "bob", mine, at=T0) == order[0]
    with pytest.raises(StorageError, match="Name the reviewer"):
        claim_next(db, run_id, " ")


def work_the_queue(path: str, run_id: int, reviewer: str, start: threading.Barrier | None
                   ) -> int:
    """One reviewer deciding what the queue hands them until it is empty, on a connection of
    their own (what one browser session of the app does). Returns the items decided."""
    db = open_db(path, migrate=False)
    try:
        if start is not None:
            start.wait()
        decided, item = 0, claim_next(db, run_id, reviewer)
        while item is not None:
            time.sleep(0.005)  # reading the item: the database is free meanwhile
            add_override(db, run_id, item, "KEEP", "", reviewer)
            decided += 1
            item = claim_next(db, run_id, reviewer, after=item)
        return decided
    finally:
        db.close()


def _each_decided_once(path: str, run_id: int, n_items: int) -> None:
    db = open_db(path)
    counts = Counter(item for (item,) in db.execute(
        "SELECT item_id FROM overrides WHERE run_id = ?", [run_id]))
    assert len(counts) == n_items, "every item decided"
    assert set(counts.values()) == {1}, {i: n for i, n in counts.items() if n > 1}


def test_several_reviewers_on_one_file_decide_each_item_once(db, db_path) -> None:
    run = seed_run(db, 60)
    names = [f"reviewer-{n}" for n in range(6)]
    start = threading.Barrier(len(names))
    done: dict[str, int] = {}
    threads = [threading.Thread(target=lambda who=who: done.update(
        {who: work_the_queue(db_path, run.run_id, who, start)})) for who in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(done.values()) == 60 and len(done) == len(names)
    _each_decided_once(db_path, run.run_id, 60)


_SERVER = """
import pathlib, sys, threading, time
from tests.test_team_queue import work_the_queue
path, run_id, server, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = [f"{server}-reviewer-{n}" for n in range(3)]
(pathlib.Path(folder) / f"{server}.ready").touch()
while not (pathlib.Path(folder) / "go").exists():  # both servers up: start together
    time.sleep(0.01)
threads = [threading.Thread(target=work_the_queue, args=(path, run_id, who, None))
           for who in names]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""


def test_two_servers_on_one_file_decide_each_item_once(db, db_path, tmp_path) -> None:
    run = seed_run(db, 80)
    servers = [subprocess.Popen([sys.executable, "-c", _SERVER, db_path, str(run.run_id), name,
                                 str(tmp_path)], cwd=ROOT) for name in ("east", "west")]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"{name}.ready").exists() for name in ("east", "west")):
        assert time.monotonic() < deadline and all(s.poll() is None for s in servers)
        time.sleep(0.01)
    (tmp_path / "go").touch()
    for server in servers:
        assert server.wait(timeout=120) == 0
    _each_decided_once(db_path, run.run_id, 80)
    reviewers = {who for (who,) in open_db(db_path).execute("SELECT reviewer FROM overrides")}
    assert {who.split("-")[0] for who in reviewers} == {"east", "west"}
