"""The Panel page's editors: the draft (`pages.ui.panel.panel_draft`) edited by widgets generated
from the model's fields (`pages.ui.panel.model_form`), so every part of a panel — scale, critics,
every voting parameter, cascade, per-vendor limits — is editable, and a field added to the
model appears on the page; and the tie sentence of the chosen strategy.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from judging.panel.context_limits import ContextGuard
from judging.panel.critics import Critic
from judging.panel.curation import CurationConfig
from judging.panel.pairwise import PairwiseConfig
from judging.panel.panel_model import CascadeConfig, Panel
from judging.panel.rubric import MARK_SCALE, RubricConfig
from judging.panel.rule_checks import Rule
from judging.panel.vendors import PRESETS
from judging.panel.web_policy import WEB_PYTHON_REFUSAL
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS
from judging.voting.strategies import VotingConfig, strategy_help, strategy_names, tie_rule_text
from pages.ui.panel.model_form import field_widget, model_editor
from pages.ui.panel.panel_draft import NOT_EDITABLE, key_prefix, new_generation, widget_key
from pages.ui.panel.tier_editor import tiers_editor
from pages.ui.text_format import plain

# -- the sections ------------------------------------------------------------------------------


def header_editor(draft: dict[str, Any]) -> None:
    """Name and description (every top-level field that is not a section of its own)."""
    model_editor(Panel, draft, key_prefix(draft),
                 skip=(*NOT_EDITABLE, "scale", "critics", "voting", "cascade", "limits",
                       "curation", "pairwise", "rubric", "juries", "context_guard"),
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
             "python: a function of yours (CLI and library only: the web app never runs it). "
             "imported: replays a judge's verdicts imported on Datasets (no model, free)."),
    "rule": ("Rule", "rule: what it checks, e.g. {check: no-regex, field: answer, pattern: "
             "'\\d{16}'}. Checks: regex, no-regex, json-schema, length, keywords, range, "
             "exact."),
    "function": ("Python function", "python: module:function to call, e.g. mypkg.checks:no_pii "
                 "(run by the CLI and the library only)."),
    "judge": ("Imported judge", "imported: whose verdicts it replays, as named in the file "
              "imported with the dataset (empty: the critic's name)."),
    "pass_label": ("Label when the check passes", "rule / python: the label a passed check "
                   "gives (a yes/no scale: yes)."),
    "fail_label": ("Label when the check fails", "rule / python: the label a failed check gives "
                   "(a yes/no scale: no); in a guard tier it rejects the item."),
    "reason_prompt": ("Reasoning instruction", "reason-then-judge: what the first call is asked "
                      "(empty: the default)."),
    "verify_prompt": ("Checking instruction", "self-verify: what the checking call is asked "
                      "(empty: the default)."),
    "context_window": ("Context window (tokens)", "The model's context window, for the "
                       "context guard (empty: the known window of the model, if any)."),
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
        new_generation(draft)
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


def context_guard_editor(draft: dict[str, Any]) -> None:
    st.caption("What a run does with an item whose prompt would not fit a critic's context "
               "window: send it whole anyway, skip it (the verdict says why), or judge a "
               "window of its conversation's last messages. The Run page names the over-long "
               "items and asks again.")
    model_editor(ContextGuard, draft["context_guard"], f"{key_prefix(draft)}.context_guard",
                 columns=2)


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
