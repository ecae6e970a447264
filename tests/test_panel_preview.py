"""The Panel page's preview shows the requests a critic really sends (issue 23, defect 6).

Before, a rubric panel's preview showed one instruction asking for a "score" while the run
asked for a mark per criterion; a pairwise critic's second request (the responses swapped) and
a compound critic's chain were not shown either. The oracle here is the run's own call path
over real HTTP: the critic judges the item through `CallRunner.call` against the simulated
vendor on 127.0.0.1, and each call's stored request body (`raw_request["body"]`) is what was
sent. The page (AppTest, the draft holding the panel) must show exactly those messages, in
order: every request for a rubric and a pairwise critic; a compound critic's first request
(its later ones quote the earlier answers, which a preview cannot know).
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from judging.demo import demo_dataset_path, demo_panel_path, pairwise_dataset_path
from judging.engine.calls import CallRunner
from judging.engine.chains import judge_with
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.verdicts import Item
from pages.ui.panel.panel_draft import DRAFT_KEY, draft_from_panel, key_prefix
from storage.datasets.dataset_store import load_items, save_dataset
from storage.datasets.importing import read_dataset
from storage.db import open_db
from tests.test_app_smoke import no_exception, open_page

DEMO = demo_panel_path().parent
ROLES = ("system", "user", "assistant")


@pytest.fixture
def datasets(app_db: pathlib.Path) -> Iterator[dict[str, int]]:
    """The taxonomy demo's and the pairwise demo's datasets, in the app's database."""
    db = open_db(app_db)
    ids = {}
    for name, path in (("taxonomy", demo_dataset_path()), ("answers", pairwise_dataset_path())):
        ids[name] = save_dataset(db, read_dataset(path, id_column="id", gold_column="gold"),
                                 name=name).id
    yield ids
    db.close()


@pytest.fixture(scope="module")
def runner() -> Iterator[CallRunner]:
    calls = CallRunner()  # no cache: every request really goes to the simulator
    yield calls
    calls.close()


def sent(runner: CallRunner, panel: Panel, critic: str, item: Item) -> list[list[dict[str, str]]]:
    """The messages of every request `critic` sends for `item`, as the run sends them."""
    critics = {c.name: c for c in panel.critics}
    verdict = judge_with(critics[critic], item, panel.scale, runner.call, critics=critics,
                         pairwise=panel.pairwise, rubric=panel.rubric)
    calls = [c for c in verdict.calls if c.sample == 0]  # repeats resend the first request
    assert all(c.raw_request for c in calls), [c.message for c in calls]
    return [c.raw_request["body"]["messages"] for c in calls]


def preview(panel: Panel, critic: str) -> tuple[AppTest, list[dict[str, str]]]:
    """The Panel page with `panel` in its editor and `critic` picked in the preview: the
    messages it shows (role and text, in order)."""
    at = AppTest.from_file(str(pathlib.Path(__file__).parent.parent / "app.py"),
                           default_timeout=60)
    draft = draft_from_panel(panel)
    at.session_state[DRAFT_KEY] = draft
    at.switch_page("pages/panel.py")
    at.run()
    no_exception(at)
    names = [c.name for c in panel.critics]
    at.selectbox(key=f"{key_prefix(draft)}.preview.critic").set_value(names.index(critic)).run()
    no_exception(at)
    roles = [c.value for c in at.main.caption if c.value in ROLES]
    texts = [c.value for c in at.main.code]
    assert len(roles) == len(texts), (roles, texts)
    return at, [{"role": r, "content": t} for r, t in zip(roles, texts, strict=True)]


def _first_item(app_db: pathlib.Path, dataset_id: int) -> Item:
    return load_items(open_db(app_db), dataset_id, limit=1)[0]


@pytest.mark.parametrize("per_criterion", [False, True])
def test_a_rubric_critics_preview_is_what_it_sends(
    app_db: pathlib.Path, datasets: dict[str, int], runner: CallRunner, per_criterion: bool,
) -> None:
    panel = load_panel(DEMO / "rubric_panel.yaml")
    panel = panel.model_copy(update={"rubric": panel.rubric.model_copy(
        update={"per_criterion": per_criterion})})
    requests = sent(runner, panel, "strict", _first_item(app_db, datasets["answers"]))
    assert len(requests) == (len(panel.rubric.criteria) if per_criterion else 1)
    at, shown = preview(panel, "strict")
    assert shown == [m for request in requests for m in request]
    # The instruction a rubric critic gets names the criteria, never a lone score.
    assert all(c.id in "\n".join(m["content"] for m in shown) for c in panel.rubric.criteria)


def test_a_pairwise_critics_preview_shows_both_orders(
    app_db: pathlib.Path, datasets: dict[str, int], runner: CallRunner,
) -> None:
    panel = load_panel(DEMO / "pairwise_panel.yaml")
    critic = panel.critics[0].name
    requests = sent(runner, panel, critic, _first_item(app_db, datasets["answers"]))
    assert len(requests) == 2  # A first, then B first
    at, shown = preview(panel, critic)
    assert shown == [m for request in requests for m in request]
    markdown = [m.value for m in at.markdown]
    assert any("Request 2" in m and "B first" in m for m in markdown), markdown


@pytest.mark.parametrize("critic", ["careful", "strict", "lenient", "referee"])
def test_a_compound_critics_preview_starts_with_its_first_request(
    app_db: pathlib.Path, datasets: dict[str, int], runner: CallRunner, critic: str,
) -> None:
    panel = load_panel(DEMO / "chains_panel.yaml")  # repeats, reason-then-judge, verify, debate
    requests = sent(runner, panel, critic, _first_item(app_db, datasets["taxonomy"]))
    at, shown = preview(panel, critic)
    first = len(requests[0])
    assert shown[:first] == requests[0]
    # As many requests as the run makes (a chain's later ones quote a stand-in answer).
    assert len([c for c in at.caption if c.value in ROLES]) == sum(len(r) for r in requests)


def test_the_demo_panels_preview_is_unchanged(
    app_db: pathlib.Path, datasets: dict[str, int], runner: CallRunner,
) -> None:
    panel = load_panel(demo_panel_path())
    requests = sent(runner, panel, "careful", _first_item(app_db, datasets["taxonomy"]))
    _, shown = preview(panel, "careful")
    assert shown == requests[0]


def test_the_preview_selectors_follow_an_imported_panel(
    app_db: pathlib.Path, datasets: dict[str, int],
) -> None:
    at = open_page("panel")
    no_exception(at)
    at.selectbox(key="load_choice").set_value("demo").run()
    at.button(key="load_panel").click().run()
    no_exception(at)
    demo = at.session_state[DRAFT_KEY]
    before = f"{key_prefix(demo)}.preview"
    assert at.selectbox(key=f"{before}.dataset").value == datasets["taxonomy"]
    at.selectbox(key=f"{before}.critic").set_value(len(demo["critics"]) - 1).run()
    # A panel over the answers dataset, imported while the editor holds the taxonomy demo.
    text = (DEMO / "pairwise_panel.yaml").read_text(encoding="utf-8")
    at.file_uploader(key="panel_yaml_upload").upload("pairwise.yaml", text.encode(),
                                                     "application/x-yaml").run()
    at.button(key="import_panel_yaml").click().run()
    no_exception(at)
    draft = at.session_state[DRAFT_KEY]
    prefix = f"{key_prefix(draft)}.preview"
    assert at.selectbox(key=f"{prefix}.dataset").value == datasets["answers"]
    critic = at.selectbox(key=f"{prefix}.critic")
    assert critic.options == [c["name"] for c in draft["critics"]]
    assert not [w.value for w in at.warning if "does not fit" in w.value]
