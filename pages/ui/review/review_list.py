"""The Review list: the table's columns and cells as drawn (widths, rounded scores, words for
no answer), and walking the list as filtered (next, previous, the next free item: the team's
shared queue when a reviewer is named)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from pages.ui.review.review_filter_bar import Filters
from pages.ui.state import db
from storage.reviewing.leases import claim_next

PAGE_SIZES = [25, 50, 100, 200]


# Column widths in pixels. With four critics the whole table fits the main column of a
# 1,400 px wide window (about 940 px beside the sidebar): at natural widths the per-item alpha,
# failed and overridden columns were cut off at the right.
_LONG_TEXT, _LONG_WIDTH = 14, 110


def _fit(header: str, values: Any) -> int | None:
    """The width of a column of labels: Streamlit's own fit to the text (None) while every text
    is short, else a fixed width, so a long critic name or label does not push the figures out
    of view (its cells clip; the item's panel shows it whole)."""
    longest = max([len(header), *(len(str(v)) for v in values if v is not None)])
    return None if longest <= _LONG_TEXT else _LONG_WIDTH


def _preview_width(critics: int) -> int:
    """The item column's width beside `critics` critic columns (see `table_columns`)."""
    return min(400, 96 + _LONG_WIDTH * max(0, 4 - critics))


# What a blind first pass may show of a row: nothing the critics said, nor what it led to.
BLIND_COLUMNS = ("item_id", "preview", "overridden")


NO_CONSENSUS = "(none)"  # the vote abstained, or no critic answered: words, not "None"
NO_ANSWER = "—"  # this critic has not answered (yet)


def shown_value(value: Any) -> Any:
    """A label or score as a table cell: a score rounded to 3 decimals ("0.333", not
    "0.3333333333333333"; a rubric's final score is stored as text), other values as they are."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, str) and "." in value:
        try:
            number = float(value)
        except ValueError:
            return value
        return f"{round(number, 3):g}"
    return value


def table_frame(frame: Any, shown: list[str]) -> Any:
    """The page of `frame` as drawn: the `shown` columns, scores rounded, and words where a
    cell would read "None" (no consensus, a critic that has not answered)."""
    view = frame[shown].copy()
    critic_cols = set(frame.attrs.get("critic_columns", {}).values())
    for column in shown:
        if column in ("consensus", "final_label"):
            # pd.isna: pandas reads a missing label as NaN, not None.
            view[column] = [NO_CONSENSUS if pd.isna(v) else shown_value(v) for v in view[column]]
        elif column in critic_cols:
            view[column] = [NO_ANSWER if pd.isna(v) else shown_value(v) for v in view[column]]
    return view


def table_columns(frame: Any, *, blind: bool = False) -> tuple[list[str], dict[str, Any]]:
    """The review table's columns in the order shown, and their Streamlit column config.

    The item id (pinned) and the item's text come first (at the far right the text was cut off
    on a laptop screen), then what sums up the row — consensus, tie flag, final label,
    agreement, per-item alpha, failed, overridden — and last one column per critic: a panel of
    any size, or critics with long names, scroll the critics' columns, never the figures out
    of view.

    Args:
        frame: a page of `storage.reviewing.review_queue.review_table` (its `attrs["critic_columns"]` names
            the critics' columns).
        blind: a blind first pass: only the item and whether it was overridden.
    """
    critic_cols = list(frame.attrs.get("critic_columns", {}).values())
    shown = ["item_id", "preview", "consensus", "tie", "final_label", "agreement",
             "item_alpha", "failed", "overridden", *critic_cols]
    if blind:
        shown = list(BLIND_COLUMNS)
    config: dict[str, Any] = {
        "item_id": st.column_config.TextColumn(
            "item id", pinned=True, width=_fit("item id", frame["item_id"])),
        # As wide as a 1,400 px window leaves: 96 px beside four critics (the fit measured in
        # tests/test_browser_review.py), and the room of each critic fewer (a 2-critic panel
        # cut the item to a word for nothing). Its cells clip; the panel below shows it whole.
        "preview": st.column_config.TextColumn(
            "item", width=400 if blind else _preview_width(len(critic_cols)),
            help="The item's fields; the panel below the table shows it whole"),
        "consensus": st.column_config.TextColumn(
            "consensus", width=_fit("consensus", frame["consensus"]),
            help=f"The panel's vote; {NO_CONSENSUS}: it abstained, or no critic answered"),
        "tie": st.column_config.CheckboxColumn(
            "tie", width=44, help="The critics' vote was tied: the panel's tie rule chose the "
            "consensus (the item's note below the table says how)"),
        "final_label": st.column_config.TextColumn(
            "final label", width=_fit("final label", frame["final_label"]),
            help="The latest override, else the consensus"),
        "agreement": st.column_config.ProgressColumn(
            "agreement", min_value=0.0, max_value=1.0, format="%.2f", width=76,
            help="Share of the critics' votes that went to the consensus"),
        "item_alpha": st.column_config.NumberColumn(
            "alpha", format="%.2f", width=56,
            help="How much the critics agree on this item beyond what chance would give, "
            "chance judged from the whole dataset: 1 is full agreement, 0 no better than "
            "chance, below 0 worse than chance"),
        "failed": st.column_config.NumberColumn(
            "failed", width=56, help="Critics without a verdict"),
        "overridden": st.column_config.CheckboxColumn(
            "overridden", width=80, help="A reviewer recorded a decision for this item"),
    }
    for column in critic_cols:
        config[column] = st.column_config.TextColumn(column, width=_fit(column, frame[column]))
    shown = [c for c in shown if c in frame.columns]
    return shown, {c: config[c] for c in shown if c in config}


# How far a walk looks past decided items before it gives up (a page of 200 rows at a time).
_WALK_ROWS, _WALK_LIMIT = 200, 5_000


def _walk(run_id: int, start: int, filters: Filters, skip: str, *,
          undecided: bool = False) -> str | None:
    """The first item from row `start` on of the list as filtered now that is not `skip` and,
    with `undecided`, never overridden (no reviewer named: no leases, nobody to share with)."""
    # A few rows first (the next item is almost always among them: reading 200 rows with
    # their critics' cells made a save a tenth of a second slower), then whole pages.
    offset, rows_wanted = start, 4
    while offset < start + _WALK_LIMIT:
        frame, _ = filters.table(run_id, limit=rows_wanted, offset=offset)
        offset, rows_wanted = offset + rows_wanted, _WALK_ROWS
        if frame.empty:
            return None
        for item, overridden in zip(frame["item_id"], frame["overridden"]):
            if str(item) != skip and not (undecided and overridden):
                return str(item)
    return None


def next_item(run_id: int, item_id: str, filters: Filters, reviewer: str = "",
              *, undecided: bool = False) -> str | None:
    """The item after `item_id` in the review table as filtered and sorted now, or None at the
    end of the list (or when the list is empty).

    "Next" walks what the user sees: with a Consensus = SPLIT filter on, it stays on SPLIT items.

    With a reviewer named, the item is claimed from the team's shared queue in one write
    (`storage.reviewing.leases.claim_next`): it is leased to them before anyone else can be handed it,
    items another reviewer holds are passed over and, with `undecided` (a save, Skip), so are
    the items anyone has decided. Without one (nobody to share with), an item the filters
    leave out is followed by the list's first item.
    """
    if reviewer:
        return claim_next(db(), run_id, reviewer, filters.where, sort=filters.sort,
                          after=item_id, undecided=undecided)
    position = filters.position(run_id, item_id)
    start = 0 if position is None else position + 1
    return _walk(run_id, start, filters, item_id, undecided=undecided)


def previous_item(run_id: int, item_id: str, filters: Filters) -> str | None:
    """The item before `item_id` in the list as filtered now (None on the first item, or when
    the filters leave it out). Going back is to look again: whoever holds it is shown there."""
    position = filters.position(run_id, item_id)
    if not position:
        return None
    frame, _ = filters.table(run_id, limit=1, offset=position - 1)
    return str(frame["item_id"].iloc[0]) if len(frame) else None
