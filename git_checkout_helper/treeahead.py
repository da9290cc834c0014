"""The target tree read by a forked child while the coordinator reads the index.

Before a switch can merge, it needs the index (``read_index``, then the
preload's ``lstat``\\ s) and the target's flattened tree (``read_tree``, then
``verify_path`` of every path in it); neither needs the other, and in one
process they run one after the other: at 100,000 files 0.18 s of index,
0.28 s of tree and 0.15 s of path checks, while the second CPU idles. So a
big switch (:data:`MIN_INDEX_SIZE`) forks a child that reads the tree and
checks its paths, and sends both back (``marshal``, one write) when the
coordinator asks for them, having read the index meanwhile.

The tree's files travel as strings (:func:`_pack_files`), not as a
dictionary, and are rebuilt path by path (:func:`_unpack_files`) sharing
the index's objects: a path the index holds is its entry's own name, and a
100644 id the entry holds alike is the entry's own id. A switch keeps the
index and the target tree side by side until its merge is done; with
paths and ids of its own, the target of a switch between two nearby
releases of 100,000 files (two thirds of its ids unchanged) raised the
coordinator's peak by 10 MiB.

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
from itertools import islice

from .index import Entry
from .repository import Repository
from .run_async import finish_async, start_async, stop_async
from .tree import TreeFiles

__all__ = ["MIN_INDEX_SIZE", "TreeAhead", "tree_ahead"]

#: The index file size (bytes) from which the tree is read in a child:
#: about 12,000 entries. Below it the two reads take a few milliseconds
#: each, about what the fork and the transfer cost (git.git: 4,800 entries,
#: 0.4 MB of index, 6 ms of index against 17 ms of tree).
MIN_INDEX_SIZE = 1 << 20

#: Paths to a string in the transfer (:func:`_pack_files`): a 100,000-file
#: tree's paths split all at once were 7 MiB of objects at a time, most of
#: them dropped for the index's, and the coordinator's peak 4 MiB higher.
PATHS_PER_STRING = 2048


class TreeAhead:
    """``repo.tree_of(commit_hex)`` and ``check(tree)`` in a child
    (:func:`run_async.start_async`), started at once; :meth:`result`
    waits for them, :meth:`close` (idempotent) stops a child not waited for
    (an error before the merge)."""

    def __init__(self, repo: Repository, commit_hex: bytes, check: Callable[[TreeFiles], object]) -> None:
        self.repo = repo

        def compute() -> bytes:
            tree = repo.tree_of(commit_hex, fetch=False)
            return marshal.dumps((*_pack_files(tree.files), tree.trees, tree.tree_id, tree.attributes, check(tree)))

        self._child: tuple[int, int] | None = start_async(compute)

    def result(self, index: dict[bytes, Entry] | None = None) -> tuple[TreeFiles, object] | None:
        """(the tree, what ``check`` said of it), or None when the child
        failed. ``index``: the index's entries, whose names and ids the
        tree's files share where they are alike."""
        if self._child is None:
            return None
        child, self._child = self._child, None
        data = finish_async(*child)
        if data is None:
            return None
        try:
            paths, values, sizes, trees, tree_id, attributes, verdict = marshal.loads(data)
            del data
            files = _unpack_files(paths, values, sizes, index or {})
        except (EOFError, ValueError, TypeError):
            return None
        tree = TreeFiles(files, trees, tree_id, attributes)
        self.repo.remember_tree(tree)
        return tree, verdict

    def close(self) -> None:
        if self._child is not None:
            child, self._child = self._child, None
            stop_async(*child)


def _pack_files(files: dict[bytes, bytes]) -> tuple[list[bytes], bytes, bytes]:
    """A flattened tree's files as strings: its paths joined by NULs (no
    path holds one), :data:`PATHS_PER_STRING` to a string, so that they are
    split a few at a time; its values (:func:`tree.tree_value`) joined; and
    each value's length in a byte (an id's, one more with a mode byte)."""
    it = iter(files)
    paths = []
    while chunk := list(islice(it, PATHS_PER_STRING)):
        paths.append(b"\0".join(chunk))
    return paths, b"".join(files.values()), bytes(map(len, files.values()))


def _unpack_files(paths: list[bytes], values: bytes, sizes: bytes, index: dict[bytes, Entry]) -> dict[bytes, bytes]:
    """:func:`_pack_files`'s files again, each path and 100644 id that
    ``index`` holds alike taken from its entry (the module docstring): a
    value that is the entry's id and nothing more (no mode byte)."""
    files: dict[bytes, bytes] = {}
    get, starts, size = index.get, values.startswith, iter(sizes)
    off = 0
    for chunk in paths:
        for path, n in zip(chunk.split(b"\0"), size, strict=False):  # (the sizes run on across strings)
            e = get(path)
            if e is not None:
                if n == len(e.oid) and starts(e.oid, off):
                    files[e.name] = e.oid
                    off += n
                    continue
                path = e.name
            files[path] = values[off:off + n]
            off += n
    if off != len(values) or len(files) != len(sizes):
        raise ValueError("the tree's paths and values do not pair up")
    return files


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
