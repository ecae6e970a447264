"""The house keeps its one-way arrows: no import circle between files, storage sees only the
leaf types of judging, the domain never reaches up to orchestration or storage, and imports
inside functions do not hide any of it.

Walks every module of app.py, pages/, judging/ and storage/ with `ast`. Imports under
`if TYPE_CHECKING:` count like any other: a circle hidden from the interpreter is still one a
reader has to untangle.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOPS = ("app.py", "pages", "judging", "storage")
# What storage may take from judging: plain types, the error tree, and the pure hashing of
# the review record (stdlib only: storage seals rows with it in their own transaction).
LEAVES = {"judging.verdicts", "judging.errors", "judging.run_status", "judging.analysis.hash_chain"}
ORCHESTRATION = "judging.runs"


def _modules(root: pathlib.Path) -> dict[str, pathlib.Path]:
    found = {}
    for top in TOPS:
        path = root / top
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for file in files:
            parts = list(file.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = file
    return found


def _resolve(name: str, modules: dict[str, pathlib.Path]) -> str | None:
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, modules: dict[str, pathlib.Path]) -> None:
        self.module, self.is_package, self.modules = module, is_package, modules
        self.targets: set[str] = set()
        self.inside_functions: list[str] = []
        self._depth = 0

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def _add(self, target: str | None) -> None:
        if target is None or target == self.module:
            return
        self.targets.add(target)
        if self._depth:
            self.inside_functions.append(target)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(_resolve(alias.name, self.modules))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([base] if base else []))
        for alias in node.names:
            full = f"{base}.{alias.name}" if base else alias.name
            self._add(_resolve(full, self.modules) if full in self.modules
                      else _resolve(base, self.modules))


def import_graph(root: pathlib.Path = ROOT) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """(module -> modules it imports, module -> modules it imports inside functions)."""
    modules = _modules(root)
    graph, inner = {}, {}
    for module, path in modules.items():
        visitor = _Imports(module, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
        # A package's face re-exporting its own submodules is not a circle of files.
        graph[module] = {t for t in visitor.targets
                         if not (path.name == "__init__.py" and t.startswith(module + "."))}
        if visitor.inside_functions:
            inner[module] = visitor.inside_functions
    return graph, inner


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


GRAPH, INNER = import_graph()


def test_no_import_circle_between_files() -> None:
    assert cycles(GRAPH) == [], "import circles: " + "; ".join(
        " <-> ".join(c) for c in cycles(GRAPH))


def test_storage_takes_only_the_leaf_types_from_judging() -> None:
    wrong = {m: sorted(t for t in targets if t.startswith("judging") and t not in LEAVES)
             for m, targets in GRAPH.items() if m.startswith("storage")}
    assert not {m: t for m, t in wrong.items() if t}


def test_the_domain_never_reaches_up_to_orchestration_storage_or_pages() -> None:
    domain = [m for m in GRAPH if m.startswith("judging") and not m.startswith(ORCHESTRATION)]
    wrong = {m: sorted(t for t in GRAPH[m]
                       if t.startswith((ORCHESTRATION, "storage", "pages", "app")))
             for m in domain}
    assert not {m: t for m, t in wrong.items() if t}


def test_importing_the_domain_does_not_load_orchestration() -> None:
    assert not any(t.startswith(ORCHESTRATION) for t in GRAPH["judging"])


def test_no_project_import_hides_inside_a_function() -> None:
    assert INNER == {}, f"imports inside functions: {INNER}"


SQL_CALLS = {"execute", "executemany", "executescript", "query"}


def sql_outside_storage(root: pathlib.Path = ROOT) -> list[str]:
    """Where code outside `storage` imports sqlite3 or calls a database's execute/query: the
    seam a second storage backend (Postgres) would be swapped in at."""
    found = []
    for module, path in _modules(root).items():
        if module.startswith("storage"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in SQL_CALLS:
                found.append(f"{module}:{node.lineno} .{node.func.attr}()")
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                found += [f"{module}:{node.lineno} import {n}" for n in names
                          if n.split(".")[0] == "sqlite3"]
    return found


def test_only_storage_speaks_sql() -> None:
    assert sql_outside_storage() == []


def test_the_sql_check_finds_sql_outside_storage(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "storage").mkdir()
    (tmp_path / "pages" / "p.py").write_text(
        "import sqlite3\n\ndef f(db):\n    return db.execute('SELECT 1')\n")
    (tmp_path / "storage" / "s.py").write_text("def g(db):\n    db.query('SELECT 1')\n")
    assert sql_outside_storage(tmp_path) == ["pages.p:1 import sqlite3", "pages.p:4 .execute()"]


def test_the_walk_finds_a_circle_when_there_is_one(tmp_path: pathlib.Path) -> None:
    # The checks above must be able to fail: a made-up house with a circle through a function.
    (tmp_path / "judging").mkdir()
    (tmp_path / "storage").mkdir()
    (tmp_path / "judging" / "__init__.py").write_text("")
    (tmp_path / "storage" / "__init__.py").write_text("")
    (tmp_path / "judging" / "a.py").write_text("from judging.b import x\n")
    (tmp_path / "judging" / "b.py").write_text("def f():\n    from judging.a import y\n")
    (tmp_path / "judging" / "c.py").write_text("from judging.d import x\n")
    (tmp_path / "judging" / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from judging.c import z\n")
    graph, inner = import_graph(tmp_path)
    # A circle through a type-only import is a circle: a reader still has to untangle it.
    assert cycles(graph) == [["judging.a", "judging.b"], ["judging.c", "judging.d"]]
    assert inner == {"judging.b": ["judging.a"]}


# Which capability package may import which (besides itself and the leaves): the docstring of
# each package says the same. A new arrow upward is a design change, made here on purpose.
LEAF_MODULES = {"judging.errors", "judging.verdicts", "judging.scales", "judging.known_fields",
                "judging.run_status"}
MAY_IMPORT = {
    "judging.agreement": set(),
    "judging.voting": {"judging.agreement"},
    "judging.panel": {"judging.voting"},
    "judging.simulator": {"judging.demo"},
    "judging.demo": {"judging.simulator", "judging.panel"},
    "judging.engine": {"judging.panel", "judging.voting", "judging.simulator"},
    "judging.analysis": {"judging.agreement", "judging.voting", "judging.panel"},
}


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_each_capability_imports_only_what_its_docstring_allows(package: str) -> None:
    allowed = MAY_IMPORT[package] | {package}
    wrong = {m: sorted(t for t in GRAPH[m] if t.startswith("judging.")
                       and t not in LEAF_MODULES and _package(t) not in allowed)
             for m in GRAPH if _package(m) == package}
    assert not {m: t for m, t in wrong.items() if t}


def test_the_leaves_import_no_other_part_of_judging() -> None:
    wrong = {m: sorted(t for t in GRAPH[m] if t.startswith("judging.") and t not in LEAF_MODULES)
             for m in LEAF_MODULES}
    assert not {m: t for m, t in wrong.items() if t}


def test_judging_holds_only_leaves_and_capability_packages() -> None:
    top = {_package(m) for m in GRAPH if m.startswith("judging.")}
    assert top <= LEAF_MODULES | set(MAY_IMPORT) | {"judging.runs"}, top - LEAF_MODULES - set(
        MAY_IMPORT)


def test_module_names_are_unique_across_the_tree() -> None:
    names = [path.stem for path in _modules(ROOT).values() if path.stem != "__init__"]
    names += [path.stem for path in (ROOT / "benchmarks").glob("*.py")
              if path.stem != "__init__"]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_importing_judging_loads_neither_the_simulator_nor_pandas_nor_the_engine() -> None:
    import subprocess
    import sys

    # `import judging` alone loads no part of it; the panel model, as a notebook would use it,
    # loads no engine, no HTTP client, no simulator and no pandas (the statistics import it
    # when they run).
    code = ("import sys, judging; first = set(sys.modules); "
            "assert not [m for m in first if m.startswith(('judging.', 'pandas', 'pyarrow', "
            "'httpx', 'http.server', 'pydantic'))], sorted(first); "
            "from judging import Panel, Critic, Scale, load_panel; "
            "assert not [m for m in sys.modules if m.startswith(('judging.simulator', "
            "'judging.engine', 'httpx', 'http.server', 'pandas', 'pyarrow'))], sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@pytest.mark.parametrize("module", ["judging", "storage"])
def test_the_packages_import_cleanly_on_their_own(module: str) -> None:
    import subprocess
    import sys

    code = (f"import sys; import {module}; "
            f"assert not any(m.startswith('judging.runs') for m in sys.modules), "
            f"sorted(m for m in sys.modules if m.startswith('judging.runs'))")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
