"""Turning Jurybox's errors into sentences on the page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pydantic
import streamlit as st

from judging.errors import JuryboxError
from pages.ui.text import plain


def validation_sentence(error: pydantic.ValidationError) -> str:
    """One readable sentence per problem of a pydantic validation error, naming the field.

    pydantic's own text carries URLs and input echoes; an input echo could hold whatever the
    user pasted, so only the field path and the message are kept.
    """
    parts = []
    for problem in error.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in problem.get("loc", ())) or "value"
        message = str(problem.get("msg", "is not valid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts) + "."


@contextmanager
def user_errors(prefix: str | None = None) -> Iterator[None]:
    """Show a `JuryboxError` (or a pydantic validation error) raised inside the block as a sentence.

    The prefix and the message are shown as text (`plain`): both may echo a file name, a column
    or a value from the data. Anything else is a bug and propagates: with
    `client.showErrorDetails = "none"` the user sees a generic message and the traceback stays
    in the server log. Streamlit's own control-flow exceptions (`st.rerun`, `st.switch_page`)
    are not caught.

    Args:
        prefix: an optional short lead-in, e.g. "Import failed".
    """
    try:
        yield
    except JuryboxError as error:
        _show(prefix, str(error))
    except pydantic.ValidationError as error:
        _show(prefix, validation_sentence(error))


def _show(prefix: str | None, text: str) -> None:
    st.error(plain(f"{prefix}: {text}" if prefix else text), icon=":material/error:")
