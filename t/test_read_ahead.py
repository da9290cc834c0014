"""Runs of items written in two passes (``entry.write_pc_items``): the blobs
of a run read first, then each item written as ``write_pc_item`` writes it.

The reading pass only reads packs: each blob once (a second item with the
same object id takes the same bytes), nothing held beyond ``READ_AHEAD_BYTES``
and no blob that would be streamed; a loose object and a read that fails are
read at the item's turn, after its file is created, and a failure is
reported there, after the items before it are written. The helper's loop and
the coordinator's sequential loop both go through it, and a clone's checkout
through either, with files converted on the way out, writes what git writes.
"""

from __future__ import annotations

import os
import random

import pytest
from conftest import git, isolate_api_env, run_git, twin_env

from git_checkout_helper import entry
from git_checkout_helper.entry import READ_AHEAD_ITEMS, CheckoutState, write_pc_items
from git_checkout_helper.odb import ObjectDatabase
from git_checkout_helper.wire import PcItem, PcItemStatus

WRITTEN = PcItemStatus.PC_ITEM_WRITTEN
FAILED = PcItemStatus.PC_ITEM_FAILED


@pytest.fixture
def src(tmp_path):
    """A repository of 2.5 runs of files in four directories, some sharing content."""
    src = tmp_path / "src"
    git(None, "init", "-q", str(src))
    rnd = random.Random(7)
    for i in range(READ_AHEAD_ITEMS * 5 // 2):
        d = src / f"d{i % 4}"
        d.mkdir(exist_ok=True)
        body = b"same\n" if i % 9 == 0 else rnd.randbytes(100 + 40 * i)
        (d / f"f{i:03}").write_bytes(body)
    git(src, "add", ".")
    git(src, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "x")
    git(src, "gc", "-q")
    return src


def _items(src):
    rows = [line.split(b"\t") for line in git(src, "ls-tree", "-r", "HEAD").splitlines()]
    return [PcItem(id=i, oid=bytes.fromhex(meta.split()[2].decode()), ce_mode=0o100644, name=name)
            for i, (meta, name) in enumerate(rows)]


class _Log:
    """What the writing did, in order: ("read", oid) for each blob read from
    the object database, ("open", name) for each file created, ("error", msg)."""

    def __init__(self, monkeypatch, odb: ObjectDatabase, top: bytes):
        self.events: list[tuple[str, object]] = []
        for method in ("read_blob", "read_blob_or_stream", "packed_blob"):
            real = getattr(odb, method)

            def spy(oid, *a, _real=real):
                got = _real(oid, *a)
                if got is not None:  # (packed_blob's None: not read)
                    self.events.append(("read", oid))
                return got

            monkeypatch.setattr(odb, method, spy)
        log = self.events

        class _Os:
            def __getattr__(self, name):
                return getattr(os, name)

            @staticmethod
            def open(path, *a, **k):
                log.append(("open", path[len(top):]))
                return os.open(path, *a, **k)

        monkeypatch.setattr(entry, "os", _Os())

    def error(self, msg: str) -> None:
        self.events.append(("error", msg))

    def kinds(self, kind: str) -> list:
        return [what for k, what in self.events if k == kind]


def _state(src, wt, monkeypatch):
    for d in range(4):
        (wt / f"d{d}").mkdir(parents=True, exist_ok=True)
    odb = ObjectDatabase(str(src / ".git" / "objects"), "sha1", [])
    top = os.fsencode(wt) + b"/"
    log = _Log(monkeypatch, odb, top)
    state = CheckoutState(odb, base_dir=top, error=log.error, fstat_output=True)
    return state, log


def _write(src, wt, items, monkeypatch):
    """write_pc_items over ``items`` into ``wt``: (statuses, state, log)."""
    state, log = _state(src, wt, monkeypatch)
    try:
        statuses = [status for status, _st in write_pc_items(items, state)]
    finally:
        state.odb.close()
    return statuses, state, log


def _assert_written(src, wt, items):
    for it in items:
        assert (wt / os.fsdecode(it.name)).read_bytes() == git(src, "cat-file", "blob", it.oid.hex())


def test_each_run_is_read_before_its_first_file_and_each_blob_once(src, tmp_path, monkeypatch):
    items = _items(src)
    statuses, state, log = _write(src, tmp_path / "wt", items, monkeypatch)
    assert statuses == [WRITTEN] * len(items)
    assert state.ahead == {}  # nothing held after the last run
    _assert_written(src, tmp_path / "wt", items)
    # Each distinct blob of a run read once, the shared one too.
    runs = [items[k:k + READ_AHEAD_ITEMS] for k in range(0, len(items), READ_AHEAD_ITEMS)]
    assert len({it.oid for it in runs[0]}) < len(runs[0])  # (the run does share one)
    assert sorted(log.kinds("read")) == sorted(oid for run in runs for oid in {it.oid for it in run})
    # Run by run: every blob of a run read before its first file is created,
    # and every file of a run created before the next run's first read.
    kinds = [k for k, _what in log.events]
    assert kinds == [k for run in runs for k in ["read"] * len({it.oid for it in run}) + ["open"] * len(run)]
    assert log.kinds("open") == [it.name for it in items]


def test_a_read_that_fails_ahead_is_reported_at_its_turn(src, tmp_path, monkeypatch):
    items = _items(src)
    lost = items[5]
    items[5] = PcItem(id=5, oid=b"\x42" * 20, ce_mode=0o100644, name=lost.name)  # no such object
    statuses, _, log = _write(src, tmp_path / "wt", items, monkeypatch)
    assert statuses == [WRITTEN] * 5 + [FAILED] + [WRITTEN] * (len(items) - 6)
    assert log.kinds("error") == [f"cannot read object {'42' * 20} '{lost.name.decode()}'"]
    # Said once, at the item's turn: after the five before it were created and
    # its own file was, before the next one's.
    at = log.events.index(("error", log.kinds("error")[0]))
    opened = log.kinds("open")
    assert opened[:6] == [it.name for it in items[:6]]
    assert log.events.index(("open", items[5].name)) < at < log.events.index(("open", items[6].name))
    assert not (tmp_path / "wt" / os.fsdecode(lost.name)).exists()  # removed, as git does


def test_reading_ahead_holds_no_more_than_its_bytes_and_no_stream(src, tmp_path, monkeypatch):
    items = _items(src)
    monkeypatch.setattr(entry, "READ_AHEAD_BYTES", 3000)
    monkeypatch.setattr(entry, "STREAM_THRESHOLD", 1500)  # the larger blobs stream
    held = []
    real = entry._read_ahead

    def watch(run, st):
        real(run, st)
        held.append(dict(st.ahead))

    monkeypatch.setattr(entry, "_read_ahead", watch)
    statuses, _, _ = _write(src, tmp_path / "wt", items, monkeypatch)
    assert statuses == [WRITTEN] * len(items)
    assert len(held) == -(-len(items) // READ_AHEAD_ITEMS)
    sizes = {it.oid: len(git(src, "cat-file", "blob", it.oid.hex())) for it in items}
    for blobs in held:
        assert all(type(b) is bytes for b in blobs.values())
        assert all(sizes[oid] <= 1500 for oid in blobs)  # a blob that would stream waits for its turn
        # Reading stops once the budget is reached: all but the last blob fit.
        assert sum(map(len, blobs.values())) - max(map(len, blobs.values()), default=0) < 3000
    assert any(len(blobs) > 1 for blobs in held)
    assert any(size > 1500 for size in sizes.values())  # they were written, through a stream
    _assert_written(src, tmp_path / "wt", items)


def _runs_read(monkeypatch) -> list[int]:
    runs: list[int] = []
    real = entry._read_ahead
    monkeypatch.setattr(entry, "_read_ahead", lambda run, st: (runs.append(len(run)), real(run, st)))
    return runs


def test_the_coordinators_sequential_writes_read_ahead(src, tmp_path, monkeypatch):
    from git_checkout_helper.checkout import checkout

    wt = tmp_path / "wt"
    git(None, "clone", "-q", "--no-checkout", str(src), str(wt))
    runs = _runs_read(monkeypatch)
    report = checkout(str(wt), None, workers=1, force=True)
    n = len(_items(src))
    assert report.sequential_items == n
    assert runs == [READ_AHEAD_ITEMS] * (n // READ_AHEAD_ITEMS) + [n % READ_AHEAD_ITEMS]
    assert git(wt, "status", "--porcelain") == b""


def test_a_helper_reads_ahead_in_each_batch(src, tmp_path, monkeypatch):
    from git_checkout_helper import helper
    from git_checkout_helper.pktline import FLUSH_PKT, pkt_line
    from git_checkout_helper.wire import REQUEST_LAYOUTS, native_stat_layout

    items = _items(src)
    wt = tmp_path / "wt"
    for d in range(4):
        (wt / f"d{d}").mkdir(parents=True)
    layout = REQUEST_LAYOUTS["git"]
    parts = (items[:40], items[40:])
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    os.write(w_in, b"".join(b"".join(pkt_line(it.encode(layout)) for it in part) + FLUSH_PKT for part in parts))
    os.close(w_in)
    runs = _runs_read(monkeypatch)
    odb = ObjectDatabase(str(src / ".git" / "objects"), "sha1", [])
    state = CheckoutState(odb, base_dir=os.fsencode(wt) + b"/")
    try:
        assert helper.serve(r_in, w_out, state, layout, native_stat_layout(), odb.hash_algo) == len(items)
    finally:
        odb.close()
        for fd in (r_in, r_out, w_out):
            os.close(fd)
    assert runs == [READ_AHEAD_ITEMS, 40 - READ_AHEAD_ITEMS, READ_AHEAD_ITEMS, len(items) - 40 - READ_AHEAD_ITEMS]
    _assert_written(src, wt, items)


def test_a_loose_object_is_read_at_its_turn(src, tmp_path, monkeypatch):
    (src / "d0" / "loose").write_bytes(b"written after the pack\n")
    git(src, "add", ".")
    git(src, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "y")
    items = _items(src)
    loose = next(it for it in items if it.name == b"d0/loose")
    statuses, _, log = _write(src, tmp_path / "wt", items, monkeypatch)
    assert statuses == [WRITTEN] * len(items)
    assert log.kinds("read").count(loose.oid) == 1
    assert log.events.index(("open", loose.name)) < log.events.index(("read", loose.oid))
    assert (tmp_path / "wt" / "d0" / "loose").read_bytes() == b"written after the pack\n"


@pytest.mark.parametrize("workers", [1, 2])
def test_converted_files_read_ahead_as_git_writes_them(tmp_path, monkeypatch, workers):
    """A clone's checkout whose blobs are converted on the way out (eol=crlf,
    ident, working-tree-encoding, text=auto), with one loose object and one
    blob that streams, ours (-j 1: the coordinator's loop; -j 2: helpers)
    against git with as many workers: the same bytes, modes, index, status."""
    from git_checkout_helper.checkout import checkout

    home = tmp_path / "home"
    home.mkdir()
    env = twin_env(home)
    isolate_api_env(monkeypatch, home)
    src = tmp_path / "src"
    git(None, "init", "-q", str(src), env=env)
    (src / ".gitattributes").write_text("*.crlf text eol=crlf\n*.id ident\n*.u16 text working-tree-encoding=UTF-16\n"
                                        "*.auto text=auto\n")
    rnd = random.Random(3)
    for i in range(READ_AHEAD_ITEMS * 2):
        d = src / f"d{i % 3}"
        d.mkdir(exist_ok=True)
        lines = b"".join(b"line %d of %d\n" % (k, i) for k in range(1 + i * 3))
        kind = ("crlf", "id", "u16", "auto", "bin")[i % 5]
        body = {"id": b"$Id$\n" + lines, "u16": lines.decode().encode("utf-16"),
                "bin": rnd.randbytes(200 + i)}.get(kind, lines)
        (d / f"f{i:03}.{kind}").write_bytes(body)
    (src / "big.crlf").write_bytes(b"a long line of text\n" * 150_000)  # 3 MB: streamed
    git(src, "add", ".", env=env)
    git(src, "commit", "-qm", "one", env=env)
    git(src, "gc", "-q", env=env)
    (src / "d0" / "loose.crlf").write_bytes(b"a loose\nobject\n")
    git(src, "add", ".", env=env)
    git(src, "commit", "-qm", "two", env=env)
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for wt in (theirs, ours):
        git(None, "clone", "-q", "--no-checkout", str(src), str(wt), env=env)
    git(theirs, "-c", f"checkout.workers={workers}", "-c", "checkout.thresholdForParallelism=0",
        "checkout", "-q", "-f", "HEAD", env=env)
    runs = _runs_read(monkeypatch)
    checkout(str(ours), None, workers=workers, threshold=0, force=True)
    if workers == 1:
        assert sum(runs) == len(git(src, "ls-files", env=env).splitlines())  # every item through a run
    for wt in (theirs, ours):
        assert git(wt, "status", "--porcelain", env=env) == b""
        assert run_git(wt, "diff-files", "--quiet", env=env, check=False).returncode == 0

    def tree(top):
        return sorted((str(p.relative_to(top)), p.stat().st_mode, p.read_bytes()) for p in top.rglob("*")
                      if p.is_file() and ".git" not in p.parts)

    assert tree(ours) == tree(theirs)
    assert git(ours, "ls-files", "-s", env=env) == git(theirs, "ls-files", "-s", env=env)
    assert (ours / "d0" / "f000.crlf").read_bytes().count(b"\r\n") == 1
    assert (ours / "d1" / "f001.id").read_bytes().startswith(b"$Id: ")
    u16 = (ours / "d2" / "f002.u16").read_bytes()
    assert u16[:2] == b"\xff\xfe" and u16[2:].decode("utf-16-le") == "".join(f"line {k} of 2\n" for k in range(7))
