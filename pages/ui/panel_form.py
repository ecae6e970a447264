"""The Panel page's editor: one draft of the whole panel model, edited by generated widgets.

The draft is `Panel.model_dump(mode="json")` (plus a uid per critic and a generation number),
held in session state: the one place the panel being edited lives. Widgets are generated from
the model's fields (`pages.ui.model_form`), so every part of a panel — scale, critics, every
voting parameter, cascade, per-vendor limits — is editable, and a field added to the model
appears on the page. `build_panel` validates the whole with `Panel.model_validate`.

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
from judging.panel.curation import CurationConfig
from judging.panel.pairwise import PairwiseConfig
from judging.panel.panel_model import CascadeConfig, Panel
from judging.panel.prompt_syntax import template_problem
from judging.panel.rubric import MARK_SCALE, RubricConfig
from judging.panel.rule_checks import Rule
from judging.panel.vendors import PRESETS
from judging.panel.web_policy import WEB_PYTHON_REFUSAL, refuse_python_critics
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS
from judging.voting.strategies import VotingConfig, strategy_help, strategy_names, tie_rule_text
from pages.ui.model_form import field_widget, model_editor
from pages.ui.state import db
from pages.ui.team_view import visitor
from pages.ui.text_format import plain
from pages.ui.tier_editor import tiers_editor
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


# -- the sections ------------------------------------------------------------------------------


def header_editor(draft: dict[str, Any]) -> None:
    """Name and description (every top-level field that is not a section of its own)."""
    model_editor(Panel, draft, key_prefix(draft),
                 skip=(*NOT_EDITABLE, "scale", "critics", "voting", "cascade", "limits",
                       "curation", "pairwise", "rubric", "juries"),
                 texts={"name": ("Panel name", "Shown in lists of panels and runs."),
                        "description": ("Description", "What the panel is for (optional).")})


def scale_editor(draft: dict[str, Any]) -> None:
    st.caption("nominal: unordered labels; ordinal: ordered labels; likert: integers min..max; "
               "score: a number in a range; yesno: yes / no. Synonyms map a reply's word to a "
               "label (YAML, e.g. `approve: KEEP`).")
    model_editor(Scale, draft["scale"], f"{key_prefix(draft)}.scale", columns=2)


def _vendor_drawer(label: str, value: Any, key: str) -> Any:
    vendors = list(PRESETS)
    return st.selectbox("Vendor", vendors, index=vendors.index(value) if value in vendors else 0,
                        format_func=lambda v: PRESETS[v].title, key=key)


def critic_title(draft: dict[str, Any], index: int) -> str:
    """"name · vendor · model", read from the widgets' latest values (typed this very run)."""
    critic = draft["critics"][index]
    latest = {f: st.session_state.get(widget_key(draft, f"critics.{index}.{f}"), critic.get(f))
              for f in ("name", "vendor", "model", "kind")}
    if latest["kind"] in PLUGIN_KINDS:  # no vendor, no model: say what it is
        return plain(f"{latest['name'] or '(no name)'} · {latest['kind']} critic")
    # An expander's label is markdown: a critic's name from a file is shown as text.
    return plain(f"{latest['name'] or '(no name)'} · {latest['vendor']} · {latest['model'] or '?'}")


# Each critic field's label and help, written for the person filling the form (the generated
# "Timeout s" or "Price in per mtok" said little). `test_panel_page` checks every field has one.
CRITIC_TEXTS: dict[str, tuple[str, str | None]] = {
    "name": ("Name", "How this critic is shown in tables and votes; unique in the panel."),
    "vendor": ("Vendor", "Who serves the model."),
    "model": ("Model", "The vendor's model id, e.g. gpt-4o-mini, or sim-careful for the "
              "simulated vendor."),
    "weight": ("Weight in the vote", "How much this critic counts in the weighted strategies: "
               "1 is one vote, 2 counts double, 0 is asked but never counts."),
    "base_url": ("Server address (base URL)", "Required for a custom vendor, e.g. "
                 "http://127.0.0.1:8000/v1; for a preset it replaces the preset's address."),
    "prompt_template": ("Prompt", "{field} inserts an item's field; {{ and }} are literal "
                        "braces. The item's text is sent as data, never as instructions."),
    "system_prompt": ("System prompt", "Sent first, as the system message (optional)."),
    "temperature": ("Temperature", "0 gives the same answer every time; higher gives more "
                    "varied answers (needed for repeated samples to differ)."),
    "max_tokens": ("Longest answer (tokens)", "The most the model may write per call; a reply "
                   "cut at this length is kept as a truncated failure."),
    "timeout_s": ("Time limit per call (seconds)", "A call slower than this counts as a timeout "
                  "and is retried."),
    "tier": ("Cascade tier", "0 is asked first; a critic of a higher tier only for items the "
             "tiers before it could not settle."),
    "api_key_env": ("Name of the API key variable", "The NAME of the environment variable (or "
                    "[jurybox] secret) that holds the key, e.g. OPENAI_API_KEY. Never paste a "
                    "key here. Empty: the preset's variable."),
    "json_mode": ("Ask for JSON replies", "The vendor's default follows the preset."),
    "price_in_per_mtok": ("Price per million input tokens (USD)", "Empty: the preset's price "
                          "for this model, if it knows one."),
    "price_out_per_mtok": ("Price per million output tokens (USD)", "Empty: the preset's price "
                           "for this model, if it knows one."),
    "price_cached_in_per_mtok": ("Price per million cached input tokens (USD)", "Input tokens "
                                 "the vendor read from its prompt cache. Empty: the input price "
                                 "times the vendor's discount (Anthropic 0.1; OpenAI 0.1 to "
                                 "0.5 by model)."),
    "api": ("API", "How live calls are sent: chat (OpenAI chat completions) or messages "
            "(Anthropic's Messages API). Empty: the vendor's own (Anthropic: messages)."),
    "extra": ("Extra request parameters", "Sent as they are, e.g. seed: 7 or top_p: 0.9; a "
              "null value leaves that parameter out (temperature: null)."),
    "logprobs": ("Read label probabilities (logprobs)", "Ask for token log-probabilities and "
                 "take the verdict's confidence from them (vendors that support it)."),
    "top_logprobs": ("Alternatives per token", "How many likely tokens the vendor returns per "
                     "position when probabilities are read."),
    "samples": ("Samples per item", "Ask this many times per item: the critic's verdict is the "
                "vote of its samples, and Agreement shows how often it contradicts itself "
                "(with a temperature above 0)."),
    "kind": ("How it judges", "single: one call. reason-then-judge: reasons first, then "
             "decides. self-verify: decides, then checks its own verdict. debate: two critics "
             "argue, then this one decides. rule: a check of a field (no model, free). "
             "python: a function of yours (CLI and library only: the web app never runs it)."),
    "rule": ("Rule", "rule: what it checks, e.g. {check: no-regex, field: answer, pattern: "
             "'\\d{16}'}. Checks: regex, no-regex, json-schema, length, keywords, range, "
             "exact."),
    "function": ("Python function", "python: module:function to call, e.g. mypkg.checks:no_pii "
                 "(run by the CLI and the library only)."),
    "pass_label": ("Label when the check passes", "rule / python: the label a passed check "
                   "gives (a yes/no scale: yes)."),
    "fail_label": ("Label when the check fails", "rule / python: the label a failed check gives "
                   "(a yes/no scale: no); in a guard tier it rejects the item."),
    "reason_prompt": ("Reasoning instruction", "reason-then-judge: what the first call is asked "
                      "(empty: the default)."),
    "verify_prompt": ("Checking instruction", "self-verify: what the checking call is asked "
                      "(empty: the default)."),
    "reference_field": ("Reference answer field", "An item field holding a reference answer "
                        "to grade against (shown to the critic as data)."),
    "debaters": ("Debaters", "debate: the two critics of the panel who argue before this critic "
                 "decides."),
    "rounds": ("Debate rounds", "debate: rounds of arguments before the verdict."),
    "mode": ("How a run sends its calls", "live: one request at a time. batch: through the "
             "vendor's batch API (results within 24 h, at batch prices)."),
    "batch_api": ("Batch API", "Empty: the vendor's own. The simulator and custom servers may be "
                  "told which one they speak."),
}
# Drawn open: what a critic is. Everything else is folded under "Advanced settings".
CRITIC_BASIC = ("name", "vendor", "model", "weight")
CRITIC_PROMPTS = ("prompt_template", "system_prompt")


def _text(name: str) -> tuple[str, str | None]:
    return CRITIC_TEXTS.get(name, (name.replace("_", " ").capitalize(), None))


def critic_editor(draft: dict[str, Any], index: int) -> str | None:
    """One critic: name, vendor, model, weight and prompt open; the other fields folded in
    "Advanced settings", each with a label and help written for people. Returns "remove" or
    "duplicate" when asked, else None."""
    critic = draft["critics"][index]
    prefix = f"{key_prefix(draft)}.critics.c{critic['_uid']}"
    others = [str(c.get("name") or "") for c in draft["critics"] if c is not critic]

    def debaters_drawer(label: str, value: Any, key: str) -> Any:
        # A debate's two debaters are critics of this panel: picked by name, not typed.
        chosen = [str(v) for v in value or []]
        return st.multiselect(label, list(dict.fromkeys([*others, *chosen])), default=chosen,
                              key=key, max_selections=2, help=_text("debaters")[1])

    def rule_drawer(label: str, value: Any, key: str) -> Any:
        # YAML, not one widget per rule parameter: a rule has a few of a dozen parameters,
        # and a model critic has none (drawn as a nested model, its empty form was `{}`).
        # Shown without the parameters left at their defaults; unedited, the value is kept.
        compact = _without_defaults(value)
        edited = field_widget(label, dict[str, Any] | None, compact, key, help=_text("rule")[1])
        return value if edited == compact else edited

    drawers = {"vendor": _vendor_drawer, "debaters": debaters_drawer, "rule": rule_drawer}
    # A custom vendor cannot work without its address: then it is a basic field too.
    basic = CRITIC_BASIC + (("base_url",) if critic.get("vendor") == "custom" else ())
    model_editor(Critic, critic, prefix, skip=tuple(n for n in Critic.model_fields
                                                    if n not in basic),
                 drawers=drawers, columns=len(basic), texts=CRITIC_TEXTS)
    label, hint = _text("prompt_template")
    critic["prompt_template"] = field_widget(label, str, critic.get("prompt_template") or "",
                                             f"{prefix}.prompt_template", help=hint)
    with st.expander("Advanced settings", key=f"{prefix}.advanced",
                     icon=":material/tune:"):
        label, hint = _text("system_prompt")
        critic["system_prompt"] = field_widget(label, str, critic.get("system_prompt") or "",
                                               f"{prefix}.system_prompt", help=hint)
        model_editor(Critic, critic, prefix, skip=(*basic, *CRITIC_PROMPTS), drawers=drawers,
                     columns=3, texts=CRITIC_TEXTS)
    preset = PRESETS.get(critic.get("vendor") or "", None)
    if critic.get("kind") in PLUGIN_KINDS:
        st.caption(plugin_caption(str(critic["kind"])))
    elif preset is not None and preset.simulated:
        st.caption("Simulated vendor: verdicts are labelled *simulated* and its critics do not "
                   "read the items. Demo models: sim-careful, sim-lenient, sim-strict, sim-flaky.")
    elif preset is not None:
        st.caption(f"The API key is read from {preset.key_env or 'nowhere (none needed)'} unless "
                   "**Name of the API key variable** (advanced settings) names another "
                   "variable; never paste a key.")
    left, right = st.columns(2)
    if left.button("Duplicate this critic", key=f"{prefix}.duplicate", icon=":material/content_copy:"):
        return "duplicate"
    if right.button("Remove this critic", key=f"{prefix}.remove", icon=":material/delete:"):
        return "remove"
    return None


def _without_defaults(rule: Any) -> Any:
    """A rule's parameters that differ from their defaults (what a person wrote)."""
    if not isinstance(rule, dict):
        return rule
    defaults = {name: info.get_default(call_default_factory=True)
                for name, info in Rule.model_fields.items() if not info.is_required()}
    return {k: v for k, v in rule.items() if k not in defaults or v != defaults[k]}


def plugin_caption(kind: str) -> str:
    """What the page says under a rule or python critic."""
    if kind == "rule":
        return ("Rule critic: it checks a field of each item here, free and at once; vendor, "
                "model and prompt are not used. In a guard tier of the cascade, a failed check "
                "rejects the item before any model is asked.")
    return ("Python critic: " + WEB_PYTHON_REFUSAL + " Vendor, model and prompt are not used.")


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


def open_editor_key(draft: dict[str, Any], index: int) -> str:
    """The session key saying whether critic `index`'s editor first appears open (set before
    the rerun that draws a critic just added or duplicated)."""
    return f"{key_prefix(draft)}.open.c{draft['critics'][index]['_uid']}"


def editor_key(draft: dict[str, Any], index: int) -> str:
    """The key of critic `index`'s expander: stable across renames, unique per critic."""
    return f"{key_prefix(draft)}.editor.c{draft['critics'][index]['_uid']}"


def _strategy_drawer(label: str, value: Any, key: str) -> Any:
    names = strategy_names()
    chosen = st.selectbox("Strategy", names, index=names.index(value) if value in names else 0,
                          key=key, help="How the critics' verdicts become the panel's decision.")
    hint = strategy_help(chosen)
    if hint:
        st.caption(hint)
    return chosen


def voting_editor(draft: dict[str, Any]) -> None:
    """Every voting parameter: strategy, tie and error policies, priority, fallback, target
    label (strategy `any`), thresholds and spread (score strategies), confidence weighting."""
    st.caption("Priority: labels most cautious first (breaks ties). Target label: the label "
               "strategy `any` looks for. Thresholds: score bands (YAML, e.g. `pass: 0.7`).")
    model_editor(VotingConfig, draft["voting"], f"{key_prefix(draft)}.voting",
                 drawers={"strategy": _strategy_drawer}, columns=2)


def cascade_editor(draft: dict[str, Any]) -> None:
    """The cascade: its tiers, each a jury of its own with a policy (`cascade.tiers`), or the
    older form (critics' tier numbers and one settle rule), whose fields show while no tier is
    named."""
    named = bool(draft["cascade"].get("tiers"))
    if named:
        st.caption("Tiers are asked in order, each only about the items the tiers before it "
                   "did not stop; the last, final tier decides the rest.")
    else:
        st.caption("Used when critics sit in more than one tier: tier 0 is called first, the "
                   "next tier only for items the cheaper one did not settle. Or name the tiers "
                   "below, each with its own critics, strategy and policy.")
    legacy = ("settle", "min_agreement", "guard_tiers") if named else ()
    model_editor(CascadeConfig, draft["cascade"], f"{key_prefix(draft)}.cascade", columns=2,
                 skip=("tiers", *legacy))
    if tiers_editor(draft, key_prefix(draft)):
        # Positions moved (or critics' tier numbers were cleared): fresh widgets for all.
        draft["_gen"] = next(_generations)
        st.rerun()


def curation_editor(draft: dict[str, Any]) -> None:
    st.caption("For taxonomy curation: the item field that names the candidate class (and its "
               "parent), and which labels keep, remove, split or merge it. On Review a split "
               "then asks for the new child classes and a merge for its target; Export writes "
               "the curated taxonomy.")
    model_editor(CurationConfig, draft["curation"], f"{key_prefix(draft)}.curation", columns=3)


def pairwise_editor(draft: dict[str, Any]) -> None:
    st.caption("To compare two responses: the item fields holding response A and B (and the "
               "systems behind them), the labels for A, B and a tie (on the scale), whether to "
               "ask each critic again with the two swapped, and what an answer that changes "
               "with the order counts as.")
    model_editor(PairwiseConfig, draft["pairwise"], f"{key_prefix(draft)}.pairwise", columns=3)


def rubric_editor(draft: dict[str, Any]) -> None:
    st.caption("To grade against criteria instead of one label: each criterion's id, text and "
               "weight (negative: a penalty), as YAML, e.g. `- {id: accurate, text: It is "
               "right., weight: 2}`. The scale is then the score, {kind: score, min: 0, max: "
               "1}; the voting settings decide each criterion's mark.")
    model_editor(RubricConfig, draft["rubric"], f"{key_prefix(draft)}.rubric", columns=2)


def juries_editor(draft: dict[str, Any]) -> None:
    st.caption("To combine juries (`judging.voting.juries`): each jury's name, the names of the "
               "critics above that sit in it (each critic in exactly one jury), its own voting "
               "and its weight, as YAML, e.g. `- {name: safety, critics: [strict, flaky], "
               "voting: {strategy: any, target_label: REJECT}}`. The Voting settings above then "
               "combine the juries' decisions: `all-of` with a target label accepts only if "
               "every jury accepts; majority or weighted count each jury as one vote.")
    model_editor(Panel, draft, key_prefix(draft),
                 skip=tuple(n for n in Panel.model_fields if n != "juries"),
                 texts={"juries": ("Juries", Panel.model_fields["juries"].description)})


def limits_editor(draft: dict[str, Any]) -> None:
    st.caption("Per vendor preset, for each run of this panel: `max_concurrency` (requests in "
               "flight) and `requests_per_minute`. YAML, e.g. `openai: {max_concurrency: 8, "
               "requests_per_minute: 500}`.")
    model_editor(Panel, draft, key_prefix(draft),
                 skip=tuple(n for n in Panel.model_fields if n != "limits"))


# -- what a tie will do ------------------------------------------------------------------------

# Strategies that break a tied count by the tie policy and priority (`judging.voting.strategies._top`, the
# median's two middle labels, Dawid-Skene's equal posteriors); the others never consult it.
_TIE_POLICY_STRATEGIES = ("plurality", "weighted", "any", "median", "dawid-skene",
                          "pooled-probability")


def tie_sentence(config: VotingConfig, scale: Scale, rubric: RubricConfig | None = None) -> str | None:
    """What the panel does with a tied vote, in one sentence true for its strategy (None when
    nothing can tie: scores are averaged, a custom strategy decides for itself).

    Why per strategy: the tie policy is consulted only by the strategies that pick one label
    from a count. `majority` abstains on a tie (no label has more than half), `unanimous` and
    `first-disagreement` abstain on any disagreement, `max` and `min` take the end of the scale;
    a sentence naming the priority there told the reader something the vote never does.
    """
    if rubric is not None and rubric.active:  # the voting decides each criterion's mark
        said = tie_sentence(config, MARK_SCALE)
        return f"For each criterion's mark: {said[0].lower()}{said[1:]}" if said else None
    if scale.is_numeric:
        return None
    strategy = config.strategy
    abstains = (f"the panel abstains and the item gets the fallback label {config.fallback}"
                if config.fallback else
                "the panel abstains: the item has no consensus and waits for a reviewer")
    if strategy in _TIE_POLICY_STRATEGIES:
        if config.tie_policy == "abstain":
            rule = f"A tied vote is not broken (tie policy 'abstain'): {abstains}."
        else:
            rule = tie_rule_text(config, scale) or ""
        if strategy == "any":
            rule = (f"When a critic says {config.target_label}, that label wins; otherwise the "
                    f"most frequent label does. {rule}")
        return rule
    if strategy == "majority":
        return (f"A tied vote leaves no label with more than half of the critics, so {abstains}. "
                "Majority never uses the tie policy or the priority.")
    if strategy == "unanimous":
        return (f"Any disagreement, a tie included, means {abstains}. The tie policy is not "
                "used.")
    if strategy == "first-disagreement":
        return (f"There are no ties: the first critic decides unless another disagrees, and then "
                f"{abstains}.")
    if strategy in ("max", "min"):
        end = "last" if strategy == "max" else "first"
        return (f"There are no ties: of the labels the critics gave, the one that comes {end} in "
                "the scale's order wins. The tie policy is not used.")
    if strategy == "all-of":
        return (f"There are no ties: the item gets {config.target_label} only when every critic "
                "says it; otherwise the first critic (in panel order) that gave another label "
                "decides. The tie policy is not used.")
    if strategy == "mean-expected-score":
        return ("A tie of votes is decided by the label nearest the critics' mean expected "
                "score (two say the lowest label and two the highest: the label between them); "
                "only a mean exactly halfway between two labels goes to the tie policy.")
    return None  # a custom strategy: its own code decides what a tie does
