"""The Panel page's "what a tie will do" sentence is true for every strategy (issue 23).

Before, one sentence ("a tied vote goes to the tied label that comes first in the priority")
was shown whatever the strategy, and for `majority` it was false: a 2-2 vote has no label with
more than half of the critics, so the panel abstains, whatever the priority says.

Each test reads what the sentence promises for a tied ballot (2 critics say `low`, 2 say `high`)
and checks that `judging.voting.strategies` decides exactly that, for every label strategy, tie policy
and fallback; so a change of a strategy that the sentence does not follow fails here.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from judging.panel.panel_model import Panel
from judging.panel.rubric import MARK_SCALE, RubricConfig
from judging.scales import Scale
from judging.verdicts import Verdict
from judging.voting.strategies import (
    STRATEGY_KINDS,
    VotingConfig,
    is_dataset_strategy,
    priority_order,
    vote,
    vote_dataset,
)
from pages.ui.panel.panel_draft import DRAFT_KEY, draft_from_panel
from pages.ui.panel.panel_editors import tie_sentence
from tests.test_app_smoke import no_exception

SCALE = Scale(kind="ordinal", labels=["low", "mid", "high"])
TIED = ("low", "low", "high", "high")
LABEL_STRATEGIES = sorted(name for name, kind in STRATEGY_KINDS.items() if kind != "score")


def _config(strategy: str, tie_policy: str, fallback: str | None) -> VotingConfig:
    # Nobody says the target: a plain vote ("any"), the first dissenter ("all-of").
    extra = {"target_label": "mid"} if strategy in ("any", "all-of") else {}
    return VotingConfig.model_validate({"strategy": strategy, "tie_policy": tie_policy,
                                        "priority": ["high"], "fallback": fallback, **extra})


def _decided(config: VotingConfig, labels: tuple[str, ...]) -> str | float | None:
    verdicts = [Verdict(critic=f"c{n}", item_id="x", label=label)
                for n, label in enumerate(labels)]
    if is_dataset_strategy(config.strategy):
        return vote_dataset([verdicts], {}, config, SCALE)[0].consensus
    return vote(verdicts, {}, config, SCALE).consensus


def _promised(sentence: str, config: VotingConfig, labels: tuple[str, ...]) -> str | None:
    """What the sentence says the panel decides for this tied ballot."""
    order = priority_order(config, SCALE)
    tied = sorted(set(labels), key=order.index)
    if "goes to the tied label that comes first" in sentence:
        return tied[0]
    if "goes to the tied label that comes last" in sentence:
        return tied[-1]
    if "the panel abstains" in sentence:
        return config.fallback
    if "comes last in the scale's order wins" in sentence:
        return max(labels, key=SCALE.rank)
    if "comes first in the scale's order wins" in sentence:
        return min(labels, key=SCALE.rank)
    if "the first critic (in panel order) that gave another label decides" in sentence:
        return next(label for label in labels if label != config.target_label)
    if "the label nearest the critics' mean expected score" in sentence:
        mean = sum(SCALE.rank(label) for label in labels) / len(labels)
        return min(SCALE.labels or [], key=lambda label: abs(SCALE.rank(label) - mean))
    raise AssertionError(f"the sentence promises nothing a reader can check: {sentence!r}")


@pytest.mark.parametrize("fallback", [None, "mid"])
@pytest.mark.parametrize("tie_policy", ["pessimistic", "optimistic", "abstain"])
@pytest.mark.parametrize("strategy", LABEL_STRATEGIES)
def test_the_sentence_says_what_the_vote_does_on_a_tie(
    strategy: str, tie_policy: str, fallback: str | None,
) -> None:
    config = _config(strategy, tie_policy, fallback)
    sentence = tie_sentence(config, SCALE)
    assert sentence, f"{strategy}: no sentence for a label scale"
    assert _decided(config, TIED) == _promised(sentence, config, TIED), sentence


def test_majority_says_it_abstains_and_never_names_the_priority() -> None:
    sentence = tie_sentence(_config("majority", "pessimistic", None), SCALE) or ""
    assert "goes to the tied label" not in sentence
    assert "no label with more than half" in sentence
    assert _decided(_config("majority", "pessimistic", None), TIED) is None


def test_any_says_the_target_wins_when_said() -> None:
    config = _config("any", "pessimistic", None)
    assert "When a critic says mid, that label wins" in (tie_sentence(config, SCALE) or "")
    assert _decided(config, ("low", "low", "high", "mid")) == "mid"


def test_score_panels_have_no_tie_and_rubric_panels_speak_of_marks() -> None:
    score = Scale(kind="score", min=0, max=1)
    assert tie_sentence(VotingConfig(strategy="mean"), score) is None
    rubric = RubricConfig.model_validate(
        {"criteria": [{"id": "right", "text": "It is right.", "weight": 1}]})
    config = VotingConfig.model_validate({"strategy": "plurality", "priority": ["UNMET"]})
    sentence = tie_sentence(config, score, rubric) or ""
    assert sentence.startswith("For each criterion's mark: a tied vote goes to the tied label")
    assert "UNMET" in sentence and set(MARK_SCALE.labels) <= set(sentence.replace(",", " ")
                                                                 .replace("(", " ")
                                                                 .replace(")", " ")
                                                                 .replace(".", " ").split())


@pytest.mark.parametrize("strategy", ["majority", "plurality", "unanimous"])
def test_the_panel_page_shows_the_strategys_sentence(app_db: object, strategy: str) -> None:
    panel = Panel.model_validate({
        "name": "tie check", "scale": SCALE.model_dump(mode="json"),
        "critics": [{"name": f"c{n}", "model": "sim-careful", "prompt_template": "Judge {text}"}
                    for n in range(4)],
        "voting": {"strategy": strategy, "priority": ["high"]},
    })
    at = AppTest.from_file("../app.py", default_timeout=60)
    at.session_state[DRAFT_KEY] = draft_from_panel(panel)
    at.switch_page("pages/panel.py")
    at.run()
    no_exception(at)
    shown = [i.value for i in at.info if "tie" in i.value.lower()]
    expected = tie_sentence(panel.voting, panel.scale)
    assert expected is not None
    assert len(shown) == 1 and shown[0].replace("\\", "").replace("\u2060", "") == expected
