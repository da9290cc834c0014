"""``refresh_index`` (read-cache.c) before a branch switch, as
``merge_working_tree`` runs it (``REFRESH_QUIET``): an entry whose stat
data no longer matches its file (a ``chmod`` under ``core.fileMode=false``,
a ``touch``, a copy back) but whose content still does takes the file's new
stat data, so the index written after the switch is clean for ``git
diff-files`` as git's is. Entries whose content differs stay as they are
(the switch's own checks decide about them); gitlinks and assume-valid
entries are not looked at, as in git.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .index import Entry

__all__ = ["refresh_index"]

S_IFGITLINK = 0o160000
CE_VALID = 0x8000


def refresh_index(entries: dict[bytes, Entry], top: bytes, check_stat: bool, trust_ctime: bool,
                  matches: Callable[[Entry, bytes, os.stat_result], bool]) -> int:
    """Refresh ``entries`` in place; how many took new stat data.
    ``matches(entry, full path, stat)`` is the content check (plan.worktree_matches)."""
    n = 0
    for e in entries.values():
        if e.mode == S_IFGITLINK or e.flags & CE_VALID:
            continue
        full = top + e.name
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if e.stat_matches(st, check_stat, trust_ctime):
            continue
        if matches(e, full, st):
            e.fill_stat(st)
            n += 1
    return n
