"""A critic's request as a template: the bytes it sends for any item, with each field marked.

Every plain call of a critic sends the same request but for the item's fields. Storing each
request whole repeated ~1.5 KB per verdict; storing the template once per run and critic, and
rebuilding a request from it and the item, keeps the same evidence at a fraction of the size
(`judging.runs.background.writer` decides, `storage.results.calls` stores).

A request is only ever left to the template when the rebuild gives exactly the bytes that were
sent: the rebuilt bytes are hashed as the cache key is (`prepare_call`) and must equal the
verdict's cache key. Anything else (a compound critic's step, a repeat, a rubric call, a field
that defeats the markers) keeps its request whole.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from judging.engine.calls.prepare import prepare_call
from judging.errors import JuryboxError
from judging.panel.critics import Critic, as_data
from judging.panel.vendors import api_of
from judging.scales import Scale
from judging.verdicts import Item, Verdict

# Private-use characters: JSON keeps them as they are (ensure_ascii=False), and no prompt or
# field has a reason to hold them (a field that does is caught by the hash check).
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"{_OPEN}([^{_OPEN}{_CLOSE}]*){_CLOSE}")


@dataclass(frozen=True, slots=True)
class RequestTemplate:
    """What a critic's plain call sends, with `\\ue000field\\ue001` where each field goes.

    Attributes:
        prefix: what the cache key hashes before the body ("vendor\\nbase URL key\\n").
        content: the body as sent, markers in place of the fields' text.
    """

    prefix: str
    content: str
    url: str  # where it goes, as far as the panel says ("simulated://..." for the simulator)


def request_template(critic: Critic, scale: Scale) -> RequestTemplate | None:
    """The critic's template, or None when there is none to make (no placeholder, or a vendor
    the call itself will refuse with a sentence)."""
    names = critic.placeholders
    if not names:
        return None
    marked = Item(id="template", fields={name: f"{_OPEN}{name}{_CLOSE}" for name in names})
    try:
        prepared = prepare_call(critic, marked, scale)
    except JuryboxError:
        return None
    path = "messages" if api_of(critic) == "messages" else "chat/completions"
    return RequestTemplate(f"{critic.vendor}\n{prepared.url_key}\n", prepared.content.decode(),
                           f"{prepared.url_key}/{path}")


@functools.lru_cache(maxsize=256)
def _pieces(content: str) -> tuple[str, ...]:
    """The template split at its markers: text, field name, text, field name, ..., text."""
    return tuple(_MARKER.split(content))


def rebuild(template: RequestTemplate, fields: dict[str, Any]) -> bytes | None:
    """The bytes the template gives for an item's fields (None: a field is missing)."""
    pieces = list(_pieces(template.content))
    for index in range(1, len(pieces), 2):  # the odd pieces name fields
        name = pieces[index]
        if name not in fields:
            return None
        # As the prompt renders it (`as_data`), then as JSON writes it inside a string.
        pieces[index] = json.dumps(as_data(fields[name]), ensure_ascii=False)[1:-1]
    return "".join(pieces).encode()


def rebuilds(template: RequestTemplate, verdict: Verdict, item: Item) -> bool:
    """Whether the template rebuilds exactly the request this verdict's call sent: the rebuilt
    bytes hash to its cache key (a repeat's key is salted and never matches: kept whole). A
    cache hit qualifies too: its key names the very bytes the first call sent. A call that was
    never sent (a stopped critic, a cancel) has no request to rebuild, and gets none."""
    if verdict.cache_key is None or verdict.steps:
        return False
    if verdict.raw_request is not None and "adjusted" in verdict.raw_request:
        return False  # sent with parameters the vendor refused taken out: not the template
    if verdict.raw_request is None and not verdict.cached:
        return False
    content = rebuild(template, item.fields)
    if content is None:
        return False
    digest = hashlib.sha256(template.prefix.encode())
    digest.update(content)
    return digest.hexdigest() == verdict.cache_key


def rebuilt_request(template: RequestTemplate, url: str, fields: dict[str, Any]
                    ) -> dict[str, Any] | None:
    """The raw request as stored ({"url", "body"}), rebuilt for an item's fields."""
    content = rebuild(template, fields)
    return None if content is None else {"url": url, "body": json.loads(content)}
