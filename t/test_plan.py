"""The planner (plan.py, twoway.py, oneway.py): ``plan_switch``, ``plan_reset``, ``worktree_matches``.

Trees and index entries are built by hand over a real work tree in ``tmp_path``;
no git runs.
"""

from __future__ import annotations

import os
import stat as stat_mod

import pytest

from git_checkout_helper.index import STAT_DATA, Entry
from git_checkout_helper.oneway import plan_reset
from git_checkout_helper.plan import (
    ERROR_NOT_UPTODATE_DIR,
    ERROR_WOULD_LOSE_UNTRACKED,
    ERROR_WOULD_OVERWRITE,
    HINT_COMMIT_OR_STASH,
    PlanError,
    blob_hash,
    worktree_matches,
)
from git_checkout_helper.tree import TreeFiles, tree_value
from git_checkout_helper.twoway import plan_switch

REG, EXE, LNK = 0o100644, 0o100755, 0o120000


def oid(data: bytes) -> bytes:
    return blob_hash(data, "sha1")


class Tree:
    """A hand-made work tree with its index entries and trees."""

    def __init__(self, top) -> None:
        self.top = top
        self.topb = os.fsencode(str(top)) + b"/"

    def write(self, path: str, data: bytes, mode: int = REG) -> Entry:
        full = self.top / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if mode == LNK:
            os.symlink(data, full)
        else:
            full.write_bytes(data)
            full.chmod(0o755 if mode == EXE else 0o644)
        e = Entry(path.encode(), mode, oid(data))
        e.fill_stat(os.lstat(full))
        return e

    def plan(self, head: dict, target: dict, index: list[Entry], ignored=lambda p: False):
        return plan_switch(_tree(head), _tree(target), {e.name: e for e in index}, self.topb, "sha1",
                           lambda e: None, 0, ignored)


def _tree(files: dict) -> TreeFiles:
    return TreeFiles({p.encode(): tree_value(m, oid(d)) for p, (m, d) in files.items()}, {}, None)


def test_plan_switch_writes_changes_keeps_the_rest(tmp_path):
    t = Tree(tmp_path)
    a, b, c = t.write("a", b"a\n"), t.write("dir/b", b"b\n"), t.write("c", b"c\n")
    head = {"a": (REG, b"a\n"), "dir/b": (REG, b"b\n"), "c": (REG, b"c\n")}
    target = {"a": (REG, b"a2\n"), "dir/b": (REG, b"b\n"), "d": (EXE, b"d\n")}
    plan = t.plan(head, target, [a, b, c])
    assert [e.name for e in plan.write] == [b"a", b"d"]
    assert plan.remove == [b"c"]
    assert plan.entries[b"dir/b"] is b  # unchanged: the old entry, stat data and all
    assert plan.carried == {b"dir/b"}
    assert sorted(plan.entries) == [b"a", b"d", b"dir/b"]


def test_plan_switch_carries_local_changes_to_unchanged_paths(tmp_path):
    t = Tree(tmp_path)
    a, b = t.write("a", b"a\n"), t.write("b", b"b\n")
    (tmp_path / "b").write_bytes(b"local\n")
    plan = t.plan({"a": (REG, b"a\n"), "b": (REG, b"b\n")}, {"a": (REG, b"a2\n"), "b": (REG, b"b\n")}, [a, b])
    assert [e.name for e in plan.write] == [b"a"]
    assert plan.entries[b"b"] is b


def test_plan_switch_refuses_with_gits_groups(tmp_path):
    t = Tree(tmp_path)
    t.write("a", b"a\n")
    b, g = t.write("b", b"b\n"), t.write("gone", b"g\n")
    staged = Entry(b"a", REG, oid(b"staged\n"))  # index differs from HEAD
    (tmp_path / "b").write_bytes(b"modified\n")  # file differs from the index
    (tmp_path / "new").write_bytes(b"untracked\n")
    (tmp_path / "dir2file").mkdir()
    (tmp_path / "dir2file" / "u").write_bytes(b"untracked\n")
    head = {"a": (REG, b"a\n"), "b": (REG, b"b\n"), "gone": (REG, b"g\n")}
    target = {"a": (REG, b"a2\n"), "b": (REG, b"b2\n"), "new": (REG, b"n\n"), "dir2file": (REG, b"f\n")}
    with pytest.raises(PlanError) as info:
        t.plan(head, target, [staged, b, g])
    msg = str(info.value).split("\n")
    assert msg == [
        f"error: {ERROR_WOULD_OVERWRITE}", "\ta", HINT_COMMIT_OR_STASH,
        f"error: {ERROR_WOULD_OVERWRITE}", "\tb", HINT_COMMIT_OR_STASH,
        f"error: {ERROR_NOT_UPTODATE_DIR}", "\tdir2file", "",
        f"error: {ERROR_WOULD_LOSE_UNTRACKED}", "\tnew", "Please move or remove them before you switch branches.",
        "Aborting",
    ]
    assert info.value.groups[ERROR_WOULD_OVERWRITE] == [b"a", b"b"]


def test_plan_switch_ignored_files_are_overwritten(tmp_path):
    t = Tree(tmp_path)
    (tmp_path / "build.o").write_bytes(b"old object\n")
    plan = t.plan({}, {"build.o": (REG, b"tracked now\n")}, [], ignored=lambda p: p.endswith(b".o"))
    assert [e.name for e in plan.write] == [b"build.o"]


def test_plan_switch_no_errors_below_a_refused_path(tmp_path):
    # git stops at the first error of a file/directory pair.
    t = Tree(tmp_path)
    f = t.write("f", b"f\n")
    os.unlink(tmp_path / "f")
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "a").write_bytes(b"mine\n")
    with pytest.raises(PlanError) as info:
        t.plan({"f": (REG, b"f\n")}, {"f/a": (REG, b"theirs\n")}, [f])
    assert list(info.value.groups.items()) == [(ERROR_NOT_UPTODATE_DIR, [b"f"])]


def test_plan_reset_keeps_matching_entries(tmp_path):
    t = Tree(tmp_path)
    a, b = t.write("a", b"a\n"), t.write("b", b"b\n")
    (tmp_path / "b").write_bytes(b"local\n")
    (tmp_path / "c").write_bytes(b"untracked\n")
    target = _tree({"a": (REG, b"a\n"), "b": (REG, b"b\n"), "c": (REG, b"c\n")})
    plan = plan_reset(target, {b"a": a, b"b": b, b"old": Entry(b"old", REG, oid(b"o"))}, t.topb, "sha1",
                      lambda e: None, 0)
    assert plan.carried == {b"a"}
    assert [e.name for e in plan.write] == [b"b", b"c"]
    assert plan.remove == [b"old"]


def test_plan_reset_can_take_the_targets_files_over(tmp_path):
    """``consume``: the plan's entries are made in the target's own
    dictionary (one dictionary of the paths, not two), which the tree
    holds no more; the plan is the one made without it."""
    t = Tree(tmp_path)
    a, b = t.write("a", b"a\n"), t.write("b", b"b\n")
    (tmp_path / "b").write_bytes(b"local\n")
    spec = {"c": (EXE, b"c\n"), "a": (REG, b"a\n"), "b": (REG, b"b\n"), "d/e": (LNK, b"a")}
    old = {b"a": a, b"b": b, b"old": Entry(b"old", REG, oid(b"o"))}
    kept = plan_reset(_tree(spec), dict(old), t.topb, "sha1", lambda e: None, 0)
    target = _tree(spec)
    files = target.files
    plan = plan_reset(target, dict(old), t.topb, "sha1", lambda e: None, 0, consume=True)
    assert plan.entries is files and target.files == {}
    assert sorted(plan.entries.items()) == sorted(kept.entries.items())
    assert [e.name for e in plan.write] == [e.name for e in kept.write] == [b"b", b"c", b"d/e"]
    assert (plan.remove, plan.merged) == (kept.remove, kept.merged) == ([b"old"], [])


def test_worktree_matches_stat_then_content(tmp_path):
    t = Tree(tmp_path)
    e = t.write("x", b"same\n")
    full = os.fsencode(str(tmp_path / "x"))
    assert worktree_matches(e, full, os.lstat(full), "sha1", lambda e: None, 0)
    os.utime(full, ns=(1, 1))  # stat differs, content the same
    assert worktree_matches(e, full, os.lstat(full), "sha1", lambda e: None, 0)
    (tmp_path / "x").write_bytes(b"diff\n")  # same size, other content
    os.utime(full, ns=(1, 1))
    assert not worktree_matches(e, full, os.lstat(full), "sha1", lambda e: None, 0)
    # a converted file matches through to_worktree
    assert worktree_matches(e, full, os.lstat(full), "sha1", lambda e: b"diff\n", 0)
    # racy: stat matches but the entry is as new as the index: content decides
    e2 = t.write("y", b"y\n")
    (tmp_path / "y").write_bytes(b"z\n")
    yfull = os.fsencode(str(tmp_path / "y"))
    e2.fill_stat(os.lstat(yfull))
    assert not worktree_matches(e2, yfull, os.lstat(yfull), "sha1", lambda e: None, os.lstat(yfull).st_mtime_ns)
    link = t.write("l", b"target", LNK)
    lfull = os.fsencode(str(tmp_path / "l"))
    os.utime(lfull, ns=(1, 1), follow_symlinks=False)
    assert worktree_matches(link, lfull, os.lstat(lfull), "sha1", lambda e: None, 0)
    exe = Entry(b"x", EXE, oid(b"diff\n"))
    assert not worktree_matches(exe, full, os.lstat(full), "sha1", lambda e: None, 0)


def test_plan_switch_believes_refresh_up_to_date_mark(tmp_path, monkeypatch):
    """``verify_uptodate_1``: an entry ``refresh_index`` marked up to date is
    not looked at again (no lstat per changed path after the refresh's one);
    one it did not mark still is, and a local change still refuses."""
    t = Tree(tmp_path)
    a, b = t.write("a", b"a\n"), t.write("b", b"b\n")
    (tmp_path / "b").write_bytes(b"local\n")
    a.uptodate, b.uptodate = True, False  # as refresh_entries leaves an unchanged file and a changed one
    seen = []
    real = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p, *k: seen.append(os.fsdecode(p)) or real(p, *k))
    head = {"a": (REG, b"a\n"), "b": (REG, b"b\n")}
    target = {"a": (REG, b"a2\n"), "b": (REG, b"b2\n")}
    with pytest.raises(PlanError) as info:
        plan_switch(_tree(head), _tree(target), {e.name: e for e in (a, b)}, t.topb, "sha1",
                    lambda e: None, 0, lambda p: False, refreshed=True)
    assert info.value.groups[ERROR_WOULD_OVERWRITE] == [b"b"]
    assert not any(p.endswith("/a") for p in seen)
    assert any(p.endswith("/b") for p in seen)


@pytest.mark.parametrize("field", ["mtime_s", "size", "ino", "uid", "gid", "ctime_s", "mtime_ns", "dev", None])
def test_stat_matches_same_verdict_from_an_lstat_and_a_helpers_record(tmp_path, field):
    """``match_stat_data`` reads an ``os.stat_result`` field by field and a
    helper's StatData through ``stat_data``: the same verdict for each field
    that differs, under every ``core.checkStat`` / ``core.trustctime``."""
    from git_checkout_helper.wire import StatData

    t = Tree(tmp_path)
    e = t.write("f", b"x\n")
    st = os.lstat(tmp_path / "f")
    if field:  # (the entry's stat data are packed: index.STAT_DATA, fields in this order)
        names = ["ctime_s", "ctime_ns", "mtime_s", "mtime_ns", "dev", "ino", "uid", "gid", "size"]
        values = list(STAT_DATA.unpack(e.sd))
        values[names.index(field)] += 1
        e.sd = STAT_DATA.pack(*values)
        assert getattr(e, field) == values[names.index(field)]
    for check_stat in (True, False):
        for trust_ctime in (True, False):
            want = e.stat_matches(StatData.from_os(st), check_stat, trust_ctime)
            assert e.stat_matches(st, check_stat, trust_ctime) == want
            assert want == (field is None or field in {"mtime_ns", "dev"}
                            or (field == "ctime_s" and not (check_stat and trust_ctime))
                            or (field in {"ino", "uid", "gid"} and not check_stat))


def test_nothing_below_a_missing_directory_is_looked_up(tmp_path, monkeypatch):
    """verify_absent's lookups: once a leading directory is found missing,
    the deeper ones and the path itself are absent without an lstat each."""
    from git_checkout_helper import plan

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "file").write_text("x")
    wt = plan._Worktree(os.fsencode(tmp_path) + b"/")
    calls = []
    real = os.lstat
    monkeypatch.setattr(plan.os, "lstat", lambda p: calls.append(p) or real(p))
    assert wt.leading_file(b"a/b/c/f") is None
    assert len(calls) == 2  # a, a/b
    assert wt.lstat(b"a/b/c/f") is None and wt.lstat(b"a/b/c") is None
    assert wt.leading_file(b"a/b/c/g") is None and wt.lstat(b"a/b/c/g") is None
    assert len(calls) == 2  # a/b/c/g is below the a/b known missing too
    assert wt.leading_file(b"a/file/x") == b"a/file"  # a file in the way is still found


def _index_is_head_world(top, *, local: bool, untracked: bool):
    """A work tree whose index is exactly HEAD's files, and a target that
    changes, adds, drops, retypes and moves paths across file/directory
    boundaries; ``local``: a changed path also modified in the work tree;
    ``untracked``: an untracked file where the target adds one."""
    t = Tree(top)
    head = {"same": (REG, b"s\n"), "changed": (REG, b"c\n"), "gone": (REG, b"g\n"), "exe": (REG, b"x\n"),
            "d/same": (REG, b"ds\n"), "d/changed": (REG, b"dc\n"), "f2d": (REG, b"f\n"), "d2f/x": (REG, b"x\n"),
            "link": (LNK, b"same")}
    index = [t.write(p, data, mode) for p, (mode, data) in sorted(head.items())]
    target = dict(head, changed=(REG, b"c2\n"), exe=(EXE, b"x\n"), added=(REG, b"new\n"), link=(LNK, b"other"))
    target["d/changed"] = (REG, b"dc2\n")
    target["f2d/in"] = (REG, b"in\n")
    target["d2f"] = (REG, b"now a file\n")
    for p in ("gone", "f2d", "d2f/x"):
        del target[p]
    if local:
        (top / "d" / "changed").write_bytes(b"mine\n")
    if untracked:
        (top / "added").write_bytes(b"untracked\n")
    return t, head, target, index


@pytest.mark.parametrize("local,untracked", [(False, False), (True, False), (False, True)])
def test_plan_switch_from_the_index_as_head_plans_as_from_heads_tree(tmp_path, local, untracked):
    """``head`` None (the index holds HEAD's files, read from its entries)
    plans exactly what HEAD's tree read for the same index plans: the same
    writes, removals and entries, or the same refusal; and it names the
    merged paths (Plan.merged) for the cache tree."""

    def run(head_files):
        t, head, target, index = _index_is_head_world(tmp_path / str(head_files is None), local=local,
                                                      untracked=untracked)
        try:
            plan = plan_switch(None if head_files is None else _tree(head), _tree(target),
                               {e.name: e for e in index}, t.topb, "sha1", lambda e: None, 0, lambda p: False)
        except PlanError as e:
            return str(e), None
        return ([(e.name, e.mode, e.oid) for e in plan.write], plan.remove,
                sorted((p, e.mode, e.oid) for p, e in plan.entries.items())), plan.merged

    from_tree, merged_none = run({})
    from_index, merged = run(None)
    assert from_index == from_tree
    assert merged_none is None
    if local or untracked:
        assert isinstance(from_index[0], str)  # refused, both ways
    else:
        assert sorted(merged) == [b"added", b"changed", b"d/changed", b"d2f", b"d2f/x", b"exe", b"f2d",
                                  b"f2d/in", b"gone", b"link"]


def test_a_file_looked_at_once_is_not_kept(tmp_path, monkeypatch):
    """``_Worktree.peek``: a leaving file's (or a ``-f``'s kept file's) stat
    is not kept to the plan's end; an absence, a directory and ENOTDIR are,
    as the checks after them ask. A far switch at 100,000 files kept 8.7 MiB
    of them. The switch and the reset look through it."""
    import git_checkout_helper.plan as plan_mod

    (tmp_path / "f").write_bytes(b"xy\n")
    (tmp_path / "d").mkdir()
    wt = plan_mod._Worktree(os.fsencode(tmp_path) + b"/")
    assert wt.peek(b"f").st_size == 3 and wt.peek(b"d") is not None and wt.peek(b"gone") is None
    assert wt.peek(b"f/below") is None and b"f/below" in wt.notdir
    assert set(wt._cache) == {b"d", b"gone", b"f/below"}
    kept: list[bytes] = []
    real = plan_mod._Worktree.lstat
    monkeypatch.setattr(plan_mod._Worktree, "lstat",
                        lambda self, p, keep_file=True: (keep_file and kept.append(p)) or real(self, p, keep_file))
    t = Tree(tmp_path / "wt")
    entries = [t.write("a", b"one\n"), t.write("b", b"two\n")]
    for e in entries:
        e.uptodate = True  # (as refresh_index leaves them)
    plan = plan_switch(_tree({"a": (REG, b"one\n"), "b": (REG, b"two\n")}), _tree({"a": (REG, b"one\n")}),
                       {e.name: e for e in entries}, t.topb, "sha1", lambda e: None, 0, lambda p: False,
                       refreshed=True)
    assert plan.remove == [b"b"] and b"b" not in kept  # (looked at through peek)
    plan = plan_reset(_tree({"a": (REG, b"one\n")}), {e.name: e for e in entries}, t.topb, "sha1", lambda e: None, 0)
    assert plan.remove == [b"b"] and b"a" not in kept


@pytest.mark.parametrize("local,untracked", [(False, False), (True, False), (False, True)])
def test_a_switch_from_heads_index_plans_in_the_targets_own_files(tmp_path, local, untracked):
    """``consume`` (the index is HEAD's): the plan's entries are made in the
    target's own dictionary, which the tree no longer holds, its values at
    the merged paths kept apart; the plan (or the refusal) and where the new
    index differs from the target are those of a merge that leaves the
    target as it is."""
    from git_checkout_helper.checkout.unpack import target_differences

    def run(consume):
        t, head, target, index = _index_is_head_world(tmp_path / str(consume), local=local, untracked=untracked)
        tree = _tree(target)
        files, values = tree.files, dict(tree.files)
        try:
            plan = plan_switch(None, tree, {e.name: e for e in index}, t.topb, "sha1", lambda e: None, 0,
                               lambda p: False, consume=consume)
        except PlanError as e:
            return str(e), tree.files == {} if consume else tree.files is files
        if consume:
            assert plan.entries is files and tree.files == {}
            assert plan.merged_values == [values.get(p) for p in plan.merged] and plan.merged == sorted(plan.merged)
        else:
            assert tree.files is files and plan.merged_values is None
        return ([(e.name, e.mode, e.oid) for e in plan.write], plan.remove, plan.merged,
                sorted((p, e.mode, e.oid) for p, e in plan.entries.items()), target_differences(tree, plan)), True

    assert run(True) == run(False)
    t, head, target, index = _index_is_head_world(tmp_path / "head", local=local, untracked=untracked)
    with pytest.raises(ValueError):  # (HEAD's own tree read: the caller reads the target's files after)
        plan_switch(_tree(head), _tree(target), {e.name: e for e in index}, t.topb, "sha1", lambda e: None, 0,
                    lambda p: False, consume=True)


def test_a_merge_sets_each_merged_entry_in_place(tmp_path):
    """The merged paths' entries replace the index's in the plan's
    dictionary, which does not outgrow the table of one built path by path
    (emptied of every merged path and filled again, it did: twice the size
    at 100,000 paths), with and without ``consume``."""
    import sys

    t = Tree(tmp_path)
    n, merged = 3000, 2700  # (emptied of 90% and filled again, a dictionary of 3,000 doubles its table)
    index = [Entry(b"f%d" % i, REG, oid(b"old %d" % i)) for i in range(n)]
    target = {f"f{i}": (REG, b"new %d" % i if i < merged else b"old %d" % i) for i in range(n)}
    for consume in (False, True):
        plan = plan_switch(None, _tree(target), {e.name: e for e in index}, t.topb, "sha1", lambda e: None, 0,
                           lambda p: False, consume=consume)
        assert sorted(e.oid for e in plan.write) == sorted(oid(b"new %d" % i) for i in range(merged))
        assert sorted(e.oid for e in plan.entries.values()) == sorted(oid(v) for _, v in target.values())
        assert sys.getsizeof(plan.entries) <= sys.getsizeof({p: e for p, e in plan.entries.items()})


@pytest.mark.parametrize("local,untracked", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("from_head", [False, True])
def test_a_merge_that_lets_the_index_go_plans_the_same(tmp_path, local, untracked, from_head):
    """``let_go``: each index entry the merge replaces is made the new one
    in place (the index's dictionary keeps every path it had, no other,
    and the plan's entry there is the index's own object); the plan (or
    the refusal) and where the new index differs from the target are
    those of a merge that leaves the index as read, from HEAD's tree or
    from the index."""
    from git_checkout_helper.checkout.unpack import target_differences

    def run(let_go):
        t, head, target, index = _index_is_head_world(tmp_path / f"{let_go}", local=local, untracked=untracked)
        old = {e.name: e for e in index}
        read = {p: (e, e.fields()) for p, e in old.items()}
        tree = _tree(target)
        try:
            plan = plan_switch(_tree(head) if from_head else None, tree, old, t.topb, "sha1", lambda e: None, 0,
                               lambda p: False, let_go=let_go)
        except PlanError as e:
            return str(e)
        assert old.keys() == read.keys() and all(old[p] is e for p, (e, _) in read.items())
        changed = {p for p, (e, fields) in read.items() if e.fields() != fields}
        replaced = {p for p, e in plan.entries.items() if p in read and e is not read[p][0]}
        if let_go:
            assert changed == {b"changed", b"d/changed", b"exe", b"link"} and not replaced
            assert all(plan.entries[p].oid == oid(target[p.decode()][1]) for p in changed)
        else:
            assert not changed and replaced == {b"changed", b"d/changed", b"exe", b"link"}
        return ([(e.name, e.mode, e.oid) for e in plan.write], plan.remove, plan.merged,
                sorted((p, e.mode, e.oid) for p, e in plan.entries.items()), target_differences(tree, plan))

    assert run(True) == run(False)


def test_a_leading_directory_is_kept_as_one(tmp_path):
    """``_Worktree``: a directory looked at as a leading one is kept as
    being one, not as its stat data (half a KiB each: 1.6 MiB of a big
    switch's leading directories); asked for as a path, it is looked at
    again and kept in full."""
    import git_checkout_helper.plan as plan_mod

    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "f").write_bytes(b"x")
    wt = plan_mod._Worktree(os.fsencode(tmp_path) + b"/")
    assert wt.leading_file(b"d/e/new") is None and wt.leading_file(b"d/f/new") == b"d/f"
    assert wt._cache[b"d"] is plan_mod._A_DIRECTORY and wt._cache[b"d/e"] is plan_mod._A_DIRECTORY
    st = wt.lstat(b"d/e")
    assert isinstance(st, os.stat_result) and stat_mod.S_ISDIR(st.st_mode) and wt._cache[b"d/e"] is st
    assert wt.leading_file(b"d/e/other") is None  # (a directory kept in full is still one)
    assert wt.leading_file(b"gone/x/y") is None and wt._cache[b"gone"] is None and wt._cache[b"gone/x/y"] is None
