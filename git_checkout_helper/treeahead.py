"""The target tree read by a forked child while the coordinator reads the index.

Before a switch can merge, it needs the index (``read_index``, then the
preload's ``lstat``\\ s) and the target's flattened tree (``read_tree``, then
``verify_path`` of every path in it); neither needs the other, and in one
process they run one after the other: at 100,000 files 0.18 s of index,
0.28 s of tree and 0.15 s of path checks, while the second CPU idles. So a
big switch (:data:`MIN_INDEX_SIZE`) forks a child that reads the tree and
checks its paths, and sends both back (``marshal``) when the coordinator
asks for them, having read the index meanwhile.

The tree's files travel as strings (:func:`_pack_files`), not as a
dictionary, and are rebuilt path by path (:func:`_unpack_files`) sharing
the index's objects: a path the index holds is its entry's own name, and a
100644 id the entry holds alike is the entry's own id. A switch keeps the
index and the target tree side by side until its merge is done; with
paths and ids of its own, the target of a switch between two nearby
releases of 100,000 files (two thirds of its ids unchanged) raised the
coordinator's peak by 10 MiB. They come in parts of
:data:`FILES_PER_PART` (:func:`run_async.read_part`), each made into
objects before the next is read: the whole transfer in one buffer, and
its objects made beside it, were the coordinator's peak at 100,000
files, 4 MiB above the merge's. The subtrees stay marshalled until the
cache tree asks for them (:attr:`tree.TreeFiles.trees`). As each path is
looked up in the index, whether its value is the entry's is noted too:
the paths where the two differ come back with the tree, and a switch's
merge from that index takes them instead of comparing every path again
(30-50 ms of a 100,000-file near switch, before any file is written).

The child only reads (:func:`run_async.start_async`) and fetches
nothing. Whatever goes wrong in it (a tree a partial clone lacks, a corrupt
object, a fault) makes :meth:`TreeAhead.result` None, and the coordinator
reads the tree itself as it would have, failing (or fetching) there with
its usual messages, said once.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable, Iterable
from itertools import islice

from .index import Entry
from .repository import Repository
from .run_async import end_async, read_part, start_async, stop_async
from .tree import MODE_TAGS, REGULAR_FILE, TreeFiles

__all__ = ["MIN_INDEX_SIZE", "TreeAhead", "tree_ahead"]

#: The index file size (bytes) from which the tree is read in a child:
#: about 12,000 entries. Below it the two reads take a few milliseconds
#: each, about what the fork and the transfer cost (git.git: 4,800 entries,
#: 0.4 MB of index, 6 ms of index against 17 ms of tree).
MIN_INDEX_SIZE = 1 << 20

#: A flattened tree's files to a part of the transfer (:func:`_pack_files`),
#: about 100 KB: each part's paths and ids made and looked up before the
#: next is read.
FILES_PER_PART = 2048

#: The byte after the id in a tree value of each other mode than 100644 (:data:`tree.MODE_TAGS`).
_MODE_TAG_BYTES = {mode: tag[0] for mode, tag in MODE_TAGS.items()}


class TreeAhead:
    """``repo.tree_of(commit_hex)`` and ``check(tree)`` in a child
    (:func:`run_async.start_async`), started at once; :meth:`result`
    waits for them, :meth:`close` (idempotent) stops a child not waited for
    (an error before the merge)."""

    def __init__(self, repo: Repository, commit_hex: bytes, check: Callable[[TreeFiles], object]) -> None:
        self.repo = repo

        def compute() -> list[bytes]:
            tree = repo.tree_of(commit_hex, fetch=False)
            parts = _pack_files(tree.files)
            head = marshal.dumps((tree.tree_id, tree.attributes, check(tree), len(parts)))
            return [head, marshal.dumps(tree.trees), *parts]

        self._child: tuple[int, int] | None = start_async(compute)

    def result(self, index: dict[bytes, Entry] | None = None) -> tuple[TreeFiles, object, list[bytes] | None] | None:
        """(the tree, what ``check`` said of it, the paths at which it and
        ``index`` differ), or None when the child failed. ``index``: the
        index's entries, whose names and ids the tree's files share where
        they are alike; the differing paths (None without an index) are the
        tree's in its order (:func:`tree.entry_differs`), then the index's
        it lacks: what a switch's merge from that index asks first
        (``twoway.plan_switch``'s ``found``)."""
        if self._child is None:
            return None
        (pid, fd), self._child = self._child, None
        try:
            tree = verdict = None
            head = read_part(fd)
            if head is not None:
                tree_id, attributes, verdict, n = marshal.loads(head)
                trees = read_part(fd)
                differs: list[bytes] = []
                files = _unpack_files((read_part(fd) for _ in range(n)), index or {}, differs)
                if trees is not None:
                    tree = TreeFiles(files, trees, tree_id, attributes)
                    if index is not None:
                        # The index's paths the tree lacks, unless every one was found in it.
                        if len(files) - len(differs) + sum(1 for p in differs if p in index) != len(index):
                            differs += [p for p in index if p not in files]
        except (EOFError, ValueError, TypeError):
            tree = None
        except BaseException:
            stop_async(pid, fd)
            raise
        if not end_async(pid, fd) or tree is None:
            return None
        self.repo.remember_tree(tree)
        return tree, verdict, differs if index is not None else None

    def close(self) -> None:
        if self._child is not None:
            child, self._child = self._child, None
            stop_async(*child)


def _pack_files(files: dict[bytes, bytes]) -> list[bytes]:
    """A flattened tree's files as parts of :data:`FILES_PER_PART` each,
    marshalled strings: their paths joined by NULs (no path holds one),
    their values (:func:`tree.tree_value`) joined, and each value's length
    in a byte (an id's, one more with a mode byte)."""
    it = iter(files.items())
    parts = []
    while chunk := list(islice(it, FILES_PER_PART)):
        values = [v for _, v in chunk]
        parts.append(marshal.dumps((b"\0".join([p for p, _ in chunk]), b"".join(values), bytes(map(len, values)))))
    return parts


def _unpack_files(parts: Iterable[bytes | bytearray | None], index: dict[bytes, Entry],
                  differs: list[bytes]) -> dict[bytes, bytes]:
    """:func:`_pack_files`'s files again, a part at a time (None: one
    that did not come, EOFError), each path and 100644 id that ``index``
    holds alike taken from its entry (the module docstring): a value that
    is the entry's id and nothing more (no mode byte). ValueError when a
    part's paths and values do not pair up. The paths whose values are not
    ``index``'s entries (:func:`tree.entry_differs`, inline) are appended to
    ``differs`` on the way, in the files' order: a switch's merge from that
    index then does not compare the two again (100,000 lookups)."""
    files: dict[bytes, bytes] = {}
    get = index.get
    add = differs.append
    tag_of = _MODE_TAG_BYTES.get
    for part in parts:
        if part is None:
            raise EOFError("the child stopped short")
        paths, values, sizes = marshal.loads(part)
        paths = paths.split(b"\0")
        if len(paths) != len(sizes) or sum(sizes) != len(values):
            raise ValueError("the tree's paths and values do not pair up")
        starts, off = values.startswith, 0
        for path, n in zip(paths, sizes, strict=True):
            e = get(path)
            if e is None:
                files[path] = values[off:off + n]
                add(path)
            else:
                name, oid = e.name, e.oid
                if not starts(oid, off):
                    files[name] = values[off:off + n]
                    add(name)
                elif n == len(oid):  # (100644 in the tree)
                    files[name] = oid
                    if e.mode != REGULAR_FILE:
                        add(name)
                else:  # the id and a mode byte (entry_differs, inline: 25,000 of 100,000 files)
                    files[name] = values[off:off + n]
                    if n != len(oid) + 1 or values[off + len(oid)] != tag_of(e.mode):
                        add(name)
            off += n
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
