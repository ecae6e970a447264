"""Panel files: YAML with a schema version, a content hash per panel version, and imports.

A panel file holds the scale, the critics and the voting configuration; never an API key (a
critic names the environment variable that holds its key). Every problem with a file becomes a
`ConfigError` naming the field path and the reason, e.g.
"critics[1].temperature: must be at most 2 (got 3.5)".
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from judging.errors import ConfigError
from judging.known_fields import UNKNOWN_FIELD
from judging.panel.critics import Critic, plugin_stand_ins
from judging.panel.jury_checks import check_juries
from judging.panel.panel_checks import check_panel
from judging.panel.panel_model import PANEL_SCHEMA_VERSION, Panel
from judging.verdicts import PLUGIN_KINDS

# Keys whose value would be a credential. `api_key_env` (a variable NAME) is the sanctioned way.
_SECRET_KEY = re.compile(
    r"^(api[_-]?key|apikey|key|secret|secret[_-]?key|client[_-]?secret|password|passwd|"
    r"(access|auth|bearer|api|session)[_-]?token|token|authorization|bearer)$",
    re.IGNORECASE,
)
# Values shaped like the keys vendors hand out (OpenAI/DeepSeek/Anthropic sk-, OpenRouter
# sk-or-, Google AIza, Groq gsk_, Hugging Face hf_, xAI xai-) or an Authorization header.
_SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9])(sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}|gsk_[A-Za-z0-9]{20,}|"
    r"hf_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,}|Bearer\s+[A-Za-z0-9._\-~+/]{16,})"
)
_KEY_ADVICE = (
    "panel files must never hold an API key. Put the key in an environment variable (or a "
    "Streamlit secret) and name it in the critic, e.g. api_key_env: OPENAI_API_KEY"
)
_TOP_ORDER = (
    "schema_version", "name", "description", "scale", "voting", "cascade", "limits", "curation",
    "critics",
)


# ----------------------------------------------------------------------------- errors


def _path_text(loc: tuple[Any, ...] | list[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif isinstance(part, str) and not any(c in part for c in "[]()"):
            # pydantic adds tags like "function-after[...]" for validators: not a field.
            text += part if not text else f".{part}"
    return text or "panel"


def _show(value: Any) -> str | None:
    """A short rendering of a bad value, or None when it is not safe or useful to echo."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return f"{value:g}"
    if isinstance(value, str) and len(value) <= 40 and not _SECRET_VALUE.search(value):
        return repr(value)
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "a mapping"
    return None


def _reason(error: Any) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    bounds = {
        "less_than_equal": ("must be at most", "le"),
        "less_than": ("must be less than", "lt"),
        "greater_than_equal": ("must be at least", "ge"),
        "greater_than": ("must be more than", "gt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return (
            f"{words} {ctx.get(key, '?'):g}"
            if isinstance(ctx.get(key), (int, float))
            else (f"{words} {ctx.get(key)}")
        )
    if kind == "missing":
        return "is required"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be a whole number"
    if kind in ("float_parsing", "float_type", "finite_number"):
        return "must be a number"
    if kind in ("bool_parsing", "bool_type"):
        return "must be true or false"
    if kind in ("string_type",):
        return "must be text"
    if kind in ("list_type", "tuple_type"):
        return "must be a list"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "must be a mapping of fields"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length', 1)} entry"
    message = str(error.get("msg", "is not valid"))
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def validation_message(error: ValidationError, prefix: str = "") -> str:
    """One sentence per problem of a pydantic error: 'field.path: reason (got value)'.

    Args:
        error: the pydantic error.
        prefix: prepended to every field path (e.g. "critics[0]" for a lone critic).

    Returns:
        The problems joined by "; ". Values that could be keys are never echoed.
    """
    parts: list[str] = []
    for item in error.errors(include_url=False):
        loc = _path_text(item.get("loc", ()))
        if item.get("type") == UNKNOWN_FIELD:
            # Raised by the model holding the field (`judging.known_fields`): its path, then
            # the field's own name.
            name = item["ctx"]["field"]
            loc = name if loc == "panel" else f"{loc}.{name}"
        if prefix:
            loc = (
                prefix
                if loc == "panel"
                else f"{prefix}.{loc}"
                if not loc.startswith("[")
                else (prefix + loc)
            )
        reason = item["ctx"]["reason"] if item.get("type") == UNKNOWN_FIELD else _reason(item)
        shown = None
        field = str(item.get("loc", ("",))[-1]) if item.get("loc") else ""
        if (item.get("type") not in ("missing", "value_error", UNKNOWN_FIELD)
                and "key" not in field.lower()):
            shown = _show(item.get("input"))
        parts.append(f"{loc}: {reason}" + (f" (got {shown})" if shown is not None else ""))
    return "; ".join(parts)


# ----------------------------------------------------------------------------- secrets


def find_secret(data: Any, path: str = "") -> str | None:
    """The path of the first value that looks like a literal API key, or None.

    Args:
        data: parsed YAML/JSON (dicts, lists, scalars).
        path: the path of `data` itself, for the message.
    """
    if isinstance(data, dict):
        for key, value in data.items():
            sub = f"{path}.{key}" if path else str(key)
            if (
                isinstance(key, str)
                and _SECRET_KEY.match(key)
                and value not in (None, "")
                and not isinstance(value, (dict, list))
            ):
                return sub
            found = find_secret(value, sub)
            if found:
                return found
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found = find_secret(value, f"{path}[{index}]")
            if found:
                return found
    elif isinstance(data, str) and _SECRET_VALUE.search(data):
        return path or "panel"
    return None


def _refuse_secrets(data: Any) -> None:
    where = find_secret(data)
    if where is not None:
        raise ConfigError(f"{where}: this looks like a literal API key; {_KEY_ADVICE}")


# ----------------------------------------------------------------------------- YAML


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate keys (PyYAML would silently keep the last one)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            line = key_node.start_mark.line + 1
            raise ConfigError(f"{key}: the key appears twice in the file (again at line {line})")
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings (prompts) as `|` blocks so the file reads like the prompt."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _represent_str)


def _parse_yaml(text: str, what: str) -> Any:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        # Built from the parts, not str(error): that quotes the offending line, which could be
        # a key.
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{what}: YAML syntax error{where}: {error.problem}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{what}: not valid YAML ({type(error).__name__})") from None


def _read_source(path_or_text: str | os.PathLike[str]) -> tuple[str, str]:
    """(text, name for messages) from a path or from YAML text."""
    if isinstance(path_or_text, os.PathLike) or (
        isinstance(path_or_text, str)
        and "\n" not in path_or_text
        and (
            path_or_text.endswith((".yaml", ".yml", ".json"))
            or (len(path_or_text) < 4096 and Path(path_or_text).is_file())
        )
    ):
        path = Path(path_or_text)
        try:
            return path.read_text(encoding="utf-8"), f"panel file {path.name}"
        except FileNotFoundError:
            raise ConfigError(f"panel file {path}: no such file") from None
        except UnicodeDecodeError:
            raise ConfigError(f"panel file {path}: not UTF-8 text") from None
        except OSError as error:
            raise ConfigError(f"panel file {path}: cannot be read ({error.strerror})") from None
    if not isinstance(path_or_text, str):
        raise ConfigError(f"panel file: expected a path or YAML text, got {type(path_or_text)}")
    return path_or_text, "panel file"


# ----------------------------------------------------------------------------- panels


def _check_version(data: dict[str, Any]) -> None:
    version = data.get("schema_version", PANEL_SCHEMA_VERSION)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ConfigError(f"schema_version: must be a whole number (got {_show(version)})")
    if version > PANEL_SCHEMA_VERSION:
        raise ConfigError(
            f"schema_version: this panel file is version {version}, but this Jurybox reads "
            f"panel files up to version {PANEL_SCHEMA_VERSION}; upgrade Jurybox to load it"
        )
    if version < 1:
        raise ConfigError(f"schema_version: must be 1 or more (got {version})")


def panel_from_dict(data: Any, what: str = "panel file") -> Panel:
    """Validate parsed panel data (a dict, as in a panel file) into a `Panel`.

    Raises:
        ConfigError: naming the field path and the reason.
    """
    if not isinstance(data, dict):
        got = "nothing" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"{what}: expected a mapping with scale, critics and voting, got {got}")
    _refuse_secrets(data)
    _check_version(data)
    data = {**data, "schema_version": PANEL_SCHEMA_VERSION}
    try:
        panel = Panel.model_validate(data)
    except ValidationError as error:
        raise ConfigError(validation_message(error)) from None
    # The Panel model runs these checks too; repeating them here keeps file loading honest
    # whatever the model does, and they are cheap.
    check_panel(panel)
    check_juries(panel)
    return panel


def load_panel(path_or_text: str | os.PathLike[str]) -> Panel:
    """Load a panel from a YAML file or from YAML text.

    Args:
        path_or_text: a path (a `Path`, or a one-line string ending in .yaml/.yml/.json or naming
            an existing file), or the YAML text itself.

    Returns:
        The validated panel.

    Raises:
        ConfigError: unreadable file, YAML syntax error, a newer schema version, a literal API
            key, an unknown field, or an invalid value; the message names the field path.
    """
    text, what = _read_source(path_or_text)
    return panel_from_dict(_parse_yaml(text, what), what)


def panel_to_dict(panel: Panel) -> dict[str, Any]:
    """The canonical content of a panel: JSON types, defaults left out, schema version first.

    Defaults are left out so that a field added to a later Jurybox (with a default) neither
    clutters old files nor changes their hash.
    """
    dumped = panel.model_dump(mode="json", exclude_defaults=True)
    dumped["schema_version"] = PANEL_SCHEMA_VERSION
    for critic in dumped.get("critics", []):
        # A rule or python critic's model and prompt are stand-ins (`Critic`): not written.
        if critic.get("kind") in PLUGIN_KINDS:
            for name, value in plugin_stand_ins(critic["kind"]).items():
                if critic.get(name) == value:
                    del critic[name]
    # Spelled out even when default: a reader should see the kind of scale and the strategy.
    dumped["scale"] = {"kind": panel.scale.kind, **dumped.get("scale", {})}
    dumped["voting"] = {"strategy": panel.voting.strategy, **dumped.get("voting", {})}
    ordered = {key: dumped[key] for key in _TOP_ORDER if key in dumped}
    ordered.update({key: value for key, value in dumped.items() if key not in ordered})
    return {key: value for key, value in ordered.items() if value != {}}


def dump_panel(panel: Panel) -> str:
    """The panel as YAML text (what `save_panel` writes).

    Raises:
        ConfigError: the panel holds something that looks like a literal API key.
    """
    data = panel_to_dict(panel)
    _refuse_secrets(data)
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def save_panel(panel: Panel, path: str | os.PathLike[str]) -> None:
    """Write the panel to a YAML file, atomically (a crash leaves the old file intact).

    Raises:
        ConfigError: the panel holds a literal API key, or the file cannot be written.
    """
    text = dump_panel(panel)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError as error:
        raise ConfigError(f"panel file {target}: cannot be written ({error.strerror})") from None


def panel_hash(panel: Panel) -> str:
    """A stable content hash naming this version of the panel (16 hex characters).

    The same content always gives the same hash (key order, defaults spelled out or not); any
    change to the scale, a critic, the voting or the cascade gives a new one.
    """
    canonical = json.dumps(
        panel_to_dict(panel), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


# ----------------------------------------------------------------------------- foreign prompts

_JINJA = re.compile(
    r"(?P<expr>\{\{-?(?P<inner>.*?)-?\}\})|(?P<stmt>\{%.*?%\})|(?P<comment>\{#.*?#\})|(?P<brace>[{}])",
    re.DOTALL,
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def convert_jinja_template(template: str, *, field: str = "user_prompt_template") -> str:
    """Turn a Jinja-style `{{ var }}` template into Jurybox's `{var}` form.

    Literal braces (a JSON example in the prompt) become `{{` / `}}` so they stay literal;
    Jinja comments are dropped.

    Raises:
        ConfigError: the template uses Jinja logic (`{% if %}`, filters, attributes) that a
            plain placeholder cannot express; the message quotes the construct.
    """

    def convert(match: re.Match[str]) -> str:
        if match.group("expr") is not None:
            inner = match.group("inner").strip()
            if _IDENT.fullmatch(inner):
                return "{" + inner + "}"
            raise ConfigError(
                f"{field}: {match.group('expr')!r} is a Jinja expression Jurybox cannot "
                "evaluate; use a plain {{ field }} placeholder"
            )
        if match.group("stmt") is not None:
            raise ConfigError(
                f"{field}: {match.group('stmt')[:40]!r} is Jinja logic Jurybox cannot run; "
                "write the prompt with plain {{ field }} placeholders"
            )
        if match.group("comment") is not None:
            return ""
        return match.group("brace") * 2

    return _JINJA.sub(convert, template)


def import_prompt_yaml(
    text: str | os.PathLike[str],
    *,
    name: str,
    model: str,
    vendor: str = "simulated",
    **critic_fields: Any,
) -> Critic:
    """Make a critic from the prompt YAML other judge libraries use.

    The shape: `version`, `system_prompt`, `user_prompt_template` with `{{ var }}` placeholders
    (other keys are ignored).

    Args:
        text: the YAML text, or a path to it.
        name: the critic's name.
        model: the model the critic calls.
        vendor: the vendor preset.
        **critic_fields: any other `Critic` field (temperature, weight, api_key_env, ...).

    Returns:
        The critic, with placeholders converted to `{var}` and literal braces kept literal.

    Raises:
        ConfigError: not that shape, Jinja logic in the template, a literal API key, or an
            invalid critic field.
    """
    if isinstance(text, os.PathLike):
        try:
            source = Path(text).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"prompt file {text}: cannot be read ({error})") from None
    else:
        source = text
    data = _parse_yaml(source, "prompt file")
    if not isinstance(data, dict):
        raise ConfigError("prompt file: expected a mapping with user_prompt_template")
    _refuse_secrets(data)
    template = data.get("user_prompt_template")
    if not isinstance(template, str) or not template.strip():
        raise ConfigError("user_prompt_template: is required and must be text")
    system = data.get("system_prompt") or ""
    if not isinstance(system, str):
        raise ConfigError("system_prompt: must be text")
    if re.search(r"\{\{.*?\}\}|\{%", system, re.DOTALL):
        raise ConfigError(
            "system_prompt: uses a {{ placeholder }}, but Jurybox fills placeholders only in the "
            "user prompt (where the item is delimited as data); move it to user_prompt_template"
        )
    fields = {
        "name": name,
        "model": model,
        "vendor": vendor,
        "prompt_template": convert_jinja_template(template),
        "system_prompt": system.strip(),
        **critic_fields,
    }
    _refuse_secrets(critic_fields)
    try:
        return Critic.model_validate(fields)
    except ValidationError as error:
        raise ConfigError(validation_message(error)) from None
