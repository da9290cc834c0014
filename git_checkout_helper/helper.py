"""The helper program, ``builtin/checkout--worker.c``: :func:`main` (its
``cmd_checkout__worker``: arguments, repository set-up, signals, filters) and
the main loop :func:`serve` (its ``worker_loop``).

Reads items until a flush, and only then writes them: git's coordinator sends
every batch to every worker before it reads a single result, so a worker that
answered early could fill its stdout pipe while the coordinator is still
blocked writing to its stdin. Results go out in the order the items came, one
pkt-line each, then a flush.

Beyond git's worker, after the flush the helper reads again: another batch is
handled the same way, and end of input at a batch boundary ends it with status
0. git's coordinator closes the pipe after the flush, so it sees no difference;
our coordinator uses it to hand out more work (dynamic distribution).

With ``--threads K`` (ours; ``checkout.helperThreads``), K threads write the
items of a batch (:class:`ThreadedWriter`) while the main thread sends the
results in item order, exactly as one thread would. Why threads help at all
under the GIL: a checkout item is open/write/fstat/close system calls and
zlib inflation, and CPython releases the GIL in all of them, so on a
filesystem where each request waits (NFS; bench/latencyfs.py) K threads in
one process overlap their waits like K processes do, for one interpreter's
memory; on a local filesystem the work is CPU-bound and one thread is best
(Mercurial's finding for its worker threads).

Results are buffered and flushed in bursts (every ``RESULT_BURST`` results or
``RESULT_LATENCY`` seconds), trading one write() per item for timely progress.

Nothing on stdin is trusted (t/test_hostile_wire.py, t/test_helper_paths.py):

* a batch that is not well formed (framing, lengths that lie, a special
  packet inside a batch, an ``algo`` or ``crlf_action`` no git sends) is
  refused whole with one ``fatal:`` line and exit 128, before anything of it
  is written; git's worker BUG()s on some of these, and on an unknown
  crlf_action or algo it writes anyway: a value outside the enum means the
  bytes are not the struct we think (dialect mismatch, corruption);
* a well-formed item that cannot be written safely is FAILED on its own with
  one error line, as git does for a missing object: an unsafe path
  (``verify_item_path``; not in a helper the coordinator forks, whose paths
  it has verified: see :mod:`entry`) or a mode that is not a regular file
  (git's worker creates the file and then aborts on an assertion);
* ids are echoed as they came (out of order, duplicated): checking them is
  the coordinator's job, as in git;
* leading directories are proven real again for every batch, since the
  coordinator may change the tree between batches.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import MutableMapping

from .entry import CheckoutState, write_pc_item, write_pc_items
from .help import open_manual, version_line
from .inflate import use_setting as use_inflater_setting
from .pktline import FLUSH, FLUSH_PKT, PktLineError, PktReader, pkt_line
from .wire import (
    RESULT_BASE,
    PcItemStatus,
    RequestLayout,
    StatLayout,
    WireError,
    decode_item,
)
from .wrapper import write_in_full

__all__ = ["HELPER_USAGE", "HelperTerminated", "MAX_THREADS", "ProtocolError", "ThreadedWriter", "main",
           "raise_terminated", "read_batch", "serve"]

RESULT_BURST = 256
RESULT_LATENCY = 0.02
_WRITTEN = PcItemStatus.PC_ITEM_WRITTEN
#: More I/O threads than this per helper buy nothing but memory.
MAX_THREADS = 64


class ProtocolError(Exception):
    """Malformed input from the coordinator; a one-line message."""


class HelperTerminated(BaseException):
    """Raised by the helper's SIGTERM/SIGHUP handler, so the item being written
    is removed on the way out (see ``write_pc_item``); carries the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_terminated(signum: int, frame) -> None:
    """Signal handler: unwind through the writer's cleanup."""
    raise HelperTerminated(signum)


def read_batch(reader: PktReader, layout: RequestLayout, default_algo: int) -> list | None:
    """Read items up to a flush; None at end of input before any byte of a batch."""
    try:
        items, end = reader.read_until_flush(lambda pkt: decode_item(pkt, layout, default_algo))
        if end == FLUSH:
            return items
        if end is None:
            if not items and reader.at_eof():
                return None
            raise ProtocolError(f"end of input before flush (after {len(items)} items)")
        raise ProtocolError(f"unexpected special packet {end:04x} in a batch")
    except (PktLineError, WireError) as e:
        raise ProtocolError(str(e)) from None


class ThreadedWriter:
    """K persistent threads writing the items of one batch at a time.

    Each thread starts on its own contiguous share of the batch and, when
    that runs dry, steals the upper half of the largest share left (git's
    threaded delta search, ``builtin/pack-objects.c``; here stealing is
    possible, an item not started is only a number). Why not one shared
    counter handing out items in turn: creating a file holds its
    directory's lock in the kernel for the whole request, so on a slow
    filesystem K threads creating in the same directory wait for each
    other; contiguous shares put them in different directories, as
    contiguous chunks do for processes. Each thread has its own view of
    the :class:`~entry.CheckoutState` (``for_thread``: its own directory
    caches; the object database locks what it shares). Filtered items
    (``--filters``) are written one at a time: a process filter speaks one
    request at a time. The caller takes the results in item order
    (:meth:`result`), so the wire sees exactly what one thread would send.

    One difference from one thread, for input git never sends: two items of
    one batch naming the same path race for it (O_EXCL lets exactly one
    win, the other is COLLIDED), as two items sent to two of git's workers
    do; index paths are unique, so a coordinator never sends such a batch.

    On the way out (a signal, an error) :meth:`stop` lets each thread finish
    the item it is writing (a file is never left half written by a thread
    that was not told) and takes no more; items written but not answered
    are the coordinator's to remove, as for a helper that dies.
    """

    def __init__(self, state: CheckoutState, threads: int) -> None:
        import threading  # (only a helper with I/O threads starts any)

        self.state = state
        self._cond = threading.Condition()
        self._filter_lock = threading.Lock()
        self._share_lock = threading.Lock()
        self._items: list = []
        self._results: list = []
        self._shares: list[list[int]] = []
        self._generation = 0
        self._stop = False
        self._busy = 0
        self._threads = [
            threading.Thread(target=self._work, args=(i,), name=f"th{i + 1:02d}:checkout", daemon=True)
            for i in range(threads)
        ]
        for t in self._threads:
            t.start()

    def _take(self, shares: list[list[int]], me: int) -> int | None:
        """The next item of this thread's share, or the first of the upper
        half stolen from the largest share left; None when all are taken."""
        with self._share_lock:
            mine = shares[me]
            if mine[0] < mine[1]:
                mine[0] += 1
                return mine[0] - 1
            victim = max(shares, key=lambda r: r[1] - r[0])
            left = victim[1] - victim[0]
            if left <= 0:
                return None
            cut = victim[1] - (left + 1) // 2
            mine[0], mine[1] = cut + 1, victim[1]
            victim[1] = cut
            return cut

    def _work(self, me: int) -> None:
        seen = 0
        own = self.state.for_thread()
        while True:
            with self._cond:
                while self._generation == seen and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                seen = self._generation
                items, results, shares = self._items, self._results, self._shares
                self._busy += 1
            own.forget_dirs()  # leading directories proven again per batch
            local = own
            try:
                while not self._stop:
                    i = self._take(shares, me)
                    if i is None:
                        break
                    item = items[i]
                    try:
                        if item.filter is not None:
                            with self._filter_lock:
                                r = write_pc_item(item, local)
                        else:
                            r = write_pc_item(item, local)
                    except BaseException as e:  # noqa: BLE001 - handed to the main thread
                        r = e
                    with self._cond:
                        results[i] = r
                        self._cond.notify_all()
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def start(self, items: list) -> None:
        with self._cond:
            self._items = items
            self._results = [None] * len(items)
            n, k = len(items), len(self._threads)
            self._shares = [[n * i // k, n * (i + 1) // k] for i in range(k)]
            self._generation += 1
            self._cond.notify_all()

    def result(self, i: int):
        """Item ``i``'s (status, stat), waiting for it; re-raises what its thread raised."""
        with self._cond:
            while self._results[i] is None:
                self._cond.wait()
            r = self._results[i]
        if isinstance(r, BaseException):
            raise r
        return r

    def stop(self) -> None:
        """Take no more items; wait for each thread's item in progress."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        for t in self._threads:
            t.join()


def serve(
    in_fd: int,
    out_fd: int,
    state: CheckoutState,
    layout: RequestLayout,
    stat_layout: StatLayout,
    default_algo: int,
    threads: int = 1,
) -> int:
    """Serve batches until end of input; returns the number of items handled.
    ``threads`` > 1: that many I/O threads write each batch (:class:`ThreadedWriter`)."""
    writer = ThreadedWriter(state, min(threads, MAX_THREADS)) if threads > 1 else None
    try:
        return _serve(in_fd, out_fd, state, layout, stat_layout, default_algo, writer)
    finally:
        if writer is not None:
            writer.stop()


def _serve(in_fd, out_fd, state, layout, stat_layout, default_algo, writer) -> int:
    reader = PktReader(in_fd)
    handled = 0
    while True:
        items = read_batch(reader, layout, default_algo)
        if items is None:
            return handled
        # The coordinator may have changed the tree since the last batch (it
        # resolves collisions in between): prove leading dirs real again.
        state.forget_dirs()
        if writer is not None:
            writer.start(items)
        out: list[bytes] = []
        last = time.monotonic()
        written = write_pc_items(items, state) if writer is None else map(writer.result, range(len(items)))
        for item, (status, st) in zip(items, written, strict=True):
            if status == _WRITTEN:
                out.append(stat_layout.written_packet(item.id, st))
            else:
                out.append(pkt_line(RESULT_BASE.pack(item.id, status)))
            if len(out) >= RESULT_BURST or time.monotonic() - last > RESULT_LATENCY:
                write_in_full(out_fd, b"".join(out))
                out.clear()
                last = time.monotonic()
        out.append(FLUSH_PKT)
        write_in_full(out_fd, b"".join(out))
        handled += len(items)
        # The pack pages this batch mapped are let go before the next: a
        # helper's size is then that of a batch, not of its share of the pack.
        state.odb.release_pages()



# -- the helper program: ``git checkout--helper`` (builtin/checkout--worker.c's cmd_checkout__worker)

HELPER_USAGE = ("usage: git checkout--helper [--prefix=<string>] [--wire=git|rfc] [--threads=<k>]\n"
                "                           [--filters [--filter-ref=<ref>] [--filter-treeish=<oid>]]")


def _die(msg: str, code: int = 128) -> int:
    sys.stderr.write(f"fatal: {msg}\n")
    sys.stderr.flush()
    return code


def _threads_arg(argv: list[str]) -> tuple[int, list[str]] | int:
    """``--threads=<k>`` (ours, ``checkout.helperThreads``): I/O threads
    writing each batch (:class:`ThreadedWriter`); the other arguments back."""
    threads, rest = 1, []
    it = iter(argv)
    for arg in it:
        if arg == "--threads" or arg.startswith("--threads="):
            value = arg[len("--threads="):] if "=" in arg else next(it, None)
            if value is None or not value.isdigit() or int(value) < 1:
                return _die(f"--threads expects a positive number, not '{value or ''}'", 129)
            threads = int(value)
        else:
            rest.append(arg)
    return threads, rest


def _helper_args(argv: list[str]) -> tuple[str | None, str, dict | None] | int:
    """``--filters`` (ours, not git's worker's): items may name a
    ``filter.<driver>`` after their path (wire.GIT_FILTERS_LAYOUT) whose
    smudge this helper runs itself; the drivers are read from the
    repository's config (``git -c`` ones arrive in GIT_CONFIG_PARAMETERS).
    ``--filter-ref``/``--filter-treeish``: the checkout's metadata that a
    process filter is told (git's ``ref=``/``treeish=``). Returns (prefix,
    wire, None or the filter settings)."""
    prefix = None
    wire = "git"
    filters: dict | None = None
    meta: dict[str, bytes] = {}
    it = iter(argv)
    for arg in it:
        if arg == "--filters":
            filters = {}
            continue
        if arg.startswith(("--filter-ref=", "--filter-treeish=")):
            key, _, value = arg[2:].partition("=")
            meta[key[7:]] = os.fsencode(value)
            continue
        if arg.startswith("--prefix="):
            prefix = arg[len("--prefix=") :]
        elif arg == "--prefix":
            prefix = next(it, None)
            if prefix is None:
                return _die("option `prefix' requires a value", 129)
        elif arg.startswith("--wire="):
            wire = arg[len("--wire=") :]
            if wire not in ("git", "rfc"):
                return _die(f"--wire: unknown dialect '{wire}' (git or rfc)", 129)
        elif arg == "--version":
            sys.stdout.write(version_line())
            return 0
        elif arg in ("-h", "--help"):
            if arg == "--help":
                open_manual(HELPER_USAGE)
            sys.stdout.write(HELPER_USAGE + "\n")
            return 129
        else:
            sys.stderr.write(f"error: unknown option `{arg}'\n{HELPER_USAGE}\n")
            return 129
    if filters is not None and wire != "git":
        return _die("--filters needs --wire=git", 129)
    if meta and filters is None:
        return _die("--filter-ref and --filter-treeish need --filters", 129)
    if filters is not None:
        filters.update(meta)
    return prefix, wire, filters


def _sanitize_stdfds() -> None:
    """git's ``sanitize_stdfds``: a closed fd 0, 1 or 2 becomes /dev/null.

    Otherwise the first file the helper opens could land on fd 1, and the
    results would be written into it (a work-tree file, a trace file).
    """
    fd = os.open(os.devnull, os.O_RDWR)
    while fd < 2:
        fd = os.dup(fd)
    if fd > 2:
        os.close(fd)
    if sys.stdout is None:
        sys.stdout = open(1, "w", closefd=False)
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False)


def _no_op(signum, frame) -> None:
    pass


class _Held:
    """What the helper program releases on its way out, however it leaves."""

    def __init__(self) -> None:
        self.trace = None
        self.runner = None
        self.stops: list[int] = []

    def release(self, died_of: int) -> None:
        for sig in self.stops:  # done or dying: a late signal changes nothing now
            signal.signal(sig, _no_op)
        if self.runner is not None:
            self.runner.close(terminate=died_of != 0)  # process filters: end of input, then reaped
        if self.trace is not None:
            self.trace.close()


def _catch_signals(held: _Held) -> None:
    """The first signal wins: a second one (the coordinator's SIGTERM after
    the terminal's SIGINT) must not interrupt the clean-up."""
    held.stops = [signal.SIGTERM, signal.SIGHUP]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        held.stops.append(signal.SIGINT)

    def terminated(signum, frame):
        for sig in held.stops:
            signal.signal(sig, _no_op)  # (not SIG_IGN: Python warns of a pending one)
        raise_terminated(signum, frame)

    for sig in held.stops:
        signal.signal(sig, terminated)


def _run(prefix: str | None, wire: str, filters: dict | None, threads: int, env, held: _Held,
         paths_verified: bool) -> None:
    """Set up as git's worker does (the repository, its object database and
    config), then serve stdin until end of input."""
    from .config import eol_config, read_config
    from .discovery import discover, setup_env
    from .odb import ObjectDatabase, object_format_name
    from .trace2 import Trace2
    from .verify_path import get_path_element_validator
    from .wire import GIT_FILTERS_LAYOUT, REQUEST_LAYOUTS, native_stat_layout

    stat_layout = native_stat_layout()
    dirs = discover(os.getcwd(), env=setup_env(env))
    if dirs.prefix:
        os.chdir(dirs.worktree)  # setup_git_directory: started inside the work tree, run at its top
    config = read_config(dirs, env)
    odb = ObjectDatabase(dirs.objects, object_format_name(config), dirs.alternates)
    trace = held.trace = Trace2.from_env(env)
    state = CheckoutState(
        odb,
        base_dir=os.fsencode(prefix) if prefix else b"",
        eol=eol_config(config),  # read at start, as git_default_config: a bad value is fatal first
        trace=trace.data if trace.enabled else None,
        validate_element=None if paths_verified else get_path_element_validator(config),
    )
    if filters is not None:
        from .attributes import read_convert_drivers
        from .filters import FilterRunner

        # One runner for this process: a process filter is started on
        # its first path and never shared with another helper.
        state.drivers = read_convert_drivers(config)
        state.filters = held.runner = FilterRunner(os.getcwd(), ref=filters.get("ref"),
                                                   treeish=filters.get("treeish"))
    _catch_signals(held)
    serve(0, 1, state, GIT_FILTERS_LAYOUT if filters is not None else REQUEST_LAYOUTS[wire], stat_layout,
          odb.hash_algo, threads)


def main(argv: list[str], env: MutableMapping[str, str], *, paths_verified: bool = False) -> int:
    """``git checkout--helper``: serve checkout items from stdin. ``env``:
    this process's environment, handed in by its entry point (the CLI layer,
    or the coordinator's forked child); changed in place as git's worker
    changes its own. ``paths_verified``: only for a child the coordinator
    forks (see :mod:`entry`, on the paths a helper checks)."""
    _sanitize_stdfds()
    threads = _threads_arg(argv)
    if isinstance(threads, int):
        return threads
    threads, argv = threads
    parsed = _helper_args(argv)
    if isinstance(parsed, int):
        return parsed
    prefix, wire, filters = parsed
    # Set by git during --recurse-submodules; it must not leak into anything
    # repository-aware we run.
    env.pop("GIT_INTERNAL_SUPER_PREFIX", None)
    bad = use_inflater_setting(env)
    if bad:
        return _die(bad)

    from .config import ConfigError
    from .odb import NotAGitRepository

    held = _Held()
    died_of = 0
    try:
        _run(prefix, wire, filters, threads, env, held, paths_verified)
    except (ProtocolError, NotAGitRepository, ConfigError, WireError) as e:
        if getattr(e, "error", None):  # git's error() line before its death (a bad `-c`)
            sys.stderr.write(f"error: {e.error}\n")
        return _die(str(e))
    except BrokenPipeError:
        return _die("checkout helper: the coordinator closed the pipe")
    except OSError as e:  # the pipes themselves (EBADF, EIO) or the repository
        where = f": '{os.fsdecode(e.filename)}'" if isinstance(e.filename, (str, bytes)) else ""
        return _die(f"checkout helper: {e.strerror or e}{where}")
    except KeyboardInterrupt:
        return 130
    except HelperTerminated as e:
        died_of = e.signum  # the item in progress was removed on the way out
    except Exception as e:  # never a traceback: one line, and a non-zero exit
        msg = " ".join(str(e).split())
        return _die(f"checkout helper: internal error: {type(e).__name__}: {msg}")
    finally:
        held.release(died_of)
    if died_of:
        # Like git's sigchain: clean up, then die of the same signal.
        signal.signal(died_of, signal.SIG_DFL)
        os.kill(os.getpid(), died_of)
        return 128 + died_of
    return 0
