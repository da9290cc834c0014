"""Dynamic distribution (workers.Chunker, HelperPool.run(dynamic=True)) and
I/O threads in helpers (helper.ThreadedWriter).

* the chunker hands out every item exactly once, contiguous, shrinking, cut
  at directory boundaries when one is near;
* a pool of real helpers answers many batches, every id once, in order per
  batch;
* a helper killed in the middle of its second batch loses only what it
  held; the rest of the queue goes to the survivor; end to end, the
  checkout fails with one line per lost path, the index and HEAD stay, no
  half file is left, and a re-run finishes;
* a thread that raises stops the helper cleanly (its threads are joined).

Deterministic: the helper that dies is chosen by whichever takes a lock
directory first, and dies after an exact number of results
(t/helper/misbehaving-helper); nothing waits for time to pass.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time

import pytest
from conftest import git, isolated_git_env

from git_checkout_helper.checkout import Checkout, CheckoutError, CheckoutOptions, run_checkout
from git_checkout_helper.repository import Repository
from git_checkout_helper.wire import REQUEST_LAYOUTS, PcItem, PcItemStatus, native_stat_layout
from git_checkout_helper.workers import AHEAD, Chunker, HelperPool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MISBEHAVE = os.path.join(ROOT, "t", "helper", "misbehaving-helper")
WRITTEN = PcItemStatus.PC_ITEM_WRITTEN
PENDING = PcItemStatus.PC_ITEM_PENDING


def _env(home: str) -> dict[str, str]:
    return {**isolated_git_env(home), "LC_ALL": "C"}


# --- the chunker ---------------------------------------------------------------


def _names(spec: list[tuple[str, int]]) -> list[bytes]:
    return [f"{d}/f{i:04d}".encode() for d, n in spec for i in range(n)]


@pytest.mark.parametrize("nr,n", [(1, 2), (7, 2), (20, 2), (10, 4), (1000, 2), (5000, 8), (333, 3)])
def test_chunker_hands_out_every_item_once_in_order(nr, n):
    names = _names([("d", nr)])
    c = Chunker(names, n)
    chunks = []
    while (ch := c.next()) is not None:
        chunks.append(ch)
    assert c.done and c.next() is None
    assert chunks[0][0] == 0 and chunks[-1][1] == nr
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False))
    assert all(s < e for s, e in chunks)
    if nr >= 1000:  # guided self-scheduling: large first, small last
        sizes = [e - s for s, e in chunks]
        assert sizes[0] == -(-nr // (Chunker.FACTOR * n))
        assert sizes[0] > 4 * sizes[-1]
        assert max(sizes[-3:]) <= 2 * Chunker.MIN_CHUNK


def test_chunker_cuts_at_a_nearby_directory_boundary():
    # 2 helpers, 400 items: the first chunk is 50; a boundary at 45 is near.
    names = _names([("a", 45), ("b", 355)])
    assert Chunker(names, 2).next() == (0, 45)
    # No boundary within a quarter of the chunk: cut where the size says.
    names = _names([("a", 30), ("b", 370)])
    assert Chunker(names, 2).next() == (0, 50)
    # The nearest boundary wins, on either side.
    names = _names([("a", 53), ("b", 347)])
    assert Chunker(names, 2).next() == (0, 53)


def _streamed_chunks(names: list[bytes], n: int, expected: int, rng: random.Random) -> list[tuple[int, int]]:
    """Chunks of a Chunker fed ``names`` a random number at a time (about
    ``expected`` announced), asked for chunks after each addition, closed
    at the end; checks that no chunk reaches past what had arrived."""
    arrived: list[bytes] = []
    c = Chunker(arrived, n, expected)
    chunks = []
    i = 0
    while i < len(names):
        k = rng.randint(1, 40)
        arrived.extend(names[i : i + k])
        i += k
        while (ch := c.next()) is not None:
            assert ch[1] <= len(arrived)
            chunks.append(ch)
        assert not c.done
    c.close()
    while (ch := c.next()) is not None:
        chunks.append(ch)
    assert c.done
    return chunks


def _stream_cap(start: int) -> int:
    """The largest chunk (before its directory cut) that may start at ``start``
    while items still arrive."""
    return min(Chunker.STREAM_CHUNK, max(Chunker.STREAM_FIRST, start))


@pytest.mark.parametrize("seed", range(6))
def test_chunker_streamed_cuts_as_when_complete(seed):
    """Items arriving while chunks are cut (the coordinator streaming): each
    chunk within the streaming cap for where it starts (STREAM_FIRST, then
    growing with what was handed out, up to STREAM_CHUNK; a quarter more for
    a directory cut); once the cap is past the complete chunker's sizes, the
    same cuts as with every item there from the start, when the count
    announced is right; every item once and in order when it was too high
    (entries that failed to prepare)."""
    rng = random.Random(seed)
    names = _names([(f"d{k}", rng.randint(1, 300)) for k in range(rng.randint(1, 12))])
    n = rng.choice([2, 3, 4])
    for expected in (len(names), len(names) + rng.randint(1, 200)):
        got = _streamed_chunks(names, n, expected, rng)
        assert got[0][0] == 0 and got[-1][1] == len(names)
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(got, got[1:], strict=False))
        cut = [(a, b) for a, b in got if b != len(names)]  # (the last one takes the rest)
        assert all(b - a <= _stream_cap(a) * 5 // 4 for a, b in cut)
    # Past the ramp: the complete chunker from the same start cuts the same.
    got = _streamed_chunks(names, n, len(names), rng)
    ramp = next((i for i, (a, _b) in enumerate(got) if _stream_cap(a) >= -(-(len(names) - a) // n)), None)
    if ramp is not None:
        complete = Chunker(names, n)
        complete.pos = got[ramp][0]
        want = []
        while (ch := complete.next()) is not None:
            want.append(ch)
        assert got[ramp:] == want


def test_chunker_streamed_last_chunk_waits_for_its_items():
    """The chunk that takes the rest is not cut while the items it would take
    are still arriving: 47 announced, 42 there, chunks of 8 from 0, and the
    one from 32 would end at 47 (a batch naming items not queued yet)."""
    names = _names([("d", 47)])
    arrived = names[:42]
    c = Chunker(arrived, 2, len(names))
    chunks = []
    while (ch := c.next()) is not None:
        chunks.append(ch)
    assert chunks and chunks[-1][1] <= 42
    arrived.extend(names[42:])
    while (ch := c.next()) is not None:
        chunks.append(ch)
    assert chunks[-1][1] == 47 and not c.done
    c.close()
    assert c.done and all(a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False))


# --- real helpers ------------------------------------------------------------------


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """main: a/ and b/ with 200 files each; other: every file changed."""
    home = str(tmp_path_factory.mktemp("home"))
    env = _env(home)
    src = os.path.join(home, "src")
    git(None, "init", "-q", "-b", "main", src, env=env)
    for rev in ("main", "other"):
        if rev == "other":
            git(src, "checkout", "-q", "-b", "other", env=env)
        for d in ("a", "b"):
            os.makedirs(os.path.join(src, d), exist_ok=True)
            for i in range(200):
                with open(os.path.join(src, d, f"f{i:03d}"), "w") as f:
                    f.write(f"{rev} {d} {i}\n" * (1 + i % 7))
        git(src, "add", ".", env=env)
        git(src, "commit", "-qm", rev, env=env)
    git(src, "checkout", "-q", "main", env=env)
    return env, src


def _one_dies(tmp: str, after: int, how: str = "sigkill") -> list[str]:
    """Helper argv: the first helper to start misbehaves (``how``: SIGKILLs
    itself before its result number ``after + 1``); the others behave."""
    lock = os.path.join(tmp, "first.lock")
    script = (f'if mkdir "$0" 2>/dev/null; then exec "{sys.executable}" "{MISBEHAVE}" {how} results={after}; '
              f'else exec "{sys.executable}" "{MISBEHAVE}" behave; fi')
    return ["sh", "-c", script, lock]


def _items(env, src: str, wt: str, rev: str) -> list[PcItem]:
    out = []
    for line in git(src, "ls-tree", "-r", rev, env=env).decode().splitlines():
        meta, path = line.split("\t")
        mode, _, oid = meta.split()
        out.append(PcItem(id=len(out), oid=bytes.fromhex(oid), ce_mode=int(mode, 8), name=path.encode()))
        os.makedirs(os.path.join(wt, os.path.dirname(path)), exist_ok=True)
    return out


def _pool_run(env, src, wt, argv, n=2):
    items = _items(env, src, wt, "other")
    penv = dict(env, GIT_DIR=os.path.join(src, ".git"))
    answered: list[int] = []
    errors: list[str] = []
    pool = HelperPool(argv, n, cwd=wt, env=penv)
    run = pool.start(items, None, layout=REQUEST_LAYOUTS["git"], stat_layout=native_stat_layout(),
                     on_result=lambda first, n, _status: answered.extend(range(first, first + n)),
                     error=errors.append, dynamic=True)
    results = run.finish()
    _pool_run.helpers = run.used  # (the lost tests read what a dead helper held)
    return items, results, answered, errors, pool.batches


def _held_by_the_dead_one() -> set[int]:
    """The ids the one helper that failed held when it failed: the rest of
    the batch it was writing and the batches queued behind it, at most
    ``AHEAD`` of them in all."""
    dead = [h for h in _pool_run.helpers if h.error]
    assert len(dead) == 1
    h = dead[0]
    assert 0 < len(h.batches) <= AHEAD
    held = set(range(h.next_id, h.batches[0][1]))
    for start, end in list(h.batches)[1:]:
        held.update(range(start, end))
    return held


def test_pool_many_batches_every_item_once(source, tmp_path):
    env, src = source
    wt = str(tmp_path / "wt")
    argv = [sys.executable, "-m", "git_checkout_helper", "checkout--helper", "--threads=2"]
    items, results, answered, errors, batches = _pool_run(env, src, wt, argv)
    assert errors == []
    assert sorted(answered) == list(range(len(items)))  # each id once
    assert all(status == WRITTEN for status in results.status)
    assert batches > 4
    for it in items:
        with open(os.path.join(wt, it.name.decode()), "rb") as f:
            assert f.read() == git(src, "cat-file", "blob", it.oid.hex(), env=env)


def _stream(source, tmp_path, expected: int | None):
    """Two of our helpers streamed the items of ``other`` (none yet arrived;
    ``expected`` None: announce them all): (items, arrived, answered ids, run)."""
    env, src = source
    wt = str(tmp_path / "wt")
    items = _items(env, src, wt, "other")
    penv = dict(env, GIT_DIR=os.path.join(src, ".git"))
    argv = [sys.executable, "-m", "git_checkout_helper", "checkout--helper"]
    answered: list[int] = []
    arrived: list[PcItem] = []
    run = HelperPool(argv, 2, cwd=wt, env=penv).start(
        arrived, len(items) if expected is None else expected, layout=REQUEST_LAYOUTS["git"],
        stat_layout=native_stat_layout(), on_result=lambda first, n, _status: answered.extend(range(first, first + n)), dynamic=True)
    return items, arrived, answered, run


def test_pool_streamed_items_every_item_once(source, tmp_path):
    """Items appended while the run is on: helpers answer some of them
    before the last one exists, and every item is written once, right."""
    env, src = source
    wt = str(tmp_path / "wt")
    items, arrived, answered, run = _stream(source, tmp_path, None)
    arrived.extend(items[:300])
    deadline = time.monotonic() + 60
    while not answered:  # the first chunk is out and being answered before the rest exist
        assert time.monotonic() < deadline, "no answer to a streamed chunk"
        run.pump()
    arrived.extend(items[300:])
    results = run.finish()
    assert sorted(answered) == list(range(len(items)))
    assert all(status == WRITTEN for status in results.status)
    for it in items:
        with open(os.path.join(wt, it.name.decode()), "rb") as f:
            assert f.read() == git(src, "cat-file", "blob", it.oid.hex(), env=env)


def test_pool_streamed_more_than_announced(source, tmp_path):
    """A stream that brings more items than it announced (and all helpers'
    answers to fit): every item written once."""
    items, arrived, answered, run = _stream(source, tmp_path, 10)
    for k in range(0, len(items), 50):
        arrived.extend(items[k : k + 50])
        run.pump()
    results = run.finish()
    assert len(results) == len(items) and sorted(answered) == list(range(len(items)))
    assert all(status == WRITTEN for status in results.status)


@pytest.mark.parametrize("missing", [1, 2, 11])
def test_pool_streamed_fewer_than_announced(source, tmp_path, missing):
    """A stream that brings fewer items than it announced (the coordinator
    announces every regular file and queues none for one that fails to
    prepare): the chunk that takes the rest is not sent while the stream is
    open, so no batch names an item that does not exist; every item that
    came is written once, and the rest goes out when the stream closes."""
    items, arrived, answered, run = _stream(source, tmp_path, None)
    came = items[: len(items) - missing]
    arrived.extend(came)
    deadline = time.monotonic() + 60
    while True:  # until every batch sent is answered and nothing more is cut while the stream is open
        assert time.monotonic() < deadline, "the stream's answers stopped"
        before = run.feed.pos
        run.pump()  # (where a batch naming a missing item raised IndexError)
        assert run.feed.pos <= len(came)
        if len(answered) == run.feed.pos == before:
            break
    assert len(came) - run.feed.pos < 2 * Chunker.MIN_CHUNK  # (only the last chunk waits for the close)
    results = run.finish()
    assert len(results) == len(came) and sorted(answered) == list(range(len(came)))
    assert all(status == WRITTEN for status in results.status)


def test_pool_streams_only_in_dynamic_mode(source, tmp_path):
    pool = HelperPool(["true"], 1, cwd=str(tmp_path), env=None)
    with pytest.raises(ValueError):
        pool.start([], 10, layout=REQUEST_LAYOUTS["git"], stat_layout=native_stat_layout(),
                   on_result=lambda *a: None, dynamic=False)
    pool.close()


def test_pool_helper_killed_in_its_second_batch(source, tmp_path):
    env, src = source
    wt = str(tmp_path / "wt")
    items, results, answered, errors, batches = _pool_run(env, src, wt, _one_dies(str(tmp_path), 60))
    assert len(answered) == len(set(answered))  # nothing answered twice
    lost = [i for i, status in enumerate(results.status) if status == PENDING]
    assert set(lost) == set(range(len(items))) - set(answered)
    # The dead one held at most its batch in progress and the one queued
    # behind it; the survivor wrote everything else. (Which batches the dead
    # one held depends on how fast each helper went: the last of the queue,
    # when the survivor got there first.)
    assert set(lost) == _held_by_the_dead_one()
    assert 0 < len(lost) < len(items) // 4
    assert all(status == WRITTEN for i, status in enumerate(results.status) if i not in set(lost))
    assert any(e.endswith("died of signal 9") for e in errors), errors
    # lost ids are at most two contiguous runs (the dead helper's batches)
    runs = sum(1 for j, i in enumerate(lost) if j == 0 or lost[j - 1] != i - 1)
    assert runs <= 2


def test_pool_helper_gone_at_start(source, tmp_path):
    """A helper that exits before reading anything: what was sent to it is
    lost, every later chunk goes to the other one."""
    env, src = source
    wt = str(tmp_path / "wt")
    items, results, answered, errors, batches = _pool_run(env, src, wt, _one_dies(str(tmp_path), 0, "exit-at-start"))
    assert len(answered) == len(set(answered))
    lost = [i for i, status in enumerate(results.status) if status == PENDING]
    assert set(lost) == _held_by_the_dead_one()
    assert 0 < len(lost) < len(items) // 4
    assert all(status == WRITTEN for i, status in enumerate(results.status) if i not in set(lost))
    assert errors and all(e.startswith("checkout helper ") for e in errors), errors


def test_checkout_survives_a_helper_killed_mid_run(source, tmp_path, monkeypatch):
    """End to end, dynamic mode, one of two helpers SIGKILLed after 60
    results: exit 1, one line per lost path, index and HEAD unchanged, the
    lost paths absent (never half written), everything else the target's,
    and a plain re-run finishes clean."""
    env, src = source
    wt = str(tmp_path / "wt")
    git(None, "clone", "-q", src, wt, env=env)
    with open(os.path.join(wt, ".git", "index"), "rb") as f:
        index_before = f.read()
    head_before = git(wt, "rev-parse", "HEAD", env=env)
    real = Checkout.helper_command

    def helper_command(self):
        _argv, henv, shown = real(self)
        return _one_dies(str(tmp_path), 60), henv, shown

    monkeypatch.setattr(Checkout, "helper_command", helper_command)
    err_path = tmp_path / "err"
    repo = Repository.open(wt, env)
    try:
        opts = CheckoutOptions(workers=2, threshold=0, quiet=True, progress=False, fork_helpers=False)
        with open(err_path, "w") as err, pytest.raises(CheckoutError) as exc:
            run_checkout(repo, "other", opts, err=err)
    finally:
        repo.close()
    assert exc.value.code == 1
    err = err_path.read_text()
    lines = err.splitlines()
    assert any(ln.startswith("error: checkout helper ") and ln.endswith(" died of signal 9") for ln in lines), err
    lost = [ln[len("error: '"):-len("' was not written (its checkout helper failed)")] for ln in lines
            if ln.endswith("' was not written (its checkout helper failed)")]
    assert 0 < len(lost) < 100, err
    with open(os.path.join(wt, ".git", "index"), "rb") as f:
        assert f.read() == index_before
    assert git(wt, "rev-parse", "HEAD", env=env) == head_before
    names = git(src, "ls-tree", "-r", "--name-only", "other", env=env).decode().split()
    for name in names:
        path = os.path.join(wt, name)
        if name in lost:
            assert not os.path.lexists(path), name
        else:
            with open(path, "rb") as f:
                assert f.read() == git(src, "cat-file", "blob", f"other:{name}", env=env), name
    monkeypatch.setattr(Checkout, "helper_command", real)
    subprocess.run([sys.executable, "-m", "git_checkout_helper", "parallel-checkout", "-q", "-j", "2", "--threshold", "0",
                    "other"], cwd=wt, env=env, check=True, capture_output=True)
    assert git(wt, "status", "--porcelain", env=env) == b""
    git(wt, "diff-files", "--quiet", env=env)


# --- threads ------------------------------------------------------------------------


def test_a_thread_that_raises_stops_the_helper_and_its_threads(source, tmp_path, monkeypatch):
    from git_checkout_helper import helper
    from git_checkout_helper.entry import CheckoutState
    from git_checkout_helper.odb import ObjectDatabase
    from git_checkout_helper.pktline import FLUSH_PKT, pkt_line

    env, src = source
    wt = str(tmp_path / "wt")
    items = _items(env, src, wt, "other")[:50]
    real = helper.write_pc_item

    def write_pc_item(item, state):
        if item.id == 31:
            raise RuntimeError("boom")
        return real(item, state)

    monkeypatch.setattr(helper, "write_pc_item", write_pc_item)
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    os.write(w_in, b"".join(pkt_line(it.encode(REQUEST_LAYOUTS["git"])) for it in items) + FLUSH_PKT)
    os.close(w_in)
    odb = ObjectDatabase(os.path.join(src, ".git", "objects"))
    state = CheckoutState(odb, base_dir=os.fsencode(wt) + b"/")
    before = threading.active_count()
    try:
        with pytest.raises(RuntimeError, match="boom"):
            helper.serve(r_in, w_out, state, REQUEST_LAYOUTS["git"], native_stat_layout(), odb.hash_algo, 4)
        assert threading.active_count() == before  # joined, none left writing
    finally:
        odb.close()
        for fd in (r_in, r_out, w_out):
            os.close(fd)


def test_chunker_streamed_starts_helpers_early():
    """While items arrive, the first chunk is cut once STREAM_FIRST of them
    (and the slack for a directory boundary) are there, not a 1/(4n) share
    of all that are announced; later chunks grow with what was handed out,
    never past STREAM_CHUNK; once closed, the rest is shared as before."""
    names = _names([(f"d{k:03}", 50) for k in range(400)])  # 20,000 items
    arrived: list[bytes] = []
    c = Chunker(arrived, 2, len(names))
    first_cut = Chunker.STREAM_FIRST + Chunker.STREAM_FIRST // 4 + 1
    arrived.extend(names[:first_cut - 1])
    assert c.next() is None
    arrived.append(names[first_cut - 1])
    first = c.next()
    assert first is not None and 0 < first[1] <= Chunker.STREAM_FIRST * 5 // 4
    arrived.extend(names[len(arrived):])
    chunks = []
    while (ch := c.next()) is not None:
        chunks.append(ch)
    sizes = [b - a for a, b in chunks]
    assert all(b - a <= _stream_cap(a) * 5 // 4 for a, b in chunks)
    assert sizes[0] <= Chunker.STREAM_FIRST * 5 // 4 < max(sizes)  # a ramp, not one size
    assert max(sizes) <= Chunker.STREAM_CHUNK * 5 // 4
    c.close()
    while (ch := c.next()) is not None:
        sizes.append(ch[1] - ch[0])
    assert c.done and first[1] + sum(sizes) == len(names)


def test_the_queue_keeps_attributes_as_runs():
    """The queue keeps each run of items with the same attributes once (most
    checkouts have one or a few): an item's attributes, one by one or in a
    slice across runs, are those it was queued with, and the queue grows by
    one reference an item, not two."""
    import tracemalloc

    from git_checkout_helper.attributes import ConvAttrs
    from git_checkout_helper.checkout.parallel import _Queue
    from git_checkout_helper.index import Entry

    a, b = ConvAttrs(0, 0, None, None), ConvAttrs(2, 1, None, None)
    queue = _Queue(1, {a: (4000, None), b: (4000, None)})
    n = 30_000
    entries = [Entry(b"f%d" % i, 0o100644, bytes(20)) for i in range(n)]
    want = [b if 100 <= i < 200 or i == n - 1 else a for i in range(n)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for e, ca in zip(entries, want, strict=True):
            queue.append(e, ca)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [queue.attrs(i) for i in range(n)] == want
    assert [it.crlf_action for it in queue[95:205]] == [2 if 100 <= i < 200 else 0 for i in range(95, 205)]
    assert queue[n - 1].crlf_action == 2 and queue[n - 2].crlf_action == 0
    assert grown < n * 10, grown / n


def test_the_queue_makes_each_item_when_it_is_read():
    """Memory: the coordinator's queue keeps only the entries and their
    attributes; an item is made when the pool reads it (to send it, or to
    find a directory boundary), as the writer would have built it (by
    position, its filter the one the attributes allow), and not kept."""
    from git_checkout_helper.attributes import ConvAttrs
    from git_checkout_helper.checkout.parallel import _Queue
    from git_checkout_helper.index import Entry

    plain, crlf = ConvAttrs(0, 0, None, None), ConvAttrs(2, 1, None, b"UTF-16")
    queue = _Queue(1, {plain: (4000, None), crlf: (3990, b"lfs")})
    entries = [Entry(b"d/f%d" % i, 0o100644 | (i % 2) * 0o111, bytes([i]) * 20) for i in range(5)]
    for e in entries:
        queue.append(e, crlf if e.mode & 0o111 else plain)
    assert len(queue) == 5 and not hasattr(queue, "items") and not hasattr(queue, "__dict__")
    want = [PcItem(i, e.oid, e.mode, e.name, 2 if i % 2 else 0, 1 if i % 2 else 0, b"UTF-16" if i % 2 else None,
                   1, 0, b"lfs" if i % 2 else None) for i, e in enumerate(entries)]
    assert [queue[i] for i in range(5)] == want and queue[1:4] == want[1:4]
    assert queue[2] is not queue[2]  # (made when read)
    assert queue[-1] == want[-1] and list(queue) == want  # (a sequence: write_pc_items reads it so)
    with pytest.raises(IndexError):
        queue[5]
