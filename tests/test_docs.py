"""The manual in docs/ documents what the code defines, and its examples run.

Names are read from the code, so a new strategy (or preset, metric, command, flag, panel field,
benchmark figure) fails this test until docs/ mentions it: every name `judging` exports, every
panel field, voting strategy, vendor preset (its key variable and base URL), failure kind, CLI
subcommand and flag, public agreement function, and every benchmark figure (on the benchmarks
page). Each name is its own test case: a failure names what is missing and where it belongs.

A mention means the name in backticks (`` `plurality` ``, `` `krippendorff_alpha(...)` ``), so
common words like "any" or "max" in prose do not count; CLI subcommands must appear as
`jurybox NAME` and flags literally (`--concurrency`). The CLI's reference section is generated
from the parser at build time (docs/hooks/cli_reference.py) and is not in the page's source:
commands and flags must be explained in the hand-written guide too.

Examples: a code block marked `title="runs"` runs (Python as written; `sh` line by line with
the `jurybox` command, beside the files the same page shows), against the built-in simulator
on 127.0.0.1. Every YAML block holding `critics:` loads as a panel. README.md stays short.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tomllib
import typing
from types import ModuleType

import pydantic
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
BENCH_PAGE = DOCS / "benchmarks.md"
CLI_PAGE = DOCS / "cli.md"
LAYOUT_PAGE = DOCS / "layout.md"
README_MAX_LINES = 150

# Modules whose public functions are the agreement metrics (see `_metrics`).
METRIC_MODULES = ("judging.agreement", "judging.analysis.agreement_report",
                  "judging.voting.dawid_skene")


def _pages() -> dict[str, str]:
    """Every Markdown page of docs/, by its path relative to docs/."""
    return {
        path.relative_to(DOCS).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(DOCS.rglob("*.md"))
    }


def _docs() -> str:
    return "\n".join(_pages().values())


def _readme() -> str:
    return README.read_text(encoding="utf-8")


_IMPORT_ERRORS: dict[str, str] = {}


def _optional(module: str) -> ModuleType | None:
    """The module, or None if it cannot be imported: collection must not crash on one broken
    module (every docs test would vanish); `test_every_source_of_names_exists` reports why."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        _IMPORT_ERRORS[module] = f"{type(error).__name__}: {error}"
        return None


def _cli_reference() -> ModuleType:
    """docs/hooks/cli_reference.py, the MkDocs hook that writes the CLI reference."""
    path = DOCS / "hooks" / "cli_reference.py"
    spec = importlib.util.spec_from_file_location("cli_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Inline code may qualify a name by its module: `judging.analysis.agreement_report.agreement_report(...)`.
_CODE_PREFIX = r"`(?:[A-Za-z_][\w.]*\.)?"


def mentions_code(text: str, name: str) -> bool:
    """True when `name` appears as inline code: `name`, `name(...)`, `name: ...`, `name=...`,
    optionally qualified by its module (`judging.analysis.agreement_report.agreement_report(...)`)."""
    return re.search(_CODE_PREFIX + re.escape(name) + r"(?=[`(:=\s])", text) is not None


def mentions_field(text: str, name: str) -> bool:
    """True when a panel field appears in code: inside an inline code span
    (`` `Scale(kind=..., labels=[...])` ``) or as a key of a YAML block (`settle: unanimous`,
    `{id: answers, weight: 2}`)."""
    word = r"(?<![\w-])" + re.escape(name) + r"(?![\w-])"
    spans = re.findall(r"`([^`\n]+)`", text)
    if any(re.search(word, span) for span in spans):
        return True
    yaml_blocks = [body for lang, _, body in _blocks(text) if lang == "yaml"]
    return any(re.search(word + r":\s", body) for body in yaml_blocks)


def mentions_command(text: str, command: str) -> bool:
    """True when the text shows `jurybox COMMAND` (in a code span or a code block)."""
    return re.search(r"\bjurybox " + re.escape(command) + r"\b", text) is not None


def mentions_flag(text: str, flag: str) -> bool:
    """True when the flag appears as a whole word (`--out`, not just `--out-dir`)."""
    return re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", text) is not None


# -- the names, read from the code --------------------------------------------------------------


def _strategies() -> list[str]:
    judging = _optional("judging")
    return list(judging.strategy_names()) if judging else []


def _presets() -> list[str]:
    judging = _optional("judging")
    return sorted(judging.PRESETS) if judging else []


def _public_api() -> list[str]:
    """What `judging/__init__.py` exports (`from judging import ...`)."""
    judging = _optional("judging")
    return sorted(getattr(judging, "__all__", [])) if judging else []


def _key_variables() -> list[tuple[str, str]]:
    """(preset, its default key variable) for the presets that have one."""
    judging = _optional("judging")
    if judging is None:
        return []
    return [(name, p.key_env) for name, p in sorted(judging.PRESETS.items()) if p.key_env]


def _failure_kinds() -> list[str]:
    judging = _optional("judging")
    return [kind.value for kind in judging.FailureKind] if judging else []


def _models_in(annotation: object) -> list[type[pydantic.BaseModel]]:
    """The pydantic models a field's type holds (`Scale`, `list[Critic]`, `dict[str, X]`)."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _panel_fields() -> list[tuple[str, str]]:
    """(dotted path, field name) of every field of a panel, its parts' fields included
    (`critics.temperature`, `rubric.criteria.weight`), read from the `Panel` model."""
    judging = _optional("judging")
    if judging is None:
        return []
    fields: list[tuple[str, str]] = []

    def walk(model: type[pydantic.BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            path = f"{prefix}{name}"
            fields.append((path, name))
            for part in _models_in(info.annotation):
                walk(part, path + ".")

    walk(judging.Panel, "")
    return fields


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _console_module() -> str:
    """The module the `jurybox` console script runs (pyproject.toml [project.scripts])."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return str(project["project"]["scripts"]["jurybox"]).partition(":")[0]


def _parser() -> argparse.ArgumentParser | None:
    cli = _optional(_console_module())
    if cli is None or not hasattr(cli, "build_parser"):
        return None
    parser: argparse.ArgumentParser = cli.build_parser()
    return parser


def _cli() -> tuple[list[str], list[tuple[str, str]]]:
    """(subcommands, (subcommand, flag) pairs) from the console script's `build_parser()`."""
    parser = _parser()
    if parser is None:
        return [], []
    commands = _subparsers(parser)
    flags = [
        (name, option)
        for name, sub in commands.items()
        for action in sub._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    ]
    return sorted(commands), flags


def _metrics() -> list[str]:
    """Public functions of the agreement modules: their `__all__` when they have one, else every
    function defined in the module (or its package) whose name does not start with "_"."""
    names: list[str] = []
    for module_name in METRIC_MODULES:
        module = _optional(module_name)
        if module is None:
            continue
        exported = getattr(module, "__all__", None)
        candidates = exported if exported is not None else list(vars(module))
        for name in candidates:
            obj = getattr(module, name, None)
            if name.startswith("_") or not inspect.isfunction(obj):
                continue
            home = obj.__module__
            if exported is None and home != module_name and not home.startswith(module_name + "."):
                continue  # imported from elsewhere, documented there
            names.append(name)
    return sorted(set(names))


def _bench_names() -> list[str]:
    """Figure names printed by `bench_line("NAME", ...)` in benchmarks/bench_*.py (literal names
    only; a name built at run time cannot be read from the source)."""
    names: set[str] = set()
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        source = path.read_text(encoding="utf-8")
        names.update(re.findall(r"bench_line\(\s*\"([A-Za-z0-9_.:-]+)\"", source))
    return sorted(names)


BENCH_NAMES = _bench_names()
STRATEGIES = _strategies()
PUBLIC_API = _public_api()
PRESETS = _presets()
KEY_VARIABLES = _key_variables()
FAILURE_KINDS = _failure_kinds()
PANEL_FIELDS = _panel_fields()
COMMANDS, FLAGS = _cli()
METRICS = _metrics()


# -- the README: short, true, runnable -----------------------------------------------------------


def test_the_readme_opens_with_make_run_and_make_test() -> None:
    lines = _readme().splitlines()
    assert lines[0] == "# Jurybox"
    block = lines[lines.index("```") + 1 :]
    assert block[0].startswith("make run")
    assert block[1].startswith("make test")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("run", "test"):
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), f"make {target} is gone"


def test_the_readme_is_short() -> None:
    n = len(_readme().splitlines())
    assert n <= README_MAX_LINES, (
        f"README.md has {n} lines; keep it to {README_MAX_LINES} and move the rest into docs/"
    )


def test_the_readme_links_to_files_that_exist() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", _readme())
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local), "README.md links to no docs page"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


# -- the manual's shape --------------------------------------------------------------------------


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for entry in nav for page in _nav_pages(entry)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    pages = set(_pages())
    assert sorted(set(nav) - pages) == [], "mkdocs.yml names pages that do not exist"
    assert sorted(pages - set(nav)) == [], "docs/ pages missing from mkdocs.yml's nav"


def test_the_layout_table_names_files_that_exist() -> None:
    """The layout page's "where each feature lives" table points at real files: a moved module
    fails here until its row is updated."""
    text = LAYOUT_PAGE.read_text(encoding="utf-8")
    table = text[text.index("## Where each feature lives") :]
    paths = {p for p in re.findall(r"`([\w./*-]+)`", table) if "/" in p or p.endswith(".py")}
    assert len(paths) > 20, "the layout table names too few files to be the map"
    missing = sorted(p for p in paths if not list(ROOT.glob(p)))
    assert not missing, f"docs/layout.md names paths that do not exist: {missing}"


# -- the names are documented -------------------------------------------------------------------


@pytest.mark.parametrize("module", ["judging", *METRIC_MODULES])
def test_every_source_of_names_exists(module: str) -> None:
    assert _optional(module) is not None, (
        f"{module} cannot be imported, so its names cannot be checked: {_IMPORT_ERRORS[module]}"
    )


def test_the_cli_parser_is_found() -> None:
    assert _parser() is not None, (
        f"{_console_module()} (pyproject's jurybox script) has no build_parser(): "
        f"{_IMPORT_ERRORS.get(_console_module(), '')}"
    )


def test_the_names_were_found_in_the_code() -> None:
    """Guards the parametrised tests below against passing vacuously on an empty list."""
    assert PUBLIC_API, "judging/__init__.py exports nothing (no __all__)"
    assert STRATEGIES, "no voting strategies read from judging.strategy_names()"
    assert PRESETS, "no vendor presets read from judging.PRESETS"
    assert FAILURE_KINDS, "no FailureKind values"
    assert len(PANEL_FIELDS) > 50, "too few panel fields read from judging.Panel"
    assert COMMANDS, "no subcommands read from the CLI's build_parser()"
    assert FLAGS, "no flags read from the CLI's build_parser()"
    assert METRICS, "no public functions read from judging.agreement"
    assert BENCH_NAMES, "no bench_line names read from benchmarks/bench_*.py"


@pytest.mark.parametrize("name", PUBLIC_API)
def test_public_api_name_is_documented(name: str) -> None:
    assert mentions_code(_docs(), name), f"docs/ does not mention `{name}`, which `judging` exports"


@pytest.mark.parametrize(("path", "name"), PANEL_FIELDS, ids=[p for p, _ in PANEL_FIELDS])
def test_panel_field_is_documented(path: str, name: str) -> None:
    assert mentions_field(_docs(), name), (
        f"docs/ does not mention the panel field `{name}` ({path}); "
        f"document it on its page under docs/panels/"
    )


@pytest.mark.parametrize("name", STRATEGIES)
def test_voting_strategy_is_documented(name: str) -> None:
    assert mentions_code(_pages()["panels/voting.md"], name), (
        f"docs/panels/voting.md does not list voting strategy `{name}`"
    )


@pytest.mark.parametrize("name", PRESETS)
def test_vendor_preset_is_documented(name: str) -> None:
    assert mentions_code(_pages()["vendors.md"], name), (
        f"docs/vendors.md does not mention vendor preset `{name}`"
    )


@pytest.mark.parametrize(("name", "variable"), KEY_VARIABLES)
def test_vendor_preset_key_variable_is_documented(name: str, variable: str) -> None:
    assert mentions_code(_pages()["vendors.md"], variable), (
        f"docs/vendors.md does not mention `{variable}`, the key variable of preset {name}"
    )


@pytest.mark.parametrize("name", PRESETS)
def test_vendor_preset_base_url_is_documented(name: str) -> None:
    from judging import PRESETS as presets

    url = presets[name].base_url
    if url is not None:  # custom and simulated have none: the page says where theirs comes from
        assert url in _pages()["vendors.md"], (
            f"docs/vendors.md does not give {url}, the base URL of preset {name}"
        )


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_failure_kind_is_documented(kind: str) -> None:
    assert mentions_code(_pages()["calls.md"], kind), (
        f"docs/calls.md's failure table does not mention failure kind `{kind}`"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_subcommand_is_documented(command: str) -> None:
    assert mentions_command(_docs(), command), (
        f"docs/ does not show the CLI subcommand `jurybox {command}` (add it to the guide in "
        f"docs/cli.md; the reference part is generated)"
    )


@pytest.mark.parametrize(("command", "flag"), FLAGS, ids=[f"{c} {f}" for c, f in FLAGS])
def test_cli_flag_is_documented(command: str, flag: str) -> None:
    assert mentions_flag(_docs(), flag), (
        f"docs/ does not mention {flag} of `jurybox {command}` (add it to the guide in docs/cli.md)"
    )


@pytest.mark.parametrize("name", METRICS)
def test_agreement_function_is_documented(name: str) -> None:
    assert mentions_code(_docs(), name), f"docs/ does not mention agreement function `{name}`"


@pytest.mark.parametrize("name", BENCH_NAMES)
def test_benchmark_figure_is_on_the_benchmarks_page(name: str) -> None:
    assert mentions_code(BENCH_PAGE.read_text(encoding="utf-8"), name), (
        f"docs/benchmarks.md does not list the benchmark figure `{name}` (its value and command)"
    )


# -- the generated CLI reference -----------------------------------------------------------------


def test_the_cli_page_holds_the_reference_marker_once() -> None:
    marker = _cli_reference().MARKER
    assert CLI_PAGE.read_text(encoding="utf-8").count(marker) == 1


def test_the_generated_reference_has_every_command_and_argument() -> None:
    hook = _cli_reference()
    parser = _parser()
    assert parser is not None
    page = hook.on_page_markdown(CLI_PAGE.read_text(encoding="utf-8"))
    assert hook.MARKER not in page
    for name, sub in _subparsers(parser).items():
        section = page.split(f"### `jurybox {name}`\n", 1)
        assert len(section) == 2, f"the generated reference has no section for jurybox {name}"
        body = section[1].split("\n### ", 1)[0]
        assert f"usage: jurybox {name}" in body
        for action in hook.arguments(sub):
            shown = action.option_strings[0] if action.option_strings else (action.metavar or action.dest)
            assert f"`{shown}" in body, f"jurybox {name}: {shown} is missing from its reference"


def test_every_cli_argument_has_a_help_text() -> None:
    """The generated reference explains an argument by its help text: none may be empty."""
    hook = _cli_reference()
    parser = _parser()
    assert parser is not None
    silent = [
        f"jurybox {name} {(action.option_strings or [action.dest])[0]}"
        for name, sub in _subparsers(parser).items()
        for action in hook.arguments(sub)
        if not hook.help_of(sub, action).strip()
    ]
    assert not silent, f"arguments without a help= text: {silent}"
    for name, (help_text, _) in hook.subcommands(parser).items():
        assert help_text.strip(), f"jurybox {name} has no help= text"


# -- the checks themselves must be able to fail --------------------------------------------------


@pytest.mark.parametrize(
    ("check", "text", "name", "expected"),
    [
        (mentions_code, "use `plurality` voting", "plurality", True),
        (mentions_code, "call `krippendorff_alpha(data)`", "krippendorff_alpha", True),
        (mentions_code, "plurality voting, unquoted", "plurality", False),
        (mentions_code, "`weighted-mean` only", "weighted", False),
        (mentions_code, "`mean-variance` only", "mean", False),
        (mentions_code, "see `judging.analysis.agreement_report.agreement_report(...)`", "agreement_report", True),
        (mentions_code, "see `judging.analysis.agreement_report.agreement_reports`", "agreement_report", False),
        (mentions_command, "run `jurybox demo --limit 5`", "demo", True),
        (mentions_command, "run `jurybox demos`", "demo", False),
        (mentions_flag, "use --out FILE", "--out", True),
        (mentions_flag, "use --output FILE", "--out", False),
        (mentions_field, "`Scale(kind=..., labels=[...])`", "labels", True),
        (mentions_field, "```yaml\ncascade:\n  settle: unanimous\n```\n", "settle", True),
        (mentions_field, "the labels of the scale", "labels", False),
        (mentions_field, "`first_labels` only", "labels", False),
        (mentions_field, "```python\nsettle: int = 1\n```\n", "settle", False),
    ],
)
def test_the_mention_checks_tell_present_from_absent(
    check: object, text: str, name: str, expected: bool
) -> None:
    assert check(text, name) is expected  # type: ignore[operator]


def test_removing_a_name_from_the_docs_is_caught() -> None:
    """Every documented name, removed from a copy of the manual, must stop being found."""
    text = _docs()
    cases = [
        (mentions_code, n) for n in PUBLIC_API + STRATEGIES + PRESETS + FAILURE_KINDS + METRICS
    ]
    cases += [(mentions_command, c) for c in COMMANDS]
    for check, name in cases:
        if not check(text, name):
            continue  # missing already: its own parametrised test reports it
        if check is mentions_command:
            stripped = re.sub(r"\bjurybox " + re.escape(name) + r"\b", "jurybox ???", text)
        else:
            stripped = re.sub(_CODE_PREFIX + re.escape(name) + r"(?=[`(:=\s])", "`???", text)
        assert not check(stripped, name), f"removing {name!r} from the docs was not detected"


# -- the examples run ----------------------------------------------------------------------------

# A fenced block at the start of a line: ```LANG INFO ... ```. INFO may carry title="...".
_BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
RUNS = 'title="runs"'


def _blocks(text: str) -> list[tuple[str, str, str]]:
    """(language, info string, body) of every fenced block starting at a line's beginning."""
    return [(lang, info.strip(), body) for lang, info, body in _BLOCK.findall(text)]


def _sources() -> dict[str, str]:
    return {"README.md": _readme(), **{f"docs/{name}": text for name, text in _pages().items()}}


def _runnable(language: str) -> list[tuple[str, int, str]]:
    """(file, index within the file, body) of every block in `language` marked to run."""
    found = []
    for source, text in _sources().items():
        marked = [body for lang, info, body in _blocks(text) if lang == language and RUNS in info]
        found += [(source, index, body) for index, body in enumerate(marked)]
    return found


PYTHON_EXAMPLES = _runnable("python")
SHELL_EXAMPLES = _runnable("sh")


def test_the_marked_examples_were_found() -> None:
    assert len(PYTHON_EXAMPLES) >= 5, "fewer than 5 runnable Python examples found"
    assert any(source == "README.md" for source, _, _ in PYTHON_EXAMPLES), (
        "README.md's library example is not marked to run"
    )
    assert SHELL_EXAMPLES, "no runnable shell example found (the tutorial has one)"


def test_the_readme_library_example_is_about_20_lines() -> None:
    body = next(b for s, _, b in PYTHON_EXAMPLES if s == "README.md")
    assert len(body.splitlines()) <= 24


@pytest.mark.parametrize(
    ("source", "index", "code"), PYTHON_EXAMPLES, ids=[f"{s}#{i + 1}" for s, i, _ in PYTHON_EXAMPLES]
)
def test_python_example_runs(
    source: str, index: int, code: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each marked Python block runs as written (the library against the built-in simulator)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JURYBOX_DB", str(tmp_path / "jurybox.db"))
    exec(compile(code, f"{source} python block {index + 1}", "exec"), {"__name__": "docs_example"})


def _page_files(text: str) -> dict[str, str]:
    """The files a page shows as blocks titled with a file name: title="panel.yaml"."""
    files = {}
    for _, info, body in _blocks(text):
        match = re.search(r'title="([^"]+)"', info)
        if match and match.group(1) != "runs":
            files[match.group(1)] = body
    return files


def _command_lines(script: str) -> list[list[str]]:
    commands = []
    for line in script.splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            commands.append(argv)
    return commands


# Runs each command of a block in turn in ONE fresh interpreter (an import of the CLI per line
# would cost seconds each on a loaded machine), as the console script would: main(argv). Stops
# at the first command that does not exit 0 and exits with its code.
_LAUNCHER = """
import json, sys
from {module} import main
for argv in json.loads(sys.argv[1]):
    print("$ jurybox " + " ".join(argv), flush=True)
    code = main(argv)
    if code:
        sys.exit(code)
"""


@pytest.mark.parametrize(
    ("source", "index", "script"), SHELL_EXAMPLES, ids=[f"{s}#{i + 1}" for s, i, _ in SHELL_EXAMPLES]
)
def test_shell_example_runs(source: str, index: int, script: str, tmp_path: pathlib.Path) -> None:
    """Each marked shell block runs line by line with the `jurybox` command, in a folder with
    the files its page shows and a fresh database; every command exits 0."""
    for name, body in _page_files(_sources()[source]).items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    commands = _command_lines(script)
    for argv in commands:
        assert argv[0] in ("jurybox", ".venv/bin/jurybox"), (
            f"{source}: a runnable shell block may only run jurybox, not {argv[0]}"
        )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(JURYBOX_DB=str(tmp_path / "jurybox.db"), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER.format(module=_console_module()),
         json.dumps([argv[1:] for argv in commands])],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, (
        f"{source} shell block {index + 1} stopped (exit {done.returncode}):\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    assert done.stdout.count("$ jurybox ") == len(commands)


def _panel_yaml_blocks() -> list[tuple[str, str]]:
    return [
        (source, body)
        for source, text in _sources().items()
        for lang, _, body in _blocks(text)
        if lang == "yaml" and "critics:" in body
    ]


PANEL_YAML = _panel_yaml_blocks()


@pytest.mark.parametrize(
    ("source", "text"), PANEL_YAML, ids=[f"{s}#{i + 1}" for i, (s, _) in enumerate(PANEL_YAML)]
)
def test_panel_yaml_loads(source: str, text: str) -> None:
    """Each complete panel file shown in the manual is a valid panel."""
    from judging import load_panel

    panel = load_panel(text)
    assert panel.critics, source
