"""``oneway_merge``: the plan of a checkout that takes the target whatever
is there (``checkout -f``, a clone's checkout, a forced submodule update).

Kept apart from :mod:`plan`'s two-way merge, whose checks it shares
(:func:`plan.worktree_matches`, :func:`plan.vouched_for`): a oneway merge
keeps what already matches and rewrites the rest, refusing only where git's
``verify_uptodate`` does, for the files the user vouched for.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable

from .coresettings import DEFAULT_CORE, CoreSettings
from .index import S_IFGITLINK, Entry
from .index_file import CE_SKIP_WORKTREE, CE_SKIP_WORKTREE_IN_CORE, CE_VALID
from .plan import (
    ERROR_WOULD_OVERWRITE,
    Plan,
    PlanError,
    _changed_file,
    _stays_outside,
    _Worktree,
    vouched_for,
    worktree_matches,
)
from .tree import TreeFiles, entry_differs, value_entry

__all__ = ["plan_reset", "reset_needs_update"]


def reset_needs_update(e: Entry, st: os.stat_result | None, full: bytes, hash_name: str,
                       to_worktree: Callable[[Entry], bytes | None], racy_timestamp_ns: int,
                       to_git: Callable[[Entry, bytes], bytes | None] | None = None,
                       core: CoreSettings = DEFAULT_CORE) -> bool:
    """``oneway_merge``'s ``ie_match_stat`` for an entry the target keeps:
    rewritten unless its stat data (type, exec bit, times, inode, size)
    still match, and, when racy, its content too."""
    if st is None:
        return True
    if e.mode == S_IFGITLINK:
        return not stat_mod.S_ISDIR(st.st_mode)
    if not e.stat_matches(st, core.check_stat, core.trust_ctime) or not (e.size or not st.st_size):
        return True
    return not worktree_matches(e, full, st, hash_name, to_worktree, racy_timestamp_ns, core, to_git)


def plan_reset(
    target: TreeFiles,
    old: dict[bytes, Entry],
    top: bytes,
    hash_name: str,
    to_worktree: Callable[[Entry], bytes | None],
    racy_timestamp_ns: int,
    core: CoreSettings = DEFAULT_CORE,
    to_git: Callable[[Entry, bytes], bytes | None] | None = None,
    outside: Callable[[bytes], bool] | None = None,
    consume: bool = False,
) -> Plan:
    """``oneway_merge`` (``checkout -f``, clone): the target, whatever is there.

    Entries whose index entry and file already match the target are kept
    as they are (no rewrite, like git), and so is a skip-worktree entry the
    target holds alike; everything else is written (keeping the old entry's
    skip-worktree bit: ``merged_entry``), and tracked files that leave are
    removed. An entry the user vouched for (:func:`vouched_for`) to be
    replaced or removed must match its file (unless :func:`_stays_outside`):
    PlanError for the first that does not, in index order, where git stops.

    ``consume``: the caller reads the target's files no more (a clone's
    checkout, a ``-f`` switch with no submodule to move): the plan's entries
    replace the values in the target's own dictionary, which becomes
    :attr:`Plan.entries`, and the tree is left with none (the caller then
    forgets it: :meth:`repository.Repository.release_tree`). Two
    dictionaries of the same 100,000 paths were 10 MiB of a clone's peak.
    """
    plan = Plan()
    wt = _Worktree(top)
    tf = target.files
    if consume:
        plan.entries, target.files = tf, {}  # (a failure below leaves the tree empty, not half made of entries)
    vouched = [p for p, e in old.items() if vouched_for(e) and entry_differs(e, tf.get(p))
               and not _stays_outside(e, outside)]
    if vouched:
        changed = [p for p in vouched if _changed_file(old[p], wt, top, hash_name, to_worktree,
                                                         racy_timestamp_ns, core, to_git)]
        if changed:
            raise PlanError([(ERROR_WOULD_OVERWRITE, [min(changed)])], ["not_uptodate"])
    for path in sorted(tf):
        v, cur = tf[path], old.get(path)
        same = cur is not None and not entry_differs(cur, v)
        if same and (cur.ce_flags & CE_SKIP_WORKTREE_IN_CORE or not reset_needs_update(
                cur, wt.peek(path), top + path, hash_name, to_worktree, racy_timestamp_ns, to_git, core)):
            plan.entries[path] = cur  # (no new entry made for a path kept: most of a -f's)
            continue
        e = value_entry(path, v)
        if same:
            # add_entry adds the old entry itself, to be rewritten (CE_UPDATE): its flags, and its
            # stat data where nothing is written after all (a path the sparse patterns leave).
            e.flags, e.sd = cur.flags & CE_VALID, cur.sd
        elif cur is not None and cur.ce_flags & CE_SKIP_WORKTREE_IN_CORE:
            e.extended_flags = CE_SKIP_WORKTREE
        plan.entries[path] = e
        plan.write.append(e)
    for path in old:
        if path not in tf:
            plan.remove.append(path)
    plan.merged = []  # (every entry is the target's: none differs)
    return plan
