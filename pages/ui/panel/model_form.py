"""Widgets generated from a pydantic model: one widget per field, chosen by the field's type.

Why generated: the Panel page edits the engine's own model. A hand-written copy of its fields
drifted (it dropped `limits`, had no `target_label`, thresholds or cascade settings), so the
page could set only part of a panel. Here every field of a model gets a widget unless the
caller draws that field itself, and a field added to the model shows up on the page.

Values are edited in a plain dict (the model's `model_dump(mode="json")`); `Panel` validation
then judges the whole. An unchanged widget returns the value it was given, untouched, so a
panel loaded and saved without edits keeps its content hash.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

import pydantic
import streamlit as st
import yaml

# field path -> a custom drawer `(label, value, key) -> new value` (takes precedence).
Drawer = Callable[[str, Any, str], Any]
# field name -> (label, help) written for people, instead of the name made readable.
FieldTexts = Mapping[str, tuple[str, str | None]]


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    """`X | None` -> (X, True); anything else -> (annotation, False)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0], True
    return annotation, False


def label_of(name: str) -> str:
    """"price_in_per_mtok" -> "Price in per mtok" (the field's own name, readable)."""
    return name.replace("_", " ").capitalize()


def _lines(value: list[Any]) -> str:
    return "\n".join(str(v) for v in value)


def _yaml_text(value: Any) -> str:
    if value in ({}, [], None):
        return ""
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True).strip()


def _is_model(args: tuple[Any, ...]) -> bool:
    return bool(args) and isinstance(args[0], type) and issubclass(args[0], pydantic.BaseModel)


def field_widget(label: str, annotation: Any, value: Any, key: str, *, help: str | None = None) -> Any:
    """Draw one widget for a value of type `annotation`; returns the (possibly edited) value.

    Literal -> select box; bool -> checkbox (an optional bool: a three-way select box);
    int / float -> number input (optional ones may be left empty: None); str -> text input
    (text area for prompts); list of str -> one entry per line; list of int -> comma separated;
    dicts, lists of models (a rubric's criteria) and anything else -> YAML in a text area. A
    text that does not parse is reported under the widget and the previous value kept (the
    user's text stays in the widget).
    """
    inner, optional = _unwrap_optional(annotation)
    origin = typing.get_origin(inner)
    if origin is Literal:
        options = list(typing.get_args(inner))
        if optional:
            options = [None, *options]
        index = options.index(value) if value in options else 0
        return st.selectbox(label, options, index=index, key=key, help=help,
                            format_func=lambda v: "(not set)" if v is None else str(v))
    if inner is bool:
        if optional:
            options3: list[bool | None] = [None, True, False]
            return st.selectbox(
                label, options3, index=options3.index(value) if value in options3 else 0,
                key=key, help=help,
                format_func=lambda v: "(the vendor's default)" if v is None else ("on" if v else "off"),
            )
        return st.checkbox(label, value=bool(value), key=key, help=help)
    if inner is int:
        return st.number_input(label, value=None if value is None else int(value), step=1,
                               key=key, help=help, placeholder="(not set)" if optional else None)
    if inner is float:
        got = st.number_input(label, value=None if value is None else float(value), step=0.1,
                              format="%g", key=key, help=help,
                              placeholder="(not set)" if optional else None)
        # A float field holding an int in the file (e.g. `weight: 1`) keeps its exact value.
        return value if got is not None and value is not None and got == value else got
    if inner is str:
        multiline = "prompt" in key.rsplit(".", 1)[-1] or "description" in key.rsplit(".", 1)[-1]
        widget = st.text_area if multiline else st.text_input
        text = widget(label, value="" if value is None else str(value), key=key, help=help)
        if optional and not text.strip():
            return None
        return text
    if origin is list and not _is_model(typing.get_args(inner)):  # a list of models: YAML
        (item_type,) = typing.get_args(inner) or (Any,)
        if item_type is int:
            shown = ", ".join(str(v) for v in value or [])
            text = st.text_input(label, value=shown, key=key, help=help,
                                 placeholder="comma separated, e.g. 0, 1")
            if text == shown:
                return value
            try:
                return [int(part) for part in text.replace(";", ",").split(",") if part.strip()]
            except ValueError:
                st.error(f"{label}: whole numbers separated by commas, e.g. 0, 1.")
                return value
        shown = _lines(value or [])
        text = st.text_area(label, value=shown, key=key, help=help, height=90,
                            placeholder="one per line")
        if text == shown:
            return value
        return [line.strip() for line in text.splitlines() if line.strip()]
    # dicts, Any and everything else: YAML, which the page's users already write panels in.
    shown = _yaml_text(value)
    text = st.text_area(label, value=shown, key=key, help=(help or "") + " (YAML)", height=90,
                        placeholder="YAML, e.g.  key: value")
    if text == shown:
        return value
    try:
        parsed = yaml.safe_load(text) if text.strip() else ({} if isinstance(value, dict) else None)
    except yaml.YAMLError as error:
        st.error(f"{label}: this is not valid YAML ({getattr(error, 'problem', None) or error}).")
        return value
    return parsed


def model_editor(
    model: type[pydantic.BaseModel],
    data: dict[str, Any],
    key_prefix: str,
    *,
    skip: tuple[str, ...] = (),
    drawers: Mapping[str, Drawer] | None = None,
    columns: int = 1,
    texts: FieldTexts | None = None,
) -> None:
    """Widgets for every field of `model`, editing `data` (its JSON dump) in place.

    Args:
        model: the pydantic model whose fields are drawn.
        data: the model's values as `model_dump(mode="json")` gives them; edited in place.
        key_prefix: widget keys are `f"{key_prefix}.{field}"` (nested models add their path).
        skip: fields the caller draws itself (it must, or they are not editable).
        drawers: field name -> a custom drawer for that field.
        columns: lay the simple fields out in this many columns.
        texts: field name -> (label, help) written for people; a field without one is labelled
            by its name made readable, with the model's description as its help.
    """
    drawers = drawers or {}
    texts = texts or {}
    fields = [(n, f) for n, f in model.model_fields.items() if n not in skip]
    slots = st.columns(columns) if columns > 1 else None
    for position, (name, info) in enumerate(fields):
        key = f"{key_prefix}.{name}"
        label, help_text = texts.get(name, (label_of(name), info.description))
        value = data.get(name, info.get_default(call_default_factory=True))
        if isinstance(value, pydantic.BaseModel):
            value = value.model_dump(mode="json")
        inner, _ = _unwrap_optional(info.annotation)
        container = slots[position % columns] if slots else st.container()
        with container:
            if name in drawers:
                data[name] = drawers[name](label, value, key)
            elif isinstance(inner, type) and issubclass(inner, pydantic.BaseModel):
                st.markdown(f"**{label}**")
                nested = dict(value or {})
                model_editor(inner, nested, key)
                data[name] = nested
            else:
                data[name] = field_widget(label, info.annotation, value, key, help=help_text)


def field_paths(model: type[pydantic.BaseModel], prefix: str = "") -> list[str]:
    """Every leaf field of a model as a dotted path ("voting.target_label"), nested models
    walked; lists of models (the critics) are left to the caller."""
    paths = []
    for name, info in model.model_fields.items():
        inner, _ = _unwrap_optional(info.annotation)
        path = f"{prefix}{name}"
        if isinstance(inner, type) and issubclass(inner, pydantic.BaseModel):
            paths += field_paths(inner, path + ".")
        else:
            paths.append(path)
    return paths
