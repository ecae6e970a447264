"""Read models for the Review and Agreement pages: the filtered review table and one item in detail.

Everything here is parameterised SQL: filter values, critic names and search text (all user
data) are bound as `?`/`:name` parameters, and the sort order comes from an allow-list. No SQL
text is ever built from user input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import sqlite_utils

from storage.db import NotFoundError, StorageError, loads
from storage.results.calls import REPLY_DICTIONARY, load_steps
from storage.results.consensus import tier_verdicts
from storage.results.replies import unpack
from storage.reviewing.audit import QUEUE_RANK_SQL
from storage.reviewing.criteria import criterion_override_history, disputed_filter_sql
from storage.reviewing.decisions import DecisionRule, decision_records, final_decisions, needs_decision_sql
from storage.reviewing.overrides import override_history
from storage.reviewing.review_filter import ANY_FAILURE, ReviewFilter

# sort name -> its keys, most significant first: (SQL expression, descending?). The only way a
# sort reaches the SQL (an allow-list). Every key is a number that is never NULL, and the last
# one is the item's place in the file (unique in a run), so the keys order the items totally:
# `item_position` counts the items before one instead of numbering the whole list.
_SORT_KEYS: dict[str, tuple[tuple[str, bool], ...]] = {
    # Most contested first: disagreements, then the lowest agreement (none counted = lowest),
    # then the lowest per-item alpha, then failures; file order breaks ties. Migration 0020
    # indexes exactly these expressions: change them together.
    "contested": (("c.disagreement", True), ("coalesce(c.agreement, -1)", False),
                  ("coalesce(c.item_alpha, 2)", False), ("c.failed", True),
                  ("c.position", False)),
    "agreement": (("coalesce(c.agreement, -1)", False), ("c.position", False)),
    # Undefined alphas last (the coalesce only fills a key that the first one already set apart).
    "alpha": (("c.item_alpha IS NULL", False), ("coalesce(c.item_alpha, 0)", False),
              ("c.position", False)),
    "failures": (("c.failed", True), ("c.position", False)),
    "item": (("c.position", False),),
    "recent_override": (("o.id IS NULL", False), ("coalesce(o.id, 0)", True),
                        ("c.position", False)),
    # The label-next queue of the audit sample (`judging.runs.stored.audit_run.refresh_label_next` keeps
    # the ranks), then every other item in file order.
    "label_next": ((QUEUE_RANK_SQL, False), ("c.position", False)),
}

# sort name -> ORDER BY clause.
SORTS: dict[str, str] = {
    name: ", ".join(f"{expr} {'DESC' if desc else 'ASC'}" for expr, desc in keys)
    for name, keys in _SORT_KEYS.items()
}

FIXED_COLUMNS = (
    "item_id", "preview", "consensus", "final_label", "agreement", "disagreement", "failed",
    "item_alpha", "tier", "tie", "overridden", "reviewer", "override_note",
)

_PREVIEW_CHARS = 160
NO_FILTER = ReviewFilter()  # every item of the run


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _run_meta(db: sqlite_utils.Database, run_id: int) -> tuple[int, list[str]]:
    row = db.execute("SELECT dataset_id, critics FROM runs WHERE id = ?", [run_id]).fetchone()
    if row is None:
        raise NotFoundError(f"There is no run with id {run_id}.")
    return int(row[0]), list(loads(row[1]) or [])


def critic_columns(critics: list[str]) -> dict[str, str]:
    """critic name -> its column in the review table (a name that clashes with a fixed column
    gets the suffix " (critic)")."""
    out: dict[str, str] = {}
    for critic in critics:
        column = critic if critic not in FIXED_COLUMNS else f"{critic} (critic)"
        out[critic] = column
    return out


def _cell(label: Any, score: Any, failure: Any) -> Any:
    if failure:
        return f"⚠ {failure}"
    if label is None and isinstance(score, float):
        return round(score, 3)  # 0.333, not 0.3333333333333333 in a narrow column
    return label if label is not None else score


# Each item's latest override (the final label's source), joined where a filter or sort needs it.
_OVERRIDE_JOIN = (
    " LEFT JOIN (SELECT item_id, max(id) AS id FROM overrides WHERE run_id = :run"
    " GROUP BY item_id) lo ON lo.item_id = c.item_id"
    " LEFT JOIN overrides o ON o.id = lo.id"
)


def _filtered(
    run_id: int, dataset_id: int, filters: ReviewFilter, sort: str,
) -> tuple[str, str, dict[str, Any]]:
    """The review filters as SQL: `(" FROM ... WHERE ...", " WHERE ...", params)`.

    One builder for the table, its count and an item's position, so the three always agree on
    what "the filtered set" is.
    """
    if sort not in SORTS:
        raise StorageError(f"Unknown sort {sort!r}; choose one of {', '.join(SORTS)}.")
    f = filters
    where = ["c.run_id = :run"]
    params: dict[str, Any] = {"run": run_id, "ds": dataset_id}
    if f.disagreements_only:
        where.append("c.disagreement = 1")
    if f.ties_only:
        where.append("c.tie = 1")
    if f.consensus_label is not None:
        where.append("c.consensus = :consensus_label")
        params["consensus_label"] = str(f.consensus_label)
    if f.critic_label is not None:
        if not (isinstance(f.critic_label, (tuple, list)) and len(f.critic_label) == 2):
            raise StorageError("critic_label must be a (critic, label) pair.")
        where.append(
            "EXISTS (SELECT 1 FROM calls k WHERE k.run_id = c.run_id AND k.item_id = c.item_id"
            " AND k.critic = :cl_critic AND (k.label = :cl_label OR k.failure = :cl_label"
            " OR (k.label IS NULL AND k.failure IS NULL AND CAST(k.score AS TEXT) = :cl_label)))"
        )
        params["cl_critic"], params["cl_label"] = str(f.critic_label[0]), str(f.critic_label[1])
    if f.alpha_range is not None:
        low, high = f.alpha_range
        if low is not None:
            where.append("c.item_alpha >= :alpha_low")
            params["alpha_low"] = float(low)
        if high is not None:
            where.append("c.item_alpha <= :alpha_high")
            params["alpha_high"] = float(high)
        where.append("c.item_alpha IS NOT NULL")
    if f.failures == ANY_FAILURE:
        where.append("c.failed > 0")
    elif f.failures is not None:
        where.append(
            "EXISTS (SELECT 1 FROM calls k WHERE k.run_id = c.run_id AND k.item_id = c.item_id"
            " AND k.failure = :failure_kind)"
        )
        params["failure_kind"] = str(f.failures)
    if f.overridden is True:
        where.append("o.id IS NOT NULL")
    elif f.overridden is False:
        where.append("o.id IS NULL")
    if f.search is not None and f.search.strip():
        params["q"] = _like(f.search.strip())
        # One pass over the items and one over the reasons, not a lookup per row. A blind
        # first pass searches the items only: a match in a reason would tell what was said.
        reasons = (" UNION SELECT item_id FROM calls WHERE run_id = :run"
                   " AND reasoning LIKE :q ESCAPE '\\'") if f.search_reasons else ""
        where.append(
            "(c.item_id LIKE :q ESCAPE '\\' OR c.item_id IN ("
            "SELECT item_id FROM items WHERE dataset_id = :ds AND fields LIKE :q ESCAPE '\\'"
            + reasons + "))"
        )
    if f.critic_pair is not None:
        if not (isinstance(f.critic_pair, (tuple, list)) and len(f.critic_pair) == 2):
            raise StorageError("critic_pair must be a pair of critic names.")
        where.append(
            "EXISTS (SELECT 1 FROM calls a JOIN calls b ON b.run_id = a.run_id"
            " AND b.item_id = a.item_id AND b.critic = :pair_b"
            " WHERE a.run_id = c.run_id AND a.item_id = c.item_id AND a.critic = :pair_a"
            " AND a.failure IS NULL AND b.failure IS NULL"
            " AND coalesce(a.label, a.score) IS NOT coalesce(b.label, b.score))"
        )
        params["pair_a"], params["pair_b"] = str(f.critic_pair[0]), str(f.critic_pair[1])
    if f.unstable is not None:
        # A critic asked several times gave different answers (`judging.analysis.stability`): labels
        # that differ, or scores further apart than the tolerance.
        where.append(
            "EXISTS (SELECT 1 FROM call_steps s WHERE s.run_id = c.run_id"
            " AND s.item_id = c.item_id AND s.final AND s.failure IS NULL GROUP BY s.critic"
            " HAVING count(DISTINCT s.label) > 1 OR max(s.score) - min(s.score) > :unstable)"
        )
        params["unstable"] = float(f.unstable)
    if f.disputed:
        sql, extra = disputed_filter_sql(f.disputed if isinstance(f.disputed, str) else None)
        where.append(sql)
        params.update(extra)
    if f.needs_decision is not None:  # the final decision cannot be acted on (storage.reviewing.decisions)
        sql, extra = needs_decision_sql(f.needs_decision)
        where.append(sql)
        params.update(extra)
    if f.assigned_to is not None:
        where.append("EXISTS (SELECT 1 FROM assignments a WHERE a.run_id = c.run_id"
                     " AND a.item_id = c.item_id AND a.reviewer = :assigned_to)")
        params["assigned_to"] = str(f.assigned_to)
    # Joins only where a filter or the sort needs them: the count and the sort touch every
    # matching row, the details (preview, override) only the rows of the page.
    needs_override = (f.overridden is not None or sort == "recent_override"
                      or f.needs_decision is not None)
    where_sql = " WHERE " + " AND ".join(where)
    filter_sql = " FROM consensus c" + (_OVERRIDE_JOIN if needs_override else "") + where_sql
    return filter_sql, where_sql, params


def review_table(
    db: sqlite_utils.Database,
    run_id: int,
    filters: ReviewFilter = NO_FILTER,
    *,
    sort: str = "contested",
    rule: DecisionRule | None = None,
    limit: int | None = 50,
    offset: int = 0,
) -> tuple[pd.DataFrame, int]:
    """One page of a run's review table, filtered and sorted, with one column per critic.

    Args:
        db: this thread's connection.
        run_id: the run.
        filters: which items (`storage.reviewing.review_filter.ReviewFilter`); by default every one.
        rule: the run's decision rule (`storage.reviewing.decisions`): on a score or rubric panel the
            final label is the rule's (a human's score banded, a reviewer's marks rescored).
            Not a filter.
        sort: one of `SORTS`: "contested" (default), "agreement", "alpha", "failures", "item",
            "recent_override", "label_next" (the audit's label-next queue first).
        limit: page size; None for every matching row.
        offset: rows to skip.

    Returns:
        `(frame, total)`: the page, and how many rows match the filters. Columns: item_id,
        preview, consensus, final_label, agreement, disagreement, failed, item_alpha, tier, tie
        (the vote was tied and its tie rule chose), overridden, reviewer, override_note, then
        one column per critic in panel order holding its label (or score), or "⚠ <failure
        kind>" (`frame.attrs["critic_columns"]` maps critic name -> column).

    Raises:
        NotFoundError: no such run.
        StorageError: an unknown sort name or a malformed `critic_label` / `alpha_range`.
    """
    dataset_id, critics = _run_meta(db, run_id)
    filter_sql, where_sql, params = _filtered(run_id, dataset_id, filters, sort)
    item_join = " LEFT JOIN items i ON i.dataset_id = :ds AND i.item_id = c.item_id"
    total = int(db.execute("SELECT count(*)" + filter_sql, params).fetchone()[0])
    details = (
        "SELECT c.item_id, (SELECT substr(group_concat(replace(value, char(10), ' '), ' · '), 1,"
        f" {_PREVIEW_CHARS}) FROM json_each(i.fields)) AS preview, c.consensus,"
        " coalesce(o.label, c.consensus) AS final_label, c.agreement, c.disagreement, c.failed,"
        " c.item_alpha, c.tier, c.tie, o.id IS NOT NULL AS overridden, o.reviewer,"
        " o.note AS override_note FROM consensus c" + item_join + _OVERRIDE_JOIN
    )
    if limit is None:
        rows = db.execute(details + where_sql + " ORDER BY " + SORTS[sort], params).fetchall()
    else:
        params["limit"], params["offset"] = max(0, int(limit)), max(0, int(offset))
        page_ids = [
            r[0]
            for r in db.execute(
                "SELECT c.rowid" + filter_sql + " ORDER BY " + SORTS[sort]
                + " LIMIT :limit OFFSET :offset",
                params,
            )
        ]
        rank = {rid: n for n, rid in enumerate(page_ids)}
        found = _page_rows(db, details, page_ids, dataset_id, run_id)
        rows = [r[1:] for r in sorted(found, key=lambda r: rank[r[0]])]

    columns = critic_columns(critics)
    frame = pd.DataFrame.from_records(rows, columns=list(FIXED_COLUMNS))
    if rule is not None and rule.numeric and len(frame):
        # The SQL above is the label rule; a score or rubric item's label needs the panel's.
        decided = final_decisions(db, run_id, rule,
                                  item_ids=None if limit is None else list(frame["item_id"]))
        labels = dict(zip(decided["item_id"], decided["final_label"], strict=True))
        frame["final_label"] = frame["item_id"].map(labels).astype(object)
    for flag in ("disagreement", "tie", "overridden"):
        frame[flag] = frame[flag].astype(bool)
    cells = _critic_cells(db, run_id, [r[0] for r in rows], critics)
    item_ids = [r[0] for r in rows]
    for critic, column in columns.items():
        of_critic = cells.get(critic, {})
        frame[column] = pd.Series([of_critic.get(i) for i in item_ids], dtype=object)
    frame.attrs["critic_columns"] = columns
    return frame, total



@dataclass(frozen=True)
class ListOrder:
    """The filtered, sorted review list as SQL parts, for a query that walks it in the table's
    order (`item_position` here; the shared queue's claim, `storage.reviewing.leases.claim_next`).

    Attributes:
        source: `" FROM consensus c ... WHERE ..."`: the filters (`c` is the list's row).
        params: the named parameters of `source` (none starts with "claim_").
        order_by: the ORDER BY clause of the sort (without the words).
        keys: the sort keys as one row value that ascends in the list's order (a descending
            key negated): `(keys) > (an item's keys)` is "after that item".
    """

    source: str
    params: dict[str, Any]
    order_by: str
    keys: str


def list_order(
    db: sqlite_utils.Database, run_id: int, filters: ReviewFilter = NO_FILTER,
    *, sort: str = "contested",
) -> ListOrder:
    """The list as `review_table` filters and sorts it, as SQL parts (see `ListOrder`).

    Raises:
        NotFoundError: no such run.
        StorageError: as `review_table`.
    """
    dataset_id, _ = _run_meta(db, run_id)
    filter_sql, _, params = _filtered(run_id, dataset_id, filters, sort)
    # A descending key is compared negated, so one row-value comparison orders like ORDER BY.
    keys = ", ".join(f"-({expr})" if desc else expr for expr, desc in _SORT_KEYS[sort])
    return ListOrder(filter_sql, params, SORTS[sort], keys)


def item_position(
    db: sqlite_utils.Database, run_id: int, item_id: str, filters: ReviewFilter = NO_FILTER,
    *, sort: str = "contested",
) -> int | None:
    """Where an item sits in the filtered, sorted review table (0 = first), or None when the
    filters leave it out.

    Takes the same filters and sort as `review_table`, so the Review page can open an item's
    page, and walk to the next item, in exactly the order the table shows.

    Raises:
        NotFoundError: no such run.
        StorageError: as `review_table`.
    """
    order = list_order(db, run_id, filters, sort=sort)
    params = dict(order.params)
    # Counting the items that sort before this one reads each matching row once; numbering the
    # whole sorted list (a window function) took 1.4 s at 1,000,000 items, on every save.
    params["item"] = str(item_id)
    mine = db.execute(f"SELECT {order.keys}" + order.source + " AND c.item_id = :item",
                      params).fetchone()
    if mine is None:
        return None
    marks = ", ".join(f":key{n}" for n in range(len(mine)))
    params.update({f"key{n}": value for n, value in enumerate(mine)})
    row = db.execute("SELECT count(*)" + order.source + f" AND ({order.keys}) < ({marks})",
                     params).fetchone()
    return int(row[0])


def _page_rows(
    db: sqlite_utils.Database, details: str, rowids: list[int], dataset_id: int, run_id: int
) -> list[tuple[Any, ...]]:
    """The detail columns of the page's rows, by consensus rowid (at most one page of them)."""
    if not rowids:
        return []
    sql = details.replace("SELECT c.item_id,", "SELECT c.rowid, c.item_id,", 1)
    found: list[tuple[Any, ...]] = []
    for start in range(0, len(rowids), 500):
        chunk = rowids[start : start + 500]
        params: dict[str, Any] = {"ds": dataset_id, "run": run_id}
        params.update({f"r{n}": rid for n, rid in enumerate(chunk)})
        marks = ", ".join(f":r{n}" for n in range(len(chunk)))
        found += db.execute(sql + f" WHERE c.rowid IN ({marks})", params).fetchall()
    return found


_CELL = "CASE WHEN failure IS NOT NULL THEN '⚠ ' || failure ELSE coalesce(label, score) END"


def _critic_cells(
    db: sqlite_utils.Database, run_id: int, item_ids: list[str], critics: list[str]
) -> dict[str, dict[str, Any]]:
    """critic -> {item_id: cell} (label, score, or "⚠ <failure>") for these items.

    Plain dicts, not a pandas pivot: for one page of the Review list the pivot's index
    machinery cost more than the query (6 of 21 ms per page at 100,000 items), on every save.
    """
    if not item_ids or not critics:
        return {}
    cells: dict[str, dict[str, Any]] = {critic: {} for critic in critics}
    if len(item_ids) <= 900:
        marks = ", ".join("?" for _ in item_ids)
        rows = db.execute(
            f"SELECT item_id, critic, {_CELL} FROM calls WHERE run_id = ? AND item_id IN ({marks})",
            [run_id, *item_ids],
        )
        for item_id, critic, cell in rows:
            cells.setdefault(critic, {})[item_id] = cell
        return cells
    # A big page: pivot inside SQLite (one row per item, one column per critic) rather than
    # hauling three rows per item into Python. Critic names are bound parameters; the column
    # aliases are positional (k0, k1, ...), never user text.
    pivots = ", ".join(
        f"max(CASE WHEN critic = ? THEN {_CELL} END) AS k{n}" for n in range(len(critics))
    )
    for item_id, *row in db.execute(
        f"SELECT item_id, {pivots} FROM calls WHERE run_id = ? GROUP BY item_id",
        [*critics, run_id],
    ):
        for critic, cell in zip(critics, row, strict=True):
            if cell is not None:
                cells[critic][item_id] = cell
    return cells


def item_detail(db: sqlite_utils.Database, run_id: int, item_id: str,
                rule: DecisionRule | None = None) -> dict[str, Any]:
    """Everything about one item of a run, for the detail view.

    Returns:
        {"item_id", "fields" (dict), "gold", "consensus" (dict or None: consensus, score,
        agreement, disagreement, failed, counts, item_alpha, tier, settled_by, strategy,
        recommendation, spread, tie, note), "verdicts" (one dict per critic in panel order:
        critic, label, score, confidence, reasoning, failure, message, raw_request (dict),
        raw_response, latency_ms, attempts, tokens_in, tokens_out, cost_usd, vendor, model,
        simulated, cached, created_at; critics without a stored outcome are absent),
        "overrides" (history, oldest first), "final_label"; with the run's decision `rule`,
        also "decision": the item's row of `storage.reviewing.decisions.final_decisions` (final_label,
        final_score, status, why, ...), and "final_label" is the rule's}.

    Raises:
        NotFoundError: no such run, or the item is not in its dataset.
    """
    dataset_id, critics = _run_meta(db, run_id)
    item = db.execute(
        "SELECT fields, gold FROM items WHERE dataset_id = ? AND item_id = ?", [dataset_id, item_id]
    ).fetchone()
    if item is None:
        raise NotFoundError(f"Run {run_id} has no item {item_id!r}.")
    consensus_rows = list(
        db.query("SELECT * FROM consensus WHERE run_id = ? AND item_id = ?", [run_id, item_id])
    )
    consensus = None
    if consensus_rows:
        consensus = consensus_rows[0]
        consensus["counts"] = loads(consensus["counts"]) or {}
        consensus["disagreement"] = bool(consensus["disagreement"])
        consensus["tie"] = bool(consensus["tie"])
        consensus["marks"] = loads(consensus.get("marks")) or {}
        consensus["tiers"] = [t.as_dict() for t in tier_verdicts(consensus.get("tiers"))]
    order = {name: n for n, name in enumerate(critics)}
    verdicts = []
    for row in db.query(
        "SELECT critic, label, score, confidence, reasoning, failure, message, raw_request,"
        f" raw_response, {REPLY_DICTIONARY} AS reply_dictionary, latency_ms, attempts,"
        " tokens_in, tokens_out, cost_usd, cache_key, vendor,"
        " model, simulated, cached, created_at, marks, request_rebuilt FROM calls"
        " WHERE run_id = ? AND item_id = ?",
        [run_id, item_id],
    ):
        row["raw_response"] = unpack(row["raw_response"], row.pop("reply_dictionary"))
        row["raw_request"] = loads(row["raw_request"])
        row["marks"] = loads(row["marks"]) or {}
        row["simulated"] = bool(row["simulated"])
        row["cached"] = bool(row["cached"])
        verdicts.append(row)
    verdicts.sort(key=lambda v: order.get(v["critic"], len(order)))
    history = override_history(db, run_id, item_id)
    final = history[-1]["label"] if history else (consensus or {}).get("consensus")
    decision = None
    if rule is not None:
        found = decision_records(final_decisions(db, run_id, rule, item_ids=[item_id]))
        decision = found[0] if found else None
        final = decision["final_label"] if decision else final
    return {
        "item_id": item_id,
        "fields": loads(item[0]) or {},
        "gold": item[1],
        "consensus": consensus,
        "verdicts": verdicts,
        "steps": load_steps(db, run_id, item_id),
        "criterion_overrides": criterion_override_history(db, run_id, item_id),
        "overrides": history,
        "final_label": final,
        **({"decision": decision} if rule is not None else {}),
    }


def review_labels(db: sqlite_utils.Database, run_id: int) -> dict[str, Any]:
    """The values the review filters can offer: {"consensus": [labels], "critics": {critic:
    [labels and failure kinds seen]}, "failures": [failure kinds seen]}."""
    _, critics = _run_meta(db, run_id)
    consensus = [r[0] for r in db.execute(
        "SELECT DISTINCT consensus FROM consensus WHERE run_id = ? AND consensus IS NOT NULL"
        " ORDER BY consensus", [run_id])]
    per_critic: dict[str, list[str]] = {c: [] for c in critics}
    failures: set[str] = set()
    # One pass over the run's calls (3,000,000 rows at a million items) gives both lists.
    for critic, value, failure in db.execute(
        "SELECT DISTINCT critic, coalesce(label, failure, CAST(score AS TEXT)), failure"
        " FROM calls WHERE run_id = ? ORDER BY 1, 2", [run_id]
    ):
        if failure is not None:
            failures.add(failure)
        if value is None:
            continue
        values = per_critic.setdefault(critic, [])
        if not values or values[-1] != value:  # one value seen with several failure kinds
            values.append(value)
    return {"consensus": consensus, "critics": per_critic, "failures": sorted(failures)}


def ratings_frame(db: sqlite_utils.Database, run_id: int) -> pd.DataFrame:
    """Every critic outcome of a run in long form, for the agreement statistics.

    Returns:
        Columns item_id, critic, label, score, confidence, failure (None = valid), in item order.
        Failed rows are kept (they are missing values to the statistics, not labels).
    """
    return pd.read_sql_query(
        "SELECT k.item_id, k.critic, k.label, k.score, k.confidence, k.failure FROM calls k"
        " JOIN runs r ON r.id = k.run_id"
        " LEFT JOIN items i ON i.dataset_id = r.dataset_id AND i.item_id = k.item_id"
        " WHERE k.run_id = ? ORDER BY i.position, k.item_id, k.critic",
        db.conn,
        params=[run_id],
    )


def ratings_grid(db: sqlite_utils.Database, run_id: int, critics: Sequence[str], *,
                 numeric: bool) -> pd.DataFrame:
    """The run's ratings as the agreement statistics read them: items x `critics`.

    Each cell is the critic's valid verdict on the item (its score on a numeric scale, else its
    label), None where the call failed or was never made. Rows are the items with at least one
    stored call, in dataset order; critics of the run not listed are left out.

    Why one row per item, pivoted by SQLite: the long table (`ratings_frame`) is three
    Python rows per item, and reading and pivoting it was most of the Agreement page's report;
    at 1,000,000 items the report takes 8.4 s with this against 11.5 s (side by side).
    """
    column = "k.score" if numeric else "k.label"
    picks = "".join(
        f", max(CASE WHEN k.critic = ? AND k.failure IS NULL THEN {column} END)"
        for _ in critics
    )
    # Items first, in position order (CROSS JOIN keeps SQLite from starting at `calls`): the
    # rows then come out grouped and ordered with no sort (2.8 against 3.4 s at 1M items).
    # An item's calls never outlive it: a dataset is not deleted while a run uses it.
    rows = db.conn.execute(
        f"SELECT i.item_id{picks} FROM items i"
        " CROSS JOIN calls k ON k.run_id = ? AND k.item_id = i.item_id"
        " WHERE i.dataset_id = (SELECT dataset_id FROM runs WHERE id = ?)"
        " GROUP BY i.position ORDER BY i.position",
        [*critics, run_id, run_id],
    ).fetchall()
    columns = list(zip(*rows)) if rows else [()] * (len(critics) + 1)
    grid = {
        critic: np.fromiter(values, dtype=object, count=len(rows))
        for critic, values in zip(critics, columns[1:])
    }
    index = pd.Index(np.fromiter(columns[0], dtype=object, count=len(rows)), name="item_id")
    return pd.DataFrame(grid, index=index, columns=list(critics), dtype=object)


def valid_values(db: sqlite_utils.Database, run_id: int, *, numeric: bool) -> dict[str, dict[str, Any]]:
    """critic -> {item_id: its verdict} over the run's valid verdicts: the score on a numeric
    scale, else the label. One narrow query (the verbosity probe needs nothing else)."""
    column = "score" if numeric else "label"
    out: dict[str, dict[str, Any]] = {}
    for critic, item_id, value in db.execute(
        f"SELECT critic, item_id, {column} FROM calls WHERE run_id = ? AND failure IS NULL",
        [run_id],
    ):
        out.setdefault(critic, {})[item_id] = value
    return out


def gold_labels(db: sqlite_utils.Database, run_id: int) -> dict[str, str]:
    """item_id -> gold label, for the run's items that have one."""
    dataset_id, _ = _run_meta(db, run_id)
    return {
        item_id: gold
        for item_id, gold in db.execute(
            "SELECT item_id, gold FROM items WHERE dataset_id = ? AND gold IS NOT NULL",
            [dataset_id],
        )
    }


def tie_breaks(db: sqlite_utils.Database, run_id: int) -> dict[str, int]:
    """How a run's tied votes were decided: consensus label -> items, most first.

    A tie rule that abstains leaves no label: those items count under "(abstained)".
    """
    return {
        str(label) if label is not None else "(abstained)": int(n)
        for label, n in db.execute(
            "SELECT consensus, count(*) FROM consensus WHERE run_id = ? AND tie"
            " GROUP BY consensus ORDER BY count(*) DESC, consensus", [run_id])
    }
