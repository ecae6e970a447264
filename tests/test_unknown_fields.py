"""A typo in a field name is refused, with the same "did you mean" sentence, whether the panel
is built in Python or read from a file (one check: `judging.known_fields.StrictModel`)."""

from __future__ import annotations

import re
import typing
from typing import Any

import pydantic
import pytest
import yaml

from judging.engine.budget import BudgetCap
from judging.errors import ConfigError
from judging.known_fields import StrictModel
from judging.panel.critics import Critic
from judging.panel.panel_files import import_prompt_yaml, load_panel, validation_message
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.voting.strategies import VotingConfig

CRITIC = {"name": "strict", "model": "sim-strict", "prompt_template": "Judge {text}."}
SCALE = {"kind": "yesno"}


def _panel_file(**changes: Any) -> str:
    data: dict[str, Any] = {"schema_version": 1, "scale": dict(SCALE), "critics": [dict(CRITIC)],
                            "voting": {"strategy": "plurality"}}
    for path, value in changes.items():
        target: Any = data
        *parents, last = path.split("__")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value
    return yaml.safe_dump(data)


def _refusal(build: typing.Callable[[], object]) -> str:
    """The one sentence a constructor refuses with."""
    with pytest.raises(pydantic.ValidationError) as caught:
        build()
    (error,) = caught.value.errors()
    return str(error["msg"])


def _file_refusal(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_panel(text)
    return str(caught.value)


# (what is built in Python, the same typo in a panel file, where the file's field sits, sentence)
TYPOS = [
    pytest.param(
        lambda: Panel(scale=Scale(**SCALE), critics=[Critic(**CRITIC)],
                      votng=VotingConfig(strategy="majority")),
        _panel_file(votng={"strategy": "majority"}), "",
        "votng: unknown field; did you mean 'voting'?", id="Panel(votng=)"),
    pytest.param(
        lambda: Critic(**CRITIC, temprature=1.2),
        _panel_file(critics__0__temprature=1.2), "critics[0].",
        "temprature: unknown field; did you mean 'temperature'?", id="Critic(temprature=)"),
    pytest.param(
        lambda: VotingConfig(stratgy="majority"),
        _panel_file(voting__stratgy="majority"), "voting.",
        "stratgy: unknown field; did you mean 'strategy'?", id="VotingConfig(stratgy=)"),
]


@pytest.mark.parametrize(("build", "file_text", "where", "sentence"), TYPOS)
def test_a_typo_is_refused_alike_by_the_model_and_the_panel_file(
    build: typing.Callable[[], object], file_text: str, where: str, sentence: str
) -> None:
    assert _refusal(build) == sentence
    assert _file_refusal(file_text) == where + sentence


def test_the_file_sentence_is_the_model_sentence_with_its_path() -> None:
    # A panel built from plain data in Python (as the Panel page does) reads like the file.
    data = yaml.safe_load(_panel_file(critics__0__temprature=1.2))
    with pytest.raises(pydantic.ValidationError) as caught:
        Panel.model_validate(data)
    assert validation_message(caught.value) == (
        "critics[0].temprature: unknown field; did you mean 'temperature'?")


def test_a_typo_with_no_near_field_lists_the_fields() -> None:
    sentence = _refusal(lambda: VotingConfig(zzz=1))
    fields = ", ".join(VotingConfig.model_fields)
    assert sentence == f"zzz: unknown field; fields: {fields}"


def test_other_models_of_the_library_refuse_typos_too() -> None:
    assert _refusal(lambda: Scale(kind="yesno", lables=["a", "b"])) == (
        "lables: unknown field; did you mean 'labels'?")
    assert _refusal(lambda: BudgetCap(usd=1.0, tokns=5)) == (
        "tokns: unknown field; did you mean 'tokens'?")


def test_an_imported_prompt_refuses_a_typo_in_its_critic_fields() -> None:
    text = "user_prompt_template: 'Judge {{ text }}'\n"
    with pytest.raises(ConfigError, match=re.escape(
            "temprature: unknown field; did you mean 'temperature'?")):
        import_prompt_yaml(text, name="imported", model="m", temprature=0.5)


def test_a_refused_key_field_does_not_print_the_key() -> None:
    key = "sk-" + "a1b2c3d4" * 4
    with pytest.raises(pydantic.ValidationError) as caught:
        Critic(**CRITIC, api_key=key)
    assert key not in str(caught.value)
    assert "api_key: unknown field; did you mean 'api_key_env'?" in str(caught.value)


def _models_in(annotation: Any) -> set[type[pydantic.BaseModel]]:
    found: set[type[pydantic.BaseModel]] = set()
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        found.add(annotation)
        for field in annotation.model_fields.values():
            found |= _models_in(field.annotation)
    for arg in typing.get_args(annotation):
        found |= _models_in(arg)
    return found


def test_every_model_of_a_panel_is_strict() -> None:
    models = _models_in(Panel)
    # The panel, its scale, critics, voting, cascade, limits, curation, pairwise and rubric.
    assert len(models) >= 9
    assert [m.__name__ for m in models if not issubclass(m, StrictModel)] == []
