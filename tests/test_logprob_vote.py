"""Logprob scores in the vote (issue 26 part 5): G-Eval's expected score, strategies that pool
label probabilities instead of counting argmax labels, the fallback for critics without them,
their storage, export columns and statistics, and a real run against the simulator."""

from __future__ import annotations

import io
import json
import math

import krippendorff
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from judging.analysis.expected_stats import expected_score_alpha, probability_calibration
from judging.errors import ConfigError
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.simulator.sim_server import Profile
from judging.verdicts import FailureKind, Verdict
from judging.voting.logprobs import attach_probabilities, label_probabilities
from judging.voting.pooling import Opinion, pool
from judging.voting.strategies import VotingConfig, vote

LIKERT = Scale(kind="likert", min=1, max=5)
KEEP_REJECT = Scale(kind="nominal", labels=["KEEP", "REJECT"])
TAXONOMY = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])


def _reply(answer: str, probs: dict[str, float]) -> str:
    """A chat completion `{"score": <answer>}` whose answer token has these alternatives."""
    alts = [{"token": t, "logprob": math.log(p)} for t, p in probs.items()]
    content = [{"token": '{"score": ', "logprob": 0.0, "top_logprobs": []},
               {"token": answer, "logprob": math.log(probs[answer]), "top_logprobs": alts},
               {"token": "}", "logprob": 0.0, "top_logprobs": []}]
    return json.dumps({"choices": [{"message": {"content": '{"score": ' + answer + "}"},
                                    "logprobs": {"content": content}}]})


def _verdict(critic: str, label: str, probs: dict[str, float] | None, scale: Scale) -> Verdict:
    """A successful verdict, its probabilities read from a reply as a run reads them."""
    verdict = Verdict(critic, "i1", label=label,
                      raw_response=_reply(label, probs) if probs else None)
    return attach_probabilities(verdict, scale)


# ------------------------------------------------------------------------- G-Eval arithmetic


def test_the_expected_score_is_g_evals_sum_of_p_times_score_worked_by_hand():
    # G-Eval (Liu et al. 2023, eq. 1): score = sum_i p(s_i) x s_i. Worked by hand:
    #   1 x .05 + 2 x .10 + 3 x .20 + 4 x .40 + 5 x .25 = .05 + .2 + .6 + 1.6 + 1.25 = 3.70
    #   variance = .05 x 2.7^2 + .10 x 1.7^2 + .20 x .7^2 + .40 x .3^2 + .25 x 1.3^2
    #            = .3645 + .289 + .098 + .036 + .4225 = 1.21, so the spread is 1.10.
    # The sampled answer is 4 (argmax); its expected score says "between 3 and 4, nearer 4".
    probs = {"4": 0.40, "5": 0.25, "3": 0.20, "2": 0.10, "1": 0.05}
    verdict = _verdict("c", "4", probs, LIKERT)
    assert verdict.label_probs == pytest.approx({"1": .05, "2": .10, "3": .20, "4": .40,
                                                 "5": .25})
    assert verdict.expected_score == pytest.approx(3.70)
    assert verdict.expected_spread == pytest.approx(1.10)
    # A top-5 list that misses some mass is renormalised over the labels found (G-Eval's and
    # Verdict's practice): halving every probability changes nothing.
    half = label_probabilities(_reply("4", {k: v / 2 for k, v in probs.items()}), LIKERT)
    assert half is not None and half.expected == pytest.approx(3.70)
    assert half.covered == pytest.approx(0.5)


def test_pooling_is_the_weighted_mean_of_distributions_and_of_expected_scores():
    a = Opinion("a", "5", {"5": 0.6, "1": 0.4})  # expected 3.4
    c = Opinion("c", "1", {"1": 1.0}, weight=2.0)  # expected 1
    pooled = pool([a, c], LIKERT)
    assert pooled is not None
    # (1 x {5: .6, 1: .4} + 2 x {1: 1}) / 3 = {1: .8, 5: .2}
    assert pooled.probs == pytest.approx({"1": 0.8, "2": 0, "3": 0, "4": 0, "5": 0.2})
    assert pooled.expected == pytest.approx((3.4 + 2 * 1.0) / 3)  # the mean is linear
    # The mixture's spread holds each critic's doubt and their disagreement:
    # .8 x (1 - 1.8)^2 + .2 x (5 - 1.8)^2 = .512 + 2.048 = 2.56 -> 1.6
    assert pooled.spread == pytest.approx(1.6)
    assert pooled.fallback == ()


# ------------------------------------------------------------------------- voting


def _three_critics() -> list[Verdict]:
    # Two critics answer 5 but hesitate (60/40 against 1); one answers 1 and is sure.
    return [_verdict("a", "5", {"5": 0.6, "1": 0.4}, LIKERT),
            _verdict("b", "5", {"5": 0.6, "1": 0.4}, LIKERT),
            _verdict("c", "1", {"1": 1.0}, LIKERT)]


def test_voting_on_expected_scores_differs_from_argmax_voting():
    verdicts = _three_critics()
    by_label = vote(verdicts, {}, VotingConfig(strategy="plurality"), LIKERT)
    by_median = vote(verdicts, {}, VotingConfig(strategy="median"), LIKERT)
    by_expected = vote(verdicts, {}, VotingConfig(strategy="mean-expected-score"), LIKERT)
    by_pool = vote(verdicts, {}, VotingConfig(strategy="pooled-probability"), LIKERT)
    assert by_label.consensus == by_median.consensus == "5"  # argmax: two of three say 5
    # Expected scores 3.4, 3.4 and 1: their mean 2.6 is nearest 3.
    assert by_expected.consensus == "3"
    assert by_expected.expected_score == pytest.approx(2.6)
    # Pooled: 1 -> (.4 + .4 + 1) / 3 = .6, 5 -> .4: the pool says 1.
    assert by_pool.consensus == "1"
    assert by_pool.label_probs["1"] == pytest.approx(0.6)
    # sqrt(.6 x 1.6^2 + .4 x 2.4^2) = sqrt(3.84)
    assert by_pool.expected_spread == pytest.approx(math.sqrt(3.84))
    # Agreement is still the share of critics whose own label backs the consensus.
    assert by_pool.agreement == pytest.approx(1 / 3) and by_pool.disagreement
    # Argmax voting carries the pooled figures too when every critic gave probabilities.
    assert by_label.expected_score == pytest.approx(2.6)


def test_weights_weigh_distributions():
    verdicts = _three_critics()
    outcome = vote(verdicts, {"c": 0.1}, VotingConfig(strategy="pooled-probability"), LIKERT)
    # 5 -> (.6 + .6) / 2.1 = .571: the light sure critic no longer outweighs the two.
    assert outcome.consensus == "5"
    assert outcome.label_probs["5"] == pytest.approx(1.2 / 2.1)


def test_nominal_labels_pool_probabilities_where_plurality_counts_labels():
    verdicts = [_verdict("a", "KEEP", {"KEEP": 0.51, "REJECT": 0.49}, KEEP_REJECT),
                _verdict("b", "KEEP", {"KEEP": 0.51, "REJECT": 0.49}, KEEP_REJECT),
                _verdict("c", "REJECT", {"REJECT": 0.99, "KEEP": 0.01}, KEEP_REJECT)]
    assert vote(verdicts, {}, VotingConfig(), KEEP_REJECT).consensus == "KEEP"
    pooled = vote(verdicts, {}, VotingConfig(strategy="pooled-probability"), KEEP_REJECT)
    assert pooled.consensus == "REJECT"
    assert pooled.label_probs == pytest.approx({"KEEP": 1.03 / 3, "REJECT": 1.97 / 3})


def test_a_critic_without_probabilities_counts_by_its_label_with_a_note():
    verdicts = _three_critics()
    verdicts[2] = _verdict("c", "1", None, LIKERT)  # no logprobs: certain of its label
    outcome = vote(verdicts, {}, VotingConfig(strategy="pooled-probability"), LIKERT)
    assert outcome.consensus == "1"  # the same pool as before: 1 with certainty
    assert "c gave no label probabilities" in (outcome.note or "")
    assert "counted as certain of its label" in (outcome.note or "")
    # An argmax vote pools nothing when a critic has no probabilities: no silent mix.
    plain = vote(verdicts, {}, VotingConfig(), LIKERT)
    assert plain.expected_score is None and plain.label_probs == {}
    assert "no label probabilities" not in (plain.note or "")


def test_failures_are_left_out_of_the_pool_and_a_halfway_score_is_a_tie():
    failed = Verdict("d", "i1", failure=FailureKind.ERROR, message="boom")
    verdicts = [_verdict("a", "2", {"2": 1.0}, LIKERT), _verdict("b", "3", {"3": 1.0}, LIKERT),
                failed]
    pessimistic = vote(verdicts, {}, VotingConfig(strategy="mean-expected-score",
                                                  priority=["2"]), LIKERT)
    assert pessimistic.consensus == "2" and pessimistic.tie  # 2.5: halfway, by priority
    assert pessimistic.expected_score == pytest.approx(2.5)
    assert "1 of 3 critics failed" in (pessimistic.note or "")
    abstain = vote(verdicts, {}, VotingConfig(strategy="mean-expected-score",
                                              tie_policy="abstain"), LIKERT)
    assert abstain.consensus is None and "halfway between 2 and 3" in (abstain.note or "")


def test_panels_are_checked_for_what_the_strategies_need():
    head = "schema_version: 1\nname: p\nscale: SCALE\nvoting: {strategy: STRATEGY}\ncritics:\n"
    critic = "  - {name: c, vendor: openai, model: m, prompt_template: 'x {t}', logprobs: LP}\n"

    def panel(scale: str, strategy: str, logprobs: str = "true") -> Panel:
        return load_panel(head.replace("SCALE", scale).replace("STRATEGY", strategy)
                          + critic.replace("LP", logprobs))

    assert panel("{kind: likert, min: 1, max: 5}", "mean-expected-score").voting.strategy
    assert panel("{kind: nominal, labels: [a, b, c]}", "pooled-probability")
    with pytest.raises(ConfigError, match="'mean-expected-score' needs labels with an order"):
        panel("{kind: nominal, labels: [a, b, c]}", "mean-expected-score")
    with pytest.raises(ConfigError, match="no critic asks for them; set logprobs: true"):
        panel("{kind: likert, min: 1, max: 5}", "pooled-probability", logprobs="false")


# ------------------------------------------------------------------------- statistics


def test_alpha_on_expected_scores_matches_the_krippendorff_package():
    rows = [[3.7, 3.4, None], [1.2, 1.0, 1.5], [4.6, 4.1, 4.9], [2.2, 3.0, 2.5], [None, 4.0, 3.1]]
    ours = expected_score_alpha(rows)
    reference = krippendorff.alpha(
        reliability_data=np.array(rows, dtype=float).T, level_of_measurement="interval")
    assert ours.value == pytest.approx(reference, abs=1e-9)
    assert ours.level == "interval"


def test_calibration_error_worked_by_hand():
    distributions = [{"a": 0.9, "b": 0.1}, {"a": 0.9, "b": 0.1}, {"b": 0.6, "a": 0.4},
                     {"a": 0.55, "b": 0.45}]
    humans = ["a", "b", "b", "b"]
    result = probability_calibration(distributions, humans, bins=10)
    # bin [.9, 1): confidence .9, accuracy .5 -> 2/4 x .4 = .2
    # bin [.6, .7): confidence .6, accuracy 1 -> 1/4 x .4 = .1
    # bin [.5, .6): confidence .55, accuracy 0 -> 1/4 x .55 = .1375
    assert result.ece == pytest.approx(0.4375)
    assert result.n == 4 and [b.n for b in result.bins] == [0, 0, 0, 0, 0, 1, 1, 0, 0, 2]
    empty = probability_calibration([], [])
    assert empty.ece is None and "human label" in (empty.reason or "")


# ------------------------------------------------------------------------- a real run


def test_a_simulated_run_stores_votes_and_exports_expected_scores(simulator_factory, db_path):
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db
    from storage.results.calls import load_verdicts, request_templates
    from storage.results.consensus import iter_panel_verdicts, load_consensus
    from storage.results.expected_scores import expected_score_rows, pooled_against_humans
    from storage.results.export_files import export_bytes

    gold = {f"answer {n}": str(1 + n % 5) for n in range(12)}
    server = simulator_factory(profiles={"m-lp": Profile(accuracy=0.7),
                                         "m-lp2": Profile(accuracy=0.6),
                                         "m-plain": Profile(accuracy=0.9, logprobs=False)},
                               gold=gold)
    panel = Panel.model_validate({
        "name": "lp", "scale": {"kind": "likert", "min": 1, "max": 5},
        "voting": {"strategy": "mean-expected-score"},
        "critics": [{"name": name, "vendor": "custom", "base_url": server.base_url,
                     "model": model, "prompt_template": "Rate {text}", "logprobs": True}
                    for name, model in (("lp", "m-lp"), ("lp2", "m-lp2"), ("plain", "m-plain"))],
    })
    data = "id,text,gold\n" + "".join(f"i{n},answer {n},{1 + n % 5}\n" for n in range(12))
    path = db_path.replace("jurybox.db", "d.csv")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(data)
    db = open_db(db_path)
    dataset = save_dataset(db, read_dataset(path, id_column="id", gold_column="gold"), name="d")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(db_path, run_id).wait(60)

    # The request asked for logprobs (real HTTP); the answers carry them, except the model
    # that answers `logprobs: null`.
    verdicts = load_verdicts(db, run_id)
    templates = request_templates(db, run_id)  # each critic's request, stored once per run
    assert sorted(templates) == ["lp", "lp2", "plain"]
    assert all('"logprobs":true' in content.replace(" ", "")
               for _, _, content in templates.values())
    ok = [v for v in verdicts if v.ok]
    with_probs = [v for v in ok if v.critic != "plain"]
    assert with_probs and all(v.expected_score is not None for v in with_probs)
    assert all(1 <= v.expected_score <= 5 and v.expected_spread >= 0 for v in with_probs)
    assert all(v.label_probs is None and v.expected_score is None
               for v in ok if v.critic == "plain")
    # The stored expected score is the one the reply gives.
    sample = with_probs[0]
    assert sample.expected_score == pytest.approx(
        label_probabilities(sample.raw_response, panel.scale).expected)

    decisions = load_consensus(db, run_id)
    assert len(decisions) == 12
    for row in decisions:
        assert row["strategy"] == "mean-expected-score"
        assert row["expected_score"] is not None and row["label_probs"]
        # The label nearest the pooled expected score decides.
        assert abs(float(row["consensus"]) - row["expected_score"]) <= 0.5 + 1e-9
        assert "plain gave no label probabilities" in row["note"]
    # Read back as the vote left them (a re-vote reads them without the replies).
    first = next(iter_panel_verdicts(db, run_id, evidence=False))
    assert first.outcome.expected_score == pytest.approx(decisions[0]["expected_score"])
    assert any(v.label_probs for v in first.verdicts)

    # Statistics read them: alpha on expected scores, calibration against the gold labels.
    items, rows = expected_score_rows(db, run_id, ["lp", "lp2", "plain"])
    assert len(items) == 12 and all(row[2] is None for row in rows)
    assert expected_score_alpha(rows).n_pairable_units >= 10
    triples = pooled_against_humans(db, run_id)
    assert len(triples) == 12
    assert probability_calibration([t[1] for t in triples], [t[2] for t in triples]).ece is not None

    # The export, every format: pooled columns and per-critic ones.
    columns = ["expected_score", "expected_spread", "consensus_probability",
               "lp: expected_score", "lp: expected_spread", "plain: expected_score"]
    frames = {
        "csv": pd.read_csv(io.BytesIO(export_bytes(db, run_id, "csv"))),
        "jsonl": pd.read_json(io.BytesIO(export_bytes(db, run_id, "jsonl")), lines=True),
        "parquet": pq.read_table(io.BytesIO(export_bytes(db, run_id, "parquet"))).to_pandas(),
    }
    by_item = {row["item_id"]: row for row in decisions}
    for fmt, frame in frames.items():
        assert set(columns) <= set(frame.columns), fmt
        for _, row in frame.iterrows():
            stored = by_item[str(row["item_id"])]
            assert row["expected_score"] == pytest.approx(stored["expected_score"]), fmt
            assert row["consensus_probability"] == pytest.approx(
                stored["label_probs"][stored["consensus"]]), fmt
        assert frame["plain: expected_score"].isna().all(), fmt
        assert frame["lp: expected_score"].notna().sum() >= 10, fmt
    db.close()


def test_a_run_without_logprobs_exports_no_expected_columns(db, tmp_path):
    from judging.runs.background.jobs import prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.results.export_files import export_frame
    from tests.fixtures_storage import tiny_panel

    panel = tiny_panel()
    assert not any(c.logprobs for c in panel.critics)
    path = tmp_path / "d.csv"
    path.write_text("id,text\ni1,a\n", encoding="utf-8")
    dataset = save_dataset(db, read_dataset(path, id_column="id"), name="d")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    frame = export_frame(db, run_id)
    assert not [c for c in frame.columns if "expected" in c or c == "consensus_probability"]


def test_the_agreement_page_shows_alpha_on_expected_scores_and_calibration(app_db, tmp_path):
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from judging.runs.stored.run_report import run_expected_scores
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db
    from tests.test_app_smoke import no_exception, open_page

    data = tmp_path / "d.csv"
    data.write_text("id,text,gold\n" + "".join(f"i{n},text {n},{'KEEP' if n % 3 else 'REJECT'}\n"
                                               for n in range(9)), encoding="utf-8")
    db = open_db(app_db)
    dataset = save_dataset(db, read_dataset(data, id_column="id", gold_column="gold"), name="d")
    panel = load_panel(
        "schema_version: 1\nname: lp\nscale: {kind: ordinal, labels: [REJECT, KEEP]}\n"
        "voting: {strategy: pooled-probability}\ncritics:\n"
        + "".join(f"  - {{name: {m}, vendor: simulated, model: sim-{m}, logprobs: true,"
                  " prompt_template: 'Judge {text}'}\n" for m in ("careful", "strict")))
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(str(app_db), run_id).wait(60)
    expected = run_expected_scores(db, run_id)
    assert expected is not None and expected.calibration.n == 9

    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert any(s.value == "Logprob scores: agreement and calibration" for s in at.subheader)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Calibration error (ECE)"] == f"{expected.calibration.ece:.3f}"
    if expected.alpha.value is not None:
        assert shown["Alpha on expected scores (interval)"] == f"{expected.alpha.value:.3f}"
    table = next(d.value for d in at.dataframe if "share right" in d.value.columns)
    assert int(table["items"].sum()) == 9


def test_a_run_without_a_logprobs_critic_is_answered_without_reading_its_calls(db_path):
    # At 3,000,000 calls the question "does any call carry probabilities?" read them all
    # (2 s on the Agreement page): a panel with no critic asking for logprobs answers it.
    from judging.runs.background.jobs import prepare_run
    from judging.runs.stored.run_report import run_expected_scores
    from storage.datasets.dataset_store import save_dataset
    from storage.db import open_db
    from tests.fixtures_storage import make_parsed, tiny_panel

    db = open_db(db_path)
    run_id = prepare_run(db, dataset_id=save_dataset(db, make_parsed(5)).id, panel=tiny_panel())
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    try:
        assert run_expected_scores(db, run_id) is None
    finally:
        db.conn.set_trace_callback(None)
    assert statements and not [s for s in statements if "label_probs" in s]
