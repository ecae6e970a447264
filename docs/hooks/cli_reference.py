"""MkDocs hook: the command reference of `docs/cli.md`, written from the argparse parser.

`docs/cli.md` holds the hand-written guide and one marker line, `<!-- cli-reference -->`. At
build time (`mkdocs build`, run by `make lint`) this hook replaces the marker with one section
per `jurybox` subcommand: its help, its usage line and a table of its arguments, read from the
parser the `jurybox` console script builds. Nothing is copied by hand, so the reference cannot
drift from the parser; `tests/test_docs.py` renders it too and checks that every flag has a help
text (a flag without one would be listed here but explained nowhere).

The parser is found through `[project.scripts] jurybox` in pyproject.toml (`module:main`, whose
module defines `build_parser()`), so moving the CLI module only needs that line changed.
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import tomllib
from typing import Any

MARKER = "<!-- cli-reference -->"
ROOT = pathlib.Path(__file__).resolve().parents[2]
# A fixed width: usage lines must not depend on the terminal that runs the build.
USAGE_WIDTH = 80


def build_parser() -> argparse.ArgumentParser:
    """The `jurybox` parser, from the module the console script names in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    target = project["project"]["scripts"]["jurybox"]
    module = importlib.import_module(target.partition(":")[0])
    parser: argparse.ArgumentParser = module.build_parser()
    return parser


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand's name -> (its one-line help, its parser), in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return {name: (helps.get(name, ""), sub) for name, sub in action.choices.items()}
    return {}


def usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(prog=parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes escaped, backticks kept as code."""
    return " ".join(text.split()).replace("|", "\\|")


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        # A flag that takes a value shows its metavar, as --help does: `--out OUT`.
        value = f" {action.metavar or action.dest.upper()}" if action.nargs != 0 else ""
        return ", ".join(f"`{name}{value}`" for name in action.option_strings)
    return f"`{action.metavar or action.dest}`"


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS) or action.required:
        return ""
    if isinstance(action.default, list | tuple) and not action.default:
        return ""
    return f"`{action.default}`"


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a user passes (`--help` left out)."""
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def help_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The argument's help as --help prints it (`%(default)s` filled in, `%%` read as `%`)."""
    if not action.help:
        return ""
    return argparse.HelpFormatter(prog=parser.prog)._expand_help(action)


def render(parser: argparse.ArgumentParser) -> str:
    """The reference as Markdown: one `### jurybox NAME` section per subcommand."""
    parts: list[str] = []
    for name, (help_text, sub) in subcommands(parser).items():
        parts.append(f"### `jurybox {name}`\n")
        description = sub.description or help_text
        if description:
            parts.append(_cell(description) + "\n")
        parts.append(f"```\n{usage(sub)}\n```\n")
        rows = [
            f"| {_argument(a)} | {'yes' if a.required else ''} | {_default(a)} | {_cell(help_of(sub, a))} |"
            for a in arguments(sub)
        ]
        if rows:
            parts.append("| argument | required | default | what it does |\n|---|---|---|---|")
            parts.append("\n".join(rows) + "\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs event: fill the marker of the page that holds one."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render(build_parser()))
