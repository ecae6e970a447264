"""Logprob scores (issue 11 part 3): each label's probability at the answer token, the expected
score and its spread, from OpenAI-shaped replies (hand-made and from the simulator); vendors
without logprobs are refused when the panel is built."""

from __future__ import annotations

import json
import math

import pytest

from judging.engine.panel_runner import judge_many
from judging.errors import ConfigError
from judging.panel.panel_files import load_panel
from judging.scales import Scale
from judging.simulator.sim_server import Profile
from judging.voting.logprobs import label_probabilities, verdict_probabilities

LIKERT = Scale(kind="likert", min=1, max=5)
TAXONOMY = Scale(kind="nominal", labels=["KEEP", "REJECT", "SPLIT", "MERGE"])


def _reply(tokens: list[tuple[str, dict[str, float]]]) -> str:
    """A chat completion whose content is the tokens, each with its alternatives' probabilities."""
    content = [{"token": token, "logprob": math.log(alts.get(token, 1.0) or 1.0),
                "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alts.items()]}
               for token, alts in tokens]
    text = "".join(token for token, _ in tokens)
    return json.dumps({"choices": [{"message": {"content": text},
                                    "logprobs": {"content": content}}]})


def test_a_likert_score_gets_its_expected_value_and_spread():
    body = _reply([('{"score": ', {}), ("4", {"4": 0.6, "5": 0.3, "3": 0.1}),
                   (', "confidence": 0.8}', {})])
    probs = label_probabilities(body, LIKERT)
    assert probs.probs == pytest.approx({"3": 0.1, "4": 0.6, "5": 0.3})
    assert probs.expected == pytest.approx(4.2)  # 0.1*3 + 0.6*4 + 0.3*5
    assert probs.spread == pytest.approx(0.6)  # sqrt(0.1*1.44 + 0.6*0.04 + 0.3*0.64)
    assert probs.covered == pytest.approx(1.0)


def test_labels_split_across_tokens_match_by_their_start_and_are_renormalised():
    # The model writes "KEEP" as '"KE' + 'EP'; the alternatives are starts of labels, plus
    # one token that is no label at all (its mass is left out, then renormalised).
    body = _reply([('{"label":', {}), (' "KE', {' "KE': 0.5, ' "RE': 0.2, ' "SP': 0.1,
                                                   " maybe": 0.2}),
                   ('EP", "reasoning": "fine"}', {})])
    probs = label_probabilities(body, TAXONOMY)
    assert probs.probs == pytest.approx({"KEEP": 0.625, "REJECT": 0.25, "SPLIT": 0.125})
    assert probs.covered == pytest.approx(0.8)
    assert probs.expected is None  # unordered labels: no expected score


def test_the_answer_after_a_decoy_is_the_one_read():
    body = _reply([('<think>{"label": "', {}), ("MERGE", {"MERGE": 0.9, "KEEP": 0.1}),
                   ('"}</think>{"label": "', {}), ("SPLIT", {"SPLIT": 0.7, "MERGE": 0.3}),
                   ('"}', {})])
    assert label_probabilities(body, TAXONOMY).probs == pytest.approx({"SPLIT": 0.7, "MERGE": 0.3})


@pytest.mark.parametrize("body", [
    json.dumps({"choices": [{"message": {"content": '{"label": "KEEP"}'}, "logprobs": None}]}),
    "not json",
    None,
    _reply([('{"label": "', {}), ("perhaps", {"perhaps": 0.9, "unsure": 0.1}), ('"}', {})]),
    _reply([('{"verdict": "', {}), ("KEEP", {"KEEP": 1.0}), ('"}', {})]),
])
def test_replies_without_usable_logprobs_give_none_never_an_error(body):
    assert label_probabilities(body, TAXONOMY) is None


def test_vendors_without_logprobs_and_score_scales_are_refused_at_panel_time():
    base = ("schema_version: 1\nname: p\nscale: {kind: nominal, labels: [a, b]}\ncritics:\n"
            "  - {name: c, vendor: VENDOR, model: m, prompt_template: 'x {t}', logprobs: true}\n")
    with pytest.raises(ConfigError, match=r"critics\[0\]\.logprobs: Anthropic .* no token logprobs"):
        load_panel(base.replace("VENDOR", "anthropic"))
    with pytest.raises(ConfigError, match="Gemini"):
        load_panel(base.replace("VENDOR", "gemini"))
    assert load_panel(base.replace("VENDOR", "openai")).critics[0].logprobs
    score = base.replace("VENDOR", "openai").replace("{kind: nominal, labels: [a, b]}",
                                                     "{kind: score, min: 0, max: 1}")
    with pytest.raises(ConfigError, match="need labels"):
        load_panel(score)


def test_a_run_against_the_simulator_stores_replies_that_carry_the_probabilities(
    simulator_factory,
):
    from judging.panel.panel_model import Panel

    server = simulator_factory(profiles={"m": Profile(accuracy=0.8)}, gold=None)
    panel = Panel.model_validate({
        "scale": {"kind": "likert", "min": 1, "max": 5},
        "critics": [{"name": "c", "vendor": "custom", "base_url": server.base_url, "model": "m",
                     "prompt_template": "Rate {text}", "logprobs": True, "top_logprobs": 3}],
    })
    result = judge_many(panel, [{"id": f"i{n}", "text": f"answer {n}"} for n in range(8)])
    seen = 0
    for pv in result:
        verdict = pv.verdicts[0]
        assert verdict.raw_request["body"]["logprobs"] is True
        assert verdict.raw_request["body"]["top_logprobs"] == 3
        probs = verdict_probabilities(verdict, panel.scale)
        if probs is None:  # a reply shape without the label in plain JSON
            continue
        seen += 1
        assert len(probs.probs) == 3  # top_logprobs=3: the answer and two alternatives
        assert max(probs.probs, key=probs.probs.get) == verdict.label
        assert 1 <= probs.expected <= 5 and probs.spread >= 0
    assert seen >= 6


def test_review_cards_show_the_label_probabilities(app_db, tmp_path):
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db
    from tests.test_app_smoke import no_exception, open_page

    data = tmp_path / "d.csv"
    data.write_text("id,text\n" + "".join(f"i{n},text {n}\n" for n in range(6)), encoding="utf-8")
    db = open_db(app_db)
    dataset = save_dataset(db, read_dataset(data, id_column="id"), name="d")
    panel = load_panel(
        "schema_version: 1\nname: lp\nscale: {kind: nominal, labels: [KEEP, REJECT]}\ncritics:\n"
        + "".join(f"  - {{name: {m}, vendor: simulated, model: sim-{m}, logprobs: true,"
                  " prompt_template: 'Judge {text}'}\n" for m in ("careful", "strict")))
    run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
    assert JobRegistry().start_run(str(app_db), run_id).wait(60)
    at = open_page("review", query={"run": str(run_id)})
    at.toggle(key=f"rv{run_id}.disagree").set_value(False).run()
    no_exception(at)
    shown = [c.value for c in at.caption if c.value.startswith("Label probabilities")]
    assert shown and all("KEEP" in c or "REJECT" in c for c in shown)
