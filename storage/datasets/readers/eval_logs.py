"""Other tools' eval files read into a `VerdictSet`: Inspect AI logs, promptfoo results, Label
Studio exports. Pure functions over a file: no database, and nothing half-read (a file that
cannot be used is a `DataError` naming the problem and the fix, raised before anything is
returned).

The mapping rules (the manual's "Importing verdicts" page says the same for users):

Inspect AI (`.eval` zip or `.json` log), read by its documented layout with the stdlib and
`zstandard` (never `inspect_ai` itself). A `.eval` log is read one `samples/*.json` member at a
time, so memory holds one sample (and the items), not the log; a `.json` log is one document
and is read whole.
    - Each score of a sample (keyed by the scorer's name, "model_graded_qa1" for the second of
      two) is a judge. A scalar value: that scorer's verdict. A grader panel reduced by
      `majority` (a `model_graded_qa` given several models) keeps each grader's vote in
      `metadata.panel.votes`: each grader is a judge, "scorer / model". A `multi_scorer` reduced
      by `collect` holds a list, one value per grader: each grader is a judge, named from the
      scorer's params in the header. A dict value (one value per criterion) is not one judge's
      verdict and is refused.
    - Values: a string is a label ("C", "I"); a number a score; a boolean "yes"/"no" (the
      `yesno` scale's labels); NaN or null (Inspect's "unscored") is no verdict. A judge gives
      labels or scores, not both.
    - Epoch n is `sample` n - 1; `explanation` is the reasoning; `history` (score edits) gives
      every earlier state, oldest first, as {"value", "explanation", "by", "at", "reason"}.
    - The item is the sample id: fields `input` (chat input flattened to "role: text" lines,
      the raw list kept in `input_messages`), `target`, `output` (epoch 1's completion;
      `outputs` holds each epoch's when there are several) and `metadata`. Inspect's target is
      the expected answer, not the expected verdict (a `model_graded_qa` target is the ideal
      answer, its verdicts C/P/I), so it is the item's gold only where it is one of the labels
      the judges give.

promptfoo (`promptfoo eval -o results.json`, results version 2 or 3):
    - The item is one row of the eval: (testIdx, promptIdx, provider), id "testIdx:promptIdx:
      provider"; its fields are the test's vars, `output`, `prompt` and `provider`. The same
      row again (`--repeat`) is the next `sample`.
    - Each graded assertion of `gradingResult.componentResults` (assert-sets opened) is a judge,
      named by its `metric`, else its type; the same name twice in one row gets " #2". Graded
      means promptfoo calls a grading provider for it (llm-rubric, g-eval, factuality,
      model-graded-closedqa, ..., with or without `not-`); deterministic checks (contains,
      equals, javascript, ...) are not judges unless `include_checks=True`. A grader error
      (`metadata.graderError`) is no verdict.
    - A judge whose scores are only 1 on pass and 0 on fail gives "pass"/"fail" labels; one
      that grades on a scale (any other score) gives its scores. `reason` is the reasoning.
    - A `human` assertion (a rating given in promptfoo's viewer) is an annotation by "human".

Label Studio (JSON export: a list of tasks):
    - The item is the task id; its fields are the task's `data`.
    - One control is the verdict: the only choices, rating or number control of the file, or
      the one named by `control=`. Choices give labels (one choice per result), rating and
      number scores; a textarea result beside it is the reasoning or note.
    - Each `model_version` of the predictions is a judge (the prediction's `score` in [0, 1]
      its confidence); each annotator's (`completed_by`) latest annotation not cancelled is an
      annotation; an annotation marked `ground_truth` gives the item's gold.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import zstandard

from judging.errors import DataError
from judging.verdicts import ImportedAnnotation, ImportedVerdict, Item, VerdictSet
from storage.datasets.import_limits import ImportLimits, human_size, variable_for

__all__ = [
    "TOOL_FORMATS",
    "GRADED_ASSERTIONS",
    "read_inspect_log",
    "read_label_studio_export",
    "read_promptfoo_results",
    "read_tool_file",
    "tool_format",
]

Source = str | os.PathLike[str] | bytes | IO[bytes]

# -- shared ------------------------------------------------------------------------------------


def _name_of(source: Source, name: str | None) -> str:
    if name:
        return name
    if isinstance(source, str | os.PathLike):
        return os.path.basename(os.fspath(source))
    return "the file"


@contextmanager
def _binary(source: Source) -> Iterator[IO[bytes]]:
    """A seekable binary stream over the file; one the caller passed in stays open."""
    if isinstance(source, bytes):
        yield io.BytesIO(source)
    elif isinstance(source, str | os.PathLike):
        try:
            stream = open(source, "rb")
        except OSError as exc:
            raise DataError(f"{os.fspath(source)} cannot be opened ({exc.strerror}). Check the "
                            "path.") from None
        with stream:
            yield stream
    else:
        yield source


def _json(raw: bytes, name: str, where: str = "") -> Any:
    """JSON text as Python values. NaN is kept (Inspect writes it for "unscored")."""
    at = f" ({where})" if where else ""
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{name}{at} is not UTF-8 text (byte {exc.start}): it is not the JSON "
                        "file it should be. Export it again from the tool.") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{name}{at} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                        f"column {exc.colno}. Export it again from the tool; a file cut short "
                        "was not written to the end.") from None
    except RecursionError:
        raise DataError(f"{name}{at} nests JSON values too deeply to read.") from None


def _verdict_value(value: Any) -> tuple[str | None, float | None] | None:
    """(label, score) of a value, or None for no verdict (null, NaN)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ("yes" if value else "no"), None
    if isinstance(value, int | float):
        return None if math.isnan(value) else (None, float(value))
    if isinstance(value, str):
        return (value, None) if value.strip() else None
    raise TypeError(type(value).__name__)


def _dict(value: Any) -> dict[str, Any]:
    """The value when it is a JSON object, else an empty one (an absent optional section)."""
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class _Judges:
    """The judges met so far: their descriptions in order, and whether each gives labels or
    scores (a judge giving both is a file Jurybox cannot vote on)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.described: dict[str, str] = {}
        self._kind: dict[str, str] = {}

    def add(self, judge: str, description: str) -> None:
        self.described.setdefault(judge, description)

    def check(self, judge: str, label: str | None, where: str) -> None:
        kind = "labels" if label is not None else "scores"
        first = self._kind.setdefault(judge, kind)
        if first != kind:
            raise DataError(
                f"{self.name}: judge {judge!r} gives {first} elsewhere but {kind} at {where}. "
                "A judge gives labels or numbers, not both: fix that judge's values in the file.")


# -- Inspect AI ----------------------------------------------------------------------------------

_ZIP_ZSTANDARD = 93  # compression method id of zstd members (Inspect writes them since 2025)
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_SAMPLE_MEMBER = re.compile(r"^samples/.+_epoch_\d+\.json$")


def read_inspect_log(source: Source, name: str | None = None, *,
                     limits: ImportLimits | None = None) -> VerdictSet:
    """Read an Inspect AI eval log (`.eval` or `.json`) into a `VerdictSet`.

    Args:
        source: a path, the file's bytes, or a binary file object.
        name: the file's name, for messages (defaults to the path's).
        limits: the import limits; one sample may decode to at most `max_decoded_bytes`.

    Raises:
        DataError: not an Inspect log, a sample that cannot be read, or a score that is not
            one judge's verdict; the message names the sample and the scorer.
    """
    name = _name_of(source, name)
    limits = limits or ImportLimits.from_env()
    with _binary(source) as stream:
        if stream.read(4) == b"PK\x03\x04":
            stream.seek(0)
            return _read_eval_zip(stream, name, limits)
        stream.seek(0)
        doc = _json(stream.read(), name)
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        raise DataError(f"{name} is not an Inspect log: it has no \"eval\" section. Choose the "
                        ".eval or .json file Inspect wrote to its log folder.")
    samples = doc.get("samples")
    if not isinstance(samples, list) or not samples:
        raise DataError(f"{name} holds no samples (a log written with its header only). Choose "
                        "the full log, or write it again with its samples.")
    reader = _InspectReader(name, doc)
    for position, sample in enumerate(samples, start=1):
        reader.sample(sample, f"sample {position}")
    return reader.result()


def _read_eval_zip(stream: IO[bytes], name: str, limits: ImportLimits) -> VerdictSet:
    try:
        archive = zipfile.ZipFile(stream)
    except zipfile.BadZipFile:
        raise DataError(f"{name} is a damaged .eval file (its zip directory cannot be read). "
                        "Copy the log again from where Inspect wrote it.") from None
    with archive:
        members = {info.filename: info for info in archive.infolist()}
        header_info = members.get("header.json") or members.get("_journal/start.json")
        if header_info is None:
            raise DataError(f"{name} is not an Inspect .eval log: it has no header.json. Choose "
                            "the .eval file Inspect wrote to its log folder.")
        header = _json(_member(stream, header_info, name, limits), name, header_info.filename)
        if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
            raise DataError(f"{name}: {header_info.filename} has no \"eval\" section: this is "
                            "not an Inspect log.")
        reader = _InspectReader(name, header)
        sample_members = [info for info in archive.infolist()
                          if _SAMPLE_MEMBER.match(info.filename)]
        if not sample_members:
            raise DataError(f"{name} holds no samples (samples/*.json). Choose a log whose run "
                            "scored at least one sample.")
        for info in sample_members:
            reader.sample(_json(_member(stream, info, name, limits), name, info.filename),
                          info.filename)
    return reader.result()


def _member(stream: IO[bytes], info: zipfile.ZipInfo, name: str, limits: ImportLimits) -> bytes:
    """One member's bytes, decompressed here for every method Inspect writes (stored, deflate,
    zstd: Python's zipfile reads zstd only from 3.14), its size bounded and its CRC checked.

    At most the size the zip directory states is decoded (one byte more tells a member that
    decodes to more): the output buffer is that size, so a sample costs what it holds."""
    cap = limits.max_decoded_bytes
    where = f"{name}: {info.filename}"
    if info.file_size > cap:
        raise DataError(f"{where} decodes to {human_size(info.file_size)}, more than the "
                        f"{human_size(cap)} one sample may hold. Raise "
                        f"{variable_for('max_decoded_bytes')} if the log is trusted.")
    stream.seek(info.header_offset)
    fixed = stream.read(_LOCAL_HEADER.size)
    if len(fixed) != _LOCAL_HEADER.size or fixed[:4] != b"PK\x03\x04":
        raise DataError(f"{where} cannot be found where the zip directory says: the .eval "
                        "file is damaged. Copy the log again.")
    name_length, extra_length = _LOCAL_HEADER.unpack(fixed)[-2:]
    stream.seek(name_length + extra_length, os.SEEK_CUR)
    packed = stream.read(info.compress_size)
    try:
        if info.compress_type == zipfile.ZIP_STORED:
            data = packed
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            inflate = zlib.decompressobj(-15)
            data = inflate.decompress(packed, info.file_size + 1)
        elif info.compress_type == _ZIP_ZSTANDARD:
            with zstandard.ZstdDecompressor().stream_reader(packed, read_across_frames=True) as z:
                data = z.read(info.file_size + 1)
        else:
            raise DataError(f"{where} is compressed with method {info.compress_type}, which "
                            "Inspect does not write. Write the log again with Inspect.")
    except (zlib.error, zstandard.ZstdError):
        raise DataError(f"{where} cannot be decompressed: the .eval file is damaged. Copy the "
                        "log again.") from None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise DataError(f"{where} does not match its checksum: the .eval file is damaged. Copy "
                        "the log again.")
    return data


@dataclass(slots=True)
class _InspectItem:
    item: Item
    outputs: dict[int, str] = field(default_factory=dict)


class _InspectReader:
    """Turns samples, one at a time, into items and verdicts."""

    def __init__(self, name: str, header: dict[str, Any]) -> None:
        self.name = name
        spec = header["eval"]
        self.source = (f"Inspect log {name}, task {spec.get('task', '?')}, "
                       f"model {spec.get('model', '?')}")
        self.graders = _inspect_graders(header)
        self.judges = _Judges(name)
        self.items: dict[str, _InspectItem] = {}
        self.verdicts: list[ImportedVerdict] = []

    def sample(self, sample: Any, where: str) -> None:
        if not isinstance(sample, dict) or "id" not in sample:
            raise DataError(f"{self.name}: {where} is not an Inspect sample (it has no id).")
        item_id = str(sample["id"])
        epoch = sample.get("epoch", 1)
        if type(epoch) is not int or epoch < 1:
            raise DataError(f"{self.name}: sample {item_id!r} has epoch {epoch!r}; Inspect "
                            "counts epochs from 1.")
        where = f"sample {item_id!r}, epoch {epoch}"
        self._item(item_id, epoch, sample)
        scores = sample.get("scores") or {}
        if not isinstance(scores, dict):
            raise DataError(f"{self.name}: {where} has scores that are not a mapping of scorer "
                            "names to scores.")
        for scorer, score in scores.items():
            if not isinstance(score, dict) or "value" not in score:
                raise DataError(f"{self.name}: {where}: scorer {scorer!r} has no value.")
            self._score(item_id, epoch - 1, scorer, score, where)

    def _item(self, item_id: str, epoch: int, sample: dict[str, Any]) -> None:
        known = self.items.get(item_id)
        output = sample.get("output") or {}
        completion = output.get("completion") if isinstance(output, dict) else None
        if known is None:
            fields: dict[str, Any] = {"input": _input_text(sample.get("input"))}
            if isinstance(sample.get("input"), list):
                fields["input_messages"] = sample["input"]
            fields["target"] = sample.get("target")
            if sample.get("metadata"):
                fields["metadata"] = sample["metadata"]
            known = self.items[item_id] = _InspectItem(Item(item_id, fields))
        if isinstance(completion, str):
            known.outputs[epoch] = completion

    def _score(self, item_id: str, sample: int, scorer: str, score: dict[str, Any],
               where: str) -> None:
        value = score["value"]
        explanation = score.get("explanation")
        metadata = _dict(score.get("metadata"))
        panel = metadata.get("panel") if isinstance(metadata, dict) else None
        if isinstance(value, dict):
            raise DataError(
                f"{self.name}: scorer {scorer!r} gives a value per key ({', '.join(map(str, value))}) "
                f"at {where}: a score per criterion is not one judge's verdict. Import a log "
                "whose scorer gives one value per sample, one scorer per criterion.")
        if isinstance(panel, dict) and isinstance(panel.get("votes"), list):
            # A majority-reduced grader panel: the reduced value is derived; each vote is a judge.
            names = self._grader_names(scorer, len(panel["votes"]))
            for judge, vote in zip(names, panel["votes"], strict=True):
                self._add(item_id, sample, judge, vote, None, (), where)
            return
        if isinstance(value, list):
            known = self.graders.get(scorer)
            if known is not None and len(known) != len(value):
                raise DataError(
                    f"{self.name}: scorer {scorer!r} holds {len(value)} values at {where} for "
                    f"its {len(known)} graders: the collect reducer drops a grader that gave no "
                    "grade, so which grader gave which value cannot be told. Score again with "
                    "the majority reducer, which keeps every grader's vote.")
            names = known if known is not None else [f"{scorer}[{n}]" for n in range(len(value))]
            for judge, one in zip(names, value, strict=True):
                self._add(item_id, sample, judge, one, explanation, (), where)
            return
        self._add(item_id, sample, scorer, value, explanation, _history(score.get("history")),
                  where)

    def _grader_names(self, scorer: str, count: int) -> list[str]:
        names = self.graders.get(scorer)
        if names is None or len(names) != count:
            return [f"{scorer}[{n}]" for n in range(count)]
        return names

    def _add(self, item_id: str, sample: int, judge: str, value: Any, reasoning: Any,
             history: tuple[dict[str, Any], ...], where: str) -> None:
        try:
            verdict = _verdict_value(value)
        except TypeError:
            raise DataError(f"{self.name}: judge {judge!r} gives a {type(value).__name__} at "
                            f"{where}; a verdict is a label, a number or true/false.") from None
        self.judges.add(judge, f"Inspect scorer {judge}")
        if verdict is None:
            return
        label, score = verdict
        self.judges.check(judge, label, where)
        self.verdicts.append(ImportedVerdict(
            item_id=item_id, judge=judge, label=label, score=score,
            reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
            sample=sample, history=history))

    def result(self) -> VerdictSet:
        labels = {v.label for v in self.verdicts if v.label is not None}
        items = []
        for known in self.items.values():
            outputs = [known.outputs[e] for e in sorted(known.outputs)]
            if outputs:
                known.item.fields["output"] = outputs[0]
            if len(outputs) > 1:
                known.item.fields["outputs"] = outputs
            target = known.item.fields.get("target")
            if isinstance(target, list) and len(target) == 1:
                target = target[0]
            if isinstance(target, str) and target in labels:
                known.item.gold = target
            items.append(known.item)
        judges = self.judges.described
        return VerdictSet(source=self.source, format="inspect", items=items,
                          verdicts=self.verdicts, judges=judges)


def _input_text(value: Any) -> str:
    """A sample's input as text: a string as it is, chat messages as "role: text" lines."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return "" if value is None else _text(value)
    lines = []
    for message in value:
        if not isinstance(message, dict):
            lines.append(_text(message))
            continue
        content = message.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "\n".join(str(part.get("text", "")) for part in content
                                if isinstance(part, dict) and part.get("type") == "text")
        lines.append(f"{message.get('role', 'user')}: {content if content is not None else ''}")
    return "\n".join(lines)


def _model_name(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("model"), str):
        return value["model"]
    return None


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def _inspect_graders(header: dict[str, Any]) -> dict[str, list[str]]:
    """Scorer name -> its graders' judge names, for scorers that are panels: a model-graded
    scorer given a list of models, or a `multi_scorer` of sub-scorers. Read from the results'
    score entries (named as the samples name them, "model_graded_qa1"), else the eval spec."""
    entries: list[tuple[Any, Any]] = []
    results = header.get("results")
    if isinstance(results, dict) and isinstance(results.get("scores"), list):
        entries = [(s.get("name"), s.get("params")) for s in results["scores"]
                   if isinstance(s, dict)]
    else:
        taken: dict[str, int] = {}
        for spec in header["eval"].get("scorers") or []:
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                continue
            # Inspect names the second scorer of one name "name1", the third "name2".
            n = taken.get(spec["name"], 0)
            taken[spec["name"]] = n + 1
            entries.append((spec["name"] + (str(n) if n else ""), spec.get("options")))
    graders: dict[str, list[str]] = {}
    for scorer, params in entries:
        if not isinstance(scorer, str) or not isinstance(params, dict):
            continue
        if isinstance(params.get("model"), list):
            names = [_model_name(m) or f"grader {n}" for n, m in enumerate(params["model"])]
        elif isinstance(params.get("scorers"), list):
            names = []
            for n, sub in enumerate(params["scorers"]):
                sub = sub if isinstance(sub, dict) else {}
                model = _model_name((sub.get("params") or {}).get("model"))
                label = str(sub.get("name") or f"scorer {n}")
                names.append(f"{label} {model}" if model else label)
        else:
            continue
        graders[scorer] = [f"{scorer} / {name}" for name in _unique(names)]
    return graders


def _history(entries: Any) -> tuple[dict[str, Any], ...]:
    """The states a score had before its current one, oldest first. Inspect keeps the original
    (no provenance) then every edit, the last being the current state; an edit's "UNCHANGED"
    fields keep the state before it."""
    if not isinstance(entries, list) or len(entries) < 2:
        return ()
    state: dict[str, Any] = {"value": None, "explanation": None}
    states = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        for key in ("value", "explanation"):
            if key in entry and entry[key] != "UNCHANGED":
                state[key] = entry[key]
        provenance = _dict(entry.get("provenance"))
        one = {"value": state["value"], "explanation": state["explanation"],
               "by": provenance.get("author"), "at": provenance.get("timestamp")}
        if provenance.get("reason"):
            one["reason"] = provenance["reason"]
        states.append(one)
    return tuple(states[:-1])


# -- promptfoo ------------------------------------------------------------------------------------

#: Assertion types promptfoo grades by calling a grading provider (its `usesGradingProvider`,
#: src/assertions/constants.ts): the model-graded ones and the provider-graded ones.
GRADED_ASSERTIONS = frozenset({
    "agent-rubric", "answer-relevance", "context-faithfulness", "context-recall",
    "context-relevance", "factuality", "llm-rubric", "model-graded-closedqa",
    "model-graded-factuality", "search-rubric", "trajectory:goal-success",
    "classifier", "conversation-relevance", "g-eval", "moderation", "select-best", "similar",
})
_GRADED_PREFIXES = ("similar:", "promptfoo:redteam:")


def _graded(kind: str) -> bool:
    base = kind.removeprefix("not-")
    return base in GRADED_ASSERTIONS or base.startswith(_GRADED_PREFIXES)


@dataclass(slots=True)
class _Grade:
    item_id: str
    judge: str
    passed: bool
    score: float | None
    reason: str | None
    sample: int


def read_promptfoo_results(source: Source, name: str | None = None, *,
                           include_checks: bool = False) -> VerdictSet:
    """Read promptfoo's `results.json` (`promptfoo eval -o results.json`) into a `VerdictSet`.

    Args:
        source: a path, the file's bytes, or a binary file object.
        name: the file's name, for messages.
        include_checks: also take deterministic assertions (contains, equals, ...) as judges.

    Raises:
        DataError: not a promptfoo results file, or a row without its indexes.
    """
    name = _name_of(source, name)
    with _binary(source) as stream:
        doc = _json(stream.read(), name)
    summary = doc.get("results") if isinstance(doc, dict) else None
    rows = summary.get("results") if isinstance(summary, dict) else None
    if not isinstance(rows, list):
        raise DataError(f"{name} is not a promptfoo results file: it has no results.results "
                        "list. Write it with `promptfoo eval -o results.json`.")
    judges = _Judges(name)
    items: dict[str, Item] = {}
    repeats: dict[str, int] = {}
    grades: list[_Grade] = []
    annotations: list[ImportedAnnotation] = []
    for position, row in enumerate(rows, start=1):
        where = f"result {position}"
        if not isinstance(row, dict) or not isinstance(row.get("testIdx"), int) \
                or not isinstance(row.get("promptIdx"), int):
            raise DataError(f"{name}: {where} has no testIdx and promptIdx: this is not a "
                            "promptfoo results file of version 2 or later. Run the eval again "
                            "with a current promptfoo.")
        provider = _dict(row.get("provider"))
        provider_name = str(provider.get("label") or provider.get("id") or "provider")
        item_id = f"{row['testIdx']}:{row['promptIdx']}:{provider_name}"
        sample = repeats.get(item_id, 0)
        repeats[item_id] = sample + 1
        if item_id not in items:
            items[item_id] = Item(item_id, _promptfoo_fields(row, provider_name))
        grading = row.get("gradingResult")
        seen: dict[str, int] = {}
        for component in _components(grading):
            assertion = component.get("assertion") or {}
            kind = str(assertion.get("type") or "")
            metadata = _dict(component.get("metadata"))
            if kind == "human":
                annotations.append(ImportedAnnotation(
                    item_id, "human", label="pass" if component.get("pass") else "fail",
                    note=str(component.get("reason") or "")))
                continue
            if not kind or not (include_checks or _graded(kind)) or metadata.get("graderError"):
                continue
            judge = str(assertion.get("metric") or kind)
            seen[judge] = seen.get(judge, 0) + 1
            if seen[judge] > 1:
                judge = f"{judge} #{seen[judge]}"
            judges.add(judge, _assertion_description(assertion))
            score = component.get("score")
            grades.append(_Grade(item_id, judge, bool(component.get("pass")),
                                 float(score) if isinstance(score, int | float)
                                 and not isinstance(score, bool) else None,
                                 component.get("reason") or None, sample))
    scaled = {g.judge for g in grades
              if g.score is not None and g.score != (1.0 if g.passed else 0.0)}
    verdicts = [ImportedVerdict(
        item_id=g.item_id, judge=g.judge,
        label=None if g.judge in scaled else ("pass" if g.passed else "fail"),
        score=g.score if g.judge in scaled else None,
        reasoning=str(g.reason) if g.reason else None, sample=g.sample)
        for g in grades if g.judge not in scaled or g.score is not None]
    eval_id = doc.get("evalId") if isinstance(doc, dict) else None
    return VerdictSet(source=f"promptfoo {name}" + (f", eval {eval_id}" if eval_id else ""),
                      format="promptfoo", items=list(items.values()), verdicts=verdicts,
                      annotations=annotations, judges=judges.described)


def _components(grading: Any) -> Iterator[dict[str, Any]]:
    """The graded assertions of a row: its component results, assert-sets opened."""
    if not isinstance(grading, dict):
        return
    parts = grading.get("componentResults")
    if not isinstance(parts, list) or not parts:
        if isinstance(grading.get("assertion"), dict):
            yield grading
        return
    for part in parts:
        if not isinstance(part, dict):
            continue
        assertion = _dict(part.get("assertion"))
        if assertion.get("type") == "assert-set" or (not assertion and part.get("componentResults")):
            yield from _components(part)
        elif assertion:
            yield part


def _promptfoo_fields(row: dict[str, Any], provider: str) -> dict[str, Any]:
    response = _dict(row.get("response"))
    output = response.get("output")
    prompt = _dict(row.get("prompt"))
    fixed: dict[str, Any] = {"output": None if output is None else _text(output),
                             "prompt": prompt.get("raw"), "provider": provider}
    test = _dict(row.get("testCase"))
    if row.get("description") or test.get("description"):
        fixed["description"] = row.get("description") or test.get("description")
    fields: dict[str, Any] = {}
    for var, value in (row.get("vars") or {}).items():
        fields[f"vars.{var}" if var in fixed else str(var)] = value
    return {**fields, **fixed}


def _assertion_description(assertion: dict[str, Any]) -> str:
    text = f"promptfoo assertion {assertion.get('type')}"
    value = assertion.get("value")
    if isinstance(value, str) and value:
        text += f": {value if len(value) <= 200 else value[:199] + '…'}"
    provider = assertion.get("provider")
    if isinstance(provider, str):
        text += f" (graded by {provider})"
    return text


# -- Label Studio -------------------------------------------------------------------------------

_VERDICT_TYPES = {"choices": "choices", "rating": "rating", "number": "number"}


def read_label_studio_export(source: Source, name: str | None = None, *,
                             control: str | None = None) -> VerdictSet:
    """Read a Label Studio JSON export (a list of tasks) into a `VerdictSet`.

    Args:
        source: a path, the file's bytes, or a binary file object.
        name: the file's name, for messages.
        control: the `from_name` of the control holding the verdict, when the labelling
            config has several choices, rating or number controls.

    Raises:
        DataError: not a JSON export, a task without an id, several verdict controls and no
            `control`, or a result choosing several choices.
    """
    name = _name_of(source, name)
    with _binary(source) as stream:
        tasks = _json(stream.read(), name)
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise DataError(f"{name} is not a Label Studio JSON export: it should be a list of "
                        "tasks. Export the project as JSON (not JSON-MIN or CSV).")
    for position, task in enumerate(tasks, start=1):
        if "id" not in task or not isinstance(task.get("data"), dict):
            raise DataError(f"{name}: task {position} has no id or no data. Export the project "
                            "as JSON from Label Studio (the export keeps both).")
    control = control or verdict_control(tasks, name)
    judges = _Judges(name)
    items: list[Item] = []
    verdicts: list[ImportedVerdict] = []
    annotations: list[ImportedAnnotation] = []
    for task in tasks:
        item = Item(str(task["id"]), dict(task["data"]))
        where = f"task {item.id}"
        repeats: dict[str, int] = {}
        for prediction in task.get("predictions") or []:
            found = _result_verdict(prediction, control, name, where)
            if found is None:
                continue
            judge = str(prediction.get("model_version") or "prediction")
            judges.add(judge, f"Label Studio predictions of model version {judge}")
            label, score, text = found
            judges.check(judge, label, where)
            confidence = prediction.get("score")
            sample = repeats.get(judge, 0)
            repeats[judge] = sample + 1
            verdicts.append(ImportedVerdict(
                item.id, judge, label=label, score=score, reasoning=text or None,
                confidence=float(confidence) if isinstance(confidence, int | float)
                and not isinstance(confidence, bool) and 0 <= confidence <= 1 else None,
                sample=sample))
        latest: dict[str, tuple[str, ImportedAnnotation, bool]] = {}
        for annotation in task.get("annotations") or []:
            if not isinstance(annotation, dict) or annotation.get("was_cancelled"):
                continue
            found = _result_verdict(annotation, control, name, where)
            if found is None:
                continue
            label, score, text = found
            who = _annotator(annotation.get("completed_by"))
            at = annotation.get("updated_at") or annotation.get("created_at")
            kept = ImportedAnnotation(item.id, who, label=label, score=score, note=text,
                                      at=str(at) if at else None)
            order = str(at or "")
            if who not in latest or order >= latest[who][0]:
                latest[who] = (order, kept, bool(annotation.get("ground_truth")))
        for _, kept, ground_truth in latest.values():
            annotations.append(kept)
            if ground_truth and kept.label is not None:
                item.gold = kept.label
        items.append(item)
    return VerdictSet(source=f"Label Studio export {name}, control {control}",
                      format="label-studio", items=items, verdicts=verdicts,
                      annotations=annotations, judges=judges.described)


def _results(entry: Any) -> Iterable[dict[str, Any]]:
    results = entry.get("result") if isinstance(entry, dict) else None
    return [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []


def verdict_control(tasks: list[dict[str, Any]], name: str) -> str:
    """The one choices, rating or number control the file's results use."""
    controls: dict[str, None] = {}
    for task in tasks:
        for entry in [*(task.get("predictions") or []), *(task.get("annotations") or [])]:
            for result in _results(entry):
                if result.get("type") in _VERDICT_TYPES:
                    controls.setdefault(str(result.get("from_name")))
    if not controls:
        raise DataError(f"{name} holds no choices, rating or number results: there is no "
                        "verdict to import. Export a project whose tasks were labelled or "
                        "predicted with one of those controls.")
    if len(controls) > 1:
        raise DataError(f"{name} has several verdict controls ({', '.join(controls)}): choose "
                        "the one holding the verdict (its from_name).")
    return next(iter(controls))


def _result_verdict(entry: Any, control: str, name: str,
                    where: str) -> tuple[str | None, float | None, str] | None:
    """(label, score, text) of a prediction or annotation on the verdict control, or None."""
    verdict: tuple[str | None, float | None] | None = None
    texts: list[str] = []
    for result in _results(entry):
        value = _dict(result.get("value"))
        kind = result.get("type")
        if kind == "textarea":
            texts.extend(str(t) for t in value.get("text") or [])
            continue
        if str(result.get("from_name")) != control or kind not in _VERDICT_TYPES:
            continue
        raw = value.get(_VERDICT_TYPES[kind])
        if kind == "choices":
            if not isinstance(raw, list) or len(raw) != 1:
                raise DataError(f"{name}: {where} chooses {raw!r} on {control!r}: a verdict "
                                "is one choice. Use a single-choice control for the verdict.")
            verdict = (str(raw[0]), None)
        elif isinstance(raw, int | float) and not isinstance(raw, bool):
            verdict = (None, float(raw))
        else:
            raise DataError(f"{name}: {where} has {kind} {raw!r} on {control!r}, not a number.")
    if verdict is None:
        return None
    return verdict[0], verdict[1], "\n".join(texts)


def _annotator(completed_by: Any) -> str:
    """Who made an annotation: the export gives a user id, or the user (id, email, names)."""
    if isinstance(completed_by, dict):
        return str(completed_by.get("email") or completed_by.get("id") or "annotator")
    return "annotator" if completed_by is None else str(completed_by)


# -- which tool wrote it -------------------------------------------------------------------------

TOOL_FORMATS = ("inspect", "promptfoo", "label-studio")


def tool_format(raw: bytes, name: str) -> str | None:
    """Which tool's file `raw` is ("inspect", "promptfoo", "label-studio"), from its first
    bytes and its top-level keys; None for anything else (a table, say)."""
    if raw[:4] == b"PK\x03\x04":
        return "inspect" if name.lower().endswith(".eval") else None
    head = raw.lstrip()[:1]
    if head not in (b"{", b"["):
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None  # JSON Lines, or not JSON: a table's reader says what is wrong
    if isinstance(doc, dict) and isinstance(doc.get("eval"), dict):
        return "inspect"
    if isinstance(doc, dict) and isinstance(doc.get("results"), dict) and (
            "evalId" in doc or "results" in doc["results"]):
        return "promptfoo"
    if isinstance(doc, list) and doc and all(isinstance(t, dict) and "data" in t for t in doc):
        return "label-studio"
    return None


def read_tool_file(raw: bytes, name: str, fmt: str, *, control: str | None = None) -> VerdictSet:
    """A tool's file (`fmt`, one of `TOOL_FORMATS`) read into a `VerdictSet`.

    Raises:
        DataError: an unknown format, or the reader's sentence for a file it refuses.
    """
    if fmt == "inspect":
        return read_inspect_log(raw, name)
    if fmt == "promptfoo":
        return read_promptfoo_results(raw, name)
    if fmt == "label-studio":
        return read_label_studio_export(raw, name, control=control)
    raise DataError(f"Unknown verdict file format {fmt!r}; use one of {', '.join(TOOL_FORMATS)}.")
