"""The `jurybox` command line.

    jurybox simulator [--port N] [--latency-ms MS] [--seed S]   serve the simulated vendor
    jurybox judge --data FILE --panel PANEL.yaml [--concurrency N] [--out FILE.jsonl]
    jurybox demo [--limit N]                                     the demo panel on the demo data
    jurybox runs | resume RUN | export RUN --format F --out FILE runs in the database
    jurybox stats RUN [--resamples N] [--seed S]                 a run's agreement report

`judge` and `demo` write their runs to the SQLite database (`--db PATH`, default $JURYBOX_DB or
./jurybox.db), the same one the app uses; `judging/cli_runs.py` holds those commands.

Each subcommand is one `_add_<name>(subparsers)` function that registers its arguments and sets
`func`; add a command by writing one and listing it in `_COMMANDS`. A configuration or data
problem prints one sentence and exits 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import signal
import sqlite3
import sys
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from judging.cli_runs import (
    add_db_option,
    add_export,
    add_resume,
    add_runs,
    add_stats,
    positive_int,
    read_for_cli,
    run_stored,
)
from judging.errors import ConfigError, DatabaseFault, DataError, JuryboxError
from storage.faults import database_fault
from judging.ledger import Ledger

if TYPE_CHECKING:
    from judging.panel import Panel
    from judging.runner import RunProgress
    from judging.verdicts import Item, PanelVerdict

EXIT_OK = 0
EXIT_FAILED = 1  # the run finished but could not be written, or was interrupted
EXIT_USAGE = 2  # bad arguments, configuration or data: fix the input and run again

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
                   help="column with unique item ids (default: guessed, e.g. 'id')")
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
    add_db_option(p)


_COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    _add_judge,
    _add_demo,
    _add_simulator,
    add_runs,
    add_resume,
    add_export,
    add_stats,
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
        (with one sentence on stderr saying what to fix).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse already printed its usage message
        return int(exit_.code or 0)
    try:
        return int(args.func(args))
    except (ConfigError, DataError, DatabaseFault) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except FileNotFoundError as exc:
        _error(f"no such file: {exc.filename or exc}. Check the path and run again.")
        return EXIT_USAGE
    except sqlite3.Error as exc:  # a fault met after opening (disk full mid-run, a lock)
        _error(str(database_fault(exc, getattr(args, "db", None))))
        return EXIT_USAGE
    except OSError as exc:  # e.g. --out in a folder that does not exist or is read-only
        _error(f"{exc.strerror or exc}: {exc.filename or ''}. Check the path and run again.")
        return EXIT_USAGE
    except JuryboxError as exc:
        _error(str(exc))
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


def _error(sentence: str) -> None:
    print(f"jurybox: error: {sentence}", file=sys.stderr)


# -- simulator ---------------------------------------------------------------------------------


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _read_profiles(path: pathlib.Path) -> dict[str, Any]:
    """Model name -> `Profile` from a YAML mapping; a bad file is a ConfigError."""
    import yaml

    from judging.simulator import Profile

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
    from judging.simulator import SimulatorServer

    profiles: dict[str, Any] | None = None
    gold: dict[str, str] | None = None
    if not args.plain:
        from judging.demo import demo_gold, demo_profiles

        profiles, gold = dict(demo_profiles()), demo_gold()
    if args.profiles is not None:
        profiles = {**(profiles or {}), **_read_profiles(args.profiles)}
    server = SimulatorServer(
        profiles=profiles, gold=gold, seed=args.seed, latency_ms=args.latency_ms,
        host=args.host, port=args.port,
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
    panel = load_panel_file(args.panel)
    parsed = read_for_cli(args.data, id_column=args.id_column, gold_column=args.gold_column)
    return run_stored(panel, parsed, args)


def _cmd_demo(args: argparse.Namespace) -> int:
    from judging.demo import demo_dataset_path, demo_panel_path

    panel = load_panel_file(demo_panel_path())
    parsed = read_for_cli(demo_dataset_path(), id_column="id", gold_column="gold")
    items = parsed.items
    print(f"Demo: {len(items) if args.limit is None else min(args.limit, len(items))} "
          "candidate classes of a product taxonomy, judged by simulated critics over HTTP "
          "on 127.0.0.1.", flush=True)
    return run_stored(panel, parsed, args, dataset_name="Demo: taxonomy candidates")


def load_panel_file(path: pathlib.Path) -> Panel:
    """Load and validate a panel YAML file.

    Raises:
        ConfigError: the file is missing, not YAML, or not a valid panel (the message names
            the field and the reason).
    """
    if not path.is_file():
        raise ConfigError(f"panel file {str(path)!r} does not exist; check the --panel path")
    from judging.panel_files import load_panel

    try:
        return load_panel(path)
    except JuryboxError:
        raise
    except (ValueError, TypeError) as exc:  # e.g. pydantic's ValidationError
        first = str(exc).strip().splitlines()
        raise ConfigError(f"panel file {str(path)!r} is not a valid panel: "
                          f"{' '.join(first[:3])}") from None


# -- progress ----------------------------------------------------------------------------------


class ProgressBar:
    """A plain-text progress bar on a stream (stderr): redrawn in place on a terminal, a line
    every 10% otherwise (so logs and CI output stay short). Thread-safe: the engine reports
    progress from worker threads."""

    WIDTH = 30

    def __init__(self, total_items: int, *, stream: IO[str], enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled and total_items > 0
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._last_decile = -1
        self._drawn = False

    def update(self, progress: RunProgress) -> None:
        """Draw one `RunProgress` snapshot (the engine's `on_progress` callback)."""
        if not self.enabled:
            return
        with self._lock:
            line = self.render(progress)
            if self.tty:
                self.stream.write("\r" + line)
                self._drawn = True
            else:
                decile = int(progress.fraction * 10)
                if decile <= self._last_decile:
                    return
                self._last_decile = decile
                self.stream.write(line + "\n")
            self.stream.flush()

    @classmethod
    def render(cls, p: RunProgress) -> str:
        """One line: bar, items, calls, failures, elapsed time."""
        filled = int(p.fraction * cls.WIDTH)
        bar = "#" * filled + "." * (cls.WIDTH - filled)
        failed = f", {p.failed} failed" if p.failed else ""
        return (
            f"[{bar}] {p.fraction:4.0%}  {p.items_done}/{p.items_total} items, "
            f"{p.done}/{p.total} calls{failed}  {p.elapsed_s:5.1f} s"
        )

    def close(self) -> None:
        with self._lock:
            if self.enabled and self.tty and self._drawn:
                self.stream.write("\n")
                self.stream.flush()


# -- summary -----------------------------------------------------------------------------------


@dataclass
class CriticSummary:
    name: str
    calls: int = 0
    ok: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    attempts: int = 0
    cached: int = 0
    correct: int = 0  # valid verdicts equal to the gold label
    with_gold: int = 0  # valid verdicts on items that have a gold label


@dataclass
class RunSummary:
    """What one run did, in figures; `format_summary` renders it."""

    panel: str
    strategy: str
    items: int
    critics: list[CriticSummary]
    consensus: Counter[str]
    no_consensus: int
    disagreements: int
    calls: int
    ledger: Ledger  # what the run sent and paid (cache hits never paid)
    unpriced_critics: list[str]  # critics with at least one sent call of unknown cost
    seconds: float
    gold_items: int
    gold_correct: int
    simulated: bool


def summarize(
    panel: Panel, items: list[Item], verdicts: list[PanelVerdict], seconds: float
) -> RunSummary:
    """Reduce a run's panel verdicts to the figures the summary shows.

    Args:
        panel: the `Panel` that ran.
        items: the items judged (their gold labels, if any, are compared with the consensus).
        verdicts: one `PanelVerdict` per item.
        seconds: wall time of the run.
    """
    gold = {item.id: item.gold for item in items if item.gold is not None}
    critics = {c.name: CriticSummary(c.name) for c in panel.critics}
    consensus: Counter[str] = Counter()
    no_consensus = disagreements = gold_correct = gold_items = 0
    ledger = Ledger()
    unpriced: set[str] = set()
    simulated = False
    for pv in verdicts:
        if pv.consensus is None:
            no_consensus += 1
        else:
            consensus[_fmt_value(pv.consensus)] += 1
        disagreements += bool(pv.disagreement)
        truth = gold.get(pv.item_id)
        if truth is not None:
            gold_items += 1
            gold_correct += pv.consensus is not None and _same(pv.consensus, truth)
        for v in pv.verdicts:
            cs = critics.setdefault(v.critic, CriticSummary(v.critic))
            cs.calls += 1
            cs.attempts += 0 if v.cached else v.attempts
            cs.cached += bool(v.cached)
            before = ledger.unpriced_calls
            ledger.add(v)
            if ledger.unpriced_calls > before:
                unpriced.add(v.critic)
            simulated = simulated or bool(v.simulated)
            if v.failure is None:
                cs.ok += 1
                if truth is not None:
                    cs.with_gold += 1
                    cs.correct += _same(v.value, truth)
            else:
                cs.failures[str(getattr(v.failure, "value", v.failure))] += 1
    return RunSummary(
        panel=getattr(panel, "name", "panel"),
        strategy=panel.voting.strategy,
        items=len(verdicts),
        critics=list(critics.values()),
        consensus=consensus,
        no_consensus=no_consensus,
        disagreements=disagreements,
        calls=sum(c.calls for c in critics.values()),
        ledger=ledger,
        unpriced_critics=sorted(unpriced),
        seconds=seconds,
        gold_items=gold_items,
        gold_correct=gold_correct,
        simulated=simulated,
    )


def _fmt_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _same(value: Any, truth: str) -> bool:
    if isinstance(value, float):
        try:
            return value == float(truth)
        except ValueError:
            return False
    return str(value).casefold() == str(truth).casefold()


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def format_summary(s: RunSummary) -> str:
    """The end-of-run summary as plain text (what `jurybox judge` and `jurybox demo` print)."""
    sim = " (simulated vendor)" if s.simulated else ""
    lines = [
        "",
        f"Panel {s.panel!r} ({s.strategy} voting){sim}: {s.items} items, "
        f"{len(s.critics)} critics, {s.seconds:.1f} s",
    ]
    order = sorted(s.consensus.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{label} {n}" for label, n in order]
    if s.no_consensus:
        parts.append(f"no consensus {s.no_consensus}")
    lines.append("Consensus:      " + (", ".join(parts) or "none"))
    lines.append(f"Disagreements:  {s.disagreements} of {s.items} items "
                 f"({_pct(s.disagreements, s.items)})")
    if s.gold_items:
        lines.append(f"Gold agreement: consensus matches gold on {s.gold_correct} of "
                     f"{s.gold_items} items ({_pct(s.gold_correct, s.gold_items)})")
    failed = sum(sum(c.failures.values()) for c in s.critics)
    lines.append(f"Calls:          {s.calls} ({s.calls - failed} verdicts, {failed} failed)")
    lines.append(f"Sent:           {s.ledger.sent_text()}")
    cost = s.ledger.cost_text()
    if s.unpriced_critics:
        cost += f" (critics without a price: {', '.join(s.unpriced_critics)})"
    lines.append(f"Cost:           {cost}")
    rate = s.calls / s.seconds if s.seconds > 0 else 0.0
    lines.append(f"Time:           {s.seconds:.2f} s ({rate:.0f} calls/s)")
    lines.append("")
    width = max([len("critic")] + [len(c.name) for c in s.critics])
    head = f"  {'critic':<{width}}  {'ok':>5}  {'failed':>6}  {'gold acc':>8}  failures"
    lines.append(head)
    for c in s.critics:
        nfail = sum(c.failures.values())
        acc = _pct(c.correct, c.with_gold) if c.with_gold else "-"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(c.failures.items())) or "-"
        lines.append(f"  {c.name:<{width}}  {c.ok:>5}  {nfail:>6}  {acc:>8}  {kinds}")
    return "\n".join(lines)


def write_jsonl(path: pathlib.Path, verdicts: list[PanelVerdict]) -> None:
    """One JSON object per item: the vote and every critic's verdict with its evidence."""
    with path.open("w", encoding="utf-8") as fh:
        for pv in verdicts:
            row = {
                "item_id": pv.item_id,
                "consensus": pv.consensus,
                "agreement": pv.agreement,
                "disagreement": pv.disagreement,
                "failed": pv.failed,
                "counts": pv.outcome.counts,
                "strategy": pv.strategy,
                "tier": pv.tier,
                "settled_by": pv.settled_by,
                "verdicts": [v.to_dict() for v in pv.verdicts],
            }
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


if __name__ == "__main__":
    sys.exit(main())
