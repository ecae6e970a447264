"""`jurybox verify RUN [--head HEX]`: check a run's verifiable review record.

Recomputes the run's hash chain (`storage.reviewing.record_chain`) and checks every stored verdict,
decision, override and audit draw against it. Exit 0 when the record is intact; 2 when a record does not
match (the first one is named: its table, its key and, where the chain can tell, which fields
changed), when the run has no record, or when `--head` (the `jurybox_chain_head` of an export)
is not in the chain.
"""

from __future__ import annotations

import argparse
import sys

from judging.runs.commands.cli_runs import add_db_option, db_path_of, open_cli_db
from storage.db import NotFoundError
from storage.reviewing.record_chain import Verification, verify_run

EXIT_OK = 0
EXIT_MISMATCH = 2

_KIND_NAMES = {"call": "verdicts", "decision": "decisions", "override": "overrides",
               "criterion_override": "criterion marks", "jury_decision": "jury decisions",
               "audit_item": "audit draws"}


def add_verify(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verify", help="check that a run's verdicts, decisions, overrides and audit sample were not "
        "changed",
        description="Recompute the run's hash chain over every stored verdict, decision, "
        "override and audit draw, and name the first record that does not match. Exit 0 when "
        "intact, 2 otherwise.",
    )
    p.add_argument("run", type=int, help="the run id (see `jurybox runs`)")
    p.add_argument("--head", default=None, metavar="HEX",
                   help="a chain head kept from an export (Parquet metadata jurybox_chain_head, "
                   "or chain_head in the override history): also check that the record is "
                   "still the one it sealed")
    add_db_option(p)
    p.set_defaults(func=cmd_verify)


def _version_note(result: Verification) -> str:
    # Which field lists the record was checked with: a run sealed by an earlier release keeps
    # its version (version 1 did not seal label probabilities, expected scores, cascade tiers;
    # versions 1 and 2 not the audit sample).
    return f" (chain version {result.version})" if result.version is not None else ""


def _sample_lines(result: Verification) -> list[str]:
    """What the record says of sampling: every decision's item was judged (probability 1),
    and the audit sample's share of each stratum; or that the audit is outside the record."""
    lines = ["; ".join(f"{n:,} decisions with sampling probability {p:g}"
                       + (" (every item judged)" if p == 1.0 else "")
                       for p, n in sorted(result.probabilities.items()))]
    if result.audit:
        lines.append("Audit sample: " + "; ".join(
            f"{drawn:,} of {size:,} {stratum} items (inclusion probability {drawn / size:.4g})"
            if size else f"{drawn:,} {stratum} items"
            for stratum, (drawn, size) in result.audit.items()) + ".")
    for table, n in result.unsealed.items():
        lines.append(f"Not in this record: {n:,} {table} row{'' if n == 1 else 's'} (chain "
                     f"version {result.version} did not seal the audit sample; edits there go "
                     "unseen in this run, and a run started now is sealed with them).")
    return [line for line in lines if line]


def report_lines(result: Verification) -> list[str]:
    """What `verify` prints: one summary sentence, then the first mismatch (if any)."""
    counts = ", ".join(f"{n:,} {_KIND_NAMES.get(kind, kind)}"
                       for kind, n in sorted(result.by_kind.items()))
    if result.records == 0 and not result.mismatches:
        return [f"Run {result.run_id} has no record to verify: nothing was stored yet."]
    if result.records == 0:
        return [f"Run {result.run_id} has no record: it was written before Jurybox kept one "
                "(migration 0025_record_chain), or its record was deleted.",
                f"First: {result.mismatches[0].sentence()}."]
    if result.intact:
        return [f"Run {result.run_id}'s record is intact: {result.records:,} records "
                f"({counts}).", f"Chain head: {result.head}{_version_note(result)}",
                *_sample_lines(result)]
    first = result.first
    assert first is not None
    more = len(result.mismatches) - 1
    lines = [f"Run {result.run_id}'s record does not match: {len(result.mismatches):,} "
             f"record{'s' if len(result.mismatches) != 1 else ''} changed since "
             f"{'they were' if len(result.mismatches) != 1 else 'it was'} recorded.",
             f"First: {first.sentence()}."]
    if more:
        lines.append(f"({more:,} more; the first is the one the rest may follow from.)")
    lines.append(f"Chain head recomputed: {result.head}{_version_note(result)}")
    return lines


def cmd_verify(args: argparse.Namespace) -> int:
    db = open_cli_db(args, read_only=True)
    try:
        result = verify_run(db, args.run, head=args.head)
    except NotFoundError:
        print(f"jurybox: error: there is no run with id {args.run} in {db_path_of(args)}; "
              "list the runs with `jurybox runs`.", file=sys.stderr)
        return EXIT_MISMATCH
    finally:
        db.close()
    for line in report_lines(result):
        print(line)
    return EXIT_OK if result.intact else EXIT_MISMATCH
