"""Python critics: a function you write, named in the panel (`function: mypkg.checks:no_pii`).

The function is called as `function(item, reference)`: `item` is a copy of the item's fields
(a dict), `reference` the value of the critic's `reference_field` (None without one). It
returns the verdict in one of these forms:

    True / False                      passed or failed (the critic's pass / fail value)
    "label" or a number               a label of the scale, or a score on a score scale
    (value, "reasoning")              any of the above with its reasoning
    {"label" | "score" | "passed": v, "reasoning": "...", "confidence": 0.9}

An exception raised by the function is the item's failure (kept with its message, as any
failed call); a value not on the scale is a parse failure.

Security: naming a function runs its module's code. The library and the CLI import it (the
panel file is yours); the web app never does, whoever uploaded the panel
(`judging.engine.plugin_critics`, `CallRunner(python_critics=False)`).
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judging.errors import ConfigError

# "package.module:function" (the entry-point syntax of Python packaging), the function part
# possibly dotted (a class attribute: "mod:Checks.no_pii").
FUNCTION_PATH = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*"
    r"(\.[A-Za-z_][A-Za-z0-9_]*)*"
)

PythonCheck = Callable[[dict[str, Any], Any], Any]

_loaded: dict[str, PythonCheck] = {}
_lock = threading.Lock()


def function_path_problem(path: str) -> str | None:
    """What is wrong with a `function` value's spelling (nothing is imported), or None."""
    if not FUNCTION_PATH.fullmatch(path):
        return (f"{path!r} is not a function path; write module:function, e.g. "
                "mypkg.checks:no_pii (the module must be importable)")
    return None


def load_function(path: str) -> PythonCheck:
    """Import the module and return the function a `function` value names (once per process).

    Raises:
        ConfigError: the path is misspelt, the module cannot be imported, it has no such
            attribute, or the attribute is not callable; the sentence says which and the fix.
    """
    found = _loaded.get(path)
    if found is not None:
        return found
    problem = function_path_problem(path)
    if problem is not None:
        raise ConfigError(problem)
    module_name, attribute = path.split(":", 1)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(
            f"function {path!r}: module {module_name!r} cannot be imported ({error}); install "
            "it or add its folder to PYTHONPATH"
        ) from None
    except Exception as error:  # noqa: BLE001 - the user's module failed while importing
        raise ConfigError(f"function {path!r}: importing {module_name!r} raised "
                          f"{type(error).__name__}: {error}") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"function {path!r}: {module_name!r} has no {attribute!r}; check "
                              "the name after the colon")
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(f"function {path!r}: {attribute!r} is not a function")
    with _lock:
        _loaded[path] = target
    return target


@dataclass(frozen=True, slots=True)
class Returned:
    """A python critic's answer, read: the value (a label, a score, or a bool for
    passed / failed), with its reasoning and confidence if it gave them."""

    value: Any
    reasoning: str | None = None
    confidence: float | None = None


def read_returned(returned: Any) -> Returned:
    """Read what a python critic returned (see the module docstring for the forms).

    Raises:
        ValueError: a form this module does not know, in a sentence.
    """
    if isinstance(returned, tuple):
        if len(returned) != 2 or not isinstance(returned[1], (str, type(None))):
            raise ValueError(f"returned a tuple of {len(returned)} values; return (value, "
                             "'reasoning')")
        return Returned(returned[0], returned[1])
    if isinstance(returned, dict):
        keys = [k for k in ("label", "score", "passed") if k in returned]
        if len(keys) != 1:
            raise ValueError("returned a dict without exactly one of label, score or passed")
        unknown = set(returned) - {"label", "score", "passed", "reasoning", "confidence"}
        if unknown:
            raise ValueError(f"returned a dict with unknown keys {sorted(unknown)}; use label, "
                             "score or passed, reasoning and confidence")
        confidence = returned.get("confidence")
        if confidence is not None and (isinstance(confidence, bool)
                                       or not isinstance(confidence, (int, float))
                                       or not 0 <= confidence <= 1):
            raise ValueError(f"returned confidence {confidence!r}; give a number from 0 to 1")
        reasoning = returned.get("reasoning")
        return Returned(returned[keys[0]], None if reasoning is None else str(reasoning),
                        None if confidence is None else float(confidence))
    return Returned(returned)
