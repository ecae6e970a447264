"""Demo content: two datasets with gold labels, and panels of simulated critics for them.

- Taxonomy curation: `taxonomy_candidates.csv` (300 rows, built by `make_dataset.py`) holds
  candidate classes of a retail product taxonomy; a curator decides KEEP, REJECT, SPLIT or
  MERGE for each. `demo_panel.yaml` has four simulated critics; `demo_panel_v2.yaml` is its
  second version (one critic changed), to compare with it; `chains_panel.yaml` asks the same
  with compound and repeated critics; `guard_rules_panel.yaml` puts a free rule critic in
  front of it as a guard tier.
- Pairwise: `pairwise_answers.csv` (60 comparisons, built by `make_pairwise_dataset.py`) pits
  three support assistants against each other two at a time; `pairwise_panel.yaml` asks three
  critics which answer is better, in both orders.
- Conversations: `support_chats.jsonl` (four support chats, one with agent tool calls) in the
  `conversation` field, judged per assistant turn (`judging.panel.conversation`);
  `conversation_panel.yaml` has two critics that read the turn alone and two that read the
  thread up to it. Planted failures: a refund promised past the 30-day policy (looks fine
  alone), a bare "Yes." that answers the question before it (looks useless alone), and an agent
  that looks up the wrong order number (its first failing step).

The critics' behaviour is set by `demo_profiles()`: the shared simulator serves those profiles
and `demo_gold()` (the curation labels, each pairwise answer's quality, and what each
conversation turn reads as alone and in its thread).

May import `judging.simulator` (the profiles) and `judging.panel` (the conversation demo is read
with the panel's own conversation reader, so its gold keys are the texts critics are shown).
"""

from __future__ import annotations

import csv
import functools
import json
import pathlib

from judging.panel.conversation import parse_conversation, transcript
from judging.simulator.sim_server import Profile

__all__ = [
    "demo_dataset_path",
    "demo_gold",
    "demo_panel_path",
    "demo_panel_v2_path",
    "demo_profiles",
    "conversation_dataset_path",
    "conversation_panel_path",
    "guard_rules_panel_path",
    "pairwise_dataset_path",
    "pairwise_panel_path",
]

_HERE = pathlib.Path(__file__).parent
# The simulator finds an item's gold label by the text of this field (see judging.simulator.sim_server).
GOLD_KEY_FIELD = "candidate_class"


def demo_dataset_path() -> pathlib.Path:
    """Path of the demo dataset CSV (columns: id, candidate_class, parent, description,
    example_members, existing_siblings, gold)."""
    return _HERE / "taxonomy_candidates.csv"


def demo_panel_path() -> pathlib.Path:
    """Path of the demo panel YAML (four simulated critics, plurality voting)."""
    return _HERE / "demo_panel.yaml"


def demo_panel_v2_path() -> pathlib.Path:
    """Path of the demo panel's second version (its `lenient` critic replaced by `second` on
    sim-biased), for comparing two panel versions over the demo dataset."""
    return _HERE / "demo_panel_v2.yaml"


def guard_rules_panel_path() -> pathlib.Path:
    """Path of the demo panel behind a rule guard: a free `kind: rule` critic in tier 0 rejects
    candidate classes that are no kind of product before the four simulated critics are asked."""
    return _HERE / "guard_rules_panel.yaml"


def pairwise_dataset_path() -> pathlib.Path:
    """Path of the pairwise demo dataset CSV (columns: id, question, system_a, answer_a,
    system_b, answer_b, gold, quality_a, quality_b)."""
    return _HERE / "pairwise_answers.csv"


def pairwise_panel_path() -> pathlib.Path:
    """Path of the pairwise demo panel YAML (three simulated critics, both orders asked)."""
    return _HERE / "pairwise_panel.yaml"


def conversation_dataset_path() -> pathlib.Path:
    """Path of the conversation demo (JSON Lines: id, channel, conversation, a list of
    OpenAI-style messages; each assistant message carries its `gold` PASS / FAIL)."""
    return _HERE / "support_chats.jsonl"


def conversation_panel_path() -> pathlib.Path:
    """Path of the conversation demo panel (per turn: two critics read the turn alone, two
    the thread up to it)."""
    return _HERE / "conversation_panel.yaml"


def _turn_gold() -> list[tuple[str, str]]:
    """What a reader of each turn would say, keyed by the text the simulator is shown first:
    the turn alone (an assistant message's `looks_alone`, else its gold), and the thread up to
    the turn with all tool results (its gold: the context the demo is imported with)."""
    pairs = []
    with conversation_dataset_path().open(encoding="utf-8") as fh:
        for line in fh:
            raw = json.loads(line)["conversation"]
            messages = parse_conversation(raw) or []
            for index, (message, source) in enumerate(zip(messages, raw, strict=True)):
                if message.role == "assistant" and message.gold is not None:
                    pairs.append((message.text, source.get("looks_alone", message.gold)))
                    pairs.append((transcript(messages[:index]), message.gold))
    return pairs


@functools.cache
def _gold() -> tuple[tuple[str, str], ...]:
    with demo_dataset_path().open(newline="", encoding="utf-8") as fh:
        curation = [(row[GOLD_KEY_FIELD], row["gold"]) for row in csv.DictReader(fh)]
    with pairwise_dataset_path().open(newline="", encoding="utf-8") as fh:
        quality = [pair for row in csv.DictReader(fh) for pair in (
            (row["answer_a"], row["quality_a"]), (row["answer_b"], row["quality_b"]))]
    return tuple(curation + quality + _turn_gold())


def demo_gold() -> dict[str, str]:
    """What the simulator takes as the truth for the demo datasets.

    Returns:
        A fresh dict: candidate class -> KEEP / REJECT / SPLIT / MERGE, and each pairwise
        answer's text -> its quality ("0.83"; the simulator compares two answers by it).
    """
    return dict(_gold())


def demo_profiles() -> dict[str, Profile]:
    """How each demo model behaves in the simulator: different strengths, biases and habits.

    - sim-careful: right about 93% of the time, slow, sometimes fences its JSON.
    - sim-lenient: about 78% right; when wrong it mostly says KEEP; often thinks aloud in
      <think> tags, sometimes with a decoy verdict inside.
    - sim-strict: about 80% right; when wrong it mostly says REJECT; wraps JSON in prose.
    - sim-flaky: about 85% right, but rate-limited, erroring, truncating and refusing now and then.
    - sim-biased: about 85% right, but a quarter of its comparisons go to whichever answer it
      reads first (the pairwise demo's position bias).
    """
    return {
        "sim-careful": Profile(
            accuracy=0.93, confidence_mean=0.85, latency_ms=120, jitter_ms=80, rate_fenced=0.15
        ),
        "sim-lenient": Profile(
            accuracy=0.78, bias={"KEEP": 6.0}, confidence_mean=0.9, latency_ms=40, jitter_ms=30,
            rate_think=0.4, decoy_rate=0.5,
        ),
        "sim-strict": Profile(
            accuracy=0.8, bias={"REJECT": 6.0}, confidence_mean=0.75, latency_ms=60,
            jitter_ms=40, rate_prose=0.25,
        ),
        "sim-flaky": Profile(
            accuracy=0.85, confidence_mean=0.7, latency_ms=80, jitter_ms=150, rate_429=0.08,
            retry_after_ms=200, rate_500=0.04, rate_malformed=0.03, rate_truncated=0.02,
            rate_refusal=0.02, rate_fenced=0.3,
        ),
        "sim-biased": Profile(
            accuracy=0.85, confidence_mean=0.8, latency_ms=50, jitter_ms=30, position_bias=0.25,
        ),
    }
