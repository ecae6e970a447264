"""Inspect AI logs read into a `VerdictSet`: real logs written by inspect_ai itself (a test-only
dependency), run offline with its mockllm models, read by our reader and checked against
`inspect_ai.log.read_eval_log` on the same file.

The task has two samples (one with a chat input and two acceptable targets), epochs=2, and four
scorers: `model_graded_qa` with one grader model, `model_graded_qa` with a panel of three
(Inspect's majority reducer keeps each grader's vote), a `multi_scorer` of two graders reduced
by `collect` (one value per grader), and `match()`. One score is edited afterwards (its history).
"""

from __future__ import annotations

import json
import pathlib
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest

from judging.errors import DataError
from storage.readers.eval_logs import read_inspect_log

inspect_ai = pytest.importorskip("inspect_ai")

# Each grader's grade for the question about 2+2 and the one about France ("X" is no grade).
GRADES = {"strict": ("I", "C"), "g1": ("C", "C"), "g2": ("I", "C"), "g3": ("C", "X"),
          "h1": ("C", "C"), "h2": ("I", "I")}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, pathlib.Path]]:
    """The .eval and the .json log of one task, Inspect's home folders kept in a temp folder."""
    home = tmp_path_factory.mktemp("inspect-home")
    with pytest.MonkeyPatch.context() as mp:
        for variable in ("HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
                         "XDG_STATE_HOME"):
            mp.setenv(variable, str(home / variable.lower()))
        mp.setenv("INSPECT_LOG_DIR", str(home / "logs"))
        mp.chdir(home)  # Inspect reads a .env from the working folder
        found = {fmt: _run(home / fmt, fmt) for fmt in ("eval", "json")}
        _edit_a_score(found["eval"])
        yield found


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


def _verdicts(vs: Any) -> dict[tuple[str, str, int], Any]:
    return {(v.item_id, v.judge, v.sample): v for v in vs.verdicts}


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_judges_samples_and_epochs(logs: dict[str, pathlib.Path], fmt: str) -> None:
    vs = read_inspect_log(logs[fmt])
    assert vs.format == "inspect"
    assert vs.source.startswith(f"Inspect log {logs[fmt].name}, task task, model mockllm/model")
    assert list(vs.judges) == [
        "model_graded_qa", "model_graded_qa1 / mockllm/g1", "model_graded_qa1 / mockllm/g2",
        "model_graded_qa1 / mockllm/g3", "multi_scorer / model_graded_qa mockllm/h1",
        "multi_scorer / model_graded_qa mockllm/h2", "match"]
    got = _verdicts(vs)
    assert {s for (_, _, s) in got} == {0, 1}  # epochs 1 and 2
    # g3 answers "GRADE: X" on France: no grade, so no verdict there.
    assert sorted((i, s) for (i, j, s) in got if j.endswith("/ mockllm/g3")) == [("q1", 0), ("q1", 1)]
    assert {v.label for v in vs.verdicts} == {"C", "I"}
    assert all(v.score is None for v in vs.verdicts)
    strict = [v for v in vs.verdicts if v.judge == "model_graded_qa"]
    assert all(v.reasoning and v.reasoning.startswith("strict weighed it.") for v in strict
               if not v.history)
    assert got[("q1", "match", 0)].reasoning == "An answer."  # match explains with the answer
    assert got[("2", "multi_scorer / model_graded_qa mockllm/h2", 1)].label == "I"


def test_items_are_samples_with_input_target_and_output(logs: dict[str, pathlib.Path]) -> None:
    vs = read_inspect_log(logs["json"])
    q1, chat = sorted(vs.items, key=lambda item: item.id != "q1")
    assert (q1.id, q1.fields["input"], q1.fields["target"], q1.fields["output"]) == \
        ("q1", "What is 2+2?", "4", "An answer.")
    assert q1.fields["outputs"] == ["An answer.", "An answer."]
    assert chat.id == "2"
    assert chat.fields["input"] == "system: Be brief.\nuser: Capital of France?"
    assert [m["content"] for m in chat.fields["input_messages"]] == ["Be brief.",
                                                                     "Capital of France?"]
    assert chat.fields["target"] == ["Paris", "paris"]
    assert chat.fields["metadata"] == {"topic": "geo"}
    # The targets are answers, not verdicts (the judges say C or I): no gold.
    assert q1.gold is None and chat.gold is None


def test_an_edited_score_keeps_its_history(logs: dict[str, pathlib.Path]) -> None:
    got = _verdicts(read_inspect_log(logs["eval"]))
    edited = got[("q1", "model_graded_qa", 0)]
    assert (edited.label, edited.reasoning) == ("C", "4 is right after all.")
    [before] = edited.history
    assert before["value"] == "I"
    assert before["explanation"].startswith("strict weighed it.")
    assert before["by"] is None  # the scorer's own grade
    assert got[("q1", "model_graded_qa", 1)].history == ()


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_same_samples_and_scores_as_inspect_reads(logs: dict[str, pathlib.Path], fmt: str) -> None:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(logs[fmt]))
    got = _verdicts(read_inspect_log(logs[fmt]))
    assert {str(s.id) for s in log.samples} == {item_id for (item_id, _, _) in got}
    expected = {}
    for sample in log.samples:
        for scorer, score in sample.scores.items():
            panel = (score.metadata or {}).get("panel")
            if panel:
                values = dict(zip(("g1", "g2", "g3"), panel["votes"], strict=True))
            elif isinstance(score.value, list):
                values = dict(zip(("h1", "h2"), score.value, strict=True))
            else:
                values = {None: score.value}
            for grader, value in values.items():
                if value is None:
                    continue
                judge = scorer if grader is None else next(
                    j for (_, j, _) in got if j.startswith(scorer + " /") and j.endswith(grader))
                expected[(str(sample.id), judge, sample.epoch - 1)] = value
    assert {key: v.label for key, v in got.items()} == expected


def test_a_log_is_read_one_sample_at_a_time(logs: dict[str, pathlib.Path], monkeypatch) -> None:
    """Every member Inspect compresses (zstd) is read by our own code, one sample at a time."""
    opened: list[str] = []
    real = json.loads
    monkeypatch.setattr("storage.readers.eval_logs.json.loads",
                        lambda text, *a, **k: opened.append(text[:20]) or real(text, *a, **k))
    with zipfile.ZipFile(logs["eval"]) as archive:
        assert {i.compress_type for i in archive.infolist()} == {93}
        samples = [i for i in archive.infolist() if i.filename.startswith("samples/")]
    read_inspect_log(logs["eval"].read_bytes(), "from-bytes.eval")
    assert len(opened) == 1 + len(samples)  # the header, then each sample once


def test_a_dict_value_is_refused_naming_the_scorer(logs: dict[str, pathlib.Path]) -> None:
    doc = json.loads(logs["json"].read_text())
    doc["samples"][0]["scores"]["match"]["value"] = {"helpful": 4, "harmless": 5}
    with pytest.raises(DataError, match="scorer 'match' gives a value per key \\(helpful, harmless\\)"):
        read_inspect_log(json.dumps(doc).encode(), "edited.json")


def test_a_collect_list_short_of_a_grader_is_refused(logs: dict[str, pathlib.Path]) -> None:
    doc = json.loads(logs["json"].read_text())
    doc["samples"][1]["scores"]["multi_scorer"]["value"] = ["C"]
    with pytest.raises(DataError, match="holds 1 values .* for its 2 graders"):
        read_inspect_log(json.dumps(doc).encode(), "edited.json")


def test_a_damaged_eval_is_a_sentence(logs: dict[str, pathlib.Path], tmp_path) -> None:
    raw = bytearray(logs["eval"].read_bytes())
    with zipfile.ZipFile(logs["eval"]) as archive:
        info = next(i for i in archive.infolist() if i.filename.startswith("samples/"))
    # Flip a byte inside the first sample's compressed data.
    at = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 8
    raw[at] ^= 0xFF
    with pytest.raises(DataError, match=f"damaged.eval: {info.filename} .*damaged"):
        read_inspect_log(bytes(raw), "damaged.eval")
    with pytest.raises(DataError, match="not an Inspect log"):
        read_inspect_log(b'{"version": 2}', "other.json")
    with pytest.raises(DataError, match="is a damaged .eval file"):
        read_inspect_log(b"PK\x03\x04 not really a zip", "short.eval")
