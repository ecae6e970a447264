"""Rubric panels: an item graded against several weighted criteria instead of one scale.

Each criterion has an id, a text and a weight; a negative weight is a penalty ("mentions a
competitor"). A critic marks every criterion MET, UNMET or CANNOT_ASSESS (the item gives no way
to tell) with a reason: in one call returning every criterion (the default), or one call per
criterion (`per_criterion`, for long rubrics: `judging.engine.chains`). The critic's score, and the
panel's, is the weight of the criteria met over the positive weight, between 0 and 1:

    score = clip( sum(w for met criteria, penalties included) / sum(w > 0), 0, 1 )

CANNOT_ASSESS follows the panel's policy: "skip" leaves the criterion out (a positive one then
leaves the denominator too), "unmet" / "met" count it as such.

The panel votes per criterion, with its own voting settings, over the marks (MET, UNMET and
CANNOT_ASSESS are the labels); the item's score is the score of the criteria's consensus marks,
and its label the score's band under the panel's `voting.thresholds` (the score as text without
thresholds).
A criterion whose critics disagree is "in dispute".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

from judging.errors import ParseError
from judging.known_fields import StrictModel
from judging.scales import Scale
from judging.verdicts import Verdict, VoteOutcome
from judging.voting.strategies import VotingConfig, band, vote

MET, UNMET, CANNOT_ASSESS = "MET", "UNMET", "CANNOT_ASSESS"
MARKS = (MET, UNMET, CANNOT_ASSESS)
MARK_SCALE = Scale(kind="nominal", labels=list(MARKS))
_SYNONYMS = {
    "met": MET, "yes": MET, "true": MET, "pass": MET, "satisfied": MET,
    "unmet": UNMET, "not met": UNMET, "not_met": UNMET, "no": UNMET, "false": UNMET,
    "fail": UNMET,
    "cannot_assess": CANNOT_ASSESS, "cannot assess": CANNOT_ASSESS, "n/a": CANNOT_ASSESS,
    "na": CANNOT_ASSESS, "unknown": CANNOT_ASSESS, "unclear": CANNOT_ASSESS,
}


class Criterion(StrictModel):
    """One criterion of a rubric."""


    id: str = Field(min_length=1, max_length=64)
    text: str = Field(min_length=1)
    weight: float = 1.0  # negative: a penalty when met

    @field_validator("id")
    @classmethod
    def _a_short_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", value):
            raise ValueError("letters, digits, '_', '-' and '.' only (it names a column)")
        return value


class RubricConfig(StrictModel):
    """A panel's rubric (off while it has no criteria)."""


    criteria: list[Criterion] = Field(default_factory=list)
    per_criterion: bool = False  # one call per criterion instead of one for all
    cannot_assess: Literal["skip", "unmet", "met"] = "skip"

    @property
    def active(self) -> bool:
        return bool(self.criteria)

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.criteria]


Marks = dict[str, tuple[str, str | None]]  # criterion id -> (mark, reason)


def rubric_score(marks: Mapping[str, str | None], rubric: RubricConfig) -> float | None:
    """The score of a set of marks (see the module docstring); None when no criterion with a
    positive weight could be counted."""
    met = positive = 0.0
    for criterion in rubric.criteria:
        mark = marks.get(criterion.id)
        if mark == CANNOT_ASSESS:
            if rubric.cannot_assess == "skip":
                continue
            mark = MET if rubric.cannot_assess == "met" else UNMET
        if mark is None:
            continue  # no mark (a failed call, an abstained vote): left out like "skip"
        if criterion.weight > 0:
            positive += criterion.weight
        if mark == MET:
            met += criterion.weight
    if positive <= 0:
        return None
    return min(1.0, max(0.0, met / positive))


def normalize_mark(value: Any) -> str:
    """MET, UNMET or CANNOT_ASSESS from a model's spelling of it.

    Raises:
        ParseError: anything else.
    """
    text = str(value).strip()
    if text.upper() in MARKS:
        return text.upper()
    mark = _SYNONYMS.get(text.casefold().replace("-", " ").strip())
    if mark is None:
        raise ParseError(f"mark {value!r} is not one of MET, UNMET, CANNOT_ASSESS", raw=text)
    return mark


# -- the calls ------------------------------------------------------------------------------


def _listing(criteria: Sequence[Criterion]) -> str:
    lines = "\n".join(f"- {c.id}: {c.text}" for c in criteria)
    return (
        "Grade the item against each criterion below. Mark a criterion MET when the item "
        "satisfies it, UNMET when it does not, and CANNOT_ASSESS when the item gives no way "
        f"to tell.\n<criteria>\n{lines}\n</criteria>"
    )


def rubric_answer(rubric: RubricConfig) -> str:
    """The reply format of a call that marks every criterion."""
    return (
        'Answer with one JSON object only: {"criteria": {"<criterion id>": {"mark": one of '
        'MET, UNMET, CANNOT_ASSESS, "reasoning": "one sentence"}, ...}, "confidence": a number '
        f"from 0 to 1}}, with an entry for every criterion: {', '.join(rubric.ids)}."
    )


def all_criteria_context(rubric: RubricConfig) -> str:
    return _listing(rubric.criteria)


def one_criterion_context(criterion: Criterion) -> str:
    return _listing([criterion])


def parse_marks(answer: str, rubric: RubricConfig) -> tuple[Marks, float | None]:
    """Every criterion's mark and reason from a reply's text (the JSON object with a
    "criteria" entry), and its confidence.

    Raises:
        ParseError: no such object, a criterion missing, or a mark that is not one.
    """
    found = None
    for match in re.finditer(r"\{", answer):
        try:
            obj, _ = json.JSONDecoder().raw_decode(answer[match.start():])
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("criteria"), dict):
            found = obj
            break
    if found is None:
        raise ParseError("no JSON object with a \"criteria\" entry in the reply", raw=answer)
    given = {str(k).strip(): v for k, v in found["criteria"].items()}
    missing = [c for c in rubric.ids if c not in given]
    if missing:
        raise ParseError(f"the reply gives no mark for {', '.join(missing)}", raw=answer)
    marks: Marks = {}
    for criterion in rubric.ids:
        entry = given[criterion]
        mark = entry.get("mark") if isinstance(entry, dict) else entry
        reason = entry.get("reasoning") if isinstance(entry, dict) else None
        marks[criterion] = (normalize_mark(mark), None if reason is None else str(reason))
    confidence = found.get("confidence")
    return marks, float(confidence) if isinstance(confidence, (int, float)) else None


def marks_text(marks: Marks) -> str:
    """"clarity MET · accuracy UNMET" (the reasoning a rubric verdict carries)."""
    return " · ".join(f"{criterion} {mark}" for criterion, (mark, _) in marks.items())


# -- the vote -------------------------------------------------------------------------------


@dataclass(slots=True)
class CriterionOutcome:
    """The panel's vote on one criterion of one item."""

    mark: str | None  # None: the vote abstained
    agreement: float | None
    disputed: bool


def rubric_vote(verdicts: Sequence[Verdict], weights: dict[str, float], panel_voting: VotingConfig,
                rubric: RubricConfig) -> VoteOutcome:
    """The panel's decision on a rubric item: a vote per criterion over the critics' marks
    (with the panel's voting settings), and the score of the consensus marks.

    A failed critic counts as failed in every criterion's vote (never as a mark)."""
    per_criterion: dict[str, CriterionOutcome] = {}
    for criterion in rubric.ids:
        ballots = [
            Verdict(v.critic, v.item_id, label=v.marks[criterion][0])
            if v.ok and criterion in v.marks
            else Verdict(v.critic, v.item_id, failure=v.failure, message=v.message)
            for v in verdicts
        ]
        outcome = vote(ballots, weights, panel_voting, MARK_SCALE)
        per_criterion[criterion] = CriterionOutcome(
            None if outcome.consensus is None else str(outcome.consensus), outcome.agreement,
            outcome.disagreement)
    consensus = {c: o.mark for c, o in per_criterion.items()}
    scores = [v.score for v in verdicts if v.ok and v.score is not None]
    disputed = [c for c, o in per_criterion.items() if o.disputed]
    agreements = [o.agreement for o in per_criterion.values() if o.agreement is not None]
    score = rubric_score(consensus, rubric)
    return VoteOutcome(
        consensus=score,
        # The score's band under the panel's thresholds, as a score panel's vote gives it: the
        # item's label (`storage.reviewing.decisions` labels a reviewer's rescored marks the same way).
        recommendation=(band(score, panel_voting.thresholds)
                        if score is not None and panel_voting.thresholds else None),
        agreement=sum(agreements) / len(agreements) if agreements else None,
        disagreement=bool(disputed),
        failed=sum(1 for v in verdicts if not v.ok),
        spread=max(scores) - min(scores) if scores else None,
        note=f"in dispute: {', '.join(disputed)}" if disputed else None,
        marks={c: {"mark": o.mark, "agreement": o.agreement, "disputed": o.disputed}
               for c, o in per_criterion.items()},
    )
