"""A module only the web-refusal test names: it must never be imported by the web app's runs
(the test checks `sys.modules`). Importing it records the fact."""

from __future__ import annotations

from typing import Any

IMPORTED = True


def check(item: dict[str, Any], reference: Any) -> bool:
    return True
