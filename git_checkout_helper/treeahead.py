"""The target tree read by a forked child while the coordinator reads the index.

Before a switch can merge, it needs the index (``read_index``, then the
preload's ``lstat``\\ s) and the target's flattened tree (``read_tree``, then
``verify_path`` of every path in it); neither needs the other, and in one
process they run one after the other: at 100,000 files 0.18 s of index,
0.28 s of tree and 0.15 s of path checks, while the second CPU idles. So a
big switch (:data:`MIN_INDEX_SIZE`) forks a child that reads the tree and
checks its paths, and sends both back (``marshal``, one write) when the
coordinator asks for them, having read the index meanwhile.

The child only reads (:func:`run_async.start_async`) and fetches
nothing. Whatever goes wrong in it (a tree a partial clone lacks, a corrupt
object, a fault) makes :meth:`TreeAhead.result` None, and the coordinator
reads the tree itself as it would have, failing (or fetching) there with
its usual messages, said once.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable

from .repository import Repository
from .run_async import finish_async, start_async, stop_async
from .tree import TreeFiles

__all__ = ["MIN_INDEX_SIZE", "TreeAhead", "tree_ahead"]

#: The index file size (bytes) from which the tree is read in a child:
#: about 12,000 entries. Below it the two reads take a few milliseconds
#: each, about what the fork and the transfer cost (git.git: 4,800 entries,
#: 0.4 MB of index, 6 ms of index against 17 ms of tree).
MIN_INDEX_SIZE = 1 << 20


class TreeAhead:
    """``repo.tree_of(commit_hex)`` and ``check(tree)`` in a child
    (:func:`run_async.start_async`), started at once; :meth:`result`
    waits for them, :meth:`close` (idempotent) stops a child not waited for
    (an error before the merge)."""

    def __init__(self, repo: Repository, commit_hex: bytes, check: Callable[[TreeFiles], object]) -> None:
        self.repo = repo

        def compute() -> bytes:
            tree = repo.tree_of(commit_hex, fetch=False)
            return marshal.dumps((tree.files, tree.trees, tree.tree_id, tree.attributes, check(tree)))

        self._child: tuple[int, int] | None = start_async(compute)

    def result(self) -> tuple[TreeFiles, object] | None:
        """(the tree, what ``check`` said of it), or None when the child failed."""
        if self._child is None:
            return None
        child, self._child = self._child, None
        data = finish_async(*child)
        if data is None:
            return None
        try:
            files, trees, tree_id, attributes, verdict = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            return None
        tree = TreeFiles(files, trees, tree_id, attributes)
        self.repo.remember_tree(tree)
        return tree, verdict

    def close(self) -> None:
        if self._child is not None:
            child, self._child = self._child, None
            stop_async(*child)


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
