"""The README documents what the code defines: every name `judging` exports, every voting
strategy, vendor preset (and its key variable), failure kind, CLI subcommand and flag, public
agreement function and benchmark figure; and its examples work (Python blocks run, panel files
load).

The names are read from the code, so a new strategy (or preset, metric, command) fails this test
until the README mentions it. Each name is its own test case: a failure names what is missing.
A mention means the name in backticks (`` `plurality` ``, `` `krippendorff_alpha(...)` ``), so
common words like "any" or "max" in prose do not count; CLI subcommands must appear as
`jurybox NAME` and flags literally (`--concurrency`).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pathlib
import re
from types import ModuleType

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"

# Modules whose public functions are the agreement metrics (see `_metrics`).
METRIC_MODULES = ("judging.agreement", "judging.analysis.agreement_report", "judging.voting.dawid_skene")


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


# Inline code may qualify a name by its module: `judging.analysis.agreement_report.agreement_report(...)`.
_CODE_PREFIX = r"`(?:[A-Za-z_][\w.]*\.)?"


def mentions_code(text: str, name: str) -> bool:
    """True when `name` appears as inline code: `name`, `name(...)`, `name: ...`, `name=...`,
    optionally qualified by its module (`judging.analysis.agreement_report.agreement_report(...)`)."""
    return re.search(_CODE_PREFIX + re.escape(name) + r"(?=[`(:=\s])", text) is not None


def mentions_command(text: str, command: str) -> bool:
    """True when the README shows `jurybox COMMAND` (in a code span or a code block)."""
    return re.search(r"\bjurybox " + re.escape(command) + r"\b", text) is not None


def mentions_flag(text: str, flag: str) -> bool:
    """True when the flag appears as a whole word (`--out`, not just `--out-dir`)."""
    return re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", text) is not None


# -- the names, read from the code --------------------------------------------------------------


def _strategies() -> list[str]:
    voting = _optional("judging.voting.strategies")
    return list(voting.strategy_names()) if voting else []


def _presets() -> list[str]:
    vendors = _optional("judging.panel.vendors")
    return sorted(vendors.PRESETS) if vendors else []


def _public_api() -> list[str]:
    """What `judging/__init__.py` exports (`from judging import ...`)."""
    judging = _optional("judging")
    return sorted(getattr(judging, "__all__", [])) if judging else []


def _key_variables() -> list[tuple[str, str]]:
    """(preset, its default key variable) for the presets that have one."""
    vendors = _optional("judging.panel.vendors")
    if vendors is None:
        return []
    return [(name, p.key_env) for name, p in sorted(vendors.PRESETS.items()) if p.key_env]


def _failure_kinds() -> list[str]:
    from judging.verdicts import FailureKind

    return [kind.value for kind in FailureKind]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _cli() -> tuple[list[str], list[tuple[str, str]]]:
    """(subcommands, (subcommand, flag) pairs) from `judging.runs.cli.build_parser()`."""
    cli = _optional("judging.runs.cli")
    if cli is None or not hasattr(cli, "build_parser"):
        return [], []
    commands = _subparsers(cli.build_parser())
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


# -- benchmark figure names ---------------------------------------------------------------------


def _bench_names() -> list[str]:
    """Figure names printed by `bench_line("NAME", ...)` in benchmarks/bench_*.py (literal names
    only; a name built at run time cannot be read from the source)."""
    root = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
    names: set[str] = set()
    for path in sorted(root.glob("bench_*.py")):
        source = path.read_text(encoding="utf-8")
        names.update(re.findall(r"bench_line\(\s*\"([A-Za-z0-9_.:-]+)\"", source))
    return sorted(names)


BENCH_NAMES = _bench_names()
STRATEGIES = _strategies()
PUBLIC_API = _public_api()
PRESETS = _presets()
KEY_VARIABLES = _key_variables()
FAILURE_KINDS = _failure_kinds()
COMMANDS, FLAGS = _cli()
METRICS = _metrics()


# -- the tests ----------------------------------------------------------------------------------


def test_the_readme_opens_with_make_run_and_make_test() -> None:
    lines = _readme().splitlines()
    assert lines[0] == "# Jurybox"
    block = lines[lines.index("```") + 1 :]
    assert block[0].startswith("make run")
    assert block[1].startswith("make test")


@pytest.mark.parametrize(
    "module", ["judging.voting.strategies", "judging.panel.vendors", "judging.runs.cli", *METRIC_MODULES]
)
def test_every_source_of_names_exists(module: str) -> None:
    assert _optional(module) is not None, (
        f"{module} cannot be imported, so its names cannot be checked: {_IMPORT_ERRORS[module]}"
    )


def test_the_names_were_found_in_the_code() -> None:
    """Guards the parametrised tests below against passing vacuously on an empty list."""
    assert PUBLIC_API, "judging/__init__.py exports nothing (no __all__)"
    assert STRATEGIES, "no voting strategies read from judging.voting.strategies.strategy_names()"
    assert PRESETS, "no vendor presets read from judging.panel.vendors.PRESETS"
    assert FAILURE_KINDS, "no FailureKind values"
    assert COMMANDS, "no subcommands read from judging.runs.cli.build_parser()"
    assert FLAGS, "no flags read from judging.runs.cli.build_parser()"
    assert METRICS, "no public functions read from judging.agreement"
    assert BENCH_NAMES, "no bench_line names read from benchmarks/bench_*.py"


@pytest.mark.parametrize("name", PUBLIC_API)
def test_public_api_name_is_documented(name: str) -> None:
    assert mentions_code(_readme(), name), (
        f"README.md does not mention `{name}`, which `judging` exports"
    )


@pytest.mark.parametrize("name", STRATEGIES)
def test_voting_strategy_is_documented(name: str) -> None:
    assert mentions_code(_readme(), name), f"README.md does not mention voting strategy `{name}`"


@pytest.mark.parametrize("name", PRESETS)
def test_vendor_preset_is_documented(name: str) -> None:
    assert mentions_code(_readme(), name), f"README.md does not mention vendor preset `{name}`"


@pytest.mark.parametrize(("name", "variable"), KEY_VARIABLES)
def test_vendor_preset_key_variable_is_documented(name: str, variable: str) -> None:
    assert mentions_code(_readme(), variable), (
        f"README.md does not mention `{variable}`, the key variable of preset {name}"
    )


@pytest.mark.parametrize("name", PRESETS)
def test_vendor_preset_base_url_is_documented(name: str) -> None:
    from judging.panel.vendors import PRESETS as presets

    url = presets[name].base_url
    if url is not None:  # custom and simulated have none: the README says where theirs comes from
        assert url in _readme(), f"README.md does not give {url}, the base URL of preset {name}"


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_failure_kind_is_documented(kind: str) -> None:
    assert mentions_code(_readme(), kind), f"README.md does not mention failure kind `{kind}`"


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_subcommand_is_documented(command: str) -> None:
    assert mentions_command(_readme(), command), (
        f"README.md does not show the CLI subcommand `jurybox {command}`"
    )


@pytest.mark.parametrize(("command", "flag"), FLAGS, ids=[f"{c} {f}" for c, f in FLAGS])
def test_cli_flag_is_documented(command: str, flag: str) -> None:
    assert mentions_flag(_readme(), flag), (
        f"README.md does not mention {flag} of `jurybox {command}`"
    )


@pytest.mark.parametrize("name", METRICS)
def test_agreement_function_is_documented(name: str) -> None:
    assert mentions_code(_readme(), name), (
        f"README.md does not mention agreement function `{name}`"
    )


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
    ],
)
def test_the_mention_checks_tell_present_from_absent(
    check: object, text: str, name: str, expected: bool
) -> None:
    assert check(text, name) is expected  # type: ignore[operator]


def test_removing_a_name_from_the_readme_is_caught() -> None:
    """Every documented name, removed from a copy of the README, must stop being found."""
    text = _readme()
    cases = [
        (mentions_code, n)
        for n in PUBLIC_API + STRATEGIES + PRESETS + FAILURE_KINDS + METRICS + BENCH_NAMES
    ]
    cases += [(mentions_command, c) for c in COMMANDS]
    for check, name in cases:
        if not check(text, name):
            continue  # missing already: its own parametrised test reports it
        if check is mentions_command:
            stripped = re.sub(r"\bjurybox " + re.escape(name) + r"\b", "jurybox ???", text)
        else:
            stripped = re.sub(_CODE_PREFIX + re.escape(name) + r"(?=[`(:=\s])", "`???", text)
        assert not check(stripped, name), f"removing {name!r} from the README was not detected"


# -- the examples run ----------------------------------------------------------------------------


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def test_the_readme_has_python_examples() -> None:
    assert len(_python_blocks(_readme())) >= 2


@pytest.mark.parametrize("index", range(len(_python_blocks(_readme()))))
def test_readme_python_example_runs(index: int) -> None:
    """Each ```python block runs as written (the library one against the built-in simulator)."""
    code = _python_blocks(_readme())[index]
    exec(compile(code, f"README.md python block {index + 1}", "exec"), {"__name__": "readme"})


def _panel_yaml_blocks(text: str) -> list[str]:
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    return [block for block in blocks if "critics:" in block]


@pytest.mark.parametrize("index", range(len(_panel_yaml_blocks(_readme()))))
def test_readme_panel_yaml_loads(index: int) -> None:
    """Each complete panel file shown in the README is a valid panel."""
    from judging.panel.panel_files import load_panel

    panel = load_panel(_panel_yaml_blocks(_readme())[index])
    assert panel.critics


# -- benchmark figures --------------------------------------------------------------------------


@pytest.mark.parametrize("name", BENCH_NAMES)
def test_benchmark_figure_is_in_the_readme(name: str) -> None:
    assert mentions_code(_readme(), name), (
        f"README.md's Figures table does not list the benchmark figure `{name}`"
    )
