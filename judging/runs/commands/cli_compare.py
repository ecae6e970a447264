"""`jurybox compare RUN_A RUN_B`: two runs over the same dataset, item by item (the Compare
page's figures as text). The comparison itself is `judging.runs.stored.compare_runs.compare_runs`."""

from __future__ import annotations

import argparse

from judging.runs.commands.cli_runs import add_db_option, open_cli_db, positive_int
from judging.runs.stored.compare_runs import (
    FlippedItem,
    RunComparison,
    changes_text,
    compare_runs,
    difference_text,
    ledger_rows,
    p_value_text,
    share_text,
)

__all__ = ["add_compare", "cmd_compare", "comparison_lines"]


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare", help="compare two runs over the same dataset, item by item",
        description="Compare run B with run A (another panel version, prompt, model or strategy "
        "over the same dataset): the items whose final decision flipped, each panel's accuracy "
        "against the humans and against the dataset's gold labels, and how often every critic "
        "backed the consensus, with the difference (B minus A) and its paired bootstrap "
        "interval and McNemar's exact test; then both runs' calls, tokens and cost.",
    )
    p.add_argument("run_a", type=int, metavar="RUN_A", help="the first run id (see `jurybox runs`)")
    p.add_argument("run_b", type=int, metavar="RUN_B",
                   help="the run to compare with it (differences read B minus A)")
    p.add_argument("--flipped", type=int, default=20, metavar="N",
                   help="list at most N flipped items (default 20; 0 lists none, the count stays)")
    p.add_argument("--resamples", type=positive_int, default=2000,
                   help="bootstrap resamples for the intervals (default 2000)")
    p.add_argument("--seed", type=int, default=0,
                   help="bootstrap seed: the same seed gives the same intervals (default 0)")
    add_db_option(p)
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    db = open_cli_db(args, read_only=True)
    try:
        comparison = compare_runs(db, args.run_a, args.run_b, resamples=args.resamples,
                                  seed=args.seed)
    finally:
        db.close()
    for line in comparison_lines(comparison, flipped_limit=max(0, args.flipped)):
        print(line)
    return 0


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
            for row in rows]


def _reviewed(item: FlippedItem, a: str, b: str) -> str:
    runs = [title for title, done in ((a, item.reviewed_a), (b, item.reviewed_b)) if done]
    return " and ".join(runs) or "-"


def comparison_lines(c: RunComparison, *, flipped_limit: int = 20) -> list[str]:
    """The comparison as lines of text (what `jurybox compare` prints)."""
    a, b = c.a.title, c.b.title
    lines = [f"Run #{c.b.id} against run #{c.a.id} over dataset #{c.dataset_id} "
             f"{c.dataset_name!r}: {_count(c.common, 'item')} decided by both."]
    for side in (c.a, c.b):
        flags = ", ".join([side.status] + (["simulated"] if side.simulated else []))
        lines.append(f"  {side.title}: {side.version} ({flags})")
    lines.append(changes_text(c))
    if c.only_a or c.only_b:
        lines.append(f"{_count(c.only_a, 'item')} decided only by {a} and {c.only_b:,} only by "
                     f"{b}: left out of every figure below.")

    lines += ["", f"Final decisions (the latest override, else the consensus): "
              f"{len(c.flipped):,} of {c.common:,} items flipped."]
    shown = c.flipped[:flipped_limit]
    if shown:
        lines.append("  Open one in the app: /review?run=ID&item=ITEM")
        rows = [["item", a, b, "reviewed on", "human", "gold"]]
        rows += [[i.item_id, i.final_a or "(none)", i.final_b or "(none)",
                  _reviewed(i, a, b), i.human or "-", i.gold or "-"] for i in shown]
        lines += _table(rows)
        if len(c.flipped) > len(shown):
            lines.append(f"  ... and {len(c.flipped) - len(shown):,} more (--flipped N lists "
                         "more).")

    first = c.measures()[0].result.difference
    lines += ["", f"Paired comparisons: {b} minus {a} in percentage points with a "
              f"{first.confidence:.0%} bootstrap interval (items resampled, {first.resamples:,} "
              f"resamples, seed {first.seed}); McNemar's exact test on the items where only one run "
              "succeeds."]
    for measure in c.measures():
        r = measure.result
        lines.append(f"{measure.title}:")
        if measure.reason or r.mcnemar is None:
            lines.append(f"  undefined: {measure.reason}")
            continue
        lines.append(f"  {a} {share_text(r.accuracy_a)}, {b} {share_text(r.accuracy_b)}; "
                     f"difference {difference_text(r)}; {measure.hit} only in {a}: "
                     f"{r.mcnemar.a_only:,}, only in {b}: {r.mcnemar.b_only:,}, exact McNemar "
                     f"{p_value_text(r)}")
        lines.append(f"  {measure.basis}")

    lines += ["", "Calls, tokens and cost (each run's ledger):"]
    lines += _table([["", a, b]] + [list(row) for row in ledger_rows(c.a.ledger, c.b.ledger)])
    return lines
