"""Calibration from code matrices (issue 25 part 6): the same `Calibration` as the one computed
from `Verdict` objects, for every label strategy, error policy and tie policy, with failed,
unusable and absent verdicts and verdicts stored in a shuffled order; and read from a real
SQLite run through `storage.results.vote_grid`."""

from __future__ import annotations

import random

import numpy as np
import pytest

from judging.analysis.calibration import calibrate
from judging.analysis.code_calibration import ABSENT, FAILED, calibrate_codes
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel
from judging.scales import Scale
from judging.verdicts import FailureKind, Verdict
from judging.voting.strategies import VotingConfig

LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]
CRITICS = ["a", "b", "c"]


def _panel(voting: VotingConfig, weights: tuple[float, ...] = (1.0, 1.0, 1.0)) -> Panel:
    return Panel(name="p", scale=Scale(kind="nominal", labels=LABELS), voting=voting,
                 critics=[Critic(name=c, vendor="simulated", model=c, prompt_template="{x}",
                                 weight=w) for c, w in zip(CRITICS, weights, strict=True)])


def _data(seed: int, n: int = 400) -> tuple[dict[str, list[Verdict]], dict[str, str]]:
    """Verdicts with a lean per item, 10% failures, some unusable labels, some absent critics,
    some items in a shuffled critic order; humans on a third of the items (and one outside)."""
    rng = random.Random(seed)
    verdicts: dict[str, list[Verdict]] = {}
    for i in range(n):
        item = f"i{i:04d}"
        lean = rng.choice(LABELS)
        row = []
        for critic in CRITICS:
            roll = rng.random()
            if roll < 0.05:
                continue  # never asked
            if roll < 0.13:
                row.append(Verdict(critic=critic, item_id=item, failure=FailureKind.PARSE_FAIL))
            elif roll < 0.15:
                row.append(Verdict(critic=critic, item_id=item, label="maybe"))  # not a label
            else:
                label = lean if rng.random() < 0.7 else rng.choice(LABELS)
                row.append(Verdict(critic=critic, item_id=item, label=label,
                                   confidence=round(rng.random(), 2)))
        if rng.random() < 0.1:
            rng.shuffle(row)
        verdicts[item] = row
    humans = {item: rng.choice(LABELS) for item in list(verdicts)[::3]}
    humans["elsewhere"] = "KEEP"  # reviewed, but not in these verdicts
    return verdicts, humans


def _arrays(verdicts: dict[str, list[Verdict]]) -> dict[str, object]:
    """The arrays `storage.results.vote_grid` reads, built here from the verdicts themselves."""
    values: dict[tuple[str | None, float | None], int] = {}
    n = len(verdicts)
    codes = np.full((n, len(CRITICS)), ABSENT, dtype=np.int32)
    order = np.zeros((n, len(CRITICS)), dtype=np.int64)
    confidence = np.full((n, len(CRITICS)), np.nan)
    call_id = 0
    for row, item in enumerate(verdicts):
        for v in verdicts[item]:
            col = CRITICS.index(v.critic)
            call_id += 1
            order[row, col] = call_id
            if v.failure is not None or (v.label is None and v.score is None):
                codes[row, col] = FAILED
                continue
            codes[row, col] = values.setdefault((v.label, v.score), len(values))
            confidence[row, col] = np.nan if v.confidence is None else v.confidence
    return {"items": np.array(list(verdicts), dtype=object), "critics": CRITICS, "codes": codes,
            "values": list(values), "order": order, "confidence": confidence}


VOTINGS = [
    VotingConfig(),
    VotingConfig(strategy="majority", fallback="SPLIT"),
    VotingConfig(strategy="unanimous"),
    VotingConfig(strategy="weighted", tie_policy="optimistic", priority=["REJECT", "KEEP"]),
    VotingConfig(strategy="weighted", use_confidence=True),
    VotingConfig(strategy="any", target_label="REJECT"),
    VotingConfig(strategy="first-disagreement", fallback="MERGE"),
    VotingConfig(strategy="plurality", tie_policy="abstain", error_policy="abstain"),
    VotingConfig(strategy="plurality", error_policy="count_as", error_label="REJECT"),
    VotingConfig(strategy="dawid-skene"),
    VotingConfig(strategy="dawid-skene", error_policy="count_as", error_label="MERGE",
                 tie_policy="optimistic"),
]


@pytest.mark.parametrize("voting", VOTINGS, ids=lambda v: f"{v.strategy}-{v.error_policy}")
@pytest.mark.parametrize("seed", [1, 2])
def test_code_matrices_give_the_calibration_of_the_verdicts(voting, seed):
    verdicts, humans = _data(seed)
    panel = _panel(voting, weights=(1.0, 0.5, 2.0))
    expected = calibrate(panel, verdicts, humans)
    got = calibrate_codes(panel, humans=humans, **_arrays(verdicts))  # type: ignore[arg-type]
    assert got == expected
    # Dicts compare without their order; the order decides the top confusion on a tie.
    for mine, theirs in zip(got.critics, expected.critics, strict=True):
        assert list(mine.confusions) == list(theirs.confusions)
        assert mine.top_confusion == theirs.top_confusion
    assert got.projection.changed == expected.projection.changed


def test_few_reference_labels_keep_the_weight_and_say_so():
    verdicts, _ = _data(3, n=6)
    panel = _panel(VotingConfig())
    humans = {"i0000": "KEEP"}
    got = calibrate_codes(panel, humans=humans, **_arrays(verdicts))  # type: ignore[arg-type]
    assert got == calibrate(panel, verdicts, humans)


def test_mismatched_arrays_are_refused_with_a_sentence():
    verdicts, humans = _data(4, n=10)
    arrays = _arrays(verdicts)
    arrays["order"] = np.zeros((3, 3), dtype=np.int64)
    with pytest.raises(ValueError, match="items x 3 critics"):
        calibrate_codes(_panel(VotingConfig()), humans=humans, **arrays)  # type: ignore[arg-type]


def test_the_stored_grid_is_the_stored_verdicts(tmp_path):
    """`storage.results.vote_grid` over a real SQLite run: one row per consensus row, in file order,
    a failed call FAILED, a critic never asked ABSENT, the values the stored labels."""
    from judging.runs.background.jobs import prepare_run
    from judging.runs.stored.calibrate import run_calibration
    from judging.verdicts import PanelVerdict, VoteOutcome
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db
    from storage.results.calls import write_verdicts
    from storage.results.consensus import load_panel_verdicts, write_consensus
    from storage.results.vote_grid import vote_grid
    from storage.reviewing.overrides import add_override, human_labels

    verdicts, humans = _data(5, n=120)
    data = tmp_path / "d.csv"
    data.write_text("id,x\n" + "".join(f"{i},text\n" for i in verdicts), encoding="utf-8")
    db = open_db(tmp_path / "g.db")
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="d")
    panel = _panel(VotingConfig(strategy="first-disagreement", fallback="MERGE"))
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    # Two items outside the dataset (written in reverse order): both at position 0, with the
    # dataset's first item, so the grid puts those three by item id, as `iter_panel_verdicts`
    # does.
    extra = {"zz-outside": [Verdict(critic="a", item_id="zz-outside", label="KEEP")],
             "aa-outside": [Verdict(critic="b", item_id="aa-outside", label="SPLIT")]}
    verdicts = {**extra, **verdicts}
    for item, row in verdicts.items():
        write_verdicts(db, run_id, row, refresh_totals=False)
        write_consensus(db, run_id, [PanelVerdict(item, VoteOutcome(None, None, True), row,
                                                  "first-disagreement")])
    for item, label in humans.items():
        if item in verdicts:
            add_override(db, run_id, item, label, "", "ana")
    grid = vote_grid(db, run_id, CRITICS)
    whole = {pv.item_id: pv.verdicts for pv in load_panel_verdicts(db, run_id)}
    assert grid.items.tolist() == list(whole)
    assert grid.items.tolist()[:3] == ["aa-outside", "i0000", "zz-outside"]
    verdicts = {item: verdicts[item] for item in whole}
    expected = _arrays(verdicts)
    assert (grid.codes == ABSENT).tolist() == (expected["codes"] == ABSENT).tolist()  # type: ignore[operator]
    assert (grid.codes == FAILED).tolist() == (expected["codes"] == FAILED).tolist()  # type: ignore[operator]
    said = [[None if c < 0 else grid.values[c][0] for c in row] for row in grid.codes.tolist()]
    assert said == [[next((v.label for v in verdicts[i] if v.critic == c and v.ok), None)
                     for c in CRITICS] for i in verdicts]
    assert run_calibration(db, run_id) == calibrate(panel, whole, human_labels(db, run_id))
