"""The Review loop from the keyboard, and the reviewer's name kept by the browser.

Streamlit 1.67 has keyboard shortcuts for buttons of its own (`st.button(..., shortcut=...)`):
Save, Next, Previous and Skip use them (they also show their key on the button). Two things it
has no shortcut for are done by one small script, constant but for the names it is handed
(JSON-encoded, never markup): a number key picks that label of the decision (a radio has no
shortcut), N puts the cursor in the note (Esc takes it out), and after every move the decision
of the item now open has the focus, so the next key press acts on it without the mouse.

A key is meant for the decision the reviewer will see next: a number or N pressed while that
decision is not drawn yet (the name just given, Save or Next just pressed, a run under way)
waits for it instead of being lost or landing on the item being left. Save never waits: a
decision is only stored from a form the reviewer has in front of them.

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
# How long a key pressed before its decision is drawn waits for it: longer than the slowest
# draws seen under load (up to 5 s), short enough that a key is not kept for an item opened
# much later.
_KEY_WAIT_MS = 20_000
# After Save, Next, Previous or Skip, how long the decision on the page still counts as the
# item being left while no run has started (2.5 s seen beside two CPU hogs).
_MOVE_WAIT_MS = 10_000
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


def _js(value: str | list[str]) -> str:
    # JSON is a JavaScript literal; "<", ">" and "&" escaped so that nothing in it can close
    # the script element or start markup.
    return (json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))


_SCRIPT = """<script data-move="%(move)s">
(() => {
  const state = window.__jbReview || (window.__jbReview = {});
  state.box = %(box)s;
  state.nameBox = %(name_box)s;
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
    const scriptState = () => document.querySelector('[data-testid="stApp"]')
      ?.getAttribute("data-test-script-state");
    // The decision a key may act on: drawn, of the run that is over (not an element of the
    // last run left on the page while a run is under way), and no save or move asked for
    // since (until its run starts, the decision on the page is the item being left).
    const ready = () => {
      if (state.moveAsked || scriptState() !== "notRunning") return null;
      const box = decision();
      const target = box && box.querySelector('[role="radiogroup"], input[type="number"]');
      return target && !target.closest('[data-stale="true"]') ? box : null;
    };
    // A number picks that label, N puts the cursor in the note. False: no such label or note.
    const act = (box, key) => {
      if (/^[1-9]$/.test(key)) {
        const option = box.querySelectorAll('[role="radiogroup"] label')[Number(key) - 1];
        if (!option) return false;
        option.click();
        state.focusDecision(box);
        return true;
      }
      const notes = box.querySelectorAll("textarea");
      if (!notes.length) return false;
      notes[notes.length - 1].focus();
      return true;
    };
    // A key pressed before its decision is drawn waits for it (the last such key), for a while.
    const settlePending = () => {
      const now = performance.now();
      if (state.moveAsked && (scriptState() !== "notRunning"
                              || now - state.moveAsked > %(move_wait)d)) {
        state.moveAsked = 0;  // its run has started (or none came)
      }
      if (!state.pending) return;
      if (now - state.pending.at > %(key_wait)d) { state.pending = null; return; }
      const box = ready();
      if (box) { const key = state.pending.key; state.pending = null; act(box, key); }
    };
    new MutationObserver(settlePending).observe(document.body, {subtree: true, childList: true,
      attributes: true, attributeFilter: ["data-stale", "data-test-script-state"]});
    const moveAsked = () => {
      state.moveAsked = performance.now();
      setTimeout(settlePending, %(move_wait)d + 50);
    };
    document.addEventListener("click", (event) => {
      const box = decision();
      if (box && event.target.closest && box.contains(event.target.closest("button"))) moveAsked();
    }, true);
    document.addEventListener("keydown", (event) => {
      if (event.altKey || event.isComposing) return;
      const t = event.target;
      const typing = t && (t.isContentEditable || t.matches("textarea, select")
        || (t.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(t.type)));
      const box = decision();
      const key = event.key.length === 1 ? event.key.toUpperCase() : event.key;
      // Save (its shortcut works from the note too) or Next / Previous / Skip: a run is asked for.
      if (box && ((key === "Enter" && (event.ctrlKey || event.metaKey)
                   && !box.querySelector("button:disabled"))
                  || (!typing && !event.ctrlKey && !event.metaKey
                      && %(move_keys)s.includes(key)))) {
        moveAsked();
        return;
      }
      if (event.ctrlKey || event.metaKey) return;
      if (typing) {
        if (event.key === "Escape" && box && box.contains(t)) {
          t.blur();
          state.focusDecision(box);
        }
        // The name given: the keys that follow are for the decision it draws, not the name.
        if (event.key === "Enter" && t.closest("." + state.nameBox)) t.blur();
        return;
      }
      if (!/^[1-9]$/.test(key) && key !== %(note_key)s) return;
      const open = ready();
      if (open) {
        if (act(open, key)) event.preventDefault();
        return;
      }
      event.preventDefault();
      state.pending = {key: key, at: performance.now()};
      setTimeout(settlePending, %(key_wait)d + 50);
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


def keyboard(decision_key: str, move: int, reviewer: str, name_key: str) -> None:
    """Install the keys of the decision in container `decision_key`, give that decision the
    focus, and keep `reviewer` in this browser (empty: nothing kept, e.g. when signed in).

    `move` counts the moves of the review loop: the script runs again (and moves the focus)
    only when it changes, not on every rerun, so a click elsewhere keeps its focus.
    `name_key` is the Reviewer field's key: Enter there takes the cursor out of it, so the
    number pressed next picks a label instead of joining the name.

    Drawn before the reviewer has a name too: a key pressed while the decision is not drawn
    yet (the name just given, an item just saved, a run under way) waits for it, up to
    `_KEY_WAIT_MS`, instead of being lost or landing on the item being left.
    """
    st.html(_SCRIPT % {
        "move": int(move),
        "box": _js(container_class(decision_key)),
        "name_box": _js(container_class(name_key)),
        "move_keys": _js([NEXT_KEY, PREVIOUS_KEY, SKIP_KEY]),
        "move_wait": _MOVE_WAIT_MS,
        "key_wait": _KEY_WAIT_MS,
        "reviewer": _js(reviewer.strip()),
        "cookie": _js(REVIEWER_COOKIE),
        "quoted": _js(quote(reviewer.strip(), safe="")),
        "age": _COOKIE_DAYS * 86400,
        "note_key": _js(NOTE_KEY),
    }, unsafe_allow_javascript=True)
