"""The target tree read by a child while the index is read (treeahead.py).

The child's tree is the one ``tree_of`` reads (files, subtrees, root id),
sent in parts and its subtrees decoded when first asked for, and is
remembered by the repository; what the check said comes back with it; a
child that fails (an id that is no commit) gives None and is reaped, as is
one closed before it is waited for. Then switches with the child in use
(the size threshold lowered) against git: a clean one (same index, status,
work tree) and one to a hostile tree (refused with git's words, nothing
touched).
"""

from __future__ import annotations

import io
import os

import pytest
from conftest import git, run_git

from git_checkout_helper import treeahead
from git_checkout_helper.checkout.options import CheckoutError, CheckoutOptions
from git_checkout_helper.checkout.switch import run_checkout
from git_checkout_helper.repository import Repository
from git_checkout_helper.treeahead import TreeAhead, tree_ahead


@pytest.fixture
def history(make_repo):
    repo = make_repo()
    for d in range(5):
        (repo.path / f"d{d}").mkdir()
        for f in range(20):
            (repo.path / f"d{d}" / f"f{f}").write_text(f"{d} {f}\n")
    (repo.path / "d4" / "f6").chmod(0o755)  # (an executable both commits hold alike)
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "first")
    repo.git("branch", "other")
    for d in range(0, 5, 2):
        (repo.path / f"d{d}" / "f3").write_text("changed\n")
        (repo.path / f"d{d}" / "new").write_text("new\n")
    (repo.path / "d2" / "f5").chmod(0o755)  # (its mode alone changed)
    repo.git("rm", "-q", "d1/f1")
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "second")
    return repo


def test_the_child_reads_what_tree_of_reads(history):
    commit = history.git("rev-parse", "HEAD").strip()
    repo = Repository.open(str(history.path))
    ahead = TreeAhead(repo, commit, lambda tree: sorted(tree.files)[:2])
    tree, verdict, differs = ahead.result()
    assert differs is None  # (no index to differ from)
    assert not isinstance(tree._trees, dict)  # (kept marshalled until asked for: a switch asks after its merge)
    want = Repository.open(str(history.path)).tree_of(commit)
    assert (tree.files, tree.trees, tree.tree_id) == (want.files, want.trees, want.tree_id)
    assert isinstance(tree._trees, dict)
    assert len(tree.files) == 102 and verdict == [b"d0/f0", b"d0/f1"]
    assert repo.tree_of(commit) is tree  # remembered: not read again
    assert ahead.result() is None  # (asked twice: the child is gone)


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_the_tree_shares_the_index_s_paths_and_alike_ids(make_repo, object_format):
    """Every path the index holds is the index entry's own name in the
    tree, and a 100644 id it holds alike is the entry's own id; the tree
    is the one tree_of reads, values and modes as they were."""
    src = make_repo(object_format=object_format)
    for name, text in (("same", "1\n"), ("changed", "2\n"), ("tool", "3\n"), ("was-x", "4\n")):
        (src.path / name).write_text(text)
    (src.path / "tool").chmod(0o755)
    (src.path / "was-x").chmod(0o755)
    os.symlink("same", src.path / "link")
    src.git("add", ".")
    src.git("commit", "-q", "-m", "index")
    (src.path / "changed").write_text("changed\n")
    (src.path / "was-x").chmod(0o644)
    (src.path / "new").write_text("5\n")
    src.git("add", ".")
    src.git("commit", "-q", "-m", "target")
    target = src.git("rev-parse", "HEAD").strip()
    src.git("reset", "-q", "--hard", "HEAD^")
    repo = Repository.open(str(src.path))
    index = repo.read_index().entries
    tree, _, differs = TreeAhead(repo, target, lambda tree: None).result(index)
    assert tree.files == Repository.open(str(src.path)).tree_of(target).files
    key = {p: p for p in tree.files}
    assert {p for p in tree.files if p not in index or key[p] is not index[p].name} == {b"new"}
    shared = {p for p, v in tree.files.items() if p in index and v is index[p].oid}
    assert shared == {b"same", b"was-x"}  # 100644 ids alike (was-x: the same blob, its mode changed)
    # (not shared: "changed", another id; "tool" and "link", whose values carry their mode)
    # Where the tree and the index differ, as the merge would find them: the
    # tree's paths in its order (was-x: its mode), then the index's it lacks.
    assert differs == [b"changed", b"new", b"was-x"]
    del index[b"tool"], index[b"link"]
    index[b"gone"] = index[b"same"]
    _, _, differs = TreeAhead(repo, target, lambda tree: None).result(index)
    assert differs == [b"changed", b"link", b"new", b"tool", b"was-x", b"gone"]


def test_the_tree_s_files_travel_in_parts(monkeypatch):
    """Packed and unpacked in several parts, 20- and 32-byte ids with and
    without a mode byte; a part whose values do not pair up with its paths
    is refused, and so is a transfer that stops short (the caller then
    reads the tree itself)."""
    import marshal

    monkeypatch.setattr(treeahead, "FILES_PER_PART", 2)
    for rawsz in (20, 32):
        files = {b"a": b"\1" * rawsz, b"b/c": b"\2" * rawsz + b"x", b"b/d": b"\3" * rawsz + b"l",
                 b"e": b"\4" * rawsz + b"g", b"f": b"\5" * rawsz}
        parts = treeahead._pack_files(files)
        assert [marshal.loads(p)[0].count(b"\0") + 1 for p in parts] == [2, 2, 1]
        differs = []
        assert treeahead._unpack_files(parts, {}, differs) == files and differs == list(files)
        paths, values, sizes = marshal.loads(parts[1])
        for bad in ((paths, values[:-1], sizes), (paths + b"\0g", values, sizes)):
            with pytest.raises(ValueError):
                treeahead._unpack_files([parts[0], marshal.dumps(bad), parts[2]], {}, [])
        with pytest.raises(EOFError):
            treeahead._unpack_files([parts[0], None], {}, [])
    assert treeahead._pack_files({}) == [] and treeahead._unpack_files([], {}, []) == {}


def test_a_failing_child_gives_none_and_is_reaped(history):
    repo = Repository.open(str(history.path))
    blob = history.git("rev-parse", "HEAD:d0/f0").strip()
    ahead = TreeAhead(repo, blob, lambda tree: None)  # not a commit: tree_of raises in the child
    pid = ahead._child[0]
    assert ahead.result() is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)
    closed = TreeAhead(repo, history.git("rev-parse", "HEAD").strip(), lambda tree: None)
    pid = closed._child[0]
    closed.close()
    closed.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)


def test_only_a_big_index_with_a_second_cpu_reads_ahead(history, monkeypatch):
    repo = Repository.open(str(history.path))
    commit = history.git("rev-parse", "other").strip()
    assert tree_ahead(repo, commit, lambda tree: None, 2) is None  # a small index
    monkeypatch.setattr(treeahead, "MIN_INDEX_SIZE", 0)
    assert tree_ahead(repo, commit, lambda tree: None, 1) is None
    assert tree_ahead(repo, None, lambda tree: None, 2) is None
    ahead = tree_ahead(repo, commit, lambda tree: None, 2)
    assert ahead is not None and ahead.result()[0].files == repo.tree_of(commit).files


def _switch(path, rev: str):
    out, err = io.StringIO(), io.StringIO()
    try:
        run_checkout(Repository.open(str(path), dict(os.environ)), rev,
                     CheckoutOptions(workers=2, threshold=0, online_cpus=2, quiet=False), err=err, out=out)
    except CheckoutError as e:
        return e.code, out.getvalue(), err.getvalue() + str(e) + "\n"
    return 0, out.getvalue(), err.getvalue()


@pytest.fixture
def read_ahead(monkeypatch):
    """Every switch reads its tree in a child; the verdicts it returned."""
    monkeypatch.setattr(treeahead, "MIN_INDEX_SIZE", 0)
    seen = []
    result = TreeAhead.result

    def spy(self, *index):
        got = result(self, *index)
        seen.append(got[1] if got is not None else None)
        return got

    monkeypatch.setattr(TreeAhead, "result", spy)
    for k in list(os.environ):
        if k.startswith(("GIT_TRACE", "GIT_TEST_")):
            monkeypatch.delenv(k)
    return seen


def test_a_switch_reading_ahead_matches_git(history, tmp_path, git_env, read_ahead, monkeypatch):
    monkeypatch.setenv("HOME", git_env["HOME"])
    ours, theirs = tmp_path / "ours", tmp_path / "git"
    for p in (ours, theirs):
        git(None, "clone", "-q", str(history.path), str(p), env=git_env)
        (p / "d3" / "f4").write_text("local change\n")
    got = _switch(ours, "other")
    want = run_git(theirs, "checkout", "other", env=git_env, text=True)
    assert got == (0, want.stdout, want.stderr)
    assert read_ahead == [([], [])]  # the child's verdict: nothing hostile
    for args in (["ls-files", "-s"], ["status", "--porcelain"], ["diff-files", "--name-only"]):
        assert git(ours, *args, env=git_env) == git(theirs, *args, env=git_env), args
    assert git(ours, "status", "--porcelain", env=git_env) == b" M d3/f4\n"


def test_a_hostile_tree_found_by_the_child_is_refused_as_git_refuses_it(history, tmp_path, git_env, read_ahead,
                                                                        monkeypatch):
    monkeypatch.setenv("HOME", git_env["HOME"])
    blob = history.git("hash-object", "-w", "--stdin", input=b"evil\n").strip().decode()
    inner = history.git("mktree", input=f"100644 blob {blob}\tconfig\n".encode()).strip().decode()
    ok = history.git("rev-parse", "HEAD:d0").strip().decode()
    tree = history.git("mktree", input=f"040000 tree {inner}\t.GIT\n040000 tree {ok}\td0\n".encode()).strip().decode()
    commit = history.git("commit-tree", tree, "-p", "HEAD", "-m", "hostile").strip().decode()
    history.git("branch", "hostile", commit)
    ours, theirs = tmp_path / "ours", tmp_path / "git"
    for p in (ours, theirs):
        git(None, "clone", "-q", str(history.path), str(p), env=git_env)
        git(p, "branch", "hostile", "origin/hostile", env=git_env)
    before = git(ours, "ls-files", "-s", env=git_env)
    code, out, err = _switch(ours, "hostile")
    want = run_git(theirs, "checkout", "hostile", env=git_env, text=True, check=False)
    assert (code, out, err) == (want.returncode, want.stdout, want.stderr)
    assert "invalid path '.GIT/config'" in err
    assert read_ahead == [([b".GIT/config"], [])]
    assert git(ours, "ls-files", "-s", env=git_env) == before and not (ours / ".GIT").exists()


def test_a_tree_a_partial_clone_lacks_is_fetched_once_by_the_coordinator(history, tmp_path, git_env, read_ahead,
                                                                           monkeypatch, helpers_at_merge):
    """The child fetches nothing: it gives up on a tree the clone lacks
    (``--filter=tree:0``), silently, and the coordinator fetches it, once,
    with the blobs; the switch is then git's."""
    import subprocess

    monkeypatch.setenv("HOME", git_env["HOME"])
    history.git("config", "uploadpack.allowFilter", "true")
    ours, theirs = tmp_path / "ours", tmp_path / "git"
    for p in (ours, theirs):
        subprocess.run(["git", "clone", "-q", "--filter=tree:0", "-b", "other", f"file://{history.path}", str(p)],
                       env=git_env, check=True, capture_output=True)
    packs = sorted(os.listdir(ours / ".git" / "objects" / "pack"))
    repo = Repository.open(str(ours), dict(os.environ))
    target = git(ours, "rev-parse", "origin/main", env=git_env).strip()
    assert TreeAhead(repo, target, lambda tree: None).result() is None
    assert sorted(os.listdir(ours / ".git" / "objects" / "pack")) == packs  # the child wrote nothing
    read_ahead.clear()
    got = _switch(ours, "origin/main")
    want = run_git(theirs, "checkout", "origin/main", env=git_env, text=True)
    assert got == (want.returncode, want.stdout, want.stderr) and want.returncode == 0
    assert helpers_at_merge == [2]  # forked before the fetch: they read its pack all the same
    packs = [len([n for n in os.listdir(p / ".git" / "objects" / "pack") if n.endswith(".pack")]) for p in (ours, theirs)]
    assert packs[0] == packs[1]  # fetched once, as git did
    assert read_ahead == [None]  # the child gave up; the coordinator read (and fetched) the tree
    for args in (["ls-files", "-s"], ["status", "--porcelain"], ["rev-parse", "HEAD"]):
        assert git(ours, *args, env=git_env) == git(theirs, *args, env=git_env), args
