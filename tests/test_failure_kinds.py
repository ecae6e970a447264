"""One spelling of failure kinds: a call failure names its kind with the enum verdicts store."""

from __future__ import annotations

import judging.errors as errors
from judging.verdicts import FailureKind


def _subclasses(cls: type) -> list[type]:
    return [cls] + [s for sub in cls.__subclasses__() for s in _subclasses(sub)]


def test_every_call_failure_names_a_failure_kind_member() -> None:
    kinds = {cls.__name__: cls.kind for cls in _subclasses(errors.CallFailure)}
    assert all(type(kind) is FailureKind for kind in kinds.values()), kinds
    assert kinds["ParseError"] is FailureKind.PARSE_FAIL
    assert kinds["CriticCallError"] is FailureKind.CRITIC_ERROR
    assert kinds["UnsupportedParameterError"] is FailureKind.ITEM_ERROR  # inherited
    # Still the plain string where one is compared or stored.
    assert errors.RefusalError("no").kind == "refusal"
