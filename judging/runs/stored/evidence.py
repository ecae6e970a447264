"""The evidence of a stored call, whole again: a request left to its run's template
(`judging.engine.calls.template`) is rebuilt from it and the item, for Review's raw exchange."""

from __future__ import annotations

from typing import Any

from judging.engine.calls.template import RequestTemplate, rebuilt_request
from storage.results.calls import request_templates


def fill_requests(db: Any, run_id: int, detail: dict[str, Any]) -> dict[str, Any]:
    """`storage.reviewing.review_queue.item_detail(...)` with every critic's raw request in place: a request
    stored whole stays as it is; one left to the template is rebuilt (exactly the bytes sent:
    the writer checked that before leaving it out)."""
    waiting = [row for row in detail["verdicts"]
               if row.get("raw_request") is None and row.get("request_rebuilt")]
    if not waiting:
        return detail
    templates = request_templates(db, run_id)
    for row in waiting:
        stored = templates.get(row["critic"])
        if stored is not None:
            url, prefix, content = stored
            row["raw_request"] = rebuilt_request(RequestTemplate(prefix, content, url), url,
                                                 detail["fields"])
    return detail
