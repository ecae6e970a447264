"""The app's shell and its own pages (Home, Datasets, Export) through AppTest: no private
Streamlit API, the server binds 127.0.0.1, data shown as text, the id column guessed, next steps
after an import, the existing demo run offered, and simulated critics on the user's data said
to be simulated."""

from __future__ import annotations

import ast
import pathlib
import re
import tomllib

import pytest
from streamlit.testing.v1 import AppTest

from pages.ui.text_format import plain
from storage.db import open_db
from tests.fixtures_app import ROOT, running_app, shown

APP = ROOT / "app.py"
HOSTILE = "[win](http://evil.test) ![img](http://evil.test/i.png) <b>x</b> www.evil.test"


def open_page(page: str, *, query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.switch_page(f"pages/{page}.py")
    return at.run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def markdown_bodies(at: AppTest) -> list[str]:
    """The markdown source of every element that renders markdown."""
    bodies: list[str] = []
    for kind in ("title", "subheader", "markdown", "caption", "info", "warning", "error",
                 "success"):
        bodies += [str(element.value) for element in getattr(at, kind)]
    return bodies


# -- no private Streamlit API (issue 8 part 5) -------------------------------------------------


def _ui_files() -> list[pathlib.Path]:
    return [APP, *sorted((ROOT / "pages").rglob("*.py"))]


@pytest.mark.parametrize("path", _ui_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_ui_uses_no_private_streamlit_api(path: pathlib.Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            assert not node.module.startswith(("streamlit.runtime", "streamlit.web")), node.module
        if isinstance(node, ast.Import):
            assert not [a.name for a in node.names if a.name.startswith("streamlit.runtime")]
        if isinstance(node, ast.Attribute):
            assert node.attr not in {"uses_pages_directory", "_main_script_path"}, node.attr
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in {"exec", "eval", "compile"}, f"{path}: {node.func.id}()"


@pytest.mark.parametrize("page", ["datasets", "review", "export"])
def test_a_page_opened_on_its_own_is_drawn_inside_the_app(app_db: pathlib.Path, page: str) -> None:
    # AppTest starts every run in Streamlit's legacy pages/ mode (as a server's first request
    # does): the page must still get the app's sidebar, once, and no legacy navigation.
    at = open_page(page)
    no_exception(at)
    assert [c.value for c in at.sidebar.caption].count("Database") == 1
    assert len(at.title) == 1


# -- the server binds 127.0.0.1 (issue 9 part 8) -----------------------------------------------


def test_config_binds_the_loopback_address() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1"


def _listening_addresses(port: int) -> set[str]:
    """The local addresses a TCP socket listens on at `port` (Linux /proc)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = pathlib.Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


@pytest.mark.skipif(not pathlib.Path("/proc/net/tcp").exists(), reason="needs Linux /proc")
def test_a_bare_streamlit_run_listens_on_loopback_only(tmp_path: pathlib.Path) -> None:
    with running_app(tmp_path / "bind.db", address_flag=False) as server:
        addresses = _listening_addresses(server["port"])
    assert addresses == {"0100007F"}, addresses  # 127.0.0.1, not 0.0.0.0 or ::


# -- data is text on Home, Datasets and Export (issue 9 part 6) --------------------------------


def test_plain_leaves_no_markdown_to_form() -> None:
    text = plain(HOSTILE)
    assert shown(text) == HOSTILE
    assert "](" not in text and "http://" not in text and "<b>" not in text
    assert "www." not in text


def test_hostile_file_and_column_names_are_shown_as_text(app_db: pathlib.Path) -> None:
    at = open_page("datasets")
    hostile_csv = f'id,"{HOSTILE}",gold\nr1,a,KEEP\nr2,b,KEEP,extra\n'.encode()
    at.file_uploader(key="dataset_upload").upload(f"{HOSTILE}.csv", hostile_csv, "text/csv").run()
    no_exception(at)
    if not at.error:
        at.button(key="FormSubmitter:mapping-Import").click().run()
    assert at.error, "the ragged file must be refused"
    assert HOSTILE in shown(at.error[0].value)
    for body in markdown_bodies(at):
        assert "](" not in body and "http://" not in body and "<b>" not in body, body


def test_a_hostile_dataset_name_stays_text_on_home_and_export(app_db: pathlib.Path) -> None:
    run_id = _own_data_run(app_db, dataset_name=HOSTILE)
    for page in ("home", "export"):
        at = open_page(page, query={"run": str(run_id)})
        no_exception(at)
        for body in markdown_bodies(at):
            assert "](" not in body and "http://" not in body and "<b>" not in body, (page, body)


# -- Datasets: the id column guessed, next steps after an import (issue 14 item 9) -------------


def test_an_id_column_named_review_id_is_guessed(app_db: pathlib.Path) -> None:
    at = open_page("datasets")
    at.file_uploader(key="dataset_upload").upload(
        "reviews.csv", b"text,review_id,stars\ngreat,R-1,5\nawful,R-2,1\nfine,R-3,3\n", "text/csv"
    ).run()
    no_exception(at)
    assert at.selectbox[0].label == "Item id column"
    assert at.selectbox[0].value == "review_id"


def test_after_an_import_the_page_points_to_panel_and_run(app_db: pathlib.Path) -> None:
    from storage.datasets.dataset_store import list_datasets

    at = open_page("datasets")
    at.file_uploader(key="dataset_upload").upload(
        "reviews.csv", b"id,text,gold\nr1,great,yes\nr2,awful,no\n", "text/csv").run()
    at.button(key="FormSubmitter:mapping-Import").click().run()
    no_exception(at)
    assert len(list_datasets(open_db(app_db))) == 1
    assert any("Imported 2 items as dataset #1" in s.value for s in at.success)
    links = [link.value for link in at.page_link]
    assert "Build a panel for it" in links and "Run a panel on it" in links
    # The uploader is empty again, so the form does not invite a second import.
    assert not [b for b in at.button if b.key == "FormSubmitter:mapping-Import"]
    at.run()  # the next steps stay until the next upload
    assert "Build a panel for it" in [link.value for link in at.page_link]


# -- Home: the existing demo run is offered (issue 14 item 12) ---------------------------------


def test_home_opens_the_existing_demo_run_instead_of_making_another(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from storage.results.runs import list_runs

    path, run_id = demo_db
    at = open_page("home")
    no_exception(at)
    assert not [b for b in at.button if b.key == "try_demo"]
    at.button(key="open_demo").click().run()
    no_exception(at)
    assert at.title[0].value == "Review"
    assert at.query_params["run"] == str(run_id)
    assert [r["id"] for r in list_runs(open_db(path))] == [run_id]


def test_home_can_still_start_a_new_demo_run(demo_db: tuple[pathlib.Path, int]) -> None:
    from pages.ui.state import registry
    from storage.results.runs import list_runs

    path, run_id = demo_db
    at = open_page("home")
    at.button(key="new_demo").click().run()
    no_exception(at)
    new_id = int(at.query_params["run"])
    assert new_id != run_id and len(list_runs(open_db(path))) == 2
    job = registry().get(new_id)
    if job is not None:
        job.cancel()
        assert job.wait(30)


# -- simulated critics on the user's data (issue 14 item 7) ------------------------------------


def _own_data_run(path: pathlib.Path, *, dataset_name: str = "my data") -> int:
    """A pending run of simulated critics over a dataset that is not the demo's."""
    from judging.runs.background.jobs import prepare_run
    from storage.datasets.dataset_store import save_dataset
    from tests.fixtures_storage import make_parsed, tiny_panel

    db = open_db(path)
    try:
        dataset_id = save_dataset(db, make_parsed(8), name=dataset_name).id
        return prepare_run(db, dataset_id=dataset_id, panel=tiny_panel())
    finally:
        db.close()


SIMULATED_SAYS = re.compile(r"simulated critics do not read the items")


@pytest.mark.parametrize("page", ["home", "export"])
def test_simulated_critics_on_own_data_are_called_simulated(
    app_db: pathlib.Path, page: str
) -> None:
    run_id = _own_data_run(app_db)
    at = open_page(page, query={"run": str(run_id)})
    no_exception(at)
    assert any(SIMULATED_SAYS.search(w.value) for w in at.warning), [w.value for w in at.warning]


@pytest.mark.parametrize("page", ["home", "export"])
def test_the_demo_run_needs_no_such_notice(demo_db: tuple[pathlib.Path, int], page: str) -> None:
    _, run_id = demo_db
    at = open_page(page, query={"run": str(run_id)})
    no_exception(at)
    assert not any(SIMULATED_SAYS.search(w.value) for w in at.warning)


def test_simulated_notice_names_only_the_simulated_critics(app_db: pathlib.Path) -> None:
    from judging.panel.critics import Critic
    from judging.runs.background.jobs import prepare_run
    from pages.ui.simulated import simulated_notice
    from storage.datasets.dataset_store import save_dataset
    from storage.results.runs import get_run
    from tests.fixtures_storage import make_parsed, tiny_panel

    db = open_db(app_db)
    panel = tiny_panel()
    real = Critic(name="gpt", vendor="openai", model="gpt-4o-mini",
                  prompt_template="Judge: {text}")
    panel = panel.model_copy(update={"critics": [*panel.critics[:1], real]})
    dataset_id = save_dataset(db, make_parsed(4), name="mixed").id
    run = get_run(db, prepare_run(db, dataset_id=dataset_id, panel=panel))
    notice = simulated_notice(db, run)
    assert notice is not None and notice.startswith("Critic critic_0 is simulated")


CHECK = {"name": "no_card", "kind": "rule",
         "rule": {"check": "no-regex", "field": "text", "pattern": r"\d{4}-\d{4}"}}
SIM_MODEL = {"name": "model", "model": "sim-careful", "prompt_template": "Judge {text}"}
REAL_MODEL = {"name": "gpt", "vendor": "openai", "model": "gpt-4o-mini",
              "prompt_template": "Judge {text}"}


def _checks_panel(*critics: dict[str, object]) -> object:
    from judging.panel.panel_files import panel_from_dict

    return panel_from_dict({"name": "checks", "scale": {"kind": "yesno"},
                            "critics": list(critics)})


def test_what_answers_each_critic_comes_from_the_panel() -> None:
    from judging.panel.vendors import PanelSources

    sources = PanelSources.of(_checks_panel(CHECK, SIM_MODEL, REAL_MODEL).critics)
    assert (sources.checks, sources.simulated, sources.vendors) == (
        ("no_card",), ("model",), {"openai": ("gpt",)})
    assert PanelSources.of(_checks_panel(CHECK).critics) == PanelSources(checks=("no_card",))


@pytest.mark.parametrize(("critics", "simulated"), [
    ((CHECK,), False), ((CHECK, SIM_MODEL), True), ((SIM_MODEL, REAL_MODEL), True),
    ((REAL_MODEL,), False)])
def test_a_run_is_simulated_when_a_critic_calls_the_simulator(
    app_db: pathlib.Path, critics: tuple[dict[str, object], ...], simulated: bool
) -> None:
    from judging.runs.background.jobs import prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.results.runs import get_run
    from tests.fixtures_storage import make_parsed

    db = open_db(app_db)
    dataset_id = save_dataset(db, make_parsed(2), name="mine").id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=_checks_panel(*critics))
    assert get_run(db, run_id)["simulated"] is simulated


def test_a_run_of_checks_is_called_checks_and_its_gold_figures_are_not_chance(
    app_db: pathlib.Path,
) -> None:
    """A rule critic keeps the default `vendor`; it never calls the simulator, so no page calls
    its run simulated or its agreement with the gold labels chance."""
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from tests.fixtures_storage import make_parsed

    db = open_db(app_db)
    dataset_id = save_dataset(db, make_parsed(6), name="mine").id
    run_id = prepare_run(db, dataset_id=dataset_id, panel=_checks_panel(CHECK))
    assert JobRegistry().start_run(str(app_db), run_id).wait(60)
    for page in ("home", "review", "agreement", "export"):
        at = open_page(page, query={"run": str(run_id)})
        no_exception(at)
        warnings = [shown(w.value) for w in at.warning]
        assert not any("simulated" in w or "chance" in w for w in warnings), (page, warnings)
        if page != "home":
            captions = [shown(c.value) for c in at.caption]
            assert any(c.startswith("Judged by **rule/python checks**, which call no model "
                                    "(no_card). No call left this machine") for c in captions), (
                page, captions)


def test_a_mixed_panel_says_each_source_and_calls_only_the_simulated_critic_chance(
    app_db: pathlib.Path,
) -> None:
    from judging.runs.background.jobs import prepare_run
    from pages.ui.simulated import simulated_notice, what_ran
    from storage.datasets.dataset_store import save_dataset
    from storage.results.runs import get_run
    from tests.fixtures_storage import make_parsed

    db = open_db(app_db)
    dataset_id = save_dataset(db, make_parsed(2), name="mine").id
    run = get_run(db, prepare_run(db, dataset_id=dataset_id,
                                  panel=_checks_panel(CHECK, SIM_MODEL, REAL_MODEL)))
    assert shown(what_ran(db, run) or "") == (
        "Judged by the **simulated** vendor (model); **rule/python checks**, which call no "
        "model (no_card); **OpenAI** (gpt).")
    notice = simulated_notice(db, run)
    assert notice is not None and notice.startswith("Critic model is simulated")
    checks_and_sim = get_run(db, prepare_run(db, dataset_id=dataset_id,
                                             panel=_checks_panel(CHECK, SIM_MODEL)))
    notice = simulated_notice(db, checks_and_sim)
    assert notice is not None and notice.startswith("Critic model is simulated")


# -- Export for curation (issue 14 item 10) ----------------------------------------------------


def test_export_options_add_the_curation_columns(demo_db: tuple[pathlib.Path, int]) -> None:
    _, run_id = demo_db
    at = open_page("export", query={"run": str(run_id)})
    at.toggle(key="export_preview").set_value(True).run()
    columns = list(at.dataframe[0].value.columns)
    assert "careful: failure" in columns and "careful: reasoning" not in columns
    for key in ("export_fields", "export_reasoning", "export_history"):
        at.checkbox(key=key).check()
    at.run()
    no_exception(at)
    columns = list(at.dataframe[0].value.columns)
    assert {"field: candidate_class", "field: parent", "careful: reasoning",
            "override_history"} <= set(columns)
    labels = [b.label for b in at.download_button]
    assert "Download the override history (JSONL)" in labels


def _escaped_said(at: AppTest) -> int | None:
    """The count of escaped cells the Export page states (0 for "No cell starts ..."), or None
    when it states none."""
    for caption in (shown(c.value) for c in at.caption):
        if caption.startswith("No cell starts with"):
            return 0
        said = re.match(r"This CSV puts a single quote before ([\d,]+) cells? ", caption)
        if said:
            return int(said.group(1).replace(",", ""))
    return None


def test_the_export_page_says_how_many_cells_a_spreadsheet_csv_changes(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from judging.runs.stored.stored_run import export_options
    from storage.results.export_files import escaped_cells, export_frame
    from storage.reviewing.overrides import add_override

    path, run_id = demo_db
    at = open_page("export", query={"run": str(run_id)})
    no_exception(at)
    before = _escaped_said(at)
    db = open_db(path)
    assert before == escaped_cells(export_frame(db, run_id, export_options(db, run_id)))
    # One note a spreadsheet would run, one whose second line starts with "-": one more cell.
    add_override(db, run_id, "TX-0001", "KEEP", "=1+1 is two", "ann")
    add_override(db, run_id, "TX-0002", "KEEP", "fine:\n- one\n- two", "ann")
    at.run()
    assert _escaped_said(at) == before + 1
    at.radio(key="export_csv_style").set_value("exact").run()
    no_exception(at)
    assert _escaped_said(at) is None
    assert any(shown(c.value).startswith("Every cell as the data says (RFC 4180)")
               for c in at.caption)
    at.radio(key="export_format").set_value("jsonl").run()
    assert not [r for r in at.radio if r.key == "export_csv_style"]


def test_agreement_and_review_say_simulated_critics_do_not_read_the_users_items(
    app_db: pathlib.Path,
) -> None:
    """Simulated critics on an uploaded CSV: the gold figures sit beside the warning."""
    from judging.demo import demo_panel_path
    from judging.panel.panel_files import load_panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset

    data = app_db.parent / "mine.csv"
    data.write_text("id,candidate_class,parent,description,example_members,existing_siblings,gold\n"
                    + "".join(f"m{i},thing {i},p,d,e,s,KEEP\n" for i in range(8)), encoding="utf-8")
    db = open_db(app_db)
    dataset = save_dataset(db, read_dataset(data, id_column="id", gold_column="gold"), name="mine")
    run_id = prepare_run(db, dataset_id=dataset.id, panel=load_panel(demo_panel_path()))
    assert JobRegistry().start_run(str(app_db), run_id).wait(60)
    for page in ("agreement", "review"):
        at = open_page(page, query={"run": str(run_id)})
        assert not at.exception, [e.value for e in at.exception]
        assert any("do not read the items" in shown(w.value) for w in at.warning), page
