"""Turning Jurybox's errors into sentences on the page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from judging.runs.messages import EXPECTED, sentence_for
from pages.ui.text_format import plain


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
    except EXPECTED as error:
        text = sentence_for(error) or str(error)
        # Messages may echo input (a file's column, a URL parameter): shown as text only.
        st.error(plain(f"{prefix}: {text}" if prefix else text), icon=":material/error:")
