"""Commits, tags and trees as a checkout reads them: ``parse_commit_buffer``
(commit.c), ``parse_tag_buffer`` (tag.c) and the tree entries of
``tree-walk.c``, after ``check_object_signature`` (object-file.c) has
proved the bytes hash to the id asked for.

Why not dulwich's object classes: importing ``dulwich.objects`` brings
``dulwich.file`` and its dependencies, about 5 ms of every command's
start-up, for the three fields a checkout reads of a commit (tree,
parents, message) and the one it reads of a tag (the object it names).
Only those are parsed, as git parses them: a commit must start with its
``tree`` line and then its ``parent`` lines, a tag must name its object and
its type; the rest of the headers is not looked at.
"""

from __future__ import annotations

from .dulwich_ext import parse_tree
from .hash_algo import new_hash

__all__ = ["Blob", "Commit", "CorruptObject", "GitObject", "ObjectHashMismatch", "Tag", "Tree", "parse_object"]

OBJ_COMMIT, OBJ_TREE, OBJ_BLOB, OBJ_TAG = 1, 2, 3, 4
TYPE_NAMES = {OBJ_COMMIT: b"commit", OBJ_TREE: b"tree", OBJ_BLOB: b"blob", OBJ_TAG: b"tag"}


class CorruptObject(ValueError):
    """An object git's parser refuses (``bogus commit object``, ``bad tree
    pointer``...); the message is git's."""


class ObjectHashMismatch(CorruptObject):
    """``check_object_signature``: the bytes read for an id hash to another."""


class GitObject:
    """One object: its hex ``id`` and its raw bytes (without the header)."""

    __slots__ = ("id", "_raw")
    type_num = 0

    def __init__(self, hexsha: bytes, raw: bytes) -> None:
        self.id = hexsha
        self._raw = raw

    @property
    def type_name(self) -> bytes:
        return TYPE_NAMES[self.type_num]

    def as_raw_string(self) -> bytes:
        return self._raw


class Blob(GitObject):
    __slots__ = ()
    type_num = OBJ_BLOB


class Tree(GitObject):
    """A tree; ``tree[name]`` is (mode, hex id) of one entry (KeyError if none)."""

    __slots__ = ()
    type_num = OBJ_TREE

    def __getitem__(self, name: bytes) -> tuple[int, bytes]:
        for entry, mode, sha in parse_tree(self._raw, len(self.id) // 2):
            if entry == name:
                return mode, sha
        raise KeyError(name)


class Commit(GitObject):
    """``parse_commit_buffer``: ``tree`` and ``parents`` (hex ids) and the
    ``message`` (what follows the first empty line; empty when none)."""

    __slots__ = ("tree", "parents", "message")
    type_num = OBJ_COMMIT

    def __init__(self, hexsha: bytes, raw: bytes) -> None:
        super().__init__(hexsha, raw)
        n, name = len(hexsha), hexsha.decode()
        self.tree = _id_line(raw, 0, b"tree", n, f"bogus commit object {name}", f"bad tree pointer in commit {name}")
        pos = 6 + n
        parents = []
        while raw.startswith(b"parent ", pos):
            bad = f"bad parents in commit {name}"
            parents.append(_id_line(raw, pos, b"parent", n, bad, bad))
            pos += 8 + n
        self.parents = parents
        end = raw.find(b"\n\n", pos - 1)
        self.message = raw[end + 2 :] if end >= 0 else b""


class Tag(GitObject):
    """``parse_tag_buffer``: ``object`` is (type name, hex id) of what it names."""

    __slots__ = ("object",)
    type_num = OBJ_TAG

    def __init__(self, hexsha: bytes, raw: bytes) -> None:
        super().__init__(hexsha, raw)
        n = len(hexsha)
        bogus = f"bogus tag object {hexsha.decode()}"
        target = _id_line(raw, 0, b"object", n, bogus, bogus)
        if not raw.startswith(b"type ", 8 + n):
            raise CorruptObject(f"bogus tag object {hexsha.decode()}")
        eol = raw.find(b"\n", 13 + n)
        kind = raw[13 + n : eol] if eol >= 0 else b""
        if kind not in TYPE_NAMES.values():
            raise CorruptObject(f"unknown tag type '{kind.decode('utf-8', 'replace')}' in {hexsha.decode()}")
        self.object = (kind, target)


_CLASSES = {OBJ_COMMIT: Commit, OBJ_TREE: Tree, OBJ_BLOB: Blob, OBJ_TAG: Tag}
_HEXDIGITS = frozenset(b"0123456789abcdef")


def _id_line(raw: bytes, pos: int, key: bytes, n: int, bad_line: str, bad_id: str) -> bytes:
    """The id of the ``<key> <id>`` line at ``pos`` (``n`` hex digits, then a
    newline; ``bad_line`` when the line is not so), read as ``get_oid_hex``
    reads it: digits of either case (``bad_id`` otherwise), given back lowercase."""
    start = pos + len(key) + 1
    if raw[pos:start - 1] != key or raw[start - 1:start] != b" " or raw[start + n:start + n + 1] != b"\n":
        raise CorruptObject(bad_line)
    low = raw[start:start + n].lower()
    if not _HEXDIGITS.issuperset(low):
        raise CorruptObject(bad_id)
    return low


def parse_object(type_num: int, raw: bytes, hexsha: bytes, hash_name: str) -> GitObject:
    """The object ``hexsha`` from its type and bytes, after checking that
    they hash to ``hexsha`` (``hash_name``: ``sha1`` or ``sha256``)."""
    cls = _CLASSES.get(type_num)
    if cls is None:
        raise CorruptObject(f"object {hexsha.decode()} has unknown type {type_num}")
    header = b"%s %d\0" % (TYPE_NAMES[type_num], len(raw))
    h = new_hash(hash_name, header, len(header) + len(raw))
    h.update(raw)
    if h.hexdigest().encode() != hexsha:
        raise ObjectHashMismatch(f"hash mismatch {hexsha.decode()}")
    return cls(hexsha, raw)
