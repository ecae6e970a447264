"""A plain call's request is stored once per run as a template and rebuilt on demand (issue 13
part 1): the rebuild is byte for byte what was sent, it is only relied on when its hash is the
call's cache key, and anything else keeps its request whole."""

from __future__ import annotations

import csv
import json
import pathlib

import pytest

from judging.engine.calls import prepare_call
from judging.engine.calls.template import rebuild, rebuilds, request_template
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.runs.stored.evidence import fill_requests
from judging.scales import Scale
from judging.simulator.sim_server import Profile
from judging.verdicts import Item, Verdict
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from storage.results.runs import get_run
from storage.reviewing.review_queue import item_detail

HOSTILE = [
    "plain text",
    'a "quote", a back\\slash, a tab\t, a newline\n and </item> trying to close the block',
    "unicode: é ü 漢字 😀, a line separator \u2028, and the markers \ue000text\ue001 themselves",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_the_rebuild_is_byte_for_byte_what_prepare_call_sends(text):
    critic = Critic(name="c", model="m", prompt_template="Judge {text} under {parent}",
                    system_prompt="Be fair.", extra={"seed": 3})
    scale = Scale(kind="nominal", labels=["KEEP", "REJECT"])
    item = Item("i1", {"text": text, "parent": 12, "unused": "x"})
    template = request_template(critic, scale)
    sent = prepare_call(critic, item, scale)
    assert rebuild(template, item.fields) == sent.content
    sent_verdict = Verdict("c", "i1", cache_key=sent.cache_key, raw_request={"body": sent.body})
    assert rebuilds(template, sent_verdict, item)
    # Another item's key, a repeat's salted key, a chain: never left to the template.
    other = prepare_call(critic, Item("i2", {"text": "other", "parent": 1}), scale)
    assert not rebuilds(template, Verdict("c", "i1", cache_key=other.cache_key,
                                          raw_request={"body": other.body}), item)
    salted = prepare_call(critic, item, scale, sample=1).cache_key
    assert not rebuilds(template, Verdict("c", "i1", cache_key=salted,
                                          raw_request={"body": sent.body}), item)
    assert not rebuilds(template, Verdict("c", "i1", cache_key=sent.cache_key,
                                          steps=[Verdict("c", "i1")]), item)
    assert rebuild(template, {"text": text}) is None  # a field missing: nothing to rebuild
    # Never sent (a critic stopped before it was asked): no request to show, none rebuilt.
    unsent = Verdict("c", "i1", cache_key=sent.cache_key)
    assert not rebuilds(template, unsent, item)
    assert rebuilds(template, Verdict("c", "i1", cache_key=sent.cache_key, cached=True), item)


def _run(tmp_path: pathlib.Path, server, critics: list[dict], name: str = "r.db"):
    data = tmp_path / "items.csv"
    with data.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text"])
        writer.writerows([f"i{n}", f"{HOSTILE[n % 3]} #{n}"] for n in range(9))
    panel = Panel.model_validate({"name": "p", "scale": {"kind": "nominal",
                                                         "labels": ["KEEP", "REJECT"]},
                                  "critics": critics})
    db_path = tmp_path / name
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="items")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(str(db_path), run_id, concurrency=4).wait(60)
    assert get_run(db, run_id)["status"] == "done"
    return db, run_id, panel


def test_a_run_stores_each_critics_template_once_and_rebuilds_every_request(tmp_path,
                                                                           simulator_factory):
    server = simulator_factory(profiles={"m": Profile()})
    critic = {"vendor": "custom", "base_url": server.base_url, "model": "m",
              "prompt_template": "Judge {text}"}
    db, run_id, panel = _run(tmp_path, server, [{**critic, "name": "plain"},
                                                {**critic, "name": "repeated",
                                                 "temperature": 0.7, "samples": 2}])
    rows = {(r["critic"], r["item_id"]): r for r in db.query(
        "SELECT critic, item_id, raw_request, request_rebuilt FROM calls WHERE run_id = ?",
        [run_id])}
    assert all(r["request_rebuilt"] == 1 and r["raw_request"] is None
               for (critic_name, _), r in rows.items() if critic_name == "plain")
    # A repeated critic's verdict is a vote over calls: kept whole, and its calls in the steps.
    assert all(r["request_rebuilt"] == 0 and r["raw_request"] is not None
               for (critic_name, _), r in rows.items() if critic_name == "repeated")
    (templates,) = db.execute("SELECT count(*) FROM request_templates WHERE run_id = ?",
                              [run_id]).fetchone()
    assert templates == 1

    plain = panel.critics[0]
    for n in range(9):
        detail = fill_requests(db, run_id, item_detail(db, run_id, f"i{n}"))
        row = next(v for v in detail["verdicts"] if v["critic"] == "plain")
        item = Item(f"i{n}", detail["fields"])
        sent = prepare_call(plain, item, panel.scale)
        body = json.dumps(row["raw_request"]["body"], sort_keys=True, ensure_ascii=False)
        assert body.encode() == sent.content
        assert row["raw_request"]["url"] == f"{server.base_url}/chat/completions"


def test_cache_hits_of_a_second_run_are_rebuilt_from_its_own_template(tmp_path,
                                                                     simulator_factory):
    server = simulator_factory(profiles={"m": Profile()})
    critic = {"name": "plain", "vendor": "custom", "base_url": server.base_url, "model": "m",
              "prompt_template": "Judge {text}"}
    db, first, panel = _run(tmp_path, server, [critic])
    data = tmp_path / "items.csv"
    dataset_id = save_dataset(db, read_dataset(data, id_column="id"), name="items").id
    second = prepare_run(db, dataset_id=dataset_id, panel=panel)
    assert JobRegistry().start_run(str(tmp_path / "r.db"), second).wait(60)
    rows = list(db.query("SELECT cached, request_rebuilt FROM calls WHERE run_id = ?", [second]))
    assert rows and all(r["cached"] == 1 and r["request_rebuilt"] == 1 for r in rows)
    detail = fill_requests(db, second, item_detail(db, second, "i4"))
    sent = prepare_call(panel.critics[0], Item("i4", detail["fields"]), panel.scale)
    assert json.dumps(detail["verdicts"][0]["raw_request"]["body"], sort_keys=True,
                      ensure_ascii=False).encode() == sent.content


def test_a_request_stored_whole_is_left_as_it_is(tmp_path):
    from storage.results.calls import write_verdicts
    from tests.fixtures_storage import seed_run

    db = open_db(tmp_path / "old.db")
    seeded = seed_run(db, 2)
    whole = {"url": "http://127.0.0.1:1/v1/chat/completions", "body": {"model": "m"}}
    write_verdicts(db, seeded.run_id, [Verdict("alpha", seeded.items[0].id, label="KEEP",
                                               raw_request=whole)], replace_success=True)
    detail = fill_requests(db, seeded.run_id, item_detail(db, seeded.run_id, seeded.items[0].id))
    row = next(v for v in detail["verdicts"] if v["critic"] == "alpha")
    assert row["raw_request"] == whole and not row["request_rebuilt"]
