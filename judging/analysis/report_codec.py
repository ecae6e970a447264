"""An agreement report as bytes and back, so a run's figures can be kept in its database.

Why not pickle: a database file travels (a colleague's run, an export), and unpickling runs
whatever code the bytes name. This format holds data only: a JSON skeleton and numpy arrays in
an `.npz` container read with `allow_pickle=False`, and it rebuilds only the classes listed in
`_CLASSES` (the report's own), refusing anything else with a sentence.

Why arrays for the big parts: at 1,000,000 items the item ids, per-item alpha, the encoded
ratings and the Dawid-Skene posteriors are most of the report; as arrays they load in a fraction
of a second, where recomputing the report takes seconds.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from judging.agreement import (
    AlphaResult,
    BootstrapResult,
    KappaMatrix,
    Proportion,
    RatingMatrix,
    Statistic,
)
from judging.analysis.agreement_report import AgreementReport
from judging.voting.dawid_skene import DawidSkeneResult

FORMAT = 2
"""The layout's version, stored with the bytes: a reader refuses another (and the report is
computed again). 2: a score panel's per-critic agreement with the consensus follows the vote's
rule (`judging.voting.strategies.backs_consensus`), so reports kept under 1 are stale."""

_CLASSES: dict[str, type] = {cls.__name__: cls for cls in (
    AgreementReport, AlphaResult, BootstrapResult, KappaMatrix, Proportion, RatingMatrix,
    Statistic, DawidSkeneResult)}


class CodecError(ValueError):
    """Bytes that are not a report this version can read."""


def encode_report(report: AgreementReport) -> bytes:
    """The report as bytes (`decode_report` gives it back, figure for figure)."""
    arrays: dict[str, np.ndarray] = {}
    skeleton = {"format": FORMAT, "report": _encode(report, arrays)}
    out = io.BytesIO()
    arrays["__skeleton__"] = np.frombuffer(json.dumps(skeleton).encode("utf-8"), dtype=np.uint8)
    np.savez(out, **arrays)  # type: ignore[arg-type]  # (numpy's stub types the keywords badly)
    return out.getvalue()


def decode_report(data: bytes) -> AgreementReport:
    """The report `encode_report` wrote.

    Raises:
        CodecError: not such bytes, another format version, or a class outside the report's.
    """
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        skeleton = json.loads(arrays.pop("__skeleton__").tobytes().decode("utf-8"))
    except (OSError, ValueError, KeyError) as error:
        raise CodecError(f"These bytes are not a stored agreement report ({error}).") from None
    if skeleton.get("format") != FORMAT:
        raise CodecError(f"The stored report has format {skeleton.get('format')!r}; this "
                         f"version reads format {FORMAT}: it is computed again.")
    report = _decode(skeleton["report"], arrays)
    if not isinstance(report, AgreementReport):
        raise CodecError("The stored bytes hold something other than an agreement report.")
    return report


def _array(value: np.ndarray, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    name = f"a{len(arrays)}"
    if value.dtype == object:
        items = value.tolist()
        if all(isinstance(x, str) for x in items):
            arrays[name] = np.array(items, dtype=str) if items else np.zeros(0, dtype="U1")
            return {"__array__": name, "as": "str"}
        return {"__objects__": [_encode(x, arrays) for x in items]}
    arrays[name] = value
    return {"__array__": name}


def _encode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, np.ndarray):
        return _array(value, arrays)
    if isinstance(value, pd.Series):
        return {"__series__": {
            "values": _array(value.to_numpy(), arrays),
            "index": _array(np.asarray(value.index, dtype=object), arrays),
            "name": _encode(value.name, arrays), "index_name": _encode(value.index.name, arrays),
            "dtype": str(value.dtype)}}
    if isinstance(value, pd.DataFrame):
        return {"__frame__": {
            "values": _array(value.to_numpy(), arrays),
            "index": [_encode(x, arrays) for x in value.index.tolist()],
            "columns": [_encode(x, arrays) for x in value.columns.tolist()],
            "index_name": _encode(value.index.name, arrays),
            "columns_name": _encode(value.columns.name, arrays)}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if _CLASSES.get(name) is not type(value):
            raise CodecError(f"A report holds a {name}, which this format does not store.")
        return {"__class__": name, "fields": {
            f.name: _encode(getattr(value, f.name), arrays) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(x, arrays) for x in value]}
    if isinstance(value, list):
        # Long lists (item ids, Dawid-Skene's row positions) as arrays: a million JSON values
        # took most of a load.
        if len(value) > 1000 and all(isinstance(x, str) for x in value):
            return {"__strings__": _array(np.array(value, dtype=object), arrays)}
        if len(value) > 1000 and all(type(x) is int for x in value):
            return {"__ints__": _array(np.array(value, dtype=np.int64), arrays)}
        return [_encode(x, arrays) for x in value]
    if isinstance(value, Mapping):  # dicts, and a kappa matrix's reasons (a mapping)
        return {"__map__": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    raise CodecError(f"A report holds a {type(value).__name__}, which this format does not store.")


def _decode(value: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    if isinstance(value, list):
        return [_decode(x, arrays) for x in value]
    if not isinstance(value, dict):
        return value
    if "__array__" in value:
        array = arrays[value["__array__"]]
        return array.astype(object) if value.get("as") == "str" else array
    if "__objects__" in value:
        return np.array([_decode(x, arrays) for x in value["__objects__"]] + [None],
                        dtype=object)[:-1]
    if "__strings__" in value:  # straight to Python strings: no object array on the way
        return arrays[value["__strings__"]["__array__"]].tolist()
    if "__ints__" in value:
        return arrays[value["__ints__"]["__array__"]].tolist()
    if "__tuple__" in value:
        return tuple(_decode(x, arrays) for x in value["__tuple__"])
    if "__map__" in value:
        return {_hashable(_decode(k, arrays)): _decode(v, arrays) for k, v in value["__map__"]}
    if "__series__" in value:
        s = value["__series__"]
        index = pd.Index(_decode(s["index"], arrays), dtype=object,
                         name=_decode(s["index_name"], arrays))
        return pd.Series(_decode(s["values"], arrays), index=index, dtype=s["dtype"],
                         name=_decode(s["name"], arrays))
    if "__frame__" in value:
        f = value["__frame__"]
        return pd.DataFrame(_decode(f["values"], arrays),
                            index=pd.Index([_decode(x, arrays) for x in f["index"]],
                                           name=_decode(f["index_name"], arrays)),
                            columns=pd.Index([_decode(x, arrays) for x in f["columns"]],
                                             name=_decode(f["columns_name"], arrays)))
    if "__class__" in value:
        cls = _CLASSES.get(value["__class__"])
        if cls is None:
            raise CodecError(f"The stored report names a class {value['__class__']!r}, which "
                             "this format does not rebuild.")
        fields = {k: _decode(v, arrays) for k, v in value["fields"].items()}
        # Set field by field rather than through __init__: a frozen class's fields are the
        # state, and nothing is recomputed on the way back.
        instance: Any = object.__new__(cls)
        for name, field_value in fields.items():
            object.__setattr__(instance, name, field_value)
        return instance
    raise CodecError("The stored report holds a value this format does not know.")


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, (list, tuple)) else key
