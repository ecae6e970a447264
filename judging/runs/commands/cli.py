"""The `jurybox` command line.

    jurybox simulator [--port N] [--latency-ms MS] [--seed S]   serve the simulated vendor
    jurybox judge --data FILE --panel PANEL.yaml [--concurrency N] [--out FILE.jsonl]
    jurybox demo [--limit N]                                     the demo panel on the demo data
    jurybox runs | resume RUN | export RUN --format F --out FILE runs in the database
    jurybox taxonomy RUN --out FILE.json|.csv                   a curation run's taxonomy
    jurybox stats RUN [--resamples N] [--seed S]                 a run's agreement report
    jurybox reliability RUN [--trusted-at SHARE]                each critic against blind labels
    jurybox check PANEL.yaml [--dataset FILE_OR_ID] [--item ID] [--max-cost USD]
                                                   can each critic answer? one sentence each
    jurybox verify RUN [--head HEX]              was any verdict, decision or override
                                                   changed since it was stored?
    jurybox app [--port N] [--db PATH] [--host A]  start the web app (127.0.0.1:8501)

`judge` and `demo` write their runs to the SQLite database (`--db PATH`, default $JURYBOX_DB or
./jurybox.db), the same one the app uses; `judging/cli_runs.py` holds those commands.

Each subcommand is one `_add_<name>(subparsers)` function that registers its arguments and sets
`func`; add a command by writing one and listing it in `_COMMANDS`. A configuration or data
problem prints one sentence and exits 2, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from judging.demo import demo_dataset_path, demo_gold, demo_panel_path, demo_profiles
from judging.engine.calls import CallRunner
from judging.errors import ConfigError, DatabaseFault, DataError, JuryboxError
from judging.panel.pairwise import PairwiseConfig
from judging.panel.panel_files import load_panel
from judging.runs.commands.cli_app import add_app
from judging.runs.commands.cli_compare import add_compare
from judging.runs.commands.cli_import import add_import
from judging.runs.commands.cli_reliability import add_reliability
from judging.runs.commands.cli_runs import (
    add_batches,
    add_budget_options,
    add_db_option,
    add_export,
    add_no_wait_option,
    add_pairs,
    add_resume,
    add_runs,
    add_stability,
    add_stats,
    add_taxonomy,
    add_turns,
    db_path_of,
    open_cli_db,
    positive_int,
    read_for_cli,
    run_stored,
)
from judging.runs.commands.cli_verify import add_verify
from judging.runs.messages import EXPECTED, sentence_for
from judging.runs.stored.critic_check import (
    check_budget,
    check_critics,
    failed_checks,
    sample_item,
    sample_item_of_dataset,
)
from judging.simulator.sim_server import Profile, SimulatorServer
from storage.datasets.dataset_store import list_datasets
from storage.faults import DRIVER_ERRORS
from storage.results.calls import CallCacheStore

if TYPE_CHECKING:
    from judging.panel.panel_model import Panel
    from judging.verdicts import Item

EXIT_OK = 0
EXIT_FAILED = 1  # the run finished but could not be written, or was interrupted
EXIT_USAGE = 2  # bad arguments, configuration or data: fix the input and run again
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141: what a shell reports for `yes | head`

# -- subcommands -------------------------------------------------------------------------------


def _add_simulator(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulator",
        help="serve the simulated OpenAI-compatible vendor on 127.0.0.1 until Ctrl-C",
        description="Serve the simulated vendor (demo profiles and gold labels) until Ctrl-C.",
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: a free port)")
    p.add_argument(
        "--latency-ms", type=float, default=None,
        help="answer every request after this many ms (default: each profile's own latency)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of every simulated choice")
    p.add_argument(
        "--batch-seconds", type=float, default=1.0,
        help="how long a batch (OpenAI Batch or Anthropic Message Batches) stays in progress "
        "before it is answered (default 1; a vendor takes up to 24 h)",
    )
    p.add_argument(
        "--plain", action="store_true",
        help="no demo profiles or gold labels: every model gets the default profile "
        "(80%% accurate, no failures)",
    )
    p.add_argument(
        "--profiles", type=pathlib.Path, default=None,
        help="YAML mapping of model name -> profile settings (e.g. accuracy, bias, rate_429), "
        "added to (or replacing) the demo profiles",
    )
    p.set_defaults(func=_cmd_simulator)


def _add_judge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "judge",
        help="run a panel over a dataset and print a summary",
        description="Run a panel over every item of a dataset, then print a summary.",
    )
    p.add_argument("--data", required=True, type=pathlib.Path,
                   help="dataset file (CSV, TSV, JSONL, JSON, Parquet, XLSX)")
    p.add_argument("--panel", required=True, type=pathlib.Path, help="panel YAML file")
    _add_run_options(p)
    p.add_argument("--id-column", default=None,
                   help="column with unique item ids (default: guessed as the Datasets page "
                   "does: id, key, *_id, else unique id-like values; '' numbers the rows)")
    p.add_argument("--gold-column", default=None,
                   help="column with gold labels (default: guessed, e.g. 'gold')")
    p.set_defaults(func=_cmd_judge)


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="run the demo panel on the demo dataset against the built-in simulator",
        description="Run the demo taxonomy-curation panel (four simulated critics) on the demo "
        "dataset over real HTTP to the built-in simulator, then print a summary.",
    )
    _add_run_options(p)
    p.set_defaults(func=_cmd_demo)


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--concurrency", type=positive_int, default=32,
                   help="calls in flight at once (default 32)")
    p.add_argument("--out", type=pathlib.Path, default=None,
                   help="write one JSON line per item (consensus and every verdict) here")
    p.add_argument("--limit", type=positive_int, default=None,
                   help="judge only the first N items")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_no_wait_option(p)
    add_budget_options(p)
    add_db_option(p)


def _add_check(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check",
        help="ask each critic of a panel to judge one item: what would fail, and the fix",
        description="Before a run: every critic of the panel judges one sample item (one real "
        "request each, all at once, answered from the database's stored calls where it can), "
        "and one line per critic says what would fail and how to fix it (no key, model "
        "unknown, parameter refused, rate limited, out of credit, no answer in the format) or "
        "OK with its label, latency and cost. Exits 0 when every critic can answer, else 2.",
    )
    p.add_argument("panel", type=pathlib.Path, help="panel YAML file")
    p.add_argument("--dataset", default=None, metavar="FILE_OR_ID",
                   help="a dataset file, or the id of a dataset in the database (default: the "
                   "newest dataset in the database)")
    p.add_argument("--item", default=None, metavar="ID",
                   help="the id of the item to judge (default: the dataset's first item)")
    p.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="send no call that could take the check past this many dollars "
                   "(0: answer from stored calls only; unpriced critics are still asked)")
    add_db_option(p)
    p.set_defaults(func=_cmd_check)


_COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    # The web app, from a checkout or an installed wheel (judging/runs/commands/cli_app.py).
    add_app,
    _add_judge,
    _add_demo,
    _add_check,
    _add_simulator,
    add_runs,
    add_resume,
    add_batches,
    add_export,
    add_stats,
    add_stability,
    add_taxonomy,
    add_pairs,
    add_turns,
    # Verdicts judges gave elsewhere, as a run (judging/runs/commands/cli_import.py).
    add_import,
    # Version against version: two runs over one dataset (judging/runs/commands/cli_compare.py).
    add_compare,
    # Each critic against the blind human labels (judging/runs/commands/cli_reliability.py).
    add_reliability,
    # -- the verifiable review record
    add_verify,
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="jurybox",
        description="Run LLM judge panels over datasets and review where the critics disagree.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `jurybox` console script.

    Args:
        argv: the arguments after the program name (default: `sys.argv[1:]`).

    Returns:
        0 on success, 1 when a run could not finish, 2 for bad arguments, configuration or data
        (with one sentence on stderr saying what to fix), 141 without a word when whoever
        read the output stopped reading (`jurybox runs | head`).
    """
    parser = build_parser()
    _said_once()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse already printed its usage message
        return int(exit_.code or 0)
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a reader that has gone shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # `jurybox runs | head`: the reader stopped reading. Like a Unix tool killed by
        # SIGPIPE: no message, 128 + SIGPIPE, and nothing more written to the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except FileNotFoundError as exc:
        _error(f"no such file: {exc.filename or exc}. Check the path and run again.")
        return EXIT_USAGE
    except OSError as exc:  # e.g. --out in a folder that does not exist or is read-only
        _error(f"{exc.strerror or exc}: {exc.filename or ''}. Check the path and run again.")
        return EXIT_USAGE
    except EXPECTED as exc:
        _error(sentence_for(exc, database=getattr(args, "db", None)) or str(exc))
        # The user's input or environment (configuration, data, the database file) exits 2;
        # a run that could not finish, or an unknown id, exits 1.
        usage = isinstance(exc, (ConfigError, DataError, DatabaseFault, *DRIVER_ERRORS))
        return EXIT_USAGE if usage else EXIT_FAILED
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


def _said_once() -> None:
    """Keep the call layer's log of refused parameters off the terminal: without a handler,
    Python's last-resort one printed each on stderr as it happened, and the command says each
    again where the user reads it (the run's closing note, the check's line per critic)."""
    quiet = logging.getLogger("judging.engine.calls.call_runner")
    if not any(isinstance(handler, logging.NullHandler) for handler in quiet.handlers):
        quiet.addHandler(logging.NullHandler())


def _error(sentence: str) -> None:
    print(f"jurybox: error: {sentence}", file=sys.stderr)


# -- simulator ---------------------------------------------------------------------------------


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _read_profiles(path: pathlib.Path) -> dict[str, Any]:
    """Model name -> `Profile` from a YAML mapping; a bad file is a ConfigError."""
    import yaml


    if not path.is_file():
        raise ConfigError(f"profiles file {str(path)!r} does not exist; check the --profiles path")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"profiles file {str(path)!r} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"profiles file {str(path)!r} must map model names to settings, e.g. "
            "'my-model: {accuracy: 0.9, rate_429: 0.1}'"
        )
    profiles: dict[str, Any] = {}
    for model, settings in data.items():
        try:
            profiles[str(model)] = Profile.from_dict(dict(settings or {}))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"profiles file {str(path)!r}, model {model!r}: {exc}") from None
    return profiles


def _cmd_simulator(args: argparse.Namespace) -> int:

    profiles: dict[str, Any] | None = None
    gold: dict[str, str] | None = None
    if not args.plain:

        profiles, gold = dict(demo_profiles()), demo_gold()
    if args.profiles is not None:
        profiles = {**(profiles or {}), **_read_profiles(args.profiles)}
    server = SimulatorServer(
        profiles=profiles, gold=gold, seed=args.seed, latency_ms=args.latency_ms,
        host=args.host, port=args.port, batch_seconds=args.batch_seconds,
    )
    try:
        server.start()
    except OSError as exc:
        raise ConfigError(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); "
            "choose another --port or 0 for a free one"
        ) from None
    # One line on stdout that scripts can wait for and parse.
    print(f"jurybox simulator listening on {server.base_url}", flush=True)
    # SIGTERM (what a parent process or `timeout` sends) stops it as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        server.serve_forever()  # already started: blocks, and stops the server on the way out
    except KeyboardInterrupt:
        pass
    return EXIT_OK


# -- judge and demo ----------------------------------------------------------------------------


def _cmd_judge(args: argparse.Namespace) -> int:
    parsed = read_for_cli(args.data, id_column=args.id_column, gold_column=args.gold_column)
    panel = load_panel_file(args.panel, fields=parsed.fields)
    return run_stored(panel, parsed, args)


def _cmd_demo(args: argparse.Namespace) -> int:

    panel = load_panel_file(demo_panel_path())
    parsed = read_for_cli(demo_dataset_path(), id_column="id", gold_column="gold")
    items = parsed.items
    print(f"Demo: {len(items) if args.limit is None else min(args.limit, len(items))} "
          "candidate classes of a product taxonomy, judged by simulated critics over HTTP "
          "on 127.0.0.1.", flush=True)
    return run_stored(panel, parsed, args, dataset_name="Demo: taxonomy candidates")


def load_panel_file(path: pathlib.Path, *, fields: Sequence[str] | None = None) -> Panel:
    """Load and validate a panel YAML file.

    Args:
        fields: the fields of the data it will judge, when known: a pairwise setting naming
            none of them is then said first, naming the fields there are (a panel refused
            for it would otherwise only say that its prompt does not show that field).

    Raises:
        ConfigError: the file is missing, not YAML, or not a valid panel (the message names
            the field and the reason).
    """
    if not path.is_file():
        raise ConfigError(f"panel file {str(path)!r} does not exist; check the --panel path")

    try:
        return load_panel(path)
    except ConfigError as exc:
        missing = _pairwise_missing(path, fields) if fields is not None else None
        if missing is not None:
            raise ConfigError(f"panel file {str(path)!r}: {missing}") from exc
        raise
    except JuryboxError:
        raise
    except (ValueError, TypeError) as exc:  # e.g. pydantic's ValidationError
        first = str(exc).strip().splitlines()
        raise ConfigError(f"panel file {str(path)!r} is not a valid panel: "
                          f"{' '.join(first[:3])}") from None


def _pairwise_missing(path: pathlib.Path, fields: Sequence[str]) -> str | None:
    """`PairwiseConfig.missing_field` of a panel file's pairwise settings as written (the
    panel as a whole may not validate), or None when they cannot be read or name no such
    field."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        settings = PairwiseConfig.model_validate(data.get("pairwise") or {})
    except Exception:  # noqa: BLE001 - the panel's own error is the one to show then
        return None
    return settings.missing_field(list(fields))


# -- check -------------------------------------------------------------------------------------


def _check_item(args: argparse.Namespace) -> tuple[Item, str]:
    """The item `jurybox check` judges, and where it comes from (for the first line).

    Raises:
        DataError / NotFoundError: no such file, dataset, or item (with the fix).
    """
    source = args.dataset
    if source is not None and pathlib.Path(source).is_file():
        parsed = read_for_cli(pathlib.Path(source))
        return sample_item(parsed.items, args.item, pathlib.Path(source).name), source
    if source is not None and not source.isdigit():
        raise DataError(f"--dataset {source!r} is neither a file nor a dataset id; give a "
                        "dataset file, or a dataset id from `jurybox runs` or the Datasets page")
    if not db_path_of(args).exists():
        raise DataError("no dataset to check the critics on: give --dataset FILE (there is no "
                        f"database {str(db_path_of(args))!r} to take one from)")
    db = open_cli_db(args, read_only=True)
    try:
        if source is None:
            datasets = list_datasets(db)
            if not datasets:
                raise DataError("no dataset to check the critics on: give --dataset FILE, or "
                                "import one first")
            source = str(datasets[0]["id"])
        return (sample_item_of_dataset(db, int(source), args.item),
                f"dataset #{source} in {db_path_of(args)}")
    finally:
        db.close()


def _cmd_check(args: argparse.Namespace) -> int:
    panel = load_panel_file(args.panel)
    item, where = _check_item(args)
    budget = None if args.max_cost is None else check_budget(args.max_cost)
    # Calls stored by earlier runs answer for free; a check without a database pays each time.
    cache = CallCacheStore(db_path_of(args)) if db_path_of(args).exists() else None
    n = len(panel.critics)
    print(f"Checking {n} critic{'s' if n > 1 else ''} of {panel.name!r} on item {item.id!r} of "
          f"{where}:", flush=True)
    try:
        with CallRunner(cache=cache) as runner:
            checks = check_critics(panel, item, runner, budget=budget)
    finally:
        if cache is not None:
            cache.close()
    for check in checks:
        print(("  ok     " if check.ok else "  FAILS  ") + check.sentence, flush=True)
    failed = failed_checks(checks)
    if not failed:
        print("Every critic can answer.")
        return EXIT_OK
    names = ", ".join(repr(check.critic) for check in failed)
    print(f"{len(failed)} of {len(checks)} critics cannot answer ({names}): fix them before a "
          "run.")
    return EXIT_USAGE


# -- progress ----------------------------------------------------------------------------------




# -- summary -----------------------------------------------------------------------------------


















if __name__ == "__main__":
    sys.exit(main())
