"""AppTest: the Review table's cells read as words and rounded figures (issue 23, minor defects
"'None' for no consensus" and "unrounded rubric scores"): a vote that abstained reads "(none)",
and a rubric run's scores (the panel's and each critic's) show at most three decimals, not
0.6666666666666666. Real runs in a real SQLite file, judged by the simulator on 127.0.0.1."""

from __future__ import annotations

import pathlib

from storage.db import open_db
from tests.test_app_smoke import no_exception, open_page
from tests.test_rubric_pages import rubric_db, rubric_template  # noqa: F401 (fixtures)


def _decimals(value: object) -> int:
    text = repr(value) if isinstance(value, float) else str(value)
    try:
        float(text)
    except ValueError:
        return 0  # a label, not a figure
    return len(text.partition(".")[2].rstrip("0"))


def test_a_rubric_runs_scores_are_rounded_in_the_table(
        rubric_db: tuple[pathlib.Path, int]) -> None:  # noqa: F811
    path, run_id = rubric_db
    db = open_db(path)
    # The stored scores do have long decimals (thirds of a weight): the table must round them.
    stored = [row[0] for row in db.execute(
        "SELECT consensus FROM consensus WHERE run_id = ?", [run_id]).fetchall()]
    db.close()
    assert any(_decimals(v) > 3 for v in stored)

    at = open_page("review", query={"run": str(run_id)})
    at.toggle(key=f"rv{run_id}.disagree").set_value(False).run()
    no_exception(at)
    table = at.dataframe[0].value
    # Agreement and alpha are drawn by their column's "%.2f" format; the labels and scores are
    # text the page writes itself.
    figures = [c for c in table.columns if c not in ("item_id", "preview", "agreement",
                                                     "item_alpha")]
    long = {c: v for c in figures for v in table[c] if _decimals(v) > 3}
    assert not long, long


def test_a_vote_that_abstained_reads_none_in_words(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    db = open_db(path)
    # An abstained vote is stored without a consensus (majority with no majority, no fallback).
    (item,) = db.execute("SELECT item_id FROM consensus WHERE run_id = ? AND disagreement"
                         " ORDER BY position LIMIT 1", [run_id]).fetchone()
    with db.conn:
        db.execute("UPDATE consensus SET consensus = NULL WHERE run_id = ? AND item_id = ?",
                   [run_id, item])
    db.close()

    at = open_page("review", query={"run": str(run_id), "item": item})
    no_exception(at)
    row = at.dataframe[0].value.set_index("item_id").loc[item]
    assert (row["consensus"], row["final_label"]) == ("(none)", "(none)")
    cells = at.dataframe[0].value.astype(str).to_numpy().ravel()
    assert "None" not in cells
    assert any(t.value.startswith("consensus (none)") for t in at.text), [t.value for t in at.text]


def test_the_alpha_column_is_explained_in_words(demo_db: tuple[pathlib.Path, int]) -> None:
    path, run_id = demo_db
    at = open_page("review", query={"run": str(run_id)})
    no_exception(at)
    # The column settings travel with the table as JSON: what the header's tooltip says.
    config = at.dataframe[0].proto.columns
    assert "beyond what chance would give" in config
    assert "D_o" not in config and "D_e" not in config
