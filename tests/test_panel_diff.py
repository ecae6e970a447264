"""`judging.panel.panel_diff.panel_changes`: what a second panel version changed, in words."""

from __future__ import annotations

from judging.demo import demo_panel_path
from judging.panel.panel_diff import panel_changes
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from tests.fixtures_compare import demo_panel_v2


def demo() -> Panel:
    return load_panel(demo_panel_path())


def test_the_demo_second_version_swaps_one_critic() -> None:
    assert panel_changes(demo(), demo_panel_v2()) == [
        "critic 'lenient' removed", "critic 'second' added (simulated, sim-biased)"]


def test_the_same_panel_or_a_new_name_changes_nothing() -> None:
    assert panel_changes(demo(), demo()) == []
    assert panel_changes(demo(), demo().model_copy(update={"name": "renamed"})) == []


def test_strategy_parameters_and_prompts_are_named() -> None:
    old = demo()
    voting = old.voting.model_copy(update={"strategy": "weighted"})
    critics = [c.model_copy(update={"temperature": 0.3, "prompt_template": c.prompt_template
                                    + "\nAnswer in JSON."}) if c.name == "careful" else c
               for c in old.critics]
    new = old.model_copy(update={"voting": voting, "critics": critics})
    assert panel_changes(old, new) == [
        "critic 'careful': prompt_template changed",
        "critic 'careful': temperature: 0.0 -> 0.3",
        "voting: strategy: 'plurality' -> 'weighted'",
    ]


def test_reordered_critics_are_said() -> None:
    old = demo()
    new = old.model_copy(update={"critics": list(reversed(old.critics))})
    assert panel_changes(old, new) == ["critics reordered"]
