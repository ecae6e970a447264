"""Spread and thresholds together, as Glacis' judges define them: the disagreement flag from the
spread (`max(scores) - min(scores) > max_spread`), the recommendation from the thresholds on the
aggregated score, and "escalate" below every band.

The tables are Glacis' own examples:
- the 0-3 scale defaults (`max_score` 3, `uphold_threshold` 2.0, `borderline_threshold` 1.0,
  `consensus_threshold` 1.0) and the score -> recommendation table, from
  https://github.com/Glacis-io/glacis-python/blob/main/docs/src/content/docs/sdk/python/judges.mdx
  ("Recommendation Logic", "JudgesConfig"), with the score pairs of its tests
  (Glacis-io/glacis-python tests/test_judges.py: TestReviewResult and TestJudgeRunner), and the
  2.75 of `to_wire_review` (docs/src/content/docs/reference/judges.mdx: two judges, 3 and 2.5);
- the binary 0-1 custom scale of the same page ("Example: Custom Scale": uphold 0.7, borderline
  0.4, consensus 0.2). The page gives that configuration without scores: the pairs below apply
  Glacis' documented rule to it (`JudgeRunner.run` in glacis/judges/base.py), and include the
  issue's .71 / .99.
"""

from __future__ import annotations

import pytest

from judging.scales import Scale
from judging.verdicts import FailureKind, PanelVerdict, Verdict
from judging.voting.strategies import VotingConfig, band, vote
from storage.datasets.dataset_store import save_dataset
from storage.panels import save_panel
from storage.results.consensus import load_consensus, write_consensus
from storage.results.export_files import export_frame
from storage.results.runs import create_run
from tests.fixtures_storage import make_parsed

GLACIS_DEFAULT = VotingConfig(strategy="mean", thresholds={"uphold": 2.0, "borderline": 1.0},
                              max_spread=1.0)
ZERO_TO_THREE = Scale(kind="score", min=0, max=3)
GLACIS_BINARY = VotingConfig(strategy="mean", thresholds={"uphold": 0.7, "borderline": 0.4},
                             max_spread=0.2)
ZERO_TO_ONE = Scale(kind="score", min=0, max=1)


def _scores(*values: float) -> list[Verdict]:
    return [Verdict(critic=f"j{n}", item_id="x", score=v) for n, v in enumerate(values)]


# (scores, final score, recommendation, Glacis' `consensus` flag)
DEFAULT_TABLE = [
    ((2.5, 3.0), 2.75, "uphold", True),       # test_consensus_true; to_wire_review's 2.75
    ((0.0, 3.0), 1.5, "borderline", False),   # test_consensus_false, test_max_disagreement
    ((2.0, 3.0), 2.5, "uphold", True),        # test_recommendation_uphold
    ((1.0, 1.5), 1.25, "borderline", True),   # test_recommendation_borderline
    ((0.0, 0.5), 0.25, "escalate", True),     # test_recommendation_escalate
    ((2.0, 2.0), 2.0, "uphold", True),        # ..._exact_boundary_uphold
    ((1.0, 1.0), 1.0, "borderline", True),    # ..._exact_boundary_borderline
    ((1.5,), 1.5, "borderline", True),        # test_averages_single_judge
    ((3.0, 3.0), 3.0, "uphold", True),        # test_all_max_scores
    ((0.0, 0.0), 0.0, "escalate", True),      # test_all_zero_scores
    ((1.0, 2.0), 1.5, "borderline", True),    # test_mixed_scores (spread 1.0 = threshold)
]


@pytest.mark.parametrize(("values", "final", "recommendation", "consensus"), DEFAULT_TABLE)
def test_glacis_default_scale(values: tuple[float, ...], final: float, recommendation: str,
                              consensus: bool) -> None:
    outcome = vote(_scores(*values), {}, GLACIS_DEFAULT, ZERO_TO_THREE)
    assert outcome.consensus == pytest.approx(final)
    assert outcome.recommendation == recommendation
    assert outcome.disagreement is (not consensus)


def test_glacis_custom_consensus_threshold() -> None:
    # test_consensus_threshold_custom: threshold 0.5 flags the 1.0 between 1 and 2.
    config = GLACIS_DEFAULT.model_copy(update={"max_spread": 0.5})
    outcome = vote(_scores(1.0, 2.0), {}, config, ZERO_TO_THREE)
    assert (outcome.recommendation, outcome.disagreement) == ("borderline", True)


BINARY_TABLE = [
    ((0.71, 0.99), 0.85, "uphold", False),    # the pair: one band, 0.28 apart
    ((0.8, 0.9), 0.85, "uphold", True),
    ((0.5, 0.6), 0.55, "borderline", True),
    ((0.7, 0.7), 0.7, "uphold", True),        # on the uphold line
    ((0.4, 0.4), 0.4, "borderline", True),    # on the borderline line
    ((0.2, 0.9), 0.55, "borderline", False),
    ((0.1, 0.3), 0.2, "escalate", True),      # below every band, and agreed
    ((0.0, 0.35), 0.175, "escalate", False),  # below every band, and apart
]


@pytest.mark.parametrize(("values", "final", "recommendation", "consensus"), BINARY_TABLE)
def test_glacis_binary_scale(values: tuple[float, ...], final: float, recommendation: str,
                             consensus: bool) -> None:
    outcome = vote(_scores(*values), {}, GLACIS_BINARY, ZERO_TO_ONE)
    assert outcome.consensus == pytest.approx(final)
    assert outcome.recommendation == recommendation
    assert outcome.disagreement is (not consensus)


def test_the_spread_is_not_ignored_when_thresholds_are_set() -> None:
    # Before: .71 and .99 with max_spread .05 were "agreement 1.0, no disagreement" because
    # both fall in the uphold band.
    config = VotingConfig(strategy="mean", thresholds={"uphold": 0.7, "borderline": 0.4,
                                                       "escalate": 0.0}, max_spread=0.05)
    outcome = vote(_scores(0.71, 0.99), {}, config, ZERO_TO_ONE)
    assert outcome.recommendation == "uphold"
    assert outcome.disagreement is True
    assert outcome.agreement == 0.0  # neither critic lies within 0.05 of the mean 0.85
    assert "spread 0.28 apart, more than max_spread 0.05" in (outcome.note or "")
    assert "uphold" in (outcome.note or "")


def test_below_every_band_is_escalate_with_the_flag_from_the_spread() -> None:
    # Before: recommendation None, agreement 0.0 and no disagreement.
    config = VotingConfig(strategy="mean", thresholds={"good": 0.8, "ok": 0.5}, max_spread=0.2)
    close = vote(_scores(0.1, 0.2), {}, config, ZERO_TO_ONE)
    assert close.recommendation == "escalate"
    assert close.counts == {"escalate": 2}
    assert (close.agreement, close.disagreement) == (1.0, False)
    assert "below every threshold (the lowest: ok from 0.5): escalate" in (close.note or "")
    apart = vote(_scores(0.0, 0.4), {}, config, ZERO_TO_ONE)
    assert (apart.recommendation, apart.disagreement) == ("escalate", True)


def test_thresholds_without_max_spread_still_split_by_band() -> None:
    config = VotingConfig(strategy="mean", thresholds={"uphold": 0.7, "borderline": 0.4})
    assert vote(_scores(0.71, 0.99), {}, config, ZERO_TO_ONE).disagreement is False
    split = vote(_scores(0.65, 0.75), {}, config, ZERO_TO_ONE)
    assert (split.recommendation, split.disagreement, split.agreement) == ("uphold", True, 0.5)


def test_a_failed_critic_is_still_a_disagreement() -> None:
    failed = Verdict(critic="j9", item_id="x", failure=FailureKind.ERROR, message="500")
    outcome = vote([*_scores(2.5, 3.0), failed], {}, GLACIS_DEFAULT, ZERO_TO_THREE)
    assert (outcome.recommendation, outcome.disagreement) == ("uphold", True)


def test_band_names_escalate_only_below_every_band() -> None:
    assert band(0.25, {"uphold": 2.0, "borderline": 1.0}) == "escalate"
    assert band(1.0, {"uphold": 2.0, "borderline": 1.0}) == "borderline"


def test_recommendation_and_flag_are_stored_and_shown(db) -> None:
    """The recommendation is the score panel's consensus label (and its `recommendation`
    column), the flag the `disagreement` column, and the reason the vote's note: Review's
    consensus line and the export's `consensus_note` show it. No new column is needed."""
    parsed = make_parsed(2, salt="spread-thresholds")
    dataset_id = save_dataset(db, parsed, name="d").id
    save_panel(db, panel_hash="spreadthr", name="p", yaml_text="name: p\n")
    run_id = create_run(db, dataset_id=dataset_id, panel_hash="spreadthr", critics=["j0", "j1"])
    config = VotingConfig(strategy="mean", thresholds={"uphold": 0.7, "borderline": 0.4},
                          max_spread=0.05)
    ids = [item.id for item in parsed.items]
    outcomes = [vote(_scores(0.71, 0.99), {}, config, ZERO_TO_ONE),
                vote(_scores(0.1, 0.12), {}, config, ZERO_TO_ONE)]
    write_consensus(db, run_id, [PanelVerdict(item_id=i, outcome=o, verdicts=[], strategy="mean")
                                 for i, o in zip(ids, outcomes, strict=True)])
    stored = {row["item_id"]: row for row in load_consensus(db, run_id)}
    assert (stored[ids[0]]["consensus"], stored[ids[0]]["recommendation"],
            stored[ids[0]]["disagreement"]) == ("uphold", "uphold", True)
    assert (stored[ids[1]]["consensus"], stored[ids[1]]["disagreement"]) == ("escalate", False)
    frame = export_frame(db, run_id).set_index("item_id")
    assert frame.loc[ids[0], "disagreement"]
    assert "more than max_spread 0.05" in frame.loc[ids[0], "consensus_note"]
    assert frame.loc[ids[1], "consensus"] == "escalate"
    assert "below every threshold" in frame.loc[ids[1], "consensus_note"]

    from pages.ui.review.review_evidence import consensus_line
    from storage.reviewing.review_queue import item_detail

    line = consensus_line(item_detail(db, run_id, ids[0]))
    assert line.startswith("consensus uphold")
    assert "the critics disagree" in line


# Per-critic agreement with the consensus follows the same rule as the vote's `agreement`.
# Hand-computed, max_spread 0.2, the consensus the mean (scores of j0, j1, j2):
#   i1  0.5  0.6  0.7   mean 0.6     all three within 0.2
#   i2  0.1  0.5  0.9   mean 0.5     j1 only (the others 0.4 away)
#   i3  0.3  0.3  0.45  mean 0.35    all three
#   i4  0.9  0.2  0.8   mean 0.6333  j2 only (0.1667; j0 0.2667, j1 0.4333)
# j0 backs 2 of 4, j1 3 of 4, j2 3 of 4. Compared for equality: j1 once (i2), the others never.
BACKING_SCORES = {"i1": (0.5, 0.6, 0.7), "i2": (0.1, 0.5, 0.9), "i3": (0.3, 0.3, 0.45),
                  "i4": (0.9, 0.2, 0.8)}
BACKING = {"j0": 0.5, "j1": 0.75, "j2": 0.75}


def _score_panel(voting: VotingConfig) -> object:
    from judging.panel.critics import Critic
    from judging.panel.panel_model import Panel

    return Panel(name="scores", scale=ZERO_TO_ONE, voting=voting, critics=[
        Critic(name=f"j{n}", model="sim-careful", prompt_template="Score {text}")
        for n in range(3)])


def test_per_critic_agreement_with_a_score_consensus_follows_max_spread(db, capsys) -> None:
    from judging.panel.panel_files import dump_panel
    from judging.runs.commands.cli import main as cli_main
    from judging.runs.stored.run_report import run_agreement_report
    from storage.results.calls import write_verdicts

    config = VotingConfig(strategy="mean", max_spread=0.2)
    parsed = make_parsed(4, salt="backing")
    ids = [item.id for item in parsed.items]
    dataset_id = save_dataset(db, parsed, name="d").id
    save_panel(db, panel_hash="backing", name="scores",
               yaml_text=dump_panel(_score_panel(config)))
    run_id = create_run(db, dataset_id=dataset_id, panel_hash="backing",
                        critics=["j0", "j1", "j2"])
    panel_verdicts = []
    for item_id, scores in zip(ids, BACKING_SCORES.values(), strict=True):
        verdicts = [Verdict(critic=f"j{n}", item_id=item_id, score=s)
                    for n, s in enumerate(scores)]
        write_verdicts(db, run_id, verdicts)
        panel_verdicts.append(PanelVerdict(item_id=item_id, verdicts=verdicts, strategy="mean",
                                           outcome=vote(verdicts, {}, config, ZERO_TO_ONE)))
    write_consensus(db, run_id, panel_verdicts)
    # The vote's own agreement per item, from the same rule: 3, 1, 3 and 1 of 3 back it.
    assert [round(pv.outcome.agreement * 3) for pv in panel_verdicts] == [3, 1, 3, 1]

    report = run_agreement_report(db, run_id, resamples=10)
    assert {c: p.value for c, p in report.vs_consensus.items()} == BACKING
    assert {c: p.n for c, p in report.vs_consensus.items()} == {"j0": 4, "j1": 4, "j2": 4}
    # `jurybox stats` prints the same report.
    assert cli_main(["stats", str(run_id), "--resamples", "10", "--db", db_path_of(db)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()
             if line.strip().startswith(("j0 ", "j1 ", "j2 "))}
    assert lines["j0"].split()[1] == "0.500" and lines["j1"].split()[1] == "0.750"


def db_path_of(db) -> str:
    return db.execute("PRAGMA database_list").fetchone()[2]


@pytest.mark.parametrize(("config", "expected"), [
    # Without max_spread: in the consensus's band (uphold from 0.7, borderline from 0.4).
    #   i1 mean 0.6 borderline: 0.5, 0.6 borderline; 0.7 uphold -> j0, j1
    #   i2 mean 0.5 borderline: 0.5 -> j1;  i3 mean 0.35 escalate: 0.3, 0.3 -> j0, j1
    #   i4 mean 0.6333 borderline: none (0.9, 0.8 uphold; 0.2 escalate)
    (VotingConfig(strategy="mean", thresholds={"uphold": 0.7, "borderline": 0.4}),
     {"j0": 0.5, "j1": 0.75, "j2": 0.0}),
    # Without either: equal to the consensus (i1 j1 0.6, i2 j1 0.5).
    (VotingConfig(strategy="mean"), {"j0": 0.0, "j1": 0.5, "j2": 0.0}),
])
def test_per_critic_agreement_without_max_spread_follows_the_bands_else_equality(
        config: VotingConfig, expected: dict[str, float]) -> None:
    from judging.analysis.agreement_report import agreement_report

    ratings = [(item, f"j{n}", s) for item, scores in BACKING_SCORES.items()
               for n, s in enumerate(scores)]
    consensus = {item: vote([Verdict(critic=f"j{n}", item_id=item, score=s)
                             for n, s in enumerate(scores)], {}, config, ZERO_TO_ONE).consensus
                 for item, scores in BACKING_SCORES.items()}
    report = agreement_report(ratings, scale=ZERO_TO_ONE, consensus=consensus, voting=config,
                              resamples=10)
    assert {c: p.value for c, p in report.vs_consensus.items()} == expected
