"""The panel builder's widgets: a draft panel (plain data in session state) edited in place.

Why a draft of plain dicts rather than a `Panel`: a panel under construction is often invalid
(two critics with one name, a fallback that is not a label yet). The draft holds whatever the
user typed; `build_panel` turns it into a validated `Panel` and its errors into sentences.

Widget keys carry a per-critic uid, not the list position, so removing critic 2 does not hand
critic 3's widgets critic 2's values.
"""

from __future__ import annotations

import itertools
from typing import Any

import streamlit as st

from judging.critics import Critic
from judging.panel import Panel
from judging.vendors import PRESETS
from judging.voting import STRATEGY_KINDS, strategy_help, strategy_names

DRAFT_KEY = "panel_draft"
_WIDGET_PREFIX = "pf."
_uids = itertools.count(1)

SCALE_KINDS = ["nominal", "ordinal", "likert", "score", "yesno"]
TIE_POLICIES = ["pessimistic", "optimistic", "abstain"]
ERROR_POLICIES = ["ignore", "abstain", "count_as"]

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


def _new_critic(preset: str, index: int) -> dict[str, Any]:
    model = SUGGESTED_MODELS.get(preset, "model")
    return {
        "uid": next(_uids),
        "name": f"critic-{index}",
        "vendor": preset,
        "model": model,
        "base_url": None,
        "prompt_template": DEFAULT_PROMPT,
        "system_prompt": "",
        "temperature": 0.0,
        "max_tokens": 512,
        "timeout_s": 60.0,
        "weight": 1.0,
        "tier": 0,
        "api_key_env": None,
        "price_in_per_mtok": None,
        "price_out_per_mtok": None,
    }


def empty_draft() -> dict[str, Any]:
    """A fresh draft: a yes/no scale, one simulated critic, plurality voting."""
    return {
        "name": "my panel",
        "description": "",
        "scale": {"kind": "yesno", "labels": ["yes", "no"], "min": None, "max": None},
        "critics": [_new_critic("simulated", 1)],
        "voting": {
            "strategy": "plurality",
            "tie_policy": "pessimistic",
            "priority": [],
            "fallback": None,
            "error_policy": "ignore",
            "error_label": None,
        },
        "extra": {},
    }


def draft_from_panel(panel: Panel) -> dict[str, Any]:
    """A draft holding everything of `panel` (fields the form does not show are kept as they are)."""
    data = panel.model_dump(mode="json")
    critics = []
    for critic in data["critics"]:
        critic["uid"] = next(_uids)
        critics.append(critic)
    return {
        "name": data["name"],
        "description": data.get("description", ""),
        "scale": data["scale"],
        "critics": critics,
        "voting": data["voting"],
        # The cascade and anything the form does not edit ride along unchanged.
        "extra": {"cascade": data.get("cascade")},
    }


def set_draft(draft: dict[str, Any]) -> None:
    """Replace the draft and forget the widgets' remembered values, so they show the new draft."""
    for key in [k for k in st.session_state if str(k).startswith(_WIDGET_PREFIX)]:
        del st.session_state[key]
    st.session_state[DRAFT_KEY] = draft


def get_draft() -> dict[str, Any]:
    """The draft of this session (a fresh one on first use)."""
    if DRAFT_KEY not in st.session_state:
        st.session_state[DRAFT_KEY] = empty_draft()
    return st.session_state[DRAFT_KEY]


def panel_payload(draft: dict[str, Any]) -> dict[str, Any]:
    """The draft as `Panel(**payload)` input (uids dropped, empty optionals cleaned)."""
    critics = []
    for critic in draft["critics"]:
        data = {k: v for k, v in critic.items() if k != "uid"}
        for optional in ("base_url", "api_key_env"):
            if isinstance(data.get(optional), str) and not data[optional].strip():
                data[optional] = None
        critics.append(data)
    scale = dict(draft["scale"])
    if scale["kind"] in ("likert", "score"):
        scale["labels"] = []
    else:
        scale["min"] = scale["max"] = None
    payload: dict[str, Any] = {
        "name": draft["name"],
        "description": draft.get("description", ""),
        "scale": scale,
        "critics": critics,
        "voting": draft["voting"],
    }
    cascade = (draft.get("extra") or {}).get("cascade")
    if cascade:
        payload["cascade"] = cascade
    return payload


def build_panel(draft: dict[str, Any]) -> Panel:
    """Validate the draft into a `Panel`.

    Raises:
        ConfigError: the parts do not fit together (the message names the field).
        pydantic.ValidationError: a field is out of range or missing.
    """
    return Panel.model_validate(panel_payload(draft))


def _labels_from_text(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


def scale_editor(draft: dict[str, Any]) -> None:
    """Widgets for the scale; writes the user's choices back into the draft."""
    scale = draft["scale"]
    kind = st.selectbox(
        "Scale kind", SCALE_KINDS, index=SCALE_KINDS.index(scale.get("kind", "nominal")),
        key=f"{_WIDGET_PREFIX}scale.kind",
        help="nominal: unordered labels; ordinal: ordered labels; likert: integers min..max; "
        "score: a number in a range; yesno: yes / no.",
    )
    scale["kind"] = kind
    if kind in ("nominal", "ordinal"):
        text = st.text_input(
            "Labels (comma separated" + (", in order" if kind == "ordinal" else "") + ")",
            value=", ".join(scale.get("labels") or []),
            key=f"{_WIDGET_PREFIX}scale.labels",
        )
        scale["labels"] = _labels_from_text(text)
    elif kind in ("likert", "score"):
        low, high = st.columns(2)
        default_min = scale.get("min") if scale.get("min") is not None else 1.0
        default_max = scale.get("max") if scale.get("max") is not None else 5.0
        scale["min"] = low.number_input("Minimum", value=float(default_min),
                                        key=f"{_WIDGET_PREFIX}scale.min")
        scale["max"] = high.number_input("Maximum", value=float(default_max),
                                         key=f"{_WIDGET_PREFIX}scale.max")
    else:
        scale["labels"] = ["yes", "no"]


def _scale_labels(draft: dict[str, Any]) -> list[str]:
    scale = draft["scale"]
    if scale["kind"] == "yesno":
        return ["yes", "no"]
    if scale["kind"] == "likert" and scale.get("min") is not None and scale.get("max") is not None:
        try:
            return [str(i) for i in range(int(scale["min"]), int(scale["max"]) + 1)]
        except (TypeError, ValueError):
            return []
    if scale["kind"] == "score":
        return []
    return list(scale.get("labels") or [])


def voting_editor(draft: dict[str, Any]) -> None:
    """Widgets for the voting strategy and its tie and error policies."""
    voting = draft["voting"]
    numeric = draft["scale"]["kind"] == "score"
    fits = [
        name for name in strategy_names()
        if STRATEGY_KINDS.get(name, "both") in ("both", "score" if numeric else "label")
    ]
    if voting.get("strategy") not in fits:
        voting["strategy"] = fits[0] if fits else voting.get("strategy")
    voting["strategy"] = st.selectbox(
        "Strategy", fits, index=fits.index(voting["strategy"]) if voting["strategy"] in fits else 0,
        key=f"{_WIDGET_PREFIX}voting.strategy", format_func=lambda n: n,
        help="How the critics' verdicts become the panel's decision.",
    )
    hint = strategy_help(voting["strategy"])
    if hint:
        st.caption(hint)
    left, right = st.columns(2)
    voting["tie_policy"] = left.selectbox(
        "Tie policy", TIE_POLICIES, index=TIE_POLICIES.index(voting.get("tie_policy", "pessimistic")),
        key=f"{_WIDGET_PREFIX}voting.tie",
        help="pessimistic: the most cautious tied label (first in the priority); optimistic: the "
        "most lenient; abstain: no consensus (the fallback, if any).",
    )
    voting["error_policy"] = right.selectbox(
        "Error policy", ERROR_POLICIES,
        index=ERROR_POLICIES.index(voting.get("error_policy", "ignore")),
        key=f"{_WIDGET_PREFIX}voting.error",
        help="What a failed critic counts as: ignored, makes the panel abstain, or counts as a label.",
    )
    labels = _scale_labels(draft)
    if labels:
        if voting["error_policy"] == "count_as":
            current = voting.get("error_label")
            voting["error_label"] = left.selectbox(
                "Count a failure as", labels,
                index=labels.index(current) if current in labels else 0,
                key=f"{_WIDGET_PREFIX}voting.error_label",
            )
        fallback = voting.get("fallback")
        options: list[str | None] = [None, *labels]
        voting["fallback"] = right.selectbox(
            "Fallback when the vote abstains", options,
            index=options.index(fallback) if fallback in options else 0,
            format_func=lambda v: "(no consensus)" if v is None else v,
            key=f"{_WIDGET_PREFIX}voting.fallback",
        )
        priority = [p for p in voting.get("priority") or [] if p in labels]
        voting["priority"] = st.multiselect(
            "Priority, most cautious first (breaks ties)", labels, default=priority,
            key=f"{_WIDGET_PREFIX}voting.priority",
        )
    else:
        voting["error_label"] = None
        voting["fallback"] = None
        voting["priority"] = []


def add_critic(draft: dict[str, Any], preset: str) -> None:
    """Append a new critic built from a vendor preset."""
    draft["critics"].append(_new_critic(preset, len(draft["critics"]) + 1))


def critic_editor(draft: dict[str, Any], index: int) -> bool:
    """Widgets for one critic. Returns True when the user asked to remove it."""
    critic = draft["critics"][index]
    uid = critic["uid"]

    def key(field: str) -> str:
        return f"{_WIDGET_PREFIX}c{uid}.{field}"

    vendors = list(PRESETS)
    top = st.columns([2, 2, 3])
    critic["name"] = top[0].text_input("Name", value=critic["name"], key=key("name"))
    critic["vendor"] = top[1].selectbox(
        "Vendor", vendors, index=vendors.index(critic["vendor"]) if critic["vendor"] in vendors else 0,
        format_func=lambda v: PRESETS[v].title, key=key("vendor"),
    )
    critic["model"] = top[2].text_input("Model", value=critic["model"], key=key("model"))
    preset = PRESETS[critic["vendor"]]
    if preset.simulated:
        st.caption("Simulated vendor: verdicts are labelled *simulated*. Demo models: "
                   "sim-careful, sim-lenient, sim-strict, sim-flaky.")
    critic["system_prompt"] = st.text_area(
        "System prompt", value=critic.get("system_prompt") or "", key=key("system"), height=68
    )
    critic["prompt_template"] = st.text_area(
        "Prompt template ({field} inserts an item's field; {{ and }} are literal braces)",
        value=critic["prompt_template"], key=key("prompt"), height=160,
    )
    row = st.columns(5)
    critic["temperature"] = row[0].number_input(
        "Temperature", 0.0, 2.0, float(critic.get("temperature") or 0.0), 0.1, key=key("temp")
    )
    critic["max_tokens"] = int(row[1].number_input(
        "Max tokens", 1, 200_000, int(critic.get("max_tokens") or 512), key=key("max_tokens")
    ))
    critic["weight"] = row[2].number_input(
        "Weight", 0.0, 100.0, float(critic.get("weight", 1.0)), 0.5, key=key("weight")
    )
    critic["tier"] = int(row[3].number_input(
        "Tier", 0, 10, int(critic.get("tier") or 0), key=key("tier"),
        help="Cascades call tier 0 first and the next tier only for unsettled items.",
    ))
    critic["timeout_s"] = row[4].number_input(
        "Timeout (s)", 1.0, 3600.0, float(critic.get("timeout_s") or 60.0), key=key("timeout")
    )
    row2 = st.columns(4)
    default_var = preset.key_env or ""
    critic["api_key_env"] = row2[0].text_input(
        "Key variable", value=critic.get("api_key_env") or "", key=key("key_env"),
        placeholder=default_var or "(none needed)",
        help="The NAME of the environment variable (or [jurybox] secret) holding the key. "
        "Never paste a key here.",
    ) or None
    critic["base_url"] = row2[1].text_input(
        "Base URL", value=critic.get("base_url") or "", key=key("base_url"),
        placeholder=preset.base_url or ("(built in)" if preset.simulated else "required"),
    ) or None
    price_in = row2[2].number_input(
        "USD / M input tokens", 0.0, 1000.0,
        value=critic.get("price_in_per_mtok"), key=key("price_in"), placeholder="unknown",
    )
    price_out = row2[3].number_input(
        "USD / M output tokens", 0.0, 1000.0,
        value=critic.get("price_out_per_mtok"), key=key("price_out"), placeholder="unknown",
    )
    critic["price_in_per_mtok"] = price_in
    critic["price_out_per_mtok"] = price_out
    return st.button("Remove this critic", key=key("remove"), icon=":material/delete:")


def critic_from_draft(draft: dict[str, Any], index: int) -> Critic:
    """One critic of the draft, validated (for the prompt preview and the one-item test).

    Raises:
        pydantic.ValidationError: a field of the critic is invalid.
    """
    return Critic.model_validate(panel_payload(draft)["critics"][index])
