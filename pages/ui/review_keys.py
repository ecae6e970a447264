"""The Review loop from the keyboard, and the reviewer's name kept by the browser.

Streamlit 1.67 has keyboard shortcuts for buttons of its own (`st.button(..., shortcut=...)`):
Save, Next, Previous and Skip use them (they also show their key on the button). Two things it
has no shortcut for are done by one small script, constant but for the names it is handed
(JSON-encoded, never markup): a number key picks that label of the decision (a radio has no
shortcut), N puts the cursor in the note (Esc takes it out), and after every move the decision
of the item now open has the focus, so the next key press acts on it without the mouse.

Why a cookie for the reviewer's name: Streamlit forgets session state on a reload, and a name
in the URL would travel with every shared link (the receiver would save as the sender). A
cookie stays in this browser, and Streamlit hands it to the script (`st.context.cookies`).
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, unquote

import streamlit as st

from pages.ui.text_format import plain

SAVE_KEY = "Ctrl+Enter"  # a modifier: it works from the note field too
NEXT_KEY, PREVIOUS_KEY, SKIP_KEY = "J", "K", "S"
NOTE_KEY = "N"
REVIEWER_COOKIE = "jurybox_reviewer"
_COOKIE_DAYS = 365


def container_class(key: str) -> str:
    """The CSS class Streamlit gives a container made with `key` (its frontend's rule)."""
    return "st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())


def recall_reviewer() -> None:
    """Before the Reviewer field is drawn: a new session (a reload, a deep link) starts from
    the name this browser used last, unless one was typed in this session already."""
    if st.session_state.get("reviewer"):
        return
    try:
        stored = st.context.cookies.get(REVIEWER_COOKIE)
    except (AttributeError, RuntimeError):  # no browser behind this run (AppTest, bare mode)
        stored = None
    if isinstance(stored, str) and stored:  # (AppTest hands a mock object, not a string)
        st.session_state["reviewer"] = unquote(stored).strip()


def shortcuts_caption(labels: list[str]) -> str:
    """The keys, in one line under the decision (markdown, the labels made plain)."""
    picks = " · ".join(f"`{n}` {plain(label)}" for n, label in enumerate(labels[:9], 1))
    parts = [picks] if picks else []
    parts += [f"`{SAVE_KEY}` save and next", f"`{NEXT_KEY}` next", f"`{PREVIOUS_KEY}` previous",
              f"`{SKIP_KEY}` skip to an undecided item", f"`{NOTE_KEY}` note (`Esc` leaves it)"]
    return "Keys: " + " · ".join(parts)


def _js_string(text: str) -> str:
    # JSON is a JavaScript string literal; "<", ">" and "&" escaped so that nothing in it can
    # close the script element or start markup.
    return (json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))


_SCRIPT = """<script data-move="%(move)s">
(() => {
  const state = window.__jbReview || (window.__jbReview = {});
  state.box = %(box)s;
  const reviewer = %(reviewer)s;
  if (reviewer) {
    document.cookie = %(cookie)s + "=" + %(quoted)s + "; path=/; max-age=%(age)d; SameSite=Strict";
  }
  const decision = () => document.querySelector("." + state.box);
  const focusDecision = (box) => {
    // The decision: its labels (a radio group), or the score of a numeric scale.
    const group = box.querySelector('[role="radiogroup"]');
    const target = group || box.querySelector('input[type="number"]');
    if (!target) return false;
    if (group && !group.hasAttribute("tabindex")) group.setAttribute("tabindex", "-1");
    target.focus({preventScroll: false});
    return true;
  };
  state.focusDecision = focusDecision;
  if (!state.listening) {
    state.listening = true;
    document.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
      const box = decision();
      if (!box) return;
      const t = event.target;
      const typing = t && (t.isContentEditable || t.matches("textarea, select")
        || (t.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(t.type)));
      if (typing) {
        if (event.key === "Escape" && box.contains(t)) { t.blur(); state.focusDecision(box); }
        return;
      }
      if (/^[1-9]$/.test(event.key)) {
        const options = box.querySelectorAll('[role="radiogroup"] label');
        const option = options[Number(event.key) - 1];
        if (option) {
          event.preventDefault();
          option.click();
          state.focusDecision(box);
        }
      } else if (event.key.toUpperCase() === %(note_key)s) {
        const notes = box.querySelectorAll("textarea");
        if (notes.length) { event.preventDefault(); notes[notes.length - 1].focus(); }
      }
    });
  }
  // A new item is open (or the page was opened): its decision takes the focus once drawn.
  let tries = 0;
  const settle = () => {
    const box = decision();
    if ((box && focusDecision(box)) || ++tries > 120) return;
    requestAnimationFrame(settle);
  };
  settle();
})();
</script>"""


def keyboard(decision_key: str, move: int, reviewer: str) -> None:
    """Install the keys of the decision in container `decision_key`, give that decision the
    focus, and keep `reviewer` in this browser (empty: nothing kept, e.g. when signed in).

    `move` counts the moves of the review loop: the script runs again (and moves the focus)
    only when it changes, not on every rerun, so a click elsewhere keeps its focus.
    """
    st.html(_SCRIPT % {
        "move": int(move),
        "box": _js_string(container_class(decision_key)),
        "reviewer": _js_string(reviewer.strip()),
        "cookie": _js_string(REVIEWER_COOKIE),
        "quoted": _js_string(quote(reviewer.strip(), safe="")),
        "age": _COOKIE_DAYS * 86400,
        "note_key": _js_string(NOTE_KEY),
    }, unsafe_allow_javascript=True)
