"""Label probabilities from token logprobs (G-Eval style): instead of the one label the model
sampled, the probability it gave each label at the token where it wrote its answer.

Read from an OpenAI-shaped chat completion asked with `logprobs: true, top_logprobs: K`:
`choices[0].logprobs.content` lists the reply's tokens, each with its `top_logprobs`. The
answer token is the first token of the value after the last `"label":` (or `"score":`) in the
reply (the answer follows any reasoning). Its alternatives are matched to the scale's labels
(case, quotes and spaces ignored; a token that is the start of exactly one label counts for
that label) and renormalised over the labels found. For ordered labels and numeric likert
labels the verdict also gets an expected score (sum of p x value) and its spread (standard
deviation).

Nothing here calls a vendor: the probabilities are derived from the reply. A run reads them
once, when the verdict comes back (`attach_probabilities`), onto the verdict's `label_probs`,
`expected_score` and `expected_spread`, which are stored with the call, so a vote, a re-vote
and the export read them without decompressing replies. The pooling of a panel's
probabilities is `judging.voting.pooling`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from judging.scales import Scale
from judging.verdicts import Verdict
from judging.voting.pooling import label_values, moments

_KEY = re.compile(r'"(label|score)"\s*:\s*"?')


@dataclass(frozen=True)
class LabelProbs:
    """Probabilities of the scale's labels at the answer token.

    Attributes:
        probs: label -> probability, renormalised over the labels found, in scale order.
        covered: the probability mass the matched tokens had before renormalising (how much of
            the model's choice the labels explain).
        expected: the expected score (numeric labels, or positions 1..K of ordered labels);
            None for unordered labels.
        spread: the standard deviation around `expected`.
    """

    probs: dict[str, float]
    covered: float
    expected: float | None = None
    spread: float | None = None

    def text(self) -> str:
        """"KEEP 0.71 · REJECT 0.20 · SPLIT 0.09" (with the expected score when there is one)."""
        parts = " · ".join(f"{label} {p:.2f}" for label, p in self.probs.items())
        if self.expected is not None and self.spread is not None:
            parts += f" · expected {self.expected:.2f} ± {self.spread:.2f}"
        return parts


def _norm(token: str) -> str:
    return token.strip().strip('"').strip("'").strip().lower()


def _match(token: str, labels: list[str]) -> str | None:
    text = _norm(token)
    if not text:
        return None
    exact = [label for label in labels if label.lower() == text]
    if exact:
        return exact[0]
    starting = [label for label in labels if label.lower().startswith(text)]
    return starting[0] if len(starting) == 1 else None


def label_probabilities(body: str | None, scale: Scale) -> LabelProbs | None:
    """The label probabilities in a reply body (see the module doc), or None when the reply
    carries no logprobs or no label token can be found."""
    if not body or not scale.labels:
        return None
    try:
        content = json.loads(body)["choices"][0]["logprobs"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    if not isinstance(content, list) or not content:
        return None
    tokens = [str(entry.get("token", "")) for entry in content if isinstance(entry, dict)]
    text = "".join(tokens)
    # The last "label": the answer follows any reasoning (or a decoy inside <think> tags).
    matches = list(_KEY.finditer(text))
    found = matches[-1] if matches else None
    if found is None:
        return None
    # The answer token: the first token holding a character of the value (one token may
    # also hold the quote or the space before it).
    start, offset, index = found.end(), 0, None
    for n, token in enumerate(tokens):
        end = offset + len(token)
        if end > start and _norm(token[max(0, start - offset):]):
            index = n
            break
        offset = end
    if index is None:
        return None
    alternatives = content[index].get("top_logprobs") or [
        {"token": content[index].get("token"), "logprob": content[index].get("logprob")}]
    mass: dict[str, float] = {}
    for alt in alternatives:
        label = _match(str(alt.get("token", "")), scale.labels)
        logprob = alt.get("logprob")
        if label is not None and isinstance(logprob, (int, float)):
            mass[label] = mass.get(label, 0.0) + math.exp(logprob)
    covered = sum(mass.values())
    if covered <= 0:
        return None
    probs = {label: mass[label] / covered for label in scale.labels if label in mass}
    values = label_values(scale)
    if values is None:
        return LabelProbs(probs, covered)
    expected, spread = moments(probs, values)
    return LabelProbs(probs, covered, expected, spread)


def verdict_probabilities(verdict: Verdict, scale: Scale) -> LabelProbs | None:
    """The label probabilities of a stored verdict (from its raw reply), if it has any."""
    if not verdict.ok:
        return None
    return label_probabilities(verdict.raw_response, scale)


def attach_probabilities(verdict: Verdict, scale: Scale) -> Verdict:
    """Read a successful verdict's label probabilities from its reply onto the verdict
    (`label_probs`, `expected_score`, `expected_spread`); a reply without usable logprobs
    leaves them None, which a probability vote reports as a fallback to the label.

    Returns:
        The same verdict.
    """
    probs = verdict_probabilities(verdict, scale)
    if probs is not None:
        verdict.label_probs = probs.probs
        verdict.expected_score, verdict.expected_spread = probs.expected, probs.spread
    return verdict


def logprobs_request(top: int) -> dict[str, Any]:
    """The request parameters that ask an OpenAI-compatible vendor for logprobs."""
    return {"logprobs": True, "top_logprobs": top}
