"""Blobs inflated ahead while a switch merges (blobahead.py): the arena, the
child that fills it and how it is stopped, a helper taking its blobs from
it, and switches with it against git."""

from __future__ import annotations

import io
import os
import signal

import pytest
from conftest import clone_twins, far_switch_source, git, isolate_api_env, run_git, tree_snapshot, twin_env

from git_checkout_helper import blobahead
from git_checkout_helper.blobahead import Arena, BlobsAhead, likely_written
from git_checkout_helper.checkout.options import CheckoutOptions
from git_checkout_helper.checkout.switch import run_checkout
from git_checkout_helper.errors import CheckoutError
from git_checkout_helper.index import Entry
from git_checkout_helper.odb import ObjectDatabase
from git_checkout_helper.plan import PlanError
from git_checkout_helper.repository import Repository

MISSING = bytes.fromhex("ab" * 20)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory):
    """A repository of four files (two alike) and its object database:
    (odb, [the files' ids in name order])."""
    src = tmp_path_factory.mktemp("blobahead") / "src"
    env = twin_env(src.parent)
    git(None, "init", "-q", str(src), env=env)
    for name, text in (("a", "same\n"), ("b", "same\n"), ("c", "c" * 3000), ("d", "dd\n")):
        (src / name).write_text(text)
    git(src, "add", "-A", env=env)
    git(src, "commit", "-q", "-m", "x", env=env)
    git(src, "gc", "-q", env=env)  # packed: the pack reader, as a helper reads
    oids = [bytes.fromhex(line.split()[2].decode()) for line in git(src, "ls-tree", "HEAD", env=env).splitlines()]
    odb = ObjectDatabase(str(src / ".git" / "objects"), "sha1", [])
    yield odb, oids
    odb.close()


def _blobs_in(arena: Arena) -> dict[bytes, bytes]:
    return {oid: arena.map[start:end] for oid, (start, end) in arena.index(20).items()}


def test_arena_holds_each_blob_once_as_the_pack_gives_it(blobs):
    odb, (a, b, c, d) = blobs
    assert a == b
    arena = Arena(1 << 16)
    try:
        assert arena.fill(odb.read_blob, [a, b, MISSING, c, d]) == 3  # b is a; the missing one left out
        assert arena.count() == 3
        assert _blobs_in(arena) == {a: b"same\n", c: b"c" * 3000, d: b"dd\n"}
    finally:
        arena.close()


def test_arena_stops_at_its_end_and_when_told(blobs, monkeypatch):
    odb, (a, _b, c, d) = blobs
    arena = Arena(3072)  # room for a and c (3,069 bytes with the header), not for d after them
    try:
        assert arena.fill(odb.read_blob, [a, c, d]) == 2
        assert _blobs_in(arena) == {a: b"same\n", c: b"c" * 3000}
    finally:
        arena.close()
    monkeypatch.setattr(blobahead, "MAX_BLOB", 100)  # c is too large to read ahead: the helper reads it
    arena = Arena(1 << 16)
    try:
        assert arena.fill(odb.read_blob, [c, d]) == 1
        assert _blobs_in(arena) == {d: b"dd\n"}
        arena.map[blobahead._STOP] = 1
        assert arena.fill(odb.read_blob, [a]) == 0
    finally:
        arena.close()


def test_likely_written_is_the_regular_files_the_index_holds_otherwise():
    def entry(name, oid, mode=0o100644):
        return Entry(name=name, oid=oid, mode=mode)

    one, two, three = (bytes([n]) * 20 for n in (1, 2, 3))
    index = {b"same": entry(b"same", one), b"changed": entry(b"changed", one), b"x": entry(b"x", one)}
    files = {
        b"changed": (0o100644, two),
        b"link": (0o120000, three),
        b"new": (0o100755, three),
        b"same": (0o100644, one),
        b"sub": (0o160000, two),
        b"x": (0o100755, two),
    }
    assert list(likely_written(index, files)) == [two, three, two]


def _child(arena, read_blob, oids):
    return BlobsAhead(arena, lambda: type("Odb", (), {"read_blob": staticmethod(read_blob)})(), oids)


def test_stop_waits_for_the_blob_in_hand_then_the_count_is_final(blobs):
    """The child is told to stop while it reads its third blob (it waits
    for the word itself): that blob is still counted whole, the fourth is
    not read, and the child is reaped on close."""
    odb, (a, _b, c, d) = blobs
    arena = Arena(1 << 16)

    def read_blob(oid):
        if oid == d:
            while not arena.map[blobahead._STOP]:
                os.sched_yield()
        return odb.read_blob(oid)

    ahead = _child(arena, read_blob, [a, c, d, MISSING])
    try:
        while arena.count() < 2:
            os.sched_yield()
        assert ahead.stop() == 3
        assert ahead.stop() == 3  # idempotent
        assert _blobs_in(arena) == {a: b"same\n", c: b"c" * 3000, d: b"dd\n"}
        pid = ahead._child[0]
    finally:
        ahead.close()
        arena.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


def test_a_child_stuck_in_one_blob_is_killed(blobs, monkeypatch):
    odb, (a, _b, c, _d) = blobs
    monkeypatch.setattr(blobahead, "STOP_WAIT", 0.01)
    arena = Arena(1 << 16)

    def read_blob(oid):
        if oid == c:
            signal.pause()  # stuck until killed
        return odb.read_blob(oid)

    ahead = _child(arena, read_blob, [a, c])
    try:
        while arena.count() < 1:
            os.sched_yield()
        pid = ahead._child[0]
        assert ahead.stop() == 1
        assert ahead._child is None  # killed and reaped by stop itself
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    finally:
        ahead.close()
        arena.close()


def test_a_helper_takes_its_blobs_from_the_arena(blobs, tmp_path):
    """What the arena holds for an id is what the helper writes (here other
    bytes than the pack's, to tell them apart); ids it lacks come from the pack."""
    from git_checkout_helper import helper
    from git_checkout_helper.entry import CheckoutState
    from git_checkout_helper.pktline import FLUSH_PKT, pkt_line
    from git_checkout_helper.wire import REQUEST_LAYOUTS, PcItem, native_stat_layout

    odb, (a, _b, c, _d) = blobs
    arena = Arena(1 << 16)
    arena.fill(lambda oid: b"from the arena\n", [a])
    wt = tmp_path / "wt"
    wt.mkdir()
    layout = REQUEST_LAYOUTS["git"]
    items = [PcItem(id=0, oid=a, ce_mode=0o100644, name=b"a"), PcItem(id=1, oid=c, ce_mode=0o100644, name=b"c")]
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    os.write(w_in, b"".join(pkt_line(it.encode(layout)) for it in items) + FLUSH_PKT)
    os.close(w_in)
    own = ObjectDatabase(odb._objects_dir, "sha1", [])
    state = CheckoutState(own, base_dir=os.fsencode(wt) + b"/")
    try:
        assert helper.serve(r_in, w_out, state, layout, native_stat_layout(), own.hash_algo,
                            blobs_ahead=arena) == 2
    finally:
        own.close()
        arena.close()
        for fd in (r_in, r_out, w_out):
            os.close(fd)
    assert (wt / "a").read_bytes() == b"from the arena\n"
    assert (wt / "c").read_bytes() == b"c" * 3000


# -- switches with blobs read ahead, against git


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    src = tmp_path_factory.mktemp("blobahead-switch") / "src"
    env = twin_env(src.parent)
    far_switch_source(src, env)
    return src, env


def _switch(src, tmp_path, monkeypatch, workers: int, prepare=None):
    """Twins switched from main to other, ours through the API with blobs
    read ahead from the first entry on, git with as many workers."""
    source, env = src
    ours, theirs = clone_twins(source, env, tmp_path, "other", prepare)
    monkeypatch.setattr(blobahead, "MIN_ENTRIES", 0)
    started = []
    real_init = BlobsAhead.__init__

    def spy(self, *a, **k):
        real_init(self, *a, **k)
        started.append(self)

    monkeypatch.setattr(BlobsAhead, "__init__", spy)
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
    assert tree_snapshot(ours) == tree_snapshot(theirs)
    assert started and all(s._child is None for s in started)  # every child reaped
    return ours, got, theirs_run


@pytest.mark.parametrize("workers", [2, 3])
def test_far_switch_with_blobs_ahead_as_git(src, tmp_path, monkeypatch, workers):
    def prepare(path):
        (path / "d05" / "untracked").write_text("mine\n")
        (path / "d07" / "f1").write_text("a local change other keeps\n")
        (path / "d08" / "f2").write_text("a local change of a file other does not change\n")

    ours, report, run = _switch(src, tmp_path, monkeypatch, workers, prepare)
    assert run.returncode == 0
    assert report.streamed and report.blobs_ahead > 0
    assert (ours / "d05" / "untracked").read_text() == "mine\n"


def test_refused_switch_with_blobs_ahead_touches_nothing(src, tmp_path, monkeypatch):
    before = {}

    def prepare(path):
        (path / "d00" / "f0").write_text("changed here, and by other\n")
        before[path.name] = tree_snapshot(path)

    ours, got, run = _switch(src, tmp_path, monkeypatch, 2, prepare)
    assert run.returncode == 1 and isinstance(got, PlanError)
    assert tree_snapshot(ours) == before["ours"]
