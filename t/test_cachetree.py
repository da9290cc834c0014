"""A path restore keeps the index's cache-tree as git does (cachetree.py):
whole when restoring from the index, invalidated along the paths a tree-ish
replaced otherwise; twins against `git checkout`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import git
from dulwich.object_format import get_object_format

from git_checkout_helper.cachetree import CacheTree, read_tree_extension

SHA1 = get_object_format("sha1")


@pytest.fixture
def twins(git_env, tmp_path):
    env = dict(git_env, PATH=os.pathsep.join([os.path.dirname(sys.executable), git_env.get("PATH", "")]))
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", str(src), env=env)
    for d in ("a", "b/c", "b/d", "e"):
        (src / d).mkdir(parents=True, exist_ok=True)
        for i in range(3):
            (src / d / f"f{i}").write_text(f"{d} {i}\n")
    (src / "top").write_text("top\n")
    git(src, "add", ".", env=env)
    git(src, "commit", "-qm", "one", env=env)
    (src / "b" / "c" / "f1").write_text("changed\n")
    (src / "a" / "new").write_text("new\n")
    git(src, "add", ".", env=env)
    git(src, "commit", "-qm", "two", env=env)
    out = []
    for name in ("ours", "git"):
        d = tmp_path / name
        git(tmp_path, "clone", "-q", str(src), str(d), env=env)
        git(d, "write-tree", env=env)  # a complete cache-tree in both
        out.append(d)
    return env, out[0], out[1]


def _tree_ext(d):
    return read_tree_extension(str(d / ".git" / "index"), SHA1)


def _both(env, ours, theirs, *args):
    a = subprocess.run(["git", "parallel-checkout", *args], cwd=ours, env=env, capture_output=True)
    b = subprocess.run(["git", "checkout", *args], cwd=theirs, env=env, capture_output=True)
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr), args
    assert git(ours, "ls-files", "-s", env=env).decode() == git(theirs, "ls-files", "-s", env=env).decode()
    assert _tree_ext(ours) == _tree_ext(theirs), args


def test_restore_from_the_index_keeps_it_all(twins):
    env, ours, theirs = twins
    full = _tree_ext(theirs)
    assert full is not None and b"-1" not in full
    for d in (ours, theirs):
        (d / "b" / "c" / "f0").write_text("mine\n")
    _both(env, ours, theirs, "--", "b/c/f0")
    assert _tree_ext(ours) == full


def test_restore_from_a_tree_invalidates_only_the_paths_it_replaced(twins):
    env, ours, theirs = twins
    _both(env, ours, theirs, "HEAD~1", "--", "b/c", "e")  # b/c/f1 replaced; e unchanged
    root = CacheTree.parse(_tree_ext(ours), 20)
    by_name = {s.name: s for s in root.subs}
    assert root.count == -1 and by_name[b"b"].count == -1
    assert by_name[b"a"].count >= 0 and by_name[b"e"].count >= 0
    assert {s.name: s.count >= 0 for s in by_name[b"b"].subs} == {b"c": False, b"d": True}
    _both(env, ours, theirs, "HEAD", "--", "a")  # the same objects: nothing more invalidated


def test_parse_serialize_round_trip(twins):
    _env, ours, _ = twins
    raw = _tree_ext(ours)
    assert CacheTree.parse(raw, 20).serialize() == raw
    t = CacheTree.parse(raw, 20)
    t.invalidate(b"b")  # a file where directory b was: its subtree goes
    assert [s.name for s in t.subs] == [b"a", b"e"] or b"b" not in [s.name for s in t.subs]


def test_root_of_reads_the_root_as_parse_does(twins):
    env, ours, _ = twins
    raw = _tree_ext(ours)
    root, whole = CacheTree.root_of(raw, 20), CacheTree.parse(raw, 20)
    head_tree = bytes.fromhex(git(ours, "rev-parse", "HEAD^{tree}", env=env).decode().strip())
    assert (root.name, root.count, root.oid, root.subs) == (b"", whole.count, head_tree, [])
    assert root.count == len(git(ours, "ls-files", env=env).splitlines())
    # Only the root is read: a damaged subtree after it does not matter to
    # it (parse refuses the whole); a damaged root is refused by both.
    damaged = raw[:-5]
    with pytest.raises(ValueError):
        CacheTree.parse(damaged, 20)
    assert CacheTree.root_of(damaged, 20).oid == head_tree
    for bad in (raw[:len(raw) // 40], b"\0x y\n", b"no nul"):
        with pytest.raises(ValueError):
            CacheTree.root_of(bad, 20)
