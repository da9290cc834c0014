"""Lean object reads from one pack: ``packfile.c``'s ``unpack_entry`` path.

dulwich applies deltas (its C ``apply_delta``); this module replaces the
Python layers around it, which cost about as much as zlib itself when a
checkout reads thousands of small blobs: a version 2 ``.idx`` is searched
on its own mapping (:class:`IndexV2`: fan-out, then a bisection of the
name table, as ``find_pack_entry_one``; dulwich's search calls back into
Python for every name it compares, ten times per lookup on git.git), the object
header is parsed straight from an ``mmap`` of the pack, the entry is
inflated with one call (:func:`inflate.inflate`: ISA-L, or zlib) on a
zero-copy slice, and delta bases are
kept in a small LRU cache keyed by pack offset (git's delta base cache,
``core.deltaBaseCacheLimit``), which contiguous chunks in path order hit
often. Anything unusual raises, and the caller falls back to dulwich.

Thread-safe for a helper's I/O threads (``--threads``): the mmap is only
read, and the one LRU cache is shared: a lookup is one atomic dictionary
read, and an insertion (with the evictions it causes) holds a lock for the
dictionary operations alone (never while inflating), so that threads
writing one directory's files share its delta bases as one process does;
two threads may rarely rebuild the same base at once, which costs time,
not memory correctness. A cache per thread would keep K copies of the hot
bases.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from _thread import allocate_lock  # threading.Lock itself, without threading's 1 ms of import
from collections import OrderedDict
from collections.abc import Iterator

from . import inflate as _inflate_mod
from .dulwich_ext import apply_delta
from .inflate import inflate

__all__ = ["IndexV2", "PackReader", "DELTA_BASE_CACHE_LIMIT"]

OBJ_OFS_DELTA = 6
OBJ_REF_DELTA = 7
#: Bytes of delta bases kept per process (git's default is 96 MiB; helpers
#: are several, each with its own cache, so each keeps less). A checkout
#: reuses few bases, and the ones it reuses soon after (git.git's clone
#: checkout: 355 hits with 1 MiB, 365 with 32 MiB, of 4,000 base reads);
#: what a larger cache holds besides is fresh memory each process faults in
#: (32 MiB against 4: 17 MiB more at a 2-helper clone's peak, 6% more CPU).
#: Any base up to the whole limit is kept, as git keeps one: versions of a
#: data file chained one on the next are then each built from the last, not
#: from the chain's start.
DELTA_BASE_CACHE_LIMIT = 8 << 20
#: Longest delta chain followed (git packs default to depth 50).
MAX_DELTA_DEPTH = 10_000
#: Names of a pack index left to a C scan (``mmap.find``) once a search has
#: narrowed to them: ``find`` crosses git.git's usual window (170 names,
#: 3.4 KiB) in about 1 µs here, the time of three steps of the bisection it
#: replaces (a lookup went from 7.8-8.1 µs to 6.1-6.4 µs, same run).
SCAN_ENTRIES = 256


def inflate_in_pieces(d, raw: Iterator[bytes], size: int, first: bytes = b"",
                      piece: int = 1 << 20) -> Iterator[bytes]:
    """Inflate a zlib stream fed from ``raw`` (compressed chunks) with the
    decompressor ``d``, yielding at most ``piece`` bytes at a time, and check
    that it holds exactly ``size`` bytes (``first``: what ``d`` already gave).
    Shared by pack entries (mmap slices) and loose objects (file reads)."""
    done = len(first)
    if first:
        yield first
    while not d.eof:
        data = d.unconsumed_tail or next(raw, b"")
        out = d.decompress(data, piece)
        if not data and not out:  # ISA-L may still hold output for input it has read
            raise ValueError("truncated object")
        if out:
            done += len(out)
            if done > size:
                raise ValueError("object size mismatch")
            yield out
    if done != size:
        raise ValueError("object size mismatch")


_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)
_FANOUT = struct.Struct(">256I")
_U32 = struct.Struct(">I").unpack_from
_U64 = struct.Struct(">Q").unpack_from


class IndexV2:
    """A version 2 pack index (``.idx``), mapped and searched as
    ``find_pack_entry_one`` / ``nth_packed_object_offset`` do.

    Checked once when opened, as ``check_packed_git_idx``: the magic and
    version, a monotonic fan-out table, and a file large enough for the
    tables and trailer it claims. A 64-bit offset pointing outside its table
    raises ValueError (git: "bad offset"). Read only: safe for threads.
    """

    def __init__(self, path: str, rawsz: int) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        try:
            m = self._map
            if len(m) < 8 + 1024 or m[:8] != b"\377tOc\0\0\0\2":
                raise ValueError(f"{path}: not a version 2 pack index")
            fanout = _FANOUT.unpack_from(m, 8)
            if any(fanout[i] > fanout[i + 1] for i in range(255)):
                raise ValueError(f"{path}: non-monotonic index")
            n = fanout[255]
            self._names = 8 + 1024
            self._offsets = self._names + n * (rawsz + 4)
            self._large = self._offsets + n * 4
            self._large_end = len(m) - 2 * rawsz
            if self._large_end < self._large:
                raise ValueError(f"{path}: pack index is too small for {n} objects")
        except BaseException:
            self._map.close()
            raise
        # (lo, hi, w) of the name table slice for each first byte; w: the
        # half-width of the window the interpolation search probes first.
        self._ranges = tuple((lo, hi, 2 * math.isqrt(hi - lo) + 8)
                             for lo, hi in zip((0, *fanout[:255]), fanout, strict=True))
        self._rawsz = rawsz

    def close(self) -> None:
        self._map.close()

    def release_pages(self) -> None:
        """:meth:`PackReader.release_pages` for the index: a search maps
        the pages around the names it probes, so a few thousand lookups (the
        trees of 100,000 files) map nearly all of a 7 MiB index."""
        if _MADV_DONTNEED is not None:
            self._map.madvise(_MADV_DONTNEED)

    def __len__(self) -> int:
        """The objects the pack holds (the fan-out's last entry)."""
        return self._ranges[255][1]

    def ids_between(self, low: bytes, high: bytes) -> list[bytes]:
        """The ids from ``low`` to ``high`` (raw, both inclusive, of the
        first byte's fan-out slice), ascending: what an abbreviated id
        names (``find_short_packed_object``'s bisection)."""
        sz, m, names = self._rawsz, self._map, self._names
        lo, hi, _ = self._ranges[low[0]]
        while lo < hi:
            mid = (lo + hi) >> 1
            p = names + mid * sz
            if m[p : p + sz] < low:
                lo = mid + 1
            else:
                hi = mid
        out = []
        end = self._ranges[high[0]][1]
        while lo < end:
            p = names + lo * sz
            oid = m[p : p + sz]
            if oid > high:
                break
            out.append(oid)
            lo += 1
        return out

    def _nth_offset(self, nth: int) -> int:
        """``nth_packed_object_offset``: the 32-bit table, or the 64-bit one."""
        m = self._map
        off = _U32(m, self._offsets + 4 * nth)[0]
        if off & 0x80000000:
            p = self._large + 8 * (off & 0x7FFFFFFF)
            if p + 8 > self._large_end:
                raise ValueError("bad offset in pack index")
            off = _U64(m, p)[0]
        return off

    def offset(self, oid: bytes) -> int:
        """The pack offset of ``oid``; KeyError when the pack lacks it."""
        sz = self._rawsz
        if len(oid) != sz:
            raise ValueError("object id of the wrong length")
        lo, hi, w = self._ranges[oid[0]]
        m = self._map
        names = self._names
        if hi - lo > 4 * w:
            # Object ids are uniform: the id's next 32 bits place it within
            # its fan-out slice to within a few square roots of the slice's
            # size. Probe a window around that guess (on git.git the window
            # is left to the scan below at once); an id outside the window
            # narrows the search to the side it is on.
            guess = lo + ((int.from_bytes(oid[1:5], "big") * (hi - lo)) >> 32)
            a = guess - w
            if a > lo:
                p = names + a * sz
                if m[p : p + sz] <= oid:
                    lo = a
                else:
                    hi = a
            b = guess + w
            if b < hi:
                p = names + b * sz
                if m[p : p + sz] > oid:
                    hi = b
                else:
                    lo = b
        while hi - lo > SCAN_ENTRIES:
            mid = (lo + hi) >> 1
            p = names + mid * sz
            name = m[p : p + sz]
            if name < oid:
                lo = mid + 1
            elif name == oid:
                return self._nth_offset(mid)
            else:
                hi = mid
        # The last few names are scanned in C, not compared one by one in
        # Python: a match that is not at a name's start straddles two names.
        end = names + hi * sz
        p = m.find(oid, names + lo * sz, end)
        while p >= 0:
            nth, misaligned = divmod(p - names, sz)
            if not misaligned:
                return self._nth_offset(nth)
            p = m.find(oid, p + 1, end)
        raise KeyError(oid)


class PackReader:
    """Inflate objects of one dulwich ``Pack`` directly from its mmap.

    Or, with ``pack=None``, of the pack ``<base>.pack`` whose ``<base>.idx``
    is of version 2 (ValueError otherwise), without dulwich's ``Pack``: a
    helper that reads only such packs never imports dulwich's object store."""

    def __init__(self, pack, resolve_ref=None, *, base: str | None = None, rawsz: int = 20) -> None:
        self._index = None
        if pack is None:
            self._index = IndexV2(base + ".idx", rawsz)
            self._offset_of = self._index.offset
            data_path = base + ".pack"
        else:
            rawsz = pack.object_format.oid_length
            data_path = pack._data_path
            try:
                self._index = IndexV2(pack._idx_path, rawsz)
            except (OSError, ValueError, AttributeError):
                self._offset_of = pack.index.object_offset  # a version 1 index: dulwich's search
            else:
                self._offset_of = self._index.offset
        try:
            fd = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
        except BaseException:
            if self._index is not None:
                self._index.close()
            raise
        self._mv = memoryview(self._map)
        self._rawsz = rawsz
        self._resolve_ref = resolve_ref  # oid -> (type, bytes), for REF_DELTA bases elsewhere
        self._cache: OrderedDict[int, tuple[int, bytes]] = OrderedDict()
        self._cached = 0
        self._lock = allocate_lock()

    @property
    def index(self) -> IndexV2 | None:
        """The pack's version 2 index, searched here (None: dulwich searches a version 1 index)."""
        return self._index

    def release_pages(self, finished: bool = False) -> None:
        """Let go of the pack's pages this process has mapped (``MADV_DONTNEED``
        on the read-only mapping: they stay in the page cache, and a later
        read maps them again). Each page read through the mapping counts in
        the process's resident size, and the kernel maps 64 KiB around each
        one; reading the trees of 100,000 files mapped 180 MiB of a 350 MiB
        pack, more than the rest of the coordinator's memory. ``finished``:
        the reading is done for a while (the coordinator's tree walk), so its
        index's pages and the delta base cache go too (7 and 1.2 MiB of a
        100,000-file clone's peak); not after a helper's batch, whose next
        searches the index all over."""
        if _MADV_DONTNEED is not None:
            self._map.madvise(_MADV_DONTNEED)
            if finished and self._index is not None:
                self._index.release_pages()
        if finished:
            with self._lock:
                self._cache.clear()
                self._cached = 0

    def close(self) -> None:
        self._cache.clear()
        self._mv.release()
        self._map.close()
        if self._index is not None:
            self._index.close()

    def __contains__(self, oid: bytes) -> bool:
        """Whether this pack's index lists ``oid`` (nothing inflated)."""
        try:
            self._offset_of(oid)
        except KeyError:
            return False
        return True

    def get_raw(self, oid: bytes) -> tuple[int, bytes]:
        """(type number, content) of ``oid``; KeyError when this pack lacks it."""
        offset = self._offset_of(oid)
        return self._from_cache(offset) or self._object_at(offset, 0)

    def get_raw_or_stream(self, oid: bytes, limit: int):
        """``get_raw``, except that a non-delta entry of more than ``limit``
        bytes comes back as ``(type, (size, chunks))``: an iterator inflating
        it a bounded piece at a time (``packfile.c``'s pack_non_delta stream).
        Deltas are read whole: their base must be in memory anyway."""
        offset = self._offset_of(oid)
        type_num, size, pos = self._entry_header(offset)
        if type_num < OBJ_OFS_DELTA:
            # Not a delta (the common blob): inflated right here, without the
            # base cache's lock.
            if size > limit:
                return type_num, (size, self._inflate_iter(pos, size))
            return type_num, inflate(self._mv, pos, size)
        return self._from_cache(offset) or self._delta_at(offset, type_num, size, pos, 0)

    def _inflate_iter(self, pos: int, size: int, piece: int = 1 << 20):
        """Inflate ``size`` bytes at ``pos`` in pieces of at most ``piece`` bytes."""
        mv = self._mv
        raw = (mv[p : p + piece] for p in range(pos, len(mv), piece))
        return inflate_in_pieces(_inflate_mod.decompressobj(), raw, size, piece=piece)

    def _entry_header(self, offset: int) -> tuple[int, int, int]:
        """``unpack_object_header_buffer``: (type, inflated size, data offset)."""
        m = self._map
        pos = offset
        c = m[pos]
        type_num = (c >> 4) & 7
        size = c & 15
        shift = 4
        while c & 0x80:
            pos += 1
            c = m[pos]
            size |= (c & 0x7F) << shift
            shift += 7
        return type_num, size, pos + 1

    def _object_at(self, offset: int, depth: int) -> tuple[int, bytes]:
        """``unpack_entry``: the object at ``offset``, its delta chain applied."""
        type_num, size, pos = self._entry_header(offset)
        if type_num < OBJ_OFS_DELTA:
            return type_num, inflate(self._mv, pos, size)
        return self._delta_at(offset, type_num, size, pos, depth)

    def _delta_at(self, offset: int, type_num: int, size: int, pos: int, depth: int) -> tuple[int, bytes]:
        """The delta entry at ``offset`` (its header parsed: ``type_num``,
        ``size``, data at ``pos``) applied to its base, which comes from the
        cache or is read (and kept) through :meth:`_base`. The entry itself
        is not looked up in the cache here: its callers have done that
        (:meth:`get_raw`, :meth:`get_raw_or_stream`, :meth:`_base`)."""
        if depth > MAX_DELTA_DEPTH:
            raise ValueError("delta chain too long")
        m = self._map
        if type_num == OBJ_OFS_DELTA:
            c = m[pos]
            rel = c & 0x7F
            while c & 0x80:
                pos += 1
                c = m[pos]
                rel = ((rel + 1) << 7) | (c & 0x7F)
            pos += 1
            base = self._base(offset - rel, depth)
        elif type_num == OBJ_REF_DELTA:
            base_oid = bytes(m[pos : pos + self._rawsz])
            pos += self._rawsz
            try:
                base_offset = self._offset_of(base_oid)
            except KeyError:
                if self._resolve_ref is None:
                    raise
                base = self._resolve_ref(base_oid)
            else:
                base = self._base(base_offset, depth)
        else:
            raise ValueError(f"bad pack object type {type_num}")
        delta = inflate(self._mv, pos, size)
        return base[0], b"".join(apply_delta(base[1], delta))

    def _from_cache(self, offset: int) -> tuple[int, bytes] | None:
        """The object at ``offset`` if the delta base cache holds it (made
        the most recent). No lock: one dictionary read is atomic, and an
        object another thread evicts meanwhile is only moved if it is still
        there."""
        cache = self._cache
        obj = cache.get(offset)
        if obj is not None:
            try:
                cache.move_to_end(offset)
            except KeyError:
                pass
        return obj

    def _base(self, offset: int, depth: int) -> tuple[int, bytes]:
        """A delta base, through the LRU cache (``cache_or_unpack_entry``)."""
        obj = self._from_cache(offset)
        if obj is not None:
            return obj
        obj = self._object_at(offset, depth + 1)
        cache = self._cache
        n = len(obj[1])
        if n <= DELTA_BASE_CACHE_LIMIT:
            with self._lock:
                if offset not in cache:
                    cache[offset] = obj
                    self._cached += n
                    while self._cached > DELTA_BASE_CACHE_LIMIT:
                        _, old = cache.popitem(last=False)
                        self._cached -= len(old[1])
        return obj
