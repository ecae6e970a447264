"""The storage-backed part of the `jurybox` command line: runs live in the SQLite database.

    jurybox judge ... [--db PATH]      import the dataset, run in the background job, print a summary
    jurybox demo ... [--db PATH]       the same for the demo panel and dataset
    jurybox runs [--db PATH]           runs with their status and counts
    jurybox resume RUN [--db PATH]     resume a cancelled / interrupted / failed run
    jurybox batches RUN [--db PATH]    the vendor batches of a run (critics in mode: batch)
    jurybox export RUN --format csv|jsonl|parquet --out FILE [--db PATH]
    jurybox stats RUN [--resamples N] [--seed S] [--db PATH]   the run's agreement report

The database defaults to `$JURYBOX_DB`, else `./jurybox.db` — the same file the app uses, so a
run started here shows up in the app and the other way round. Every command first marks runs
whose process died as interrupted. `judging/runs/commands/cli.py` registers these commands.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import pathlib
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from judging.analysis.panel_choice import choice_text
from judging.analysis.stability import stability_text
from judging.engine.budget import BudgetCap
from judging.engine.context_guard import over_long, over_long_report
from judging.engine.ledger import Ledger
from judging.errors import ConfigError, DataError
from judging.panel.conversation import ContextChoice
from judging.panel.panel_files import load_panel
from judging.run_status import RunStatus
from judging.runs.background.jobs import JobRegistry, mark_interrupted_runs, prepare_run
from judging.runs.commands.summary import ProgressBar, format_summary, summarize_counts, write_jsonl
from judging.runs.intake.pairs import pairs_dataset, pairs_note
from judging.runs.intake.turn_dataset import turns_dataset
from judging.runs.intake.verdict_import import BACK_FORMATS, decisions_back
from judging.runs.stored.run_report import (
    run_agreement_report,
    run_pairwise,
    run_panel_choice,
    run_rubric,
    run_stability,
    run_verbosity,
)
from judging.runs.stored.stored_run import export_options
from judging.runs.stored.taxonomy import curated_taxonomy, taxonomy_bytes
from judging.verdicts import PanelVerdict
from storage.datasets.column_guess import guess_file_columns
from storage.datasets.dataset_store import save_dataset
from storage.datasets.importing import read_dataset
from storage.db import DatabaseFault, NotFoundError, default_db_path, open_db
from storage.faults import check_folder, is_read_only
from storage.results.consensus import (
    decided_call_counts,
    decision_counts,
    run_gold_labels,
)
from storage.results.export_files import (
    CSV_STYLES,
    ExportOptions,
    export_run,
    iter_verdicts_with_steps,
    rows_csv_bytes,
)
from storage.results.runs import STOP_NO_VERDICT, get_run, list_runs
from storage.results.vendor_batches import run_batches

if TYPE_CHECKING:
    import sqlite_utils

    from judging.panel.panel_model import Panel
    from judging.runs.background.job import Job
    from storage.datasets.importing import ParsedDataset

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2  # the input names something that is not there: fix it and run again
EXIT_INTERRUPTED = 130


def add_db_option(p: argparse.ArgumentParser) -> None:
    """Add `--db PATH` to a subcommand."""
    p.add_argument(
        "--db", type=pathlib.Path, default=None,
        help="SQLite database for runs (default: $JURYBOX_DB, else ./jurybox.db)",
    )


def db_path_of(args: argparse.Namespace) -> pathlib.Path:
    """The database a command works on."""

    return pathlib.Path(getattr(args, "db", None) or default_db_path())


def open_cli_db(args: argparse.Namespace, *, read_only: bool = False) -> sqlite_utils.Database:
    """Open the command's database and mark runs whose process died as interrupted.

    Args:
        read_only: the command only reads (`runs`, `stats`, `export`): a file this user may
            not write is then opened read-only instead of failing (nothing is marked).
    """

    path = db_path_of(args)
    check_folder(path)
    if read_only and is_read_only(path):
        return open_db(path, readonly=True)
    if read_only and not path.exists():

        raise DatabaseFault(f"There is no database {str(path)!r}. Check the path (--db or "
                            "JURYBOX_DB), or start a run first (`jurybox demo`).")
    db = open_db(path)
    for run_id in mark_interrupted_runs(db):
        print(f"Run {run_id} was interrupted (its process stopped); resume it with "
              f"`jurybox resume {run_id}`.", file=sys.stderr)
    return db


# -- reading the dataset -----------------------------------------------------------------------


def read_for_cli(
    path: pathlib.Path, *, id_column: str | None = None, gold_column: str | None = None
) -> ParsedDataset:
    """Read a dataset file, guessing the id and gold columns when not given, by the rule the
    Datasets page pre-fills its form with (`storage.datasets.column_guess`): an item gets the same id
    from the CLI as from the app, so exports join back to the user's rows.

    Args:
        id_column: the id column; "" numbers the rows (row-000001, ...) instead of guessing.
        gold_column: the gold column; "" reads no gold labels instead of guessing.

    Raises:
        DataError: the file is missing or cannot be used (the message says what to fix).
    """
    if not path.is_file():
        raise DataError(f"dataset file {str(path)!r} does not exist; check the --data path")

    guessed_id = id_column is None
    if id_column is None or gold_column is None:
        guess = guess_file_columns(path)
        id_column = guess["id"] if id_column is None else id_column
        if gold_column is None and guess["gold"] != id_column:
            gold_column = guess["gold"]
    if guessed_id:
        print(f"Item ids: {'column ' + repr(id_column) if id_column else 'numbered by row'} "
              "(guessed as the Datasets page does; --id-column COLUMN to choose another, "
              "--id-column '' to number the rows).", flush=True)
    try:
        # Streamed: validated a record at a time, and saved as it is read again (never a list).
        return read_dataset(path, id_column=id_column or None, gold_column=gold_column or None,
                            stream=True)
    except DataError as exc:
        # Empty or repeated ids in the guessed column (the message names it): say how to pick.
        if guessed_id and id_column and f"id column {id_column!r}" in str(exc):
            raise DataError(f"{exc} (The id column {id_column!r} was guessed: pass "
                            "--id-column COLUMN for another one, or --id-column '' to number "
                            "the rows.)") from exc
        raise


def _first(parsed: ParsedDataset, limit: int | None, name: str | None
           ) -> tuple[ParsedDataset, str | None]:
    """The first `limit` items as a dataset of their own (its own content hash), and its name.

    A dataset of its own, not a run over part of the full one: a run judges every item of its
    dataset, and every figure of it (agreement, the audit, the export) is about those items.
    Named "NAME (first N of M)" so the Datasets page and the Run page tell it from the whole
    file, which may be imported too.
    """
    total = len(parsed.items)
    if limit is None or limit >= total:
        return parsed, name
    digest = hashlib.sha256(f"{parsed.content_hash}:first:{limit}".encode()).hexdigest()
    print(f"Judging the first {limit:,} of {total:,} items (--limit), stored as a dataset of "
          "their own.", flush=True)
    return (dataclasses.replace(parsed, items=parsed.items[:limit], content_hash=digest,
                                n_rows=limit),
            f"{name or parsed.filename} (first {limit:,} of {total:,})")


# -- judge / demo through the database ---------------------------------------------------------


def run_stored(panel: Panel, parsed: ParsedDataset, args: argparse.Namespace,
               *, dataset_name: str | None = None) -> int:
    """Import the dataset (recognised if already there), create a run, run it as a background
    job, show progress, print the summary (and `--out` JSONL). Ctrl-C cancels cleanly.

    Returns:
        0 when the run is done, 2 when it failed because a critic gave no verdict at all (fix
        the critic), 1 when it failed otherwise, 130 when cancelled by Ctrl-C.
    """

    parsed, dataset_name = _first(parsed, getattr(args, "limit", None), dataset_name)
    if not len(parsed.items):
        raise DataError("the dataset has no items to judge")
    # A PlaceholderError (a ConfigError) here, before any call is made, not per item later.
    panel.check_fields(sorted(parsed.fields))
    too_long = over_long(panel.critics, parsed.items, panel.scale)
    if too_long:  # named before anything is sent; the panel's context_guard says what happens
        print(over_long_report(too_long, panel.context_guard), file=sys.stderr, flush=True)
    db = open_cli_db(args)
    try:
        saved = save_dataset(db, parsed, name=dataset_name)
        run_id = prepare_run(db, dataset_id=saved.id, panel=panel, budget=budget_from(args))
    finally:
        db.close()
    print(f"Run {run_id} (database {db_path_of(args)})", flush=True)
    job = JobRegistry().start_run(db_path_of(args), run_id, concurrency=args.concurrency,
                                  detach=getattr(args, "no_wait", False))
    return _follow(job, args, panel)


def add_no_wait_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-wait", action="store_true",
                   help="with batch critics (mode: batch): leave once the vendor has the "
                        "batches; `jurybox resume RUN` collects the results later")


def _follow(job: Job, args: argparse.Namespace, panel: Panel | None) -> int:

    bar = ProgressBar(1, stream=sys.stderr, enabled=not getattr(args, "quiet", False))
    start = time.perf_counter()
    interrupted = False
    said = None
    try:
        while not job.wait(0.2):
            current = job.progress()
            if current.vendor and current.vendor != said:  # waiting for vendor batches
                said = current.vendor
                print(said, file=sys.stderr, flush=True)
            if current.total:  # nothing planned yet: a 0-of-0 bar would read as finished
                bar.update(current)
    except KeyboardInterrupt:
        interrupted = True
        print("\nCancelling: calls in flight finish and are kept...", file=sys.stderr, flush=True)
        job.cancel()
        job.wait()
    finally:
        progress = job.progress()
        bar.update(progress)
        bar.close()
    elapsed = time.perf_counter() - start
    if progress.status is RunStatus.INTERRUPTED:  # --no-wait: the vendor has the batches
        print(f"Run {job.run_id}: {progress.error}", flush=True)
        return EXIT_OK
    # A run failed because a critic gave no verdict at all still has the others' verdicts:
    # it shows them, then says why it failed, and exits 2 like any input that must be fixed.
    no_verdict = progress.status is RunStatus.FAILED and _stop_reason(args, job.run_id) == STOP_NO_VERDICT
    if progress.status is RunStatus.FAILED and not no_verdict:
        print(f"jurybox: error: run {job.run_id} failed: {progress.error}", file=sys.stderr)
        return EXIT_FAILED
    if progress.status is RunStatus.CANCELLED:
        if progress.error:  # stopped by its budget cap: the sentence says how far it got
            print(f"Run {job.run_id}: {progress.error} `jurybox resume {job.run_id} "
                  "--budget-usd ...` (or --budget-tokens).", file=sys.stderr, flush=True)
        else:
            print(f"Run {job.run_id} cancelled; resume it with `jurybox resume {job.run_id}`.",
                  file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED if interrupted else EXIT_FAILED


    db = open_db(db_path_of(args))
    try:
        run = get_run(db, job.run_id)
        if panel is None:

            panel = load_panel(run["panel_yaml"])
        # Counted by SQLite, never loaded: a run of a million items prints the same lines.
        # What the run sent and paid is its stored ledger, the figure `jurybox runs` and the
        # app show too (a resumed run's earlier jobs included), not a recount of the rows.
        summary = summarize_counts(
            panel,
            [(label if score is None else score, gold, n, disagreeing)
             for label, score, gold, n, disagreeing in decision_counts(db, job.run_id)],
            [(critic, failure, score if label is None else label, gold, *counts)
             for critic, failure, label, score, gold, *counts
             in decided_call_counts(db, job.run_id)],
            run_gold_labels(db, job.run_id),
            Ledger.from_mapping(run["ledger"]),
            elapsed,
        )
        print(format_summary(summary), flush=True)
        if no_verdict:
            print(f"jurybox: error: run {job.run_id} failed: {progress.error}", file=sys.stderr)
        elif progress.error:
            print(f"Note: {progress.error}", flush=True)
        out = getattr(args, "out", None)
        if out is not None:
            order = {c.name: n for n, c in enumerate(panel.critics)}
            try:
                written = write_jsonl(out, _in_panel_order(
                    iter_verdicts_with_steps(db, job.run_id), order))
            except OSError as exc:
                print(f"jurybox: error: cannot write {str(out)!r}: {exc.strerror or exc}",
                      file=sys.stderr)
                return EXIT_FAILED
            print(f"Wrote {written} items to {out}", flush=True)
    finally:
        db.close()
    return EXIT_USAGE if no_verdict else EXIT_OK


def _stop_reason(args: argparse.Namespace, run_id: int) -> str | None:
    """Why the run stopped short, as stored (None when the database cannot say)."""
    try:
        db = open_db(db_path_of(args))
        try:
            reason = get_run(db, run_id).get("stop_reason")
        finally:
            db.close()
    except Exception:  # noqa: BLE001 - the run's own error is what the user needs then
        return None
    return None if reason is None else str(reason)


def _in_panel_order(verdicts: Iterable[PanelVerdict], order: dict[str, int]
                    ) -> Iterator[PanelVerdict]:
    """Each item's verdicts in the panel's critic order (stored ones come in write order)."""
    for pv in verdicts:
        pv.verdicts.sort(key=lambda v: order.get(v.critic, len(order)))
        yield pv


# -- runs / resume / export --------------------------------------------------------------------


def add_runs(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("runs", help="list the runs in the database",
                       description="List the runs in the database, newest first.")
    add_db_option(p)
    p.set_defaults(func=cmd_runs)


def add_resume(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "resume", help="resume a cancelled, interrupted or failed run",
        description="Resume a run: only item x critic pairs without a successful verdict are "
        "sent; stored successes are not paid for again.",
    )
    p.add_argument("run", type=int, help="the run id (see `jurybox runs`)")
    p.add_argument("--concurrency", type=positive_int, default=32,
                   help="calls in flight at once (default 32)")
    p.add_argument("--failures", action="store_true",
                   help="re-run only the failed pairs of a run (also works on a finished run)")
    p.add_argument("--out", type=pathlib.Path, default=None,
                   help="write one JSON line per item (consensus and every verdict) here")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_no_wait_option(p)
    add_budget_options(p, resuming=True)
    add_db_option(p)
    p.set_defaults(func=cmd_resume)


def add_batches(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("batches", help="list the vendor batches of a run",
                       description="List the batches a run handed to vendors (mode: batch), "
                       "with what the vendor last said of each.")
    p.add_argument("run", type=int, help="the run id (see `jurybox runs`)")
    add_db_option(p)
    p.set_defaults(func=cmd_batches)


def add_budget_options(p: argparse.ArgumentParser, *, resuming: bool = False) -> None:
    """--budget-usd / --budget-tokens: the run's cap (see docs/panels/budget.md)."""
    which = "a new cap for the run (e.g. higher after 'budget reached')" if resuming \
        else "stop the run before it spends more than this"
    p.add_argument("--budget-usd", type=float, default=None, metavar="USD",
                   help=f"{which}, in US dollars")
    p.add_argument("--budget-tokens", type=positive_int, default=None, metavar="N",
                   help=f"{which}, in tokens (input + output; unpriced calls count here)")


def budget_from(args: argparse.Namespace) -> BudgetCap | None:
    """The cap the options ask for, or None.

    Raises:
        ConfigError: a cap that is no limit (zero, negative, not a number).
    """
    usd, tokens = getattr(args, "budget_usd", None), getattr(args, "budget_tokens", None)
    if usd is None and tokens is None:
        return None
    if usd is not None and not (usd > 0 and math.isfinite(usd)):
        raise ConfigError(f"--budget-usd must be a positive number of dollars, not {usd}.")
    return BudgetCap(usd=usd, tokens=tokens)


def add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "export", help="export a run's final labels (CSV, JSONL, Parquet)",
        description="Export final labels (latest override, else consensus) with the consensus, "
        "agreement, one label and confidence column per critic, and the override note. A CSV "
        "is spreadsheet-safe by default (a cell whose first character a spreadsheet would run "
        "as a formula gets a leading single quote); --csv exact writes every cell as it is.",
    )
    p.add_argument("run", type=int, help="the run id (see `jurybox runs`)")
    p.add_argument("--format", choices=("csv", "jsonl", "parquet", *BACK_FORMATS), default=None,
                   help="output format (default: from the --out extension, else csv); "
                   "inspect-scores, label-studio and long write the final decisions back in "
                   "the shape the tool the verdicts came from reads")
    p.add_argument("--tasks", type=pathlib.Path, default=None,
                   help="label-studio: the export the verdicts were read from (its tasks get "
                   "the decisions as ground-truth annotations)")
    p.add_argument("--control", default=None,
                   help="label-studio: the control (from_name) the decisions go in (default: "
                   "the export's only choices, rating or number control)")
    p.add_argument("--humans-only", action="store_true",
                   help="inspect-scores, label-studio, long: only the items a person decided "
                   "(default: every decided item, the consensus where no one overrode it)")
    p.add_argument("--out", type=pathlib.Path, required=True, help="the file to write")
    p.add_argument("--csv", choices=CSV_STYLES, default="spreadsheet", dest="csv_style",
                   help="a CSV's style: spreadsheet (default: a cell starting with = + - @, tab "
                        "or CR gets a leading single quote) or exact (RFC 4180, nothing "
                        "changed; read it back with pandas and get the texts byte for byte)")
    # For curation, as the Export page's "also include" boxes (the same ExportOptions).
    p.add_argument("--fields", action="store_true",
                   help="add the item's fields, one `field: <name>` column each")
    p.add_argument("--reasoning", action="store_true",
                   help="add each critic's reasoning, one `<critic>: reasoning` column each")
    p.add_argument("--history", action="store_true",
                   help="add every override of the item, oldest first, in `override_history`")
    add_db_option(p)
    p.set_defaults(func=cmd_export)


def add_taxonomy(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "taxonomy", help="write the curated taxonomy of a curation run (JSON or CSV)",
        description="For a run whose panel curates a taxonomy (curation.class_field set): each "
        "class by its final decision (a reviewer's latest, else the consensus) as kept, "
        "removed, split (with the new child classes) or merged (with the target), with the note "
        "and who decided.",
    )
    p.add_argument("run", type=int, help="the run id (see `jurybox runs`)")
    p.add_argument("--out", type=pathlib.Path, required=True,
                   help="the file to write (.json, or .csv for one row per class)")
    add_db_option(p)
    p.set_defaults(func=cmd_taxonomy)


def add_stats(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stats", help="print a run's agreement statistics",
        description="Print a run's agreement report: Krippendorff's alpha with a bootstrap "
        "interval, per-item alpha, Fleiss' kappa, Gwet's AC1, per-critic agreement with the "
        "consensus, the humans and the gold labels, leave-one-critic-out alpha, Dawid-Skene "
        "accuracies and pairwise Cohen's kappa; for a pairwise panel, win rates per system "
        "with intervals, Bradley-Terry strengths and each critic's position bias; for a rubric "
        "panel, alpha, disputes and each critic's agreement per criterion. The same "
        "figures as the Agreement page.",
    )
    p.add_argument("run", type=int, help="the run id (see `jurybox runs`)")
    p.add_argument("--resamples", type=positive_int, default=1000,
                   help="bootstrap resamples for alpha's interval (default 1000)")
    p.add_argument("--seed", type=int, default=0,
                   help="bootstrap seed: the same seed gives the same interval (default 0)")
    p.add_argument("--length-field", default=None, metavar="FIELD",
                   help="the item field whose length the verbosity probe measures (default: "
                   "of the fields the critics' prompts show, the one with the longest texts)")
    add_db_option(p)
    p.set_defaults(func=cmd_stats)


def add_stability(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stability", help="print how often each repeated critic changes its answer",
        description="For critics asked several times per item (samples: N): the flip rate (the "
        "share of items whose samples disagree), the within-critic agreement and alpha, next to "
        "the between-critic alpha, and the unstable items.",
    )
    p.add_argument("run", type=int, help="the run id (see `jurybox runs`)")
    add_db_option(p)
    p.set_defaults(func=cmd_stability)


def add_pairs(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "pairs", help="turn a dataset with one response column per system into comparisons",
        description="For a pairwise panel: every pair of the response columns of every item "
        "becomes one comparison (system_a, response_a, system_b, response_b; which goes first "
        "is drawn at random with the seed, or kept with --keep-order), written as CSV with the "
        "item's other columns and its gold label read in the comparison's order (a gold naming "
        "the winning column becomes A or B).",
    )
    p.add_argument("--data", type=pathlib.Path, required=True, help="the dataset file")
    p.add_argument("--responses", required=True, metavar="COL,COL,...",
                   help="the response columns to compare, one per system (at least two)")
    p.add_argument("--out", type=pathlib.Path, required=True, help="the CSV file to write")
    p.add_argument("--id-column", default=None, help="the item id column (default: guessed)")
    p.add_argument("--gold-column", default=None,
                   help="the gold column: the winning column's name, or a tie label (default: "
                   "guessed, e.g. 'gold'); written as the comparisons' 'gold' column")
    p.add_argument("--seed", type=int, default=0,
                   help="the seed of the draw of which response goes first (default 0)")
    p.add_argument("--keep-order", action="store_true",
                   help="no draw: the column listed first in --responses is always A")
    p.set_defaults(func=cmd_pairs)


def add_turns(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "turns", help="turn a dataset of conversations into one item per assistant turn",
        description="Each assistant turn of the conversation field becomes one item "
        "(id THREAD#tN) with thread_id, turn_index, turn, context and thread (see the manual's "
        "Conversations page), written as CSV with the item's other columns and a gold column "
        "when the messages carry one.",
    )
    p.add_argument("--data", type=pathlib.Path, required=True, help="the dataset file")
    p.add_argument("--field", required=True,
                   help="the column holding each conversation (messages, ATIF or a transcript)")
    p.add_argument("--out", type=pathlib.Path, required=True, help="the CSV file to write")
    p.add_argument("--id-column", default=None, help="the item id column (default: guessed)")
    p.add_argument("--context", choices=["before", "last", "alone"], default="before",
                   help="what {context} holds: the thread up to the turn (default), the last "
                        "--last messages, or nothing")
    p.add_argument("--last", type=int, default=4, metavar="K",
                   help="with --context last: how many messages (default 4)")
    p.add_argument("--no-tools", action="store_true",
                   help="leave tool calls and tool results out of {context}")
    p.set_defaults(func=cmd_turns)


def cmd_turns(args: argparse.Namespace) -> int:

    parsed = read_for_cli(args.data, id_column=args.id_column)
    if args.field not in parsed.columns:
        raise DataError(f"{args.data.name} has no column {args.field!r}; its columns: "
                        f"{', '.join(parsed.columns)}")
    choice = ContextChoice(kind=args.context, k=args.last, tools=not args.no_tools)
    turns = turns_dataset(parsed, args.field, context=choice)
    gold = turns.gold_column is not None
    rows = [{"id": item.id, **item.fields, **({"gold": item.gold} if gold else {})}
            for item in turns.items]
    args.out.write_bytes(rows_csv_bytes(rows))
    print(f"Wrote {len(rows):,} turns of {len({r['thread_id'] for r in rows}):,} "
          f"conversations to {args.out}, each with {choice.describe()} as its context: "
          "prompts name {turn}, {context} and {thread}.")
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:

    db = open_cli_db(args, read_only=True)
    try:
        runs = list_runs(db)
    finally:
        db.close()
    if not runs:
        print(f"No runs yet in {db_path_of(args)}. Start one with `jurybox demo` or "
              "`jurybox judge --data FILE --panel PANEL.yaml`.")
        return EXIT_OK
    print(f"{'id':>4}  {'status':<11}  {'created (UTC)':<19}  {'items':>6}  "
          f"{'ok':>7}  {'failed':>6}  {'of':>7}  dataset / panel  cost")
    for r in runs:
        cost = Ledger.from_mapping(r["ledger"]).cost_text()
        sim = " (simulated)" if r["simulated"] else ""
        print(f"{r['id']:>4}  {r['status']:<11}  {r['created_at'][:19].replace('T', ' '):<19}  "
              f"{r['n_items']:>6}  {r['ok_calls']:>7}  {r['failed_calls']:>6}  "
              f"{r['total_calls']:>7}  {r['dataset_name']} / {r['panel_name']}{sim}  {cost}")
        if r["error"] and r["status"] in (RunStatus.FAILED, RunStatus.INTERRUPTED):
            print(f"{'':>6}{r['error']}")
    return EXIT_OK


def cmd_resume(args: argparse.Namespace) -> int:

    open_cli_db(args).close()  # marks a dead process's run interrupted first
    registry = JobRegistry()
    if args.failures:
        job = registry.rerun_failures(db_path_of(args), args.run, concurrency=args.concurrency)
    else:
        job = registry.resume(db_path_of(args), args.run, concurrency=args.concurrency,
                              budget=budget_from(args), detach=args.no_wait)
    print(f"Resuming run {args.run} (database {db_path_of(args)})", flush=True)
    return _follow(job, args, None)


def cmd_batches(args: argparse.Namespace) -> int:

    db = open_cli_db(args, read_only=True)
    try:
        get_run(db, args.run)  # NotFoundError with a sentence for an unknown run
        rows = run_batches(db, args.run)
    finally:
        db.close()
    if not rows:
        print(f"Run {args.run} has no vendor batches (its critics run live).")
        return EXIT_OK
    print(f"{'batch':<28}  {'critic':<14}  {'api':<9}  {'state':<9}  {'requests':>8}  "
          f"{'answered':>8}  {'failed':>6}  vendor says")
    for r in rows:
        said = r["vendor_status"] or "-"
        if r["error"]:
            said += f": {r['error']}"
        print(f"{r['batch_id']:<28}  {r['critic']:<14}  {r['api']:<9}  {r['state']:<9}  "
              f"{r['requests']:>8}  {r['succeeded'] + r['errored']:>8}  {r['errored']:>6}  "
              f"{said}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:

    fmt = args.format or {".jsonl": "jsonl", ".parquet": "parquet"}.get(args.out.suffix.lower(), "csv")
    if fmt in BACK_FORMATS:
        return _export_back(args, fmt)
    db = open_cli_db(args, read_only=True)
    try:
        options = export_options(db, args.run, ExportOptions(
            fields=args.fields, reasoning=args.reasoning, history=args.history,
            csv_style=args.csv_style))
        rows = export_run(db, args.run, fmt, args.out, options)
    finally:
        db.close()
    style = f", {args.csv_style}" if fmt == "csv" else ""
    print(f"Wrote {rows} rows of run {args.run} to {args.out} ({fmt}{style})")
    return EXIT_OK


def _export_back(args: argparse.Namespace, fmt: str) -> int:
    """The final decisions in the shape of the tool the verdicts came from."""
    tasks = args.tasks.read_bytes() if args.tasks is not None else None
    db = open_cli_db(args, read_only=True)
    try:
        data, count = decisions_back(db, args.run, fmt, tasks=tasks, control=args.control,
                                     humans_only=args.humans_only)
    finally:
        db.close()
    args.out.write_bytes(data)
    print(f"Wrote {count} decisions of run {args.run} to {args.out} ({fmt})")
    return EXIT_OK


def cmd_taxonomy(args: argparse.Namespace) -> int:

    fmt = "csv" if args.out.suffix.lower() == ".csv" else "json"
    db = open_cli_db(args, read_only=True)
    try:
        taxonomy = curated_taxonomy(db, args.run)
    finally:
        db.close()
    args.out.write_bytes(taxonomy_bytes(taxonomy, fmt))
    print(f"Wrote the curated taxonomy of run {args.run} to {args.out} ({fmt}): "
          f"{len(taxonomy.kept)} kept, {len(taxonomy.removed)} removed, {len(taxonomy.split)} "
          f"split, {len(taxonomy.merged)} merged, {len(taxonomy.needs_decision)} need a decision")
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:

    db = open_cli_db(args, read_only=True)
    try:
        report = run_agreement_report(db, args.run, resamples=args.resamples, seed=args.seed)
        verbosity = run_verbosity(db, args.run, args.length_field)
        pairwise = run_pairwise(db, args.run, resamples=args.resamples, seed=args.seed)
        rubric = run_rubric(db, args.run)
        choice = run_panel_choice(db, args.run, seed=args.seed)
    except NotFoundError:
        print(f"jurybox: error: there is no run with id {args.run} in {db_path_of(args)}; "
              "list the runs with `jurybox runs`.", file=sys.stderr)
        return EXIT_USAGE
    finally:
        db.close()
    print(report.to_text())
    if pairwise is not None:
        print(pairwise.to_text())
    if rubric is not None:
        print(rubric.to_text())
    if choice is not None:
        print(choice_text(choice[0], priced=choice[1]))
    print(verbosity.to_text())
    return EXIT_OK


def cmd_pairs(args: argparse.Namespace) -> int:

    responses = [name.strip() for name in args.responses.split(",") if name.strip()]
    gold_column = args.gold_column
    if gold_column is None and guess_file_columns(args.data)["gold"] in responses:
        gold_column = ""  # a response column is no gold column, whatever its name
    parsed = read_for_cli(args.data, id_column=args.id_column, gold_column=gold_column)
    unknown = [name for name in responses if name not in parsed.columns]
    if unknown:
        raise DataError(f"{args.data.name} has no column {unknown[0]!r}; its columns: "
                        f"{', '.join(parsed.columns)}")
    pairs = pairs_dataset(parsed, responses, seed=args.seed, keep_order=args.keep_order)
    gold = "gold" if "gold" not in pairs.fields else "pair_gold"
    rows = [{"id": item.id, **item.fields,
             **({gold: item.gold} if pairs.gold_column else {})} for item in pairs.items]
    args.out.write_bytes(rows_csv_bytes(rows))
    print(f"Wrote {len(rows):,} comparisons of {', '.join(responses)} to {args.out}: give a "
          "pairwise panel first_field response_a, second_field response_b, first_system "
          "system_a and second_system system_b.")
    print(pairs_note(responses, seed=args.seed, keep_order=args.keep_order,
                     gold_column=pairs.gold_column)
          + (f" It is the {gold!r} column of {args.out}." if pairs.gold_column else ""))
    return EXIT_OK


def cmd_stability(args: argparse.Namespace) -> int:

    db = open_cli_db(args, read_only=True)
    try:
        results = run_stability(db, args.run)
        report = run_agreement_report(db, args.run, resamples=1) if results else None
    except NotFoundError:
        print(f"jurybox: error: there is no run with id {args.run} in {db_path_of(args)}; "
              "list the runs with `jurybox runs`.", file=sys.stderr)
        return EXIT_USAGE
    finally:
        db.close()
    between = report.alpha.value if report is not None else None
    print(stability_text(results, between))
    return EXIT_OK


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1, with a sentence when it is not."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value
