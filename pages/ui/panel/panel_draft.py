"""The Panel page's draft: one draft of the whole panel model, held in session state, kept in
the database across reloads (`storage.drafts`), and built into a `Panel`.

The draft is `Panel.model_dump(mode="json")` (plus a uid per critic and a generation number),
held in session state: the one place the panel being edited lives. `build_panel` validates
the whole with `Panel.model_validate`.

Why a generation number in every widget key: Streamlit keeps a widget's value in the browser
too. After "Load a panel" the old widgets, dropped from session state, still sent their old
values back on the next click (the loaded panel was re-saved as the previous one). Loading
bumps the generation, so the next run draws new widgets that only know the loaded values.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import streamlit as st

from judging.panel.critics import Critic, template_placeholders
from judging.panel.panel_model import Panel
from judging.panel.prompt_syntax import template_problem
from judging.panel.web_policy import refuse_python_critics
from judging.scales import Scale
from pages.ui.state import db
from pages.ui.team_view import visitor
from storage.drafts import discard_draft, load_draft, save_draft

DRAFT_KEY = "panel_draft"
# The Run page's query parameter naming a saved panel (its hash) to start a run with: the links
# "Run this panel" (Panel) and "Run <calibrated version>" (Agreement) set it.
RUN_PANEL_PARAM = "panel"
_uids = itertools.count(1)
_generations = itertools.count(1)

# Fields drawn by hand (layout) or deliberately not editable: the file format's version is
# Jurybox's to set, not the user's.
NOT_EDITABLE = ("schema_version",)

DEFAULT_PROMPT = (
    "Judge the following item.\n\nText: {text}\n\nIs it acceptable? Explain briefly."
)

# A starting model per preset so a new critic is valid at once; the user edits it.
SUGGESTED_MODELS = {
    "openai": "gpt-4o-mini",
    "deepseek": "deepseek-chat",
    "openrouter": "openai/gpt-4o-mini",
    "anthropic": "claude-3-5-haiku-latest",
    "gemini": "gemini-2.0-flash",
    "ollama": "llama3.1",
    "custom": "my-model",
    "simulated": "sim-careful",
}


def prompt_for_fields(fields: list[str]) -> str:
    """A starting prompt that shows every field of the dataset by name (so it fits it)."""
    if not fields:
        return DEFAULT_PROMPT
    lines = "\n".join(f"{name}: {{{name}}}" for name in fields)
    return f"Judge the following item.\n\n{lines}\n\nIs it acceptable? Explain briefly."


def _with_uid(critic: dict[str, Any]) -> dict[str, Any]:
    return {**critic, "_uid": next(_uids)}


def _new_critic(draft: dict[str, Any], preset: str, fields: list[str] | None) -> dict[str, Any]:
    """A new critic: the last critic's prompt and settings when there is one (no retyping),
    else a prompt over the dataset's fields; a free name."""
    names = {c.get("name") for c in draft["critics"]}
    n = len(draft["critics"]) + 1
    while f"critic-{n}" in names:
        n += 1
    if draft["critics"] and draft["critics"][-1].get("vendor") == preset:
        base = {k: v for k, v in copy.deepcopy(draft["critics"][-1]).items() if k != "_uid"}
    else:
        last = draft["critics"][-1].get("prompt_template", "") if draft["critics"] else ""
        # The last critic's prompt may be mid-edit and broken: a new critic needs a valid one.
        prompt = last if last and template_problem(last) is None else prompt_for_fields(
            fields or [])
        base = Critic(name="x", vendor=preset, model=SUGGESTED_MODELS.get(preset, "model"),
                      prompt_template=prompt).model_dump(mode="json")
    base["name"] = f"critic-{n}"
    return _with_uid(base)


def empty_draft(fields: list[str] | None = None) -> dict[str, Any]:
    """A fresh draft: a yes/no scale, one simulated critic whose prompt fits `fields`."""
    panel = Panel(
        name="my panel",
        scale=Scale(kind="yesno"),
        critics=[Critic(name="critic-1", vendor="simulated", model="sim-careful",
                        prompt_template=prompt_for_fields(fields or []))],
    )
    return draft_from_panel(panel)


def draft_from_panel(panel: Panel) -> dict[str, Any]:
    """The whole panel as an editable draft (nothing left out, nothing added but uids)."""
    data = panel.model_dump(mode="json")
    data["critics"] = [_with_uid(critic) for critic in data["critics"]]
    data["_gen"] = next(_generations)
    return data


def set_draft(draft: dict[str, Any]) -> None:
    """Replace the draft; its new generation gives every widget a new key (see module doc).

    The new content (a panel loaded, imported or fresh) is nothing unsaved: a draft kept from
    before is dropped at the next `keep_draft`, and the notice of a restored one goes."""
    draft["_gen"] = next(_generations)
    st.session_state[DRAFT_KEY] = draft
    st.session_state[PRISTINE_KEY] = draft_content(draft)
    st.session_state.pop(RESTORED_KEY, None)


def get_draft(fields: list[str] | None = None) -> dict[str, Any]:
    """The draft of this session. On first use: the draft kept unsaved in the database for
    this person (a reload, a typed URL), with a notice; else a fresh one fitting `fields`."""
    if DRAFT_KEY not in st.session_state:
        kept = load_draft(db(), draft_owner())
        if kept is None:
            set_draft(empty_draft(fields))
        else:
            draft, stored_at = kept
            set_draft(draft_from_payload(draft))
            # Unsaved, so unlike a loaded panel it has no pristine state to fall back to.
            st.session_state[PRISTINE_KEY] = None
            st.session_state[WRITTEN_KEY] = draft_content(st.session_state[DRAFT_KEY])
            st.session_state[RESTORED_KEY] = stored_at
    return st.session_state[DRAFT_KEY]


def draft_from_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """An editor draft from a kept `panel_payload` (valid or not: nothing is validated)."""
    data = copy.deepcopy(payload)
    data["critics"] = [_with_uid(c) for c in data.get("critics") or [] if isinstance(c, dict)]
    for section in ("scale", "voting", "cascade", "curation", "pairwise", "rubric"):
        if not isinstance(data.get(section), dict):  # a kept draft from an older model
            data[section] = empty_draft()[section]
    data["_gen"] = next(_generations)
    return data


# -- the unsaved draft, kept in the database ---------------------------------------------------

PRISTINE_KEY = "panel_draft.pristine"  # content as loaded, imported, saved or fresh (or None)
WRITTEN_KEY = "panel_draft.written"  # content last written to (or removed from) the database
RESTORED_KEY = "panel_draft.restored"  # when the draft restored this session was stored


def draft_owner() -> str:
    """Whose draft: the signed-in email (team mode), "" for the one user of a local app."""
    return visitor().email or ""


def draft_content(draft: dict[str, Any]) -> str:
    """The draft's content as compared and stored: the panel payload (no uids, generation)."""
    return json.dumps(panel_payload(draft), sort_keys=True, ensure_ascii=False, default=str)


def keep_draft(draft: dict[str, Any]) -> None:
    """Write the draft to the database when it changed this run (called once per run, after
    every editor has applied its widget): an edit survives a reload. Back to its pristine
    content (a loaded or saved panel, unedited), nothing unsaved is left: the row goes."""
    content = draft_content(draft)
    if content == st.session_state.get(WRITTEN_KEY):
        return
    if content == st.session_state.get(PRISTINE_KEY):
        discard_draft(db(), draft_owner())
    else:
        save_draft(db(), draft_owner(), panel_payload(draft))
    st.session_state[WRITTEN_KEY] = content


def mark_saved(draft: dict[str, Any]) -> None:
    """The draft was saved as a panel: nothing unsaved is left."""
    st.session_state[PRISTINE_KEY] = st.session_state[WRITTEN_KEY] = draft_content(draft)
    st.session_state.pop(RESTORED_KEY, None)
    discard_draft(db(), draft_owner())


def restored_at() -> str | None:
    """When the draft restored in this session had been stored (UTC ISO), or None."""
    stamp = st.session_state.get(RESTORED_KEY)
    return str(stamp) if stamp else None


def discard_restored(fields: list[str] | None = None) -> None:
    """Throw the restored draft away: a fresh panel in the editor, nothing kept."""
    discard_draft(db(), draft_owner())
    set_draft(empty_draft(fields))
    st.session_state[WRITTEN_KEY] = None


def key_prefix(draft: dict[str, Any]) -> str:
    return f"pf{draft['_gen']}"


def widget_key(draft: dict[str, Any], path: str) -> str:
    """The widget key of a field path: "name", "scale.labels", "voting.target_label", or
    "critics.<index>.model" (the index is turned into the critic's uid)."""
    parts = path.split(".")
    if parts[0] == "critics" and len(parts) > 2:
        parts[1] = f"c{draft['critics'][int(parts[1])]['_uid']}"
    return ".".join([key_prefix(draft), *parts])


def panel_payload(draft: dict[str, Any]) -> dict[str, Any]:
    """The draft as `Panel.model_validate` input (uids and the generation dropped)."""
    payload = {k: v for k, v in draft.items() if not k.startswith("_")}
    payload["critics"] = [{k: v for k, v in c.items() if k != "_uid"} for c in draft["critics"]]
    return payload


def build_panel(draft: dict[str, Any]) -> Panel:
    """Validate the draft into a `Panel` that the web app may save and run.

    Raises:
        ConfigError: the parts do not fit together (the message names the field), or a
            critic is a python critic (`refuse_python_critics`).
        pydantic.ValidationError: a field is out of range or missing.
    """
    panel = Panel.model_validate(panel_payload(draft))
    refuse_python_critics(panel)
    return panel


def fitting_dataset(draft: dict[str, Any], datasets: list[dict[str, Any]]) -> int | None:
    """The id of the first dataset (newest first, as listed) whose fields every critic's prompt
    of the draft fits, else None."""
    wanted = {name for critic in draft["critics"]
              for name in template_placeholders(str(critic.get("prompt_template") or ""))}
    return next((int(d["id"]) for d in datasets if wanted <= set(d["fields"])), None)


def critic_from_draft(draft: dict[str, Any], index: int) -> Critic:
    """One critic of the draft, validated (for the prompt preview and the one-item test).

    Raises:
        pydantic.ValidationError: a field of the critic is invalid.
    """
    return Critic.model_validate(panel_payload(draft)["critics"][index])


def duplicate_critic(draft: dict[str, Any], index: int) -> int:
    """Insert a copy of critic `index` right after it, named "<name> copy"; returns its index."""
    twin = {k: v for k, v in copy.deepcopy(draft["critics"][index]).items() if k != "_uid"}
    names = {c.get("name") for c in draft["critics"]}
    name, n = f"{twin['name']} copy", 2
    while name in names:
        name, n = f"{twin['name']} copy {n}", n + 1
    twin["name"] = name
    draft["critics"].insert(index + 1, _with_uid(twin))
    return index + 1


def add_critic(draft: dict[str, Any], preset: str, fields: list[str] | None = None) -> int:
    """Append a new critic built from a vendor preset; returns its index."""
    draft["critics"].append(_new_critic(draft, preset, fields))
    return len(draft["critics"]) - 1


def new_generation(draft: dict[str, Any]) -> None:
    """Fresh widgets for the whole draft on the next run (see the module's doc)."""
    draft["_gen"] = next(_generations)

