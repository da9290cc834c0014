"""The split index (``split-index.c``): ``link``, ``sharedindex.<hash>``.

A split index is a small ``index`` file whose ``link`` extension names a
shared index (``$GIT_DIR/sharedindex.<hash>``, holding most entries) and
carries two EWAH bitmaps over the shared index's positions: entries
deleted, and entries replaced by the split file's first entries (written
with empty names). The split file's other entries are added.

Reading (``read_link_extension``, ``read_index_from``, ``merge_base_index``)
gives every merged entry its shared position (``ce->index``, 1-based, 0 for
none). Writing (``write_locked_index`` with ``prepare_to_write_split_index``,
``too_many_not_shared_entries``, ``write_shared_index``,
``clean_shared_index_files``, ``freshen_shared_index``) decides, as git
does, between keeping the shared index (new split part with delete/replace
bitmaps) and writing a new shared index.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from .ewah import EwahError, ewah_bits, ewah_read, ewah_serialize
from .index import Entry, SharedEntry, is_racy_stat
from .index_file import (
    IndexFile,
    IndexFormatError,
    index_file_chunks,
    index_order_key,
    parse_index,
    serialize_index_file,
)
from .wrapper import rename_tempfile

__all__ = ["SplitIndex", "read_split_index", "write_split_index"]


class SplitIndex:
    """``struct split_index``: the shared index (None when ``base_oid`` is null)."""

    __slots__ = ("base_oid", "base", "base_path", "replaced")

    def __init__(self, base_oid: bytes, base: IndexFile | None, base_path: str | None,
                 replaced: frozenset = frozenset()) -> None:
        self.base_oid = base_oid
        self.base = base
        self.base_path = base_path
        # Shared positions the split file replaced: replace_entry marks them
        # CE_UPDATE_IN_BASE, so they stay in the split file when written back.
        self.replaced = replaced


def _corrupt(msg: str) -> IndexFormatError:
    return IndexFormatError(f"error: {msg}\nfatal: index file corrupt")


def freshen(path: str) -> None:
    """``freshen_shared_index``: mark the shared index used (its mtime)."""
    try:
        os.utime(path)
    except OSError:
        pass


def read_split_index(idx: IndexFile, link: bytes, gitdir: str, rawsz: int) -> tuple[SplitIndex, list[Entry]]:
    """``read_link_extension`` + ``read_index_from`` + ``merge_base_index``."""
    if len(link) < rawsz:
        raise _corrupt("corrupt link extension (too short)")
    base_oid = link[:rawsz]
    rest = link[rawsz:]
    delete: list[int] = []
    replace: list[int] = []
    if rest:
        try:
            _bs, words, _rlw, used = ewah_read(rest)
            delete = ewah_bits(words)
        except EwahError as e:
            raise _corrupt(f"{e}\nerror: corrupt delete bitmap in link extension") from None
        try:
            _bs, words, _rlw, used2 = ewah_read(rest, used)
            replace = ewah_bits(words)
        except EwahError as e:
            raise _corrupt(f"{e}\nerror: corrupt replace bitmap in link extension") from None
        if used + used2 != len(rest):
            raise _corrupt("garbage at the end of link extension")
    if base_oid == b"\0" * rawsz:
        return SplitIndex(base_oid, None, None), [e for e in idx.entries]
    hexid = base_oid.hex()
    base_path = os.path.join(gitdir, f"sharedindex.{hexid}")
    try:
        with open(base_path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise IndexFormatError(f"fatal: {base_path}: index file open failed: No such file or directory") from None
    except OSError as e:
        raise IndexFormatError(f"fatal: {base_path}: index file open failed: {e.strerror}") from None
    base = parse_index(data, rawsz, base_path)
    if base.checksum != base_oid:
        raise IndexFormatError(f"fatal: broken index, expect {hexid} in {base_path}, got {base.checksum.hex()}")
    if any(sig in (b"link", b"sdir") for sig, _ in base.extensions):
        raise _corrupt(f"shared index {base_path} has a link or sdir extension")
    freshen(base_path)
    # merge_base_index: base entries numbered from 1; replacements take the
    # split file's first entries in order, deletions drop, the rest is added.
    n = len(base.entries)
    merged: list[Entry | None] = [
        SharedEntry(e.name, e.mode, e.oid, e.sd, e.flags, e.extended_flags, False, i + 1)
        for i, e in enumerate(base.entries)
    ]
    own = idx.entries
    deleted = set()
    for k, pos in enumerate(replace):
        if pos >= n:
            raise _corrupt(f"position for replacement {pos} exceeds base index size {n}")
        if k >= len(own):
            raise _corrupt(f"too many replacements ({k} vs {len(own)})")
        src = own[k]
        if src.name:
            raise _corrupt(f"corrupt link extension, entry {pos} should have zero length name")
        dst = merged[pos]
        merged[pos] = SharedEntry(dst.name, src.mode, src.oid, src.sd, src.flags, src.extended_flags, False, pos + 1)
    for pos in delete:
        if pos >= n:
            raise _corrupt(f"position for delete {pos} exceeds base index size {n}")
        if pos in replace:
            raise _corrupt(f"entry {pos} is marked as both replaced and deleted")
        deleted.add(pos)
    entries = [e for i, e in enumerate(merged) if i not in deleted]
    added = own[len(replace):]
    for i, e in enumerate(added):
        if not e.name:
            raise _corrupt(f"corrupt link extension, entry {len(replace) + i} should have non-zero length name")
    if added:
        # add_index_entry(ADD_CACHE_OK_TO_ADD | SKIP_DFCHECK): by (name, stage),
        # a same-named entry of the same stage replaced.
        table = {index_order_key(e): e for e in entries}
        for e in added:
            table[index_order_key(e)] = e
        entries = [table[k] for k in sorted(table)]
    return SplitIndex(base_oid, base, base_path, frozenset(replace)), entries


def _ondisk_same(a: Entry, b: Entry) -> bool:
    """``compare_ce_content``: stat data, mode, on-disk flags and object id."""
    return (a.sd, a.mode, a.oid, a.ce_flags) == (b.sd, b.mode, b.oid, b.ce_flags)


def _racy(e: Entry, timestamp_ns: int) -> bool:
    """``is_racy_timestamp``: gitlinks never are."""
    return e.mode != 0o160000 and is_racy_stat(timestamp_ns, e.mtime_s)


def too_many_not_shared_entries(entries: list[Entry], max_split: int) -> bool:
    """``too_many_not_shared_entries``; ``max_split`` -1 is the default 20."""
    if max_split == -1:
        max_split = 20
    if max_split == 0:
        return True
    if max_split == 100:
        return False
    not_shared = sum(1 for e in entries if not e.base)
    return len(entries) * max_split < not_shared * 100


def _expiry(value: str | None, now: float) -> float:
    """``approxidate`` for the values ``splitIndex.sharedIndexExpire`` takes
    in practice: "never" (0: keep all), "now", "<n>.<unit>.ago"; anything
    else keeps every shared index (never deleting one git would keep)."""
    v = (value or "2.weeks.ago").strip().lower()
    if v in ("never", "false"):
        return 0
    if v == "now":
        return now
    parts = v.replace(" ", ".").split(".")
    units = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800,
             "month": 2592000, "year": 31536000}
    if len(parts) == 3 and parts[2] == "ago" and parts[0].isdigit():
        unit = parts[1].rstrip("s")
        if unit in units:
            return now - int(parts[0]) * units[unit]
    return 0


def clean_shared_index_files(gitdir: str, current_hex: str, expire: str | None) -> None:
    """``clean_shared_index_files``: shared indexes not used since the expiry go."""
    expiration = _expiry(expire, time.time())
    if not expiration:
        return
    try:
        names = os.listdir(gitdir)
    except OSError:
        return
    for name in names:
        if not name.startswith("sharedindex.") or name[len("sharedindex."):] == current_hex:
            continue
        p = os.path.join(gitdir, name)
        try:
            if os.stat(p).st_mtime <= expiration:
                os.unlink(p)
        except OSError:
            pass


def write_split_index(
    entries: list[Entry],
    split: SplitIndex | None,
    *,
    version: int,
    extensions: list[tuple[bytes, bytes]],
    rawsz: int,
    gitdir: str,
    timestamp_ns: int,
    max_split: int,
    expire: str | None,
    new_shared: bool,
    ieot_blocks: int = 0,
    eoie: bool = False,
) -> Iterator[bytes]:
    """``write_locked_index`` for an index that stays split: the bytes of
    the new split ``index``, in chunks (a new ``sharedindex.*`` written first
    when git would write one)."""
    base = split.base if split is not None else None
    if base is None or new_shared or too_many_not_shared_entries(entries, max_split):
        # write_shared_index: every entry goes to a new shared index, the
        # split part keeps none (racy ones aside).
        shared = serialize_index_file(version, entries, [], rawsz, ieot_blocks, eoie)
        oid = shared[-rawsz:]
        hexid = oid.hex()
        path = os.path.join(gitdir, f"sharedindex.{hexid}")
        tmp = os.path.join(gitdir, f"sharedindex_{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        rename_tempfile(fd, tmp, path, shared)
        clean_shared_index_files(gitdir, hexid, expire)
        base_entries = entries
        new = [SharedEntry(e.name, e.mode, e.oid, e.sd, e.flags, e.extended_flags, e.uptodate, i + 1)
               for i, e in enumerate(entries)]
        entries = new
        base_oid = oid
        fresh = True
    else:
        base_entries = base.entries
        base_oid = split.base_oid
        fresh = False
    # prepare_to_write_split_index
    nbase = len(base_entries)
    matched: dict[int, Entry] = {}
    replace_pos: list[int] = []
    for e in entries:
        if not e.base:
            continue
        if e.base > nbase:
            raise IndexFormatError(f"fatal: entry refers to shared position {e.base} beyond {nbase}")
        b = base_entries[e.base - 1]
        if e.name != b.name:
            e.base = 0
            continue
        matched[e.base - 1] = e
    delete: list[int] = []
    out: list[Entry] = []
    for i in range(nbase):
        e = matched.get(i)
        if e is None:
            delete.append(i)
            continue
        b = base_entries[i]
        # A racily clean entry goes to the split part, where do_write_index
        # can smudge it; CE_UPTODATE (Entry.uptodate) as git sets it.
        update = (not fresh and (i in split.replaced or not _ondisk_same(e, b))) or (
            not e.uptodate and _racy(e, timestamp_ns))
        if update:
            replace_pos.append(i)
            out.append(e)
    strip = set(range(len(out)))
    out.extend(e for e in entries if not e.base)
    link = base_oid + ewah_serialize(delete) + ewah_serialize(replace_pos)
    exts = [(s, d) for s, d in extensions if s != b"link"] + [(b"link", link)]
    if not fresh and split is not None and split.base_path:
        freshen(split.base_path)
    return index_file_chunks(version, out, exts, rawsz, ieot_blocks, eoie, strip)
