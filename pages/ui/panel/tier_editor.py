"""The Panel page's tier editor: `cascade.tiers`, one box per tier (name, critics, policy,
strategy, the labels its policy looks for, what a failed critic counts as).

Edits the draft (`pages.ui.panel.panel_draft`) in place; `Panel` validation judges the whole, so a
tier without critics or a last tier that is not final shows the model's own sentence. A tier's
other voting parameters (priority, tie policy...) are kept as loaded; a panel file sets them.
"""

from __future__ import annotations

from typing import Any, Literal

import streamlit as st

from judging.panel.cascade_tiers import POLICIES, default_labels
from judging.voting.strategies import strategy_names

POLICY_TEXT = {
    "reject_on_any_fail": "reject on any fail (guardrails)",
    "accept_on_all_pass": "accept on all pass (a gate)",
    "final": "final (decides the rest)",
}
_PANEL_VOTING = ""  # the strategy choice meaning "the panel's voting"
_ON_FAILURE_TEXT = {"fail": "counts as fail", "ignore": "is left out"}


def _policy_text(policy: str) -> str:
    return POLICY_TEXT[policy]


def _on_failure_text(choice: str) -> str:
    return _ON_FAILURE_TEXT[choice]


def _first_tiers(draft: dict[str, Any]) -> list[dict[str, Any]]:
    """The tiers a panel starts from when its first tier is added: one per `tier` number the
    critics use (so nothing moves), the last final and the others gates; the critics' numbers
    are then cleared (the tiers name their critics)."""
    numbers = sorted({int(c.get("tier") or 0) for c in draft["critics"]})
    tiers = [{"name": "", "critics": [str(c.get("name") or "") for c in draft["critics"]
                                      if int(c.get("tier") or 0) == n],
              "policy": "accept_on_all_pass"} for n in numbers]
    tiers[-1]["policy"] = "final"
    for critic in draft["critics"]:
        critic["tier"] = 0
    return tiers


def tiers_editor(draft: dict[str, Any], prefix: str) -> bool:
    """Draw the tiers of `draft["cascade"]`; widget keys start with `prefix` (the draft's key
    prefix). Returns True when a tier was added or removed: the caller gives every widget a new
    key (positions moved) and reruns."""
    cascade = draft["cascade"]
    tiers: list[dict[str, Any]] = cascade.setdefault("tiers", []) or []
    cascade["tiers"] = tiers
    names = [str(c.get("name") or "") for c in draft["critics"]]
    labels = [str(label) for label in draft["scale"].get("labels") or []]
    strategies = [_PANEL_VOTING, *strategy_names()]
    for index, tier in enumerate(tiers):
        key = f"{prefix}.cascade.tiers.{index}"
        with st.container(border=True):
            st.markdown(f"**Tier {index + 1}**")
            left, middle, right, last = st.columns(4)
            tier["name"] = left.text_input("Name", value=str(tier.get("name") or ""),
                                           key=f"{key}.name", help="Shown on Review, e.g. "
                                           "guardrails (optional).")
            chosen = [str(n) for n in tier.get("critics") or []]
            tier["critics"] = middle.multiselect(
                "Critics", list(dict.fromkeys([*names, *chosen])), default=chosen,
                key=f"{key}.critics", help="Every critic sits in exactly one tier.")
            policy = str(tier.get("policy") or "final")
            tier["policy"] = right.selectbox(
                "Policy", POLICIES, index=POLICIES.index(policy) if policy in POLICIES else 2,
                format_func=_policy_text, key=f"{key}.policy",
                help="reject on any fail: a critic voting a fail label stops the item as "
                "rejected. accept on all pass: every critic voting a pass label stops it as "
                "accepted. final: the last tier (only it) decides the rest by its vote.")
            voting = tier.get("voting") or None
            current = str(voting.get("strategy")) if voting else _PANEL_VOTING
            strategy = last.selectbox(
                "Strategy", strategies,
                index=strategies.index(current) if current in strategies else 0,
                format_func=lambda s: s or "(the panel's voting)", key=f"{key}.strategy",
                help="How this tier's critics vote among themselves.")
            tier["voting"] = None if strategy == _PANEL_VOTING else {**(voting or {}),
                                                                     "strategy": strategy}
            _policy_labels(tier, labels, key)
            if st.button("Remove this tier", key=f"{key}.remove", icon=":material/delete:"):
                tiers.pop(index)
                return True
    if st.button("Add a tier" if tiers else "Name the tiers (each its own jury and policy)",
                 key=f"{prefix}.cascade.tiers", icon=":material/add:",
                 help="A new tier goes before the final one; the first click makes one tier "
                 "per cascade tier number the critics use."):
        if tiers:
            tiers.insert(len(tiers) - 1, {"name": "", "critics": [],
                                          "policy": "reject_on_any_fail"})
        else:
            tiers.extend(_first_tiers(draft))
        return True
    return False


def _policy_labels(tier: dict[str, Any], labels: list[str], key: str) -> None:
    """The labels the tier's policy looks for, and what a failed critic counts as; a final
    tier has neither (they would be refused), so they are cleared when the policy changes."""
    policy = tier["policy"]
    if policy == "final":
        tier["fail_labels"], tier["pass_labels"], tier["on_failure"] = [], [], "fail"
        return
    kind: Literal["pass", "fail"]
    field, other, kind = (("fail_labels", "pass_labels", "fail") if policy ==
                          "reject_on_any_fail" else ("pass_labels", "fail_labels", "pass"))
    tier[other] = []
    chosen = [str(label) for label in tier.get(field) or []]
    defaults = default_labels(labels, kind)
    left, right = st.columns(2)
    tier[field] = left.multiselect(
        f"{kind.capitalize()} labels", list(dict.fromkeys([*labels, *chosen])), default=chosen,
        key=f"{key}.{field}",
        placeholder=(f"the scale's: {', '.join(defaults)}" if defaults else "choose labels"),
        help=f"The labels that count as {kind}. Empty: the scale's labels that read as {kind}.")
    on_failure = str(tier.get("on_failure") or "fail")
    tier["on_failure"] = right.selectbox(
        "A critic that gives no verdict", list(_ON_FAILURE_TEXT),
        index=1 if on_failure == "ignore" else 0, key=f"{key}.on_failure",
        format_func=_on_failure_text,
        help="counts as fail: a guard that could not check rejects the item, a gate is not "
        "passed. is left out: the tier decides on the verdicts it has.")
