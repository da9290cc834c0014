"""The coordinator's half of ``parallel-checkout.c``: how many helpers
(``get_parallel_checkout_configs``, ``checkout.workers=auto``), starting them,
handing them the queue (``run_parallel_checkout``; streamed while the rest is
still prepared where that cannot matter, :meth:`ParallelCheckout.streams`),
and ``handle_results``: stat data into the index, collisions rewritten in
order, failures reported.

A mixin of :class:`updates.Checkout`, which owns the work tree side
(``checkout_entry``: removals, leading directories, symlinks, filtered files).
"""

from __future__ import annotations

import os
import stat as stat_mod
import sys
from bisect import bisect_right
from functools import partial

from ..attributes import ConvAttrs
from ..autoworkers import auto_workers
from ..config import AUTO_WORKERS, is_auto, parallel_checkout_configs, threshold_setting
from ..entry import CheckoutState, write_pc_items
from ..index import Entry
from ..pktline import LARGE_PACKET_DATA_MAX
from ..record import json_bytes, replace
from ..wire import GIT_FILTERS_LAYOUT, REQUEST_LAYOUTS, PcItem, PcItemStatus, native_stat_layout
from .options import CheckoutError

__all__ = ["MAX_WORKERS", "ParallelCheckout"]

#: Items written sequentially between two releases of the pack pages they
#: mapped (:meth:`odb.ObjectDatabase.release_pages`).
RELEASE_EVERY_ITEMS = 512

PENDING = PcItemStatus.PC_ITEM_PENDING
WRITTEN = PcItemStatus.PC_ITEM_WRITTEN
COLLIDED = PcItemStatus.PC_ITEM_COLLIDED
FAILED = PcItemStatus.PC_ITEM_FAILED

#: Entries prepared between two looks at the helpers while items stream to
#: them: often enough to keep them fed, rarely enough to cost nothing.
STREAM_STEP = 64

#: More helpers than this buys nothing but file descriptors and memory.
MAX_WORKERS = 64

FIXED_PORTION_SIZE = REQUEST_LAYOUTS["git"].size


class _Queue:
    """Items for helpers, with the index entries they fill.

    An item (``struct parallel_checkout_item``, :class:`wire.PcItem`) is
    made when it is read, to be sent or written, from its entry and its
    attributes, and not kept: held for every entry at once, the items of a
    100,000-file checkout were 14 MiB of the coordinator's peak memory. The
    attributes are kept as runs (the position each begins at, and its
    :class:`convert.ConvAttrs`, one object per distinct outcome): most
    checkouts have one, and a list of them was 0.8 MiB more of that peak."""

    __slots__ = ("entries", "_starts", "_runs", "algo", "rooms")

    def __init__(self, algo: int, rooms: dict) -> None:
        self.entries: list[Entry] = []
        self._starts: list[int] = []
        self._runs: list[ConvAttrs] = []
        self.algo = algo
        self.rooms = rooms  # ParallelCheckout.item_room's: attributes -> (room, filter)

    def append(self, e: Entry, ca: ConvAttrs) -> None:
        if not self._runs or self._runs[-1] is not ca:
            self._starts.append(len(self.entries))
            self._runs.append(ca)
        self.entries.append(e)

    def __len__(self) -> int:
        return len(self.entries)

    def attrs(self, i: int) -> ConvAttrs:
        """Item ``i``'s attributes."""
        return self._runs[bisect_right(self._starts, i) - 1]

    def _attrs_run(self, start: int, stop: int) -> list[ConvAttrs]:
        """The attributes of items ``start`` to ``stop``, in order: a run at a time."""
        starts, runs = self._starts, self._runs
        k = bisect_right(starts, start) - 1
        out: list[ConvAttrs] = []
        while start < stop:
            end = min(starts[k + 1], stop) if k + 1 < len(starts) else stop
            out += [runs[k]] * (end - start)
            start, k = end, k + 1
        return out

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, _ = i.indices(len(self.entries))
            algo, rooms = self.algo, self.rooms
            # By position, as wire.decode_item builds it (0: attr_action).
            run = zip(range(start, stop), self.entries[start:stop], self._attrs_run(start, stop), strict=True)
            return [PcItem(j, e.oid, e.mode, e.name, ca.crlf_action, ca.ident, ca.working_tree_encoding, algo, 0,
                           rooms[ca][1]) for j, e, ca in run]
        if not -len(self.entries) <= i < len(self.entries):
            raise IndexError("queue index out of range")
        i %= len(self.entries)
        return self[i:i + 1][0]

    def name(self, i: int) -> bytes:
        """Item ``i``'s path, without making the item (the pool's :class:`workers.Chunker` reads them)."""
        return self.entries[i].name


class ParallelCheckout:
    """The helpers' side of a :class:`updates.Checkout` (see the module docstring)."""

    def streams(self) -> bool:
        """Whether the items may go to the helpers while the rest are still
        prepared: only when that cannot change what the checkout does.
        Our helpers are running with dynamic distribution (git's worker
        reads one batch); no filter driver is configured, so every regular
        file is the helpers' and every other entry is written here first,
        git's order; and the work tree is case-sensitive
        (:meth:`case_sensitive`), so which of two paths is written first
        cannot matter."""
        return self.pool is not None and not self.drivers and self.dynamic_distribution() and self.case_sensitive()

    def case_sensitive(self) -> bool:
        """Whether the work tree is case-sensitive as far as git knows
        (``core.ignoreCase``, ``core.precomposeUnicode`` unset): then no two
        paths of one checkout name one file. (``core.ignoreCase`` as the
        core settings read it, where attributes and ignore rules fold case
        by it; ``core.precomposeUnicode``, which they do not read, taken as
        set when it cannot be read.)"""
        if self.core.ignore_case:
            return False
        try:
            return not self.repo.config.get_boolean((b"core",), b"precomposeunicode", False)
        except (KeyError, ValueError):
            return False

    def _start_stream(self, queue: _Queue, expected: int):
        """The helpers' run over ``queue``'s items, which will be about ``expected``."""
        pool, self.pool = self.pool, None
        self.report.workers = min(len(pool), max(expected, 1))
        self.report.streamed = True
        layout = GIT_FILTERS_LAYOUT if self.helper_filters else REQUEST_LAYOUTS["git"]
        self._stream = pool.start(queue, expected, layout=layout, stat_layout=native_stat_layout(),
                                  on_result=self._on_result, error=self.error, dynamic=True, fill=queue.entries)
        return self._stream

    def _on_result(self, _first: int, n: int, status: int) -> None:
        """``n`` items answered with ``status``: the meter counts what was
        written or failed (a collision is counted when it is rewritten), one
        at a time as git's, which may show each percentage on the way."""
        if status != COLLIDED and self.progress:
            for _ in range(n):
                self.progress.add()

    def item_room(self, ca: ConvAttrs) -> tuple[int, bytes | None]:
        """``is_eligible_for_parallel_checkout`` for a regular file with these
        attributes, but for its name: (the longest name whose item fits one
        packet, -1 when no item may carry them: a filter), and the driver a
        helper runs itself (one marked ``filter.<name>.parallel``, helpers of
        ours started with ``--filters``), or None. Worked out once per
        attributes object: the paths that share one share it (conv_attrs)."""
        room = self._rooms.get(ca)
        if room is None:
            filt = ca.drv.name if self.helper_filters and ca.filter_parallel else None
            if ca.parallel_eligible or filt is not None:
                room = (LARGE_PACKET_DATA_MAX - FIXED_PORTION_SIZE - len(ca.working_tree_encoding or b"")
                        - len(filt or b""), filt)
            else:
                room = (-1, None)
            self._rooms[ca] = room
        return room

    def eligible(self, ca: ConvAttrs, name: bytes) -> bool:
        """Whether ``name``, with attributes ``ca``, is the helpers' (:meth:`item_room`)."""
        return len(name) <= self.item_room(ca)[0]

    def choose_workers(self, nr: int) -> tuple[int, int]:
        """``get_parallel_checkout_configs`` with ``-j`` on top; then git's rule
        ``min(workers, items) <= 1 or items < threshold`` means sequential."""
        workers, threshold = parallel_checkout_configs(
            self.repo.config, self.opts.test_workers, self.opts.online_cpus
        )
        w = self.opts.workers
        if isinstance(w, str):
            if not is_auto(w):
                raise CheckoutError(f"error: bad number of workers: '{w}' (a number or auto)", 129)
            workers = AUTO_WORKERS
        elif w is not None:
            workers = w if w >= 1 else self.opts.online_cpus
        if self.opts.threshold is not None:
            threshold = self.opts.threshold
        if workers == AUTO_WORKERS:
            return self.choose_auto(nr), threshold
        if workers > MAX_WORKERS:
            if not self._warned_clamp:
                self.warning(f"checkout.workers={workers} is more than {MAX_WORKERS}; using {MAX_WORKERS}")
                self._warned_clamp = True
            workers = MAX_WORKERS
        workers = min(workers, nr)
        if workers <= 1 or nr < threshold:
            workers = 1
        return workers, threshold

    def choose_auto(self, nr: int) -> int:
        """``checkout.workers=auto`` (:mod:`autoworkers`): processes for ``nr``
        items, from the filesystem of the directory written into, the
        usable CPUs and ``nr``; an explicit threshold (``--threshold``,
        ``checkout.thresholdForParallelism``, ``GIT_TEST_CHECKOUT_WORKERS``'s
        0) still applies. The threads go to the helpers through
        ``helper_threads`` unless the user set those. Each decision is kept
        in the report and traced (trace2 ``data``, ``checkout/auto_workers``)."""
        if self._auto is not None and self._auto.items == nr:
            return self._auto.processes
        from ..fsinfo import probe, system_cpus, usable_cpus

        explicit = self.opts.threshold
        if explicit is None:
            explicit = 0 if self.opts.test_workers else threshold_setting(self.repo.config)
        fs = self._fsinfo = self._fsinfo or probe(self.written_into())
        # All usable CPUs, busy ones too (see autoworkers: no load is subtracted).
        online, affinity, _load, quota = system_cpus(self.opts.online_cpus)
        d = auto_workers(fs.kind, fs.rotational, usable_cpus(online, affinity, None, quota), nr, None, explicit,
                         coordinator_idle=self.empty_start)
        d.filesystem = fs
        self._auto = self.report.auto_workers = d
        if d.threads > 1 and self.opts.helper_threads is None:
            try:
                self.repo.config.get((b"checkout",), b"helperthreads")
            except KeyError:  # not set by the user: ours to choose
                self.opts = replace(self.opts, helper_threads=d.threads)
        if self.trace is not None and self.trace.enabled:
            self.trace.data("checkout", "auto_workers", json_bytes(d).decode())
        return d.processes

    def written_into(self) -> str:
        """The directory files are written into, or its nearest existing
        parent (checkout-index's ``--prefix`` is made later): what the
        filesystem is asked about."""
        where = os.fsdecode(self.out_top)
        while not os.path.isdir(where) and os.path.dirname(where) != where:
            where = os.path.dirname(where)
        return where

    def start_helpers(self, expected_items: int) -> None:
        """Start the helpers early (see :class:`workers.HelperPool`) when the
        expected number of items already calls for them; helpers started
        ahead (:meth:`start_helpers_ahead`) are kept when they are as many
        as it calls for, else stopped."""
        workers, _ = self.choose_workers(expected_items)
        if self.pool is not None:
            if len(self.pool) == workers:
                return
            self.close_helpers()
        if workers > 1:
            from ..workers import HelperPool

            self.dynamic_distribution()  # a bad setting is fatal before the tree is touched
            argv, env, shown = self.helper_command()
            fork_entry = None
            if not self.opts.helper_cmd and self.opts.fork_helpers:
                from ..helper import main  # the helper program's own entry point

                # Its items are the queue's, whose paths this process has
                # verified (updates._execute), as its own writes are.
                fork_entry = partial(main, paths_verified=True)
                argv = argv[4:]  # only its arguments: [--prefix=...]
            self.pool = HelperPool(argv, workers, cwd=self.repo.worktree, env=env, trace=self.trace,
                                   trace_argv=shown, fork_entry=fork_entry)

    def start_helpers_ahead(self, most_items: int) -> None:
        """A switch's helpers, started before its merge for a checkout of at
        most ``most_items`` files (the index's entries): forked while this
        process is still small, they get ready while it merges, off the
        time to the first item (3% of a git.git switch from v2.51.0).
        :meth:`start_helpers` then keeps or stops them. Only forked helpers
        of ours (an exec'd one costs 0.1 s of CPU to start, too much to
        spend on a merge that may find little to write), a fixed number of
        workers (``auto`` chooses by the real count), and not while tracing
        (git's trace shows its workers start after the merge)."""
        if not self.opts.fork_helpers or self.opts.helper_cmd or (self.trace is not None and self.trace.enabled):
            return
        w = self.opts.workers
        if isinstance(w, str) or w is None and parallel_checkout_configs(
                self.repo.config, self.opts.test_workers, self.opts.online_cpus)[0] == AUTO_WORKERS:
            return
        self.start_helpers(most_items)

    def close_helpers(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.abort()
        if self.pool is not None:
            pool, self.pool = self.pool, None
            pool.close()

    def run_queue(self, q: _Queue, stream=None) -> None:
        """Write the queued items: here, or by the helpers (``stream``: a
        :class:`workers.PoolRun` they already have the first items of)."""
        nr = len(q)
        if stream is not None:
            self._stream = None
            if self.meanwhile is not None:
                # Every item is queued; the helpers have the last ones. The
                # coordinator would only wait for their results now.
                self.meanwhile()
            results = stream.finish()
            self.report.batches += stream.pool.batches
            self.report.parallel_items += nr
            self.handle_results(q, results)
            return
        workers, _ = self.choose_workers(nr)
        if self.pool is not None and workers <= 1:
            self.close_helpers()
        self.report.workers = workers
        if workers <= 1:
            from ..workers import Results
            from ..wrapper import unfix_mmap_threshold

            # Written here, item after item, as a helper writes them: each large
            # blob's buffers mapped afresh made a sequential switch of git.git 3% slower.
            unfix_mmap_threshold()
            results = Results(nr, q.entries)  # (filled here, below)
            # validate_element=None: every path was verified before
            # anything was touched (updates._execute), with this repository's
            # core.protectNTFS/protectHFS, which a second check here ignored.
            state = CheckoutState(self.repo.odb, base_dir=self.out_top, eol=self.eol,
                                  trace=self.trace.data if self.trace is not None and self.trace.enabled else None,
                                  error=self.error, validate_element=None, filters=self.filters,
                                  drivers=self.drivers, fstat_output=True)
            state.say = lambda m: self.err.write(f"error: {m}\n")  # printed, not a failure (as in helpers)
            status_of, entries, progress = results.status, q.entries, self.progress
            odb = self.repo.odb
            for i, (status, st) in enumerate(write_pc_items(q, state)):
                if i and not i % RELEASE_EVERY_ITEMS:
                    odb.release_pages()  # (as a helper does after each batch)
                status_of[i] = status
                if status == WRITTEN:
                    entries[i].fill_stat(st)  # here at once, not kept in results to be read back
                if status != COLLIDED and progress:
                    progress.add()
            self.report.sequential_items += nr
            self.handle_results(q, results)
            return
        else:
            if self.pool is None:
                self.start_helpers(nr)
            pool, self.pool = self.pool, None
            self.report.workers = min(len(pool), nr)
            layout = GIT_FILTERS_LAYOUT if self.helper_filters else REQUEST_LAYOUTS["git"]
            results = pool.run(q, layout=layout, stat_layout=native_stat_layout(), on_result=self._on_result,
                               error=self.error, dynamic=self.dynamic_distribution(), fill=q.entries)
            self.report.batches += pool.batches
            self.report.parallel_items += nr
        self.handle_results(q, results)

    def helper_command(self) -> tuple[list[str], dict[str, str], list[str]]:
        """The helper's argv, environment, and the argv trace2 shows for it."""
        env = dict(self.repo.environ)
        env["GIT_DIR"] = self.repo.dirs.gitdir
        env.pop("GIT_WORK_TREE", None)
        env.pop("GIT_INTERNAL_SUPER_PREFIX", None)
        if self.trace is not None and self.trace.enabled:  # (git exports its sid only when tracing)
            env["GIT_TRACE2_PARENT_SID"] = self.trace.sid
        if self.opts.helper_cmd:
            argv = list(self.opts.helper_cmd)
            shown = argv
        else:
            argv = [sys.executable, "-m", "git_checkout_helper", "checkout--helper"]
            shown = ["git", "checkout--helper"]
        if self.out_top != self.top:
            prefix = "--prefix=" + os.fsdecode(self.out_top)
            argv, shown = [*argv, prefix], [*shown, prefix]
        if self.helper_filters:  # our helper only (see __init__)
            extra = ["--filters"]
            for key, value in (("ref", self.filters.ref), ("treeish", self.filters.treeish)):
                if value:
                    extra.append(f"--filter-{key}={os.fsdecode(value)}")
            argv, shown = [*argv, *extra], [*shown, *extra]
        threads = self.helper_threads()
        if threads > 1:  # our helper only: git's worker has no threads
            argv, shown = [*argv, f"--threads={threads}"], [*shown, f"--threads={threads}"]
            self.report.helper_threads = threads
        return argv, env, shown

    def helper_threads(self) -> int:
        """I/O threads per helper: ``CheckoutOptions.helper_threads``, else
        ``checkout.helperThreads``, else 1; always 1 for ``--helper-cmd``
        helpers (git's worker knows no ``--threads``)."""
        if self.opts.helper_cmd:
            return 1
        n = self.opts.helper_threads
        if n is None:
            from ..config import helper_threads_setting

            n = helper_threads_setting(self.repo.config)
        return max(1, n or 1)

    def dynamic_distribution(self) -> bool:
        """``checkout.distribution``: dynamic for our own helpers unless set
        to ``static``; ``--helper-cmd`` helpers get git's static split (any
        of them may be git's ``checkout--worker``, which reads one batch)."""
        if self.opts.helper_cmd:
            return False
        if self._dynamic is None:
            from ..config import distribution_setting

            self._dynamic = distribution_setting(self.repo.config) == "dynamic"
        return self._dynamic

    def handle_results(self, q: _Queue, results) -> None:
        """``handle_results``: stat into the index; collisions rewritten in order.
        ``results``: a :class:`workers.Results`, whose WRITTEN entries may
        hold their stat data already (:attr:`workers.Results.filled`)."""
        filled = results.filled
        collided = []
        real_dirs: set[bytes] = set()
        smudge_failed = False
        status_of = results.status
        entries = q.entries
        if status_of.count(WRITTEN) == len(entries):  # every item written: only stat data to fill
            if not filled:
                for e, sd in zip(entries, results.all_stat_data(), strict=True):
                    e.fill_stat_data(sd)
            self.report.written += len(entries)
            entries = ()
        for i, e in enumerate(entries):
            status = status_of[i]
            if status == PENDING:
                self.error(f"'{e.name.decode('utf-8', 'replace')}' was not written (its checkout helper failed)")
                self.report.failed.append(e.name.decode("utf-8", "surrogateescape"))
                # prepare_path cleared this path, so a file there now is the
                # dead helper's, maybe half written: remove it, or a re-run
                # would take it for a local change.
                st = _lstat_or_none(self.out_top + e.name) if self._dirs_only(e.name, real_dirs) else None
                if st is not None and stat_mod.S_ISREG(st.st_mode):
                    try:
                        os.unlink(self.out_top + e.name)
                    except OSError:
                        pass
                continue
            if status == WRITTEN:
                if not filled:
                    e.fill_stat_data(results.stat_data(i))
                self.report.written += 1
            elif status == COLLIDED:
                collided.append(i)
            else:
                self.report.failed.append(e.name.decode("utf-8", "surrogateescape"))
                if self.item_room(q.attrs(i))[1] is not None and q.attrs(i).drv.required:
                    # The helper said "<path>: smudge filter <driver> failed";
                    # git dies there (convert.c), hence its exit code.
                    smudge_failed = True
                    self.errors.append(f"{e.name.decode('utf-8', 'replace')}: smudge filter failed")
                elif not any(e.name.decode("utf-8", "replace") in m for m in self.errors):
                    self.error(f"unable to write file '{e.name.decode('utf-8', 'replace')}'")
        # The helpers changed the tree since the directories were checked:
        # every leading component of a collided item is looked at again.
        self._made_dirs.clear()
        self._fresh_dirs.clear()
        self._dirs_ahead.clear()
        for i in collided:
            e = q.entries[i]
            self.report.collided.append(e.name.decode("utf-8", "surrogateescape"))
            there = _lstat_or_none(self.out_top + e.name)
            if there is not None:
                self.collisions.mark(e, there, q.entries)
            try:
                self.prepare_path(e.name)
            except OSError as ex:
                self.error(f"unable to prepare '{e.name.decode('utf-8', 'replace')}': {ex.strerror}")
                continue
            self._made_dirs.clear()
            st = self.write_special(e, q.attrs(i))
            if st is not None:
                e.fill_stat(st)
                self.report.written += 1
            if self.progress:
                self.progress.add()
        if smudge_failed:
            raise CheckoutError("", 128)


def _lstat_or_none(path: bytes) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
