"""What a checkout writes and removes, and whether that is safe.

Mirrors the decisions of ``unpack-trees.c`` for the operations we offer:

* ``twoway_merge`` (branch switch, :mod:`twoway`): a path whose entry is the
  same in the old and the new commit keeps its index entry and work-tree
  file, local changes included; a path that changes is rewritten when the
  index still matches the old commit (or already matches the new one) and
  the file is unmodified, otherwise the switch is refused
  (``verify_uptodate``). New paths must not hit untracked files
  (``verify_absent``), ignored ones excepted, as ``git checkout``
  overwrites those.
* ``oneway_merge`` (``-f``, clone, :mod:`oneway`): every entry of the
  target is written unless the index entry and file already match it.

This module holds what both share: the :class:`Plan` they make, the
refusals (:class:`PlanError`) and the looks at the work tree. Nothing here
touches the work tree except to look at it (``lstat``, reading files that
must be compared).
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable

from .coresettings import DEFAULT_CORE, CoreSettings
from .hash_algo import new_hash
from .index import S_IFGITLINK, S_IFLNK, Entry, is_racy_stat
from .index_file import CE_SKIP_WORKTREE_IN_CORE, CE_VALID
from .iopool import UNSEEN, IoPool, is_dir, leading_dirs

__all__ = ["Plan", "PlanError", "vouched_for", "worktree_matches"]

S_IFREG = 0o100000

ERROR_WOULD_OVERWRITE = "Your local changes to the following files would be overwritten by checkout:"
ERROR_NOT_UPTODATE_DIR = "Updating the following directories would lose untracked files in them:"
ERROR_WOULD_LOSE_UNTRACKED = "The following untracked working tree files would be overwritten by checkout:"
ERROR_WOULD_LOSE_UNTRACKED_REMOVED = "The following untracked working tree files would be removed by checkout:"
ERROR_WOULD_LOSE_SUBMODULE = "Cannot update submodule:"
HINT_COMMIT_OR_STASH = "Please commit your changes or stash them before you switch branches."
HINT_MOVE_OR_REMOVE = "Please move or remove them before you switch branches."


class PlanError(Exception):
    """A refused checkout: git's grouped messages, ready to print.

    ``groups`` maps a header to its paths, or is a list of (header, paths)
    in git's order (``display_error_msgs``), where one header may come
    twice: git keeps "index differs" and "file modified" apart under the
    same words. ``self.groups`` is always the merged mapping.

    ``kinds`` names each pair's git error type (``unpack_trees_error_types``
    as :data:`PLUMBING_ERRORS` keys them), for the one-line messages a
    plumbing merge prints instead (a submodule's ``read-tree``).
    """

    def __init__(self, groups: dict[str, list[bytes]] | list[tuple[str, list[bytes]]],
                 kinds: list[str] | None = None) -> None:
        pairs = list(groups.items()) if isinstance(groups, dict) else list(groups)
        self.pairs, self.kinds = pairs, kinds
        self.groups: dict[str, list[bytes]] = {}
        for header, paths in pairs:
            self.groups.setdefault(header, []).extend(paths)
        lines = []
        for header, paths in pairs:
            lines.append(f"error: {header}")
            lines.extend(f"\t{p.decode('utf-8', 'surrogateescape')}" for p in sorted(paths))
            if header == ERROR_WOULD_OVERWRITE:
                lines.append(HINT_COMMIT_OR_STASH)
            elif header in (ERROR_NOT_UPTODATE_DIR, ERROR_WOULD_LOSE_SUBMODULE):
                lines.append("")  # git's message for it ends in the list, and error() adds a newline
            else:
                lines.append(HINT_MOVE_OR_REMOVE)
        lines.append("Aborting")
        super().__init__("\n".join(lines))

    def first_plumbing_error(self, prefix: bytes = b"") -> str:
        """The one error a merge without ``show_all_errors`` stops at: the
        first refused path in traversal order, as ``add_rejected_path``
        prints it (``super_prefixed``)."""
        path, kind = min((p, k) for k, (_, paths) in zip(self.kinds or [], self.pairs, strict=True) for p in paths)
        return "error: " + PLUMBING_ERRORS[kind] % (prefix + path).decode("utf-8", "surrogateescape")


#: ``unpack_plumbing_errors``: what a merge without porcelain messages says.
PLUMBING_ERRORS = {
    "overwrite": "Entry '%s' would be overwritten by merge. Cannot merge.",
    "not_uptodate": "Entry '%s' not uptodate. Cannot merge.",
    "not_uptodate_dir": "Updating '%s' would lose untracked files in it",
    "untracked_overwritten": "Untracked working tree file '%s' would be overwritten by merge.",
    "untracked_removed": "Untracked working tree file '%s' would be removed by merge.",
}


class Plan:
    """The new index, and the work-tree changes that produce it."""

    __slots__ = ("entries", "write", "remove", "absent", "merged", "merged_values", "resolve_undo")

    def __init__(self) -> None:
        self.entries: dict[bytes, Entry] = {}  # the new index, stage 0
        self.write: list[Entry] = []  # entries whose files are (re)written, in index order
        self.remove: list[bytes] = []  # paths whose files are deleted
        #: New paths verify_absent found nothing at (a switch's): nothing of
        #: the user's to remove there (see updates.Checkout._cleared).
        self.absent: set[bytes] = set()
        #: When not None, the only paths whose entries may differ from the
        #: target's: a switch from an index that holds exactly HEAD's files
        #: keeps, at every path HEAD and the target hold alike, an entry
        #: that is the target's too (unpack.target_differences then compares
        #: these alone, not the whole index); a oneway merge (-f, a clone)
        #: leaves none that differs.
        self.merged: list[bytes] | None = None
        #: The target's values (:func:`tree.tree_value`, None: no such path)
        #: at the merged paths, in :attr:`merged`'s order, when the plan took
        #: the target's dictionary of files over (:func:`twoway.plan_switch`'s
        #: ``consume``); else None.
        self.merged_values: list[bytes | None] | None = None
        #: (path, mode, raw id) of HEAD's entries that git's result records
        #: as resolved at stage 3 (:meth:`twoway._TwowayMerge._record_resolve_undo`).
        self.resolve_undo: list[tuple[bytes, int, bytes]] = []

    @property
    def carried(self) -> set[bytes]:
        """Entries kept from the old index: in the new index, not rewritten."""
        return self.entries.keys() - {e.name for e in self.write}


def blob_hash(data: bytes, hash_name: str) -> bytes:
    header = b"blob %d\0" % len(data)
    h = new_hash(hash_name, header, len(header) + len(data))
    h.update(data)
    return h.digest()


def _mode_of(st: os.stat_result) -> int:
    if stat_mod.S_ISLNK(st.st_mode):
        return S_IFLNK
    if stat_mod.S_ISDIR(st.st_mode):
        return S_IFGITLINK
    return 0o100755 if st.st_mode & 0o100 else 0o100644


def type_matches(entry: Entry, st: os.stat_result, core: CoreSettings = DEFAULT_CORE) -> bool:
    """``ce_match_stat_basic``'s type and mode part: the file is of the
    entry's kind (a regular file for a symlink under ``core.symlinks=false``)
    with its x bit (unless ``core.fileMode=false``)."""
    mode, have = entry.mode, _mode_of(st)
    return have == mode or (
        (mode == S_IFLNK and not core.symlinks and have & 0o170000 == S_IFREG)
        or (mode & 0o170000 == S_IFREG and have & 0o170000 == S_IFREG and not core.filemode)
    )


def worktree_matches(
    entry: Entry,
    path: bytes,
    st: os.stat_result,
    hash_name: str,
    to_worktree: Callable[[Entry], bytes | None],
    racy_timestamp_ns: int,
    core: CoreSettings = DEFAULT_CORE,
    to_git: Callable[[Entry, bytes], bytes | None] | None = None,
    stat_only: bool = False,
) -> bool:
    """``ie_match_stat`` then ``ce_modified_check_fs``: is the file still ``entry``?

    ``stat_only``: ``ie_match_stat`` alone, as ``verify_uptodate`` asks once
    ``refresh_index`` has run: stat data that differ mean modified; only a
    racy entry has its content looked at.

    Stat data first; when it differs (or the entry is racy) the content is
    compared: with ``to_git`` as git does, the file converted for the index
    hashed against the entry (cleancheck.py); otherwise, or when ``to_git``
    cannot tell, the file's blob hash against the entry, and, for converted
    files, the file against the blob converted for the work tree
    (``to_worktree``).
    ``core``: ``core.symlinks=false`` takes a regular file for a symlink
    entry (its content compared with the link's blob), ``core.fileMode=false``
    ignores the x bit, ``core.checkStat``/``core.trustctime`` narrow the stat
    comparison (:mod:`coresettings`).
    """
    mode = entry.mode
    if mode == S_IFGITLINK:
        return stat_mod.S_ISDIR(st.st_mode)
    if not type_matches(entry, st, core):
        return False
    have = _mode_of(st)
    stat_ok = entry.stat_matches(st, core.check_stat, core.trust_ctime) and (entry.size or not st.st_size)
    racy = is_racy_stat(racy_timestamp_ns, entry.mtime_s)
    if stat_ok and not racy:
        return True
    if stat_only and not stat_ok:
        return False
    if have == S_IFLNK:
        return blob_hash(os.readlink(path), hash_name) == entry.oid
    if mode == S_IFLNK:  # core.symlinks=false: ce_compare_data on the file holding the target
        with open(path, "rb") as f:
            return blob_hash(f.read(), hash_name) == entry.oid
    if st.st_size > 1 << 30:
        return False
    with open(path, "rb") as f:
        data = f.read()
    if to_git is not None:
        clean = to_git(entry, data)
        if clean is not None:
            return blob_hash(clean, hash_name) == entry.oid
    if blob_hash(data, hash_name) == entry.oid:
        return True
    converted = to_worktree(entry)
    return converted is not None and converted == data


_NOT_A_DIR = object()
#: What :class:`_Worktree` keeps of a real directory looked at as a
#: leading one: that it is one. Its ``stat_result`` (half a KiB with its
#: fields' objects) is read if the path itself is looked at later, which
#: is seldom (a path the plan adds or removes that is a directory in the
#: work tree; the pool's lookups ask for such paths themselves); leading
#: directories are many: a switch of 100,000 files bringing in 5,000 kept
#: 1.6 MiB of them.
_A_DIRECTORY = object()


def _look(full: bytes):
    """``lstat``, its ENOENT None and ENOTDIR _NOT_A_DIR; another error
    :data:`iopool.UNSEEN` (raised by the serial lookup, at its turn)."""
    try:
        return os.lstat(full)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return _NOT_A_DIR
    except OSError:
        return UNSEEN


class _Worktree:
    """Cached ``lstat`` of the work tree, relative to its top."""

    def __init__(self, top: bytes) -> None:
        self.top = top
        self._cache: dict[bytes, os.stat_result | None] = {}
        self.notdir: set[bytes] = set()  # lstat failed with ENOTDIR: a file took a leading dir's place

    def lstat(self, path: bytes, keep_file: bool = True) -> os.stat_result | None:
        st = self._cache.get(path, UNSEEN)
        if st is not UNSEEN and st is not _A_DIRECTORY:
            return st
        st = _look(self.top + path)
        if st is UNSEEN:
            return os.lstat(self.top + path)  # (its error raised here, at its turn)
        if keep_file or st is None or st is _NOT_A_DIR or stat_mod.S_ISDIR(st.st_mode):
            return self._keep(path, st)
        return st

    def peek(self, path: bytes) -> os.stat_result | None:
        """:meth:`lstat` of a path the plan looks at once: a file's stat is
        not kept (an absence, a directory or ENOTDIR is, as the checks
        after it ask). A far switch looks at every file that leaves, a
        ``-f`` at every file it keeps: 8.7 MiB of stat objects for a switch
        of 100,000 files, kept to its end."""
        return self.lstat(path, keep_file=False)

    def _keep(self, path: bytes, st, lead: bool = False) -> os.stat_result | None:
        """Cache what :func:`_look` found (ENOTDIR: absent, and noted; a
        real directory looked at as a leading one (``lead``):
        :data:`_A_DIRECTORY`); returns it as :meth:`lstat` does."""
        if st is _NOT_A_DIR:
            self.notdir.add(path)
            st = None
        self._cache[path] = _A_DIRECTORY if lead and is_dir(st) else st
        return st

    def _lead(self, path: bytes):
        """:meth:`lstat` of a leading directory: :data:`_A_DIRECTORY` for a real one."""
        st = self._cache.get(path, UNSEEN)
        if st is UNSEEN:
            st = _look(self.top + path)
            if st is UNSEEN:
                return os.lstat(self.top + path)  # (its error raised here, at its turn)
            self._keep(path, st, lead=True)
            st = self._cache[path]
        return st

    def prefetch(self, paths: list[bytes], io: IoPool) -> None:
        """The lstats :meth:`leading_file` and :meth:`lstat` are about to
        make for ``paths``, made together (:mod:`iopool`): the leading
        directories first, then the paths below directories only. A path
        below a missing directory is missing too, without a request
        (:meth:`leading_file`'s rule; a sparse checkout's entries outside
        its cone). The cache then holds
        what the serial lookups would find (nothing changes the work tree
        while a plan is made); a path below a file or symlink, or below an
        error other than ENOENT, is left to the serial lookup, at its turn."""
        cache = self._cache
        self._fill(list({d: None for path in paths for d in leading_dirs(path) if d not in cache}), io, lead=True)
        ask = []
        for path in paths:
            if cache.get(path, _A_DIRECTORY) is not _A_DIRECTORY:
                continue
            for d in leading_dirs(path):
                st = cache.get(d, UNSEEN)
                if st is not _A_DIRECTORY and (st is UNSEEN or not is_dir(st)):
                    if st is None and d not in self.notdir:
                        self._keep(path, None)  # below a missing directory: missing too
                    break
            else:
                ask.append(path)
        self._fill(ask, io)

    def _fill(self, paths: list[bytes], io: IoPool, lead: bool = False) -> None:
        top = self.top
        for path, st in zip(paths, io.map(_look, [top + p for p in paths]), strict=True):
            if st is not UNSEEN:
                self._keep(path, st, lead)

    def leading_file(self, path: bytes) -> bytes | None:
        """The first leading component of ``path`` that exists and is not a directory."""
        i = path.find(b"/")
        cache = self._cache
        while i != -1:
            st = self._lead(path[:i])
            if st is None:
                # Nothing exists below a missing directory: the deeper
                # components and the path itself (which verify_absent looks
                # up next) are known absent without a syscall each; a switch
                # bringing in new directories adds thousands of such paths.
                while i != -1:
                    i = path.find(b"/", i + 1)
                    cache.setdefault(path if i == -1 else path[:i], None)
                return None
            if st is not _A_DIRECTORY and not stat_mod.S_ISDIR(st.st_mode):
                return path[:i]
            i = path.find(b"/", i + 1)
        return None

    def untracked_below(self, d: bytes, tracked: set[bytes], ignored: Callable[[bytes], bool]) -> list[bytes]:
        """Files under directory ``d`` that the index does not know and are not ignored."""
        out = []
        top = self.top
        for root, dirs, files in os.walk(top + d):
            rel = root[len(top) :]
            if os.path.basename(root) == b".git":
                dirs[:] = []
                continue
            for name in files:
                p = rel + b"/" + name
                if p not in tracked and not ignored(p):
                    out.append(p)
            keep = []
            for name in dirs:
                p = rel + b"/" + name
                if os.path.islink(top + p):
                    if p not in tracked and not ignored(p):
                        out.append(p)
                else:
                    keep.append(name)
            dirs[:] = keep
        return out


def vouched_for(e: Entry) -> bool:
    """CE_VALID (assume-unchanged) or CE_SKIP_WORKTREE: the user's word that
    the file does not matter, which ``verify_uptodate_1`` checks anyway
    before the file is overwritten or removed, even under ``-f``."""
    return bool(e.ce_flags & (CE_VALID | CE_SKIP_WORKTREE_IN_CORE))


def _stays_outside(e: Entry, outside: Callable[[bytes], bool] | None) -> bool:
    """``verify_uptodate``'s shortcut: a skip-worktree entry still outside
    a sparse checkout's patterns (``outside``) is not looked at."""
    return bool(e.ce_flags & CE_SKIP_WORKTREE_IN_CORE) and outside is not None and outside(e.name)


def _changed_file(e: Entry, wt: _Worktree, top: bytes, hash_name: str, to_worktree, racy_timestamp_ns: int,
                  core: CoreSettings, to_git) -> bool:
    """``verify_uptodate_1`` past its shortcuts: the file's stat data (or,
    when racy, content) are not the entry's; only ENOENT is no change."""
    st = wt.lstat(e.name)
    if st is None:
        return e.name in wt.notdir
    if e.mode == S_IFGITLINK:
        return False  # (a submodule out of sync with the index is no loss here)
    return not worktree_matches(e, top + e.name, st, hash_name, to_worktree, racy_timestamp_ns, core, to_git,
                                stat_only=True)


def _file_is(e: Entry, full: bytes, st: os.stat_result | None, hash_name: str, to_worktree,
             core: CoreSettings = DEFAULT_CORE) -> bool:
    """Whether the work tree already holds exactly what ``e`` would write.

    Overwriting such a file loses nothing, so it is not a conflict (git is
    stricter here; this is what lets a re-run finish an interrupted switch).
    "Exactly" is the bytes the checkout would write, after conversion: a
    file holding the blob's bytes where the checkout would write them
    converted (LF to CRLF, to UTF-16) is the user's, and is not matched.
    """
    as_file = e.mode == S_IFLNK and not core.symlinks  # written as a file holding the target
    if st is None or e.mode == S_IFGITLINK or _mode_of(st) != (S_IFREG | 0o644 if as_file else e.mode):
        return False
    if e.mode == S_IFLNK and not as_file:
        return blob_hash(os.readlink(full), hash_name) == e.oid
    if st.st_size > 1 << 30:
        return False
    with open(full, "rb") as f:
        data = f.read()
    converted = to_worktree(e)
    if converted is not None:
        return converted == data
    return blob_hash(data, hash_name) == e.oid
