"""The Python API (``git_checkout_helper.checkout.checkout``).

Each test checks out into a clone made by git and compares with ``git checkout``
in a twin clone (bytes, modes, links, index entries, HEAD), then asks git
whether the index and work tree are clean. The planner's own tests are in
test_plan.py.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import subprocess
import sys

import pytest
from conftest import git, run_git

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from git_checkout_helper.checkout import CheckoutError, checkout  # noqa: E402
from git_checkout_helper.plan import (  # noqa: E402
    ERROR_WOULD_LOSE_UNTRACKED,
    ERROR_WOULD_OVERWRITE,
    PlanError,
)

REG, EXE, LNK = 0o100644, 0o100755, 0o120000


@pytest.fixture(autouse=True)
def git_env(tmp_path, monkeypatch):
    """git isolated from the machine's and the user's configuration."""
    home = tmp_path / "home"
    home.mkdir()
    for k in list(os.environ):
        if k.startswith(("GIT_TRACE", "GIT_TEST_", "GIT_CONFIG")) or k in ("GIT_DIR", "GIT_WORK_TREE"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "A U Thor")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "author@example.com")
        monkeypatch.setenv(f"GIT_{who}_DATE", "1112354055 +0200")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    git(None, "config", "--global", "init.defaultBranch", "main")
    return home


def manifest(top) -> list[tuple]:
    """(path, kind, permissions, content hash or link target), .git left out."""
    out = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, top)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "link", os.readlink(full)))
            else:
                with open(full, "rb") as f:
                    out.append((rel, "file", oct(stat.S_IMODE(st.st_mode)), hashlib.sha1(f.read()).hexdigest()))
        out.extend((os.path.relpath(os.path.join(root, d), top), "dir") for d in dirs)
    return sorted(out)


def assert_clean(repo) -> None:
    git(repo, "diff-files", "--quiet")
    git(repo, "diff-index", "--cached", "--quiet", "HEAD")
    assert git(repo, "status", "--porcelain").decode() == ""


@pytest.fixture
def src(tmp_path):
    """main: 40 files, an executable, a symlink; other: 12 changed, one
    removed, a file turned directory, a new executable."""
    s = tmp_path / "src"
    git(None, "init", "-q", str(s))
    for i in range(40):
        d = s / f"d{i % 4}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}").write_text(f"file {i}\n")
    (s / "run.sh").write_text("#!/bin/sh\n")
    (s / "run.sh").chmod(0o755)
    os.symlink("d1/f1", s / "link")
    (s / "becomes-dir").write_text("plain\n")
    git(s, "add", ".")
    git(s, "commit", "-qm", "one")
    git(s, "checkout", "-q", "-b", "other")
    for i in range(12):
        (s / f"d{i % 4}" / f"f{i}").write_text(f"changed {i}\n")
    git(s, "rm", "-q", "d3/f39", "becomes-dir")
    (s / "becomes-dir").mkdir()
    (s / "becomes-dir" / "in").write_text("in\n")
    (s / "new.sh").write_text("#!/bin/sh\nnew\n")
    (s / "new.sh").chmod(0o755)
    git(s, "add", "-A")
    git(s, "commit", "-qm", "two")
    git(s, "checkout", "-q", "main")
    return s


def twins(src, tmp_path, name):
    ours, theirs = tmp_path / f"{name}.ours", tmp_path / f"{name}.git"
    git(None, "clone", "-q", str(src), str(ours))
    git(None, "clone", "-q", str(src), str(theirs))
    return ours, theirs


def assert_same(ours, theirs) -> None:
    assert manifest(ours) == manifest(theirs)
    assert git(ours, "ls-files", "-s").decode() == git(theirs, "ls-files", "-s").decode()
    assert git(ours, "rev-parse", "HEAD").decode() == git(theirs, "rev-parse", "HEAD").decode()
    assert run_git(ours, "symbolic-ref", "-q", "HEAD", check=False).stdout.decode() == run_git(
        theirs, "symbolic-ref", "-q", "HEAD", check=False
    ).stdout.decode()


@pytest.mark.parametrize("setup,streams", [
    ([], True),
    ([["config", "core.ignorecase", "true"]], False),
    ([["config", "core.precomposeunicode", "true"]], False),
    ([["config", "filter.x.smudge", "cat"], ["config", "filter.x.clean", "cat"]], False),
    ([["config", "checkout.distribution", "static"]], False),
])
def test_api_streams_only_where_it_cannot_matter(src, tmp_path, setup, streams):
    """Items go to the helpers while the rest are prepared unless git could
    see a difference: a case-folding work tree, files a filter driver may
    take, git's static split. Either way the result is git's, symlink and
    executables included, with the symlink (written here) made first."""
    ours, theirs = twins(src, tmp_path, "s")
    for args in setup:
        git(ours, *args)
        git(theirs, *args)
    env = dict(os.environ)  # (no system config: a filter driver there would stop the streaming)
    report = checkout(str(ours), "other", workers=2, threshold=0, environ=env)
    git(theirs, "checkout", "-q", "other")
    assert report.streamed is streams
    assert report.parallel_items == 14 and report.written == 14 and report.workers == 2
    assert_same(ours, theirs)
    assert_clean(ours)
    ours2, theirs2 = tmp_path / "c.ours", tmp_path / "c.git"  # a clone's checkout: symlink and all
    for d in (ours2, theirs2):
        git(None, "clone", "-q", "--no-checkout", str(src), str(d))
        for args in setup:
            git(d, *args)
    report = checkout(str(ours2), None, workers=2, threshold=0, force=True, environ=env)
    git(theirs2, "checkout", "-q", "-f", "HEAD")
    assert report.streamed is streams and report.sequential_items == 1  # the symlink
    assert_same(ours2, theirs2)
    assert_clean(ours2)


def test_the_index_order_is_computed_while_the_helpers_write(src, tmp_path, monkeypatch):
    """A streamed switch computes the new index's order and TREE extension
    (unpack.index_order) once, after the last item is queued and before the
    helpers' results are collected, and writes the index with them: git's,
    TREE extension included. Memory: the plan takes the target's files over
    (the index is HEAD's; with ``-f`` the new index is the target's
    everywhere) and the tree is let go after the merge; the plan's
    dictionary of entries once the order is made; neither is read again."""
    from git_checkout_helper import workers
    from git_checkout_helper.checkout import switch, unpack
    from git_checkout_helper.checkout.updates import Checkout
    from git_checkout_helper.index_file import parse_index
    from git_checkout_helper.repository import Repository

    events, plans = [], []
    order, finish = unpack.index_order, workers.PoolRun.finish
    release, write = Repository.release_tree, Checkout.write_entries
    monkeypatch.setattr(Repository, "release_tree",
                        lambda self, tree, **k: events.append("release") or release(self, tree, **k))
    monkeypatch.setattr(Checkout, "write_entries", lambda self, e: events.append("write") or write(self, e))

    def spy_order(co, plan, target, *differing, **k):
        events.append("index_order")
        plans.append((plan, target))
        return order(co, plan, target, *differing, **k)

    def spy_finish(self):
        events.append("finish")
        return finish(self)

    monkeypatch.setattr(unpack, "index_order", spy_order)
    monkeypatch.setattr(switch, "index_order", spy_order)
    monkeypatch.setattr(workers.PoolRun, "finish", spy_finish)
    ours, theirs = twins(src, tmp_path, "m")
    report = checkout(str(ours), "other", workers=2, threshold=0)
    git(theirs, "checkout", "-q", "other")
    assert report.streamed
    assert events == ["release", "write", "index_order", "release", "release", "finish"]  # (write_index used it)
    assert plans[0][0].entries is None and plans[0][1].files == {}
    assert_same(ours, theirs)
    trees = [parse_index((d / ".git" / "index").read_bytes()).extension(b"TREE") for d in (ours, theirs)]
    assert trees[0] is not None and trees[0] == trees[1]
    (ours / "d0" / "f1").write_text("local\n")
    (theirs / "d0" / "f1").write_text("local\n")
    events.clear()
    checkout(str(ours), "main", workers=2, threshold=0, force=True)
    git(theirs, "checkout", "-q", "-f", "main")
    # The plan took the target's files (oneway.plan_reset's consume), then
    # the paths were checked; the later releases find nothing left.
    assert events == ["release", "release", "write", "index_order", "release", "release", "finish"]
    assert_same(ours, theirs)
    trees = [parse_index((d / ".git" / "index").read_bytes()).extension(b"TREE") for d in (ours, theirs)]
    assert trees[0] is not None and trees[0] == trees[1]


def test_whether_the_index_changed_is_told_from_the_order_alone():
    """unpack._changed: the new index changed when the plan writes or
    removes a file, or when its paths are not the old index's (told from
    the ordered entries, the plan's dictionary maybe let go)."""
    from git_checkout_helper.checkout.unpack import _changed
    from git_checkout_helper.index import Entry
    from git_checkout_helper.plan import Plan

    def entries(*names):
        return [Entry(n, 0o100644, bytes(20)) for n in names]

    old = {e.name: e for e in entries(b"a", b"b")}
    plan = Plan()
    plan.entries = None
    assert not _changed(plan, entries(b"a", b"b"), old)
    assert _changed(plan, entries(b"a", b"c"), old)  # as many paths, another one
    assert _changed(plan, entries(b"a"), old) and _changed(plan, entries(b"a", b"b", b"c"), old)
    plan.remove = [b"x"]
    assert _changed(plan, entries(b"a", b"b"), old)
    plan.remove, plan.write = [], entries(b"a")
    assert _changed(plan, entries(b"a", b"b"), old)


@pytest.mark.parametrize("quiet", [True, False])
def test_a_switch_lets_the_trees_go_that_nothing_reads_again(src, tmp_path, monkeypatch, quiet):
    """Memory: a switch lets go of HEAD's files after the merge, and of the
    target's files once the differences from them are found, its trees once
    the new index's order is made, whether or not the local
    changes are shown after it (not ``quiet``: from where the new index and
    the target differ, found with the order). A tree let go is read again
    when asked for, never taken empty from the cache; the result is git's
    either way, a staged change carried over and shown as git shows it."""
    from git_checkout_helper.checkout.options import CheckoutOptions
    from git_checkout_helper.checkout.switch import run_checkout
    from git_checkout_helper.repository import Repository

    released = []
    release = Repository.release_tree

    def spy(self, tree, trees=False):
        release(self, tree, trees)
        released.append((tree, trees, self.tree_of(tree.tree_id.hex().encode())))

    monkeypatch.setattr(Repository, "release_tree", spy)
    ours, theirs = twins(src, tmp_path, "r")
    for d in (ours, theirs):
        (d / "d0" / "f20").write_text("local\n")
        git(d, "add", "d0/f20")  # (the index's cache tree no longer HEAD's: HEAD's files are read)
    out = io.StringIO()
    report = run_checkout(Repository.open(str(ours), {}), "other", CheckoutOptions(workers=2, threshold=0, quiet=quiet),
                          err=io.StringIO(), out=out)
    shown = out.getvalue().encode()
    assert shown == git(theirs, "checkout", *(["-q"] if quiet else []), "other")
    assert report.streamed
    assert_same(ours, theirs)
    assert git(ours, "diff", "--cached", "--name-only", "HEAD") == b"d0/f20\n"
    assert shown == b"" if quiet else shown.startswith(b"M\td0/f20\n")
    heads = [git(ours, "rev-parse", f"{c}^{{tree}}").strip() for c in ("main", "other")]
    assert [(t.tree_id.hex().encode(), trees) for t, trees, _ in released] == [
        (heads[0], False), (heads[1], False), (heads[1], True)]  # (the target's files, then its trees)
    for tree, _, again in released:
        assert tree.files == {} and (tree.trees == {}) is (tree is released[-1][0]) and again is not tree
        assert len(again.files) == len(git(ours, "ls-tree", "-r", again.tree_id.hex()).splitlines())


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_api_switch_matches_git(src, tmp_path, workers):
    ours, theirs = twins(src, tmp_path, f"w{workers}")
    report = checkout(str(ours), "other", workers=workers, threshold=0)
    git(theirs, "checkout", "-q", "other")
    assert_same(ours, theirs)
    assert_clean(ours)
    assert git(ours, "symbolic-ref", "HEAD").decode().strip() == "refs/heads/other"
    assert report.workers == workers
    writes = 12 + 2  # changed files, becomes-dir/in, new.sh
    if workers > 1:
        assert report.parallel_items == writes and report.sequential_items == 0
    else:
        assert report.parallel_items == 0 and report.sequential_items == writes
    assert report.written == writes
    assert report.removed == 2
    assert report.collided == [] and report.failed == []


def test_api_detached_and_back_with_a_dulwich_repo(src, tmp_path):
    from dulwich.repo import Repo

    ours, theirs = twins(src, tmp_path, "detach")
    commit = git(theirs, "rev-parse", "origin/other").decode().strip()
    r = Repo(str(ours))
    try:
        checkout(r, commit, workers=2, threshold=0)
        git(theirs, "checkout", "-q", commit)
        assert_same(ours, theirs)
        assert_clean(ours)
        checkout(r, "main", workers=2, threshold=0)
        git(theirs, "checkout", "-q", "main")
        assert_same(ours, theirs)
        assert_clean(ours)
    finally:
        r.close()


def test_api_refuses_local_changes_untouched(src, tmp_path):
    ours, theirs = twins(src, tmp_path, "refuse")
    (ours / "d0" / "f0").write_text("local\n")
    (ours / "new.sh").write_text("untracked\n")
    before = manifest(ours)
    index = (ours / ".git" / "index").read_bytes()
    with pytest.raises(PlanError) as info:
        checkout(str(ours), "other", workers=2, threshold=0)
    assert info.value.groups == {ERROR_WOULD_OVERWRITE: [b"d0/f0"], ERROR_WOULD_LOSE_UNTRACKED: [b"new.sh"]}
    assert manifest(ours) == before
    assert (ours / ".git" / "index").read_bytes() == index
    assert not (ours / ".git" / "index.lock").exists()
    assert git(ours, "symbolic-ref", "HEAD").decode().strip() == "refs/heads/main"
    # force=True throws the change away, as git checkout -f does.
    checkout(str(ours), "other", workers=2, threshold=0, force=True)
    (theirs / "d0" / "f0").write_text("local\n")
    (theirs / "new.sh").write_text("untracked\n")
    git(theirs, "checkout", "-q", "-f", "other")
    assert_same(ours, theirs)
    assert_clean(ours)


def test_api_carries_changes_to_unchanged_paths(src, tmp_path):
    ours, theirs = twins(src, tmp_path, "carry")
    for repo in (ours, theirs):
        (repo / "d2" / "f38").write_text("local\n")  # f38 does not change
    checkout(str(ours), "other", workers=2, threshold=0)
    git(theirs, "checkout", "-q", "other")
    assert_same(ours, theirs)
    assert (git(ours, "status", "--porcelain").decode() == git(theirs, "status", "--porcelain").decode()
            == " M d2/f38\n")


def test_api_settings_from_the_environment_it_is_given(src, tmp_path):
    ours, _ = twins(src, tmp_path, "env")
    env = {"GIT_CONFIG_PARAMETERS": "'checkout.workers=3' 'checkout.thresholdForParallelism=0'"}
    report = checkout(str(ours), "other", environ=env)
    assert report.workers == 3 and report.parallel_items == 14
    assert_clean(ours)
    # The default threshold (100) keeps 14 items in this process.
    report = checkout(str(ours), "main", workers=2)
    assert report.workers == 1 and report.parallel_items == 0 and report.sequential_items == 14
    assert_clean(ours)


def test_api_unknown_revision_is_a_checkout_error(src, tmp_path):
    ours, _ = twins(src, tmp_path, "unknown")
    with pytest.raises(CheckoutError, match="did not match"):
        checkout(str(ours), "no-such-branch")
    assert_clean(ours)


def test_valueless_working_tree_encoding_is_fatal_like_git(src, tmp_path):
    """``working-tree-encoding`` set without a value: git dies with one line and
    128 (git_path_check_encoding); so must we, with nothing written."""
    ours, theirs = twins(src, tmp_path, "wte")
    results = []
    for top, argv in ((ours, [sys.executable, "-m", "git_checkout_helper", "parallel-checkout"]),
                      (theirs, ["git", "checkout"])):
        name = git(top, "ls-files").decode().split()[0]
        (top / ".gitattributes").write_text("* working-tree-encoding\n")
        os.unlink(top / name)
        res = subprocess.run([*argv, "--", name], cwd=top, capture_output=True, text=True)
        results.append((res.returncode, res.stderr))
        assert not (top / name).exists()
    assert results[0] == results[1]
    assert results[0] == (128, "fatal: true/false are no valid working-tree-encodings\n")


def test_api_proves_each_path_valid_once(src, tmp_path, monkeypatch):
    """A switch and a clone's checkout (``-f``) prove every path of the target
    tree valid once (verify_path, before anything is touched), not again
    when they carry out the plan; the paths that leave are proven too. The
    result is git's."""
    import git_checkout_helper.checkout.updates as updates

    seen: list[bytes] = []
    real = updates.invalid_paths

    def counting(paths, *args, **kwargs):
        paths = list(paths)  # (an iterable, maybe read once)
        seen.extend(paths)
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(updates, "invalid_paths", counting)
    ours, theirs = twins(src, tmp_path, "once")
    checkout(str(ours), "other", workers=2, threshold=0)
    git(theirs, "checkout", "-q", "other")
    assert_same(ours, theirs)
    tree = set(git(ours, "ls-tree", "-r", "--name-only", "-z", "HEAD").split(b"\0")) - {b""}
    assert sorted(seen) == sorted(tree | {b"d3/f39", b"becomes-dir"})  # each once, and what left
    seen.clear()
    checkout(str(ours), "main", workers=2, threshold=0, force=True)
    git(theirs, "checkout", "-q", "-f", "main")
    assert_same(ours, theirs)
    tree = set(git(ours, "ls-tree", "-r", "--name-only", "-z", "HEAD").split(b"\0")) - {b""}
    assert sorted(seen) == sorted(tree | {b"becomes-dir/in", b"new.sh"})


#: set-up -> whether HEAD's tree must be read (the index's cache tree cannot stand for it)
CACHE_TREE_SETUPS = {
    "as cloned": False, "index v4": False, "split index": False, "linked worktree": False,
    "sparse checkout": False,  # (a full index: skip-worktree entries are HEAD's too)
    "sparse index": True,  # its TREE describes the collapsed entries
    "staged change": True, "intent to add": True, "no TREE": True,
}


@pytest.mark.parametrize("ahead", [False, True])
@pytest.mark.parametrize("setup", sorted(CACHE_TREE_SETUPS))
def test_api_switch_takes_heads_files_from_a_valid_cache_tree(src, tmp_path, monkeypatch, setup, ahead):
    """A switch's two-way merge takes HEAD's files from the index when its
    TREE extension is valid at the root for HEAD's tree (no tree of HEAD is
    read), in each index format and a linked worktree; a sparse index, a
    staged change (the root invalid), an intent-to-add entry, or no TREE at
    all reads HEAD's tree. Each gives git's result, ``ahead`` too: the
    target read by a child (:mod:`treeahead`, as for a big index), which
    tells the merge where it and the index differ."""
    from git_checkout_helper import treeahead
    from git_checkout_helper.repository import Repository

    results = []
    if ahead:
        monkeypatch.setattr(treeahead, "MIN_INDEX_SIZE", 0)
        result = treeahead.TreeAhead.result
        monkeypatch.setattr(treeahead.TreeAhead, "result", lambda self, *a: results.append(result(self, *a))
                            or results[-1])

    ours, theirs = twins(src, tmp_path, "ct")
    if setup == "linked worktree":
        for repo in (ours, theirs):
            git(repo, "worktree", "add", "-q", "-b", "side", str(repo) + ".wt", "main")
        ours, theirs = tmp_path / "ct.ours.wt", tmp_path / "ct.git.wt"
    for repo in (ours, theirs):
        if setup == "staged change":
            (repo / "d1" / "f13").write_text("staged\n")  # unchanged between the branches: carried
            git(repo, "add", "d1/f13")
        elif setup == "intent to add":
            (repo / "fresh").write_text("new\n")
            git(repo, "add", "-N", "fresh")
        elif setup == "no TREE":  # the same entries, written without the extension
            listing = git(repo, "ls-files", "-s")
            (repo / ".git" / "index").unlink()
            git(repo, "update-index", "--index-info", input=listing)
            git(repo, "update-index", "-q", "--refresh")
            assert b"TREE" not in (repo / ".git" / "index").read_bytes()
        elif setup == "index v4":
            git(repo, "update-index", "--index-version", "4")
        elif setup == "split index":
            git(repo, "update-index", "--split-index")
        elif setup in ("sparse checkout", "sparse index"):
            git(repo, "sparse-checkout", "set", "--cone", *(["--sparse-index"] if setup == "sparse index" else []),
                "d0", "d1")
    read: list[bytes] = []
    real = Repository.read_tree

    def counting(self, tree_hex, *args):
        read.append(tree_hex)
        return real(self, tree_hex, *args)

    monkeypatch.setattr(Repository, "read_tree", counting)
    checkout(str(ours), "other", workers=2, threshold=0)
    git(theirs, "checkout", "-q", "other")
    # (a linked worktree's .git file names its own path)
    assert [m for m in manifest(ours) if m[0] != ".git"] == [m for m in manifest(theirs) if m[0] != ".git"]
    for cmd in (["rev-parse", "HEAD"], ["symbolic-ref", "HEAD"], ["status", "--porcelain"]):
        assert git(ours, *cmd) == git(theirs, *cmd), cmd
    assert git(ours, "ls-files", "-s", "-t").decode() == git(theirs, "ls-files", "-s", "-t").decode()
    head_tree = git(theirs, "rev-parse", "main^{tree}").strip()
    assert (head_tree in read) == CACHE_TREE_SETUPS[setup], read
    if ahead:  # (the child's tree, and where it and the index differ, came back)
        assert len(results) == 1 and results[0] is not None and results[0][2] is not None



def _commit_raw_tree(repo, parent: str, entries: list[tuple[bytes, bytes, bytes]], branch: str) -> None:
    """Commit a tree written as given (``hash-object --literally``: modes git
    itself no longer writes) on a new ``branch`` after ``parent``."""
    raw = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(oid.decode()) for mode, name, oid in entries)
    tree = run_git(repo, "hash-object", "-t", "tree", "-w", "--literally", "--stdin", input=raw).stdout.strip()
    commit = git(repo, "commit-tree", "-p", parent, "-m", "old modes", tree.decode()).strip()
    git(repo, "update-ref", f"refs/heads/{branch}", commit.decode())


def test_a_tree_s_old_file_modes_enter_the_index_as_git_writes_them(src, tmp_path):
    """Early git wrote modes such as 100664 and 100775 into trees (git.git's
    own first commits have them). git's ``create_ce_mode`` makes the index
    entry 100644 or 100755 (by the owner's x bit), and a symlink or gitlink
    of an odd mode its canonical one; ours kept the tree's mode in the index."""
    blob = git(src, "hash-object", "-w", "--stdin", input=b"text\n").strip()
    script = git(src, "hash-object", "-w", "--stdin", input=b"#!/bin/sh\n").strip()
    _commit_raw_tree(src, "main", [(b"100664", b"a", blob), (b"100775", b"b", script), (b"100600", b"c", blob),
                                   (b"100744", b"d", script), (b"120777", b"e", blob)], "old-modes")
    ours, theirs = twins(src, tmp_path, "modes")
    for args, force in ((("origin/old-modes",), False), (("main",), False), (("origin/old-modes",), True)):
        checkout(str(ours), args[0], workers=2, threshold=0, force=force)
        git(theirs, "checkout", "-q", *(("-f",) if force else ()), *args)
        assert_same(ours, theirs)
        assert git(ours, "diff-files").decode() == "" == git(theirs, "diff-files").decode()
        assert git(ours, "status", "--porcelain").decode() == git(theirs, "status", "--porcelain").decode()
    assert b"100755 " in git(ours, "ls-files", "-s", "d") and b"120000 " in git(ours, "ls-files", "-s", "e")


def test_the_target_goes_before_the_index_order_is_made():
    """unpack.index_order finds the differences from the target, then calls
    ``found`` (a switch lets the target's files go there), and only then
    sorts the plan's entries: the target's files are not held through the
    sort's peak."""
    from types import SimpleNamespace

    from git_checkout_helper.checkout import unpack
    from git_checkout_helper.index import Entry
    from git_checkout_helper.plan import Plan
    from git_checkout_helper.tree import TreeFiles

    events = []

    class Entries(dict):
        def __iter__(self):
            events.append("sorted")
            return super().__iter__()

    plan = Plan()
    plan.entries = Entries((p, Entry(p, 0o100644, bytes(20))) for p in (b"b", b"a"))
    plan.merged = [b"a"]
    target = TreeFiles({b"a": bytes(20), b"b": bytes(20)}, {}, None)
    co = SimpleNamespace(repo=None)  # (a target of no tree id: no cache tree made)
    entries, tree, differing = unpack.index_order(co, plan, target, None, found=lambda: events.append("found"))
    assert [e.name for e in entries] == [b"a", b"b"] and tree is None and differing == {}
    assert events == ["found", "sorted"]


@pytest.mark.parametrize("setup,lets_go,merge_lets_go", [
    ([], True, True),
    ([["config", "core.sparseCheckout", "true"], ["sparse-checkout", "set", "--cone", "d0", "d1"]],
     True, False),  # (the sparse patterns read the replaced entries after the merge)
    ([["sparse-checkout", "set", "--cone", "--sparse-index", "d0", "d1"]], False, False),
    ([["update-index", "--split-index"]], False, False),
    ([["config", "submodule.recurse", "true"]], False, False),
])
@pytest.mark.parametrize("staged", [False, True])
def test_a_switch_lets_the_index_go_as_the_merge_replaces_it(src, tmp_path, monkeypatch, setup, lets_go,
                                                            merge_lets_go, staged):
    """Memory: the index read is let go as far as the merge replaces it
    (``unpack.let_go_source``): its entries as read at once, and each
    entry the twoway merge replaces made the new one in place (its id and
    stat data let go), unless the sparse patterns read them after it;
    nothing for a split or sparse index, nor with submodule moves, which
    read them after. Whatever is let go, the result is git's, a staged
    change carried over (the index then not HEAD's: HEAD's tree is read
    for the merge)."""
    from git_checkout_helper.checkout import switch as switch_mod
    from git_checkout_helper.checkout.options import CheckoutOptions
    from git_checkout_helper.repository import Repository

    sources, merges = [], []
    plan_switch, let_go_source = switch_mod.plan_switch, switch_mod.let_go_source

    def spy_source(old):
        got = let_go_source(old)
        sources.append((got, old.source.entries is None))
        return got

    def spy_merge(head, target, old, *args, let_go=False, **kwargs):
        read = {p: e.fields() for p, e in old.items()}
        plan = plan_switch(head, target, old, *args, let_go=let_go, **kwargs)
        changed = [p for p, e in old.items() if e.fields() != read[p]]
        merges.append((let_go, old.keys() == read.keys(), len(changed),
                       all(old[p] is plan.entries[p] for p in changed)))
        return plan

    monkeypatch.setattr(switch_mod, "let_go_source", spy_source)
    monkeypatch.setattr(switch_mod, "plan_switch", spy_merge)
    ours, theirs = twins(src, tmp_path, "g")
    for d in (ours, theirs):
        for args in setup:
            git(d, *args)
        if staged:
            (d / "d0" / "f20").write_text("staged\n")
            git(d, "add", "d0/f20")
    switch_mod.run_checkout(Repository.open(str(ours), {}), "other",
                            CheckoutOptions(workers=2, threshold=0, quiet=True), err=io.StringIO(), out=io.StringIO())
    git(theirs, "checkout", "-q", "other")
    assert_same(ours, theirs)
    for args in (["status", "--porcelain"], ["diff-files", "--name-only"]):
        assert git(ours, *args) == git(theirs, *args), args
    recurse = setup == [["config", "submodule.recurse", "true"]]
    assert sources == ([] if recurse else [(lets_go, lets_go)])
    assert merges == [(merge_lets_go, True, 12 if merge_lets_go else 0, True)]  # (the twelve changed files)
