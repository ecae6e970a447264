"""Jurybox's error tree, split by "would a retry help?".

    JuryboxError
    ├── ConfigError          the panel, a critic or a scale is wrong: fix the configuration
    │   └── PlaceholderError a prompt names a field the dataset does not have
    ├── DataError            the dataset (or another input file) is wrong: fix the file
    ├── JobConflict          a run cannot be started now: another job owns it, or it is done
    ├── StorageError         the database cannot do what was asked (a conflict, a missing row)
    │   ├── NotFoundError    a dataset, panel, run or item id that is not there
    │   └── DatabaseFault    the file cannot be used: damaged, read-only, full, locked, no folder
    └── CallFailure          one model call did not give a verdict (kept as a failed Verdict,
                             never raised out of a panel run)
        ├── RetryableCallError   429, 5xx, timeouts, resets, HTML from a proxy
        ├── ItemCallError        fatal for this item only (e.g. context too long)
        │   └── UnsupportedParameterError  the model refuses a parameter (adjusted, retried)
        ├── CriticCallError      fatal for the critic (401, 403, 404, out of quota)
        ├── RefusalError         the model declined to judge
        ├── TruncatedError       finish_reason=length with no usable answer
        └── ParseError           the reply does not hold a verdict on the scale

Errors are translated into these at one boundary (the call layer for HTTP, the importers for
files); pages turn them into a sentence with `str(error)`. No message ever contains an API key.
"""

from __future__ import annotations

from typing import ClassVar

# The one spelling of failure kinds: a CallFailure names its kind with the enum a failed
# Verdict stores (both leaves; verdicts imports nothing of judging, so no circle).
from judging.verdicts import FailureKind


class JuryboxError(Exception):
    """Base of every error Jurybox raises on purpose."""


class ConfigError(JuryboxError):
    """A panel, critic or scale is misconfigured. Retrying will not help; editing it will."""


class PlaceholderError(ConfigError):
    """A prompt template names a placeholder that is not a field of the items."""

    def __init__(self, critic: str, placeholder: str, fields: list[str], *,
                 reader: str = "the prompt uses") -> None:
        self.critic = critic
        self.placeholder = placeholder
        self.fields = sorted(fields)
        available = ", ".join(self.fields) or "(none)"
        # `reader`: who wants the field ("the rule checks" for a rule critic, which has no prompt).
        super().__init__(
            f"Critic {critic!r}: {reader} {{{placeholder}}} but the items have no field "
            f"{placeholder!r}. Fields available: {available}."
        )


class DataError(JuryboxError):
    """An input file (dataset, panel file) cannot be used as it is."""


class StorageError(JuryboxError):
    """The database cannot do what was asked (a conflict, a missing row); the message says why."""


class NotFoundError(StorageError, LookupError):
    """A dataset, panel, run or item id that is not in the database."""


class DatabaseFault(StorageError):
    """The database file cannot be used as asked (damaged, read-only, full, locked, missing
    folder): the user's environment, not a bug. The CLI exits 2 for it."""


class JobConflict(JuryboxError):
    """A job cannot start: the run is busy, finished, or in a state that does not allow it."""


class CallFailure(JuryboxError):
    """One model call did not produce a verdict. `kind`: the `FailureKind` the failed verdict
    stores."""

    kind: ClassVar[FailureKind] = FailureKind.ERROR

    def __init__(self, message: str, *, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


class RetryableCallError(CallFailure):
    """A retry may help. `retry_after`: the wait the failure itself asks for (seconds);
    `rate_limited`: the vendor's rate limit, retried longer and never counted as a critic's
    recurring error."""

    kind = FailureKind.ERROR

    def __init__(
        self, message: str, *, raw: str | None = None, retry_after: float | None = None,
        rate_limited: bool = False,
    ) -> None:
        super().__init__(message, raw=raw)
        self.retry_after = retry_after
        self.rate_limited = rate_limited


class ItemCallError(CallFailure):
    kind = FailureKind.ITEM_ERROR


class UnsupportedParameterError(ItemCallError):
    """HTTP 400 naming a parameter (or a value of it) the model refuses. `replacement`: the
    name the vendor says to use instead (OpenAI: "Use 'max_completion_tokens' instead"), or
    None to leave the parameter out."""

    def __init__(self, message: str, *, parameter: str, replacement: str | None = None,
                 raw: str | None = None) -> None:
        super().__init__(message, raw=raw)
        self.parameter = parameter
        self.replacement = replacement


class CriticCallError(CallFailure):
    kind = FailureKind.CRITIC_ERROR


class RefusalError(CallFailure):
    kind = FailureKind.REFUSAL


class TruncatedError(CallFailure):
    kind = FailureKind.TRUNCATED


class ParseError(CallFailure):
    kind = FailureKind.PARSE_FAIL
