"""What ``git checkout-index -a [-f] [--prefix=<p>]`` writes, decided before anything is written.

Mirrors, for each index entry in order, ``checkout_entry_ca`` (entry.c) as
``builtin/checkout-index.c:checkout_all`` calls it:

* ``check_path``: a path below a symlink counts as absent; otherwise
  ``lstat``. An entry whose file exists and is unchanged (``ie_match_stat``:
  stat data, file type and exec bit, and the content of a racily clean
  entry; a gitlink is unchanged when a directory stands there) is skipped; a changed one is, without ``-f``,
  reported as ``<prefix><path> already exists, no checkout`` (no
  ``error:`` prefix, the path as given) and the command exits 1.
* ``create_directories``: without ``-f`` a leading directory that cannot be
  made because something that is not a real directory (a file, a symlink)
  stands there is fatal: ``cannot create directory at '<path>': File
  exists``, 128. git dies at that entry having written the ones before it;
  we refuse before writing anything (nothing of the user's is touched
  either way; only which of the earlier entries were written differs).
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable

from .index import S_IFGITLINK, Entry
from .wrapper import show_path

__all__ = ["select_entries"]


def _lstat(path: bytes) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _blocking_leading(out_top: bytes, name: bytes) -> tuple[bytes | None, bool]:
    """(the first leading component of ``name`` that exists and is not a
    real directory, whether a symlink leads there): ``has_dirs_only_path``."""
    i = name.find(b"/")
    while i != -1:
        st = _lstat(out_top + name[:i])
        if st is None:
            return None, False
        if not stat_mod.S_ISDIR(st.st_mode):
            return name[:i], stat_mod.S_ISLNK(st.st_mode)
        i = name.find(b"/", i + 1)
    return None, False


def select_entries(out_top: bytes, prefix: bytes, entries: list[Entry], force: bool,
                   unchanged: Callable[[Entry, os.stat_result], bool]) -> tuple[list[Entry], list[str], str | None]:
    """(entries to write, the "already exists" lines, the fatal message or None).

    ``unchanged(e, st)``: ``ie_match_stat`` of the entry's file (plan.py's
    ``worktree_matches`` with ``stat_only``).
    """
    todo: list[Entry] = []
    exists: list[str] = []
    for e in entries:
        lead, _ = _blocking_leading(out_top, e.name)
        st = None if lead is not None else _lstat(out_top + e.name)
        if st is not None:
            # With a prefix the file is out/<name>, whose stat data the index
            # never had: changed unless it is a directory for a gitlink.
            if (stat_mod.S_ISDIR(st.st_mode) if e.mode == S_IFGITLINK and prefix else
                    not prefix and unchanged(e, st)):
                continue
            if not force:
                exists.append(f"{show_path(prefix + e.name)} already exists, no checkout")
                continue
        elif lead is not None and not force:
            return todo, exists, f"fatal: cannot create directory at '{show_path(prefix + lead)}': File exists"
        todo.append(e)
    return todo, exists, None
