"""Prompt templates are checked when the panel is built (issue 22, item 7): a template that
cannot show the item (an unclosed brace, a positional field, no field at all, ...) is refused
with a sentence naming the critic's field, the problem and the fix, before any call is sent.
Before, such a template passed the build check, every call failed as critic_error, and the
run was marked done."""

from __future__ import annotations

import pathlib

import pydantic
import pytest
import yaml

from judging.errors import ConfigError
from judging.panel.critics import Critic
from judging.panel.panel_files import load_panel
from judging.panel.prompt_syntax import template_problem
from judging.runs.commands.cli import main
from tests.fixtures_simulator import SimulatorFactory

DEMO_PANELS = sorted((pathlib.Path(__file__).parents[1] / "judging" / "demo").glob("*.yaml"))


def panel_text(template: str) -> str:
    """A panel whose second critic has `template` (the first one is fine)."""
    critics = [
        {"name": "good", "model": "sim-careful", "prompt_template": "Judge {text}"},
        {"name": "broken", "model": "sim-careful", "prompt_template": template},
    ]
    return yaml.safe_dump({"schema_version": 1, "name": "p", "scale": {"kind": "yesno"},
                           "critics": critics}, sort_keys=False)


@pytest.mark.parametrize(
    ("template", "problem", "fix"),
    [
        ("Is {question good?", "'{question good?' is never closed", "write {question}"),
        ("{0}", "'{0}' is a positional field", "write the field's name"),
        ("Judge {}", "'{}' is a positional field", "{{}} for literal braces"),
        ("Is this spam? Answer yes or no.", "has no {field} placeholder",
         "add the fields to judge, e.g. {text}"),
        ("Judge {text}}", "closes no '{'", "write }} for a literal brace"),
        ("Judge { text }", "spaces inside the braces", "write {text}"),
        ("Judge {text:>10}", "format, conversion or attribute", "write {text}"),
        ("Judge {text!r}", "format, conversion or attribute", "write {text}"),
        ("Judge {{ text }}", "literal text in Jurybox", "write {text}"),
    ],
)
def test_a_broken_template_is_refused_naming_the_field_problem_and_fix(
        template: str, problem: str, fix: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_panel(panel_text(template))
    message = str(caught.value)
    assert message.startswith("critics[1].prompt_template: ")
    assert problem in message and fix in message
    assert message.count("prompt_template") == 1  # one sentence, about that critic only


@pytest.mark.parametrize("field", ["system_prompt", "reason_prompt", "verify_prompt"])
def test_a_field_in_a_text_that_is_never_filled_is_refused(field: str) -> None:
    # These are sent as they are (`judging.panel.compound` appends the step instructions as text).
    data = yaml.safe_load(panel_text("Judge {text}"))
    data["critics"][1].update({field: "Think about {text} first.", "kind": "self-verify"})
    with pytest.raises(ConfigError) as caught:
        load_panel(yaml.safe_dump(data))
    assert str(caught.value) == (
        f"critics[1].{field}: {{text}} would be sent as it is: only prompt_template fills in "
        "fields (and shows the item); move it there, or write text without braces")
    data["critics"][1][field] = 'Answer like {"label": "yes"}.'  # a JSON example: fine
    assert load_panel(yaml.safe_dump(data)).critics[1].kind == "self-verify"


def test_a_lone_critic_is_refused_too() -> None:
    # A notebook user builds critics without a panel file.
    with pytest.raises(pydantic.ValidationError, match="is never closed"):
        Critic(name="c", model="m", prompt_template="Is {question good?")


@pytest.mark.parametrize(
    "template",
    [
        "Judge {text}",
        'Judge {text}. Answer like {{"label": "yes"}}.',
        'Judge {text}. Answer like {"label": "yes"}.',  # single-brace JSON stays literal
        'Judge {text}. Shape: {"a": {"b": [1, 2]}, "c": 3 }',
        "Judge {text} against {reference}; score: {score: 1} is literal",
        "{_private1}",
    ],
)
def test_templates_that_render_are_accepted(template: str) -> None:
    assert template_problem(template) is None
    assert load_panel(panel_text(template)).critics[1].prompt_template == template


@pytest.mark.parametrize("path", DEMO_PANELS, ids=lambda p: p.name)
def test_every_demo_panel_still_loads(path: pathlib.Path) -> None:
    assert load_panel(path).critics


def test_the_cli_refuses_a_broken_template_before_any_call(
        simulator_factory: SimulatorFactory, tmp_path: pathlib.Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "cli.db"))
    server = simulator_factory()
    data = tmp_path / "d.csv"
    data.write_text("id,question\n1,a\n2,b\n", encoding="utf-8")
    panel = yaml.safe_load(panel_text("Is {question good?"))
    for critic in panel["critics"]:
        critic.update(vendor="custom", base_url=server.base_url)
    panel["critics"][0]["prompt_template"] = "Judge {question}"
    panel_file = tmp_path / "p.yaml"
    panel_file.write_text(yaml.safe_dump(panel), encoding="utf-8")
    assert main(["judge", "--data", str(data), "--panel", str(panel_file), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "critics[1].prompt_template: the '{' in '{question good?' is never closed" in err
    assert "Traceback" not in err
    assert server.stats()["total"] == 0  # refused before any call was paid


def test_the_panel_page_says_what_is_wrong_and_adding_a_critic_still_works(
        demo_db: pathlib.Path) -> None:
    from pages.ui.panel.panel_draft import DRAFT_KEY, widget_key
    from tests.test_app_smoke import all_text, no_exception, open_page

    at = open_page("panel")
    key = widget_key(at.session_state[DRAFT_KEY], "critics.0.prompt_template")
    at.text_area(key=key).set_value("Is {parent right?").run()
    no_exception(at)
    shown = all_text(at).replace("\\", "").replace("\u2060", "")  # as markdown escapes it
    assert ("critics[0].prompt_template: the '{' in '{parent right?' is never closed; write "
            "{parent} to show a field") in shown
    # A critic of another vendor starts from a prompt that works, not from the broken one.
    at.selectbox(key="add_preset").set_value("openai").run()
    at.button(key="add_critic").click().run()
    no_exception(at)
    critics = at.session_state[DRAFT_KEY]["critics"]
    assert len(critics) == 2 and template_problem(critics[1]["prompt_template"]) is None
