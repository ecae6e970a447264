"""Stored replies are compressed against each critic's first reply (issue 13 part 1) and come
back byte for byte through every reader."""

from __future__ import annotations

import json

from storage.db import open_db
from storage.panels import save_panel
from storage.results.calls import CallCacheStore, load_verdicts, write_verdicts
from storage.results.runs import create_run
from storage.reviewing.review_queue import item_detail


def _reply(label: str, n: int) -> str:
    content = json.dumps({"label": label, "confidence": 0.8,
                          "reasoning": f"Élan vital № {n}: the class fits — “quoted” \\ ok"})
    return json.dumps({"id": f"chatcmpl-{n:08d}", "object": "chat.completion",
                       "created": 1_795_563_857 + n, "model": "sim-careful",
                       "choices": [{"index": 0, "message": {"role": "assistant",
                                                            "content": content},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 300 + n, "completion_tokens": 30}})


def _fresh_run(db, seeded) -> int:
    """A run on the seeded dataset with nothing stored yet (the seed's own run already holds
    replies, so its dictionaries are taken)."""
    save_panel(db, panel_hash="replies-test", name="replies", yaml_text="name: replies\n")
    return create_run(db, dataset_id=seeded.dataset_id, panel_hash="replies-test",
                      critics=seeded.critics)


def _stored(db, run_id):
    return {(row["item_id"], row["critic"]): row for row in db.query(
        "SELECT item_id, critic, raw_response, reply_dict FROM calls WHERE run_id = ?", [run_id])}


def test_replies_come_back_byte_for_byte_through_every_reader(db, db_path, seed_run) -> None:
    run = seed_run(db, n_items=6, critics=("alpha", "beta"))
    run_id = _fresh_run(db, run)
    verdicts = list(run.verdicts.values())
    for n, verdict in enumerate(verdicts):
        verdict.raw_response = _reply(verdict.label or "KEEP", n)
    write_verdicts(db, run_id, verdicts, replace_success=True)
    sent = {(v.item_id, v.critic): v.raw_response for v in verdicts}

    rows = _stored(db, run_id)
    packed = [row for row in rows.values() if row["reply_dict"] is not None]
    # Each critic's first reply is its dictionary; every reply is stored compressed against it.
    assert len(packed) == len(rows) == 12
    assert all(isinstance(row["raw_response"], bytes) for row in packed)
    assert sum(len(row["raw_response"]) for row in packed) * 3 < sum(map(len, sent.values()))
    assert db.execute("SELECT count(*) FROM reply_dictionaries WHERE run_id = ?",
                      [run_id]).fetchone()[0] == 2

    assert {(v.item_id, v.critic): v.raw_response for v in load_verdicts(db, run_id)} == sent
    detail = item_detail(db, run_id, run.items[2].id)
    assert {v["critic"]: v["raw_response"] for v in detail["verdicts"]} == {
        critic: text for (item, critic), text in sent.items() if item == run.items[2].id}
    cache = CallCacheStore(db_path)
    try:
        for verdict in verdicts:
            if verdict.ok:
                assert cache.get(verdict.cache_key).raw_response == verdict.raw_response
    finally:
        cache.close()


def test_a_reply_that_would_not_shrink_and_older_rows_stay_text(db, seed_run) -> None:
    run = seed_run(db, n_items=3, critics=("alpha",))
    run_id = _fresh_run(db, run)
    verdicts = list(run.verdicts.values())
    verdicts[0].raw_response = _reply("KEEP", 0)
    verdicts[1].raw_response = "ok"
    verdicts[2].raw_response = None
    write_verdicts(db, run_id, verdicts, replace_success=True)
    rows = _stored(db, run_id)
    assert rows[(verdicts[1].item_id, "alpha")]["raw_response"] == "ok"
    assert rows[(verdicts[1].item_id, "alpha")]["reply_dict"] is None
    assert rows[(verdicts[2].item_id, "alpha")]["raw_response"] is None
    # A row written before compression existed: text, no dictionary.
    db.execute("UPDATE calls SET raw_response = 'plain old text', reply_dict = NULL"
               " WHERE run_id = ? AND item_id = ?", [run_id, verdicts[0].item_id])
    got = {v.item_id: v.raw_response for v in load_verdicts(db, run_id)}
    assert got == {verdicts[0].item_id: "plain old text", verdicts[1].item_id: "ok",
                   verdicts[2].item_id: None}


def test_inside_a_callers_transaction_replies_are_stored_as_text(db, seed_run) -> None:
    run = seed_run(db, n_items=2, critics=("alpha",))
    run_id = _fresh_run(db, run)
    verdicts = list(run.verdicts.values())
    for n, verdict in enumerate(verdicts):
        verdict.raw_response = _reply("KEEP", n)
    with db.atomic():  # a dictionary must be committed before rows use it: none is made here
        write_verdicts(db, run_id, verdicts, replace_success=True)
    assert all(isinstance(row["raw_response"], str)
               for row in _stored(db, run_id).values())
    assert [v.raw_response for v in load_verdicts(db, run_id)] == [
        v.raw_response for v in verdicts]


def test_two_writers_on_one_run_share_the_dictionary_stored_first(db, db_path, seed_run) -> None:
    run = seed_run(db, n_items=4, critics=("alpha",))
    run_id = _fresh_run(db, run)
    verdicts = list(run.verdicts.values())
    for n, verdict in enumerate(verdicts):
        verdict.raw_response = _reply("KEEP", n)
    other = open_db(db_path)  # another process's connection, with its own packer
    try:
        write_verdicts(other, run_id, verdicts[:1], replace_success=True)  # learns first
        # This connection never saw that dictionary: it offers its own first reply, and
        # takes the one stored before it.
        write_verdicts(db, run_id, verdicts[1:], replace_success=True)
        write_verdicts(other, run_id, verdicts[2:], replace_success=True)
    finally:
        other.close()
    (content,) = db.execute("SELECT content FROM reply_dictionaries WHERE run_id = ?",
                            [run_id]).fetchone()
    assert content == verdicts[0].raw_response.encode()
    assert [v.raw_response for v in load_verdicts(db, run_id)] == [
        v.raw_response for v in verdicts]
