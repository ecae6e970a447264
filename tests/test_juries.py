"""Juries of juries (`judging.voting.juries`): how juries' decisions combine, what a panel of juries
refuses (one sentence each), and that flat panel files are untouched by the new field."""

from __future__ import annotations

import pathlib

import pytest

from judging.errors import ConfigError
from judging.panel.panel_files import dump_panel, load_panel, panel_from_dict, panel_hash, panel_to_dict
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.verdicts import FailureKind, Verdict, VoteOutcome
from judging.voting.juries import JuryConfig, combine_juries, vote_juries
from judging.voting.strategies import VotingConfig

DEMO = pathlib.Path(__file__).resolve().parent.parent / "judging" / "demo"
YESNO = Scale(kind="yesno")
SCORE = Scale(kind="score", min=0.0, max=1.0)


def _outcome(consensus: str | float | None, *, agreement: float | None = 1.0,
             disagreement: bool = False, failed: int = 0) -> VoteOutcome:
    return VoteOutcome(consensus=consensus, agreement=agreement, disagreement=disagreement,
                       failed=failed)


def _juries(*names: str, weights: dict[str, float] | None = None) -> list[JuryConfig]:
    return [JuryConfig(name=n, critics=[f"{n}-critic"], weight=(weights or {}).get(n, 1.0))
            for n in names]


# (top voting, each jury's decision in order, weights, expected top decision, expected
# disagreement). Label juries on a yes/no scale, "yes" = accept.
COMBINATIONS = [
    # all-of: accept only if every jury accepts
    ({"strategy": "all-of", "target_label": "yes"}, ["yes", "yes"], None, "yes", False),
    ({"strategy": "all-of", "target_label": "yes"}, ["yes", "no"], None, "no", True),
    ({"strategy": "all-of", "target_label": "yes"}, ["no", "yes"], None, "no", True),
    ({"strategy": "all-of", "target_label": "yes"}, ["yes", "yes", "no"], None, "no", True),
    # a jury that abstained never accepts: the top vote abstains (no fallback) ...
    ({"strategy": "all-of", "target_label": "yes"}, ["yes", None], None, None, True),
    # ... or falls back, or counts the abstention as the error label
    ({"strategy": "all-of", "target_label": "yes", "fallback": "no"}, ["yes", None], None,
     "no", True),
    ({"strategy": "all-of", "target_label": "yes", "error_policy": "count_as",
      "error_label": "no"}, ["yes", None], None, "no", True),
    # a refusal beats an abstention
    ({"strategy": "all-of", "target_label": "yes"}, [None, "no"], None, "no", True),
    # majority over juries: more than half of ALL juries
    ({"strategy": "majority"}, ["yes", "yes", "no"], None, "yes", True),
    ({"strategy": "majority"}, ["yes", None, "no"], None, None, True),
    ({"strategy": "majority", "fallback": "no"}, ["yes", None, "no"], None, "no", True),
    # weighted over juries: the jury weights decide
    ({"strategy": "weighted"}, ["yes", "no", "no"], {"a": 3.0}, "yes", True),
    ({"strategy": "weighted"}, ["yes", "no", "no"], {"a": 1.5}, "no", True),
    # unanimous and plurality
    ({"strategy": "unanimous"}, ["no", "no"], None, "no", False),
    ({"strategy": "unanimous"}, ["no", "yes"], None, None, True),
    ({"strategy": "plurality", "priority": ["no", "yes"]}, ["no", "yes"], None, "no", True),
]


@pytest.mark.parametrize(("voting", "decided", "weights", "expected", "split"), COMBINATIONS)
def test_combining_the_juries_decisions(voting: dict, decided: list[str | None],
                                        weights: dict[str, float] | None,
                                        expected: str | None, split: bool) -> None:
    names = "abc"[: len(decided)]
    juries = _juries(*names, weights=weights)
    outcomes = {n: _outcome(d, agreement=None if d is None else 1.0)
                for n, d in zip(names, decided, strict=True)}
    top = combine_juries(outcomes, juries, VotingConfig(**voting), YESNO, item_id="i1")
    assert top.consensus == expected
    assert top.disagreement is split
    assert list(top.juries) == list(names)  # every jury's own outcome, in panel order
    if None in decided:
        # An abstaining jury is named as such, not reported as a failed critic.
        abstained = [n for n, d in zip(names, decided, strict=True) if d is None]
        assert top.note is not None and f"{', '.join(abstained)} gave no decision" in top.note
        assert "critics failed" not in top.note


def test_a_split_jury_flags_the_item_even_when_the_juries_agree() -> None:
    juries = _juries("safety", "quality")
    outcomes = {"safety": _outcome("yes"),
                "quality": _outcome("yes", agreement=2 / 3, disagreement=True, failed=1)}
    top = combine_juries(outcomes, juries, VotingConfig(strategy="all-of", target_label="yes"),
                         YESNO)
    assert top.consensus == "yes"
    assert top.agreement == 1.0  # both juries back it
    assert top.disagreement  # but the quality jury was split
    assert top.note == "split within jury quality"
    assert top.failed == 1  # critics that failed, over every jury
    assert top.counts == {"yes": 2}


def test_each_jury_votes_with_its_own_strategy_over_its_own_critics() -> None:
    def verdict(critic: str, label: str | None) -> Verdict:
        if label is None:
            return Verdict(critic=critic, item_id="x", failure=FailureKind.ERROR, message="boom")
        return Verdict(critic=critic, item_id="x", label=label)

    juries = [
        JuryConfig(name="safety", critics=["s1", "s2"],
                   voting=VotingConfig(strategy="any", target_label="no")),
        JuryConfig(name="quality", critics=["q1", "q2", "q3"],
                   voting=VotingConfig(strategy="majority")),
    ]
    verdicts = [verdict("s1", "yes"), verdict("s2", "no"), verdict("q1", "yes"),
                verdict("q2", "yes"), verdict("q3", None)]
    top = vote_juries(verdicts, juries, {}, VotingConfig(strategy="all-of", target_label="yes"),
                      YESNO)
    assert top.juries["safety"].consensus == "no"  # one "no" is enough for this jury
    assert top.juries["quality"].consensus == "yes"  # 2 of 3 critics, one failed
    assert top.juries["quality"].failed == 1
    assert top.consensus == "no"
    assert top.failed == 1


def test_score_juries_combine_by_a_score_strategy() -> None:
    juries = _juries("a", "b", weights={"a": 3.0})
    outcomes = {"a": _outcome(0.9), "b": _outcome(0.5)}
    top = combine_juries(outcomes, juries, VotingConfig(strategy="weighted-mean"), SCORE)
    assert top.consensus == pytest.approx((3 * 0.9 + 0.5) / 4)
    top = combine_juries(outcomes, juries, VotingConfig(strategy="min"), SCORE)
    assert top.consensus == pytest.approx(0.5)


# -- panels of juries: what is refused, in one sentence each -----------------------------------


def _panel_data(**changes: object) -> dict:
    data = {
        "scale": {"kind": "yesno"},
        "voting": {"strategy": "all-of", "target_label": "yes"},
        "critics": [{"name": n, "model": "sim-careful", "prompt_template": "Fine? {text}"}
                    for n in ("s1", "s2", "q1", "q2")],
        "juries": [{"name": "safety", "critics": ["s1", "s2"]},
                   {"name": "quality", "critics": ["q1", "q2"],
                    "voting": {"strategy": "majority"}}],
    }
    data.update(changes)
    return data


def test_a_panel_of_juries_loads_and_keeps_its_hash_through_a_file() -> None:
    panel = panel_from_dict(_panel_data())
    assert [j.name for j in panel.juries] == ["safety", "quality"]
    again = load_panel(dump_panel(panel))
    assert again == panel and panel_hash(again) == panel_hash(panel)


REFUSED = [
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"]},
                 {"name": "quality", "critics": ["q1", "s2"]}]},
     "juries[1].critics[1]: critic 's2' already sits in jury 'safety'; critic names must be "
     "unique across juries"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2", "q1", "q2"]},
                 {"name": "quality", "critics": []}]},
     "juries[1].critics: jury 'quality' has no critics, so it could never decide"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"]},
                 {"name": "quality", "critics": ["q1", "q2"],
                  "voting": {"strategy": "most-votes"}}]},
     "juries[1].voting.strategy: unknown strategy 'most-votes'; choose one of"),
    ({"voting": {"strategy": "best-of"}}, "voting.strategy: unknown strategy 'best-of'"),
    ({"voting": {"strategy": "all-of"}},
     "voting.target_label: the 'all-of' strategy needs the label every member must give"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"]},
                 {"name": "quality", "critics": ["q1", "q22"]}]},
     "juries[1].critics[1]: no critic of the panel is named 'q22'; did you mean 'q2'?"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"]},
                 {"name": "quality", "critics": ["q1"]}]},
     "critics[3]: critic 'q2' sits in no jury, so its verdict would count nowhere"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"]},
                 {"name": "safety", "critics": ["q1", "q2"]}]},
     "juries[1].name: 'safety' is already the name of juries[0]"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"],
                  "voting": {"strategy": "plurality", "fallback": "maybe"}},
                 {"name": "quality", "critics": ["q1", "q2"]}]},
     "juries[0].voting.fallback: 'maybe' is not a label of the scale"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"],
                  "voting": {"strategy": "dawid-skene"}},
                 {"name": "quality", "critics": ["q1", "q2"]}]},
     "juries[0].voting.strategy: 'dawid-skene' needs the whole dataset"),
    ({"voting": {"strategy": "dawid-skene"}}, "voting.strategy: 'dawid-skene' needs the whole "
     "dataset, but the top vote of a panel of juries decides item by item"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"], "weight": 0},
                 {"name": "quality", "critics": ["q1", "q2"], "weight": 0}]},
     "juries: every jury has weight 0"),
    ({"juries": [{"name": "safety", "critics": ["s1", "s2"], "wieght": 2},
                 {"name": "quality", "critics": ["q1", "q2"]}]},
     "juries[0].wieght: unknown field; did you mean 'weight'?"),
]


@pytest.mark.parametrize(("changes", "sentence"), REFUSED)
def test_a_bad_panel_of_juries_is_refused_with_a_sentence(changes: dict, sentence: str) -> None:
    with pytest.raises(ConfigError) as caught:
        panel_from_dict(_panel_data(**changes))
    message = str(caught.value)
    assert message.startswith(sentence), message
    assert "\n" not in message


def test_juries_refuse_tiers() -> None:
    data = _panel_data()
    data["critics"][3]["tier"] = 1
    with pytest.raises(ConfigError, match=r"^juries: a panel of juries asks every critic"):
        panel_from_dict(data)


def test_a_panel_built_in_python_is_checked_too() -> None:
    critics = panel_from_dict(_panel_data()).critics
    with pytest.raises(ConfigError, match="has no critics"):
        Panel(scale=YESNO, critics=critics,
              juries=[JuryConfig(name="a", critics=["s1", "s2", "q1", "q2"]),
                      JuryConfig(name="b")])


@pytest.mark.parametrize("path", sorted(p for p in DEMO.glob("*.yaml")
                                        if p.name != "juries_panel.yaml"),
                         ids=lambda p: p.name)
def test_old_panel_files_load_unchanged(path: pathlib.Path) -> None:
    panel = load_panel(path)
    assert panel.juries == []
    canonical = panel_to_dict(panel)
    assert "juries" not in canonical  # so the content hash of every old file stays the same
    assert panel_hash(load_panel(dump_panel(panel))) == panel_hash(panel)
    # A flat panel votes as before: no jury outcomes on its decisions.
    verdicts = [Verdict(critic=c.name, item_id="x", label=panel.scale.labels[0])
                for c in panel.critics] if panel.scale.labels and not panel.rubric.active else []
    if verdicts:
        assert panel.vote(verdicts).juries == {}


def test_the_demo_panel_of_juries() -> None:
    panel = load_panel(DEMO / "juries_panel.yaml")
    assert [(j.name, j.critics, j.voting.strategy) for j in panel.juries] == [
        ("quality", ["careful", "lenient"], "weighted"), ("safety", ["strict", "flaky"], "any")]
    assert panel.voting.strategy == "all-of" and panel.voting.target_label == "KEEP"


def test_calibration_weighs_critics_inside_their_juries() -> None:
    from judging.analysis.calibration import calibrate

    panel = panel_from_dict(_panel_data())
    # s2 and q2 always right, s1 and q1 always wrong, on 8 items the humans labelled "yes".
    verdicts = {
        f"i{n}": [Verdict(critic=c, item_id=f"i{n}", label="yes" if c in ("s2", "q2") else "no")
                  for c in ("s1", "s2", "q1", "q2")]
        for n in range(8)}
    humans = dict.fromkeys(verdicts, "yes")
    result = calibrate(panel, verdicts, humans)
    suggested = result.suggested
    assert [j.voting.strategy for j in suggested.juries] == ["weighted", "weighted"]
    assert suggested.voting == panel.voting  # the vote over the juries is left as it is
    # Voted again by juries: now and with the suggested weights (the right critics win).
    # Now: quality's majority is split 1-1, so it abstains, and all-of with it.
    assert set(result.projection.before.values()) == {None}
    assert set(result.projection.after.values()) == {"yes"}
