"""``preload_index`` (preload-index.c): the index's files looked at in
parallel before ``refresh_index``.

Before a switch's two-way merge git refreshes the index, and first preloads
it: threads (one per ``THREAD_COST`` entries, at most ``MAX_PARALLEL``, none
below two) ``lstat`` the entries and mark up to date each whose stat data
match and are not racy; ``refresh_index`` then looks at the others only.
``core.preloadIndex=false`` turns it off.

Python threads would take turns on the interpreter lock for the per-entry
work, so the coordinator forks the workers instead (one per
``PRELOAD_COST`` entries, at most one per online CPU and at most
``MAX_PARALLEL``; none on one CPU) as soon as it has read the index: they
``lstat`` while it reads the target tree, checks its paths and reads
attributes, and each sends back one byte per entry of its share. The only
verdict they give is the one git's preload gives (up to date: stat data
matching, not racy, :func:`refresh.is_fresh`, asked through
:func:`refresh.fresh_test`); every other entry, and every entry of a worker
that fails, is left to :func:`refresh.refresh_entries`, which decides it as
it did without a preload. A worker only reads: it never writes to the work
tree, the index or any descriptor but its own pipe, and ends with
``os._exit`` so that nothing of the coordinator's runs in it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from itertools import compress, pairwise

from .coresettings import CoreSettings
from .index import Entry
from .iopool import IoPool
from .refresh import fresh_test, refreshable
from .run_async import finish_async, start_async, stop_async

__all__ = ["MAX_PARALLEL", "PRELOAD_COST", "THREAD_COST", "Preload", "workers_for"]

#: Entries per worker. git's threads take 500 each (``THREAD_COST``); a
#: forked worker costs more (a fork, and the copies of the pages it touches):
#: on git.git (4,615 entries, two workers on two CPUs) a preload measured
#: even with none, wall time for wall time; at 100,000 entries it took 7 to
#: 9% off a switch.
PRELOAD_COST = 2000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: preload-index.c: the most workers.
MAX_PARALLEL = 20


#: preload-index.c: entries per thread; fewer than two threads' worth: no preload.
THREAD_COST = 500


def workers_for(nr: int, online_cpus: int, io: IoPool | None = None) -> int:
    """How many workers preload ``nr`` entries (0: refresh_entries alone).
    With an I/O pool (a latency-bound work tree, where an lstat is a round
    trip and a fork is cheap beside it) at least one, from git's own
    threshold on: its workers keep their lstats in flight together."""
    n = min(nr // PRELOAD_COST, MAX_PARALLEL, online_cpus) if online_cpus > 1 else 0
    if io is not None and nr >= 2 * THREAD_COST:
        return max(1, n)
    return n


class Preload:
    """Workers preloading ``entries`` (index order), started at once;
    :meth:`finish` marks the entries they found up to date, :meth:`close`
    (idempotent) stops those still running."""

    def __init__(self, entries: Sequence[Entry], top: bytes, racy_timestamp_ns: int, core: CoreSettings,
                 workers: int, here: bool = False, io: IoPool | None = None) -> None:
        """``here``: the caller has nothing to do until the workers are done
        (a :mod:`treeahead` child reads the tree): it takes the last share
        itself, at once, and forks one worker fewer. At 100,000 files that
        is three processes on two CPUs rather than four, one fork and one
        transfer less, while the tree child runs.

        ``io``: the work tree is latency-bound (:mod:`iopool`); each share
        then has its lstats in flight together, the pool's requests split
        between the shares (git's preload: a thread per 500 entries)."""
        self.entries = entries
        self._running: list[tuple[int, int, int, int]] = []  # (pid, read end, start, end)
        self._marked = 0
        nr = len(entries)
        bounds = [nr * k // workers for k in range(workers + 1)]

        pool = IoPool(max(2, io.threads // workers)) if io is not None else None
        fresh = fresh_test(racy_timestamp_ns, core)

        def share(start: int, end: int) -> bytes:
            out = bytearray(end - start)
            # Names relative to the top's descriptor: the kernel walks one
            # path from the top, not the top's own components again for
            # each entry (0.5 us of an lstat's 3 at 100,000 files).
            fd = os.open(top, _DIR_FLAGS)
            try:
                ahead = None
                if pool is not None:  # all the share's lstats in flight first
                    names = [e.name for e in entries[start:end] if refreshable(e)]
                    ahead = iter(pool.map(partial(_lstat_at, fd), names))
                for i in range(start, end):
                    e = entries[i]
                    if not refreshable(e):
                        continue
                    if ahead is not None:
                        st = next(ahead)
                        if st is None:
                            continue
                    else:
                        try:
                            st = os.lstat(e.name, dir_fd=fd)
                        except OSError:
                            continue
                    if fresh(e, st):
                        out[i - start] = 1
            finally:
                os.close(fd)
            return out

        shares = list(pairwise(bounds))
        mine = shares.pop() if here else None
        try:
            for start, end in shares:
                pid, r = start_async(lambda start=start, end=end: share(start, end))
                self._running.append((pid, r, start, end))
            if mine is not None:
                self._mark(mine[0], share(*mine))
        except BaseException:
            self.close()
            raise

    def _mark(self, start: int, data: bytes) -> None:
        """ce_mark_uptodate for the entries of the share at ``start`` that ``data`` says are."""
        for e in compress(self.entries[start:start + len(data)], data):
            e.uptodate = True
            self._marked += 1

    def finish(self) -> int:
        """Wait for the workers; mark up to date what they found so. Returns
        how many entries were marked. The list of the entries is let go then
        (0.8 MiB of a 100,000-file switch's peak, held to its end)."""
        while self._running:  # (a worker leaves the list once reaped: close() sees to the rest)
            pid, r, start, end = self._running.pop(0)
            data = finish_async(pid, r)
            if data is None or len(data) != end - start:
                continue  # refresh_entries decides this share alone
            self._mark(start, data)
        self.entries = ()
        return self._marked

    def close(self) -> None:
        """Stop and reap the workers not finished (an error before the merge)."""
        running, self._running = self._running, []
        for pid, r, _start, _end in running:
            stop_async(pid, r)


def _lstat_at(fd: int, name: bytes) -> os.stat_result | None:
    """``lstat`` of ``name`` below directory ``fd``; None for any error (the
    refresh then decides the entry)."""
    try:
        return os.lstat(name, dir_fd=fd)
    except OSError:
        return None
