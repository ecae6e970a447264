"""AppTest: the Panel page edits the whole panel model — load, edit, save, load again — and a
panel loaded and saved unchanged keeps its content hash."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from judging.demo import demo_panel_path, pairwise_panel_path
from judging.panel.panel_files import dump_panel, load_panel, panel_hash
from judging.panel.panel_model import Panel
from pages.ui.panel.model_form import field_paths
from pages.ui.panel.panel_draft import DRAFT_KEY, NOT_EDITABLE, widget_key
from storage.db import open_db
from storage.panels import list_panels
from tests.test_app_smoke import no_exception, open_page, panel_key

PROMPT = "Judge {text}"


def _rich_panels() -> dict[str, Panel]:
    """Panels that use every part of the model the first editor dropped or could not set."""
    return {
        "any-with-limits": Panel.model_validate({
            "name": "any critic flags",
            "scale": {"kind": "nominal", "labels": ["ok", "harmful", "unsure"],
                      "synonyms": {"bad": "harmful"}},
            "critics": [
                {"name": "a", "vendor": "openai", "model": "gpt-x", "prompt_template": PROMPT,
                 "api_key_env": "MY_OPENAI_KEY", "json_mode": False, "price_in_per_mtok": 0.5,
                 "extra": {"seed": 7, "top_p": 0.9}},
                {"name": "b", "vendor": "custom", "model": "local", "prompt_template": PROMPT,
                 "base_url": "http://127.0.0.1:9/v1", "temperature": 0.7, "weight": 2},
            ],
            "voting": {"strategy": "any", "target_label": "harmful", "tie_policy": "abstain",
                       "fallback": "unsure"},
            "limits": {"openai": {"max_concurrency": 8, "requests_per_minute": 500.0}},
        }),
        "scores-with-thresholds": Panel.model_validate({
            "name": "graded",
            "scale": {"kind": "score", "min": 0, "max": 10},
            "critics": [{"name": f"s{i}", "model": "sim-careful", "prompt_template": PROMPT}
                        for i in range(3)],
            "voting": {"strategy": "mean", "thresholds": {"pass": 7.0, "review": 4.0},
                       "max_spread": 3.0},
        }),
        "cascade": Panel.model_validate({
            "name": "two tiers",
            "scale": {"kind": "yesno"},
            "critics": [
                {"name": "cheap", "model": "sim-lenient", "prompt_template": PROMPT, "tier": 0},
                {"name": "cheap2", "model": "sim-careful", "prompt_template": PROMPT, "tier": 0},
                {"name": "expensive", "model": "sim-strict", "prompt_template": PROMPT,
                 "tier": 1},
            ],
            "voting": {"strategy": "weighted", "use_confidence": True, "priority": ["no"]},
            "cascade": {"settle": "agreement", "min_agreement": 0.75, "guard_tiers": [0],
                        "reject_label": "no", "final_vote": "last_tier"},
        }),
    }


CHAINS_PANEL = demo_panel_path().with_name("chains_panel.yaml")  # compound and repeated critics
PANEL_FILES = {"demo": demo_panel_path().read_text(encoding="utf-8"),
               "chains": CHAINS_PANEL.read_text(encoding="utf-8"),
               "pairwise": pairwise_panel_path().read_text(encoding="utf-8"),
               "rubric": CHAINS_PANEL.with_name("rubric_panel.yaml").read_text(encoding="utf-8"),
               } | {
    name: dump_panel(panel) for name, panel in _rich_panels().items()
}


def _import(at: AppTest, name: str, text: str) -> AppTest:
    at.file_uploader(key="panel_yaml_upload").upload(f"{name}.yaml", text.encode(),
                                                     "application/x-yaml").run()
    at.button(key="import_panel_yaml").click().run()
    no_exception(at)
    return at


def _saved_panel(path: pathlib.Path) -> Panel:
    newest = max(list_panels(open_db(path)), key=lambda p: p["created_at"])
    return load_panel(newest["yaml"])


def _key(at: AppTest, path: str) -> str:
    return widget_key(at.session_state[DRAFT_KEY], path)


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b))
                for d in _differences(a.get(k), b.get(k), f"{path}.{k}".lstrip("."))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}.{i}")]
    return [] if a == b else [path]


@pytest.mark.parametrize("name", list(PANEL_FILES))
def test_a_panel_imported_and_saved_unchanged_keeps_its_hash(app_db: pathlib.Path,
                                                             name: str) -> None:
    text = PANEL_FILES[name]
    at = _import(open_page("panel"), name, text)
    at.button(key="save_panel").click().run()
    no_exception(at)
    assert panel_hash(_saved_panel(app_db)) == panel_hash(load_panel(text))


def test_the_demo_loaded_from_the_menu_and_saved_keeps_its_hash(app_db: pathlib.Path) -> None:
    at = open_page("panel")
    at.button(key="load_panel").click().run()
    at.button(key="add_critic").click().run()  # an unrelated click must not undo the load
    critic = at.session_state[DRAFT_KEY]["critics"].pop()  # ...and is then taken back
    assert critic["name"] == "critic-5"
    at.run()
    at.button(key="save_panel").click().run()
    no_exception(at)
    assert panel_hash(_saved_panel(app_db)) == panel_hash(load_panel(demo_panel_path()))


EDITS = [  # (panel file, field path, widget kind, new value, expected stored value)
    ("demo", "name", "text_input", "renamed", "renamed"),
    ("demo", "voting.tie_policy", "selectbox", "abstain", "abstain"),
    ("demo", "critics.2.temperature", "number_input", 0.4, 0.4),
    ("any-with-limits", "voting.target_label", "text_input", "unsure", "unsure"),
    ("any-with-limits", "limits", "text_area", "openai: {max_concurrency: 2}",
     {"openai": {"max_concurrency": 2, "requests_per_minute": None}}),
    ("any-with-limits", "critics.0.extra", "text_area", "seed: 8", {"seed": 8}),
    ("scores-with-thresholds", "voting.max_spread", "number_input", 1.5, 1.5),
    ("cascade", "cascade.min_agreement", "number_input", 0.5, 0.5),
    ("cascade", "cascade.guard_tiers", "text_input", "0, 1", [0, 1]),
    ("chains", "critics.0.samples", "number_input", 5, 5),
    ("chains", "critics.1.kind", "selectbox", "self-verify", "self-verify"),
    ("chains", "critics.3.debaters", "multiselect", ["strict", "lenient"], ["strict", "lenient"]),
    ("chains", "critics.3.rounds", "number_input", 2, 2),
    ("pairwise", "pairwise.inconsistent", "selectbox", "flag", "flag"),
    ("pairwise", "pairwise.swap", "checkbox", False, False),
    ("rubric", "rubric.cannot_assess", "selectbox", "unmet", "unmet"),
    ("rubric", "rubric.criteria", "text_area",
     "- {id: answers, text: It answers., weight: 3}\n- {id: steps, text: Steps., weight: 1}",
     [{"id": "answers", "text": "It answers.", "weight": 3.0},
      {"id": "steps", "text": "Steps.", "weight": 1.0}]),
]


@pytest.mark.parametrize(("name", "path", "kind", "value", "stored"), EDITS,
                         ids=[f"{e[0]}:{e[1]}" for e in EDITS])
def test_changing_one_field_changes_only_that_field(app_db: pathlib.Path, name: str, path: str,
                                                    kind: str, value: Any, stored: Any) -> None:
    text = PANEL_FILES[name]
    at = _import(open_page("panel"), name, text)
    getattr(at, kind)(key=_key(at, path)).set_value(value).run()
    no_exception(at)
    at.button(key="save_panel").click().run()
    no_exception(at)
    before = load_panel(text).model_dump(mode="json")
    after = _saved_panel(app_db).model_dump(mode="json")
    assert _differences(before, after) == [path] or (
        isinstance(stored, (dict, list))
        and all(d.startswith(path) for d in _differences(before, after))
    )
    node: Any = after
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    assert node == stored


def test_load_edit_save_load_again(app_db: pathlib.Path) -> None:
    at = open_page("panel")
    at.button(key="load_panel").click().run()
    at.text_input(key=_key(at, "name")).set_value("curation v2").run()
    at.button(key="save_panel").click().run()
    saved = max(list_panels(open_db(app_db)), key=lambda p: p["created_at"])
    at.run()  # the menu of saved panels is drawn above the Save button: now it lists it
    at.selectbox(key="load_choice").set_value(saved["hash"]).run()
    at.button(key="load_panel").click().run()
    no_exception(at)
    assert at.text_input(key=_key(at, "name")).value == "curation v2"
    assert at.session_state[DRAFT_KEY]["voting"]["priority"] == ["REJECT", "SPLIT", "MERGE", "KEEP"]


def test_every_field_of_the_model_has_a_widget(app_db: pathlib.Path) -> None:
    at = _import(open_page("panel"), "cascade", PANEL_FILES["cascade"])
    draft = at.session_state[DRAFT_KEY]
    keys = {w.key for w in at.main if getattr(w, "key", None)} | {
        w.key for kind in ("text_input", "text_area", "number_input", "selectbox", "checkbox",
                           "multiselect") for w in getattr(at, kind) if w.key}
    missing = []
    for path in field_paths(Panel):
        if path in NOT_EDITABLE:
            continue
        if path == "critics":
            from judging.panel.critics import Critic

            for field in Critic.model_fields:
                if widget_key(draft, f"critics.0.{field}") not in keys:
                    missing.append(f"critics.0.{field}")
        elif widget_key(draft, path) not in keys:
            missing.append(path)
    assert not missing, f"fields of the panel model without a widget: {missing}"


def test_a_fresh_page_fits_the_dataset_and_add_critic_keeps_the_prompt(demo_db) -> None:
    at = open_page("panel")
    no_exception(at)
    assert not at.warning, [w.value for w in at.warning]  # the prompt fits the demo dataset
    draft = at.session_state[DRAFT_KEY]
    assert "{candidate_class}" in draft["critics"][0]["prompt_template"]
    at.text_area(key=_key(at, "critics.0.prompt_template")).set_value("Is {parent} right?").run()
    at.button(key="add_critic").click().run()
    no_exception(at)
    draft = at.session_state[DRAFT_KEY]
    assert [c["prompt_template"] for c in draft["critics"]] == ["Is {parent} right?"] * 2
    assert [c["name"] for c in draft["critics"]] == ["critic-1", "critic-2"]


def test_a_fresh_prompt_leaves_out_the_gold_and_gold_like_columns(app_db: pathlib.Path) -> None:
    """On the pairwise demo's data the starting prompt showed quality_a and quality_b, the
    true quality of each answer: it shows the responses, never the answer key."""
    from judging.demo import pairwise_dataset_path
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset

    save_dataset(open_db(app_db), read_dataset(pairwise_dataset_path(), id_column="id",
                                               gold_column="gold"), name="pairs")
    at = open_page("panel")
    no_exception(at)
    prompt = at.session_state[DRAFT_KEY]["critics"][0]["prompt_template"]
    for shown in ("question", "system_a", "answer_a", "system_b", "answer_b"):
        assert f"{{{shown}}}" in prompt
    for hidden in ("quality_a", "quality_b", "gold"):
        assert hidden not in prompt, prompt


def test_duplicate_critic(app_db: pathlib.Path) -> None:
    at = open_page("panel")
    at.button(key="load_panel").click().run()
    draft = at.session_state[DRAFT_KEY]
    duplicate = f"pf{draft['_gen']}.critics.c{draft['critics'][1]['_uid']}.duplicate"
    at.button(key=duplicate).click().run()
    no_exception(at)
    names = [c["name"] for c in at.session_state[DRAFT_KEY]["critics"]]
    assert names == ["careful", "lenient", "lenient copy", "strict", "flaky"]
    twin = at.session_state[DRAFT_KEY]["critics"][2]
    assert twin["model"] == "sim-lenient"


def test_a_panel_without_a_tie_priority_says_what_a_tie_does(app_db: pathlib.Path) -> None:
    at = open_page("panel")
    at.button(key="load_panel").click().run()
    at.text_area(key=_key(at, "voting.priority")).set_value("").run()
    no_exception(at)
    assert any("No tie priority is set" in i.value for i in at.info), [i.value for i in at.info]


def test_the_critic_editor_opens_the_basics_and_folds_the_rest(app_db: pathlib.Path) -> None:
    """About 27 fields per critic were all open, labelled by their names ("Timeout s", "Price
    in per mtok"): the basics stay open, the rest folds, every label is written for people."""
    from judging.panel.critics import Critic
    from pages.ui.panel.panel_editors import CRITIC_BASIC, CRITIC_TEXTS

    assert set(CRITIC_TEXTS) == set(Critic.model_fields)  # a new field needs its words too
    at = open_page("panel")
    no_exception(at)
    advanced = [e for e in at.expander if e.label == "Advanced settings"]
    assert len(advanced) == 1  # the one critic of a fresh panel
    kinds = ("text_input", "text_area", "number_input", "selectbox", "checkbox", "multiselect")
    folded = {w.key: w.label for kind in kinds for w in getattr(advanced[0], kind)}
    shown = {w.key: w.label for kind in kinds for w in getattr(at.main, kind)}
    for name in Critic.model_fields:
        key = panel_key(at, f"critics.0.{name}")
        assert key in shown, name
        assert (key in folded) == (name not in (*CRITIC_BASIC, "prompt_template")), name
        assert shown[key] == CRITIC_TEXTS[name][0], name
