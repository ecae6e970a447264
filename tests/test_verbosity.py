"""The verbosity probe (issue 11 part 5): each critic's verdict against the response length,
Spearman's rho with a Fisher-z interval; on the Agreement page and in `jurybox stats`."""

from __future__ import annotations

import math
import random

import pytest

from judging.errors import DataError
from judging.runs.cli import main
from judging.runs.report import run_verbosity
from judging.scales import Scale
from judging.verbosity import fisher_interval, longest_field, spearman, verbosity_probe
from storage.db import open_db
from tests.test_app_smoke import no_exception, open_page


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
    assert longest_field({"a": {"q": "short", "answer": "a much longer text", "n": 3}}) == "answer"


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
    from storage.datasets import load_items
    from storage.runs import get_run

    path, run_id = demo_db
    db = open_db(path)
    items = load_items(db, get_run(db, run_id)["dataset_id"])
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert any(s.value.startswith("Verbosity") for s in at.subheader)
    # By default the field with the longest texts, the response being judged.
    assert at.selectbox(key="verbosity_field").value == longest_field(
        {item.id: item.fields for item in items})
    assert any("have no order" in c.value for c in at.caption)


def test_a_missing_score_is_no_verdict_not_a_nan_figure():
    scale = Scale(kind="score", min=0, max=1)
    lengths = {f"i{n}": 10 * (n + 1) for n in range(16)}
    said = {f"i{n}": (float("nan") if n % 4 == 0 else n / 16) for n in range(16)}
    (row,) = verbosity_probe(lengths, {"c": said}, scale, "response").rows
    assert row.n == 12 and row.rho == pytest.approx(1.0)
