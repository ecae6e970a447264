"""The verbosity probe (issue 11 part 5): each critic's verdict against the response length,
Spearman's rho with a Fisher-z interval; on the Agreement page and in `jurybox stats`."""

from __future__ import annotations

import math
import random

import pytest

from judging.analysis.verbosity import fisher_interval, spearman, verbosity_probe
from judging.errors import DataError
from judging.runs.commands.cli import main
from judging.runs.stored.run_report import run_verbosity
from judging.scales import Scale
from storage.db import open_db
from tests.test_app_smoke import no_exception, open_page


def _longest_text_field(fields_by_item):
    """The field with the longest mean text, worked out from loaded items (the oracle for the
    SQL that picks it)."""
    totals: dict[str, list[int]] = {}
    for fields in fields_by_item.values():
        for name, value in fields.items():
            if isinstance(value, str):
                totals.setdefault(name, []).append(len(value))
    return max(totals, key=lambda name: sum(totals[name]) / len(totals[name]))


def test_spearman_ranks_with_ties_averaged():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Ranks x: 1,2,3,4; y with a tie: 1,2.5,2.5,4 -> Pearson of the ranks.
    assert spearman([1, 2, 3, 4], [1, 5, 5, 9]) == pytest.approx(0.9486833, abs=1e-6)
    assert spearman([1, 2, 3], [7, 7, 7]) is None


def test_the_interval_is_fisher_z_with_the_spearman_standard_error():
    low, high = fisher_interval(0.5, 28)
    half = 1.959964 * math.sqrt(1.06 / 25)
    assert (low, high) == (pytest.approx(math.tanh(math.atanh(0.5) - half)),
                           pytest.approx(math.tanh(math.atanh(0.5) + half)))


def test_a_critic_that_leans_with_length_is_caught_and_a_fair_one_is_not():
    rng = random.Random(1)
    lengths = {f"i{n}": rng.randint(50, 2000) for n in range(200)}
    scale = Scale(kind="likert", min=1, max=5)
    lenient = {i: str(min(5, 1 + length // 400)) for i, length in lengths.items()}
    fair = {i: str(rng.randint(1, 5)) for i in lengths}
    probe = verbosity_probe(lengths, {"lenient": lenient, "fair": fair}, scale, "answer")
    by = {r.critic: r for r in probe.rows}
    assert by["lenient"].rho > 0.9 and by["lenient"].low > 0
    assert by["fair"].low < 0 < by["fair"].high
    assert "Verbosity: Spearman's rho between the length of 'answer'" in probe.to_text()


def test_unordered_labels_and_thin_evidence_say_why():
    nominal = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT"])
    probe = verbosity_probe({"a": 1}, {"c": {"a": "KEEP"}}, nominal, "text")
    assert probe.rows == [] and "have no order" in probe.reason
    two = Scale(kind="nominal", labels=["good", "bad"])  # two labels: an order of sorts
    probe = verbosity_probe({f"i{n}": n for n in range(5)}, {"c": {f"i{n}": "good" for n in range(5)}},
                            two, "text")
    assert probe.rows[0].rho is None and "fewer than 10" in probe.rows[0].reason


def test_stats_prints_the_probe_and_names_an_unknown_field(demo_db, capsys):
    path, run_id = demo_db
    assert main(["stats", str(run_id), "--db", str(path), "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    # The demo's labels (KEEP/REJECT/SPLIT/MERGE) have no order: the probe says so.
    assert "Verbosity: the labels of this nominal scale" in out
    with pytest.raises(DataError, match="no field 'nope'; their fields: "):
        run_verbosity(open_db(path), run_id, "nope")
    assert main(["stats", str(run_id), "--db", str(path), "--length-field", "nope"]) == 2


def test_the_agreement_page_has_the_probe(demo_db):
    from storage.datasets.dataset_store import load_items
    from storage.results.runs import get_run

    path, run_id = demo_db
    db = open_db(path)
    items = load_items(db, get_run(db, run_id)["dataset_id"])
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert any(s.value.startswith("Verbosity") for s in at.subheader)
    # By default the field with the longest texts, the response being judged.
    assert at.selectbox(key="verbosity_field").value == _longest_text_field(
        {item.id: item.fields for item in items})
    assert any("have no order" in c.value for c in at.caption)


def test_a_missing_score_is_no_verdict_not_a_nan_figure():
    scale = Scale(kind="score", min=0, max=1)
    lengths = {f"i{n}": 10 * (n + 1) for n in range(16)}
    said = {f"i{n}": (float("nan") if n % 4 == 0 else n / 16) for n in range(16)}
    (row,) = verbosity_probe(lengths, {"c": said}, scale, "response").rows
    assert row.n == 12 and row.rho == pytest.approx(1.0)


def test_a_stored_run_is_probed_as_its_loaded_items_and_verdicts_say(db):
    """run_verbosity reads lengths and verdicts with narrow queries; the probe is the one
    computed from every item and verdict loaded whole."""
    from judging.runs.background.jobs import prepare_run
    from judging.verdicts import FailureKind, Item, Verdict
    from storage.datasets.dataset_store import load_items, save_dataset
    from storage.results.calls import load_verdicts, write_verdicts
    from tests.fixtures_storage import FakeParsed, tiny_panel

    rng = random.Random(7)
    items = [Item(id=f"i{n:03d}", fields={
        "text": f"item {n}", "question": "q" * rng.randint(1, 20), "answer": "a" * rng.randint(20, 900),
        "votes": rng.randint(0, 99999), "flag": True}) for n in range(60)]
    items.append(Item(id="empty", fields={"text": "last", "question": "why?", "answer": None, "votes": 3,
                                          "flag": False}))
    dataset_id = save_dataset(db, FakeParsed(
        items=items, columns=["id", "text", "question", "answer", "votes", "flag"],
        fields=["text", "question", "answer", "votes", "flag"], content_hash="verbosity-run")).id
    scale = Scale(kind="likert", min=1, max=5)
    panel = tiny_panel("http://127.0.0.1:9/v1")
    # The critics read the question, the answer and the votes; not `text`.
    shows = "Question: {question}\nAnswer: {answer}\nVotes: {votes}"
    critics = [c.model_copy(update={"prompt_template": shows}) for c in panel.critics]
    run_id = prepare_run(db, dataset_id=dataset_id,
                         panel=panel.model_copy(update={"scale": scale, "critics": critics}))
    verdicts = []
    for item in items:
        length = len(item.fields["answer"] or "")
        verdicts += [
            Verdict(critic="critic_0", item_id=item.id, label=str(min(5, 1 + length // 200))),
            Verdict(critic="critic_1", item_id=item.id, label=str(rng.randint(1, 5))),
            Verdict(critic="critic_2", item_id=item.id, failure=FailureKind.ERROR, message="500")
            if item.id.endswith("7") else
            Verdict(critic="critic_2", item_id=item.id, label=str(rng.randint(1, 5)))]
    write_verdicts(db, run_id, verdicts)

    loaded = {item.id: item.fields for item in load_items(db, dataset_id)}
    valid: dict[str, dict[str, object]] = {}
    for v in load_verdicts(db, run_id):
        if v.failure is None:
            valid.setdefault(v.critic, {})[v.item_id] = v.label

    def expected(name):
        lengths = {i: len(str(f[name])) for i, f in loaded.items() if f.get(name) is not None}
        return verbosity_probe(lengths, valid, scale, name)

    probe = run_verbosity(db, run_id)
    # The longest text field the critics' prompts show (every field here but `text`).
    assert probe.measured == _longest_text_field(
        {i: {k: v for k, v in f.items() if k != "text"} for i, f in loaded.items()}) == "answer"
    assert probe == expected("answer")
    # 61 items, one with no answer to measure; critic_2 failed on 6 of the others.
    assert probe.rows[0].rho > 0.9 and probe.rows[0].n == 60 and probe.rows[2].n == 60 - 6
    assert run_verbosity(db, run_id, "votes") == expected("votes")  # numbers count as written
    # A field no critic's prompt shows cannot sway a verdict: no figure, and the reason.
    hidden = run_verbosity(db, run_id, "text")
    assert hidden.measured == "text" and [r.rho for r in hidden.rows] == [None] * 3
    assert all(r.reason == "its prompt does not show text, so its length cannot sway it"
               for r in hidden.rows)
    with pytest.raises(DataError, match="no field 'nope'; their fields: answer, flag, question, text, votes"):
        run_verbosity(db, run_id, "nope")
