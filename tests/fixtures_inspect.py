"""Real Inspect AI logs for the tests, written by inspect_ai itself (a test-only dependency) with
its mockllm models, offline: every model output states its token usage, so mockllm counts none
(tiktoken would download its tables), and Inspect's home folders (data, cache, traces) are in a
temp folder, so nothing is left in the user's home.

`inspect_logs`: the .eval and the .json log of one task: two samples (one with a chat input and
two acceptable targets), epochs=2, and four scorers: `model_graded_qa` with one grader model,
`model_graded_qa` with a panel of three (Inspect's majority reducer keeps each grader's vote), a
`multi_scorer` of two graders reduced by `collect` (one value per grader), and `match()`. In the
.eval log, q1's epoch 1 `model_graded_qa` score is edited afterwards (its history).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

# Each grader's grade for the question about 2+2 and the one about France ("X" is no grade).
GRADES = {"strict": ("I", "C"), "g1": ("C", "C"), "g2": ("I", "C"), "g3": ("C", "X"),
          "h1": ("C", "C"), "h2": ("I", "I")}


def _quiet_home(mp: pytest.MonkeyPatch, home: pathlib.Path) -> None:
    for variable in ("HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
                     "XDG_STATE_HOME"):
        mp.setenv(variable, str(home / variable.lower()))
    mp.setenv("INSPECT_LOG_DIR", str(home / "logs"))
    mp.chdir(home)  # Inspect reads a .env from the working folder


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """The .eval and the .json log of one task (see the module's docstring)."""
    pytest.importorskip("inspect_ai")
    home = tmp_path_factory.mktemp("inspect-home")
    with pytest.MonkeyPatch.context() as mp:
        _quiet_home(mp, home)
        found = {fmt: _run(home / fmt, fmt) for fmt in ("eval", "json")}
        _edit_a_score(found["eval"])
    return found


@pytest.fixture
def inspect_home(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """Inspect's home folders in a temp folder, for a test that calls Inspect itself."""
    home = tmp_path / "inspect-home"
    home.mkdir()
    _quiet_home(monkeypatch, home)
    return home


def _mock(name: str, grades: tuple[str, str] | None = None) -> Any:
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def reply(messages: list[Any], *_: Any) -> Any:
        # Graded by the question, not by call order: samples run concurrently.
        grade = grades and grades["2+2" not in messages[-1].text]
        text = f"{name} weighed it.\nGRADE: {grade}" if grades else "An answer."
        output = ModelOutput.from_content(model=name, content=text)
        # Usage given, so mockllm counts no tokens (tiktoken would download its tables).
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return get_model(f"mockllm/{name}", custom_outputs=reply)


def _run(log_dir: pathlib.Path, fmt: str) -> pathlib.Path:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.scorer import match, model_graded_qa, multi_scorer
    from inspect_ai.solver import generate

    samples = [
        Sample(id="q1", input="What is 2+2?", target="4"),
        Sample(id=2, input=[ChatMessageSystem(content="Be brief."),
                            ChatMessageUser(content="Capital of France?")],
               target=["Paris", "paris"], metadata={"topic": "geo"}),
    ]
    graded = [
        model_graded_qa(model=_mock("strict", GRADES["strict"])),
        model_graded_qa(model=[_mock(g, GRADES[g]) for g in ("g1", "g2", "g3")]),
        multi_scorer([model_graded_qa(model=_mock(g, GRADES[g])) for g in ("h1", "h2")],
                     "collect"),
        match(),
    ]
    task = Task(dataset=samples, solver=[generate()], scorer=graded, epochs=2)
    [log] = eval(task, model=_mock("model"), log_dir=str(log_dir), log_format=fmt,
                 display="none")
    assert log.status == "success", log.error
    return pathlib.Path(log.location)


def _edit_a_score(path: pathlib.Path) -> None:
    from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
    from inspect_ai.scorer import ScoreEdit

    log = read_eval_log(str(path))
    edit_score(log, "q1", "model_graded_qa", ScoreEdit(
        value="C", explanation="4 is right after all.",
        provenance=ProvenanceData(author="ana", reason="the grader misread")), epoch=1)
    write_eval_log(log, str(path))
