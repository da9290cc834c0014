"""Reading blobs from the repository.

Mirrors the parts of ``object-file.c`` / ``packfile.c`` (reading) that a
checkout worker needs; finding the repository is :mod:`discovery`'s
(``setup.c``; ``GitDirs``, ``discover`` and ``NotAGitRepository`` are
re-exported here for the callers that import them from this module).
Reading goes through dulwich's :class:`~dulwich.object_store.DiskObjectStore`
(packs with their delta-base cache, loose objects, alternates, SHA-1 and
SHA-256) and asks for raw bytes with ``get_raw``: building ``Blob`` objects
costs 10-15% more for nothing a checkout uses.

Thread-safe for a helper's I/O threads: the pack readers
(:mod:`packreader`) lock their own cache, and everything that goes through
dulwich (its packs read with seek+read on one file object, its lazily
loaded pack and alternates lists) is serialized by one lock; that path is
the rare one (loose objects, alternates, unusual packs).

The repository is opened once per process; the object store keeps its packs
mapped, so consecutive items of one contiguous chunk share delta bases.

:meth:`ObjectDatabase.read_blob_or_stream` is ``streaming.c``'s
``open_istream`` for large blobs: a loose object or a pack entry that is not
a delta is inflated a piece at a time (:class:`BlobStream`), so writing it
never holds the whole blob; a deltified blob (its base must be in memory
anyway) or one only dulwich can find (a pack of an alternate) is read whole.
"""

from __future__ import annotations

import os
import sys
from _thread import RLock  # threading.RLock itself, without threading's 1 ms of import
from collections.abc import Iterator

from . import inflate as _inflate
from .discovery import GitDirs, NotAGitRepository, discover
from .hash_algo import HASH_ALGOS, HashAlgo, is_hex_oid
from .packreader import IndexV2, PackReader
from .wrapper import list_dir

__all__ = [
    "BlobStream",
    "GitDirs",
    "MissingObject",
    "NotAGitRepository",
    "ObjectDatabase",
    "STREAM_PIECE",
    "discover",
]

OBJ_BLOB = 3
#: Largest piece a streamed blob is inflated into at a time.
STREAM_PIECE = 1 << 20
_LOOSE_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
#: What a read from one of our mapped packs raises when something is unusual
#: (an id of the wrong length, a damaged entry): the read is then left to a
#: slower path that decides (dulwich's, or the item's own read at its turn).
_UNUSUAL_PACK_READ = (OSError, ValueError, IndexError, AssertionError, *_inflate.ERRORS)


class BlobStream:
    """A blob read a piece at a time (``streaming.c``'s ``git_istream``).

    ``size`` is the size the object header declares; iterating yields the
    inflated pieces (each at most :data:`STREAM_PIECE` bytes) and raises
    :class:`MissingObject` when the data is corrupt or not ``size`` bytes.
    Iterate it once.
    """

    __slots__ = ("size", "_pieces", "_oid")

    def __init__(self, oid: bytes, size: int, pieces: Iterator[bytes]) -> None:
        self._oid = oid
        self.size = size
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._pieces
        except (*_inflate.ERRORS, ValueError, OSError) as e:
            raise MissingObject(self._oid.hex()) from e


class MissingObject(Exception):
    pass


def object_format_name(config) -> str:
    """``extensions.objectFormat`` of a repository config (dulwich Config)."""
    try:
        return config.get((b"extensions",), b"objectformat").decode().lower()
    except KeyError:
        return "sha1"


class ObjectDatabase:
    """Raw blob reads for one repository, opened once per process."""

    def __init__(
        self,
        objects_dir: str,
        object_format: str = "sha1",
        alternates: list[str] | None = None,
    ) -> None:
        # dulwich's store is opened on first use (alternates, loose objects
        # dulwich must read, version 1 pack indexes, the coordinator's
        # revision and tree reads): a helper reading packs of the common kind
        # never imports it (start-up).
        self._objects_dir = objects_dir
        self._format_name = object_format
        self._alternates = alternates or None
        self._object_format = None
        if object_format not in HASH_ALGOS:
            self.object_format  # noqa: B018 - dulwich refuses an unknown format now, as before
        self._store = None
        self._dulwich_lock = RLock()
        self._packs: list | None = None

    @property
    def git_hash_algo(self) -> HashAlgo:
        """This repository's :class:`HashAlgo` (an unknown one was refused when opened)."""
        return HASH_ALGOS[self._format_name]

    @property
    def object_format(self):
        """dulwich's ``ObjectFormat`` of this repository."""
        if self._object_format is None:
            from dulwich.object_format import get_object_format

            self._object_format = get_object_format(self._format_name)
        return self._object_format

    @property
    def store(self):
        """dulwich's ``DiskObjectStore`` of these objects, opened on first use."""
        if self._store is None:
            with self._dulwich_lock:
                if self._store is None:
                    from dulwich.object_store import DiskObjectStore

                    self._store = DiskObjectStore(
                        self._objects_dir, object_format=self.object_format, alternates=self._alternates
                    )
        return self._store

    def _has_alternates(self) -> bool:
        return bool(self._alternates) or os.path.exists(
            os.path.join(self._objects_dir, "info", "alternates"))

    def _get_raw(self, oid: bytes) -> tuple[int, bytes]:
        """dulwich's ``get_raw``, one thread at a time."""
        with self._dulwich_lock:
            return self.store.get_raw(oid)

    def _packs_list(self) -> list:
        packs = self._packs
        if packs is None:
            with self._dulwich_lock:
                if self._packs is None:
                    self._packs = self._open_packs()
                packs = self._packs
        return packs

    def _pack_get_raw(self, oid: bytes) -> tuple[int, bytes]:
        """``get_raw`` that asks the packs first, without the store's per-lookup
        bookkeeping (MIDX probe, LRU marks, limit checks): that costs as much
        as the index search itself when a checkout reads thousands of blobs.
        Anything not found this way (loose objects, alternates, a pack that
        appeared or vanished) goes through dulwich's full ``get_raw``."""
        for pack in self._packs_list():
            try:
                if type(pack) is not PackReader:
                    with self._dulwich_lock:
                        return pack.get_raw(oid)
                return pack.get_raw(oid)
            except KeyError:
                continue
            except (OSError, ValueError, IndexError, *_inflate.ERRORS):
                break  # something unusual: let dulwich do it the careful way
        else:
            try:
                found = self._loose_object(oid, sys.maxsize)
            except _inflate.ERRORS as e:  # one kind of error, whichever inflater
                raise ValueError(f"loose object {oid.hex()} is corrupt") from e
            if found is not None:
                return found
        return self._get_raw(oid)

    def has_object(self, oid: bytes) -> bool:
        """``has_object`` without fetching (``OBJECT_INFO_SKIP_FETCH_OBJECT``):
        our pack indexes first, then a loose file; anything else (dulwich's
        packs, alternates) through the object store. A partial clone's
        checkout asks this for every object it will read, so the common
        answer costs one index search, not dulwich's per-lookup layers."""
        for pack in self._packs_list():
            if type(pack) is PackReader and oid in pack:
                return True
        for d in self._loose_dirs():
            h = oid.hex()
            if os.path.exists(os.path.join(d, h[:2], h[2:])):
                return True
        with self._dulwich_lock:
            return oid.hex().encode() in self.store

    def ensure_object(self, oid: bytes, type_name: bytes, content: bytes) -> None:
        """``write_object_file`` for an object that may be new: nothing when
        the store has ``oid``; else a loose object, compressed into a
        temporary file in its fan-out directory and renamed into place
        (``write_loose_object``: readers never see half an object)."""
        if self.has_object(oid):
            return
        h = oid.hex()
        d = os.path.join(self._objects_dir, h[:2])
        os.makedirs(d, exist_ok=True)
        import tempfile
        import zlib

        from .wrapper import rename_tempfile

        fd, tmp = tempfile.mkstemp(prefix="tmp_obj_", dir=d)
        rename_tempfile(fd, tmp, os.path.join(d, h[2:]),
                        zlib.compress(type_name + b" %d\0" % len(content) + content), 0o444)

    def _open_packs(self) -> list:
        if self._store is None and not self._has_alternates():
            own = self._open_own_packs()
            if own is not None:
                return own
        out = []
        try:
            for pack in self.store.packs:
                try:
                    out.append(PackReader(pack, resolve_ref=self._get_raw))
                except (OSError, ValueError):
                    out.append(pack)
        except OSError:
            pass
        return out

    def _open_own_packs(self) -> list | None:
        """Every ``pack-*.pack`` with its ``.idx`` (as dulwich lists them), each
        read by a :class:`PackReader` of its own; None when one of them is not
        of that kind (a version 1 index...): then dulwich opens them all."""
        rawsz = self.git_hash_algo.oid_length
        pack_dir = os.path.join(self._objects_dir, "pack")
        try:
            names = os.listdir(pack_dir)
        except FileNotFoundError:
            return []
        except OSError:
            return None
        out: list = []
        try:
            for name in sorted(names):
                if not (name.startswith("pack-") and name.endswith(".pack")):
                    continue
                base = os.path.join(pack_dir, name[:-5])
                if not os.path.exists(base + ".idx"):
                    continue
                out.append(PackReader(None, resolve_ref=self._get_raw, base=base, rawsz=rawsz))
        except (OSError, ValueError):
            for reader in out:
                reader.close()
            return None
        return out

    @property
    def hash_algo(self) -> int:
        """The ``GIT_HASH_*`` value git puts in ``struct object_id.algo``."""
        return self.git_hash_algo.format_id

    def read_blob(self, oid: bytes) -> bytes:
        """The content of blob ``oid`` (raw bytes); :class:`MissingObject` if absent."""
        try:
            type_num, data = self._pack_get_raw(oid)
        except (KeyError, ValueError, AssertionError, OSError, *_inflate.ERRORS) as e:
            raise MissingObject(oid.hex()) from e
        if type_num != OBJ_BLOB:
            raise MissingObject(oid.hex())
        return data

    def packed_blob(self, oid: bytes, limit: int) -> bytes | None:
        """Blob ``oid`` when a pack this process mapped itself holds it, read
        whole (at most ``limit`` bytes, or a delta); None for anything else,
        without saying why: a loose object, an object only dulwich finds, a
        blob :meth:`read_blob_or_stream` would stream, another type, an
        error. For reading ahead (``entry.write_pc_items``), which must touch
        nothing but the mapped packs: a loose object is a file to open (and
        may be a FIFO that blocks), read at its item's turn as git reads it."""
        for pack in self._packs_list():
            if type(pack) is not PackReader:
                continue
            try:
                type_num, data = pack.get_raw_or_stream(oid, limit)
            except KeyError:
                continue
            except _UNUSUAL_PACK_READ:
                return None
            return data if type_num == OBJ_BLOB and type(data) is bytes else None
        return None

    def read_blob_or_stream(self, oid: bytes, limit: int) -> bytes | BlobStream:
        """Blob ``oid``: its bytes, or a :class:`BlobStream` when it is larger
        than ``limit`` and stored whole (a loose object, or a pack entry that
        is not a delta), so that writing it never holds it all in memory
        (``open_istream``). Deltified blobs and objects only dulwich can find
        (packs of alternates, packs it could not map) are read whole.
        :class:`MissingObject` if absent or not a blob.
        """
        packs = self._packs_list()
        try:
            for pack in packs:
                stream = getattr(pack, "get_raw_or_stream", None)
                try:
                    if stream is not None:
                        got = stream(oid, limit)
                    else:
                        with self._dulwich_lock:
                            got = pack.get_raw(oid)
                except KeyError:
                    continue
                except _UNUSUAL_PACK_READ:
                    break  # something unusual (an id of the wrong length...): dulwich decides
                type_num, data = got
                if type_num != OBJ_BLOB:
                    raise MissingObject(oid.hex())
                if type(data) is tuple:
                    return BlobStream(oid, data[0], data[1])
                return data
            found = self._loose_blob(oid, limit)
        except (OSError, ValueError, *_inflate.ERRORS) as e:
            raise MissingObject(oid.hex()) from e
        if found is not None:
            return found
        return self.read_blob(oid)

    def _loose_dirs(self) -> list[str]:
        dirs = [self._objects_dir]
        if self._store is None and not self._has_alternates():
            return dirs
        try:
            with self._dulwich_lock:
                dirs.extend(a.path for a in self.store.alternates if hasattr(a, "path"))
        except OSError:
            pass
        return dirs

    def _loose_blob(self, oid: bytes, limit: int) -> bytes | BlobStream | None:
        """A loose blob; MissingObject when ``oid`` is loose but not a blob."""
        found = self._loose_object(oid, limit)
        if found is None:
            return None
        if found[0] != OBJ_BLOB:
            raise MissingObject(oid.hex())
        return found[1]

    def _loose_object(self, oid: bytes, limit: int) -> tuple[int, bytes | BlobStream] | None:
        """A loose object (``objects/xx/yyyy``, zlib: ``<type> <size>\\0<data>``):
        ``(type number, data)``, a blob above ``limit`` bytes as a
        :class:`BlobStream`; None when no objects directory has it."""
        hexid = oid.hex()
        for objects in self._loose_dirs():
            try:
                f = open(os.path.join(objects, hexid[:2], hexid[2:]), "rb")
            except FileNotFoundError:
                continue
            d = _inflate.decompressobj()
            head = b""
            while b"\0" not in head:
                raw = d.unconsumed_tail or f.read(4096)
                got = d.decompress(raw, 64)
                if not raw and not got:
                    f.close()
                    raise ValueError("truncated loose object header")
                head += got
                if len(head) > 64 and b"\0" not in head:
                    f.close()
                    raise ValueError("bad loose object header")
            header, _, first = head.partition(b"\0")
            kind, _, size_text = header.partition(b" ")
            size = int(size_text)
            type_num = _LOOSE_TYPES.get(kind)
            if type_num is None:
                f.close()
                raise ValueError("bad loose object type")
            if size <= limit or type_num != OBJ_BLOB:
                with f:
                    rest = d.decompress(d.unconsumed_tail + f.read())
                if not d.eof:  # as unpack_loose_rest: the stream must end (its checksum read)
                    raise ValueError("truncated loose object")
                data = first + rest
                if len(data) != size:
                    raise ValueError("loose object size mismatch")
                return type_num, data
            return type_num, BlobStream(oid, size, _inflate_file(f, d, first, size))
        return None

    def read_raw(self, oid: bytes) -> tuple[int, bytes]:
        """Any object's (type number, raw bytes) through the same fast path."""
        return self._pack_get_raw(oid)

    def _own_indexes(self) -> list | None:
        """Each pack's :class:`packreader.IndexV2`; None when some pack's
        index is dulwich's to search, or alternates hold objects too."""
        if self._store is not None or self._has_alternates():
            return None
        indexes = [getattr(pack, "index", None) for pack in self._packs_list()]
        return None if any(not isinstance(i, IndexV2) for i in indexes) else indexes

    def approximate_object_count(self) -> int | None:
        """``repo_approximate_object_count``: the objects in packs (loose
        ones are not counted, as in git); None when :meth:`_own_indexes`
        cannot tell."""
        indexes = self._own_indexes()
        return None if indexes is None else sum(map(len, indexes))

    def ids_with_prefix(self, prefix: bytes) -> set[bytes] | None:
        """The hex ids of the objects an abbreviated id (``prefix``: 4 hex
        digits or more) names, packed or loose; None when
        :meth:`_own_indexes` cannot tell."""
        indexes = self._own_indexes()
        if indexes is None:
            return None
        hexsz = self.git_hash_algo.hex_length
        low = bytes.fromhex((prefix + b"0" * (hexsz - len(prefix))).decode())
        high = bytes.fromhex((prefix + b"f" * (hexsz - len(prefix))).decode())
        found = {oid.hex().encode() for index in indexes for oid in index.ids_between(low, high)}
        rest = prefix[2:]
        for name in list_dir(os.fsencode(os.path.join(self._objects_dir, prefix[:2].decode()))):
            oid = prefix[:2] + name
            if len(oid) == hexsz and name.startswith(rest) and is_hex_oid(oid):
                found.add(oid)
        return found

    def rescan_packs(self) -> None:
        """Forget the pack list: packs were added (a promisor fetch)."""
        for pack in self._packs or ():
            if hasattr(pack, "_map"):
                pack.close()
        self._packs = None

    def release_pages(self, finished: bool = False) -> None:
        """:meth:`packreader.PackReader.release_pages` for every pack read so far."""
        for pack in self._packs or ():
            if hasattr(pack, "release_pages"):
                pack.release_pages(finished)

    def close(self) -> None:
        for pack in self._packs or ():
            if hasattr(pack, "_map"):
                pack.close()
        self._packs = None
        if self._store is not None:
            self._store.close()


def _inflate_file(f, d, first: bytes, size: int) -> Iterator[bytes]:
    """The rest of a loose object, in pieces of at most ``STREAM_PIECE`` bytes."""
    from .packreader import inflate_in_pieces

    with f:
        raw = iter(lambda: f.read(STREAM_PIECE), b"")
        yield from inflate_in_pieces(d, raw, size, first, STREAM_PIECE)
