"""Inspect AI logs read into a `VerdictSet`: real logs written by inspect_ai itself (a test-only
dependency), run offline with its mockllm models, read by our reader and checked against
`inspect_ai.log.read_eval_log` on the same file.

The logs (`inspect_logs`, tests/fixtures_inspect.py) hold two samples, epochs=2 and four scorers,
one of them a grader panel and one a `multi_scorer`; one score is edited afterwards.
"""

from __future__ import annotations

import json
import pathlib
import zipfile
from typing import Any

import pytest

from judging.errors import DataError
from storage.datasets.readers.eval_logs import read_inspect_log

pytest.importorskip("inspect_ai")

def _verdicts(vs: Any) -> dict[tuple[str, str, int], Any]:
    return {(v.item_id, v.judge, v.sample): v for v in vs.verdicts}


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_judges_samples_and_epochs(inspect_logs: dict[str, pathlib.Path], fmt: str) -> None:
    vs = read_inspect_log(inspect_logs[fmt])
    assert vs.format == "inspect"
    assert vs.source.startswith(f"Inspect log {inspect_logs[fmt].name}, task task, model mockllm/model")
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


def test_items_are_samples_with_input_target_and_output(inspect_logs: dict[str, pathlib.Path]) -> None:
    vs = read_inspect_log(inspect_logs["json"])
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


def test_an_edited_score_keeps_its_history(inspect_logs: dict[str, pathlib.Path]) -> None:
    got = _verdicts(read_inspect_log(inspect_logs["eval"]))
    edited = got[("q1", "model_graded_qa", 0)]
    assert (edited.label, edited.reasoning) == ("C", "4 is right after all.")
    [before] = edited.history
    assert before["value"] == "I"
    assert before["explanation"].startswith("strict weighed it.")
    assert before["by"] is None  # the scorer's own grade
    assert got[("q1", "model_graded_qa", 1)].history == ()


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_same_samples_and_scores_as_inspect_reads(inspect_logs: dict[str, pathlib.Path], fmt: str,
                                                  inspect_home: pathlib.Path) -> None:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(inspect_logs[fmt]))
    got = _verdicts(read_inspect_log(inspect_logs[fmt]))
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


def test_a_log_is_read_one_sample_at_a_time(inspect_logs: dict[str, pathlib.Path], monkeypatch) -> None:
    """Every member Inspect compresses (zstd) is read by our own code, one sample at a time."""
    opened: list[str] = []
    real = json.loads
    monkeypatch.setattr("storage.datasets.readers.eval_logs.json.loads",
                        lambda text, *a, **k: opened.append(text[:20]) or real(text, *a, **k))
    with zipfile.ZipFile(inspect_logs["eval"]) as archive:
        assert {i.compress_type for i in archive.infolist()} == {93}
        samples = [i for i in archive.infolist() if i.filename.startswith("samples/")]
    read_inspect_log(inspect_logs["eval"].read_bytes(), "from-bytes.eval")
    assert len(opened) == 1 + len(samples)  # the header, then each sample once


def test_a_dict_value_is_refused_naming_the_scorer(inspect_logs: dict[str, pathlib.Path]) -> None:
    doc = json.loads(inspect_logs["json"].read_text())
    doc["samples"][0]["scores"]["match"]["value"] = {"helpful": 4, "harmless": 5}
    with pytest.raises(DataError, match="scorer 'match' gives a value per key \\(helpful, harmless\\)"):
        read_inspect_log(json.dumps(doc).encode(), "edited.json")


def test_a_collect_list_short_of_a_grader_is_refused(inspect_logs: dict[str, pathlib.Path]) -> None:
    doc = json.loads(inspect_logs["json"].read_text())
    doc["samples"][1]["scores"]["multi_scorer"]["value"] = ["C"]
    with pytest.raises(DataError, match="holds 1 values .* for its 2 graders"):
        read_inspect_log(json.dumps(doc).encode(), "edited.json")


def test_a_damaged_eval_is_a_sentence(inspect_logs: dict[str, pathlib.Path], tmp_path) -> None:
    raw = bytearray(inspect_logs["eval"].read_bytes())
    with zipfile.ZipFile(inspect_logs["eval"]) as archive:
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


def _deflated_log(path: pathlib.Path) -> None:
    """A .eval as Inspect wrote them before zstd: deflated members."""
    header = {"version": 2, "status": "success",
              "eval": {"task": "t", "model": "m", "scorers": [{"name": "match", "options": {}}]}}
    sample = {"id": 7, "epoch": 1, "input": "hi", "target": "yes", "output": {"completion": "yes"},
              "scores": {"match": {"value": True, "explanation": "matched"}}}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("samples/7_epoch_1.json", json.dumps(sample))
        archive.writestr("header.json", json.dumps(header))


def test_a_deflated_eval_reads_and_a_member_larger_than_stated_is_refused(tmp_path) -> None:
    path = tmp_path / "old.eval"
    _deflated_log(path)
    vs = read_inspect_log(path)
    assert [(v.item_id, v.judge, v.label, v.reasoning) for v in vs.verdicts] == [
        ("7", "match", "yes", "matched")]  # a boolean is yes/no
    assert vs.items[0].gold == "yes"  # the target is one of the labels given
    # The zip directory says the sample is 10 bytes: only 11 are decoded, and it is refused.
    raw = bytearray(path.read_bytes())
    central = raw.index(b"PK\x01\x02")
    raw[central + 24:central + 28] = (10).to_bytes(4, "little")
    with pytest.raises(DataError, match="samples/7_epoch_1.json does not match its checksum"):
        read_inspect_log(bytes(raw), "lying.eval")
