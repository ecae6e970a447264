"""A finished run whose every string is hostile: markdown links, images, HTML tags and bare
URLs pointing at http://evil.test in the dataset's name, column names, item ids, gold labels,
the panel's name, scale labels and critic names, the critics' reasons (the simulator writes
"The item fits <label> best."), overrides' labels, notes and reviewers.

Data is text (issue 9 part 6): a page that renders any of it as markdown or HTML shows a link,
loads an image from evil.test, or runs a script.
"""

from __future__ import annotations

import csv
import io
import pathlib
import shutil

import pytest

EVIL = "http://evil.test"
LINK = f"[Your session expired]({EVIL}/login)"
IMAGE = f"![pic]({EVIL}/img.png)"
TAG = f'<img src="{EVIL}/tag.png" onerror="alert(1)">'
BARE = f"www.evil.test {EVIL}/bare"
# Labels go through the simulator's "exactly one of: a, b, c" line: no commas in them.
LABELS = [f"[KEEP]({EVIL}/keep)", f"![REJECT]({EVIL}/reject.png)", "<b>SPLIT</b>",
          "www.evil.test/merge"]
CRITICS = [
    (f"[critic A]({EVIL}/a)", "sim-careful"),
    (f"![B]({EVIL}/b.png)", "sim-lenient"),
    (f"<i>C</i><img src={EVIL}/c.png>", "sim-strict"),
    ("www.evil.test/d", "sim-flaky"),  # fails now and then: failure messages too
]
ITEM_IDS = [LINK, IMAGE, TAG, BARE, *(f"[item {n}]({EVIL}/{n})" for n in range(20))]
URL_ITEM = "[Your session expired](http://evil)"  # the item= of issue 9, not in the data
NOTE = f"[see this]({EVIL}/note) <img src={EVIL}/note.png> **urgent**"
REVIEWER = f"[admin]({EVIL}/reviewer)"


def make_hostile_db(path: pathlib.Path) -> int:
    """Fill `path` with the hostile dataset, panel, a FINISHED run (on the simulated vendor)
    and two overrides. Returns the run id."""
    from judging.panel.panel_files import dump_panel, panel_hash
    from judging.panel.panel_model import Panel
    from judging.runs.background.jobs import JobRegistry, prepare_run
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.importing import read_dataset
    from storage.db import open_db
    from storage.panels import save_panel
    from storage.results.runs import get_run
    from storage.reviewing.overrides import add_override
    from storage.reviewing.review_queue import review_table

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["id", "text", LINK, IMAGE, TAG, "gold"])
    for n, item_id in enumerate(ITEM_IDS):
        writer.writerow([item_id, f"item {n}: {LINK} {BARE}", IMAGE, TAG, BARE,
                         LABELS[n % len(LABELS)]])
    data = path.with_suffix(".csv")
    data.write_text(buffer.getvalue(), encoding="utf-8")
    db = open_db(path)
    try:
        dataset = save_dataset(db, read_dataset(data, id_column="id", gold_column="gold"),
                               name=f"{LINK} {TAG}")
        # No tie priority: tie notes must say how the tie went without calling it cautious.
        panel = Panel.model_validate({
            "name": f"{IMAGE} panel",
            "scale": {"kind": "nominal", "labels": LABELS},
            "voting": {"strategy": "plurality", "tie_policy": "pessimistic"},
            "critics": [{"name": name, "vendor": "simulated", "model": model,
                         "prompt_template": "Judge this: {text}"} for name, model in CRITICS],
        })
        save_panel(db, panel_hash=panel_hash(panel), name=panel.name, yaml_text=dump_panel(panel))
        run_id = prepare_run(db, dataset_id=dataset.id, panel=panel)
        assert JobRegistry().start_run(str(path), run_id).wait(120), "hostile run not finished"
        assert get_run(db, run_id)["status"] == "done", get_run(db, run_id)["error"]
        frame, _ = review_table(db, run_id, sort="item", limit=None)
        assert frame["tie"].any(), "the hostile run needs a tied vote"
        for n, item_id in enumerate(frame["item_id"][:2]):
            add_override(db, run_id, str(item_id), LABELS[n], NOTE, REVIEWER)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return run_id


@pytest.fixture(scope="session")
def hostile_db_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, int]:
    """One hostile run per test session, copied by `hostile_db`."""
    path = tmp_path_factory.mktemp("hostile") / "template.db"
    return path, make_hostile_db(path)


@pytest.fixture
def hostile_db(
    hostile_db_template: tuple[pathlib.Path, int], app_db: pathlib.Path
) -> tuple[pathlib.Path, int]:
    """`app_db` holding a private copy of the hostile run. Returns (path, run id)."""
    template, run_id = hostile_db_template
    shutil.copyfile(template, app_db)
    return app_db, run_id
