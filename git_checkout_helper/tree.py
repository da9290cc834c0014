"""A flattened tree: what ``read_tree`` (tree.c) puts in an index, path by path.

A checkout holds its target's tree, and a switch its HEAD's, as one
dictionary of paths (:class:`TreeFiles`), read by
:meth:`repository.Repository.read_tree`. Each path's value is one ``bytes``:
the entry's raw id, followed by a byte naming its mode unless that is
100644 (:func:`tree_value`), so that the value compares with another tree's
in one operation and costs one object.
"""

from __future__ import annotations

import marshal

from .attr import is_attributes_file
from .index import S_IFGITLINK, S_IFLNK, Entry

__all__ = ["EMPTY", "REGULAR_FILE", "TreeFiles", "become_value", "entry_differs", "tree_value", "value_entry", "value_mode", "value_oid"]

#: The index mode of a path of a flattened tree (:class:`TreeFiles`) whose
#: value is its raw id alone: most paths.
REGULAR_FILE = 0o100644
#: The byte after the raw id that names any other mode. Ids are 20 or 32
#: bytes, so a value of odd length has one. A ``(mode, id)`` tuple a path
#: took 64 bytes more: 6 MiB of a 100,000-file tree, held through a switch
#: beside the index (and left in the allocator's pools after a clone's).
MODE_TAGS = {0o100755: b"x", S_IFLNK: b"l", S_IFGITLINK: b"g"}
_TAGGED_MODES = {tag[0]: mode for mode, tag in MODE_TAGS.items()}


def tree_value(mode: int, oid: bytes) -> bytes:
    """A flattened tree's value for an entry of index mode ``mode`` (:func:`index.create_ce_mode`'s)."""
    return oid if mode == REGULAR_FILE else oid + MODE_TAGS[mode]


def value_mode(value: bytes) -> int:
    """The index mode of a flattened tree's ``value``."""
    return _TAGGED_MODES[value[-1]] if len(value) & 1 else REGULAR_FILE


def value_oid(value: bytes) -> bytes:
    """The raw id of a flattened tree's ``value``."""
    return value[:-1] if len(value) & 1 else value


def value_entry(path: bytes, value: bytes) -> Entry:
    """A new index entry for a flattened tree's ``value`` at ``path`` (no stat data)."""
    if len(value) & 1:
        return Entry(path, _TAGGED_MODES[value[-1]], value[:-1])
    return Entry(path, REGULAR_FILE, value)


def become_value(e: Entry, value: bytes) -> None:
    """``e`` made :func:`value_entry`'s new entry for ``value`` in place
    (:meth:`index.Entry.become`, without the new entry made first)."""
    if len(value) & 1:
        e.become_new(_TAGGED_MODES[value[-1]], value[:-1])
    else:
        e.become_new(REGULAR_FILE, value)


def entry_differs(e: Entry | None, value: bytes | None) -> bool:
    """Whether the index entry ``e`` at a path is not a tree's ``value``
    there (None: the path is not in one of them)."""
    if e is None or value is None:
        return e is not value
    if e.mode == REGULAR_FILE:
        return value != e.oid  # (a value with a mode byte is longer than any id)
    return e.oid != value_oid(value) or e.mode != value_mode(value)


class TreeFiles:
    """A flattened tree: path -> value (:func:`tree_value`: the raw id, and
    the mode when it is not 100644), plus its subtrees for cache-tree, and
    its ``.gitattributes`` files (path -> raw oid: what the attributes of a
    checkout read, kept apart so that ``files`` may be let go while they
    are still read; see :meth:`repository.Repository.release_tree`)."""

    __slots__ = ("files", "_trees", "tree_id", "attributes")

    def __init__(self, files: dict[bytes, bytes], trees: dict | bytes | bytearray, tree_id: bytes | None,
                 attributes: dict[bytes, bytes] | None = None):
        self.files = files
        self._trees = trees  # (or, marshalled, until asked for: :attr:`trees`)
        self.tree_id = tree_id
        self.attributes = attributes if attributes is not None else {
            p: value_oid(v) for p, v in files.items() if is_attributes_file(p)}

    @property
    def trees(self) -> dict[bytes, tuple[bytes, list[bytes], int]]:
        """dir -> (raw tree id, [subtree names], entry count). A tree read
        by another process (:mod:`treeahead`) keeps them marshalled until
        asked for: a switch's cache tree is made of them after its merge,
        and at 100,000 files their objects were 1.8 MiB of its peak, their
        string 0.5."""
        if not isinstance(self._trees, dict):
            self._trees = marshal.loads(self._trees)
        return self._trees


EMPTY = TreeFiles({}, {}, None)
