"""The installed package's layout, read from its sources with ``ast``:

* no import cycle between its modules, counting every import a module can run
  (those inside functions too; not those under ``if TYPE_CHECKING:``), and
  counting a package's ``__init__`` as imported with any of its modules;
* only the CLI layer (cli.py, ``__main__.py``, manpage.py, which renders
  cli.py's usage texts) imports cli.py;
* no module over 800 lines, no function over 100 lines;
* nothing imports the benchmarks (``bench/``) or the tests (``t/``).
"""

from __future__ import annotations

import ast
import os

from conftest import ROOT

PKG = "git_checkout_helper"
CLI_LAYER = {f"{PKG}.cli", f"{PKG}.__main__", f"{PKG}.manpage"}
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100


def _modules() -> dict[str, str]:
    """Dotted name -> path of every module of the package (a package as its ``__init__``)."""
    mods = {}
    for dirpath, dirnames, filenames in os.walk(ROOT / PKG):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith(".py"):
                parts = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts.pop()
                mods[".".join(parts)] = os.path.join(dirpath, f)
    return mods


MODULES = _modules()
TREES = {name: ast.parse(open(path, encoding="utf-8").read(), path) for name, path in MODULES.items()}


def _imported_names(name: str, tree: ast.Module) -> set[str]:
    """Every dotted name ``name``'s import statements can load, outside ``if TYPE_CHECKING:``."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    package = name if MODULES[name].endswith("__init__.py") else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{a.name}" for a in node.names)
    return names


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports; importing ``a.b.c`` from outside
    ``a.b`` runs ``a.b``'s ``__init__`` too (the top package's is left out)."""
    graph = {}
    for name, tree in TREES.items():
        edges = set()
        for target in _imported_names(name, tree):
            if target not in MODULES:
                continue
            parts = target.split(".")
            for i in range(2, len(parts) + 1):
                q = ".".join(parts[:i])
                if q in MODULES and q != name and not name.startswith(q + "."):
                    edges.add(q)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    graph = _import_graph()
    cycles = _cycles(graph)
    shown = ["; ".join(f"{m} -> {', '.join(sorted(w for w in graph[m] if w in c))}" for m in c) for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(shown)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_only_the_cli_layer_imports_cli():
    graph = _import_graph()
    importers = sorted(m for m, edges in graph.items() if f"{PKG}.cli" in edges and m not in CLI_LAYER)
    assert not importers, f"cli.py imported by {importers}"


def test_no_module_too_long():
    long = {name: n for name, path in MODULES.items()
            if (n := len(open(path, encoding="utf-8").read().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_too_long():
    long = {}
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{name}:{node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_nothing_imports_bench_or_tests():
    outside = {"bench", "conftest"}
    outside.update(os.path.splitext(f)[0] for f in os.listdir(ROOT / "t") if f.endswith(".py"))
    outside.update(os.path.splitext(f)[0] for f in os.listdir(ROOT / "t" / "helper") if f.endswith(".py"))
    bad = sorted(f"{name}: {target}" for name, tree in TREES.items()
                 for target in _imported_names(name, tree) if target.split(".")[0] in outside)
    assert not bad, f"the installed package imports bench/ or t/: {bad}"
