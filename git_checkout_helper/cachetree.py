"""The index's ``TREE`` extension read back, invalidated path by path, and
written again: what ``cache-tree.c`` does when entries change under a tree
it knows (``cache_tree_read``, ``cache_tree_invalidate_path``,
``cache_tree_write``).

A path restore (``git checkout [<tree-ish>] -- <paths>``) keeps the index's
cache-tree: restoring from the index changes no entry, so all of it stays;
from a tree, each entry added or replaced (``add_index_entry``) invalidates
the trees on its path (entry count -1, no id), and a file taking the place
of a directory drops that directory's subtree. Subtrees nothing touched keep
their ids, so the next ``git commit`` or ``git status`` need not rehash them.
"""

from __future__ import annotations

import struct

from .hash_algo import new_hash

__all__ = ["CacheTree", "read_tree_extension", "repair", "tree_object"]


def _node(data: bytes, pos: int, rawsz: int) -> tuple[bytes, int, int, bytes | None, int]:
    """One node's header at ``pos``: its name, entry count (-1: invalid),
    subtree count, id (None when invalid) and where the next node starts;
    ValueError when malformed."""
    nul = data.index(b"\0", pos)
    name = data[pos:nul]
    nl = data.index(b"\n", nul)
    count_s, _, subs_s = data[nul + 1:nl].partition(b" ")
    count, nsubs = int(count_s), int(subs_s)
    pos = nl + 1
    oid = None
    if count >= 0:
        oid = data[pos:pos + rawsz]
        if len(oid) != rawsz:
            raise ValueError("truncated cache-tree")
        pos += rawsz
    return name, count, nsubs, oid, pos


class CacheTree:
    """One node: entry count (-1: invalid), subtree count, id, subtrees in order."""

    __slots__ = ("name", "count", "oid", "subs")

    def __init__(self, name: bytes, count: int, oid: bytes | None, subs: list[CacheTree]) -> None:
        self.name = name
        self.count = count
        self.oid = oid
        self.subs = subs

    @classmethod
    def parse(cls, data: bytes, rawsz: int) -> CacheTree:
        """``cache_tree_read``; raises ValueError on a malformed extension."""
        root, pos = _read_one(cls, data, 0, rawsz)
        if pos != len(data):
            raise ValueError("trailing bytes after the cache-tree")
        return root

    @classmethod
    def root_of(cls, data: bytes, rawsz: int) -> CacheTree:
        """The root node alone (no subtrees), read as :meth:`parse` reads
        it: what a question about the whole index needs, without building
        a node per directory (5,800 of them, 20 ms, at 100,000 files)."""
        name, count, _nsubs, oid, _pos = _node(data, 0, rawsz)
        return cls(name, count, oid, [])

    def invalidate(self, path: bytes) -> None:
        """``cache_tree_invalidate_path``."""
        node = self
        while True:
            node.count = -1
            node.oid = None
            head, slash, rest = path.partition(b"/")
            if not slash:
                node.subs = [s for s in node.subs if s.name != head]
                return
            sub = next((s for s in node.subs if s.name == head), None)
            if sub is None:
                return
            node, path = sub, rest

    def serialize(self) -> bytes:
        """``cache_tree_write``."""
        out: list[bytes] = []
        _write_node(self, out)
        return b"".join(out)


# (The recursions are functions, not closures: cli.start_program.)

def _read_one(cls, data: bytes, pos: int, rawsz: int) -> tuple[CacheTree, int]:
    """``read_one``: the node at ``pos`` with its subtrees, and where it ends."""
    name, count, nsubs, oid, pos = _node(data, pos, rawsz)
    subs = []
    for _ in range(nsubs):
        sub, pos = _read_one(cls, data, pos, rawsz)
        subs.append(sub)
    return cls(name, count, oid, subs), pos


def _write_node(n: CacheTree, out: list[bytes]) -> None:
    """``write_one``: ``n`` and its subtrees, onto ``out``."""
    out.append(n.name + b"\0" + b"%d %d\n" % (n.count, len(n.subs)))
    if n.count >= 0 and n.oid is not None:
        out.append(n.oid)
    for s in n.subs:
        _write_node(s, out)


def read_tree_extension(path: str, object_format) -> bytes | None:
    """The raw ``TREE`` extension of the index at ``path``, or None.

    The entries are skipped with dulwich's reader (any index version); the
    extensions that follow are walked by their headers."""
    from dulwich.index import read_cache_entry, read_index_header

    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None
    with f:
        version, n = read_index_header(f)
        previous = b""
        for _ in range(n):
            previous = read_cache_entry(f, version, previous, object_format).name
        rest = f.read()
    rawsz = object_format.oid_length
    body = rest[:-rawsz] if len(rest) >= rawsz else b""
    pos = 0
    while pos + 8 <= len(body):
        sig = body[pos:pos + 4]
        (size,) = struct.unpack(">I", body[pos + 4:pos + 8])
        if sig == b"TREE":
            return body[pos + 8:pos + 8 + size]
        pos += 8 + size
    return None


def tree_object(files, subtrees, hash_name: str) -> tuple[bytes, bytes]:
    """A tree object's (raw id, content) as ``cache_tree_update``'s
    ``update_one`` writes it: ``files`` (name, mode, raw id) and
    ``subtrees`` (name, raw id) in git's tree order, a directory's name
    compared as if it ended in ``/``."""
    items = [(name, b"%o %s" % (mode, name), oid) for name, mode, oid in files]
    items += [(name + b"/", b"40000 " + name, oid) for name, oid in subtrees]
    items.sort()
    content = b"".join(mode_name + b"\0" + oid for _, mode_name, oid in items)
    return new_hash(hash_name, b"tree %d\0" % len(content) + content).digest(), content


def repair(trees: dict[bytes, tuple[bytes, list[bytes], int]], invalid: set[bytes], entries, hash_name: str,
           has_object) -> set[bytes]:
    """``cache_tree_update(WRITE_TREE_REPAIR)``, as unpack-trees ends: each
    invalid directory whose tree, hashed from the index ``entries`` below
    it, is already in the object store (``has_object``) becomes valid again
    with that id and the index's entry count (``trees`` updated in place);
    the directories still invalid are returned. A directory holding an
    intent-to-add entry, or a subdirectory still invalid, stays invalid
    (nothing is written: repair only uses trees that exist)."""
    from .index_file import CE_INTENT_TO_ADD_IN_CORE

    files: dict[bytes, list] = {d: [] for d in invalid}
    subs: dict[bytes, set[bytes]] = {d: set() for d in invalid}
    counts = dict.fromkeys(invalid, 0)
    blocked: set[bytes] = set()
    for e in entries:
        d = e.name
        first = True
        while d:
            slash = d.rfind(b"/")
            parent, name = (d[:slash], d[slash + 1:]) if slash != -1 else (b"", d)
            if parent in files:
                counts[parent] += 1
                if first:
                    files[parent].append((name, e))
                    if e.ce_flags & CE_INTENT_TO_ADD_IN_CORE:
                        blocked.add(parent)
                else:
                    subs[parent].add(name)
            first = False
            d = parent
    still = set(invalid)
    for d in sorted(invalid, key=lambda d: -d.count(b"/") - (1 if d else 0)):
        fulls = [(name, d + b"/" + name if d else name) for name in subs[d]]
        if d in blocked or any(full in still or full not in trees for _, full in fulls):
            continue
        oid, _ = tree_object([(name, e.mode, e.oid) for name, e in files[d]],
                             [(name, trees[full][0]) for name, full in fulls], hash_name)
        if has_object(oid):
            trees[d] = (oid, sorted(subs[d]), counts[d])
            still.discard(d)
    return still
