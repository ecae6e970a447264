"""AppTest: the Panel and Run pages with plug-in critics. A rule critic is edited, previewed and
tested like any critic; a python critic is listed but never imported: an uploaded panel naming
one is refused with a sentence, and a saved one (from the CLI) cannot be run from the app."""

from __future__ import annotations

import pathlib
import sys

from judging.panel.panel_files import dump_panel, panel_from_dict, panel_hash
from pages.ui.panel.panel_draft import DRAFT_KEY
from storage.db import open_db
from storage.panels import save_panel
from tests.fixtures_app import shown
from tests.test_app_smoke import all_text, no_exception, open_page

PROBE = "tests.plugin_probe"
RULE_PANEL = {
    "name": "guarded", "scale": {"kind": "yesno"},
    "critics": [
        {"name": "no_card", "kind": "rule", "rule": {"check": "no-regex", "field": "text",
                                                     "pattern": r"\d{4}-\d{4}"}},
        {"name": "model", "model": "sim-careful", "prompt_template": "Judge {text}", "tier": 1},
    ],
    "cascade": {"guard_tiers": [0], "reject_label": "no"},
}
PYTHON_PANEL = {
    "name": "with code", "scale": {"kind": "yesno"},
    "critics": [{"name": "probe", "kind": "python", "function": f"{PROBE}:check"},
                {"name": "model", "model": "sim-careful", "prompt_template": "Judge {text}"}],
}


def _upload(at, name: str, text: str):  # noqa: ANN001, ANN202 - AppTest has no public types
    at.file_uploader(key="panel_yaml_upload").upload(f"{name}.yaml", text.encode(),
                                                     "application/x-yaml").run()
    at.button(key="import_panel_yaml").click().run()
    no_exception(at)
    return at


def test_an_uploaded_python_critic_is_refused_and_nothing_is_imported(
        app_db: pathlib.Path) -> None:
    at = open_page("panel")
    before = dict(at.session_state[DRAFT_KEY])
    _upload(at, "code", dump_panel(panel_from_dict(PYTHON_PANEL)))
    errors = [shown(e.value) for e in at.error]
    assert any("code.yaml was not imported: critics[0].kind: 'probe' is a python critic: the "
               "web app never imports the code a python critic names" in e for e in errors), errors
    assert at.session_state[DRAFT_KEY]["name"] == before["name"]  # the draft is untouched
    assert PROBE not in sys.modules


def test_a_rule_critic_is_imported_previewed_and_tested_without_a_request(
        app_db: pathlib.Path) -> None:
    from storage.datasets.dataset_store import save_dataset
    from tests.fixtures_storage import make_parsed

    db = open_db(app_db)
    save_dataset(db, make_parsed(3), name="tiny")
    db.close()
    at = _upload(open_page("panel"), "guarded", dump_panel(panel_from_dict(RULE_PANEL)))
    assert not at.error, [e.value for e in at.error]
    draft = at.session_state[DRAFT_KEY]
    assert draft["critics"][0]["rule"]["check"] == "no-regex"
    titles = [shown(e.label) for e in at.expander]
    assert "no_card · rule critic" in titles, titles  # the editor's title: no vendor, no model
    text = shown(all_text(at))
    assert "no_card sends no request: it checks no-regex /\\d{4}-\\d{4}/ on text here" in text
    at.button(key="test_critic").click().run()
    no_exception(at)
    text = shown(all_text(at))
    assert "yes · rule check (no-regex)" in text and "does not match text" in text


def test_a_saved_python_panel_is_listed_but_not_run(app_db: pathlib.Path) -> None:
    from storage.datasets.dataset_store import save_dataset
    from tests.fixtures_storage import make_parsed

    panel = panel_from_dict(PYTHON_PANEL)  # saved by a CLI user: the library accepts it
    db = open_db(app_db)
    save_dataset(db, make_parsed(3), name="tiny")
    save_panel(db, panel_hash=panel_hash(panel), name=panel.name, yaml_text=dump_panel(panel))
    db.close()
    at = open_page("run")
    no_exception(at)
    assert any(panel_hash(panel)[:8] in str(o) or o == panel_hash(panel)
               for o in at.selectbox(key="new_run_panel").options)
    errors = [shown(e.value) for e in at.error]
    assert any("This run cannot start: critics[0].kind: 'probe' is a python critic" in e
               for e in errors), errors
    assert not [b for b in at.button if b.key == "start_run"]
    assert PROBE not in sys.modules
