"""`jurybox import VERDICTS`: verdicts judges gave outside Jurybox become a run.

The file is another tool's (an Inspect AI log, a promptfoo `results.json`, a Label Studio JSON
export: recognised by its content, `storage.datasets.readers.eval_logs`), or a table (CSV, TSV, JSONL,
JSON, Parquet, XLSX) in one of two shapes, guessed from its column names and said back before
anything is stored: long (a row per verdict: item, judge, label or score, and optionally order,
repeat, reasoning, confidence) or wide (a row per item, a column per judge, with optional
`<judge>_reasoning` / `<judge>_confidence` columns). A table's items come from the file itself,
from `--items FILE`, or from a dataset already imported (`--dataset ID`). See
`judging.runs.intake.verdict_import`.
"""

from __future__ import annotations

import argparse
import pathlib

from judging.errors import DataError
from judging.panel.pairwise import PairwiseConfig
from judging.runs.commands.cli_runs import add_db_option, db_path_of, open_cli_db, read_for_cli
from judging.runs.intake.verdict_import import ImportChoices, import_verdicts, only_judges
from judging.scales import Scale
from judging.verdicts import VerdictSet
from storage.datasets.dataset_store import save_dataset
from storage.datasets.imported import (
    LongMapping,
    WideMapping,
    guess_long,
    guess_wide,
    verdicts_from_long,
    verdicts_from_wide,
)
from storage.datasets.importing import read_dataset
from storage.datasets.readers.eval_logs import TOOL_FORMATS, read_tool_file, tool_format

EXIT_OK = 0


def add_import(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import", help="import verdicts judges gave elsewhere as a run (a table per verdict "
        "or per item)",
        description="Import the verdicts of judges (models or people) from a table and make "
        "them a run: Review, Agreement, Export and verify then work on them. The table's shape "
        "and columns are guessed from their names and printed; override any guess.",
    )
    p.add_argument("verdicts", type=pathlib.Path, help="the verdict file")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--items", type=pathlib.Path, default=None,
                       help="a file of the items judged (default: the verdict file's own "
                       "columns are the items)")
    where.add_argument("--dataset", type=int, default=None, metavar="ID",
                       help="the id of a dataset already imported that the verdicts judge")
    p.add_argument("--format", choices=("auto", "table", *TOOL_FORMATS), default="auto",
                   help="the file's format (default: an Inspect log, a promptfoo results.json "
                   "or a Label Studio export when its content says so, else a table)")
    p.add_argument("--control", default=None,
                   help="label-studio: the control (from_name) holding the verdict, when the "
                   "export has several")
    p.add_argument("--shape", choices=("long", "wide"), default=None,
                   help="long: a row per verdict; wide: a column per judge (default: long when "
                   "the columns name a judge and a verdict, else wide)")
    p.add_argument("--judges", default=None, metavar="COL,COL",
                   help="wide: the columns holding each judge's verdicts (default: guessed); "
                   "another tool's file: the judges to import (default: all)")
    p.add_argument("--item-column", default=None, help="long: the column naming the item")
    p.add_argument("--judge-column", default=None, help="long: the column naming the judge")
    p.add_argument("--verdict-column", default=None,
                   help="long: the column holding the label or score")
    p.add_argument("--order-column", default=None,
                   help="long: the column saying a pair was shown swapped (AB/BA, true/false)")
    p.add_argument("--repeat-column", default=None,
                   help="long: the column numbering repeats (default: rows in file order)")
    p.add_argument("--scores", action="store_true",
                   help="the verdicts are numbers on a score scale (default: labels)")
    p.add_argument("--labels", default=None, metavar="A,B,...",
                   help="the scale's labels, in order (default: the labels given)")
    p.add_argument("--pairwise", default=None, metavar="FIRST,SECOND",
                   help="the item fields of response A and response B, when the judges "
                   "compared two responses")
    p.add_argument("--a-label", default="A", help="pairwise: the label for 'A is better'")
    p.add_argument("--b-label", default="B", help="pairwise: the label for 'B is better'")
    p.add_argument("--tie-label", default="TIE",
                   help="pairwise: the label for a tie ('' for a forced choice)")
    p.add_argument("--people", choices=("reviewers", "critics", "none"), default="reviewers",
                   help="annotators' labels: each one's blind decision (reviewers), each "
                   "annotator a critic, or left out (none)")
    p.add_argument("--name", default=None, help="the run's and dataset's name (default: the "
                   "file name)")
    p.add_argument("--id-column", default=None,
                   help="the item id column of the items (default: guessed)")
    p.add_argument("--gold-column", default=None,
                   help="the gold label column of the items (default: guessed)")
    add_db_option(p)
    p.set_defaults(func=cmd_import)


def _read_verdicts(args: argparse.Namespace) -> tuple[VerdictSet, list[str]]:
    """The verdict file as a verdict set, and the lines saying how it was read."""
    path: pathlib.Path = args.verdicts
    if not path.is_file():
        raise DataError(f"verdict file {str(path)!r} does not exist; check the path")
    raw = path.read_bytes()
    fmt = tool_format(raw, path.name) if args.format == "auto" else args.format
    if fmt is not None and fmt != "table":
        vset = read_tool_file(raw, path.name, fmt, control=args.control)
        if args.judges:
            vset = only_judges(vset, [j.strip() for j in args.judges.split(",") if j.strip()])
        return vset, [f"Read {path.name} as {fmt}: {len(vset.items):,} items, "
                      f"{len(vset.judges)} judge(s) ({', '.join(vset.judges)}), "
                      f"{len(vset.annotations):,} annotations."]
    separate = args.items is not None or args.dataset is not None
    # A verdict file with its own items keeps their ids; a file of verdicts only is read
    # row by row (its item column names items of the other file).
    rows = read_dataset(path) if separate else read_for_cli(
        path, id_column=args.id_column, gold_column=args.gold_column)
    long = guess_long(rows.columns)
    shape = args.shape or ("long" if long is not None or separate else "wide")
    if shape == "long":
        mapping = _long_mapping(args, long, rows.columns)
        vset = verdicts_from_long(rows.items if separate else read_dataset(path).items,
                                  mapping, numeric=args.scores, source=path.name)
        said = [f"Read {path.name} as a long table: item {mapping.item!r}, judge "
                f"{mapping.judge!r}, verdict {mapping.verdict!r}"
                + "".join(f", {what} {col!r}" for what, col in (
                    ("order", mapping.order), ("repeat", mapping.repeat),
                    ("reasoning", mapping.reasoning), ("confidence", mapping.confidence))
                    if col) + "."]
        return vset, said
    sample = [item.fields | {rows.gold_column or "": item.gold} for item in rows.items[:200]]
    wide = guess_wide(rows.columns, sample, id_column=rows.id_column,
                      gold_column=rows.gold_column)
    if args.judges:
        chosen = [c.strip() for c in args.judges.split(",") if c.strip()]
        missing = [c for c in chosen if c not in rows.columns]
        if missing:
            raise DataError(f"--judges names {missing[0]!r}, which is not a column of "
                            f"{path.name}; columns: {', '.join(rows.columns)}")
        wide = WideMapping({c: c for c in chosen},
                           {j: c for j, c in wide.reasoning.items() if j in chosen},
                           {j: c for j, c in wide.confidence.items() if j in chosen})
    if not wide.judges:
        raise DataError(f"No column of {path.name} looks like a judge's verdicts: name them "
                        "with --judges COL,COL (or give --shape long with --judge-column and "
                        "--verdict-column).")
    vset = verdicts_from_wide(rows.items, wide, numeric=args.scores, source=path.name)
    said = [f"Read {path.name} as a wide table: judges " + ", ".join(
        judge + "".join(f" (+{extra[judge]})" for extra in (wide.reasoning, wide.confidence)
                        if judge in extra) for judge in wide.judges) + "."]
    return vset, said


def _long_mapping(args: argparse.Namespace, guessed: LongMapping | None,
                  columns: list[str]) -> LongMapping:
    item = args.item_column or (guessed.item if guessed else None)
    judge = args.judge_column or (guessed.judge if guessed else None)
    verdict = args.verdict_column or (guessed.verdict if guessed else None)
    if item is None or judge is None or verdict is None:
        raise DataError("Which columns name the item, the judge and the verdict? Give "
                        "--item-column, --judge-column and --verdict-column (columns: "
                        f"{', '.join(columns)}).")
    for given in (item, judge, verdict, args.order_column, args.repeat_column):
        if given is not None and given not in columns:
            raise DataError(f"{given!r} is not a column of the verdict file; columns: "
                            f"{', '.join(columns)}")
    return LongMapping(
        item=item, judge=judge, verdict=verdict,
        order=args.order_column or (guessed.order if guessed else None),
        repeat=args.repeat_column or (guessed.repeat if guessed else None),
        reasoning=guessed.reasoning if guessed else None,
        confidence=guessed.confidence if guessed else None)


def _choices(args: argparse.Namespace, vset: VerdictSet) -> ImportChoices:
    pairwise = None
    if args.pairwise:
        fields = [f.strip() for f in args.pairwise.split(",")]
        if len(fields) != 2:
            raise DataError("--pairwise takes the two response fields, e.g. "
                            "--pairwise output_1,output_2")
        tie = args.tie_label or None
        pairwise = PairwiseConfig(first_field=fields[0], second_field=fields[1],
                                  a_label=args.a_label, b_label=args.b_label, tie_label=tie,
                                  inconsistent="tie" if tie else "flag")
    scale = None
    if args.labels:
        scale = Scale(kind="nominal", labels=[s.strip() for s in args.labels.split(",")])
    return ImportChoices(name=args.name or args.verdicts.name, scale=scale, pairwise=pairwise,
                         people=args.people)


def cmd_import(args: argparse.Namespace) -> int:
    vset, said = _read_verdicts(args)
    for line in said:
        print(line, flush=True)
    dataset_id = args.dataset
    if args.items is not None:
        items = read_for_cli(args.items, id_column=args.id_column, gold_column=args.gold_column)
        db = open_cli_db(args)
        try:
            dataset_id = save_dataset(db, items, name=args.name or args.items.name).id
        finally:
            db.close()
    made = import_verdicts(db_path_of(args), vset, _choices(args, vset), dataset_id=dataset_id)
    people = (f" People's labels: {made.annotations:,} annotations." if made.annotations
              else "")
    print(made.sentence() + people)
    print(f"Next: `jurybox stats {made.run_id}`, or review it in the app (`jurybox app`).")
    return EXIT_OK
