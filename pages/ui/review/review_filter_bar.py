"""The Review page's filters: the bar of widgets (and its blind-pass variant), the query they
make (`Filters`), the lists a link opens, and the blind and assigned-items switches.

Filters are plain widgets whose values become `storage.reviewing.review_queue.review_table` arguments; the
storage layer binds every value as a parameter, so nothing typed here reaches SQL text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from judging.analysis.stability import tolerance
from judging.panel.panel_files import load_panel
from judging.panel.panel_model import Panel
from judging.runs.stored.stored_run import decision_rule
from pages.ui.state import db
from pages.ui.text_format import count_of, plain
from storage.reviewing.assignments import assigned_count
from storage.reviewing.decisions import DecisionRule
from storage.reviewing.review_filter import ANY_FAILURE, ReviewFilter
from storage.reviewing.review_queue import NO_FILTER, item_position, review_labels, review_table

ANY = "(any)"
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
    """The values the filters offer (`storage.reviewing.review_queue.review_labels`), cached per run state.

    Why a cache: finding every distinct label scans all of a run's calls (about 0.5 s at
    300,000 calls), on every rerun of the page; the answer only changes when calls are written,
    so the counts of stored successes and failures are part of the key (a re-run failure
    that now succeeds changes both).

    Args:
        run: the run, as `storage.results.runs.list_runs` gives it.
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
FILTER_DEFAULTS: dict[str, Any] = {
    "disagree": True, "ties": False, "unstable": False, "consensus": ANY, "critic": ANY,
    "critic_value": ANY, "failures": ANY, "overridden": ANY, "use_alpha": False,
    "alpha": (-1.0, 1.0), "search": "", "disputed": ANY, "needs": False,
}
# What a blind first pass may filter and sort by: nothing that follows from what the critics
# said (their labels, the consensus, agreement, alpha, ties, failures, their reasons).
# "Label next" (the audit queue, `pages.ui.agreement.audit_view`) orders by the audit's strata and draw,
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
    for name, value in FILTER_DEFAULTS.items():
        st.session_state.setdefault(k + name, value)
    seen_key = k + "link_seen"
    if st.session_state.get(seen_key) == link:
        return
    st.session_state[seen_key] = link
    if not any(link):
        return
    for name, value in FILTER_DEFAULTS.items():
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
        labels: `storage.reviewing.review_queue.review_labels(...)`: consensus labels, labels per critic,
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
    if panel is not None:  # how the table's final label reads (`storage.reviewing.decisions`)
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
