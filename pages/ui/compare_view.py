"""The Compare page's parts: choosing the second run, and drawing a `RunComparison`.

Run A is the page's `?run=` (as on every page); run B is `?vs=`, chosen among the other runs
over the same dataset, so `/compare?run=3&vs=5` opens a comparison from a link.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from judging.demo import demo_panel_v2_path
from judging.panel.panel_files import load_panel
from judging.runs.background.jobs import prepare_run
from judging.runs.stored.compare_runs import (
    RunComparison,
    changes_text,
    check_comparable,
    difference_text,
    ledger_rows,
    p_value_text,
    share_text,
)
from pages.ui.demo import TAXONOMY, demo_dataset_ids
from pages.ui.error_notes import user_errors
from pages.ui.run_picker import RUN_PARAM, run_label
from pages.ui.state import db, db_path, registry, worker_key_lookup
from pages.ui.text_format import plain
from storage.results.runs import list_runs

VS_PARAM = "vs"
# Flipped items drawn in the table (in dataset order): beyond this the CLI lists them all.
FLIPPED_SHOWN = 5_000
_OTHER_KEY = "compare_run_b"
_LAST_A_KEY = "compare_last_a"


def review_url(run_id: int, item_id: str) -> str:
    """The Review page's deep link to one item of a run (`/review?run=3&item=TX-0006`)."""
    return "/review?" + urlencode({RUN_PARAM: run_id, "item": item_id})


def _query_vs() -> int | None:
    value = st.query_params.get(VS_PARAM)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _offer_demo_second_version(run: dict[str, Any]) -> None:
    """On the demo dataset: one click runs the demo panel's second version (one critic
    changed) over it, to have two versions to compare; the Run page shows its progress."""
    dataset_id = int(run["dataset_id"])
    if dataset_id not in demo_dataset_ids(db(), TAXONOMY):
        return
    if not st.button("Run the demo panel's second version", key="compare_demo_v2",
                     icon=":material/play_arrow:",
                     help="The demo panel with its lenient critic replaced by another "
                     "(judging/demo/demo_panel_v2.yaml), over the same items; the three "
                     "unchanged critics answer from the cache."):
        return
    with user_errors("The second version could not start"):
        new = prepare_run(db(), dataset_id=dataset_id, panel=load_panel(demo_panel_v2_path()),
                          name="Demo run, version 2")
        registry().start_run(str(db_path()), new, key_lookup=worker_key_lookup())
        st.switch_page("pages/run.py", query_params={RUN_PARAM: str(new)})


def pick_other_run(run: dict[str, Any]) -> int | None:
    """The run to compare `run` with: a selector over the other runs of its dataset, starting
    from `?vs=` (else the newest other run), kept in the URL.

    A `?vs=` naming a run that cannot be compared (another dataset, the same run, no such run)
    gets the sentence saying why, and the newest other run is shown instead.

    Returns:
        The other run's id, or None when the dataset has no other run (the page says what to do).
    """
    run_id = int(run["id"])
    others = [r for r in list_runs(db(), dataset_id=int(run["dataset_id"])) if r["id"] != run_id]
    by_id = {int(r["id"]): r for r in others}
    wanted = _query_vs()
    if st.session_state.get(_LAST_A_KEY) not in (None, run_id):
        wanted = None  # run A was just changed: the old B belongs to the old A
    st.session_state[_LAST_A_KEY] = run_id
    if wanted is not None and wanted not in by_id:
        with user_errors("Cannot compare those two runs"):
            check_comparable(db(), run_id, wanted)
    if not others:
        st.info(plain(
            f"Run #{run_id} is the only run over dataset {run['dataset_name']!r}. Run another "
            "panel version on it (another prompt, model, strategy or critic) and compare the "
            "two here."), icon=":material/info:")
        _offer_demo_second_version(run)
        st.page_link("pages/run.py", label="Start a run", icon=":material/play_arrow:")
        return None
    if wanted in by_id:
        st.session_state[_OTHER_KEY] = wanted
    elif st.session_state.get(_OTHER_KEY) not in by_id:
        st.session_state[_OTHER_KEY] = next(iter(by_id))  # newest first

    def follow_choice() -> None:
        st.query_params[VS_PARAM] = str(st.session_state[_OTHER_KEY])

    chosen = st.selectbox("Compare with", list(by_id), key=_OTHER_KEY, on_change=follow_choice,
                          format_func=lambda i: run_label(by_id[i]),
                          help="Runs over the same dataset; every difference reads this run "
                          "minus the first.")
    if _query_vs() != chosen:
        st.query_params[VS_PARAM] = str(chosen)
    return int(chosen)


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _heading(c: RunComparison) -> None:
    st.caption(plain(
        f"Dataset #{c.dataset_id} {c.dataset_name!r}: {_count(c.common, 'item')} decided by "
        f"both runs. {c.a.title}: {c.a.version} ({c.a.status}); {c.b.title}: {c.b.version} "
        f"({c.b.status})."))
    st.markdown(plain(changes_text(c)))
    if c.a.simulated or c.b.simulated:
        st.caption("Verdicts of " + (
            "both runs" if c.a.simulated and c.b.simulated
            else (c.a.title if c.a.simulated else c.b.title)) + " come from the **simulated** "
            "vendor.")
    if c.only_a or c.only_b:
        st.info(plain(
            f"{_count(c.only_a, 'item')} decided only by {c.a.title} and {c.only_b:,} only by "
            f"{c.b.title}: they are left out of every figure below."), icon=":material/info:")


def _flipped(c: RunComparison) -> None:
    st.subheader("Final decisions that flipped")
    n = len(c.flipped)
    st.caption(plain(
        f"{n:,} of {_count(c.common, 'item')} have another final label (the latest override, "
        "else the consensus) in the two runs. Open one in Review from its link."))
    if not n:
        return
    if n > FLIPPED_SHOWN:
        st.caption(f"The first {FLIPPED_SHOWN:,} in dataset order are listed here; `jurybox "
                   f"compare {c.a.id} {c.b.id} --flipped {n}` lists all {n:,}.")
    shown = c.flipped[:FLIPPED_SHOWN]
    a, b = c.a.title, c.b.title
    frame = pd.DataFrame([
        {"item": i.item_id, a: i.final_a or "(none)", b: i.final_b or "(none)",
         "reviewed on": " and ".join(t for t, done in ((a, i.reviewed_a), (b, i.reviewed_b))
                                     if done) or "-",
         "human": i.human or "-", "gold": i.gold or "-",
         f"review in {a}": review_url(c.a.id, i.item_id),
         f"review in {b}": review_url(c.b.id, i.item_id)}
        for i in shown
    ])
    st.dataframe(frame, hide_index=True, key=f"compare_flipped.{c.a.id}.{c.b.id}",
                 height=min(38 + 35 * len(shown), 420), column_config={
                     "item": st.column_config.TextColumn(),
                     f"review in {a}": st.column_config.LinkColumn(display_text="open"),
                     f"review in {b}": st.column_config.LinkColumn(display_text="open"),
                 })
    # The same links as buttons, for a keyboard (a table's link is a click on a canvas).
    pick, open_a, open_b = st.columns([2, 1, 1], vertical_alignment="bottom")
    item = pick.selectbox("Flipped item", [f.item_id for f in shown],
                          key=f"compare_open.{c.a.id}.{c.b.id}")
    open_a.link_button(f"Open in Review ({a})", review_url(c.a.id, str(item)),
                       icon=":material/rate_review:")
    open_b.link_button(f"Open in Review ({b})", review_url(c.b.id, str(item)),
                       icon=":material/rate_review:")


def _measures(c: RunComparison) -> None:
    st.subheader("Version against version")
    measures = c.measures()
    first = measures[0].result.difference
    st.caption(plain(
        f"Differences read {c.b.title} minus {c.a.title}, in percentage points, with a "
        f"{first.confidence:.0%} paired bootstrap interval (items resampled, "
        f"{first.resamples:,} resamples, seed {first.seed}); McNemar's exact test counts the "
        "items where only one run succeeds."))
    rows = []
    for m in measures:
        r = m.result
        rows.append({
            "measure": m.title, "items": r.n,
            c.a.title: share_text(r.accuracy_a), c.b.title: share_text(r.accuracy_b),
            "difference [interval]": difference_text(r),
            f"only in {c.a.title}": r.mcnemar.a_only if r.mcnemar else None,
            f"only in {c.b.title}": r.mcnemar.b_only if r.mcnemar else None,
            "McNemar exact": p_value_text(r),
        })
    frame = pd.DataFrame(rows)
    for title in (c.a.title, c.b.title):  # whole numbers, blank when undefined (not 1.0, NaN)
        frame[f"only in {title}"] = frame[f"only in {title}"].astype("Int64")
    help_text = ("Items right (for agreement: backed by every critic) in this run and not in the "
                 "other: the discordant items McNemar's test weighs.")
    st.dataframe(frame, hide_index=True, key=f"compare_measures.{c.a.id}.{c.b.id}",
                 column_config={f"only in {t}": st.column_config.NumberColumn(help=help_text)
                                for t in (c.a.title, c.b.title)})
    for m in measures:
        st.caption(plain(f"{m.title}: {m.reason or m.basis}"))


def _ledgers(c: RunComparison) -> None:
    st.subheader("Calls, tokens and cost")
    st.dataframe(
        pd.DataFrame([{"": title, c.a.title: va, c.b.title: vb}
                      for title, va, vb in ledger_rows(c.a.ledger, c.b.ledger)]),
        hide_index=True, key=f"compare_ledgers.{c.a.id}.{c.b.id}")
    st.caption("From each run's ledger: a call answered from the cache is not paid again.")


def render_comparison(c: RunComparison) -> None:
    """Draw the comparison: who is compared, the flipped items (with links to Review), the
    paired figures with what each used, and both ledgers."""
    _heading(c)
    _flipped(c)
    _measures(c)
    _ledgers(c)
