"""Review page parts: the filter bar, one item in detail, the override form.

Filters are plain widgets whose values become `storage.review_queue.review_table` arguments; the
storage layer binds every value as a parameter, so nothing typed here reaches SQL text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from judging.analysis.stability import tolerance
from judging.panel.pairwise import PairwiseConfig
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.final_decisions import decision_rule
from judging.scales import Scale
from judging.verdicts import FailureKind, TierVerdict, Verdict
from pages.ui.cards import raw_exchange, verdict_card
from pages.ui.state import db
from pages.ui.text_format import plain
from storage.assignments import assigned_count
from storage.decisions import DecisionRule
from storage.leases import held_by_others
from storage.review_filter import ANY_FAILURE, ReviewFilter
from storage.review_queue import NO_FILTER, item_position, review_labels, review_table

ANY = "(any)"
PAGE_SIZES = [25, 50, 100, 200]
SORT_LABELS = {
    "contested": "most contested first",
    "agreement": "lowest agreement first",
    "alpha": "lowest per-item alpha first",
    "failures": "most failures first",
    "item": "file order",
    "recent_override": "recently overridden first",
    "label_next": "label next (audit sample)",
}
# Query parameters the Agreement page sets to open a set of items here.
PAIR_PARAMS = ("critic_a", "critic_b")
TIES_PARAM = "ties"  # "1": only the items whose vote was tied
UNSTABLE_PARAM = "unstable"  # "1": only the items where a repeated critic changed its answer


@dataclass
class Filters:
    """The review table's query as the widgets set it: which items (`where`), in what order
    (`sort`), and how the final label reads (`rule`, the panel's decision rule)."""

    where: ReviewFilter = NO_FILTER
    sort: str = "contested"
    rule: DecisionRule | None = None
    pair: tuple[str, str] | None = None  # critics whose disagreements were opened from Agreement

    def table(self, run_id: int, *, limit: int | None, offset: int = 0
              ) -> tuple[pd.DataFrame, int]:
        """One page of the list as filtered and sorted now, and how many items match."""
        return review_table(db(), run_id, self.where, sort=self.sort, rule=self.rule,
                            limit=limit, offset=offset)

    def position(self, run_id: int, item_id: str) -> int | None:
        """Where `item_id` sits in the list (0 = first), None when the filters leave it out."""
        return item_position(db(), run_id, item_id, self.where, sort=self.sort)


@st.cache_data(max_entries=32, show_spinner=False)
def _labels(path: str, run_id: int, ok_calls: int, failed_calls: int) -> dict[str, Any]:
    del path, ok_calls, failed_calls  # part of the cache key only
    return review_labels(db(), run_id)


def filter_labels(run: dict[str, Any], path: str) -> dict[str, Any]:
    """The values the filters offer (`storage.review_queue.review_labels`), cached per run state.

    Why a cache: finding every distinct label scans all of a run's calls (about 0.5 s at
    300,000 calls), on every rerun of the page; the answer only changes when calls are written,
    so the counts of stored successes and failures are part of the key (a re-run failure
    that now succeeds changes both).

    Args:
        run: the run, as `storage.runs.list_runs` gives it.
        path: the database file (runs of two databases never share an entry).
    """
    ok, failed = int(run.get("ok_calls") or 0), int(run.get("failed_calls") or 0)
    return _labels(path, int(run["id"]), ok, failed)


def run_panel(panel_yaml: str) -> Panel:
    """The panel snapshot a run was made with."""
    return load_panel(panel_yaml)


# Filter widgets (key suffix -> the value a list opened from a link starts from). A link that
# opens a list (tied votes, unstable items, two critics' disagreements) sets every one of them,
# so the list shown is the list the link counted: "Disagreements only" left on turned "Review
# the 21 unstable items" into 3.
_FILTER_DEFAULTS: dict[str, Any] = {
    "disagree": True, "ties": False, "unstable": False, "consensus": ANY, "critic": ANY,
    "critic_value": ANY, "failures": ANY, "overridden": ANY, "use_alpha": False,
    "alpha": (-1.0, 1.0), "search": "", "disputed": ANY, "needs": False,
}
# What a blind first pass may filter and sort by: nothing that follows from what the critics
# said (their labels, the consensus, agreement, alpha, ties, failures, their reasons).
# "Label next" (the audit queue, `pages.ui.audit_view`) orders by the audit's strata and draw,
# never by a label: an audit sample is reviewed blind, so its queue must be offered here.
BLIND_SORTS = ("item", "recent_override", "label_next")


def _sort_label(sort: str) -> str:
    return SORT_LABELS[sort]


def _link_params(params: Any, critics: list[str]) -> tuple[str, ...]:
    """The list a link opened this page on, as a signature ("" parts when absent)."""
    pair = tuple(str(params.get(p) or "") for p in PAIR_PARAMS)
    if not all(pair) or not all(p in critics for p in pair):
        pair = ("", "")
    return (str(params.get(TIES_PARAM) or ""), str(params.get(UNSTABLE_PARAM) or ""), *pair)


def _open_linked_list(k: str, link: tuple[str, ...]) -> None:
    """Set every filter widget as the link's list wants it, once per link followed."""
    # Streamlit forgets the state of a widget not drawn in a run (the filters a blind pass
    # hides): each starts again from its default, never from Streamlit's own (toggle off).
    for name, value in _FILTER_DEFAULTS.items():
        st.session_state.setdefault(k + name, value)
    seen_key = k + "link_seen"
    if st.session_state.get(seen_key) == link:
        return
    st.session_state[seen_key] = link
    if not any(link):
        return
    for name, value in _FILTER_DEFAULTS.items():
        st.session_state[k + name] = value
    ties, unstable, *_pair = link
    st.session_state[k + "disagree"] = False  # the link counted every item of its list
    st.session_state[k + "ties"] = ties == "1"
    st.session_state[k + "unstable"] = unstable == "1"


def filter_bar(run_id: int, labels: dict[str, Any], critics: list[str],
               panel: Panel | None = None, *, blind: bool = False) -> Filters:
    """Draw the filters; returns the `review_table` keyword arguments they stand for.

    Args:
        run_id: the run (widget keys include it, so switching runs resets the filters).
        labels: `storage.review_queue.review_labels(...)`: consensus labels, labels per critic,
            failure kinds seen.
        critics: the run's critic names in panel order.
        panel: the run's panel: a panel with repeated critics gets an "Unstable items only"
            switch.
        blind: a blind first pass: only the filters that tell nothing of what the critics
            said (whether an item was overridden, words of the item itself, file order). The
            others are not drawn at all, and their values are ignored: "Consensus = MERGE:
            32 items match" would reveal each hidden consensus.
    """
    k = f"rv{run_id}."
    filters = Filters()
    params = st.query_params
    _open_linked_list(k, _link_params(params, critics))
    if blind:
        return _blind_filter_bar(k)
    pair = tuple(params.get(p) for p in PAIR_PARAMS)
    if all(pair) and pair[0] in critics and pair[1] in critics:
        filters.pair = (str(pair[0]), str(pair[1]))
        cols = st.columns([4, 1], vertical_alignment="center")
        cols[0].info(
            f"Showing the items where **{plain(filters.pair[0])}** and "
            f"**{plain(filters.pair[1])}** gave "
            "different verdicts (opened from the Agreement heatmap).",
            icon=":material/filter_alt:",
        )
        if cols[1].button("Show all items", key=k + "clear_pair"):
            for p in PAIR_PARAMS:
                del st.query_params[p]
            st.rerun()

    row = st.columns([1.2, 1, 1, 1, 1])
    # "Needs a decision" lists every item whose final decision cannot be acted on, contested
    # or not: "Disagreements only" is set aside (and shown so) while it is on.
    needs = bool(st.session_state.get(k + "needs"))
    disagreements = row[0].toggle(
        "Disagreements only", key=k + "disagree", disabled=needs,
        help="Set aside while Needs a decision is on" if needs else None,
    ) and not needs
    row[0].toggle("Needs a decision", key=k + "needs",
                  help="Items whose final decision cannot be acted on: no consensus (the vote "
                  "abstained), a split without its new child classes, a merge without the "
                  "class to merge into. The critics never name those: decide them here.")
    ties = row[0].toggle("Tied votes only", key=k + "ties",
                         help="Items whose critics' vote was tied: the panel's tie rule chose "
                         "the consensus (or abstained)")
    # Mirrored in the URL, so a shared link opens the same list.
    if ties and params.get(TIES_PARAM) != "1":
        st.query_params[TIES_PARAM] = "1"
    elif not ties and TIES_PARAM in params:
        del st.query_params[TIES_PARAM]
    repeated = panel is not None and any(c.samples > 1 for c in panel.critics)
    unstable = False
    if repeated:
        unstable = row[0].toggle(
            "Unstable items only", key=k + "unstable",
            help="Items where a critic asked several times (samples) did not always give the "
            "same answer: a disagreement inside one critic, not between critics",
        )
        if unstable and params.get(UNSTABLE_PARAM) != "1":
            st.query_params[UNSTABLE_PARAM] = "1"
        elif not unstable and UNSTABLE_PARAM in params:
            del st.query_params[UNSTABLE_PARAM]
    consensus = row[1].selectbox("Consensus", [ANY, *labels["consensus"]], key=k + "consensus")
    critic = row[2].selectbox("Critic", [ANY, *critics], key=k + "critic")
    critic_values = labels["critics"].get(critic, []) if critic != ANY else []
    if st.session_state.get(k + "critic_value") not in (ANY, *critic_values):
        st.session_state[k + "critic_value"] = ANY  # a value of the critic picked before
    critic_value = row[3].selectbox(
        "That critic's verdict", [ANY, *critic_values], key=k + "critic_value",
        disabled=critic == ANY,
        help="Pick a critic first: then only the items where it gave this verdict (or this "
        "failure)",
    )
    failure_options = [ANY, "any failure", *labels["failures"]]
    failures = row[4].selectbox("Failures", failure_options, key=k + "failures")

    row2 = st.columns([1, 1.3, 2, 1.2])
    overridden = row2[0].selectbox(
        "Overridden", [ANY, "not yet", "overridden"], key=k + "overridden"
    )
    use_alpha = row2[1].toggle("Filter per-item alpha", key=k + "use_alpha")
    alpha = row2[1].slider(
        "Per-item alpha", -1.0, 1.0, step=0.05, key=k + "alpha",
        disabled=not use_alpha, label_visibility="collapsed",
    )
    search = row2[2].text_input(
        "Search items and reasons", key=k + "search", placeholder="words in the item or a reason"
    )
    sort = str(row2[3].selectbox(
        "Sort", list(SORT_LABELS), format_func=_sort_label, key=k + "sort"
    ))

    disputed: str | None = None
    if panel is not None and panel.rubric.active:
        disputed = row2[0].selectbox(
            "Criterion in dispute", [ANY, "any criterion", *panel.rubric.ids],
            key=k + "disputed", help="Items whose critics gave different marks on a criterion")

    kwargs: dict[str, Any] = {"disagreements_only": disagreements}
    rule = None
    if panel is not None:  # how the table's final label reads (`storage.decisions`)
        rule = decision_rule(panel)
        if needs:
            kwargs["needs_decision"] = rule
    if disputed not in (None, ANY):
        kwargs["disputed"] = True if disputed == "any criterion" else disputed
    if ties:
        kwargs["ties_only"] = True
    if unstable and panel is not None:
        kwargs["unstable"] = tolerance(panel.scale)
    if consensus != ANY:
        kwargs["consensus_label"] = consensus
    if critic != ANY and critic_value != ANY:
        kwargs["critic_label"] = (critic, critic_value)
    if failures == "any failure":
        kwargs["failures"] = ANY_FAILURE
    elif failures != ANY:
        kwargs["failures"] = failures
    if overridden != ANY:
        kwargs["overridden"] = overridden == "overridden"
    if use_alpha:
        kwargs["alpha_range"] = alpha
    if search.strip():
        kwargs["search"] = search.strip()
    if filters.pair is not None:
        kwargs["critic_pair"] = filters.pair  # filtered in SQL, like every other filter
    filters.where, filters.sort, filters.rule = ReviewFilter(**kwargs), sort, rule
    # The URL as the switches above just mirrored it is not a link followed: next run, it
    # must not reset the filters the user set.
    st.session_state[k + "link_seen"] = _link_params(st.query_params, critics)
    return filters


def _blind_filter_bar(k: str) -> Filters:
    """The filters of a blind first pass (see `filter_bar`): every item of the run, or those
    not overridden yet, words of the items themselves (not the critics' reasons), file order."""
    st.caption("Blind first pass: the filters and sorts that follow from what the critics said "
               "(consensus, their verdicts, disagreements, ties, alpha, failures, their "
               "reasons) are off until you switch it off.")
    row = st.columns([1, 2, 1.2])
    overridden = row[0].selectbox(
        "Overridden", [ANY, "not yet", "overridden"], key=k + "overridden")
    search = row[1].text_input("Search items", key=k + "blind_search",
                               placeholder="words in the item")
    if st.session_state.get(k + "blind_sort") not in BLIND_SORTS:
        st.session_state[k + "blind_sort"] = BLIND_SORTS[0]
    sort = str(row[2].selectbox("Sort", list(BLIND_SORTS), format_func=_sort_label,
                                key=k + "blind_sort"))
    kwargs: dict[str, Any] = {"disagreements_only": False}
    if overridden != ANY:
        kwargs["overridden"] = overridden == "overridden"
    if search.strip():
        kwargs["search"] = search.strip()
        kwargs["search_reasons"] = False
    return Filters(where=ReviewFilter(**kwargs), sort=sort)


def count_of(n: int, singular: str, plural: str | None = None) -> str:
    """"1 item", "2 items", "1,200 items" ("1 item matches" / "3 items match" with `plural`)."""
    if plural is None:
        plural = singular + "s"
    return f"{n:,} {singular if n == 1 else plural}"


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


def blind_toggle(run_id: int) -> bool:
    """The "Blind first pass" switch of this run (session state, mirrored in the URL as
    `blind=1` so a lead can send reviewers a link that opens in blind mode)."""
    key = f"rv{run_id}.blind"
    if key not in st.session_state:  # first visit of this run: a shared link decides
        st.session_state[key] = st.query_params.get("blind") == "1"
    blind = bool(st.toggle(
        "Blind first pass", key=key,
        help="Label each item before the critics' labels, reasons and the consensus are "
             "shown; then they are revealed and you may revise. Agreement with the humans uses "
             "the blind label (a label given after reading every critic is anchored by them)."))
    if blind:
        st.query_params["blind"] = "1"
    elif "blind" in st.query_params:
        del st.query_params["blind"]
    return blind


def assigned_toggle(run_id: int, reviewer: str) -> bool:
    """"Only the N items assigned to <reviewer>" when the run's assignment gives this reviewer
    items (False otherwise). Off until the reviewer turns it on: a switch that turned itself on
    shrank every list without a word; the page says when a list is filtered by it."""
    count = assigned_count(db(), run_id, reviewer) if reviewer else 0
    if not count:
        return False
    return bool(st.toggle(f"Only the {count_of(count, 'item')} assigned to {plain(reviewer)}",
                          value=False, key=f"rv{run_id}.mine"))


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
        frame: a page of `storage.review_queue.review_table` (its `attrs["critic_columns"]` names
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


def verdict_from_row(row: dict[str, Any]) -> Verdict:
    """A stored call (as `storage.review_queue.item_detail` gives it) as a `Verdict`."""
    failure = row.get("failure")
    return Verdict(
        critic=row["critic"],
        item_id=str(row.get("item_id", "")),
        label=row.get("label"),
        score=row.get("score"),
        confidence=row.get("confidence"),
        reasoning=row.get("reasoning"),
        failure=FailureKind(failure) if failure else None,
        message=row.get("message"),
        raw_request=row.get("raw_request"),
        raw_response=row.get("raw_response"),
        latency_ms=row.get("latency_ms"),
        attempts=row.get("attempts") or 0,
        tokens_in=row.get("tokens_in"),
        tokens_out=row.get("tokens_out"),
        cost_usd=row.get("cost_usd"),
        vendor=row.get("vendor"),
        model=row.get("model"),
        simulated=bool(row.get("simulated")),
        cached=bool(row.get("cached")),
    )


def item_fields(detail: dict[str, Any], pairwise: PairwiseConfig | None = None, *,
                show_gold: bool = True) -> None:
    """The item's fields as plain text (never markdown or HTML), plus its gold label (not in a
    blind first pass: `show_gold` False); on a pairwise panel, responses A and B side by side
    under the other fields."""
    fields = detail["fields"]
    compared = (pairwise.first_field, pairwise.second_field) if pairwise and pairwise.active \
        else ()
    with st.container(border=True):
        for name, value in fields.items():
            if name in compared:
                continue
            st.caption(plain(name))  # a column name is data
            st.text(value if isinstance(value, str) else str(value))
        if pairwise is not None and compared:
            systems = pairwise.systems(fields)
            for column, side, name, system in zip(st.columns(2), "AB", compared, systems,
                                                  strict=True):
                with column.container(border=True):
                    column_title = f"Response {side}" + (f" · {system}" if system != name else "")
                    st.markdown(f"**{plain(column_title)}**")
                    value = fields.get(name)
                    st.text(value if isinstance(value, str) else str(value))
        if show_gold and detail.get("gold") is not None:
            st.caption("gold label")
            st.text(str(detail["gold"]))


def consensus_line(detail: dict[str, Any]) -> str:
    """"consensus KEEP · agreement 0.50 · per-item alpha 0.12 · 1 failed · final MERGE (override)",
    as plain text (show it with `st.text`), with a tie marked and the vote's note (how a tie was
    broken, which critics were left out)."""
    c = detail.get("consensus") or {}
    consensus = c.get("consensus")
    parts = [f"consensus {NO_CONSENSUS if consensus is None else shown_value(consensus)}"]
    if c.get("tie"):  # the tie rule chose, not a majority: the note below says how
        parts[0] += " (tied vote: the panel's tie rule decided)"
    if c.get("agreement") is not None:
        parts.append(f"agreement {c['agreement']:.2f}")
    if c.get("item_alpha") is not None:
        parts.append(f"per-item alpha {c['item_alpha']:.2f}")
    if c.get("failed"):
        parts.append(f"{c['failed']} failed")
    final = detail.get("final_label")
    if detail.get("overrides"):
        parts.append(f"final {shown_value(final)} (override)")
    elif (detail.get("decision") or {}).get("marked"):  # a rubric rescored by a reviewer
        parts.append(f"final {shown_value(final)} (a reviewer's criterion marks)")
    if c.get("note"):
        parts.append(str(c["note"]))
    return " · ".join(parts)


def cascade_lines(detail: dict[str, Any]) -> list[str]:
    """One line per cascade tier called for the item, in order, as plain text (show each with
    `st.text`): "tier 1 guardrails: rejected by no_pii (REJECT)". None without a cascade."""
    tiers = (detail.get("consensus") or {}).get("tiers") or []
    return [TierVerdict.from_dict(entry).text for entry in tiers]


def critic_cards(detail: dict[str, Any], *, per_row: int = 4, scale: Scale | None = None) -> None:
    """Every critic's card side by side (wrapping after `per_row`); with the panel's `scale`,
    replies that carry logprobs show each label's probability."""
    verdicts = [verdict_from_row({**row, "item_id": detail["item_id"]}) for row in detail["verdicts"]]
    if not verdicts:
        st.info("No critic has answered for this item yet.")
        return
    for start in range(0, len(verdicts), per_row):
        chunk = verdicts[start : start + per_row]
        wanted = []
        for column, verdict in zip(st.columns(len(chunk)), chunk):
            with column:
                calls = len(detail.get("steps", {}).get(verdict.critic) or []) or 1
                if verdict_card(verdict, key=f"raw.{detail['item_id']}.{verdict.critic}",
                                scale=scale, calls=calls):
                    wanted.append(verdict)
        # A raw exchange is a long JSON document: drawn under the row of cards, at full width,
        # not squeezed into a card.
        for verdict in wanted:
            with st.container(border=True):
                st.markdown(f"**Raw exchange of {plain(verdict.critic)}**")
                raw_exchange(verdict)
        for verdict in chunk:
            steps = detail.get("steps", {}).get(verdict.critic)
            if steps:
                chain_of_calls(verdict.critic, steps)


def chain_of_calls(critic: str, steps: list[dict[str, Any]]) -> None:
    """The calls behind a compound or repeated critic's verdict, in the order they were made."""
    samples = len({s["sample"] for s in steps})
    with st.expander(f"How {plain(critic)} decided: {len(steps)} calls"
                     + (f" over {samples} samples" if samples > 1 else "")):
        for step in steps:
            where = f"sample {step['sample'] + 1} · " if samples > 1 else ""
            if step["failure"]:
                answer = f"⚠ {step['failure']}: {step['message'] or ''}"
            elif step["label"] is not None or step["score"] is not None:
                answer = str(step["label"] if step["label"] is not None else f"{step['score']:g}")
            else:
                answer = "(prose)"
            cached = " · from cache" if step["cached"] else ""
            st.markdown(f"**{plain(where + step['role'])}** → {plain(answer)}{cached}")
            if step["reasoning"]:
                st.text(step["reasoning"])


# How far a walk looks past items other reviewers hold before it gives up (a page of 200 rows
# at a time): further than any team holds at once.
_WALK_ROWS, _WALK_LIMIT = 200, 5_000


def _walk(run_id: int, start: int, filters: Filters, reviewer: str,
          skip: str, *, undecided: bool = False) -> str | None:
    """The first item from row `start` on of the list as filtered now that is not `skip`, not
    held by another reviewer (`storage.leases`) and, with `undecided`, never overridden."""
    # A few rows first (the next free item is almost always among them: reading 200 rows
    # with their critics' cells made a save a tenth of a second slower), then whole pages.
    offset, rows_wanted = start, 4
    while offset < start + _WALK_LIMIT:
        frame, _ = filters.table(run_id, limit=rows_wanted, offset=offset)
        offset, rows_wanted = offset + rows_wanted, _WALK_ROWS
        if frame.empty:
            return None
        rows = [(str(i), bool(o)) for i, o in zip(frame["item_id"], frame["overridden"])]
        held = held_by_others(db(), run_id, [i for i, _ in rows], reviewer) if reviewer else {}
        for item, overridden in rows:
            if item != skip and item not in held and not (undecided and overridden):
                return item
    return None


def next_item(run_id: int, item_id: str, filters: Filters, reviewer: str = "",
              *, undecided: bool = False) -> str | None:
    """The item after `item_id` in the review table as filtered and sorted now, or None at the
    end of the list (or when the list is empty).

    "Next" walks what the user sees: with a Consensus = SPLIT filter on, it stays on SPLIT items.
    An item the filters leave out is followed by the list's first item. Items another reviewer
    has open (their lease) are passed over, so two reviewers on one list are not handed the
    same item; with `undecided`, so are the items someone has already decided (Skip).
    """
    position = filters.position(run_id, item_id)
    start = 0 if position is None else position + 1
    return _walk(run_id, start, filters, reviewer, item_id, undecided=undecided)


def previous_item(run_id: int, item_id: str, filters: Filters) -> str | None:
    """The item before `item_id` in the list as filtered now (None on the first item, or when
    the filters leave it out). Going back is to look again: whoever holds it is shown there."""
    position = filters.position(run_id, item_id)
    if not position:
        return None
    frame, _ = filters.table(run_id, limit=1, offset=position - 1)
    return str(frame["item_id"].iloc[0]) if len(frame) else None
