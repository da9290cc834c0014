"""Is a work-tree file still its index entry? ``ce_compare_data`` as git does it.

git decides that a file whose stat data changed is unmodified when the
file, converted for the index (``convert_to_git``: working-tree-encoding to
UTF-8, CRLF to LF, ``$Id: ...$`` collapsed to ``$Id$``), hashes to the
entry's object id (``index_fd``). The attributes are the check-in ones
(``GIT_ATTR_CHECKIN``, the direction in effect while ``unpack_trees``
verifies and ``refresh_index`` runs): ``.gitattributes`` of the work tree
first, then of the index being read, never of the tree being checked out.

Comparing the blob converted for the work tree with the file instead
(``smudge(blob) == file``) gets two cases wrong: a file with mixed line
endings that cleans to the blob (git: unmodified), and a blob holding CRLF
under ``text`` whose file holds the same bytes (git: modified, since the
file cleans to LF). A file behind a filter driver, or in an encoding we
cannot decode, is left to the caller (``None``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from .attr import attributes_path
from .attributes import AttrFile, AttributeStack, ConvAttrs, convert_attrs
from .convert import convert_is_binary, gather_stats
from .encoding import encode_to_git
from .index import Entry
from .wire import ConvertCrlfAction as A

__all__ = ["CheckinAttributes", "convert_to_git"]

_AUTO = (A.CRLF_AUTO, A.CRLF_AUTO_INPUT, A.CRLF_AUTO_CRLF)
_IDENT = re.compile(rb"\$Id:[^$\n]*\$")
def convert_to_git(data: bytes, ca: ConvAttrs, index_blob_has_cr: Callable[[], bool], path: bytes = b"",
                   say: Callable[[str], None] = lambda line: None) -> bytes | None:
    """``convert_to_git`` without a filter: what ``git add`` would store, or None.

    ``say`` gets the lines git prints for a file it cannot read back from its
    working-tree-encoding (git then goes on with the bytes as they are).
    """
    if ca.drv is not None:
        return None
    if ca.working_tree_encoding and data:
        data = encode_to_git(data, ca.working_tree_encoding, path, say)
        if data is None:
            return None
    crlf = ca.crlf_action
    if crlf != A.CRLF_BINARY and data and b"\r\n" in data:
        convert = True
        if crlf in _AUTO:
            if convert_is_binary(gather_stats(data)) or index_blob_has_cr():
                convert = False
        if convert:
            data = data.replace(b"\r\n", b"\n")
    if ca.ident and b"$Id:" in data:
        data = _IDENT.sub(b"$Id$", data)
    return data


class CheckinAttributes:
    """Attributes in the check-in direction: work tree first, then the index."""

    def __init__(self, top: bytes, index: dict[bytes, Entry], read_blob: Callable[[bytes], bytes],
                 info: bytes | None, global_data: bytes | None, eol, drivers,
                 say: Callable[[str], None] = lambda line: None, ignore_case: bool = False) -> None:
        self.top = top
        self.say = say
        self._said: set[bytes] = set()
        self.index = index
        self.read_blob = read_blob
        self.eol = eol
        self.drivers = drivers

        name = attributes_path

        def read(d: bytes) -> bytes | None:
            try:
                fd = os.open(top + name(d), os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                fd = None
            if fd is not None:
                try:
                    with os.fdopen(fd, "rb") as f:
                        return AttrFile(f.read())  # read as a file, not a blob (attributes.AttrFile)
                except OSError:
                    return None
            e = index.get(name(d))
            if e is None:
                return None
            try:
                return read_blob(e.oid)
            except Exception:  # noqa: BLE001 - an unreadable blob counts as absent
                return None

        def has(d: bytes) -> bool:
            return name(d) in index or os.path.isfile(top + name(d))

        self.stack = AttributeStack(read, has, info, global_data, None, ignore_case)
        self._cache: dict[bytes, ConvAttrs] = {}

    def conv_attrs(self, path: bytes) -> ConvAttrs:
        ca = self._cache.get(path)
        if ca is None:
            ca = self._cache[path] = convert_attrs(self.stack.check(path), self.eol, self.drivers)
        return ca

    def to_git(self, entry: Entry, data: bytes) -> bytes | None:
        """``data`` (the file of ``entry``) as ``git add`` would store it, or None."""
        try:
            ca = self.conv_attrs(entry.name)
        except Exception:  # noqa: BLE001 - a bad attribute value: let the caller decide
            return None

        def has_cr() -> bool:
            cur = self.index.get(entry.name)
            if cur is None:
                return False
            try:
                blob = self.read_blob(cur.oid)
            except Exception:  # noqa: BLE001
                return False
            return b"\r\n" in blob and not convert_is_binary(gather_stats(blob))

        def say(line: str) -> None:
            # once per path: git reads a file back once per check, and one
            # checkout checks a path once before it is refreshed.
            if entry.name not in self._said:
                self.say(line)
        out = convert_to_git(data, ca, has_cr, entry.name, say)
        self._said.add(entry.name)
        return out
