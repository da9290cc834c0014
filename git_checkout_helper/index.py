"""The index: reading it, filling stat data, writing it as git does.

Mirrors ``read-cache.c``: entries carry the stat data of the file written
(``fill_stat_data``: 32-bit truncated fields), the new index is written into
``index.lock`` (taken with ``O_EXCL`` *before* the work tree is touched, as
``repo_hold_locked_index`` does) and renamed over ``index`` atomically, so a
crash leaves either the old or the complete new index, never half of one.

Racy git (``do_write_index`` / ``ce_smudge_racily_clean_entry``): entries
written by this checkout are up to date (git marks them CE_UPTODATE) and are
never smudged; an entry carried over from the old index whose mtime is not
older than the old index file and whose file content no longer matches gets
its size zeroed, so the next ``git status`` looks at the content.

The file's format, read and written, is :mod:`index_file`'s; the cache-tree
(``TREE``) extension a checkout writes is made here from the trees it read
(:func:`build_cache_tree`: it costs nothing during checkout).
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
import struct
from collections.abc import Iterable

from .record import Record
from .wrapper import write_in_full

__all__ = [
    "CE_EXTENDED_SHIFT",
    "Entry",
    "IndexLock",
    "IndexLockedError",
    "IndexWriteError",
    "NO_STAT_DATA",
    "STAT_DATA",
    "SharedEntry",
    "build_cache_tree",
    "create_ce_mode",
    "cut_stat_data",
    "is_racy_stat",
    "pack_stat_data",
    "racy_from",
    "stat_data",
]

CE_NAMEMASK = 0x0FFF
CE_EXTENDED = 0x4000
#: cache.h's modes of the entries that are no regular file.
S_IFGITLINK = 0o160000
S_IFLNK = 0o120000
_S_IFMT = 0o170000
_S_IFDIR = 0o040000


def create_ce_mode(mode: int) -> int:
    """``create_ce_mode`` (cache.h): the mode an index entry gets for a tree
    entry's. A symlink or gitlink is that whatever its permission bits say;
    any other file is 100644 or 100755 by its owner's x bit. Trees written
    by early git hold 100664 and 100775 (git.git's own first commits), and
    git's index never does."""
    fmt = mode & _S_IFMT
    if fmt == S_IFLNK:
        return S_IFLNK
    if fmt in (_S_IFDIR, S_IFGITLINK):
        return S_IFGITLINK
    return 0o100755 if mode & 0o100 else 0o100644


_U32 = 0xFFFFFFFF


def cut_stat_data(cs: int, cn: int, ms: int, mn: int, dev: int, ino: int, uid: int, gid: int,
                  size: int) -> tuple[int, ...]:
    """``fill_stat_data``'s cut: the stat fields an index entry keeps, each an
    ``unsigned int`` (nanoseconds are below 10^9 already)."""
    return (cs & _U32, cn, ms & _U32, mn, dev & _U32, ino & _U32, uid & _U32, gid & _U32, size & _U32)


def stat_data(st) -> tuple[int, ...]:
    """``fill_stat_data``: the index's view of a stat, its fields cut to 32 bits.

    (ctime s, ctime ns, mtime s, mtime ns, dev, ino, uid, gid, size), from an
    ``os.stat_result`` or from a helper's :class:`wire.StatData`.
    """
    if isinstance(st, os.stat_result):
        cs, cn = divmod(st.st_ctime_ns, 1_000_000_000)
        ms, mn = divmod(st.st_mtime_ns, 1_000_000_000)
        return cut_stat_data(cs, cn, ms, mn, st.st_dev, st.st_ino, st.st_uid, st.st_gid, st.st_size)
    return cut_stat_data(st.ctime_sec, st.ctime_nsec, st.mtime_sec, st.mtime_nsec, st.dev, st.ino, st.uid,
                         st.gid, st.size)


#: An entry's stat data, packed as the index file holds them (its mode,
#: which the file keeps between ino and uid, apart): ctime s and ns, mtime s
#: and ns, dev, ino, uid, gid, size, each a big-endian 32-bit word.
STAT_DATA = struct.Struct(">9I")
#: The stat data of an entry that has none yet (read from a tree).
NO_STAT_DATA = bytes(STAT_DATA.size)
_WORD = struct.Struct(">I").unpack_from


def pack_stat_data(st) -> bytes:
    """:func:`stat_data`, packed as an :class:`Entry` keeps it (``STAT_DATA``)."""
    return STAT_DATA.pack(*stat_data(st))


def _stat_field(offset: int, doc: str) -> property:
    return property(lambda e: _WORD(e.sd, offset)[0], doc=doc)


#: Where the extended flags sit in :attr:`Entry.ce_flags`, as in git's
#: in-core ``ce_flags`` (on disk: ``(ce_flags & CE_EXTENDED_FLAGS) >> 16``).
CE_EXTENDED_SHIFT = 16
_ON_DISK = (1 << CE_EXTENDED_SHIFT) - 1
#: One int object for each distinct flags word (a handful), not one an entry.
_one_flags = {}.setdefault


class Entry:
    """One stage-0 index entry (``struct cache_entry``), object id raw.

    Its stat data are one packed ``bytes`` (``sd``, :data:`STAT_DATA`), read
    through the fields' names: nine int attributes took 72 bytes of slots
    and about six int objects an entry, a sixth of the coordinator's memory
    at 100,000 files; and the index file is read and written by slices.

    Six slots, 80 bytes an entry. As git's ``ce_flags``, one word
    (:attr:`ce_flags`) holds the on-disk flags an entry keeps (CE_VALID, the
    stage) and, shifted up by :data:`CE_EXTENDED_SHIFT` as git keeps them
    in core, its on-disk extended flags (CE_INTENT_TO_ADD,
    CE_SKIP_WORKTREE); :attr:`flags` and
    :attr:`extended_flags` read and set their parts, and the loops over
    every entry test the word itself. ``uptodate`` (CE_UPTODATE, in core
    only) keeps a slot of its own: it is set for every entry written and
    read for every entry refreshed. A position in a split index's shared
    part (``ce->index``) only an entry read from one has
    (:class:`SharedEntry`). Eight slots were 96 bytes: 1.6 MiB of a
    100,000-file clone's peak."""

    __slots__ = ("name", "mode", "oid", "sd", "ce_flags", "uptodate")

    #: ``ce->index``: 1 + position in the shared index of a split index, 0 if none (:class:`SharedEntry`).
    base = 0

    def __init__(self, name: bytes, mode: int, oid: bytes, sd: bytes = NO_STAT_DATA, flags: int = 0,
                 extended_flags: int = 0, uptodate: bool = False) -> None:
        self.name = name
        self.mode = mode
        self.oid = oid
        self.sd = sd
        if flags or extended_flags:
            f = flags | extended_flags << CE_EXTENDED_SHIFT
            self.ce_flags = _one_flags(f, f)
        else:
            self.ce_flags = 0
        self.uptodate = uptodate

    @property
    def flags(self) -> int:
        """The high bits of the on-disk flags an entry keeps (CE_VALID, the stage)."""
        return self.ce_flags & _ON_DISK

    @flags.setter
    def flags(self, value: int) -> None:
        f = self.ce_flags & ~_ON_DISK | value
        self.ce_flags = _one_flags(f, f)

    @property
    def extended_flags(self) -> int:
        """The on-disk extended flags (CE_INTENT_TO_ADD, CE_SKIP_WORKTREE)."""
        return self.ce_flags >> CE_EXTENDED_SHIFT

    @extended_flags.setter
    def extended_flags(self, value: int) -> None:
        f = self.ce_flags & _ON_DISK | value << CE_EXTENDED_SHIFT
        self.ce_flags = _one_flags(f, f)

    def copy(self, base: int | None = None) -> Entry:
        """Another entry with the same fields, at shared position ``base``
        (by default this one's: :class:`SharedEntry` when it has one)."""
        base = self.base if base is None else base
        f = self.name, self.mode, self.oid, self.sd, self.flags, self.extended_flags, self.uptodate
        return SharedEntry(*f, base) if base else Entry(*f)

    #: The fields, as the constructor takes them (and ``base``).
    FIELDS = ("name", "mode", "oid", "sd", "flags", "extended_flags", "uptodate", "base")

    def fields(self) -> tuple:
        """Every field's value, in :attr:`FIELDS`' order."""
        return tuple([getattr(self, f) for f in self.FIELDS])

    def __eq__(self, other):
        if not isinstance(other, Entry):
            return NotImplemented
        return self.fields() == other.fields()

    __hash__ = None  # (mutable)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self.FIELDS)})"

    ctime_s = _stat_field(0, "ctime, whole seconds (cut to 32 bits)")
    ctime_ns = _stat_field(4, "ctime, nanoseconds")
    mtime_s = _stat_field(8, "mtime, whole seconds (cut to 32 bits)")
    mtime_ns = _stat_field(12, "mtime, nanoseconds")
    dev = _stat_field(16, "device (cut to 32 bits)")
    ino = _stat_field(20, "inode (cut to 32 bits)")
    uid = _stat_field(24, "owner (cut to 32 bits)")
    gid = _stat_field(28, "group (cut to 32 bits)")
    size = _stat_field(32, "size (cut to 32 bits; 0: smudged, or not known)")

    def become(self, other: Entry) -> None:
        """This entry made ``other`` in place (its mode, id, stat data,
        flags and CE_UPTODATE; its path and place stay): what a merge
        that lets the index go does with an entry it replaces
        (``twoway.plan_switch``'s ``let_go``). The new entry then sits
        where the old one was in memory, among its neighbours in index
        order; made apart, in the memory the old ones left, the new entries
        made the switch's later passes over them slower."""
        self.mode, self.oid, self.sd, self.ce_flags, self.uptodate = (
            other.mode, other.oid, other.sd, other.ce_flags, other.uptodate)

    def become_new(self, mode: int, oid: bytes) -> None:
        """:meth:`become` ``Entry(name, mode, oid)``: no stat data, no flags."""
        self.mode, self.oid, self.sd, self.ce_flags, self.uptodate = mode, oid, NO_STAT_DATA, 0, False

    def fill_stat(self, st) -> None:
        """``fill_stat_cache_info``, from an ``os.stat_result`` or a helper's
        :class:`wire.StatData` (always a regular file). Only a regular file is
        then up to date, as in git: a symlink just written is still checked
        for racy stat data when the index is written (``do_write_index``),
        and goes to the split part of a split index."""
        self.sd = pack_stat_data(st)
        self.uptodate = not isinstance(st, os.stat_result) or stat_mod.S_ISREG(st.st_mode)

    def fill_stat_data(self, sd: bytes) -> None:
        """:meth:`fill_stat` from stat data packed already (a helper's
        result as the coordinator keeps it: a regular file, up to date)."""
        self.sd = sd
        self.uptodate = True

    def smudge(self) -> None:
        """``ce_smudge_racily_clean_entry``: size 0, so that git reads the
        file next time instead of trusting its stat data."""
        self.sd = self.sd[:32] + b"\0\0\0\0"

    def stat_matches(self, st, check_stat: bool = True, trust_ctime: bool = True) -> bool:
        """``match_stat_data`` for a regular file, symlink or gitlink, as git
        is built by default: times in whole seconds (no ``USE_NSEC``), no
        ``dev`` (no ``USE_STDEV``). ``check_stat`` false
        (``core.checkStat=minimal``): mtime and size only; ``trust_ctime``
        false (``core.trustctime``): no ctime."""
        cs, _, ms, _, _, ino, uid, gid, size = STAT_DATA.unpack(self.sd)
        if type(st) is os.stat_result:
            # The common case (refresh_index's lstat of every entry), field by
            # field without building stat_data's tuple: a third of the cost.
            if ms != (st.st_mtime_ns // 1_000_000_000) & _U32 or size != st.st_size & _U32:
                return False
            if not check_stat:
                return True
            if ino != st.st_ino & _U32 or uid != st.st_uid & _U32 or gid != st.st_gid & _U32:
                return False
            return not trust_ctime or cs == (st.st_ctime_ns // 1_000_000_000) & _U32
        sd = stat_data(st)
        if not check_stat:
            return ms == sd[2] and size == sd[8]
        if not trust_ctime:
            return ms == sd[2] and (ino, uid, gid, size) == sd[5:]
        return cs == sd[0] and ms == sd[2] and (ino, uid, gid, size) == sd[5:]

    def same_object(self, other: Entry | None) -> bool:
        return other is not None and self.mode == other.mode and self.oid == other.oid


class SharedEntry(Entry):
    """An entry of a split index's shared part: :class:`Entry` with the
    position it has there (``ce->index``, 1 + the position; 0 once it no
    longer matches), which only a split index's entries need a slot for."""

    __slots__ = ("base",)

    def __init__(self, name: bytes, mode: int, oid: bytes, sd: bytes = NO_STAT_DATA, flags: int = 0,
                 extended_flags: int = 0, uptodate: bool = False, base: int = 0) -> None:
        super().__init__(name, mode, oid, sd, flags, extended_flags, uptodate)
        self.base = base


def is_racy_stat(timestamp_ns: int, mtime_s: int) -> bool:
    """``is_racy_stat``: an entry whose recorded mtime is not older than the
    index file it was read from (``timestamp_ns``, its mtime; 0: no index
    file) cannot be trusted by its stat data alone. In whole seconds, as git
    is built by default (no ``USE_NSEC``)."""
    return racy_from(timestamp_ns) <= mtime_s


def racy_from(timestamp_ns: int) -> int:
    """The whole second from which :func:`is_racy_stat` finds a recorded
    mtime racy: the index file's (``timestamp_ns``), or one no mtime
    reaches when there was no index file (0)."""
    return (timestamp_ns // 1_000_000_000) & _U32 if timestamp_ns else 1 << 63


class IndexLockedError(Exception):
    """git's "Unable to create '<path>/index.lock': File exists." with its hint."""

    def __init__(self, lock_path: str) -> None:
        super().__init__(
            f"Unable to create '{lock_path}': File exists.\n\n"
            "Another git process seems to be running in this repository, e.g.\n"
            "an editor opened by 'git commit'. Please make sure all processes\n"
            "are terminated then try again. If it still fails, a git process\n"
            "may have crashed in this repository earlier:\n"
            "remove the file manually to continue."
        )
        self.lock_path = lock_path


class IndexWriteError(Exception):
    """The index could not be locked or written (git's words); the old one stays."""


class IndexLock:
    """``lockfile.c`` for the index: ``O_EXCL`` create, write, rename or roll back."""

    def __init__(self, index_path: str) -> None:
        self.index_path = index_path
        self.lock_path = index_path + ".lock"
        try:
            self.fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            raise IndexLockedError(self.lock_path) from None
        except OSError as e:  # unable_to_lock_message
            raise IndexWriteError(f"Unable to create '{os.path.abspath(self.lock_path)}': {e.strerror}") from None
        self.active = True

    def commit(self, chunks: Iterable[bytes]) -> None:
        """Write the whole new index (``chunks``, as they come) and rename it
        into place; on failure (a full disk, a file size limit) the lock is
        removed, the old index stays, and :class:`IndexWriteError` says so as
        git does. Whatever else stops the chunks removes the lock too."""
        try:
            for chunk in chunks:
                write_in_full(self.fd, chunk)
            os.close(self.fd)
            self.fd = -1
            os.rename(self.lock_path, self.index_path)
        except OSError:
            self.rollback()
            raise IndexWriteError("unable to write new index file") from None
        except BaseException:
            self.rollback()
            raise
        self.active = False

    def rollback(self) -> None:
        if not self.active:
            return
        self.active = False
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1
        try:
            os.unlink(self.lock_path)
        except OSError as e:
            if e.errno != errno.ENOENT:
                raise


class ReadIndex(Record):
    entries: dict  # name -> Entry (stage 0 only)
    version: int
    mtime_ns: int  # istate->timestamp; 0 when there was no index
    unmerged: list  # names with stage > 0
    source: object = None  # index_state.IndexState: what the file held beyond the entries



def build_cache_tree(trees: dict[bytes, tuple[bytes, list[bytes], int]], invalid: set[bytes]) -> bytes:
    """The ``TREE`` extension (cache-tree.c ``write_one``).

    ``trees`` maps a directory (b"" for the root) to (raw tree id, names of its
    direct subtrees, number of index entries below it); directories in
    ``invalid`` are written with entry count -1 and no id, as git does for
    trees that no longer match the index.
    """
    out: list[bytes] = []
    _write_one(trees, invalid, out, b"", b"")
    return b"".join(out)


def _write_one(trees: dict[bytes, tuple[bytes, list[bytes], int]], invalid: set[bytes], out: list[bytes],
               path: bytes, name: bytes) -> None:
    """``write_one`` for the directory ``path`` and those below it (not a
    closure: :func:`cli.start_program`)."""
    oid, subs, count = trees[path]
    # cache-tree keeps subtrees sorted by (length, name): subtree_name_cmp.
    subs = sorted(subs, key=lambda s: (len(s), s))
    if path in invalid:
        out.append(name + b"\0" + f"-1 {len(subs)}\n".encode())
    else:
        out.append(name + b"\0" + f"{count} {len(subs)}\n".encode() + oid)
    for s in subs:
        _write_one(trees, invalid, out, path + b"/" + s if path else s, s)
