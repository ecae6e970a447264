"""The `{placeholder}` syntax of prompt templates, and the templates it refuses.

A template names item fields as `{field}`; `{{` and `}}` are literal braces (so a JSON example
can stay in a prompt). Any other brace is passed through as it is written, which is what a JSON
example with single braces (`{"label": "yes"}`) needs. But a few shapes are almost always a
mistake, and a mistake here is expensive: the template is only rendered when the run sends its
first call, so every call of the critic failed and the run still looked finished. They are
refused when the critic is built (`template_problem`, called by `Critic`'s validator):

- a `{` that is never closed, or a `}` that closes nothing (`"Is {question good?"`);
- a positional field, `{}` or `{0}` (Python's `str.format` habit: we fill fields by name);
- a field with a format spec, conversion or attribute (`{text:>10}`, `{text!r}`,
  `{text.title}`): shown literally, never applied;
- a field name with spaces inside the braces (`{ text }`: Jinja's habit);
- no field at all: the critic would never see the item.

A critic's other texts (`system_prompt`, a compound critic's `reason_prompt` and
`verify_prompt`) are sent as they are, never filled: a `{field}` in them is refused too
(`plain_text_problem`), since it reads as a field that would never be shown.
"""

from __future__ import annotations

import re

# {name} is a placeholder; {{ and }} are literal braces. `judging.panel.critics` renders with it.
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_POSITIONAL = re.compile(r"\s*\d*\s*")
_SPACED = re.compile(rf"\s*({_NAME})\s*")
# str.format's extras after a name: a conversion, a format spec, an attribute or an index.
# No spaces: `{score: 1}` reads as literal text, `{score:>5}` as a format.
_FORMAT_SPEC = r"(?:[^\s{}]?[<>=^])?[+\-]?z?#?0?\d*[,_]?(?:\.\d+)?[bcdeEfFgGnosxX%]?"
_FORMATTED = re.compile(
    rf"({_NAME})(?:![rsa](?::{_FORMAT_SPEC})?|:{_FORMAT_SPEC}|(?:\.{_NAME}|\[\w+\])+)"
)
_JINJA_FIELD = re.compile(rf"\{{\{{\s*({_NAME})\s*\}}\}}")


def _snippet(text: str) -> str:
    """A short quote of the template around a problem (one line, at most 24 characters)."""
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= 24 else line[:23] + "…"


def template_problem(template: str) -> str | None:
    """What is wrong with a prompt template, as a sentence naming the problem and the fix;
    None when it is fine.

    Args:
        template: a critic's `prompt_template`.
    """
    used = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(template)]
    names = [m.group(1) for m in PLACEHOLDER.finditer(template) if m.group(1)]
    # Braces the placeholder syntax did not take: pair them up like brackets.
    loose: list[int] = []
    spans = iter(used)
    span = next(spans, None)
    for index, char in enumerate(template):
        while span is not None and index >= span[1]:
            span = next(spans, None)
        if char in "{}" and not (span is not None and span[0] <= index < span[1]):
            loose.append(index)
    opened: list[int] = []
    for index in loose:
        if template[index] == "{":
            opened.append(index)
            continue
        if not opened:
            return (f"the '}}' in {_snippet(template[max(0, index - 20):index + 1])!r} closes "
                    "no '{'; write }} for a literal brace, or {field} for a field")
        start = opened.pop()
        inner = template[start + 1:index]
        if "{" in inner or "}" in inner:
            continue  # an outer pair (a JSON example): its inner pairs were checked already
        problem = _group_problem(inner)
        if problem is not None:
            return problem
    if opened:
        start = opened[0]
        rest = template[start:]
        word = re.match(_NAME, rest[1:])
        eaten = " ('}}' is one literal brace)" if "}}" in rest else ""
        return (f"the '{{' in {_snippet(rest)!r} is never closed{eaten}; write "
                f"{{{word.group(0) if word else 'text'}}} to show a field, or {{{{ for a "
                "literal brace")
    if not names:
        jinja = _JINJA_FIELD.search(template)
        if jinja is not None:
            return (f"{jinja.group(0)!r} is literal text in Jurybox ({{{{ and }}}} are "
                    f"literal braces), so the prompt shows no field; write {{{jinja.group(1)}}}")
        return ("the prompt has no {field} placeholder, so the critic would never see the "
                "item; add the fields to judge, e.g. {text}")
    return None


def _group_problem(inner: str) -> str | None:
    """The problem of one `{...}` pair the placeholder syntax did not take, if it is a
    mistaken field rather than literal text."""
    shown = "{" + inner + "}"
    if _POSITIONAL.fullmatch(inner):
        return (f"{shown!r} is a positional field, but Jurybox fills fields by name; write the "
                "field's name, e.g. {text} (or {{}} for literal braces)")
    spaced = _SPACED.fullmatch(inner)
    if spaced is not None:
        return (f"{shown!r} has spaces inside the braces; write {{{spaced.group(1)}}} for the "
                f"field, or {{{shown}}} for literal braces")
    formatted = _FORMATTED.fullmatch(inner)
    if formatted is not None:
        return (f"{shown!r} asks for a format, conversion or attribute that Jurybox does not "
                f"apply (it would be sent as it is); write {{{formatted.group(1)}}} for the "
                f"field, or {{{shown}}} for literal braces")
    return None


def plain_text_problem(text: str) -> str | None:
    """What is wrong with a text sent as it is (a system prompt, a compound critic's step
    instruction): a `{field}` that would reach the model unfilled. None when it is fine."""
    for match in PLACEHOLDER.finditer(text):
        name = match.group(1)
        if name:
            return (f"{{{name}}} would be sent as it is: only prompt_template fills in fields "
                    f"(and shows the item); move it there, or write {name} without braces")
    return None
