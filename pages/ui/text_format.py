"""Strings from data shown as text inside Streamlit's markdown (captions, alerts, labels)."""

from __future__ import annotations

import string

_MARKDOWN_SPECIALS = frozenset(string.punctuation)
# An invisible WORD JOINER. GitHub-flavoured markdown turns `www.`, `http://` and `a@b.c` into
# links after escapes are resolved (a backslash does not stop it, seen in Chromium), so one is
# put before every "." and after every ":" and "@": no link pattern matches any more.
_JOINER = "\u2060"


def plain(text: object) -> str:
    """`text` as literal text for `st.markdown`, `st.caption`, `st.error` and widget labels.

    Every ASCII punctuation mark is backslash-escaped (no emphasis, link, image, heading,
    HTML, math or `:color[...]` directive can form) and autolinks are broken with an invisible
    joiner, so a dataset's column name, a file name or an error echoing input shows exactly as
    typed and is never a link.
    """
    out: list[str] = []
    for ch in str(text):
        if ch == ".":
            out.append(_JOINER)
        out.append("\\" + ch if ch in _MARKDOWN_SPECIALS else ch)
        if ch in ":@":
            out.append(_JOINER)
    return "".join(out)


def count_of(n: int, singular: str, plural: str | None = None) -> str:
    """"1 item", "2 items", "1,200 items" ("1 item matches" / "3 items match" with `plural`)."""
    if plural is None:
        plural = singular + "s"
    return f"{n:,} {singular if n == 1 else plural}"

