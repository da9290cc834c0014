"""The coordinator's own lstats and unlinks in flight together (iopool.py):
the pool itself (results in order, errors at their turn, requests spread
over directories, the window ahead), when a checkout has one
(``checkout.coordinatorThreads``, else a latency-bound filesystem:
fsinfo.mount_kind, autoworkers.requests_in_flight), and switches made with
it forced on against git's: a far switch with every kind of thing in the
way (a symlink where a directory goes, a file where a directory goes, a
directory where a file goes, files leaving whole directories), a refused
one, with one helper and with two. No timing is asserted; the pool's use is
(its requests are counted)."""

from __future__ import annotations

import io
import os
import stat
import threading

import pytest
from conftest import clone_twins, git, isolate_api_env, run_git, twin_env

from git_checkout_helper import fsinfo, iopool
from git_checkout_helper import plan as plan_mod
from git_checkout_helper.autoworkers import auto_workers, requests_in_flight
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.restore import run_checkout_all
from git_checkout_helper.checkout.switch import run_checkout
from git_checkout_helper.checkout.updates import Checkout
from git_checkout_helper.config import ConfigError, coordinator_threads_setting
from git_checkout_helper.errors import CheckoutError
from git_checkout_helper.iopool import IoPool, io_pool
from git_checkout_helper.plan import PlanError
from git_checkout_helper.repository import Repository
from git_checkout_helper.twoway import _TwowayMerge

# -- the pool ---------------------------------------------------------------------


def test_map_answers_in_order_and_spreads_over_directories():
    paths = [b"a/1", b"a/2", b"a/3", b"b/1", b"c/1", b"c/2"]
    sent = []
    lock = threading.Lock()

    def ask(p):
        with lock:
            sent.append(p)
        return p.upper()

    assert IoPool(1).map(ask, paths) == [p.upper() for p in paths]
    # one thread takes them in the order sent: each directory's first, then each one's second...
    assert sent == [b"a/1", b"b/1", b"c/1", b"a/2", b"c/2", b"a/3"]
    assert iopool._spread([b"x", b"d/y", b"z"]) == [0, 1, 2]  # the top directory is one directory


def test_map_raises_the_first_error_in_order():
    def ask(p):
        if p in (b"b/1", b"a/2"):
            raise PermissionError(13, "denied", p)
        return p

    # b/1 is sent before a/2, but a serial loop would fail at a/2 first
    with pytest.raises(PermissionError) as e:
        IoPool(4).map(ask, [b"a/1", b"a/2", b"b/1"])
    assert e.value.filename == b"a/2"


def test_map_runs_requests_at_once():
    both = threading.Barrier(2, timeout=10)  # passes only with two requests in flight together
    assert IoPool(2).map(lambda p: both.wait() >= 0, [b"a/1", b"b/1"]) == [True, True]


def test_pipeline_sends_ahead_and_answers_in_order():
    entered = []

    def ahead(item):
        entered.append(item)
        if item == 3:
            raise FileExistsError(17, "in the way", str(item))
        if item == 5:
            return None  # nothing to ask
        return lambda: item * 10

    got = []
    for item, answer in IoPool(2).pipeline(range(8), ahead):
        if item == 0:
            assert entered == [0, 1, 2, 3, 4]  # the window: 2 x 2 threads ahead of the first turn
        try:
            got.append((item, answer()))
        except FileExistsError as e:
            got.append((item, e.filename))
    assert got == [(0, 0), (1, 10), (2, 20), (3, "3"), (4, 40), (5, None), (6, 60), (7, 70)]


def test_pipeline_closed_early_waits_for_what_was_sent():
    done = []

    def ahead(item):
        return lambda: done.append(item)

    it = IoPool(2).pipeline(range(10), ahead)
    next(it)
    it.close()
    assert sorted(done) == [0, 1, 2, 3, 4]  # sent, and finished before close() returned


# -- when a checkout has one ------------------------------------------------------------


def test_requests_in_flight_follow_the_auto_table():
    assert requests_in_flight("tmpfs", 2) == requests_in_flight("local", 8) == requests_in_flight("overlay", 4) == 0
    assert requests_in_flight("fuse", 2) == 16 and requests_in_flight("fuse", 1) == 8
    assert requests_in_flight("fuse", 64) == 64 and requests_in_flight("nfs", 2) == requests_in_flight("smb", 1) == 32
    for kind, cpus in (("fuse", 2), ("nfs", 4)):  # what auto shares between its helpers
        d = auto_workers(kind, None, cpus, 10_000)
        assert d.processes * d.threads == requests_in_flight(kind, cpus)


def test_io_pool_from_setting_or_filesystem():
    asked = []

    def kind(k):
        return lambda: asked.append(k) or k

    assert io_pool(None, kind("tmpfs"), 2) is None
    assert io_pool(None, kind("fuse"), 2).threads == 16
    assert io_pool(None, kind("nfs"), 2).threads == 32
    assert asked == ["tmpfs", "fuse", "nfs"]
    assert io_pool(0, kind("nfs"), 2) is None and io_pool(1, kind("nfs"), 2) is None
    assert io_pool(5, kind("tmpfs"), 2).threads == 5
    assert asked == ["tmpfs", "fuse", "nfs"]  # a setting: the filesystem is not asked


def test_coordinator_threads_setting():
    class Config(dict):
        def get(self, section, name):
            return self[(section, name)]

    assert coordinator_threads_setting(Config()) is None
    assert coordinator_threads_setting(Config({((b"checkout",), b"coordinatorthreads"): b"12"})) == 12
    assert coordinator_threads_setting(Config({((b"checkout",), b"coordinatorthreads"): b"0"})) == 0
    with pytest.raises(ConfigError, match=r"bad checkout.coordinatorThreads value '-2' \(0 or more\)"):
        coordinator_threads_setting(Config({((b"checkout",), b"coordinatorthreads"): b"-2"}))


def test_mount_kind_finds_the_mount_by_device(tmp_path):
    dev = os.stat(tmp_path).st_dev
    mi = (f"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
          f"36 25 {os.major(dev)}:{os.minor(dev)} / /elsewhere rw,nosuid - fuse.sshfs me@host:/src rw\n")
    assert fsinfo.mount_kind(tmp_path, mi) == "fuse"
    assert fsinfo.mount_kind(tmp_path, mi.replace("fuse.sshfs", "nfs4")) == "nfs"
    assert fsinfo.mount_kind(tmp_path, "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n") == "unknown"
    assert fsinfo.mount_kind(tmp_path / "missing") == "unknown"
    if os.path.exists("/proc/self/mountinfo"):  # the real table agrees with the full probe
        assert fsinfo.mount_kind(tmp_path) == fsinfo.fs_kind_of_name(fsinfo.mount_of(tmp_path).fstype)


# -- switches with the pool forced on, against git's ----------------------------------------


def _commit_all(path, env, msg):
    git(path, "add", "-A", env=env)
    git(path, "commit", "-q", "-m", msg, env=env)


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    """main: 12 directories of 25 files (``d00`` with a subdirectory
    ``sub``), a symlink ``lnk`` to d00, a file ``todir``, a directory
    ``tofile``, directories ``gone``, ``deep/a/b`` and ``deep/a/c``, a
    ``.gitattributes`` (so that each directory's own is looked for); other: a third of the files changed, 20
    deleted, 24 added in old and new directories, ``lnk`` a directory (with
    a ``sub`` below it, as d00 has), ``todir`` a directory, ``tofile`` a
    file, ``gone`` and ``deep`` gone, an executable bit flipped, a symlink retargeted,
    and three paths that match the ignore rules (``out.o``, ``gen.o/f``,
    ``sym.o/sub/f``)."""
    src = tmp_path_factory.mktemp("iopool") / "src"
    env = twin_env(src.parent)
    git(None, "init", "-q", "-b", "main", str(src), env=env)
    for d in range(12):
        (src / f"d{d:02}").mkdir()
        for f in range(25):
            (src / f"d{d:02}" / f"f{f}").write_text(f"{d} {f}\n")
    (src / "d00" / "sub").mkdir()
    (src / "d00" / "sub" / "s").write_text("below d00\n")
    (src / ".gitattributes").write_text("*.c text\n")
    os.symlink("d00", src / "lnk")
    os.symlink("d01/f1", src / "link")
    (src / "todir").write_text("a file\n")
    (src / "tofile").mkdir()
    (src / "tofile" / "x").write_text("x\n")
    (src / "gone").mkdir()
    for f in ("a", "b"):
        (src / "gone" / f).write_text(f + "\n")
    for d in ("b", "c"):
        (src / "deep" / "a" / d).mkdir(parents=True)
        (src / "deep" / "a" / d / "f").write_text("three directories down\n")
    (src / ".gitignore").write_text("*.o\n")
    _commit_all(src, env, "main")
    git(src, "checkout", "-q", "-b", "other", env=env)
    for d in range(12):
        for f in range(0, 25, 3):
            (src / f"d{d:02}" / f"f{f}").write_text(f"changed {d} {f}\n")
        (src / f"d{d:02}" / "new").write_text(f"new {d}\n")
    for d in range(0, 12, 3):
        for f in (1, 2, 4, 5, 7):
            os.unlink(src / f"d{d:02}" / f"f{f}")
    for f in range(12):
        (src / "added").mkdir(exist_ok=True)
        (src / "added" / f"n{f}").write_text(f"{f}\n")
    os.unlink(src / "lnk")
    (src / "lnk").mkdir()
    (src / "lnk" / "f0").write_text("not d00's\n")
    (src / "lnk" / "sub").mkdir()
    (src / "lnk" / "sub" / "f").write_text("not d00/sub's\n")
    os.unlink(src / "todir")
    (src / "todir").mkdir()
    (src / "todir" / "f").write_text("below\n")
    for p in ("tofile/x", "gone/a", "gone/b", "deep/a/b/f", "deep/a/c/f"):
        os.unlink(src / p)
    os.rmdir(src / "tofile")
    (src / "tofile").write_text("now a file\n")
    os.chmod(src / "d02" / "f3", 0o755)
    os.unlink(src / "link")
    os.symlink("d03/f3", src / "link")
    (src / "out.o").write_text("a tracked file an ignored directory may stand on\n")
    (src / "gen.o").mkdir()
    (src / "gen.o" / "f").write_text("below a path an ignored file may stand on\n")
    (src / "sym.o" / "sub").mkdir(parents=True)
    (src / "sym.o" / "sub" / "f").write_text("below a path an ignored symlink may stand on\n")
    git(src, "add", "-f", "out.o", "gen.o/f", "sym.o/sub/f", env=env)
    _commit_all(src, env, "other")
    git(src, "checkout", "-q", "main", env=env)
    return src, env


def _tree(top) -> dict:
    """Every path below ``top`` but .git: its kind, mode and bytes or target."""
    out = {}
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, top)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", st.st_mode & 0o111 != 0, f.read())
    return out


def _switch(src, tmp_path, monkeypatch, workers: int, prepare=None):
    """Twins switched from main to other: ours through the API with
    ``checkout.coordinatorThreads=8`` on this (not latency-bound)
    filesystem, git with as many workers. Returns (ours, git's, our report
    or what ours raised, git's run, the requests our pool was sent)."""
    source, env = src
    ours, theirs = clone_twins(source, env, tmp_path, "other", prepare)
    git(ours, "config", "checkout.coordinatorThreads", "8", env=env)
    sent = []
    real_map, real_pipeline = IoPool.map, IoPool.pipeline

    def counted(fn):
        def spy(*a, **k):
            sent.append(threading.current_thread().name)
            return fn(*a, **k)
        return spy

    monkeypatch.setattr(IoPool, "map", lambda self, fn, paths: real_map(self, counted(fn), paths))
    monkeypatch.setattr(IoPool, "pipeline", lambda self, items, ahead: real_pipeline(
        self, items, lambda item: (lambda fn: fn and counted(fn))(ahead(item))))
    isolate_api_env(monkeypatch, env["HOME"])
    out, err = io.StringIO(), io.StringIO()
    try:
        got = run_checkout(Repository.open(str(ours), dict(os.environ)), "other",
                           CheckoutOptions(workers=workers, threshold=0, online_cpus=2), err=err, out=out)
    except (CheckoutError, PlanError) as e:  # (as the CLI says them)
        got = e
        err.write(f"{e}\n")
    theirs_run = run_git(theirs, "-c", f"checkout.workers={workers}", "-c", "checkout.thresholdForParallelism=0",
                         "checkout", "other", env=env, text=True, check=False)
    assert (out.getvalue(), err.getvalue()) == (theirs_run.stdout, theirs_run.stderr)
    assert not (ours / ".git" / "index.lock").exists()
    for args in (["ls-files", "-s"], ["status", "--porcelain", "--ignored"], ["rev-parse", "HEAD"], ["diff-files"]):
        assert git(ours, *args, env=env) == git(theirs, *args, env=env), args
    assert _tree(ours) == _tree(theirs)
    return ours, theirs, got, theirs_run, sent


_WORK_TREE_LOOKS = ((os, "lstat"), (os.path, "isfile"), (os, "rmdir"))


def _asked_meanwhile(monkeypatch, steps, looks=_WORK_TREE_LOOKS) -> list:
    """What the coordinator's own thread asks (``(name, path)`` of each of
    ``looks``, ``(module, function name)`` pairs) while one of ``steps``
    (``(class, method name)``) runs; the list fills as the switch goes."""
    asked, busy = [], [False]
    main = threading.main_thread()

    def spy(kind, real):
        def ask(p, *a, **k):
            if busy[0] and threading.current_thread() is main:
                asked.append((kind, os.fsencode(p)))
            return real(p, *a, **k)
        return ask

    def while_busy(real):
        def step(self, *a, **k):
            busy[0] = True
            try:
                return real(self, *a, **k)
            finally:
                busy[0] = False
        return step

    for mod, kind in looks:
        monkeypatch.setattr(mod, kind, spy(kind, getattr(mod, kind)))
    for cls, name in steps:
        monkeypatch.setattr(cls, name, while_busy(getattr(cls, name)))
    return asked


def _far_prepare(path):
    """Local state the far switch meets: an untracked file, an ignored one,
    a local change the switch keeps, an ignored directory where a file goes
    and an ignored file where a directory goes."""
    (path / "d05" / "untracked").write_text("mine\n")
    (path / "d06" / "x.o").write_text("ignored\n")
    (path / "d07" / "f1").write_text("a local change other keeps\n")
    (path / "out.o").mkdir()  # ignored: removed, contents and all, for the file
    (path / "out.o" / "junk").write_text("ignored\n")
    (path / "gen.o").write_text("ignored, where a directory goes\n")


@pytest.mark.parametrize("workers", [1, 2])
def test_far_switch_with_the_pool_as_git(src, tmp_path, monkeypatch, workers):
    ours, theirs, report, run, sent = _switch(src, tmp_path, monkeypatch, workers, _far_prepare)
    assert run.returncode == 0 and report.coordinator_threads == 8
    assert report.preload_workers == 0  # (too few entries for git's preload, as without the pool)
    # The requests went through the pool's threads: the plan's lstats, the
    # removals, and the unlinks of the files rewritten (not the new paths
    # the plan found absent).
    # (but two: the lstat and the removal of deep/a, each alone at its depth, made by the caller)
    assert len(sent) > 100 and [name for name in sent if not name.startswith("checkout-io")] == ["MainThread"] * 2
    # The symlink where a directory goes was removed, not followed:
    assert sorted(os.listdir(ours / "d00")) == sorted(os.listdir(theirs / "d00"))
    assert (ours / "lnk").is_dir() and not (ours / "lnk").is_symlink()
    assert (ours / "d05" / "untracked").read_text() == "mine\n"
    assert (ours / "out.o").is_file() and (ours / "gen.o" / "f").is_file()


@pytest.mark.parametrize("sparse", [False, True], ids=["full", "sparse-cone"])
def test_pool_merges_without_a_request_per_path_at_its_turn(src, tmp_path, monkeypatch, sparse):
    """The switch's merge and its verify_absent checks look up no path of
    theirs in the coordinator's own thread: the leaving files (each looked
    at for a directory in its place), the coming paths, the staged
    deletions and the entry with a local change were looked at together
    through the pool before the first path was merged
    (_TwowayMerge._looked_at). Against git, with the far switch's local
    state (kept, refused or removed as git does), also in a cone-mode
    sparse checkout (d00's leaving files outside it). (The ignore rules'
    own lstat of an untracked path in the way, to tell a directory, is not
    the plan's lookup and is left out.)"""
    def prepare(path):
        if sparse:
            git(path, "sparse-checkout", "set", "--cone", "--skip-checks", "d03", "d05", "d06", "d07", "gone",
                env=src[1])
            assert not (path / "d00").exists()
        _far_prepare(path)

    steps = [(_TwowayMerge, name) for name in ("merge", "verify_absent", "verify_absent_removed")]
    meanwhile = _asked_meanwhile(monkeypatch, steps, [(plan_mod, "_look")])
    ours, theirs, report, run, sent = _switch(src, tmp_path, monkeypatch, 2, prepare)
    assert run.returncode == 0 and (ours / "d07" / "f1").read_text() == "a local change other keeps\n"
    files = {branch: set(git(theirs, "ls-tree", "-r", "--name-only", branch, env=src[1]).splitlines())
             for branch in ("main", "other")}
    assert {b"d00/f1", b"gone/a", b"deep/a/b/f"} <= files["main"] - files["other"]
    assert meanwhile == []


@pytest.mark.parametrize("sparse", [False, True], ids=["full", "sparse-cone"])
def test_pool_removes_and_writes_without_a_request_per_directory_at_its_turn(src, tmp_path, monkeypatch, sparse):
    """While the files that leave are removed and the others written, the
    coordinator makes no request of its own per directory: each leading
    directory's lstat (iopool.look_ahead_dirs, for the removals and for
    the writing: Checkout._look_ahead), each directory's look for an
    untracked ``.gitattributes`` and the removal of the emptied
    directories (one depth at a time) were made together. The answers are
    the ones the serial lookups would get: untracked ``.gitattributes``
    count where they stand (d08), not where a symlink that the switch
    replaces led (``lnk`` to d00, whose ``sub`` is a directory too; or the
    ignored ``sym.o`` to it), as git's result shows; also in a cone-mode
    sparse checkout, whose entries outside the cone are neither removed
    nor written."""
    def prepare(path):
        if sparse:
            git(path, "sparse-checkout", "set", "--cone", "--skip-checks", "d00", "d08", "lnk", "sym.o", "deep", "gone",
                env=src[1])  # (lnk: a symlink here, a directory in other)
            assert not (path / "d05").exists()
        for d in ("d00", "d00/sub", "d08"):
            (path / d / ".gitattributes").write_text("* eol=crlf\n")  # untracked
        os.symlink("d00", path / "sym.o")  # ignored, where a directory goes (d00 has a sub/ too)

    meanwhile = _asked_meanwhile(monkeypatch, [(Checkout, "remove_files"), (Checkout, "write_entries")])
    ours, theirs, report, run, sent = _switch(src, tmp_path, monkeypatch, 2, prepare)
    assert run.returncode == 0 and report.collided == []  # (lnk/sub made, not taken for d00/sub)
    dirs = {p[:i] for branch in ("main", "other")  # every leading directory of either
            for p in git(theirs, "ls-tree", "-r", "--name-only", branch, env=src[1]).splitlines()
            for i in range(len(p)) if p[i:i + 1] == b"/"}
    asked = [(kind, os.path.relpath(p, os.fsencode(ours))) for kind, p in meanwhile]
    assert {b"gone", b"tofile", b"d00/sub", b"deep/a"} < dirs
    # (deep/a is the only directory of its depth to look at and to remove: a request alone is made by its caller)
    assert [a for a in asked if a[1] in dirs or a[1].endswith(b".gitattributes")] == [
        ("lstat", b"deep/a"), ("rmdir", b"deep/a")], asked
    # d08's own file counted; d00's, seen through the symlink, did not:
    assert (ours / "d08" / "new").read_bytes() == b"new 8\r\n"
    assert (ours / "lnk" / "sub" / "f").read_bytes() == b"not d00/sub's\n"
    assert (ours / "lnk" / "f0").read_bytes() == b"not d00's\n"
    assert not (ours / "sym.o").is_symlink() and (ours / "sym.o" / "sub" / "f").is_file()
    assert not (ours / "gone").exists() and not (ours / "deep").exists()  # emptied, then removed
    assert (ours / "d05").exists() != sparse and (ours / "d08").exists()


def test_checkout_index_prefix_with_the_pool_as_git(src, tmp_path, monkeypatch):
    """``checkout-index -a --prefix=out/`` with the pool forced on: the
    directories are made below the prefix (their look-ahead asked there, not
    in the work tree, whose attributes still count: d08's untracked
    ``.gitattributes``), a file already in the prefix is left and named,
    as git does; the index is not touched."""
    source, env = src

    def prepare(path):
        (path / "d08" / ".gitattributes").write_text("* eol=crlf\n")  # untracked
        (path / "out" / "d01").mkdir(parents=True)
        (path / "out" / "d01" / "f1").write_text("already here\n")

    ours, theirs = clone_twins(source, env, tmp_path, "other", prepare)
    git(ours, "config", "checkout.coordinatorThreads", "8", env=env)
    index_before = (ours / ".git" / "index").read_bytes()
    isolate_api_env(monkeypatch, env["HOME"])
    asked = []
    real_map = IoPool.map
    monkeypatch.setattr(IoPool, "map", lambda self, fn, paths: real_map(self, fn, asked.extend(paths) or paths))
    err, code = io.StringIO(), 0
    try:
        run_checkout_all(Repository.open(str(ours), dict(os.environ)), CheckoutOptions(
            workers=2, threshold=0, online_cpus=2), prefix="out/", err=err)
    except CheckoutError as e:  # (as the CLI says it)
        err.write(f"{e}\n" if str(e) else "")
        code = e.code
    theirs_run = run_git(theirs, "-c", "checkout.workers=2", "-c", "checkout.thresholdForParallelism=0",
                         "checkout-index", "-a", "--prefix=out/", env=env, text=True, check=False)
    assert (code, err.getvalue()) == (theirs_run.returncode, theirs_run.stderr)
    assert "out/d01/f1 already exists" in err.getvalue()
    # The pool asked for the directories below the prefix, none of the work tree's own:
    out = os.fsencode(ours / "out") + b"/"
    assert out + b"d08" in asked and all(p.startswith(out) for p in asked), asked
    assert _tree(ours / "out") == _tree(theirs / "out")
    assert (ours / "out" / "d08" / "f0").read_bytes() == b"8 0\r\n"
    assert (ours / ".git" / "index").read_bytes() == index_before


def test_refused_switch_with_the_pool_touches_nothing(src, tmp_path, monkeypatch):
    def prepare(path):
        (path / "added").mkdir()
        (path / "added" / "n3").write_text("untracked, in the way\n")
        (path / "todir.o").write_text("ignored\n")
        (path / "d00" / "f0").write_text("changed here, and by other\n")

    before = {}

    def prepare_and_remember(path):
        prepare(path)
        before[path.name] = _tree(path)

    ours, _theirs, got, run, sent = _switch(src, tmp_path, monkeypatch, 2, prepare_and_remember)
    assert run.returncode == 1 and isinstance(got, PlanError)
    assert _tree(ours) == before["ours"]
    assert sent  # the plan's lstats went through the pool before it refused
