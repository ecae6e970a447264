"""The one boundary between Jurybox's errors and the people who read them.

`sentence_for(error)` is what the CLI prints after "jurybox: error:" and what a page shows in
its error box, so one fault reads the same everywhere. It answers None for anything that is
not an expected error (a bug): that propagates, and the traceback goes to the log only.
"""

from __future__ import annotations

import pydantic

from judging.errors import JuryboxError
from judging.panel.panel_files import validation_message
from storage.faults import DRIVER_ERRORS, DbPath, database_fault

# What the boundary turns into sentences (everything else is a bug and propagates).
EXPECTED: tuple[type[Exception], ...] = (JuryboxError, pydantic.ValidationError, *DRIVER_ERRORS)


def sentence_for(error: BaseException, *, database: DbPath | None = None) -> str | None:
    """The sentence for an expected error, or None when the error is a bug.

    Args:
        error: what was raised.
        database: the database file in use, named in the sentence of a SQLite fault.
    """
    if isinstance(error, JuryboxError):
        return str(error)
    if isinstance(error, pydantic.ValidationError):
        # Field paths and reasons only; values that could be keys are never echoed.
        return validation_message(error) + "."
    if isinstance(error, DRIVER_ERRORS):
        return str(database_fault(error, database))
    return None
