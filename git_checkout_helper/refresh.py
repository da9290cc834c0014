"""``refresh_index`` (read-cache.c) as ``git checkout <branch>`` runs it first.

Before its two-way merge, ``merge_working_tree`` refreshes the index
(``REFRESH_QUIET``): every stage-0 entry whose file's stat data no longer
matches but whose content still does takes the file's new stat data
(``ie_modified``: a file whose size differs from a known, non-zero size in
the entry is changed without its content being read, even when it would
convert to the same blob). The
entries a switch keeps therefore leave the checkout stat-clean (``git
diff-files`` says nothing of them), and the checks that follow see them up
to date without reading them again.

``-f`` does not refresh: ``oneway_merge`` with ``reset`` rewrites every
entry whose stat data does not match (``oneway.reset_needs_update``).

Writing the index then smudges the racily clean entries
(``smudge_racily_clean``), whatever the operation.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable
from itertools import filterfalse
from operator import attrgetter

from .coresettings import DEFAULT_CORE, CoreSettings
from .index import S_IFGITLINK, STAT_DATA, Entry, is_racy_stat, racy_from
from .plan import type_matches, vouched_for, worktree_matches

_UPTODATE = attrgetter("uptodate")

__all__ = ["any_racy", "fresh_test", "is_fresh", "refresh_entries", "refreshable", "smudge_racily_clean"]


def refreshable(e: Entry) -> bool:
    """Whether refresh looks at ``e`` at all: not a gitlink, not an entry
    the user vouches for (``plan.vouched_for``: CE_VALID, skip-worktree),
    whose stat data refresh leaves as they are."""
    return e.mode != S_IFGITLINK and not vouched_for(e)


def _stat_ok(e: Entry, st: os.stat_result, core: CoreSettings) -> bool:
    """``ie_match_stat`` without the racy check: the file's kind, mode and
    stat data are the entry's, compared as the ``core.*`` settings say."""
    return type_matches(e, st, core) and e.stat_matches(st, core.check_stat, core.trust_ctime)


def is_fresh(e: Entry, st: os.stat_result, racy_timestamp_ns: int, core: CoreSettings) -> bool:
    """Up to date by its stat data alone: they match the file's and are not
    racy. What ``preload_index`` marks, and refresh_entries' fast case."""
    return _stat_ok(e, st, core) and not is_racy_stat(racy_timestamp_ns, e.mtime_s)


def fresh_test(racy_timestamp_ns: int, core: CoreSettings) -> Callable[[Entry, os.stat_result], bool]:
    """:func:`is_fresh` for the entries of one index read, as one call per
    ``lstat`` (``fresh(entry, st)``), for the loops that ask it of every
    entry (the preload, the refresh: 100,000 calls on a big tree).

    The usual answer is found in one step: the file's kind and permission
    bits, whole-second times, inode, owner and size, exactly as the kernel
    gives them, equal to the entry's, and the mtime older than the index.
    Each of those compares at least what ``ie_match_stat`` compares, with
    any ``core.*`` setting (the 32-bit truncations it applies cannot make
    two equal values differ), so a yes is :func:`is_fresh`'s yes; anything
    else (a symlink's mode, a file whose mode bits are not the entry's
    0644 or 0755, a value beyond 32 bits) is left to :func:`is_fresh`. A
    third of its time on such loops: 0.26 us per entry against 0.86."""
    racy_s = racy_from(racy_timestamp_ns)

    unpack = STAT_DATA.unpack

    def fresh(e: Entry, st: os.stat_result) -> bool:
        mode, ino, _dev, _nlink, uid, gid, size, _atime, mtime, ctime = st
        cs, _, ms, _, _, e_ino, e_uid, e_gid, e_size = unpack(e.sd)
        if (mtime == ms and size == e_size and mode == e.mode and ino == e_ino and ctime == cs
                and uid == e_uid and gid == e_gid and mtime < racy_s):
            return True
        return is_fresh(e, st, racy_timestamp_ns, core)

    return fresh


def _below_symlink(top: bytes, path: bytes, seen: dict[bytes, bool]) -> bool:
    """``has_symlink_leading_path``: a leading directory of ``path`` is a
    symlink (one ``lstat`` a directory, ``seen`` keeping the answers)."""
    d = path.rpartition(b"/")[0]
    if not d:
        return False
    below = seen.get(d)
    if below is None:
        below = seen[d] = _below_symlink(top, d, seen) or os.path.islink(top + d)
    return below


def refresh_entries(entries: dict[bytes, Entry], top: bytes, hash_name: str,
                    to_worktree: Callable[[Entry], bytes | None], racy_timestamp_ns: int,
                    to_git: Callable[[Entry, bytes], bytes | None] | None = None,
                    core: CoreSettings = DEFAULT_CORE) -> None:
    """``refresh_cache_ent`` for each entry not up to date yet (a preload,
    :mod:`preload`, has marked those it found so): fill the stat data of
    unchanged files, in place (compared as the ``core.*`` settings say,
    :mod:`coresettings`). A file reached through a symlink is not the
    entry's, however alike: git's refresh takes it for missing."""
    fresh = fresh_test(racy_timestamp_ns, core)
    symlinked: dict[bytes, bool] = {}
    # (The entries a preload found up to date, most, are passed over in C.)
    for e in filterfalse(_UPTODATE, entries.values()):
        path = e.name
        if not refreshable(e):
            if e.mode != S_IFGITLINK:
                e.uptodate = True  # refresh_cache_ent: the user's word, marked up to date without a look
            continue
        if _below_symlink(top, path, symlinked):
            continue
        try:
            st = os.lstat(top + path)
        except OSError:
            continue
        if fresh(e, st):
            e.uptodate = True  # ce_mark_uptodate
            continue
        stat_ok = _stat_ok(e, st, core)
        if not stat_ok and e.size and e.size != st.st_size & 0xFFFFFFFF and not stat_mod.S_ISDIR(st.st_mode):
            continue  # ie_modified: DATA_CHANGED with a known size is a change, content unread
        if worktree_matches(e, top + path, st, hash_name, to_worktree, racy_timestamp_ns, core, to_git):
            if stat_ok:
                e.uptodate = True  # racily clean and unchanged: marked, its stat data left as they are
            else:
                e.fill_stat(st)


def any_racy(entries: list[Entry], timestamp_ns: int) -> bool:
    """Whether :func:`smudge_racily_clean` has anything to look at: an
    entry not up to date whose mtime is not older than ``timestamp_ns``.
    (Every entry up to date, the usual case after a checkout, is seen by a
    C loop: 100,000 entries each asked in Python took 5-8 ms.)"""
    return not all(map(_UPTODATE, entries)) and any(
        not e.uptodate and is_racy_stat(timestamp_ns, e.mtime_s) for e in entries)


def smudge_racily_clean(entries: list[Entry], top: bytes, hash_name: str,
                        to_worktree: Callable[[Entry], bytes | None], timestamp_ns: int,
                        to_git: Callable[[Entry, bytes], bytes | None] | None = None,
                        core: CoreSettings = DEFAULT_CORE) -> None:
    """``do_write_index``'s ``ce_smudge_racily_clean_entry``, in place.

    An entry not known up to date (neither written nor refreshed by this
    run) whose mtime is not older than the index read (``timestamp_ns``)
    and whose stat data still match a file that no longer holds it (the
    content compared with the attributes as they are now) gets size 0, so
    that git reads the file next time instead of trusting its stat data.
    """
    for e in entries:
        if e.uptodate or e.mode == S_IFGITLINK or not is_racy_stat(timestamp_ns, e.mtime_s):
            continue
        try:
            st = os.lstat(top + e.name)
        except OSError:
            continue
        if not _stat_ok(e, st, core):
            continue
        if not worktree_matches(e, top + e.name, st, hash_name, to_worktree, timestamp_ns, core, to_git):
            e.smudge()
