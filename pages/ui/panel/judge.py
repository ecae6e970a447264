"""One critic on one item, for the panel builder: the requests it would send (the preview) and
one real call ("test this critic").

Why the preview walks `judging.engine.chains.judge_with`: a preview drawn from `Critic.build_messages`
showed a rubric panel's critic one "score" instruction while the run asks for a mark per
criterion, and showed nothing of a pairwise swap or a compound critic's chain. Here the run's
own code decides which calls a critic makes, and each call's messages come from
`prepare_call`, the function the call layer builds every request body with, so the preview is
the request, not a likeness of it. No call is sent: a stand-in answer lets a chain go on to its
next step, whose messages then quote that stand-in where the real answer will be.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from judging.engine.calls import CallRunner
from judging.engine.calls.prepare import prepare_call
from judging.engine.chains import judge_with
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.panel.rubric import RubricConfig
from judging.scales import Scale
from judging.verdicts import PLUGIN_KINDS, Item, Verdict
from pages.ui.state import key_lookup

# What a later step of a chain shows where the earlier step's real answer will be.
STAND_IN = "(the answer to the step before goes here)"


@dataclass(frozen=True)
class PreviewStep:
    """One request of the preview.

    Attributes:
        critic: who is asked (a debater, in a debate's turns).
        role: its part ("reason", "criterion accurate", "A first", ...); None for a plain call.
        messages: exactly the `messages` of the request body.
        after_stand_in: the messages quote a stand-in for an earlier step's answer.
    """

    critic: str
    role: str | None
    messages: list[dict[str, str]]
    after_stand_in: bool


def _stand_in(critic: Critic, item: Item, scale: Scale | RubricConfig) -> Verdict:
    """A successful answer that makes a chain go on (the first label, or the lowest score)."""
    if isinstance(scale, RubricConfig) or scale.is_numeric:
        low = scale.min if isinstance(scale, Scale) and scale.min is not None else 0.0
        return Verdict(critic=critic.name, item_id=item.id, score=float(low), reasoning=STAND_IN)
    return Verdict(critic=critic.name, item_id=item.id, label=scale.labels[0], reasoning=STAND_IN)


def request_preview(panel: Panel, critic_name: str, item: Item) -> list[PreviewStep]:
    """The requests `critic_name` of `panel` sends for `item`, in order, without sending any.

    A critic's repeats (`samples`) send the first request again: it is listed once.

    Raises:
        PlaceholderError: the critic's prompt uses a field this item lacks.
        CriticCallError: the critic's vendor is unknown, or a custom one has no base URL.
    """
    critics = {c.name: c for c in panel.critics}
    if critics[critic_name].kind in PLUGIN_KINDS:
        return []  # a rule or python critic sends nothing
    made: list[tuple[Verdict, list[dict[str, str]], bool]] = []

    def send(critic: Critic, item: Item, scale: Scale | RubricConfig, *,
             messages: list[dict[str, str]] | None = None, free_text: bool = False,
             sample: int = 0) -> Verdict:
        prepared = prepare_call(critic, item, scale, messages=messages, free_text=free_text,
                                sample=sample)
        answer = _stand_in(critic, item, scale)
        made.append((answer, prepared.body["messages"], bool(made)))
        return answer

    judge_with(critics[critic_name], item, panel.scale, send, critics=critics,
               pairwise=panel.pairwise, rubric=panel.rubric)
    # Read after the walk: the chain names each call's role and sample on the answer it got.
    return [PreviewStep(critic=answer.critic, role=answer.role, messages=messages,
                        after_stand_in=later and STAND_IN in str(messages))
            for answer, messages, later in made if answer.sample == 0]


@st.cache_resource(show_spinner=False)
def _runner() -> CallRunner:
    # One pooled runner per process: building an httpx client per click would redo TLS set-up.
    # No cache: a test call must really reach the vendor.
    return CallRunner(key_lookup=key_lookup, python_critics=False)  # the web app imports none


def judge_one(panel: Panel, critic_name: str, item: Item) -> Verdict:
    """Send one real call: `critic_name` of `panel` judging `item`. Never raises.

    Returns:
        The verdict, with its raw request (no key) and raw reply, or a failure with its reason.
    """
    critics = {c.name: c for c in panel.critics}
    # The critic as the run would ask it: a compound critic's whole chain, every repeat.
    return judge_with(critics[critic_name], item, panel.scale, _runner().call, critics=critics,
                      pairwise=panel.pairwise, rubric=panel.rubric)
