"""The preload before a switch's refresh (``preload_index``, git_checkout_helper.preload).

:func:`refresh.fresh_test` answers as :func:`refresh.is_fresh` for every
field changed, every mode, values beyond 32 bits, racy or not, under each
``core.*`` setting, and takes the usual case without it. The workers'
verdicts are checked against :func:`refresh.is_fresh` entry by entry (matching, changed, racy, missing, a directory, a gitlink, assume
unchanged), a worker that fails leaves its whole share to the refresh, and
none is left behind, even when finish() is interrupted. Then a switch of a
4,400-file repository with local
changes (a file touched but unchanged, a file modified) is compared with git's
(the same index, status, stat-clean diff-files, messages), with the preload
running and with ``core.preloadIndex=false``, in a split index of version 4,
in a linked worktree, and in a sparse checkout with ``core.checkStat=minimal``;
and the same with the target tree read by a child (treeahead.py); plain, split
v4, linked and sparse again with the coordinator's lstats and unlinks in flight
together (iopool.py, ``checkout.coordinatorThreads``).
"""

from __future__ import annotations

import io
import os

import pytest
from conftest import files_repo, git, isolate_api_env, run_git, twin_env

from git_checkout_helper import refresh, treeahead
from git_checkout_helper.checkout import switch
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.switch import run_checkout
from git_checkout_helper.coresettings import DEFAULT_CORE, CoreSettings
from git_checkout_helper.index import S_IFGITLINK, Entry
from git_checkout_helper.iopool import IoPool
from git_checkout_helper.preload import PRELOAD_COST, THREAD_COST, Preload, workers_for
from git_checkout_helper.refresh import fresh_test, is_fresh
from git_checkout_helper.repository import Repository


def _entry(top: bytes, name: bytes, mode: int = 0o100644) -> Entry:
    e = Entry(name, mode, b"\0" * 20)
    e.fill_stat(os.lstat(top + name))
    e.uptodate = False
    return e


@pytest.fixture
def tree(tmp_path):
    """A work tree and entries for it: (top, entries, index timestamp in ns)."""
    top = os.fsencode(tmp_path) + b"/"
    entries = []
    for i in range(40):
        name = b"f%02d" % i
        with open(top + name, "wb") as f:
            f.write(b"x" * i)
        entries.append(_entry(top, name))
    racy_ns = max(os.lstat(top + e.name).st_mtime_ns for e in entries) + 5_000_000_000
    # Changed after its entry was made: another size.
    with open(top + b"f03", "ab") as f:
        f.write(b"more")
    # Racy: its mtime is not older than the index.
    os.utime(top + b"f05", ns=(racy_ns, racy_ns))
    entries[5] = _entry(top, b"f05")
    os.unlink(top + b"f07")  # missing
    os.unlink(top + b"f09")
    os.mkdir(top + b"f09")  # a directory where the file was
    entries[11].mode = S_IFGITLINK
    entries[13].flags |= 0x8000  # CE_VALID (assume unchanged)
    return top, entries, racy_ns


_NS = 1_000_000_000
_FIELDS = ("mode", "ino", "dev", "nlink", "uid", "gid", "size", "atime", "mtime", "ctime")


def _stat(**fields) -> os.stat_result:
    """An lstat result: a regular 0644 file unless ``fields`` say otherwise."""
    base = dict(mode=0o100644, ino=70, dev=3, nlink=1, uid=1000, gid=100, size=12, atime=5, mtime=1_700_000_000,
                ctime=1_700_000_001)
    base.update(fields)
    return os.stat_result(tuple(base[f] for f in _FIELDS),
                          {f"st_{t}_ns": base[t] * _NS + 123 for t in ("atime", "mtime", "ctime")})


def _cases():
    """(entry, stat) pairs: the entry made from a stat, then the file's stat
    with one thing different (or none)."""
    plain = _stat()
    yield plain, plain
    for field, value in (("ino", 71), ("uid", 0), ("gid", 0), ("size", 13), ("mtime", 1_700_000_002),
                         ("ctime", 1_700_000_002), ("dev", 4), ("nlink", 2), ("atime", 6),
                         ("mode", 0o100755), ("mode", 0o100664), ("mode", 0o120777), ("mode", 0o40755)):
        yield plain, _stat(**{field: value})
    big = _stat(size=(1 << 32) + 12, ino=(1 << 32) + 70, mtime=(1 << 32) + 9)
    yield big, big  # the entry holds them cut to 32 bits
    yield _stat(mode=0o100664), _stat(mode=0o100664)
    yield _stat(mode=0o100700), _stat(mode=0o100700)
    yield _stat(mode=0o120777, size=3), _stat(mode=0o120777, size=3)
    yield _stat(mode=0o120777, size=3), _stat(mode=0o100644, size=3)  # core.symlinks=false


def _entry_for(st: os.stat_result) -> Entry:
    mode = st.st_mode
    mode = 0o120000 if mode & 0o170000 == 0o120000 else 0o100755 if mode & 0o100 else 0o100644
    e = Entry(b"f", mode, b"\1" * 20)
    e.fill_stat(st)
    return e


@pytest.mark.parametrize("core", [DEFAULT_CORE, CoreSettings(check_stat=False), CoreSettings(trust_ctime=False),
                                  CoreSettings(filemode=False), CoreSettings(symlinks=False)])
def test_fresh_test_answers_as_is_fresh(core):
    mtime = _stat().st_mtime
    for racy_ns in (0, (mtime + 1) * _NS, mtime * _NS, (mtime - 1) * _NS, ((1 << 32) + 10) * _NS):
        fresh = fresh_test(racy_ns, core)
        for made_from, st in _cases():
            e = _entry_for(made_from)
            assert fresh(e, st) == is_fresh(e, st, racy_ns, core), (made_from, st, racy_ns, core)


def test_fresh_test_takes_the_usual_case_in_one_step(monkeypatch):
    """A plain unchanged file is found fresh without :func:`is_fresh`."""
    monkeypatch.setattr(refresh, "is_fresh", lambda *a: pytest.fail("is_fresh asked"))
    st = _stat()
    assert fresh_test((st.st_mtime + 1) * _NS, DEFAULT_CORE)(_entry_for(st), st)


def _expected(top, entries, racy_ns) -> list[bool]:
    out = []
    for e in entries:
        try:
            st = os.lstat(top + e.name)
        except OSError:
            out.append(False)
            continue
        out.append(e.mode != S_IFGITLINK and not e.flags & 0x8000 and is_fresh(e, st, racy_ns, DEFAULT_CORE))
    return out


@pytest.mark.parametrize("workers, threads", [(1, 0), (2, 0), (3, 0), (7, 0), (1, 4), (2, 8)])
def test_workers_mark_what_refresh_would(tree, workers, threads):
    """(``threads``: each worker's lstats in flight together, iopool.py)"""
    top, entries, racy_ns = tree
    want = _expected(top, entries, racy_ns)
    assert want.count(False) == 6 and not want[3] and not want[5]  # the set-up does what it says
    p = Preload(entries, top, racy_ns, DEFAULT_CORE, workers, io=IoPool(threads) if threads else None)
    assert p.finish() == want.count(True)
    assert [e.uptodate for e in entries] == want
    assert not p.entries  # let go: the switch holds its Preload to the end


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_here_takes_the_last_share_at_once(tree, workers):
    top, entries, racy_ns = tree
    want = _expected(top, entries, racy_ns)
    p = Preload(entries, top, racy_ns, DEFAULT_CORE, workers, here=True)
    last = len(entries) * (workers - 1) // workers
    assert len(p._running) == workers - 1  # one child fewer: the last share is done here
    assert [e.uptodate for e in entries] == [False] * last + want[last:]
    assert p.finish() == want.count(True)
    assert [e.uptodate for e in entries] == want


def test_a_failing_worker_leaves_its_share_to_refresh(tree):
    top, entries, racy_ns = tree

    class Broken:  # a name the worker cannot look up (not a path at all): it fails
        mode, flags, name, uptodate = 0o100644, 0, None, False

    entries[30] = Broken()
    p = Preload(entries, top, racy_ns, DEFAULT_CORE, 2)  # shares 0-19, 20-39
    marked = p.finish()
    assert not any(e.uptodate for e in entries[20:])
    assert [e.uptodate for e in entries[:20]] == _expected(top, entries[:20], racy_ns)
    assert marked == sum(e.uptodate for e in entries[:20]) > 0


def test_close_stops_and_reaps(tree):
    top, entries, racy_ns = tree
    p = Preload(entries * 200, top, racy_ns, DEFAULT_CORE, 2)
    pids = [pid for pid, *_ in p._running]
    p.close()
    p.close()  # idempotent
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    assert not any(e.uptodate for e in entries)
    assert p.finish() == 0


def test_workers_for():
    assert workers_for(PRELOAD_COST - 1, 8) == 0
    assert workers_for(2 * PRELOAD_COST, 8) == 2
    assert workers_for(100 * PRELOAD_COST, 8) == 8
    assert workers_for(100 * PRELOAD_COST, 64) == 20  # git's MAX_PARALLEL
    assert workers_for(100 * PRELOAD_COST, 1) == 0  # nothing to overlap with on one CPU
    # A latency-bound work tree (an I/O pool): from git's threshold on, one at least.
    assert workers_for(2 * THREAD_COST - 1, 8, IoPool(16)) == 0
    assert workers_for(2 * THREAD_COST, 1, IoPool(16)) == workers_for(2 * THREAD_COST, 8, IoPool(16)) == 1
    assert workers_for(100 * PRELOAD_COST, 8, IoPool(16)) == 8


N_FILES = 2 * PRELOAD_COST + 400


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A repository of N_FILES files in 40 directories; branch other changes 30."""
    src = tmp_path_factory.mktemp("preload") / "src"
    env = twin_env(src.parent)
    files_repo(src, N_FILES, 40, {"other": range(0, 300, 10)}, env)
    return src, env


def _twin(src, env, path, preload: bool, setup: str = "plain"):
    """A clone set up as ``setup`` says: "plain", "sparse", "split-v4" or
    "linked", with "+io" the coordinator's lstats in flight together
    (iopool.py, as on a latency-bound filesystem)."""
    git(None, "clone", "-q", str(src), str(path), env=env)
    if not preload:
        git(path, "config", "core.preloadIndex", "false", env=env)
    setup, _, io = setup.partition("+")
    if io:
        git(path, "config", "checkout.coordinatorThreads", "8", env=env)
    if setup == "sparse":  # skip-worktree entries (their files absent) and stat data compared minimally
        git(path, "sparse-checkout", "set", "d00", "d01", "d02", env=env)
        git(path, "config", "core.checkStat", "minimal", env=env)
    elif setup == "split-v4":  # entries from a shared index, names prefix-compressed
        git(path, "config", "core.splitIndex", "true", env=env)
        git(path, "update-index", "--index-version", "4", "--split-index", env=env)
    elif setup == "linked":  # the switch runs in a linked worktree (its own index, .git a file)
        git(path, "worktree", "add", "-q", "-b", "wt", str(path) + ".wt", "main", env=env)
        path = path.parent / (path.name + ".wt")
    # The index is written a second after the files: none of them is racy.
    index = path / git(path, "rev-parse", "--git-path", "index", env=env).decode().strip()
    later = os.stat(index).st_mtime + 2
    os.utime(index, (later, later))
    old = os.stat(path / "d01" / "f1").st_mtime - 10
    os.utime(path / "d01" / "f1", (old, old))  # new stat data, same content: refreshed
    (path / "d02" / "f2").write_text("local change\n")  # carried over (other keeps f2)
    return path


def _switch_both(big, tmp_path, monkeypatch, preload: bool, setup: str = "plain", ahead: bool = False):
    """Twins switched to ``other``, ours through the API (two CPUs, whatever
    this machine has), git with two workers: (ours, git's, our report).
    ``ahead``: the target tree read by a child (treeahead.py, its size
    threshold lowered), whose result must be the one used, while the
    coordinator takes a share of the preload itself."""
    src, env = big
    used, heres = [], []
    monkeypatch.setattr(switch, "Preload", lambda *a, **k: heres.append((*a[4:6], getattr(a[6], "threads", 0))) or Preload(*a, **k))
    if ahead:
        monkeypatch.setattr(treeahead, "MIN_INDEX_SIZE", 0)
        result = treeahead.TreeAhead.result
        monkeypatch.setattr(treeahead.TreeAhead, "result", lambda self, *index: used.append(result(self, *index)) or used[-1])
    ours = _twin(src, env, tmp_path / "ours", preload, setup)
    theirs = _twin(src, env, tmp_path / "git", preload, setup)
    isolate_api_env(monkeypatch, env["HOME"])
    out, err = io.StringIO(), io.StringIO()
    report = run_checkout(Repository.open(str(ours), dict(os.environ)), "other",
                          CheckoutOptions(workers=2, threshold=0, online_cpus=2, quiet=False), err=err, out=out)
    theirs_run = run_git(theirs, "-c", "checkout.workers=2", "checkout", "other", env=env, text=True)
    assert (out.getvalue(), err.getvalue()) == (theirs_run.stdout, theirs_run.stderr)
    assert len(used) == ahead and all(r is not None for r in used)
    assert heres == ([(report.preload_workers, ahead, report.coordinator_threads)] if preload else [])
    assert report.coordinator_threads == (8 if setup.endswith("+io") else 0)
    return ours, theirs, report


@pytest.mark.parametrize("preload, setup, ahead", [(True, "plain", False), (False, "plain", False),
                                                   (True, "split-v4", False), (True, "linked", False),
                                                   (True, "plain", True), (True, "split-v4", True),
                                                   (True, "linked", True), (True, "plain+io", False),
                                                   (True, "split-v4+io", True), (True, "linked+io", False)])
def test_switch_with_preload_as_git(big, tmp_path, monkeypatch, helpers_at_merge, preload, setup, ahead):
    env = big[1]
    ours, theirs, report = _switch_both(big, tmp_path, monkeypatch, preload, setup, ahead)
    assert helpers_at_merge == [2] and report.workers == 2  # forked before the merge, and used
    if preload:
        assert report.preload_workers == 2
        # Every entry but the touched and the modified file (the refresh decides those).
        assert report.preloaded == N_FILES - 2
    else:
        assert report.preload_workers == 0 and report.preloaded == 0
    assert report.written == 30
    for args in (["ls-files", "-s"], ["status", "--porcelain"], ["rev-parse", "HEAD"]):
        assert git(ours, *args, env=env) == git(theirs, *args, env=env), args
    index, gits = ((p / git(p, "rev-parse", "--git-path", "index", env=env).decode().strip()).read_bytes()
                   for p in (ours, theirs))
    split = setup.startswith("split-v4")
    assert index[4:8] == gits[4:8] == (b"\0\0\0\4" if split else b"\0\0\0\2")
    assert (b"link" in index) == (b"link" in gits) == split  # still split, as git's
    assert git(ours, "status", "--porcelain", env=env) == b" M d02/f2\n"
    # Stat-clean but for the local change: the touched file was refreshed into the index.
    assert git(ours, "diff-files", "--name-only", env=env) == b"d02/f2\n"


@pytest.mark.parametrize("setup, ahead", [("sparse", False), ("sparse", True), ("sparse+io", False)])
def test_switch_with_preload_in_a_sparse_checkout_as_git(big, tmp_path, monkeypatch, helpers_at_merge, setup, ahead):
    env = big[1]
    ours, theirs, report = _switch_both(big, tmp_path, monkeypatch, True, setup, ahead)
    assert helpers_at_merge == [2] and report.workers == 2  # forked before the merge, and used
    in_cone = 3 * N_FILES // 40
    assert report.preload_workers == 2 and report.preloaded == in_cone - 2  # no skip-worktree file is there
    for args in (["ls-files", "-s", "-t"], ["status", "--porcelain"], ["diff-files", "--name-only"]):
        assert git(ours, *args, env=env) == git(theirs, *args, env=env), args
    assert git(ours, "diff-files", "--name-only", env=env) == b"d02/f2\n"
    assert sorted(p.relative_to(ours) for p in ours.rglob("f*") if ".git" not in p.parts) == sorted(
        p.relative_to(theirs) for p in theirs.rglob("f*") if ".git" not in p.parts)


def test_an_interrupted_finish_leaves_close_every_worker(tree, monkeypatch):
    from git_checkout_helper import preload

    top, entries, racy_ns = tree
    p = Preload(entries * 100, top, racy_ns, DEFAULT_CORE, 3)
    pids = [pid for pid, *_ in p._running]
    second = p._running[1][1]  # the second worker's pipe
    real_read = os.read

    def interrupted(fd, n):
        if fd == second:
            raise KeyboardInterrupt
        return real_read(fd, n)

    monkeypatch.setattr(preload.os, "read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        p.finish()
    monkeypatch.setattr(preload.os, "read", real_read)
    p.close()
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
