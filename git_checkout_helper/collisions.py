"""Paths that turn out to share one file, as a clone finds and reports them.

On a case-insensitive filesystem ``File_x`` and ``file_x`` are one file: a
helper's ``O_EXCL`` create of the second fails (COLLIDED) and the
coordinator writes it again over the first. ``entry.c``
``mark_colliding_entries`` marks, before that rewrite, the path being
written and the other path whose recorded stat data match the file there;
clone's ``checkout`` lists the marked paths in index order.
"""

from __future__ import annotations

import os

from .coresettings import CoreSettings
from .index import Entry

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["Collisions"]


class Collisions:
    """The ``CE_MATCHED`` marks of one checkout."""

    def __init__(self, core: CoreSettings) -> None:
        self.core = core
        self.matched: set[bytes] = set()

    def mark(self, e: Entry, st: os.stat_result, written: list[Entry]) -> None:
        """``mark_colliding_entries``: ``e`` is about to replace ``st``, a file
        another path of this checkout wrote; both are marked, the other found
        by its stat data. (git also takes a path equal under
        ``core.ignoreCase``; where the filesystem folds case the stat data
        match anyway.)"""
        self.matched.add(e.name)
        for dup in written:
            if dup is e or dup.name in self.matched or not dup.uptodate:
                continue
            if dup.stat_matches(st, self.core.check_stat, self.core.trust_ctime):
                self.matched.add(dup.name)
                break

    def report(self, entries: list[Entry], err: TextIO) -> None:
        """Clone's warning, the marked paths in index order."""
        if not self.matched:
            return
        lines = ["the following paths have collided (e.g. case-sensitive paths",
                 "on a case-insensitive filesystem) and only one from the same",
                 "colliding group is in the working tree:", ""]
        lines.extend(f"  '{e.name.decode('utf-8', 'replace')}'" for e in entries if e.name in self.matched)
        err.write("warning: " + "\n".join(lines) + "\n")
