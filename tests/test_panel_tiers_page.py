"""AppTest: the Panel page's tier editor edits `cascade.tiers` (name, critics, policy, strategy,
the policy's labels), adds and removes tiers, turns critics' tier numbers into named tiers, and
a cascade panel imported and saved unchanged keeps its hash."""

from __future__ import annotations

import pathlib

from streamlit.testing.v1 import AppTest

from judging.demo import demo_dataset_path
from judging.panel.panel_files import dump_panel, load_panel, panel_hash
from judging.panel.panel_model import Panel
from pages.ui.panel.panel_draft import DRAFT_KEY, key_prefix
from storage.db import open_db
from storage.panels import list_panels
from tests.fixtures_app import shown
from tests.test_app_smoke import no_exception, open_page

CASCADE_TEXT = demo_dataset_path().with_name("cascade_panel.yaml").read_text(encoding="utf-8")


def _import(text: str) -> AppTest:
    at = open_page("panel")
    at.file_uploader(key="panel_yaml_upload").upload("p.yaml", text.encode(),
                                                     "application/x-yaml").run()
    at.button(key="import_panel_yaml").click().run()
    no_exception(at)
    return at


def _tier_key(at: AppTest, index: int, field: str) -> str:
    return f"{key_prefix(at.session_state[DRAFT_KEY])}.cascade.tiers.{index}.{field}"


def _save(at: AppTest, path: pathlib.Path) -> Panel:
    at.button(key="save_panel").click().run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    newest = max(list_panels(open_db(path)), key=lambda p: p["created_at"])
    return load_panel(newest["yaml"])


def test_the_cascade_demo_imported_and_saved_keeps_its_hash(app_db: pathlib.Path) -> None:
    at = _import(CASCADE_TEXT)
    assert at.text_input(key=_tier_key(at, 0, "name")).value == "guardrails"
    assert at.multiselect(key=_tier_key(at, 2, "critics")).value == ["careful", "second",
                                                                     "flaky"]
    assert at.selectbox(key=_tier_key(at, 1, "policy")).value == "accept_on_all_pass"
    assert at.selectbox(key=_tier_key(at, 2, "strategy")).value == "weighted"
    assert at.multiselect(key=_tier_key(at, 0, "fail_labels")).value == ["REJECT"]
    assert panel_hash(_save(at, app_db)) == panel_hash(load_panel(CASCADE_TEXT))


def test_editing_a_tier_changes_only_that_tier(app_db: pathlib.Path) -> None:
    at = _import(CASCADE_TEXT)
    at.text_input(key=_tier_key(at, 1, "name")).set_value("gate").run()
    at.selectbox(key=_tier_key(at, 1, "strategy")).set_value("majority").run()
    at.selectbox(key=_tier_key(at, 0, "on_failure")).set_value("ignore").run()
    saved = _save(at, app_db)
    before = load_panel(CASCADE_TEXT).cascade.tiers
    tiers = saved.cascade.tiers
    assert (tiers[1].name, tiers[1].voting and tiers[1].voting.strategy) == ("gate", "majority")
    assert tiers[0].on_failure == "ignore"
    assert tiers[2] == before[2] and tiers[0].fail_labels == before[0].fail_labels


def test_a_policy_change_takes_the_labels_of_the_new_policy(app_db: pathlib.Path) -> None:
    at = _import(CASCADE_TEXT)
    at.selectbox(key=_tier_key(at, 0, "policy")).set_value("accept_on_all_pass").run()
    no_exception(at)
    # The fail labels went with the old policy; the pass labels start from the scale's (KEEP).
    at.multiselect(key=_tier_key(at, 0, "pass_labels")).set_value(["KEEP", "MERGE"]).run()
    tier = _save(at, app_db).cascade.tiers[0]
    assert (tier.policy, tier.fail_labels, tier.pass_labels) == (
        "accept_on_all_pass", [], ["KEEP", "MERGE"])


def test_a_bad_tier_shows_the_models_sentence_and_offers_no_save(app_db: pathlib.Path) -> None:
    at = _import(CASCADE_TEXT)
    at.selectbox(key=_tier_key(at, 2, "policy")).set_value("accept_on_all_pass").run()
    no_exception(at)
    errors = " ".join(shown(e.value) for e in at.error)
    assert "cascade.tiers[2].policy: the last tier must be final" in errors
    assert "save_panel" not in {b.key for b in at.button}


def test_add_and_remove_tiers(app_db: pathlib.Path) -> None:
    at = _import(CASCADE_TEXT)
    at.button(key=f"{key_prefix(at.session_state[DRAFT_KEY])}.cascade.tiers").click().run()
    no_exception(at)
    draft = at.session_state[DRAFT_KEY]
    # The new tier goes before the final one, empty until it is given critics.
    assert [t["policy"] for t in draft["cascade"]["tiers"]] == [
        "reject_on_any_fail", "accept_on_all_pass", "reject_on_any_fail", "final"]
    assert "needs at least 1 entry" in " ".join(e.value for e in at.error)
    at.multiselect(key=_tier_key(at, 1, "critics")).set_value([]).run()
    at.multiselect(key=_tier_key(at, 2, "critics")).set_value(["gate"]).run()
    at.button(key=_tier_key(at, 1, "remove")).click().run()
    no_exception(at)
    saved = _save(at, app_db)
    assert [(t.name, t.critics, t.policy) for t in saved.cascade.tiers] == [
        ("guardrails", ["not_a_product"], "reject_on_any_fail"), ("", ["gate"], "reject_on_any_fail"),
        ("panel", ["careful", "second", "flaky"], "final")]


def test_critics_tier_numbers_become_named_tiers(app_db: pathlib.Path) -> None:
    legacy = load_panel(CASCADE_TEXT)
    critics = [c.model_copy(update={"tier": 0 if c.name in ("not_a_product", "gate") else 1})
               for c in legacy.critics]
    text = dump_panel(legacy.model_copy(update={
        "critics": critics, "cascade": legacy.cascade.model_copy(update={"tiers": []})}))
    at = _import(text)
    at.button(key=f"{key_prefix(at.session_state[DRAFT_KEY])}.cascade.tiers").click().run()
    no_exception(at)
    saved = _save(at, app_db)
    assert [(t.critics, t.policy) for t in saved.cascade.tiers] == [
        (["not_a_product", "gate"], "accept_on_all_pass"), (["careful", "second", "flaky"], "final")]
    assert all(c.tier == 0 for c in saved.critics)
