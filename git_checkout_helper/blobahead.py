"""Blobs inflated ahead: while a big switch merges, a forked child reads the
blobs its helpers will most likely write, into memory the helpers share.

What git lacks. git's workers start when the queue is complete; ours are
forked before the merge (:meth:`checkout.parallel.ParallelCheckout.start_helpers_ahead`)
and then wait for their first items while the coordinator merges alone,
the second CPU idle: 0.4 s of a 100,000-file switch. Reading a blob (pack
lookup, inflate, delta) is about half of a helper's work per file. So,
once the target tree is known, a child (:func:`run_async.start_async`)
reads the regular files the target holds otherwise than the index, in
index order (the order they are handed out), into an :class:`Arena`:
anonymous shared memory made before the helpers were forked, so that it is
theirs too. When the first items go to the helpers, the coordinator tells
the child to stop (:meth:`BlobsAhead.stop`), waits for its word that it
has, and only then sends them: what the arena holds is final before any
helper looks at it. A record is counted once it is whole, so one the child
was writing when it was killed (stuck past :data:`STOP_WAIT`) is not. A
helper takes a blob from the arena (:meth:`Arena.index`) instead of the pack.

Whatever the child reads is what :meth:`odb.ObjectDatabase.read_blob` gives
for that id, and a blob is the same bytes whoever reads it; a guess that
turns out wrong (a path the merge keeps, a local change) only costs the
child's time. The child reads with an object database of its own (never
the coordinator's open files, whose offsets a fork shares), fetches
nothing (a blob a partial clone lacks is left out), and stops at the
arena's end.
"""

from __future__ import annotations

import mmap
import select
import struct
from collections.abc import Iterable, Mapping

from .run_async import read_async, start_async, stop_async

__all__ = ["ARENA_BYTES", "MIN_ENTRIES", "Arena", "BlobsAhead", "likely_written"]

#: The arena's size: the most blob bytes read ahead. At 100,000 files a
#: merge leaves the child time for about 10,000 blobs of 7.6 KB; only the
#: pages written are memory, shared by the helpers.
ARENA_BYTES = 64 << 20
#: Index entries from which a switch reads blobs ahead: below it the merge
#: is over in a few tens of milliseconds, about what a fork of the
#: coordinator costs it in copied page tables and pages.
MIN_ENTRIES = 20_000
#: A blob larger than this is left to the helper (it may stream it).
MAX_BLOB = 1 << 20
#: Seconds the coordinator waits for the child to finish the blob it is
#: reading when told to stop (a blob takes it tens of microseconds).
STOP_WAIT = 0.05

_COUNT = struct.Struct("=Q")  # records complete, at the arena's start
_STOP = _COUNT.size  # then a byte the coordinator sets to stop the writer
_RECORDS = _STOP + 8
_SIZE = struct.Struct("=I")  # each record: its blob's size, its id, the blob


class Arena:
    """Anonymous memory shared with every process forked after it is made.
    One writer (the child) appends records and then counts them, until
    it is told to stop; readers look only after it said it has (see the
    module docstring)."""

    def __init__(self, size: int = ARENA_BYTES) -> None:
        self.map = mmap.mmap(-1, size)  # MAP_SHARED | MAP_ANONYMOUS: pages come as they are written

    def count(self) -> int:
        return _COUNT.unpack_from(self.map, 0)[0]

    def fill(self, read_blob, oids: Iterable[bytes]) -> int:
        """Append the blob of each of ``oids`` (once each) while it fits;
        ``read_blob(oid)``: its bytes, or an exception to leave it out."""
        m, pos, count, seen = self.map, _RECORDS, 0, set()
        for oid in oids:
            if m[_STOP]:
                break
            if oid in seen:
                continue
            seen.add(oid)
            try:
                data = read_blob(oid)
            except Exception:  # noqa: BLE001 - missing, corrupt: the helper reads it, and says so
                continue
            start = pos + _SIZE.size + len(oid)
            end = start + len(data)
            if len(data) > MAX_BLOB:
                continue
            if end > len(m):
                break
            _SIZE.pack_into(m, pos, len(data))
            m[pos + _SIZE.size:start] = oid
            m[start:end] = data
            pos = end
            count += 1
            _COUNT.pack_into(m, 0, count)  # counted once whole
        return count

    def index(self, oid_size: int) -> dict[bytes, tuple[int, int]]:
        """Each record's blob id: where its bytes are, ``(start, end)``."""
        m, pos, out = self.map, _RECORDS, {}
        for _ in range(self.count()):
            (n,) = _SIZE.unpack_from(m, pos)
            start = pos + _SIZE.size + oid_size
            out[m[pos + _SIZE.size:start]] = (start, start + n)
            pos = start + n
        return out

    def close(self) -> None:
        self.map.close()


def likely_written(index: Mapping, files: Mapping[bytes, tuple[int, bytes]]) -> Iterable[bytes]:
    """The ids of the regular files in ``files`` (a target tree's, index
    order) that ``index`` (path: entry) holds otherwise or not at all: what
    a two-way merge writes when the work tree is clean."""
    for path, (mode, oid) in files.items():
        if mode & 0o170000 == 0o100000:
            e = index.get(path)
            if e is None or e.oid != oid:
                yield oid


class BlobsAhead:
    """The child filling an arena (see the module docstring)."""

    def __init__(self, arena: Arena, open_odb, oids: Iterable[bytes]) -> None:
        """``open_odb()``: a new object database for the child; ``oids``:
        what to read, computed in the child (:func:`likely_written`)."""
        self.arena = arena

        def compute() -> bytes:
            arena.fill(open_odb().read_blob, oids)
            return b""

        self._child: tuple[int, int] | None = start_async(compute)

    def stop(self) -> int:
        """Tell the child to stop and wait for its word that it has, which
        comes after its last write to the arena (a pipe: what it wrote
        before is seen by whoever hears from it after); how many blobs the
        arena holds (idempotent). The child's exit is not waited for here
        (freeing its copy of this process takes it milliseconds):
        :meth:`close` reaps it. A child still in one blob after
        ``STOP_WAIT`` seconds (a large one) is killed and reaped instead."""
        if self._child is not None and self._child[1] >= 0:
            self.arena.map[_STOP] = 1
            pid, fd = self._child
            if select.select([fd], [], [], STOP_WAIT)[0]:
                self._child = (pid, -1)
                read_async(fd)  # (None: it died short, and writes nothing more either)
            else:
                self.close()
        return self.arena.count()

    def close(self) -> None:
        """Stop (killed, when not stopped already) and reap the child; idempotent."""
        if self._child is not None:
            child, self._child = self._child, None
            stop_async(*child)
