"""The review table: filters, sorting, paging, injection-proof parameters, readers vs a writer."""

from __future__ import annotations

import math
import threading

import pytest

from judging.verdicts import Verdict
from storage.db import NotFoundError, StorageError, open_db
from storage.results.calls import load_verdicts_of, load_votes_of, write_verdicts
from storage.reviewing.overrides import add_override
from storage.reviewing.review_filter import ReviewFilter
from storage.reviewing.review_queue import SORTS, item_detail, item_position, review_labels, review_table
from tests.fixtures_storage import seed_run


@pytest.fixture
def run(db):
    return seed_run(db, 60, reasoning=lambda i, c: f"{c} read item {i}" + (" mentions 100% cotton_blend" if i == 17 else ""))


def _expected(run, predicate):
    return {item.id for item in run.items if predicate(item)}


def _critic_said(run, critic, label):
    return lambda item: (
        run.verdicts[(item.id, critic)].label == label
        or (run.verdicts[(item.id, critic)].failure or "") == label
    )


FILTERS = {
    "all": ({}, lambda run: lambda item: True),
    "disagreements": ({"disagreements_only": True},
                      lambda run: lambda item: run.outcomes[item.id].disagreement),
    "consensus KEEP": ({"consensus_label": "KEEP"},
                       lambda run: lambda item: run.outcomes[item.id].consensus == "KEEP"),
    "beta said SPLIT": ({"critic_label": ("beta", "SPLIT")},
                        lambda run: _critic_said(run, "beta", "SPLIT")),
    "gamma parse_fail": ({"critic_label": ("gamma", "parse_fail")},
                         lambda run: _critic_said(run, "gamma", "parse_fail")),
    "failures": ({"failures": "any"}, lambda run: lambda item: run.outcomes[item.id].failed > 0),
    "parse failures": ({"failures": "parse_fail"},
                       lambda run: lambda item: run.outcomes[item.id].failed > 0),
    "refusals": ({"failures": "refusal"}, lambda run: lambda item: False),
    "search item text": ({"search": "NUMBER 12"}, lambda run: lambda item: item.id == "item-000012"),
    "search reasoning": ({"search": "100% cotton_blend"},
                         lambda run: lambda item: item.id == "item-000017"),
    "search id": ({"search": "item-00005"}, lambda run: lambda item: item.id.startswith("item-00005")),
    "alpha and gamma differ": (
        {"critic_pair": ("alpha", "gamma")},
        lambda run: lambda item: run.verdicts[(item.id, "alpha")].ok
        and run.verdicts[(item.id, "gamma")].ok
        and run.verdicts[(item.id, "alpha")].label != run.verdicts[(item.id, "gamma")].label,
    ),
    "combined": ({"disagreements_only": True, "consensus_label": "MERGE"},
                 lambda run: lambda item: run.outcomes[item.id].disagreement
                 and run.outcomes[item.id].consensus == "MERGE"),
}


@pytest.mark.parametrize("name", list(FILTERS))
def test_filters_return_exactly_the_matching_items(db, run, name):
    kwargs, make_predicate = FILTERS[name]
    frame, total = review_table(db, run.run_id, ReviewFilter(**kwargs), limit=None)
    expected = _expected(run, make_predicate(run))
    assert set(frame["item_id"]) == expected
    assert total == len(expected)


def test_alpha_range(db, run):
    frame, total = review_table(db, run.run_id, ReviewFilter(alpha_range=(0.0, 0.5)), limit=None)
    alphas = dict(zip(frame["item_id"], frame["item_alpha"]))
    assert total == len(frame) > 0
    assert all(0.0 <= a <= 0.5 for a in alphas.values())
    everything, _ = review_table(db, run.run_id, limit=None)
    expected = {i for i, a in zip(everything["item_id"], everything["item_alpha"])
                if not math.isnan(a) and 0.0 <= a <= 0.5}  # NaN: undefined alpha
    assert set(alphas) == expected
    open_high, _ = review_table(db, run.run_id, ReviewFilter(alpha_range=(None, -0.25)), limit=None)
    assert set(open_high["item_alpha"]) <= {-0.5, -0.25}


def test_overridden_filter(db, run):
    add_override(db, run.run_id, "item-000003", "SPLIT", "checked", "ann")
    add_override(db, run.run_id, "item-000009", "KEEP", "", "bob")
    yes, n_yes = review_table(db, run.run_id, ReviewFilter(overridden=True), limit=None)
    no, n_no = review_table(db, run.run_id, ReviewFilter(overridden=False), limit=None)
    assert set(yes["item_id"]) == {"item-000003", "item-000009"}
    assert n_yes + n_no == 60 and "item-000003" not in set(no["item_id"])
    row = yes.set_index("item_id").loc["item-000003"]
    assert row["final_label"] == "SPLIT" and row["reviewer"] == "ann" and row["overridden"]


@pytest.mark.parametrize("sort", list(SORTS))
def test_every_sort_orders_as_documented(db, run, sort):
    frame, _ = review_table(db, run.run_id, sort=sort, limit=None)
    assert len(frame) == 60
    if sort == "contested":
        keys = [(not d, -1 if math.isnan(a) else a) for d, a in zip(frame["disagreement"], frame["agreement"])]
        assert keys == sorted(keys)
    elif sort == "agreement":
        values = [-1 if math.isnan(a) else a for a in frame["agreement"]]
        assert values == sorted(values)
    elif sort == "alpha":
        values = [a for a in frame["item_alpha"] if not math.isnan(a)]
        assert values == sorted(values)
        assert all(math.isnan(a) for a in frame["item_alpha"][len(values):])  # undefined last
    elif sort == "failures":
        assert list(frame["failed"]) == sorted(frame["failed"], reverse=True)
    elif sort == "item":
        assert list(frame["item_id"]) == sorted(frame["item_id"])


def test_paging_covers_every_row_once(db, run):
    seen: list[str] = []
    for offset in range(0, 60, 7):
        page, total = review_table(db, run.run_id, limit=7, offset=offset)
        assert total == 60
        seen += list(page["item_id"])
    assert sorted(seen) == sorted(i.id for i in run.items)


def test_one_column_per_critic_with_labels_and_failures(db, run):
    frame, _ = review_table(db, run.run_id, limit=None, sort="item")
    assert frame.attrs["critic_columns"] == {"alpha": "alpha", "beta": "beta", "gamma": "gamma"}
    for item_id, cell in zip(frame["item_id"], frame["beta"]):
        v = run.verdicts[(item_id, "beta")]
        assert cell == (v.label if v.ok else f"⚠ {v.failure}")


def test_a_critic_named_like_a_fixed_column_gets_its_own(db):
    run = seed_run(db, 5, critics=("consensus", "item_id"))
    frame, _ = review_table(db, run.run_id)
    assert frame.attrs["critic_columns"] == {"consensus": "consensus (critic)",
                                             "item_id": "item_id (critic)"}
    assert frame["consensus (critic)"].notna().any()


INJECTIONS = [
    "'; DROP TABLE calls; --",
    "\" OR 1=1 --",
    "%",
    "_",
    "item-000001' OR '1'='1",
    ") UNION SELECT * FROM overrides --",
]


@pytest.mark.parametrize("attack", INJECTIONS)
def test_injection_attempts_are_just_text(db, run, attack):
    frame, total = review_table(db, run.run_id, ReviewFilter(search=attack), limit=None)
    # LIKE wildcards are escaped: "%" and "_" match only the one reasoning that holds them.
    expected = {"item-000017"} if attack in ("%", "_") else set()
    assert set(frame["item_id"]) == expected and total == len(expected)
    frame, total = review_table(db, run.run_id, ReviewFilter(critic_label=(attack, "KEEP")), limit=None)
    assert total == 0
    frame, total = review_table(db, run.run_id, ReviewFilter(consensus_label=attack), limit=None)
    assert total == 0
    assert db.execute("SELECT count(*) FROM calls").fetchone()[0] == 180


def test_an_evil_critic_name_is_data(db):
    evil = "x\"; DELETE FROM calls; --"
    run = seed_run(db, 4, critics=(evil, "ok"), fail_rate=0.0)
    said = run.verdicts[("item-000000", evil)].label
    frame, _ = review_table(db, run.run_id, ReviewFilter(critic_label=(evil, said)), limit=None)
    assert "item-000000" in set(frame["item_id"])
    assert evil in frame.columns
    assert db.execute("SELECT count(*) FROM calls").fetchone()[0] == 8


def test_bad_arguments_are_clear(db, run):
    with pytest.raises(StorageError, match="Unknown sort"):
        review_table(db, run.run_id, sort="id; DROP TABLE runs")
    with pytest.raises(StorageError, match="critic, label"):
        review_table(db, run.run_id, ReviewFilter(critic_label=("only-one",)))  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        review_table(db, 999)


def test_item_detail(db, run):
    add_override(db, run.run_id, "item-000002", "MERGE", "first look", "ann")
    add_override(db, run.run_id, "item-000002", "REJECT", "second look", "bob")
    detail = item_detail(db, run.run_id, "item-000002")
    assert detail["fields"] == run.items[2].fields
    assert detail["gold"] == run.items[2].gold
    assert [v["critic"] for v in detail["verdicts"]] == ["alpha", "beta", "gamma"]
    for v in detail["verdicts"]:
        stored = run.verdicts[("item-000002", v["critic"])]
        assert v["label"] == stored.label
        assert v["raw_response"] == stored.raw_response
    assert detail["consensus"]["consensus"] == run.outcomes["item-000002"].consensus
    assert [o["label"] for o in detail["overrides"]] == ["MERGE", "REJECT"]
    assert detail["final_label"] == "REJECT"
    with pytest.raises(NotFoundError):
        item_detail(db, run.run_id, "missing")


def test_review_labels_offer_what_was_seen(db, run):
    from storage.results.calls import load_verdicts
    from storage.results.consensus import load_consensus

    labels = review_labels(db, run.run_id)
    seen: dict[str, set[str]] = {}
    for v in load_verdicts(db, run.run_id):
        value = v.label or (v.failure.value if v.failure else None)
        if value is not None:
            seen.setdefault(v.critic, set()).add(value)
    assert labels["critics"] == {critic: sorted(values) for critic, values in seen.items()}
    assert set(labels["critics"]) == {"alpha", "beta", "gamma"}
    assert labels["failures"] == sorted({v.failure.value for v in load_verdicts(db, run.run_id)
                                         if v.failure}) != []
    assert labels["consensus"] == sorted({row["consensus"] for row in load_consensus(db, run.run_id)
                                          if row["consensus"] is not None})


def test_a_reader_pages_while_a_writer_commits(db_path):
    """WAL: a reader on its own connection is never blocked and always sees whole batches."""
    setup = open_db(db_path)
    run = seed_run(setup, 300, fail_rate=0.0)
    setup.close()
    stop = threading.Event()
    errors: list[BaseException] = []
    batches = 0

    def writer() -> None:
        nonlocal batches
        db = open_db(db_path)
        try:
            n = 0
            while not stop.is_set() and n < 300:
                batch = [Verdict(critic=c, item_id=f"item-{i:06d}", label="NEWLABEL", reasoning=f"pass {n}")
                         for i in range(n, min(n + 30, 300)) for c in ("alpha", "beta", "gamma")]
                write_verdicts(db, run.run_id, batch, replace_success=True)
                batches += 1
                n += 30
                stop.wait(0.03)  # leave the reader time between commits
        except BaseException as error:  # noqa: BLE001
            errors.append(error)
        finally:
            db.close()

    thread = threading.Thread(target=writer)
    thread.start()
    reader = open_db(db_path)
    pages = pages_during_writes = 0
    while thread.is_alive() or pages < 5:
        writing = thread.is_alive()
        for offset in range(0, 300, 50):
            frame, total = review_table(reader, run.run_id, limit=50, offset=offset, sort="item")
            assert total == 300 and len(frame) == 50
            # A batch is a transaction: an item's three critics are all new or all old.
            for _, row in frame.iterrows():
                new = [row[c] == "NEWLABEL" for c in ("alpha", "beta", "gamma")]
                assert all(new) or not any(new)
            pages += 1
            pages_during_writes += writing
    stop.set()
    thread.join()
    assert errors == []
    assert batches == 10 and pages_during_writes >= 3
    frame, _ = review_table(reader, run.run_id, limit=None)
    assert set(frame["alpha"]) == {"NEWLABEL"}


def test_a_big_page_pivots_the_same_cells(db):
    """Above 900 rows the critic columns come from a pivot inside SQLite: same cells."""
    run = seed_run(db, 1000, critics=("alpha", "beta"), fail_rate=0.2)
    frame, total = review_table(db, run.run_id, limit=None, sort="item")
    assert total == len(frame) == 1000
    for item_id, a, b in zip(frame["item_id"], frame["alpha"], frame["beta"]):
        for critic, cell in (("alpha", a), ("beta", b)):
            v = run.verdicts[(item_id, critic)]
            assert cell == (v.label if v.ok else f"⚠ {v.failure}")
    small, _ = review_table(db, run.run_id, limit=100, sort="item")
    assert small[["alpha", "beta"]].equals(frame[["alpha", "beta"]].iloc[:100])


@pytest.mark.parametrize("disagreements_only", [True, False])
def test_the_default_first_page_is_read_in_index_order_not_sorted(db, run, disagreements_only):
    # At 1,000,000 items a sort of every matching row cost 0.26 s per rerun (1.7 s on the
    # last page): the contested order must come straight from its index (migration 0020), with
    # no temporary B-tree, and the last page must hold the same rows as the full sorted list.
    where = "c.run_id = ?" + (" AND c.disagreement = 1" if disagreements_only else "")
    plan = " | ".join(row[3] for row in db.execute(
        f"EXPLAIN QUERY PLAN SELECT c.rowid FROM consensus c WHERE {where} ORDER BY "
        + SORTS["contested"] + " LIMIT 50", [run.run_id]))
    assert "consensus_contested_order" in plan and "TEMP B-TREE" not in plan, plan
    everything, total = review_table(db, run.run_id, ReviewFilter(disagreements_only=disagreements_only), limit=None)
    last, same_total = review_table(db, run.run_id, ReviewFilter(disagreements_only=disagreements_only), limit=7, offset=(math.ceil(total / 7) - 1) * 7)
    assert same_total == total and 0 < len(last) <= 7
    assert list(last["item_id"]) == list(everything["item_id"])[-len(last):]


def test_tied_votes_are_counted_from_their_own_index(db, run):
    plan = " | ".join(row[3] for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT consensus, count(*) FROM consensus WHERE run_id = ? AND tie"
        " GROUP BY consensus", [run.run_id]))
    assert "consensus_ties" in plan, plan


@pytest.mark.parametrize("sort", sorted(SORTS))
@pytest.mark.parametrize("filters", [{}, {"disagreements_only": True}, {"overridden": False},
                                     {"consensus_label": "SPLIT"}], ids=repr)
def test_item_position_is_the_row_of_the_item_in_the_table(db, run, sort, filters):
    # The Review page opens an item's page and walks to the next item by this position: it
    # must be the item's row in exactly the order the table shows, for every sort (overrides
    # given so that "recently overridden first" has an order of its own).
    for n, item in enumerate(run.items[5:40:6]):
        add_override(db, run.run_id, item.id, "MERGE", f"note {n}", "ana")
    table, _ = review_table(db, run.run_id, ReviewFilter(**filters), sort=sort, limit=None)
    rows = [str(i) for i in table["item_id"]]
    for item in run.items:
        expected = rows.index(item.id) if item.id in rows else None
        assert item_position(db, run.run_id, item.id, ReviewFilter(**filters), sort=sort) == expected, item.id


def test_votes_are_the_stored_verdicts_without_their_evidence(db, run):
    """`load_votes_of` (what calibration re-votes) gives each stored verdict's vote inputs,
    failures and rubric marks included, and none of the evidence."""
    marked = Verdict(critic="alpha", item_id=run.items[0].id, label="KEEP", confidence=0.9,
                     reasoning="long", raw_response='{"label": "KEEP"}',
                     marks={"clear": ("yes", "it reads well")})
    write_verdicts(db, run.run_id, [marked], replace_success=True)
    ids = [item.id for item in run.items[:12]]
    whole = load_verdicts_of(db, run.run_id, ids)
    votes = load_votes_of(db, run.run_id, ids)
    assert any(v.failure for v in whole) and any(v.marks for v in whole)
    assert [(v.critic, v.item_id, v.label, v.score, v.confidence, v.failure, v.marks)
            for v in votes] == \
        [(v.critic, v.item_id, v.label, v.score, v.confidence, v.failure, v.marks)
         for v in whole]
    assert all(v.raw_response is None and v.reasoning is None and v.message is None
               for v in votes)


def test_a_review_filter_is_one_frozen_value_with_a_typed_failure_filter(db, run):
    import dataclasses

    from judging.verdicts import FailureKind
    from storage.reviewing.review_filter import ANY_FAILURE

    assert ReviewFilter(failures="parse_fail").failures is FailureKind.PARSE_FAIL
    assert ReviewFilter(failures=ANY_FAILURE).failures == "any"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ReviewFilter().search = "x"  # type: ignore[misc]
    with pytest.raises(StorageError, match="Unknown failure filter 'oops'; use 'any' or one of"):
        ReviewFilter(failures="oops")  # type: ignore[arg-type]
    # The same value drives the table and an item's position.
    where = ReviewFilter(disagreements_only=True, consensus_label="SPLIT")
    frame, _ = review_table(db, run.run_id, where, limit=None)
    for n, item in enumerate(frame["item_id"]):
        assert item_position(db, run.run_id, str(item), where) == n
