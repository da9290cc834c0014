"""The coordinator's own ``lstat`` and ``unlink`` requests in flight
together, on a latency-bound filesystem (what git lacks).

git's coordinator makes its requests to the work tree one at a time:
``verify_absent``'s ``lstat`` of each path a switch adds, ``unlink_entry`` of
each file that leaves, ``checkout_entry``'s look at (and removal of) what
stands where each entry goes. Only the preload (threads) and the writing
(workers) run side by side. On NFS, SMB or FUSE each of those requests is a
round trip: at 1 ms a request, the far switch of the 5,000-file sample spent
11.8 s in 4,018 unlinks and 5.2 s in 3,547 lstats of a 20 s switch with 8
helpers (strace of the coordinator), the helpers idle behind it.

Threads carry such requests well: each system call releases the interpreter
lock while it waits. On a local disk or tmpfs a request is microseconds of
CPU and threads would only add their own, so there the pool is off and
every caller does what it did alone.

Rules that keep the result the serial one:

* Threads only ask (``lstat``) or remove (``unlink``); every decision on an
  answer, every message and every other change to the work tree is made by
  the caller, in the order a serial run makes them.
* The caller sends together only requests whose order cannot matter:
  different paths, none of them a leading directory of another.
* A pool's threads live for one batch (:meth:`IoPool.map`,
  :meth:`IoPool.pipeline`): none is left running when the coordinator forks.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import partial

__all__ = ["UNSEEN", "IoPool", "io_pool", "is_dir", "leading_dirs", "look_ahead_dirs", "look_dir",
           "remove_emptied_dirs", "rmdir_ok"]


class IoPool:
    """``threads`` requests in flight at once."""

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def _executor(self):
        # (imported here: a checkout on a local disk never needs it, and
        # concurrent.futures costs start-up)
        from concurrent.futures import ThreadPoolExecutor

        return ThreadPoolExecutor(self.threads, thread_name_prefix="checkout-io")

    def map(self, fn: Callable[[bytes], object], paths: Iterable[bytes]) -> list:
        """``[fn(p) for p in paths]``, in flight together; an exception is
        raised where the serial loop would raise it (the first in order).

        The requests are sent round-robin over the paths' directories, not
        in the paths' order: a filesystem may serve one directory's
        requests one at a time (Linux holds a directory's lock through a
        create or an unlink in it, and FUSE without parallel directory
        operations through a lookup too), and a checkout's paths come
        sorted, a directory's together."""
        paths = list(paths)
        if len(paths) < 2:
            return [fn(p) for p in paths]
        with self._executor() as ex:
            futures: list = [None] * len(paths)
            for i in _spread(paths):
                futures[i] = ex.submit(fn, paths[i])
            return [f.result() for f in futures]

    def pipeline(self, items: Iterable, ahead: Callable[[object], Callable[[], object] | None]
                 ) -> Iterator[tuple[object, Callable[[], object]]]:
        """``(item, answer)`` in ``items``' order, each item's request sent
        up to ``2 * threads`` items ahead of its turn; ``answer()`` gives
        its result or raises its exception, at the item's turn.

        ``ahead(item)`` runs here, in order, as the item enters the window,
        and returns the request (a function for a thread), or None when
        there is nothing to ask (the answer is None); an OSError it raises
        is the item's answer. Closing the iterator early waits for the
        requests already sent."""
        depth = 2 * self.threads
        window: deque = deque()
        with self._executor() as ex:
            for item in items:
                try:
                    fn = ahead(item)
                    answer = ex.submit(fn).result if fn is not None else _none
                except OSError as e:
                    answer = partial(_raise, e)
                window.append((item, answer))
                if len(window) > depth:
                    yield window.popleft()
            while window:
                yield window.popleft()


def _spread(paths: list[bytes]) -> list[int]:
    """The indexes of ``paths`` in round-robin order over their directories:
    each directory's first path, in order, then each one's second..."""
    seen: dict[bytes, int] = {}
    ranks = []
    for p in paths:
        d = p[:p.rfind(b"/") + 1]
        r = seen.get(d, 0)
        seen[d] = r + 1
        ranks.append(r)
    return sorted(range(len(paths)), key=ranks.__getitem__)


#: No answer asked beforehand: the lookup is made at its turn.
UNSEEN = object()


def leading_dirs(path: bytes) -> Iterator[bytes]:
    """The leading directories of ``path``, from the top: ``a``, ``a/b`` for ``a/b/c``."""
    i = path.find(b"/")
    while i != -1:
        yield path[:i]
        i = path.find(b"/", i + 1)


def look_dir(full: bytes) -> os.stat_result | None | object:
    """``lstat`` of a leading directory asked beforehand: None when nothing
    is there, :data:`UNSEEN` for any other error (asked again at its turn)."""
    try:
        return os.lstat(full)
    except FileNotFoundError:
        return None
    except OSError:
        return UNSEEN


def is_dir(st) -> bool:
    """Whether an answer of :func:`look_dir` is a real directory (not a symlink to one)."""
    return st is not None and stat.S_ISDIR(st.st_mode)


def rmdir_ok(full: bytes) -> bool:
    """``rmdir``; whether the directory went (a removal's emptied one may not be empty)."""
    try:
        os.rmdir(full)
        return True
    except OSError:
        return False


def look_ahead_dirs(names: list[bytes], proven: set[bytes], fresh: set[bytes], top: bytes, io: IoPool,
                    got: dict[bytes, object]) -> list[bytes]:
    """The ``lstat`` of each leading directory of ``names`` not in
    ``proven`` (directories the checkout made, ``fresh``, or found real),
    made together into ``got``, for a walk of each name from the top to
    take at its turn instead of its own: ``create_directories``, when the
    checkout has written other entries in the meantime, or the removals'
    ``check_leading_path``, before anything is removed.

    An answer is kept only where it is the one the lookup will get at its
    turn. Nothing the checkout does before then touches a kept one: the
    files that leave are gone already, a directory is never changed, and
    what it writes are the entries' own paths, none of them a leading
    directory. What it does change is a leading component that is no
    directory (a file, a symlink): it is replaced by a new, empty
    directory, so the paths below it are absent then, whatever an lstat
    through a symlink finds now; and a missing one is made, empty. (The
    removals' walk stops at such a component and asks nothing below it.)
    So the directories are asked one depth at a time, and only below real
    directories, never through a symlink; below anything else they are
    absent without a request. An error other than ENOENT is not kept
    (:data:`UNSEEN`). Returns the directories answered by this call."""
    answered: list[bytes] = []
    levels: dict[int, dict[bytes, None]] = {}
    for name in names:
        for depth, part in enumerate(leading_dirs(name)):
            if part not in proven:
                levels.setdefault(depth, {})[part] = None
    for depth in sorted(levels):
        ask = []
        for part in levels[depth]:
            slash = part.rfind(b"/")
            parent = part[:slash] if slash != -1 else None
            if parent is None or (parent in proven and parent not in fresh):
                ask.append(part)  # below the top, or a directory already proven
            elif parent in fresh or parent in got:
                if parent not in fresh and is_dir(got[parent]):
                    ask.append(part)
                else:
                    got[part] = None  # below what will be (or is) a new, empty directory
                    answered.append(part)
        for part, st in zip(ask, io.map(look_dir, [top + p for p in ask]), strict=True):
            if st is not UNSEEN:
                got[part] = st
                answered.append(part)
    return answered


def remove_emptied_dirs(dirs: set[bytes], top: bytes, io: IoPool) -> None:
    """``unlink_entry``'s ``schedule_dir_for_removal``: ``dirs`` (below
    ``top``) and each of their parents that is left empty removed, each
    depth's together, deepest first. A directory is tried once all of its
    own that were tried are, and its parent when it went: the directories
    left are the ones a walk up from each, one at a time, leaves."""
    by_depth: dict[int, set[bytes]] = {}
    for d in dirs:
        by_depth.setdefault(d.count(b"/"), set()).add(d)
    for depth in range(max(by_depth, default=-1), -1, -1):
        tried = sorted(by_depth.get(depth, ()))
        for d, gone in zip(tried, io.map(rmdir_ok, [top + d for d in tried]), strict=True):
            if gone and depth:
                by_depth.setdefault(depth - 1, set()).add(d[:d.rfind(b"/")])


def _none() -> None:
    return None


def _raise(e: BaseException):
    raise e


def io_pool(setting: int | None, fs_kind: Callable[[], str], cpus: int) -> IoPool | None:
    """The pool for a checkout: ``setting`` is ``checkout.coordinatorThreads`` (None:
    unset, then :func:`autoworkers.requests_in_flight` for the filesystem
    ``fs_kind()`` names, asked only then); 0 or 1: none."""
    if setting is None:
        from .autoworkers import requests_in_flight

        setting = requests_in_flight(fs_kind(), cpus)
    return IoPool(setting) if setting > 1 else None
