"""The TREE extension a switch leaves when its merge says which paths can
differ from the target (``plan.Plan.merged``), against git's.

A switch whose index holds exactly HEAD's files (its cache tree valid at the
root for HEAD's tree: HEAD's files are then taken from it) keeps, at every
path HEAD and the target hold alike, an entry that is the target's too; the
new TREE extension then compares the merged paths alone with the target
(``unpack.target_differences``). Twins switch from ``main`` to ``other`` (files
changed in every directory, a new directory, a file and a whole directory
gone): clean, with an unstaged change the switch carries, and with staged
changes (the index is not HEAD's; the whole index is compared). Each must
leave git's index (version, extensions, TREE bytes), status and HEAD, and
say whether the merged paths were what was compared; the clean case also
in a linked worktree, a split index, index version 4 and a sparse checkout.
After ``-f`` (a oneway merge) no path can differ, whatever was staged.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from conftest import files_repo, git, isolate_api_env, run_git, twin_env

from git_checkout_helper import sparse as sparse_mod
from git_checkout_helper.checkout import unpack
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.switch import run_checkout
from git_checkout_helper.index_file import parse_index
from git_checkout_helper.repository import Repository


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    """main: 40 files dNN/f<i> in four directories; other: f0, f4, ... changed,
    d04/ added, d01/f1 and the whole of d03/ gone."""
    path = tmp_path_factory.mktemp("merged") / "src"
    env = twin_env(path.parent)
    files_repo(path, 40, 4, {"other": range(0, 40, 4)}, env)
    git(path, "checkout", "-q", "other", env=env)
    (path / "d04").mkdir()
    (path / "d04" / "new").write_text("new\n")
    git(path, "add", "d04", env=env)
    git(path, "rm", "-q", "-r", "d01/f1", "d03", env=env)
    git(path, "commit", "-qm", "more", env=env)
    git(path, "checkout", "-q", "main", env=env)
    return path, env


def _linked(path, env):
    """The switch happens in a linked worktree on main (see _worktree)."""
    git(path, "checkout", "-q", "--detach", env=env)
    git(path, "worktree", "add", "-q", str(path) + ".wt", "main", env=env)


SETUPS = {
    "clean": None,
    "linked": _linked,
    "split-index": lambda path, env: git(path, "update-index", "--split-index", env=env),
    "index-v4": lambda path, env: git(path, "update-index", "--index-version", "4", env=env),
    # a sparse checkout (full index) leaving d01 and d03 out
    "sparse": lambda path, env: git(path, "sparse-checkout", "set", "--no-cone", "/d00/", "/d02/", "/d04/",
                                    env=env),
    "unstaged": lambda path, env: (path / "d02" / "f2").write_text("local\n"),
    # d00/f8 staged with other's own content (the index already holds the
    # target's version) and a staged change on a path the switch keeps.
    "staged": lambda path, env: (
        (path / "d00" / "f8").write_text("changed 8\n"),
        (path / "d02" / "f6").write_text("staged here\n"),
        git(path, "add", "d00/f8", "d02/f6", env=env)),
}


def _worktree(path):
    linked = path.parent / (path.name + ".wt")
    return linked if linked.exists() else path


def _index(path, env):
    """The index file's version, its extensions' signatures and its TREE bytes."""
    index = Path(git(path, "rev-parse", "--path-format=absolute", "--git-path", "index", env=env).decode().strip())
    idx = parse_index(index.read_bytes())
    return idx.version, [sig for sig, _ in idx.extensions], idx.extension(b"TREE")


@pytest.mark.parametrize("setup,force", [(s, False) for s in SETUPS] + [(s, True) for s in ("staged", "sparse")])
def test_tree_as_git(src, tmp_path, monkeypatch, setup, force):
    source, env = src
    twins = []
    for name in ("ours", "git"):
        path = tmp_path / name
        git(None, "clone", "-q", str(source), str(path), env=env)
        git(path, "branch", "-q", "other", "origin/other", env=env)
        if SETUPS[setup] is not None:
            SETUPS[setup](path, env)
        twins.append(_worktree(path))
    ours, theirs = twins
    version, extensions, tree = _index(ours, env)
    assert tree is not None  # (a clone's index has a cache tree: the case under test)
    assert (version == 4) is (setup == "index-v4") and (b"link" in extensions) is (setup == "split-index")
    assert (ours / "d01").exists() is (setup != "sparse")
    merged = []
    differences = unpack.target_differences
    monkeypatch.setattr(unpack, "target_differences", lambda target, plan: merged.append(plan.merged)
                        or differences(target, plan))
    loads = []  # the sparse-checkout patterns, read once for the whole switch (Repository.sparse_checkout)
    load = sparse_mod.load_sparse_checkout
    monkeypatch.setattr(sparse_mod, "load_sparse_checkout", lambda *a: loads.append(a) or load(*a))
    isolate_api_env(monkeypatch, env["HOME"])
    run_checkout(Repository.open(str(ours), dict(os.environ)), "other",
                 CheckoutOptions(workers=2, threshold=0, online_cpus=2, quiet=True, force=force), err=io.StringIO(),
                 out=io.StringIO())
    assert len(loads) == 1
    run_git(theirs, "-c", "checkout.workers=2", "checkout", "-q", *(["-f"] if force else []), "other", env=env,
            check=True)
    assert _index(ours, env) == _index(theirs, env)
    for args in (["ls-files", "-s"], ["status", "--porcelain"], ["rev-parse", "HEAD"], ["diff-files"]):
        assert git(ours, *args, env=env) == git(theirs, *args, env=env), args
    # Only a switch from HEAD's own index compares the merged paths alone:
    # those HEAD and other hold otherwise, nothing else.
    if force:  # -f: the new index is the target's everywhere, no difference looked for
        assert merged == []
        return
    assert len(merged) == 1
    if setup == "staged":
        assert merged == [None]
    else:
        assert sorted(merged[0]) == sorted(
            git(ours, "diff", "--name-only", "--no-renames", "main", "other", env=env).split())
