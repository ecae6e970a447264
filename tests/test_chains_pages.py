"""The pages of a run of compound and repeated critics (issue 11 parts 1 and 2), through the real
widgets: Agreement shows each repeated critic's stability next to the between-critic alpha and
links to the unstable items; Review filters them and shows each critic's chain of calls in order."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from judging.runs.stored.run_report import run_stability
from storage.db import open_db
from tests.fixtures_app import ROOT
from tests.test_app_smoke import all_text, no_exception, open_page


@pytest.fixture(scope="module")
def chains_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, int]:
    """One finished run of the compound-critics demo panel, copied by each test."""
    from judging.demo import demo_dataset_path
    from judging.panel.panel_files import load_panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.results.runs import get_run

    path = tmp_path_factory.mktemp("chains") / "template.db"
    db = open_db(path)
    try:
        parsed = read_dataset(demo_dataset_path(), id_column="id", gold_column="gold")
        dataset = save_dataset(db, parsed, name="Demo: taxonomy candidates")
        panel = load_panel(ROOT / "judging" / "demo" / "chains_panel.yaml")
        run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
        assert JobRegistry().start_run(str(path), run_id).wait(180)
        assert get_run(db, run_id)["status"] == "done", get_run(db, run_id)["error"]
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return path, run_id


@pytest.fixture
def chains_db(chains_template: tuple[pathlib.Path, int],
              app_db: pathlib.Path) -> tuple[pathlib.Path, int]:
    template, run_id = chains_template
    shutil.copyfile(template, app_db)
    return app_db, run_id


def test_agreement_shows_each_repeated_critics_stability_and_links_its_unstable_items(
    chains_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = chains_db
    figures = run_stability(open_db(path), run_id)
    assert [f.critic for f in figures] == ["careful"]  # the only critic asked three times
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert "Within each critic: stability over repeated samples" in all_text(at)
    table = next(f.value for f in at.dataframe if "flip rate" in f.value.columns)
    careful = table[table["critic"] == "careful"].iloc[0]
    assert careful["flip rate"] == pytest.approx(figures[0].flip_rate)
    assert careful["items"] == figures[0].items
    between = table[table["critic"] == "(between critics)"].iloc[0]
    assert between["alpha with itself"] is not None
    link = next(p for p in at.get("page_link") if "unstable items" in p.proto.label)
    assert f"Review the {len(figures[0].unstable):,} unstable items" == link.proto.label


def test_review_filters_the_unstable_items_and_shows_each_critics_chain_in_order(
    chains_db: tuple[pathlib.Path, int],
) -> None:
    path, run_id = chains_db
    unstable = run_stability(open_db(path), run_id)[0].unstable
    at = open_page("review", query={"run": str(run_id), "unstable": "1"})
    no_exception(at)
    assert at.toggle(key=f"rv{run_id}.unstable").value is True
    at.toggle(key=f"rv{run_id}.disagree").set_value(False).run()
    assert f"{len(unstable):,} items match" in all_text(at)
    chains = [e.label for e in at.expander if e.label.startswith("How ")]
    assert "How careful decided: 3 calls over 3 samples" in chains
    assert "How strict decided: 2 calls" in chains
    assert "How lenient decided: 2 calls" in chains
    assert "How referee decided: 3 calls" in chains
    # A card says how many calls its verdict took, not only their summed attempts.
    assert any("3 calls" in c.value for c in at.caption)
    referee = next(e for e in at.expander if e.label == "How referee decided: 3 calls")
    steps = [m.value for m in referee.markdown]
    assert [s.split("**")[1] for s in steps] == [
        "round 1 · A · careful", "round 1 · B · strict", "judge"]
