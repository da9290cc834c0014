"""Running helper processes: git's ``parallel-checkout.c`` coordinator side.

``setup_workers`` / ``gather_results_from_workers`` / ``finish_workers``: spawn
every helper first, hand out the items, then poll all helper stdouts (and the
stdins that still have bytes to take) at once and take results as they come.
Results are checked per helper and per batch, in order: ids ``start..end-1``
then a flush; they land in a :class:`Results` table, by id.

Two ways to hand out the items (``checkout.distribution``):

* **static** (git's split, and always for ``--helper-cmd``, which may be
  git's ``checkout--worker``: it reads one batch and exits): each helper gets
  one contiguous chunk (``nr / n`` each, the first ``nr % n`` one more) and
  its input is closed. Contiguous chunks in index order keep a directory's
  files in one helper (directory locks in the kernel) and delta bases in one
  helper's cache. git's author notes that work stealing was never done: one
  chunk holding the large files, or the slow directory, sets the pace while
  the other helpers sit idle.
* **dynamic** (the default for our own helpers, which read another batch
  after answering a flush): *work sharing with shrinking chunks* (guided
  self-scheduling, :class:`Chunker`). Each chunk is ``remaining / (4 n)``
  items (at least a few), contiguous in path order and cut at a directory
  boundary where one is near, and every helper keeps ``AHEAD`` = 2 batches in
  flight (the one it writes, the next waiting in its pipe), so it never waits
  for the coordinator; each flush that comes back is answered with the next
  chunk. Early chunks are large (locality, few round trips), late ones small,
  so helpers finish within about one small chunk of each other whatever the
  sizes of the files. While the coordinator still streams items, no chunk
  is larger than ``Chunker.STREAM_CHUNK``, and the first ones are smaller
  still (``STREAM_FIRST``, then doubling), so that the helpers start early.

  Why not git 2007's "steal half of the busiest thread's remaining work"
  (``builtin/pack-objects.c``)? Items sent to a helper cannot be taken back
  over this wire (a helper reads a whole batch before it writes, as git's
  worker does, and nothing cancels a batch), so stealing would need a
  cancellation message and a way to prove that a stolen item was not also
  written (O_EXCL would refuse the second write, as COLLIDED). Shrinking
  chunks get most of the balance with nothing new on the wire: what a helper
  holds and has not started is at most its next chunk, a ``1/(4n)`` share of
  what was left when it was sent. The cost: a few more round trips (tens of
  batches instead of ``n``), and chunk boundaries that may split a delta
  chain between helpers.

Anything unexpected from a helper (a result out of order, a short record, a
death) marks every item it holds unanswered as not written; in dynamic mode
the items not handed out yet go on to the other helpers; the caller decides
what the lost ones mean for the index. Request bytes are written without
blocking through the same selector (a blocking write to a helper that is
itself blocked writing results would be a deadlock). Helpers never outlive
:meth:`HelperPool.run`: on any exception (Ctrl-C included) they are
terminated and reaped.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, MutableMapping, Sequence
from itertools import starmap

from .index import STAT_DATA, cut_stat_data
from .pktline import FLUSH, FLUSH_PKT, PktLineError, PktParser, next_packet, pkt_line
from .wire import (
    PcItem,
    PcItemStatus,
    RequestLayout,
    StatLayout,
    WireError,
    parse_result,
)
from .wrapper import unfix_mmap_threshold

__all__ = ["AHEAD", "Chunker", "HelperPool", "PoolRun", "Results", "fork_child", "split_batches"]

WRITTEN = PcItemStatus.PC_ITEM_WRITTEN

#: Batches in flight per helper in dynamic mode: the one it writes and one
#: queued in its stdin, so that it never waits for the coordinator.
AHEAD = 2


class Results:
    """Every item's answer, by item id, kept flat: ``status`` holds one
    ``enum pc_item_status`` byte per item (``PC_ITEM_PENDING`` until it is
    answered), and a WRITTEN item's stat data is the nine fields an index
    entry keeps (:func:`index.cut_stat_data`), packed as an entry keeps them
    (:data:`index.STAT_DATA`): the very ``bytes`` the entry then holds.

    ``fill``: the index entries the items are for, by item id. A WRITTEN
    item's stat data then go into its entry as they come
    (:meth:`index.Entry.fill_stat_data`), not kept here: a list of them
    beside the entries was 0.8 MB of the coordinator's peak at 100,000
    files. git fills its entries once every helper is done
    (``handle_results``); nothing reads an entry's stat data before then.

    git keeps a whole ``struct stat`` in each item; an object per result
    here (the result, its 16 stat fields) took 45 MB of the coordinator's
    memory at 100,000 files, and building then reading them 3.6 µs a
    result, against 2 µs for this. A buffer of all the packed records,
    copied into each entry's ``bytes`` at the end, was 3.5 MB more there."""

    __slots__ = ("status", "_stats", "_fill")

    def __init__(self, nr: int, fill: Sequence | None = None) -> None:
        self.status = bytearray(nr)
        self._fill = fill
        self._stats: list[bytes | None] | None = [None] * nr if fill is None else None

    def __len__(self) -> int:
        return len(self.status)

    def ensure(self, nr: int) -> None:
        """Room for ``nr`` items (a stream that brought more than it announced)."""
        if nr > len(self.status):
            if self._stats is not None:
                self._stats.extend([None] * (nr - len(self.status)))
            self.status.extend(bytes(nr - len(self.status)))

    def save(self, id_: int, status: int, fields: tuple[int, ...] | None) -> None:
        """``fields``: a WRITTEN item's stat fields in :func:`index.cut_stat_data`'s
        order (a helper's, uncut, or :func:`index.stat_data`'s: cutting is idempotent)."""
        self.status[id_] = status
        if fields is not None:
            sd = STAT_DATA.pack(*cut_stat_data(*fields))
            if self._stats is None:
                self._fill[id_].fill_stat_data(sd)
            else:
                self._stats[id_] = sd

    def save_written(self, first: int, records: list[tuple[int, ...]]) -> None:
        """WRITTEN for the items from ``first`` on, one for each of ``records``
        (:func:`index.cut_stat_data`'s fields, already cut)."""
        n = len(records)
        self.status[first : first + n] = bytes((WRITTEN,)) * n
        if self._stats is None:
            for e, sd in zip(self._fill[first : first + n], starmap(STAT_DATA.pack, records), strict=True):
                e.fill_stat_data(sd)
        else:
            self._stats[first : first + n] = starmap(STAT_DATA.pack, records)

    @property
    def filled(self) -> bool:
        """Whether the WRITTEN items' entries hold their stat data already (``fill``)."""
        return self._stats is None

    def stat_data(self, id_: int) -> bytes:
        """A WRITTEN item's stat data, packed as an entry keeps them."""
        return self._fill[id_].sd if self._stats is None else self._stats[id_]

    def all_stat_data(self) -> list[bytes | None]:
        """:meth:`stat_data` of every item in id order (None for an item not WRITTEN)."""
        if self._stats is None:
            return [e.sd if s == WRITTEN else None for e, s in zip(self._fill, self.status, strict=False)]
        return self._stats


class _Helper:
    __slots__ = ("index", "proc", "next_id", "parser", "done", "error", "child_id", "t0", "batches",
                 "pending", "closing", "dropped")

    def __init__(self, index, proc, child_id, t0):
        self.index = index
        self.proc = proc
        self.next_id = 0
        self.parser = PktParser()
        self.done = False
        self.error: str | None = None
        self.child_id = child_id
        self.t0 = t0
        #: [start, end) of each batch sent and not yet answered with its flush, in order
        self.batches: deque[tuple[int, int]] = deque()
        self.pending = bytearray()  # request bytes not yet taken by the helper's stdin
        self.closing = False  # no more batches: close stdin once ``pending`` is out
        self.dropped = False  # no longer listened to (EOF, or an error)

    def unanswered(self) -> int:
        if not self.batches:
            return 0
        return self.batches[0][1] - self.next_id + sum(e - s for s, e in list(self.batches)[1:])


class Chunker:
    """Work sharing in shrinking chunks (guided self-scheduling) over items
    in index (path) order; see the module docstring for why.

    Each chunk is ``remaining / (FACTOR * n)`` items, at least ``MIN_CHUNK``
    (the last one takes a smaller remainder whole), contiguous, and cut at a
    directory boundary when one lies within a quarter of the chunk's size of
    the cut: a directory's files stay in one helper (one process creating in
    a directory, not two fighting over its lock) as far as sizes allow.
    While items still arrive, a chunk is at most :attr:`STREAM_CHUNK`, and at
    most what was handed out before it (:attr:`STREAM_FIRST` for the first).
    """

    FACTOR = 4
    MIN_CHUNK = 8
    #: The largest chunk while items still arrive (the coordinator streaming
    #: them as it prepares their paths). A first chunk of ``expected / (4
    #: n)`` items would wait for that many to be prepared: 4,300 of a
    #: 100,000-file near switch's 34,500, about 0.1 s with the second CPU
    #: idle, and as long again for the next helper's; capped, both helpers
    #: write from the first few hundred on (their timeline: 0.2 s sooner).
    STREAM_CHUNK = 512
    #: The first chunk while items still arrive; the next ones may be as large
    #: as what was handed out before them (64, 64, 128, 256, then
    #: ``STREAM_CHUNK``). A first chunk of ``STREAM_CHUNK`` kept the first
    #: helper waiting for 640 items to be prepared and the second for 1,100
    #: (10-20 ms of a git.git clone with a CPU idle); paired on git.git, -j 2,
    #: 8-10 rounds: 1-2% less time for the clone, far and near switch.
    STREAM_FIRST = 64

    def __init__(self, names: Sequence[bytes], n: int, expected: int | None = None) -> None:
        """``expected``: items are still arriving (appended to ``names``) and
        about this many will come; chunks are sized for it, and cut only
        from items that are there, until :meth:`close`."""
        self.names = names
        self.n = max(1, n)
        self.pos = 0
        self._expected = expected

    def close(self) -> None:
        """Every item has arrived: what ``names`` holds is all there is."""
        self._expected = None

    @property
    def done(self) -> bool:
        return self._expected is None and self.pos >= len(self.names)

    def next(self) -> tuple[int, int] | None:
        """The next chunk, or None: the queue is dry, or (items still
        arriving) the chunk and the directory boundary near its end are not
        all there yet."""
        have, pos = len(self.names), self.pos
        nr = have if self._expected is None else max(have, self._expected)
        rem = nr - pos
        if rem <= 0:
            return None
        size = max(min(self.MIN_CHUNK, -(-rem // self.n)), -(-rem // (self.FACTOR * self.n)))
        if self._expected is not None:
            size = min(size, self.STREAM_CHUNK, max(self.STREAM_FIRST, pos))
        end = pos + size
        last = end + min(self.MIN_CHUNK, size) > nr
        # The last chunk takes the rest: while items still arrive, only once
        # all that were announced are there (or :meth:`close` says that is all).
        if self._expected is not None and (nr if last else end + size // 4 + 1) > have:
            return None
        end = nr if last else self._dir_cut(pos, end, size // 4)
        self.pos = end
        return pos, end

    def _dir_cut(self, pos: int, end: int, slack: int) -> int:
        """The directory boundary nearest ``end`` within ``slack`` items (never
        before ``pos + 1``), or ``end`` itself when there is none."""
        names = self.names

        def boundary(i: int) -> bool:
            a, b = names[i - 1], names[i]
            return a[: a.rfind(b"/") + 1] != b[: b.rfind(b"/") + 1]

        if boundary(end):
            return end
        lo = max(pos + 1, end - slack)
        hi = min(len(names) - 1, end + slack)
        for d in range(1, slack + 1):
            if end - d >= lo and boundary(end - d):
                return end - d
            if end + d <= hi and boundary(end + d):
                return end + d
        return end


def split_batches(nr: int, num_workers: int) -> list[tuple[int, int]]:
    """git's split: contiguous [start, end) runs, the first ``nr % n`` one longer."""
    base, extra = divmod(nr, num_workers)
    out = []
    start = 0
    for i in range(num_workers):
        size = base + (1 if i < extra else 0)
        out.append((start, start + size))
        start += size
    return out


#: The signals the coordinator stops on (cli installs its handlers for them).
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def fork_child(child_handlers: dict) -> int:
    """``os.fork`` with the stopping signals held across it: a child process
    must never run the coordinator's handlers (they end in its cleanup, which
    removes index.lock), so the child's ``child_handlers`` (signal: handler)
    are set before the signals are let through again, in both processes. A
    signal that came meanwhile is delivered then, to the handler now in place.
    The child's allocator adjusts itself again (:func:`wrapper.unfix_mmap_threshold`)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        pid = os.fork()
        if pid == 0:
            for sig, handler in child_handlers.items():
                signal.signal(sig, handler)
            unfix_mmap_threshold()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return pid


def close_other_fds(keep: int = -1) -> None:
    """In a forked child: close every descriptor above stderr but ``keep``
    (the coordinator's pipes to other children, index.lock, the packs'),
    so that no child holds another's pipe open past its end."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


class ForkedHelper:
    """A helper process forked from the coordinator, with ``Popen``'s interface.

    An exec'd Python helper spends ~0.1 s of CPU on interpreter start-up and
    imports before its first item; the coordinator has already imported all
    of it, so a fork starts a helper in about a millisecond. The child gets
    a clean slate first (pipes on 0/1, every other descriptor closed, the
    helper's environment and directory) and then runs the helper's ordinary
    entry point, exactly as an exec'd one would; it never returns into the
    coordinator's code (``os._exit``).
    """

    def __init__(self, entry: Callable[[list[str], MutableMapping[str, str]], int], args: list[str], cwd: str,
                 env: dict[str, str] | None) -> None:
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        pid = fork_child({signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL})
        if pid == 0:  # the child
            code = 128
            try:
                os.dup2(r_in, 0)
                os.dup2(w_out, 1)
                close_other_fds()
                os.chdir(cwd)
                if env is not None:
                    os.environ.clear()
                    os.environ.update(env)
                code = entry(args, os.environ)  # this child's environment, as an exec'd helper's
            except BaseException:  # noqa: BLE001 - nothing may escape into the parent's code
                pass
            finally:
                try:
                    sys.stderr.flush()
                except BaseException:  # noqa: BLE001
                    pass
                os._exit(code if isinstance(code, int) else 128)
        os.close(r_in)
        os.close(w_out)
        self.pid = pid
        self.stdin = os.fdopen(w_in, "wb", buffering=0)
        self.stdout = os.fdopen(r_out, "rb", buffering=0)
        self.returncode: int | None = None

    def _status(self, status: int) -> int:
        self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._status(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            while True:
                try:
                    _, status = os.waitpid(self.pid, 0)
                    break
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    continue
            self._status(status)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass


class HelperPool:
    """Helpers started ahead of their work.

    git starts its workers only when the queue is complete; a Python helper
    needs ~0.1 s to start, so the coordinator starts them as soon as it knows
    roughly how much there is to write and lets their start-up overlap its
    own removals, mkdirs and item encoding. Helpers that turn out not to be
    needed get an empty input and exit.
    """

    def __init__(self, argv: list[str], n: int, *, cwd: str, env: dict[str, str] | None, trace=None,
                 trace_argv: list[str] | None = None,
                 fork_entry: Callable[[list[str], MutableMapping[str, str]], int] | None = None) -> None:
        """Start ``n`` helpers: ``argv`` exec'd, or, with ``fork_entry``, forked
        children running ``fork_entry(argv, env)`` (see :class:`ForkedHelper`).
        ``trace_argv`` is what trace2's ``child_start`` shows (git shows
        ``git checkout--worker``; ours is ``git checkout--helper``)."""
        self.argv = argv
        self.trace = trace
        self.helpers: list[_Helper] = []
        self.batches = 0  # batches sent by the last run()
        try:
            for i in range(n):
                cid = trace.child_start(trace_argv or argv) if trace is not None else -1
                if fork_entry is not None:
                    proc = ForkedHelper(fork_entry, argv, cwd, env)
                else:
                    import subprocess  # only for exec'd helpers: 4 ms of every start-up otherwise

                    proc = subprocess.Popen(
                        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, env=env,
                        bufsize=0, close_fds=True,
                    )
                self.helpers.append(_Helper(i, proc, cid, time.monotonic()))
        except BaseException:
            self.close(error=lambda m: None, abort=True)
            raise

    def __len__(self) -> int:
        return len(self.helpers)

    def run(self, items: Sequence[PcItem], **options) -> Results:
        """Write ``items`` with (up to) every helper; ``options`` as for
        :meth:`start` (``layout``, ``stat_layout``, ``on_result(first_id, n, status)``
        for each answer, ``error``, ``dynamic``, ``fill``).

        Item ids must be 0..len(items)-1 in order; ``items`` may make each
        item as it is read (the coordinator's queue does). An item left
        ``PC_ITEM_PENDING`` was never answered (its helper died or
        misbehaved); ``error`` has been told why.
        ``dynamic``: work sharing in shrinking chunks (:class:`Chunker`, only
        for helpers that read another batch after a flush: ours); otherwise
        git's static split, one batch per helper.
        """
        return self.start(items, None, **options).finish()

    def start(
        self,
        items: Sequence[PcItem],
        expected: int | None,
        *,
        layout: RequestLayout,
        stat_layout: StatLayout,
        on_result: Callable[[int, int, int], None],
        error: Callable[[str], None] = lambda m: None,
        dynamic: bool = False,
        fill: Sequence | None = None,
    ) -> PoolRun:
        """:meth:`run`, begun: with ``expected``, ``items`` is a list the
        caller is still appending to (about ``expected`` of them, dynamic
        mode only), handed out as it grows (:meth:`PoolRun.pump`), and
        :meth:`PoolRun.finish` is called once it is complete. ``fill``: the
        index entries of the items, filled as answers come (:class:`Results`)."""
        return PoolRun(self, items, expected, layout, stat_layout, on_result, error, dynamic, fill)

    @staticmethod
    def _close_input(h: _Helper) -> None:
        try:
            h.proc.stdin.close()
        except OSError:
            pass

    def close(self, error: Callable[[str], None] = lambda m: None, abort: bool = True) -> None:
        """Reap every helper (terminating them first when ``abort``); idempotent."""
        helpers, self.helpers = self.helpers, []
        if abort:
            for h in helpers:
                if h.proc.poll() is None:
                    h.proc.send_signal(signal.SIGTERM)
        for h in helpers:
            self._close_input(h)
            if h.proc.stdout:
                h.proc.stdout.close()
            rc = h.proc.wait()
            if self.trace is not None:
                self.trace.child_exit(h.child_id, h.proc.pid, rc, time.monotonic() - h.t0)
            if abort:
                continue
            if rc < 0 and not (h.error and rc == -signal.SIGTERM):
                # (a SIGTERM after an error is ours: _drop stopped the helper)
                error(f"checkout helper {h.index} died of signal {-rc}")
            elif rc != 0 and h.error is None and not h.done:
                h.error = f"checkout helper {h.index} exited with status {rc}"
            if h.error:
                error(h.error)


class _Names:
    """The names of a list of items that may still grow (for :class:`Chunker`)."""

    __slots__ = ("items", "name")

    def __init__(self, items: Sequence[PcItem]) -> None:
        self.items = items
        # A queue that makes its items when read tells their names without making them.
        self.name = getattr(items, "name", None) or (lambda i: items[i].name)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> bytes:
        return self.name(i)


class PoolRun:
    """One :meth:`HelperPool.run` in progress; see :meth:`HelperPool.start`.

    Streaming lets the helpers write while the coordinator still prepares
    the rest (its unlinks, directories, attributes, items): git's main
    process does all of that before any worker starts. The helpers answer
    as before; only when chunks are cut changes, never their order or
    contents (:class:`Chunker` waits for the items a chunk needs)."""

    def __init__(self, pool: HelperPool, items, expected, layout, stat_layout, on_result, error, dynamic, fill=None):
        if expected is not None and not dynamic:
            raise ValueError("items can only stream to helpers in dynamic mode")
        self.pool = pool
        self.items = items
        self.stat_layout = stat_layout
        self.on_result = on_result
        self.error = error
        nr = len(items) if expected is None else expected
        self.results = Results(len(items), fill)
        self.used = pool.helpers[: max(1, min(nr, len(pool.helpers)))]
        self.sel = selectors.DefaultSelector()
        self.feed = Chunker(_Names(items), len(self.used), expected) if dynamic and (nr or expected) else None
        self._layout = layout
        self._open = True
        pool.batches = 0
        try:
            for h in pool.helpers[len(self.used) :]:
                h.done = True  # nothing for it: an empty input ends it
                pool._close_input(h)
            for h in self.used:
                os.set_blocking(h.proc.stdin.fileno(), False)
                os.set_blocking(h.proc.stdout.fileno(), False)
                self.sel.register(h.proc.stdout.fileno(), selectors.EVENT_READ, (h, False))
            if self.feed is None:
                for h, (start, end) in zip(self.used, split_batches(nr, len(self.used)), strict=True):
                    self._send(h, start, end)
            self._refill_all()
        except BaseException:
            self.abort()
            raise

    def _send(self, h: _Helper, start: int, end: int) -> None:
        self.results.ensure(end)
        h.batches.append((start, end))
        if len(h.batches) == 1:
            h.next_id = start
        h.pending += b"".join([pkt_line(item.encode(self._layout)) for item in self.items[start:end]]) + FLUSH_PKT
        self.pool.batches += 1

    def _refill(self, h: _Helper, ahead: int = AHEAD) -> None:
        """Keep ``ahead`` batches in flight; close the input when the queue is dry."""
        if h.error is not None:  # gone: the queue is for the others
            return
        feed = self.feed
        if feed is not None:
            while len(h.batches) < ahead:
                chunk = feed.next()
                if chunk is None:
                    break
                self._send(h, *chunk)
        if feed is None or feed.done:
            h.closing = True
            h.done = not h.batches
        _pump(self.sel, h)

    def _refill_all(self) -> None:
        for ahead in range(1, AHEAD + 1):  # one batch each first, then the ones ahead
            for h in self.used:
                self._refill(h, ahead)

    def pump(self) -> None:
        """Hand out what has arrived and take the answers that are in,
        without waiting for any."""
        try:
            self._refill_all()
            _gather(self.sel, self.used, self.results, self.stat_layout, self.on_result, self._refill,
                    block=False)
        except BaseException:
            self.abort()
            raise

    def finish(self) -> Results:
        """Every item is there: hand out the rest, wait for all answers, reap
        the helpers (a misbehaving one's error goes to ``error``)."""
        aborted = True
        try:
            if self.feed is not None:
                self.feed.close()
            self.results.ensure(len(self.items))  # (a slot for each, answered or not)
            self._refill_all()
            _gather(self.sel, self.used, self.results, self.stat_layout, self.on_result, self._refill)
            aborted = False
        finally:
            self._close(aborted)
        return self.results

    def abort(self) -> None:
        """Stop: helpers terminated and reaped (idempotent)."""
        self._close(True)

    def _close(self, aborted: bool) -> None:
        if self._open:
            self._open = False
            self.sel.close()
            self.pool.close(self.error, abort=aborted)


def _pump(sel, h: _Helper) -> None:
    """Move pending request bytes into the helper's stdin without blocking
    (a blocking write to a helper blocked writing its results would be a
    deadlock); the selector's write interest stays while bytes wait."""
    fd = h.proc.stdin.fileno() if not h.proc.stdin.closed else -1
    if fd < 0:
        return
    if h.pending and h.error is None:
        try:
            n = os.write(fd, h.pending)
        except BlockingIOError:
            n = 0
        except OSError as e:  # EPIPE: it is gone, or closed its input
            h.error = f"checkout helper {h.index} closed its input early ({e.strerror or e})"
            h.pending.clear()
            n = 0
        del h.pending[:n]
    registered = sel.get_map().get(fd) is not None
    if h.pending and h.error is None:
        if not registered:
            sel.register(fd, selectors.EVENT_WRITE, (h, True))
        return
    if registered:
        sel.unregister(fd)
    if h.closing or h.error is not None:
        HelperPool._close_input(h)


def _gather(sel, helpers, results, stat_layout, on_result, refill, block: bool = True) -> None:
    """``gather_results_from_workers``: results checked per helper and batch,
    in order; a flush completes the oldest batch and asks ``refill`` for more.
    Until every helper is done, or (``block`` false) once through what is
    ready now."""
    for h in helpers:
        if h.error and not h.dropped:  # its input is gone already: nothing it says counts
            _drop(sel, h, None)
    active = sum(1 for h in helpers if not h.dropped)
    while active:
        events = sel.select(None if block else 0)
        for key, _ in events:
            h, writing = key.data
            if h.dropped:  # (an event of the same select() for its other pipe)
                continue
            if writing:
                _pump(sel, h)
                if h.error:
                    _drop(sel, h, None)
                    active -= 1
                continue
            try:
                data = os.read(key.fd, 1 << 16)
            except BlockingIOError:
                continue
            if data:
                try:
                    _read_results(h, data, stat_layout, results, on_result, refill)
                except PktLineError as e:
                    _drop(sel, h, f"checkout helper {h.index}: {e}")
                    active -= 1
                    continue
                if h.error:
                    _drop(sel, h, None)
                    active -= 1
            else:  # EOF
                if not h.done and h.error is None:
                    h.error = (
                        f"checkout helper {h.index} ended its output before answering "
                        f"{h.unanswered()} items"
                    )
                _drop(sel, h, None)
                active -= 1
        if not block:
            return


def _read_results(h: _Helper, data: bytes, stat_layout, results, on_result, refill) -> None:
    """The packets of ``data`` (after what ``h`` left incomplete), in order:
    runs of WRITTEN results of the batch in flight are checked and saved
    at once (:meth:`wire.StatLayout.written_run`), any other packet through
    :func:`_parse_and_save_result`; an incomplete packet waits for more."""
    buf = h.parser.take(data)
    pos = 0
    step = stat_layout.packet_size
    while not (h.done or h.error):
        if h.batches:
            n = min((len(buf) - pos) // step, h.batches[0][1] - h.next_id)
            if n > 0:
                records = stat_layout.written_run(buf, pos, h.next_id, n)
                if records:
                    first, n = h.next_id, len(records)
                    results.save_written(first, records)
                    h.next_id += n
                    pos += n * step
                    on_result(first, n, WRITTEN)
        got = next_packet(buf, pos)
        if got is None:
            break
        pkt, pos = got
        _parse_and_save_result(h, pkt, stat_layout, results, on_result, refill)
    h.parser.keep(buf, pos)
    # What follows an error or the last batch counts for nothing, but its
    # framing is still checked (a PktLineError), as for every byte read.
    h.parser.feed(b"")


def _parse_and_save_result(h: _Helper, pkt, stat_layout, results, on_result, refill) -> None:
    """``parse_and_save_result`` for one packet of ``h``'s: a result checked
    against the oldest batch in flight and saved, or the flush that completes
    that batch; anything else sets ``h.error``."""
    batch = h.batches[0] if h.batches else None
    if pkt == FLUSH:
        if batch is None:
            h.error = f"received flush from supposedly finished checkout helper {h.index}"
            return
        if h.next_id != batch[1]:
            h.error = (
                f"checkout helper {h.index} finished with "
                f"{batch[1] - h.next_id} items unanswered"
            )
            return
        h.batches.popleft()
        if h.batches:
            h.next_id = h.batches[0][0]
        refill(h)
        return
    if isinstance(pkt, int):
        h.error = f"checkout helper {h.index} sent an unexpected special packet"
        return
    try:
        id_, status, fields = parse_result(pkt, stat_layout)
    except WireError as e:
        h.error = f"checkout helper {h.index}: {e}"
        return
    if batch is None or h.next_id >= batch[1]:
        h.error = f"received result from supposedly finished checkout helper {h.index}"
        return
    if id_ != h.next_id:
        h.error = (
            f"unexpected item id from checkout helper {h.index} "
            f"(got {id_}, exp {h.next_id})"
        )
        return
    h.next_id += 1
    results.save(id_, status, fields)
    on_result(id_, 1, status)


def _drop(sel, h: _Helper, err: str | None) -> None:
    """Stop listening to ``h`` (both pipes); stop it if it misbehaved."""
    if err and not h.error:
        h.error = err
    h.dropped = True
    for f in (h.proc.stdout, h.proc.stdin):
        if f is not None and not f.closed and sel.get_map().get(f.fileno()) is not None:
            sel.unregister(f.fileno())
    h.pending.clear()
    HelperPool._close_input(h)
    if h.error and h.proc.poll() is None:
        h.proc.send_signal(signal.SIGTERM)
