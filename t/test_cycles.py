"""The coordinator runs without the cyclic collector (cli.py), so a reference
cycle lives, with all it holds, to the end of the process: a recursive
closure is one (the function holds the cell that holds the function). The
tree walk's kept the flattened tree's dictionaries of a 100,000-file
checkout to its end. None is left in the package, and the walks, cache-tree
and attribute lookups made under ``gc.disable()`` leave nothing for the
collector."""

from __future__ import annotations

import ast
import gc
import random
import subprocess

import pytest
from conftest import ROOT, git

from git_checkout_helper.attributes import AttributeStack
from git_checkout_helper.cachetree import CacheTree
from git_checkout_helper.index import Entry, build_cache_tree
from git_checkout_helper.repository import Repository
from git_checkout_helper.sparse_index import _cache_tree_update, collapse_cache_tree


def _recursive_closures(tree: ast.AST) -> list[str]:
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(fn):
                if inner is not fn and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    name = getattr(inner, "name", None)
                    if name and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(inner)):
                        out.append(f"{fn.name}.{name}")
    return out


def test_no_recursive_closure_in_the_package():
    found = [f"{p.relative_to(ROOT)}: {name}" for p in sorted((ROOT / "git_checkout_helper").rglob("*.py"))
             for name in _recursive_closures(ast.parse(p.read_text()))]
    assert found == []


def test_the_finder_finds_one():
    src = "def f(t):\n    def walk(n):\n        return [walk(s) for s in n]\n    return walk(t)\n"
    assert _recursive_closures(ast.parse(src)) == ["f.walk"]


@pytest.fixture
def no_collector():
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def test_a_tree_walk_leaves_no_cycle(tmp_path, no_collector):
    src = tmp_path / "src"
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    for i in range(30):
        d = src / f"d{i % 5}" / f"e{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}").write_text(f"{i}\n")
    (src / "d0" / ".gitattributes").write_text("*.txt text\n")
    git(src, "add", ".")
    git(src, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "x")
    r = Repository.open(str(src), {})
    try:
        tree = r.tree_of(r.resolve("HEAD")[0])
        assert (len(tree.files), len(tree.trees), list(tree.attributes)) == (31, 21, [b"d0/.gitattributes"])
        r.release_tree(tree, trees=True)
    finally:
        r.close()
    assert gc.collect() == 0


def test_cache_trees_leave_no_cycle(no_collector):
    rng = random.Random(5)
    names = sorted({b"/".join(b"d%d" % rng.randrange(3) for _ in range(rng.randrange(1, 4))) + b"/f%d" % i
                    for i in range(60)})
    entries = [Entry(n, 0o100644, rng.randbytes(20)) for n in names]
    trees = _cache_tree_update(entries, "sha1", None)
    data = build_cache_tree(trees, {b"d1"})
    root = CacheTree.parse(data, 20)
    assert root.serialize() == data and root.count == 60
    assert sorted((n.name, n.count) for n in root.subs)[1] == (b"d1", -1)
    sparse = [e for e in entries if not e.name.startswith(b"d2/")]
    sparse.append(Entry(b"d2/", 0o040000, trees[b"d2"][0]))
    assert CacheTree.parse(collapse_cache_tree(data, sparse, 20), 20).subs
    del root, trees
    assert gc.collect() == 0


def test_attribute_macros_leave_no_cycle(no_collector):
    root = b"[attr]mine text eol=crlf\n[attr]both mine -diff\n*.c both\n*.h mine\n"
    stack = AttributeStack(lambda d: root if d == b"" else None, lambda d: d == b"")
    gc.collect()  # (the stack itself may be one: it lasts the checkout)
    assert [stack.check(p).get(b"eol") for p in (b"src/a.c", b"b.h", b"c/d/e.c")] == [b"crlf"] * 3
    assert gc.collect() == 0
