"""The target tree read by a forked child while the coordinator reads the index.

Before a switch can merge, it needs the index (``read_index``, then the
preload's ``lstat``\\ s) and the target's flattened tree (``read_tree``, then
``verify_path`` of every path in it); neither needs the other, and in one
process they run one after the other: at 100,000 files 0.18 s of index,
0.28 s of tree and 0.15 s of path checks, while the second CPU idles. So a
big switch (:data:`MIN_INDEX_SIZE`) forks a child that reads the tree and
checks its paths, and sends both back (``marshal``, one write) when the
coordinator asks for them, having read the index meanwhile.

The child only reads: it fetches nothing, writes to no file and no
descriptor but its pipe (its stdout and stderr go to ``/dev/null``), and
ends with ``os._exit``. Whatever goes wrong in it (a tree a partial clone
lacks, a corrupt object, a fault) makes :meth:`TreeAhead.result` None, and
the coordinator reads the tree itself as it would have, failing (or
fetching) there with its usual messages, said once.
"""

from __future__ import annotations

import marshal
import os
import signal
from collections.abc import Callable

from .repository import Repository, TreeFiles
from .workers import STOP_SIGNALS, fork_child
from .wrapper import write_in_full

__all__ = ["MIN_INDEX_SIZE", "TreeAhead", "tree_ahead"]

#: The index file size (bytes) from which the tree is read in a child:
#: about 12,000 entries. Below it the two reads take a few milliseconds
#: each, about what the fork and the transfer cost (git.git: 4,800 entries,
#: 0.4 MB of index, 6 ms of index against 17 ms of tree).
MIN_INDEX_SIZE = 1 << 20


class TreeAhead:
    """``repo.tree_of(commit_hex)`` and ``check(tree)`` in a child, started
    at once; :meth:`result` waits for them, :meth:`close` (idempotent) stops
    a child not waited for (an error before the merge)."""

    def __init__(self, repo: Repository, commit_hex: bytes, check: Callable[[TreeFiles], object]) -> None:
        self.repo = repo
        r, w = os.pipe()
        pid = fork_child(dict.fromkeys(STOP_SIGNALS, signal.SIG_DFL))
        if pid == 0:  # the child
            code = 1
            try:
                os.close(r)
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)  # silent: what it would say, the coordinator says when it reads again
                os.dup2(null, 2)
                tree = repo.tree_of(commit_hex, fetch=False)
                data = marshal.dumps((tree.files, tree.trees, tree.tree_id, check(tree)))
                write_in_full(w, len(data).to_bytes(8, "little"))
                write_in_full(w, data)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        self._child: tuple[int, int] | None = (pid, r)

    def result(self) -> tuple[TreeFiles, object] | None:
        """(the tree, what ``check`` said of it), or None when the child failed."""
        if self._child is None:
            return None
        pid, r = self._child
        self._child = None
        try:
            data = _read_sized(r)
        finally:
            os.close(r)
            _, status = os.waitpid(pid, 0)
        if status != 0 or data is None:
            return None
        try:
            files, trees, tree_id, verdict = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            return None
        tree = TreeFiles(files, trees, tree_id)
        self.repo.remember_tree(tree)
        return tree, verdict

    def close(self) -> None:
        if self._child is None:
            return
        pid, r = self._child
        self._child = None
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _read_sized(fd: int) -> bytearray | None:
    """What the child wrote: its length (8 bytes), then that many bytes read
    into one buffer (no list of pieces beside their join: 8 MB at 100,000
    files); None when the child stopped short."""
    head = os.read(fd, 8)
    if len(head) != 8:
        return None
    buf = bytearray(int.from_bytes(head, "little"))
    view, got = memoryview(buf), 0
    while got < len(buf):
        n = os.readv(fd, [view[got:]])
        if n == 0:
            return None
        got += n
    return buf


def tree_ahead(repo: Repository, commit_hex: bytes | None, check: Callable[[TreeFiles], object],
               online_cpus: int) -> TreeAhead | None:
    """A :class:`TreeAhead` for a switch to ``commit_hex`` when its index is
    big enough to be worth it and there is a second CPU; else None."""
    if commit_hex is None or online_cpus < 2:
        return None
    try:
        if os.stat(repo.dirs.index_path).st_size < MIN_INDEX_SIZE:
            return None
    except OSError:
        return None
    return TreeAhead(repo, commit_hex, check)
