"""Reading refs as the files backend does: ``refs_resolve_ref_unsafe``
(refs.c) over ``files_read_raw_ref`` (refs/files-backend.c): a loose file,
in the git dir for a per-worktree name (``HEAD``, ``refs/bisect/``,
``refs/worktree/``, ``refs/rewritten/``) and in the common dir for the
others, else the ``packed-refs`` line; ``ref: `` files followed, at most
five deep.

Why not dulwich's ``DiskRefsContainer`` for this: importing ``dulwich.refs``
brings ``dulwich.file`` and its dependencies, part of the 20 ms dulwich
adds to every command's start-up, when a checkout reads two or three refs.
Reading is all :class:`Refs` does itself, and only for what it knows it
reads as that container reads it: names its fast check judges
(:func:`_loose_name`, the rules of ``check_ref_format``), and a
``packed-refs`` file :func:`packed_refs.read_packed_refs` parses; and the
listing a clone takes from its source (:meth:`Refs.all_refs`). Anything
else (an unusual name or file, writing refs) goes to dulwich's container,
made on first need, so the answers never differ.
"""

from __future__ import annotations

import os
import re

from .hash_algo import is_hex_oid
from .packed_refs import find_packed_ref, read_packed_refs

__all__ = ["Refs", "check_ref_format", "is_per_worktree_ref"]

SYMREF = b"ref: "
#: ``SYMREF_MAXDEPTH``: symbolic refs followed at most this deep.
SYMREF_MAXDEPTH = 5

#: One component ``check_ref_format`` allows: no control byte, space, DEL,
#: ``~^:?*[\\`` or slash, and no leading dot (``..``, ``@{``, a trailing dot
#: and ``.lock`` are tested apart).
_COMPONENT = rb"[^\x00-\x20\x7f~^:?*\[\\/.][^\x00-\x20\x7f~^:?*\[\\/]*"
_RELATIVE_NAME = re.compile(rb"(?:" + _COMPONENT + rb"/)+" + _COMPONENT)


def is_per_worktree_ref(name: bytes) -> bool:
    """Names a linked worktree keeps in its own git dir (pseudorefs too)."""
    return not name.startswith(b"refs/") or name.startswith((b"refs/bisect/", b"refs/worktree/", b"refs/rewritten/"))


def check_ref_format(name: bytes) -> bool:
    """``check_refname_format`` without options, as dulwich's container
    applies it to the part after ``refs/``: two components or more, none
    empty, starting with a dot or ending in ``.lock``; no ``..``, ``@{``,
    control byte, space, DEL or ``~^:?*[\\``; no trailing dot or slash."""
    if b".." in name or b"@{" in name or name.endswith(b"."):
        return False
    return _RELATIVE_NAME.fullmatch(name) is not None and b".lock/" not in name and not name.endswith(b".lock")


def _loose_name(name: bytes) -> bool | None:
    """Whether a loose file can hold ``name``, as dulwich's container
    decides it: True for ``HEAD``, ``refs/stash`` and a ``refs/`` name
    :func:`check_ref_format` accepts, False for the names it refuses, None
    for the one kind it judges with a warning (empty components, ``a//b``),
    which is left to it."""
    if name in (b"HEAD", b"refs/stash"):
        return True
    if not name.startswith(b"refs/"):
        return False
    if check_ref_format(name[5:]):
        return True
    return None if b"//" in name[5:] else False


class Refs:
    """The refs of one repository (``commondir``: shared refs and
    ``packed-refs``; ``gitdir``: this worktree's own)."""

    def __init__(self, commondir: str, gitdir: str) -> None:
        self.commondir = commondir
        self.gitdir = gitdir
        self._container = None
        self._packed_data: bytes | None = None
        self._packed_key = None
        self._packed: dict[bytes, bytes] | None = None  # parsed from _packed_data when asked
        self._peeled: list | None = None  # (peeled ids, scope): read_packed_refs's

    def _dulwich(self):
        """dulwich's refs container on the same directories, with the fast
        ``packed-refs`` reader installed (:func:`packed_refs.install`)."""
        if self._container is None:
            from dulwich.refs import DiskRefsContainer

            from . import packed_refs

            self._container = DiskRefsContainer(self.commondir, self.gitdir)
            packed_refs.install(self._container)
        return self._container

    def __getattr__(self, attr: str):
        # Listing, writing and everything else: dulwich's container.
        return getattr(self._dulwich(), attr)

    def read_loose_ref(self, name: bytes) -> bytes | None:
        """The first line of the ref's file (``ref: x`` or an id), or None."""
        loose = _loose_name(name)
        if not loose:
            return None if loose is False else self._dulwich().read_loose_ref(name)
        base = self.gitdir if is_per_worktree_ref(name) else self.commondir
        try:
            with open(os.path.join(base, os.fsdecode(name)), "rb") as f:
                data = f.read()
        except OSError:
            return None
        return data.split(b"\n", 1)[0].rstrip(b"\r")

    def _packed_file(self) -> bytes | None:
        """``packed-refs``' bytes (b"" when there is no file; None when it
        cannot be read), read again when the file changed (its identity as
        dulwich's cache keys it: device, inode, size, time)."""
        path = os.path.join(self.commondir, "packed-refs")
        try:
            st = os.stat(path)
        except OSError:
            return b""
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key != self._packed_key:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                data = None
            self._packed_data, self._packed_key, self._packed, self._peeled = data, key, None, None
        return self._packed_data

    def get_packed_refs(self) -> dict[bytes, bytes]:
        """``packed-refs`` as a mapping (the whole file parsed)."""
        data = self._packed_file()
        if not data:
            return {} if data is not None else self._dulwich().get_packed_refs()
        if self._packed is None:
            parsed = read_packed_refs(data)
            if parsed is None:
                return self._dulwich().get_packed_refs()
            self._packed, *self._peeled = parsed
        return self._packed

    def _packed_ref(self, name: bytes) -> bytes | None:
        """One name's id in ``packed-refs``: bisected, as git looks one up,
        in a file git wrote sorted (:func:`packed_refs.find_packed_ref`);
        else from the whole file parsed."""
        if self._packed is None:
            data = self._packed_file()
            if not data:
                return None if data is not None else self._dulwich().get_packed_refs().get(name)
            try:
                return find_packed_ref(data, name)
            except ValueError:
                pass
        return self.get_packed_refs().get(name)

    def packed_peeled(self) -> dict[bytes, bytes | None]:
        """What ``packed-refs`` tells of its refs' peeled ids, by name: the
        id a ref's chain of tags ends at, None for a ref that names no tag;
        refs its traits leave unknown are not there (see
        :func:`packed_refs.read_packed_refs`)."""
        packed = self.get_packed_refs()
        if self._peeled is None or self._peeled[1] is None:
            return {}
        peeled, scope = self._peeled
        return {name: peeled.get(name) for name in packed if name.startswith(scope)}

    def all_refs(self) -> dict[bytes, bytes | None]:
        """Every ref under ``refs/`` with the id it ends at, loose over
        packed, symbolic ones followed: the refs ``upload-pack`` advertises
        to a clone (the files backend's iteration). A name
        ``check_refname_format`` refuses, and a symbolic ref to nothing, are
        left out, as git leaves them out; a broken ref (its file holds no
        id) is there with None: git advertises it with the null id, which a
        clone then refuses to write."""
        packed = self.get_packed_refs()
        out: dict[bytes, bytes | None] = {}
        loose = set()
        top = os.path.join(self.commondir, "refs")
        for root, _dirs, files in os.walk(top):
            rel = os.fsencode(os.path.relpath(root, self.commondir))
            loose.update(rel + b"/" + os.fsencode(f) for f in files)
        for name in sorted(loose.union(packed)):
            if not check_ref_format(name[5:]):
                continue
            sha = self.follow(name)[1] if name in loose else packed[name]
            if sha is not None:
                out[name] = sha if is_hex_oid(sha) else None
        return out

    def for_each_ref(self) -> dict[bytes, bytes]:
        """``for_each_ref``: every ref under ``refs/`` that names an id, with
        it (:meth:`all_refs` without the broken ones); in a linked worktree,
        its own per-worktree refs (``refs/bisect/``...) in place of the main
        worktree's, as its files backend lists them."""
        refs = {name: sha for name, sha in self.all_refs().items() if sha is not None}
        if os.path.realpath(self.gitdir) == os.path.realpath(self.commondir):
            return refs
        refs = {name: sha for name, sha in refs.items() if not is_per_worktree_ref(name)}
        own = []
        for root, _dirs, files in os.walk(os.path.join(self.gitdir, "refs")):
            rel = os.fsencode(os.path.relpath(root, self.gitdir))
            own += [rel + b"/" + os.fsencode(f) for f in files]
        for name in own:
            if is_per_worktree_ref(name) and check_ref_format(name[5:]):
                sha = self.follow(name)[1]
                if sha is not None and is_hex_oid(sha):
                    refs[name] = sha
        return dict(sorted(refs.items()))

    def read_ref(self, name: bytes) -> bytes | None:
        """The ref's own value, symbolic refs not followed."""
        return self.read_loose_ref(name) or self._packed_ref(name)

    def follow(self, name: bytes) -> tuple[list[bytes], bytes | None]:
        """(the names followed, from ``name`` on; the id at the end or None)."""
        contents: bytes | None = SYMREF + name
        names: list[bytes] = []
        depth = 0
        while contents and contents.startswith(SYMREF):
            target = contents[len(SYMREF) :]
            names.append(target)
            contents = self.read_ref(target)
            if not contents:
                break
            depth += 1
            if depth > SYMREF_MAXDEPTH:
                return self._dulwich().follow(name)  # (its own error for a loop)
        return names, contents or None

    def __contains__(self, name: bytes) -> bool:
        return bool(self.read_ref(name))

    def __getitem__(self, name: bytes) -> bytes:
        _, sha = self.follow(name)
        if sha is None:
            raise KeyError(name)
        return sha
