"""Sparse checkout against git twins: cone and non-cone patterns, files
moving in and out of the patterns, dirty files outside, ``-f``, ``--all``;
the sparse index (``index.sparse``) read, expanded and collapsed again."""

from __future__ import annotations

import pytest
from conftest import git, isolated_git_env, run_git
from test_index_formats import OURS, run, setup, state

from git_checkout_helper.sparse import SparseCheckout

CONE_A = "/*\n!/*/\n/a/\n"
CONE_B_SUB = "/*\n!/*/\n/b/\n!/b/*/\n/b/sub/\n"


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = master\n[user]\n\tname = A\n\temail = a@b\n")
    return isolated_git_env(home)


NON_CONE = "/a/\n!/a/sub/\n/top\n*5\n"

SCENARIOS = {
    # name: (cone?, patterns at setup, patterns before the operation, a step before both)
    "cone-stay": (True, CONE_A, None, None),
    "cone-move": (True, CONE_A, CONE_B_SUB, None),
    "cone-move-dirty": (True, CONE_A, CONE_B_SUB, "echo dirty > a/f3"),
    "cone-back-in-present": (True, CONE_A, CONE_B_SUB, "mkdir -p b/sub && echo here > b/sub/g1"),
    "non-cone-stay": (False, NON_CONE, None, None),
    "non-cone-move": (False, NON_CONE, CONE_B_SUB.replace("/*\n!/*/\n", ""), "echo dirty > a/f4"),
}

OPS = {
    "switch": (["checkout", "-q", "near"], ["parallel-checkout", "-q", "near"]),
    "far-switch": (["checkout", "-q", "far"], ["parallel-checkout", "-q", "far"]),
    "force": (["checkout", "-q", "-f", "far"], ["parallel-checkout", "-q", "-f", "far"]),
    "all": (["checkout-index", "-u", "-a"], ["parallel-checkout", "--all", "-u"]),
    "nothing": (["checkout", "-q", "master"], ["parallel-checkout", "-q", "master"]),
    "restore-paths": (["checkout", "far", "--", "a", "b"], ["parallel-checkout", "far", "--", "a", "b"]),
    "restore-outside-from-index": (["checkout", "--", "b"], ["parallel-checkout", "--", "b"]),
    "restore-outside-from-tree": (["checkout", "far", "--", "b"], ["parallel-checkout", "far", "--", "b"]),
}


def sparse_setup(path, env, cone, patterns, sparse_index=False):
    setup(path, env, "v2")
    if sparse_index:
        git(path, "config", "index.sparse", "true", env=env)
    git(path, "config", "core.sparseCheckout", "true", env=env)
    git(path, "config", "core.sparseCheckoutCone", "true" if cone else "false", env=env)
    (path / ".git" / "info").mkdir(exist_ok=True)
    (path / ".git" / "info" / "sparse-checkout").write_text(patterns)
    git(path, "read-tree", "-mu", "HEAD", env=env)


def _sparse_twins(tmp_path, env, scenario, op, sparse_index=False, git_sparse_index=None):
    cone, first, then, before = SCENARIOS[scenario]
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for p in (theirs, ours):
        sparse_setup(p, env, cone, first, sparse_index if p == ours or git_sparse_index is None else git_sparse_index)
        if then is not None:
            (p / ".git" / "info" / "sparse-checkout").write_text(then)
        if before:
            run(["sh", "-c", before], p, env)
    gcmd, ocmd = OPS[op]
    g = run(["git", *gcmd], theirs, env, check=False)
    o = run([*OURS, *ocmd], ours, env, check=False)
    assert (o.returncode, o.stdout) == (g.returncode, g.stdout), o.stderr
    if op != "all":  # (checkout-index words its "already exists" differently)
        assert o.stderr == g.stderr
    ours_state, theirs_state = state(ours, env), state(theirs, env)
    if git_sparse_index is not None and git_sparse_index != sparse_index:
        assert ours_state[1:] == theirs_state[1:]  # all but the index file's own form
    else:
        assert ours_state == theirs_state
    return ours_state


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_sparse_twins(tmp_path, env, scenario, op):
    _sparse_twins(tmp_path, env, scenario, op)


@pytest.mark.parametrize("op", ["switch", "far-switch", "force", "all", "nothing", "restore-paths",
                                "restore-outside-from-tree"])
@pytest.mark.parametrize("scenario", ["cone-stay", "cone-move-dirty"])
def test_sparse_index_twins(tmp_path, env, scenario, op):
    """A sparse index: its directory entries, sdir and TREE written as git writes them."""
    if scenario == "cone-move-dirty" and op in ("switch", "force", "nothing"):
        pytest.skip("git 2.39 fails here: see test_sparse_directory_entering_the_cone")
    assert b"sdir" in _sparse_twins(tmp_path, env, scenario, op, sparse_index=True)[0][1]


@pytest.mark.parametrize("op", ["switch", "force", "nothing"])
def test_sparse_directory_entering_the_cone(tmp_path, env, op):
    """Patterns changed so that a sparse directory entry (b/) is now in the
    cone: git 2.39's switch does not expand it ("error: unknown file mode
    for b/ in index") and leaves b/ unwritten and deleted in `git status`
    (with -f it exits 1). Ours expands the index when it reads it, so it
    ends as git ends with a full index, and writes the index sparse again."""
    g = run(["git", *OPS[op][0]], _sparse_setup_moved(tmp_path / "git-sparse", env), env, check=False)
    assert b"error: unknown file mode for b/ in index" in g.stderr  # the failure this works around
    ours_state = _sparse_twins(tmp_path, env, "cone-move-dirty", op, sparse_index=True, git_sparse_index=False)
    # a/ left the cone: collapsed (a/sub/ only, where a/f3 stays dirty)
    assert b"sdir" in ours_state[0][1] and any(e[0] in (b"a/", b"a/sub/") for e in ours_state[0][2])


def _sparse_setup_moved(path, env):
    cone, first, then, before = SCENARIOS["cone-move-dirty"]
    sparse_setup(path, env, cone, first, True)
    (path / ".git" / "info" / "sparse-checkout").write_text(then)
    run(["sh", "-c", before], path, env)
    return path


def test_cone_matching_as_git():
    s = SparseCheckout([b"/*", b"!/*/", b"/b/", b"!/b/*/", b"/b/sub/"], cone=True)
    assert s.recursive == {b"b/sub"} and s.parents == {b"b"}
    assert s.included(b"top") and s.included(b"b/f1") and s.included(b"b/sub/x/y")
    assert not s.included(b"a/f1") and not s.included(b"b/other/f")


def test_bad_cone_file_falls_back_to_patterns():
    s = SparseCheckout([b"/*", b"!/*/", b"*.txt"], cone=True)
    assert s.recursive is None
    assert s.included(b"x/y.txt") and s.included(b"top") and not s.included(b"x/y")


NON_CONE_SETS = [["d/", "!/d/"], ["/*", "!c"], ["*.txt", "!*.o"], ["src/"], ["/*", "!/d/", "/d/c"], ["d", "!d/c"],
                 ["!e/", "d/"]]


def test_non_cone_matching_as_git(tmp_path, env):
    """What git's ``sparse-checkout set --no-cone`` leaves in: a pattern
    ending in "/" matches a directory, never a file below it, and a file
    no pattern matches takes its directory's verdict."""
    paths = ["a", "a.txt", "c", "d/c", "d/e/f", "d/ign1", "d/x.o", "d/y.txt", "src/a", "x/src/b", "z"]
    repo = tmp_path / "repo"
    for p in paths:
        (repo / p).parent.mkdir(parents=True, exist_ok=True)
        (repo / p).write_text(p)
    git(repo, "init", "-q", env=env)
    git(repo, "add", ".", env=env)
    git(repo, "commit", "-qm", "x", env=env)
    for patterns in NON_CONE_SETS:
        git(repo, "sparse-checkout", "set", "--no-cone", "--", *patterns, env=env)
        theirs = git(repo, "ls-files", "-t", env=env).decode().splitlines()
        s = SparseCheckout([p.encode() for p in patterns], cone=False)
        assert [("H " if s.included(p.encode()) else "S ") + p for p in paths] == theirs, patterns


@pytest.mark.parametrize("sparse_index", [False, True])
@pytest.mark.parametrize("op", ["far-switch", "force"])
def test_sparse_checkout_command_twins(tmp_path, env, op, sparse_index):
    """Set up by ``git sparse-checkout set`` (its settings in config.worktree)."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for p in (theirs, ours):
        setup(p, env, "v2")
        git(p, "sparse-checkout", "set", *(["--sparse-index"] if sparse_index else []), "b/sub", env=env)
        assert "sparseCheckout" not in (p / ".git" / "config").read_text()
    gcmd, ocmd = OPS[op]
    g = run(["git", *gcmd], theirs, env, check=False)
    o = run([*OURS, *ocmd], ours, env, check=False)
    assert (o.returncode, o.stdout, o.stderr) == (g.returncode, g.stdout, g.stderr)
    assert state(ours, env) == state(theirs, env)


def _staged_outside_the_cone(p, env, path):
    """A sparse index (cone a/) with a staged, skip-worktree change at ``path``."""
    sparse_setup(p, env, True, CONE_A, True)
    blob = run(["sh", "-c", "echo staged | git hash-object -w --stdin"], p, env).stdout.decode().strip()
    git(p, "update-index", "--cacheinfo", f"100644,{blob},{path}", env=env)
    git(p, "update-index", "--skip-worktree", path, env=env)


def test_sparse_index_restore_keeps_or_collapses_as_git(tmp_path, env):
    """A staged change outside the cone leaves c/ expanded. A restore that
    reaches no sparse directory keeps that form (git never expands); one
    that reaches into b/ expands, and the write collapses c/ into a tree
    no commit has, which is stored (git's WRITE_TREE_MISSING_OK update)."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for p in (theirs, ours):
        _staged_outside_the_cone(p, env, "c/f1")
        (p / "top").write_text("changed\n")
    for gcmd, ocmd in ((["checkout", "--", "top"], ["parallel-checkout", "--", "top"]),
                       (["checkout", "far", "--", "b"], ["parallel-checkout", "far", "--", "b"])):
        g = run(["git", *gcmd], theirs, env)
        o = run([*OURS, *ocmd], ours, env)
        assert (o.returncode, o.stdout, o.stderr) == (g.returncode, g.stdout, g.stderr)
        ours_state = state(ours, env)
        assert ours_state == state(theirs, env)
        dirs = [e[0] for e in ours_state[0][2] if e[1] == 0o040000]
        assert b"c/" not in dirs if gcmd[1] == "--" else b"c/" in dirs
    (tree,) = [e[2] for e in ours_state[0][2] if e[0] == b"c/"]
    assert git(ours, "cat-file", "-t", tree.hex(), env=env) == b"tree\n"
    assert run_git(ours, "rev-list", "--objects", "--all", env=env).stdout.find(tree.hex().encode()) < 0


@pytest.mark.parametrize("op", ["switch", "far-switch", "force"])
def test_switch_from_a_partly_expanded_sparse_index(tmp_path, env, op):
    """A staged change below b/ leaves b/ expanded. git's two-way merge works
    on the sparse index and never expands it: b/ stays files, b/sub/ and c/
    stay directory entries for the new trees, and the TREE is the merge's,
    repaired where a tree of the index's content exists (b/ with the staged
    file: its tree was stored when the index was last collapsed)."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for p in (theirs, ours):
        _staged_outside_the_cone(p, env, "b/f1")
    g = run(["git", *OPS[op][0]], theirs, env)
    o = run([*OURS, *OPS[op][1]], ours, env)
    assert (o.returncode, o.stdout, o.stderr) == (g.returncode, g.stdout, g.stderr)
    ours_state = state(ours, env)
    assert ours_state == state(theirs, env)
    assert [e[0] for e in ours_state[0][2] if e[1] == 0o040000] == [b"b/sub/", b"c/"]
