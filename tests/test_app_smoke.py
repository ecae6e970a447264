"""AppTest: every page opens without an exception (empty database and with a finished run), and
the main interactions work through the real widgets."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from storage.db import open_db
from tests.fixtures_app import shown

APP = pathlib.Path(__file__).resolve().parent.parent / "app.py"
PAGES = ["home", "datasets", "panel", "run", "review", "agreement", "team", "compare", "export"]


def open_page(page: str, *, query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.switch_page(f"pages/{page}.py")
    return at.run()


def panel_key(at: AppTest, path: str) -> str:
    """The Panel page's widget key of a field path ("name", "scale.kind", "critics.1.name")."""
    from pages.ui.panel.panel_draft import DRAFT_KEY, widget_key

    return widget_key(at.session_state[DRAFT_KEY], path)


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


SAVE_NEXT = "Save and go to the next item"


def save_button(at: AppTest, label: str = SAVE_NEXT) -> Any:
    """Review's Save, found by its label: its key names the draft it saves (the item, the pass)."""
    (button,) = [b for b in at.button if b.label == label]
    return button


def all_text(at: AppTest) -> str:
    """Every piece of text the page shows (for "is it there / is it NOT there" checks)."""
    parts: list[str] = []
    for kind in ("title", "subheader", "markdown", "caption", "text", "info", "warning",
                 "error", "success", "code"):
        parts += [str(element.value) for element in getattr(at, kind)]
    for frame in at.dataframe:
        parts.append(frame.value.to_csv())
    return "\n".join(parts)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_on_an_empty_database(app_db: pathlib.Path, page: str) -> None:
    at = open_page(page)
    no_exception(at)
    assert at.title[0].value == ("Jurybox" if page == "home" else page.capitalize())
    # Drawn inside app.py's shell (see pages/ui/shell.py), not as a bare legacy page.
    assert "Database" in [c.value for c in at.sidebar.caption]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_with_a_finished_run(demo_db: tuple[pathlib.Path, int], page: str) -> None:
    _, run_id = demo_db
    at = open_page(page, query={"run": str(run_id)})
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    if page == "panel":  # a prompt that does not fit the sample dataset must not hide Save
        assert at.button(key="save_panel")


def test_home_shows_key_status_but_never_the_key(
    app_db: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DO-NOT-SHOW-1234567890")
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    at = open_page("home")
    no_exception(at)
    keys = at.dataframe[-1].value
    status = dict(zip(keys["key variable"], keys["status"]))
    assert status["OPENAI_API_KEY"] == "set"
    assert status["DEEPSEEK_API_KEY"] == "not set"
    assert "DO-NOT-SHOW" not in all_text(at)


def test_demo_click_starts_the_run_then_cancel_and_resume(app_db: pathlib.Path) -> None:
    from judging.runs.background.jobs import JobRegistry
    from pages.ui.state import registry
    from storage.results.runs import get_run

    at = open_page("home")
    at.button(key="try_demo").click().run()
    no_exception(at)
    assert at.title[0].value == "Run"  # landed on the run's progress
    run_id = int(at.query_params["run"])
    at.switch_page("pages/run.py")  # AppTest re-runs its own page, not the one switched to
    at.run()
    no_exception(at)
    assert at.get("progress"), "the live progress bar is drawn while the run works"
    at.button(key="cancel_run").click().run()
    no_exception(at)
    jobs: JobRegistry = registry()
    job = jobs.get(run_id)
    assert job is not None and job.wait(30)
    db = open_db(app_db)
    run = get_run(db, run_id)
    assert run["status"] == "cancelled" and run["simulated"]
    at.run()
    assert f"Run #{run_id} · cancelled" in all_text(at)
    at.button(key="resume_run").click().run()
    no_exception(at)
    job = jobs.get(run_id)
    assert job is not None and job.kind == "resume"
    job.cancel()
    job.wait(30)


def test_datasets_bad_upload_shows_the_error_and_writes_nothing(app_db: pathlib.Path) -> None:
    from storage.datasets.dataset_store import list_datasets

    at = open_page("datasets")
    at.file_uploader(key="dataset_upload").upload(
        "ragged.csv", b"id,text\n1,fine\n2,too,many,cells\n", "text/csv"
    ).run()
    no_exception(at)
    if not at.error:  # the preview may only see good rows: importing must refuse the file
        at.button(key="FormSubmitter:mapping-Import").click().run()
    assert at.error, "a ragged CSV must produce an error on the page"
    message = shown(at.error[0].value)
    assert "ragged.csv" in message and ("line 3" in message or "row" in message), message
    assert list_datasets(open_db(app_db)) == []


def test_datasets_good_upload_imports_with_the_chosen_mapping(app_db: pathlib.Path) -> None:
    from storage.datasets.dataset_store import list_datasets

    at = open_page("datasets")
    at.file_uploader(key="dataset_upload").upload(
        "reviews.csv", b"id,text,gold\nr1,great,yes\nr2,awful,no\n", "text/csv"
    ).run()
    no_exception(at)
    assert not at.error
    at.button(key="FormSubmitter:mapping-Import").click().run()
    no_exception(at)
    assert any("Imported 2 items" in s.value for s in at.success)
    (dataset,) = list_datasets(open_db(app_db))
    assert dataset["n_items"] == 2 and dataset["gold_column"] == "gold"
    assert dataset["fields"] == ["text"]


def test_panel_page_builds_and_saves_a_panel(app_db: pathlib.Path) -> None:
    from judging.panel.panel_files import load_panel
    from storage.panels import list_panels

    at = open_page("panel")
    no_exception(at)
    at.text_input(key=panel_key(at, "name")).set_value("two judges").run()
    at.button(key="add_critic").click().run()
    no_exception(at)
    at.button(key="save_panel").click().run()
    no_exception(at)
    (saved,) = list_panels(open_db(app_db))
    panel = load_panel(saved["yaml"])
    assert panel.name == "two judges"
    assert [c.name for c in panel.critics] == ["critic-1", "critic-2"]
    assert panel.scale.kind == "yesno"


def test_panel_page_shows_an_invalid_panel_as_a_sentence(app_db: pathlib.Path) -> None:
    at = open_page("panel")
    at.button(key="add_critic").click().run()
    # Two critics with one name: the panel check names the field.
    at.text_input(key=panel_key(at, "critics.1.name")).set_value("critic-1").run()
    no_exception(at)
    assert any("critics[1].name" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "save_panel"]


def test_panel_page_loads_the_demo_panel(app_db: pathlib.Path) -> None:
    at = open_page("panel")
    at.button(key="load_panel").click().run()
    no_exception(at)
    assert at.text_input(key=panel_key(at, "name")).value == "Taxonomy curation (demo)"
    assert at.selectbox(key=panel_key(at, "scale.kind")).value == "nominal"


def test_review_override_is_saved_and_moves_to_the_next_contested_item(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from storage.reviewing.overrides import override_history

    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    no_exception(at)
    first = at.query_params["item"]
    k = f"rv{run_id}."
    at.text_input(key=k + "reviewer").set_value("ana").run()
    at.radio(key=f"{k}label.{first}").set_value("SPLIT")
    at.text_area(key=f"{k}note.{first}").set_value("two kinds of product")
    at.text_area(key=f"{k}children.{first}").set_value("Trail shoes\nRoad shoes, Trail shoes")
    save_button(at).click().run()
    no_exception(at)
    (saved,) = override_history(open_db(path), run_id, first)
    assert (saved["label"], saved["note"], saved["reviewer"]) == ("SPLIT", "two kinds of product", "ana")
    assert saved["children"] == ["Trail shoes", "Road shoes"]  # the demo curates a taxonomy
    assert at.query_params["item"] != first
    # The history is shown when coming back to the item.
    at.session_state[f"{k}item"] = first
    at.run()
    assert "two kinds of product" in all_text(at)


def test_review_asks_for_the_reviewer_before_any_decision(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    k = f"rv{run_id}."
    for name in ("", "   "):  # blank is no name
        at.text_input(key=k + "reviewer").set_value(name).run()
        no_exception(at)
        assert any("Type your name" in i.value for i in at.info)
        assert all(b.label != SAVE_NEXT for b in at.button)
    assert open_db(path).execute("SELECT count(*) FROM overrides").fetchone()[0] == 0


def test_review_filters_narrow_the_table(demo_db: tuple[pathlib.Path, int]) -> None:
    _, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    k = f"rv{run_id}."
    contested = at.caption
    before = next(c.value for c in contested if "items match" in c.value)
    at.toggle(key=k + "disagree").set_value(False).run()
    after = next(c.value for c in at.caption if "items match" in c.value)
    assert after.startswith("300 items match"), after
    assert before != after


def test_agreement_follows_a_new_override(demo_db: tuple[pathlib.Path, int]) -> None:
    from storage.reviewing.overrides import add_override

    path, run_id = demo_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    assert "0 items reviewed by humans" in all_text(at)
    add_override(open_db(path), run_id, "TX-0001", "KEEP", "", "ana")
    at.run()
    no_exception(at)
    assert "1 item reviewed by humans" in all_text(at)


def test_export_offers_every_format_and_the_panel(demo_db: tuple[pathlib.Path, int]) -> None:
    _, run_id = demo_db
    at = open_page("export", query={"run": str(run_id)})
    no_exception(at)
    labels = [b.label for b in at.download_button]
    assert "Download CSV" in labels and "Download the panel YAML" in labels
    at.radio(key="export_format").set_value("parquet").run()
    assert "Download PARQUET" in [b.label for b in at.download_button]


def test_review_opens_the_items_two_critics_disagree_on(demo_db: tuple[pathlib.Path, int]) -> None:
    from storage.reviewing.review_queue import review_table

    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id), "critic_a": "careful",
                                    "critic_b": "lenient"})
    no_exception(at)
    assert any("careful" in i.value and "lenient" in i.value for i in at.info)
    frame, _ = review_table(open_db(path), run_id, limit=None)
    a, b = frame["careful"].astype(str), frame["lenient"].astype(str)
    valid = frame["careful"].notna() & frame["lenient"].notna()
    valid &= ~a.str.startswith("⚠") & ~b.str.startswith("⚠")  # a failure is no verdict
    expected = int((valid & (a != b)).sum())
    assert 0 < expected < 300
    assert any(c.value.startswith(f"{expected:,} items match") for c in at.caption)
    shown = at.dataframe[0].value
    assert len(shown) == min(expected, 50)
    assert (shown["careful"].astype(str) != shown["lenient"].astype(str)).all()


def test_panel_page_tests_one_critic_on_one_item_and_shows_the_raw_exchange(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    at = open_page("panel")
    at.button(key="load_panel").click().run()  # the demo panel, on the simulated vendor
    no_exception(at)
    prompt = " ".join(str(c.value) for c in at.code)
    assert "<item field=" in prompt, "the live preview renders the prompt on a sample item"
    at.button(key="test_critic").click().run()
    no_exception(at)
    shown = all_text(at)
    assert "simulated" in shown
    assert '"choices"' in shown, "the raw reply is shown as received"
    assert any('"messages"' in str(c.value) for c in at.code), "the raw request"


def test_review_accepts_the_consensus_of_the_filtered_items_after_confirmation(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from storage.reviewing.review_filter import ReviewFilter
    from storage.reviewing.review_queue import review_table

    path, run_id = demo_db
    k = f"rv{run_id}."
    at = open_page("review", query={"run": str(run_id)})
    at.selectbox(key=k + "consensus").set_value("KEEP").run()
    _, expected = review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True, consensus_label="KEEP"), limit=0)
    assert expected > 0
    at.text_input(key=k + "reviewer").set_value("lead")  # the one reviewer field of the page
    assert at.button(key=k + "bulk_go").disabled, "nothing happens before the confirmation"
    at.checkbox(key=k + "bulk_sure").check().run()
    at.button(key=k + "bulk_go").click().run()
    no_exception(at)
    rows = open_db(path).execute(
        "SELECT count(*), count(DISTINCT item_id), min(label), max(label), min(reviewer)"
        " FROM overrides WHERE run_id = ?", [run_id]).fetchone()
    assert rows == (expected, expected, "KEEP", "KEEP", "lead")

    # A MERGE consensus names no class to merge into: accepted in bulk, it would be recorded
    # as a decision nobody can act on (issue 23). It is skipped, and the page says so.
    at.selectbox(key=k + "consensus").set_value("MERGE").run()
    _, merges = review_table(open_db(path), run_id, ReviewFilter(disagreements_only=True, consensus_label="MERGE"), limit=0)
    at.checkbox(key=k + "bulk_sure").check().run()
    at.button(key=k + "bulk_go").click().run()
    no_exception(at)
    assert open_db(path).execute("SELECT count(*) FROM overrides WHERE run_id = ?",
                                 [run_id]).fetchone()[0] == expected
    flash = " ".join(s.value for s in at.success).replace("\\", "")
    assert f"Accepted the consensus for 0 items; skipped {merges:,}" in flash
    assert "has no class to merge into" in flash


def test_run_page_reruns_only_the_failed_calls(demo_db: tuple[pathlib.Path, int]) -> None:
    from pages.ui.state import registry
    from storage.results.runs import get_run

    path, run_id = demo_db
    db = open_db(path)
    before = get_run(db, run_id)
    assert before["failed_calls"] > 0
    at = open_page("run", query={"run": str(run_id)})
    at.button(key="rerun_failures").click().run()
    no_exception(at)
    job = registry().get(run_id)
    assert job is not None and job.kind == "rerun_failures"
    assert job.wait(60)
    progress = job.progress()
    assert progress.status == "done"
    # Every successful pair came from the stored results: no success was paid for twice.
    assert progress.cached == before["ok_calls"]
    assert get_run(db, run_id)["ok_calls"] >= before["ok_calls"]


def test_panel_page_imports_panel_yaml_and_refuses_a_literal_key(app_db: pathlib.Path) -> None:
    from judging.demo import demo_panel_path

    at = open_page("panel")
    text = demo_panel_path().read_bytes()
    at.file_uploader(key="panel_yaml_upload").upload("demo.yaml", text, "application/x-yaml").run()
    at.button(key="import_panel_yaml").click().run()
    no_exception(at)
    assert at.text_input(key=panel_key(at, "name")).value == "Taxonomy curation (demo)"

    leaked = text.replace(b"    vendor: simulated\n", b"    vendor: simulated\n    api_key: sk-abcdefghijklmnopqrstuvwxyz123456\n", 1)
    at.file_uploader(key="panel_yaml_upload").upload("leaky.yaml", leaked, "application/x-yaml").run()
    at.button(key="import_panel_yaml").click().run()
    no_exception(at)
    assert at.error and "leaky.yaml was not imported" in shown(at.error[0].value)
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in all_text(at)


def test_a_run_left_running_by_a_dead_process_shows_interrupted_and_resumes(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from pages.ui.state import registry
    from storage.results.runs import get_run

    path, run_id = demo_db
    # Another process marks the run running, then dies (it exits without finishing it).
    script = ("import sys; from storage.db import open_db; from storage.results.runs import set_run_status;"
              " set_run_status(open_db(sys.argv[1]), int(sys.argv[2]), 'running')")
    subprocess.run([sys.executable, "-c", script, str(path), str(run_id)], check=True,
                   cwd=APP.parent, timeout=60)
    db = open_db(path)
    assert get_run(db, run_id)["status"] == "running"
    at = open_page("run", query={"run": str(run_id)})
    no_exception(at)
    assert get_run(db, run_id)["status"] == "interrupted"
    assert f"Run #{run_id} · interrupted" in all_text(at)
    at.button(key="resume_run").click().run()
    no_exception(at)
    job = registry().get(run_id)
    assert job is not None and job.kind == "resume" and job.wait(60)
    assert get_run(db, run_id)["status"] == "done"


def test_datasets_page_deletes_an_unused_dataset_after_confirmation(app_db: pathlib.Path) -> None:
    from storage.datasets.dataset_store import list_datasets

    at = open_page("datasets")
    at.file_uploader(key="dataset_upload").upload(
        "two.csv", b"id,text\na,x\nb,y\n", "text/csv").run()
    at.button(key="FormSubmitter:mapping-Import").click().run()
    assert len(list_datasets(open_db(app_db))) == 1
    at.button(key="confirm_delete_ds").click().run()
    no_exception(at)
    assert list_datasets(open_db(app_db)) == []


def test_run_page_estimates_then_starts_a_run_of_a_saved_panel(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from pages.ui.state import registry
    from storage.results.runs import list_runs

    path, first = demo_db
    at = open_page("run")
    no_exception(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Verdicts"] == "1,200"  # 300 items x 4 critics
    assert metrics["Cost (est.)"].startswith("$"), "every demo critic has a price"
    assert int(metrics["Input tokens (est.)"].replace(",", "")) > 300 * 4 * 50
    at.button(key="start_run").click().run()
    no_exception(at)
    new = int(at.query_params["run"])
    assert new != first and next(r["id"] for r in list_runs(open_db(path))) == new
    job = registry().get(new)
    assert job is not None
    job.cancel()
    assert job.wait(60)


def test_run_page_counts_a_swap_run_in_verdicts_in_the_estimate_and_the_progress(
    app_db: pathlib.Path,
) -> None:
    """A pairwise panel asking both orders: the estimate said 360 calls and the progress line
    "x / 180": both now count verdicts and say so, the calls beside them."""
    from judging.demo import pairwise_dataset_path, pairwise_panel_path
    from judging.panel.panel_files import dump_panel, load_panel, panel_hash
    from pages.ui.run.progress import progress_text
    from pages.ui.state import registry
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.panels import save_panel

    db = open_db(app_db)
    save_dataset(db, read_dataset(pairwise_dataset_path(), id_column="id", gold_column="gold"),
                 name="pairs")
    panel = load_panel(pairwise_panel_path())  # 60 comparisons x 3 critics, swap: true
    version = panel_hash(panel)
    save_panel(db, panel_hash=version, name=panel.name, yaml_text=dump_panel(panel))
    at = open_page("run")
    at.selectbox(key="new_run_panel").set_value(version).run()
    no_exception(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Verdicts"] == "180"
    assert any("180 verdicts (360 calls, both orders)" in c.value for c in at.caption)
    at.button(key="start_run").click().run()
    job = registry().get(int(at.query_params["run"]))
    assert job is not None and job.wait(120)
    assert "180 / 180 verdicts" in progress_text(job.progress())


def test_run_page_shows_an_unknown_price_as_unknown_never_zero(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from judging import Critic, Panel, Scale
    from judging.panel.panel_files import dump_panel, panel_hash
    from storage.panels import save_panel

    path, _ = demo_db
    panel = Panel(name="unpriced", scale=Scale(kind="yesno"), critics=[
        Critic(name="gpt", vendor="openai", model="gpt-4o-mini",
               prompt_template="Keep {candidate_class}?"),
    ])
    version = panel_hash(panel)
    save_panel(open_db(path), panel_hash=version, name=panel.name, yaml_text=dump_panel(panel))
    at = open_page("run")
    at.selectbox(key="new_run_panel").set_value(version).run()
    no_exception(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Verdicts"] == "300"
    assert metrics["Cost (est.)"] == "unknown"
    assert any("gpt" in c.value and "no price" in c.value for c in at.caption)
    rows = at.dataframe[0].value
    assert list(rows["cost"]) == ["unknown (no price)"]


def test_run_page_on_an_empty_database_says_what_to_do(app_db: pathlib.Path) -> None:
    at = open_page("run")
    no_exception(at)
    hints = " ".join(i.value for i in at.info)
    assert "start one above" in hints and "Try the demo" in hints
    assert "All runs" not in [s.value for s in at.subheader]


def test_review_with_no_match_says_how_to_widen_the_filters(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    _, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    at.text_input(key=f"rv{run_id}.search").set_value("no-item-says-this-xyzzy").run()
    no_exception(at)
    assert any(c.value.startswith("0 items match") for c in at.caption)
    assert any("Disagreements only" in i.value for i in at.info)


def test_agreement_table_shows_only_references_that_have_figures(
    demo_db: tuple[pathlib.Path, int],
) -> None:
    from storage.reviewing.overrides import add_override

    path, run_id = demo_db
    at = open_page("agreement", query={"run": str(run_id)})
    no_exception(at)
    columns = list(at.dataframe[0].value.columns)
    assert "agreement with the consensus" in columns and "agreement with the gold labels" in columns
    assert "agreement with the humans" not in columns  # nobody has reviewed anything yet
    assert not any("None" in str(v) for v in at.dataframe[0].value.to_numpy().ravel())
    add_override(open_db(path), run_id, "TX-0001", "KEEP", "", "ana")
    at.run()
    assert "agreement with the humans" in list(at.dataframe[0].value.columns)


def test_review_rejudges_the_open_item_with_every_critic(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    item = at.query_params["item"]
    calls_of_item = (
        "SELECT critic, created_at FROM calls WHERE run_id = ? AND item_id = ? ORDER BY critic"
    )
    before = open_db(path).execute(calls_of_item, [run_id, item]).fetchall()
    at.button(key=f"rv{run_id}.rejudge.{item}").click().run()
    no_exception(at)
    after = open_db(path).execute(calls_of_item, [run_id, item]).fetchall()
    # Every critic answered again: the same critics, each verdict newer than before.
    assert [c for c, _ in after] == [c for c, _ in before]
    assert all(new > old for (_, new), (_, old) in zip(after, before, strict=True))
