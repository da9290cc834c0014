"""What a checkout writes and removes, and whether that is safe.

Mirrors the decisions of ``unpack-trees.c`` for the operations we offer:

* ``twoway_merge`` (branch switch): a path whose entry is the same in the old
  and the new commit keeps its index entry and work-tree file, local changes
  included; a path that changes is rewritten when the index still matches the
  old commit (or already matches the new one) and the file is unmodified,
  otherwise the switch is refused (``verify_uptodate``). New paths must not
  hit untracked files (``verify_absent``), ignored ones excepted, as
  ``git checkout`` overwrites those.
* ``oneway_merge`` (``-f``, clone): every entry of the target is written
  unless the index entry and file already match it.

Nothing here touches the work tree except to look at it (``lstat``, reading
files that must be compared). The result is a :class:`Plan`.
"""

from __future__ import annotations

import os
import stat as stat_mod
from bisect import bisect_left
from collections.abc import Callable, Iterator

from .coresettings import DEFAULT_CORE, CoreSettings
from .hash_algo import new_hash
from .index import S_IFGITLINK, S_IFLNK, Entry, is_racy_stat
from .index_file import CE_SKIP_WORKTREE, CE_SKIP_WORKTREE_IN_CORE, CE_VALID
from .iopool import UNSEEN, IoPool, is_dir, leading_dirs
from .tree import REGULAR_FILE, TreeFiles, entry_differs, value_entry

__all__ = ["Plan", "PlanError", "plan_switch", "vouched_for", "worktree_matches"]

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

    __slots__ = ("entries", "write", "remove", "absent", "merged", "resolve_undo")

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
        #: (path, mode, raw id) of HEAD's entries that git's result records
        #: as resolved at stage 3 (:meth:`_TwowayMerge._record_resolve_undo`).
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
        try:
            return self._cache[path]
        except KeyError:
            pass
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

    def _keep(self, path: bytes, st) -> os.stat_result | None:
        """Cache what :func:`_look` found (ENOTDIR: absent, and noted)."""
        if st is _NOT_A_DIR:
            self.notdir.add(path)
            st = None
        self._cache[path] = st
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
        self._fill(list({d: None for path in paths for d in leading_dirs(path) if d not in cache}), io)
        ask = []
        for path in paths:
            if path in cache:
                continue
            for d in leading_dirs(path):
                st = cache.get(d, UNSEEN)
                if st is UNSEEN or not is_dir(st):
                    if st is None and d not in self.notdir:
                        self._keep(path, None)  # below a missing directory: missing too
                    break
            else:
                ask.append(path)
        self._fill(ask, io)

    def _fill(self, paths: list[bytes], io: IoPool) -> None:
        top = self.top
        for path, st in zip(paths, io.map(_look, [top + p for p in paths]), strict=True):
            if st is not UNSEEN:
                self._keep(path, st)

    def leading_file(self, path: bytes) -> bytes | None:
        """The first leading component of ``path`` that exists and is not a directory."""
        i = path.find(b"/")
        while i != -1:
            st = self.lstat(path[:i])
            if st is None:
                # Nothing exists below a missing directory: the deeper
                # components and the path itself (which verify_absent looks
                # up next) are known absent without a syscall each; a switch
                # bringing in new directories adds thousands of such paths.
                cache = self._cache
                while i != -1:
                    i = path.find(b"/", i + 1)
                    cache.setdefault(path if i == -1 else path[:i], None)
                return None
            if not stat_mod.S_ISDIR(st.st_mode):
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


def plan_switch(
    head: TreeFiles | None,
    target: TreeFiles,
    old: dict[bytes, Entry],
    top: bytes,
    hash_name: str,
    to_worktree: Callable[[Entry], bytes | None],
    racy_timestamp_ns: int,
    ignored: Callable[[bytes], bool],
    core: CoreSettings = DEFAULT_CORE,
    to_git: Callable[[Entry, bytes], bytes | None] | None = None,
    ignored_in_subdir: Callable[[bytes], bool] | None = None,
    refreshed: bool = False,
    io: IoPool | None = None,
    outside: Callable[[bytes], bool] | None = None,
) -> Plan:
    """``twoway_merge`` for every path, then the safety checks; raises PlanError.

    ``ignored`` is ``is_excluded`` with the standard excludes;
    ``ignored_in_subdir`` what ``verify_clean_subdirectory`` counts as
    ignored in a directory the checkout replaces (default: ``ignored``).
    ``refreshed``: ``old`` went through ``refresh_index`` (refresh.py), so
    an entry whose stat data still differ is modified (``verify_uptodate``).
    ``io``: the work tree is latency-bound; the lstats of the merge and of
    its ``verify_absent`` checks are then made together, before the first
    path is merged (:meth:`_TwowayMerge.merge`). ``head`` None: the
    index ``old`` holds exactly HEAD's files (a cache tree valid for HEAD's
    tree), which are then read from its entries (sets :attr:`Plan.merged`).
    ``outside``: a sparse checkout's test of a path outside its patterns:
    a new path there is not written, so ``verify_absent`` lets it be
    whatever is in its way (``CE_NEW_SKIP_WORKTREE``).
    """
    m = _TwowayMerge(old, top, hash_name, to_worktree, racy_timestamp_ns, ignored,
                     ignored if ignored_in_subdir is None else ignored_in_subdir, core, to_git, refreshed)
    m.outside = outside
    differing = m.merge(None if head is None else head.files, target.files, io)
    if head is None:
        m.plan.merged = differing
    if outside is not None:
        # A sparse checkout's merge checks no new path (merged_entry sets
        # CE_NEW_SKIP_WORKTREE on every new entry first): what it refuses is
        # refused before any new path is looked at, and the entries below a
        # new file's directory are merged as any others.
        m.verify_absent_removed()
        m.refuse()
        m.verify_absent()
    else:
        m.verify_absent()
        m.verify_absent_removed()
    m.refuse()
    return m.plan


class _TwowayMerge:
    """One switch's ``twoway_merge`` (:meth:`merge`), its ``verify_absent``
    checks of the paths it adds and removes, and the refusals they found,
    grouped by git's error kinds (:meth:`refuse`, ``display_error_msgs``)."""

    def __init__(self, old: dict[bytes, Entry], top: bytes, hash_name: str,
                 to_worktree: Callable[[Entry], bytes | None], racy_timestamp_ns: int,
                 ignored: Callable[[bytes], bool], ignored_in_subdir: Callable[[bytes], bool],
                 core: CoreSettings, to_git: Callable[[Entry, bytes], bytes | None] | None,
                 refreshed: bool) -> None:
        self.old, self.top, self.hash_name, self.to_worktree = old, top, hash_name, to_worktree
        self.racy_timestamp_ns, self.core, self.to_git, self.refreshed = racy_timestamp_ns, core, to_git, refreshed
        self.ignored, self.ignored_in_subdir = ignored, ignored_in_subdir
        self.plan = Plan()
        self.wt = _Worktree(top)
        self.tracked = old  # (a path in the index: tracked; not copied into a set, 4 MiB at 100,000 paths)
        self.overwrite: list[bytes] = []  # ERROR_WOULD_OVERWRITE: the index differs (reject_merge)
        self.not_uptodate: list[bytes] = []  # ERROR_NOT_UPTODATE_FILE: the file differs (verify_uptodate)
        self.untracked: list[bytes] = []
        self.same_nu: list[bytes] = []  # would be not_uptodate / untracked, but hold the target's bytes (_file_is)
        self.same_un: list[bytes] = []
        self.untracked_removed: list[bytes] = []  # ERROR_WOULD_LOSE_UNTRACKED_REMOVED
        self.staged_gone: list[bytes] = []
        self.leads: set[bytes] = set()  # refused as the leading file of a deeper path
        self.leads_removed: set[bytes] = set()
        self.lead_entries: set[bytes] = set()  # the deeper paths refused so: git looks no further below them
        self.lose_dirs: list[bytes] = []
        self._names: list[bytes] | None = None  # the index's paths, sorted (_consume_subdirectory)
        self._removing: set[bytes] | None = None  # plan.remove's paths (_consume_subdirectory)
        self.index_is_head = False  # (merge: HEAD's files read from the index)
        #: A sparse checkout's test of a path outside its patterns (CE_NEW_SKIP_WORKTREE), or None.
        self.outside: Callable[[bytes], bool] | None = None

    def _vouched_changed(self, cur: Entry) -> bool | None:
        """``verify_uptodate`` of an entry the user vouched for: None for
        another entry; False when it :func:`_stays_outside`; else whether
        its file changed."""
        if not vouched_for(cur):
            return None
        if _stays_outside(cur, self.outside):
            return False
        return _changed_file(cur, self.wt, self.top, self.hash_name, self.to_worktree, self.racy_timestamp_ns,
                             self.core, self.to_git)

    def modified(self, cur: Entry) -> bool:
        vouched = self._vouched_changed(cur)
        if vouched is not None:
            return vouched
        if self.refreshed and cur.uptodate:
            return False  # verify_uptodate_1: CE_UPTODATE, which refresh_index set, is believed without an lstat
        st = self.wt.lstat(cur.name)
        if st is None:
            # verify_uptodate_1: only ENOENT is "deleted locally, nothing to
            # lose"; ENOTDIR means a user's file stands where a leading
            # directory was, and is refused like a modified file.
            return cur.name in self.wt.notdir
        return not worktree_matches(cur, self.top + cur.name, st, self.hash_name, self.to_worktree,
                                    self.racy_timestamp_ns, self.core, self.to_git, stat_only=self.refreshed)

    def merge(self, hf: dict | None, tf: dict, io: IoPool | None = None) -> list[bytes]:
        """``twoway_merge`` of each path of HEAD, the target and the index;
        returns the paths HEAD and the target hold otherwise (the ones merged).

        A path the two commits hold alike (or neither holds) keeps whatever
        the index has; those are most paths, so they are found all at once:
        the paths whose (mode, id) differ: the target's paths HEAD holds
        otherwise or not at all, and HEAD's the target lacks (one lookup a
        path: a third of the time of the symmetric difference of the two
        item views, which hashes every (path, (mode, id)) pair; 120 ms at
        100,000 files). Only they are merged one by one, in index order.
        (``plan.entries`` is then the old index's order with the merged
        paths after it: its readers sort it or look paths up.)

        ``hf`` None: HEAD's files are the index's entries; they are compared
        with the target's as they stand, not copied into a dictionary of
        their own first (90 ms of a 100,000-file switch), and the index
        is HEAD at every path.

        ``io`` (a latency-bound work tree): the lstats that the merge and
        the checks after it are about to make one by one are made together
        first (:meth:`_looked_at`, :meth:`_Worktree.prefetch`): on a
        1 ms-a-request filesystem a near switch of 5,000 files had its 100
        leaving files looked at one at a time, 180 ms."""
        plan, wt, old, top = self.plan, self.wt, self.old, self.top
        # Each list in its dictionary's order, which is index order (a tree's
        # flattened walk, or an index): sorting the two runs costs a merge.
        self.index_is_head = hf is None
        if hf is None:
            in_index = old.get
            differing = [path for path, v in tf.items()  # (entry_differs, inline for 100644)
                         if (e := in_index(path)) is None
                         or (v != e.oid if e.mode == REGULAR_FILE else entry_differs(e, v))]
            differing += [path for path in old if path not in tf]
        else:
            in_head = hf.get
            differing = [path for path, v in tf.items() if in_head(path) != v]
            differing += [path for path in hf if path not in tf]
        if io is not None:
            wt.prefetch(self._looked_at(differing, tf), io)
        plan.entries.update(old)
        for path in differing:
            plan.entries.pop(path, None)
        for path in sorted(differing):
            t, cur = tf.get(path), old.get(path)
            if t is not None and not entry_differs(cur, t):
                plan.entries[path] = cur  # index already has the new version
                continue
            te = value_entry(path, t) if t is not None else None
            if te is not None and cur is not None and cur.ce_flags & CE_SKIP_WORKTREE_IN_CORE:
                te.extended_flags = CE_SKIP_WORKTREE  # merged_entry: "migrate old flags over"
            if hf is not None and entry_differs(cur, hf.get(path)):  # the index is not HEAD here
                if cur is not None or t is not None:
                    self.overwrite.append(path)
                else:
                    # Staged deletion of a path the target drops too (deleted_entry
                    # without an index entry): an untracked file there would be
                    # removed, so verify_absent.
                    self.staged_gone.append(path)
                continue
            if te is None and cur is not None and cur.mode != S_IFGITLINK:
                # deleted_entry's verify_absent_if_directory: a directory took
                # the leaving file's place; untracked files in it would be lost
                # (check_ok_to_remove: unless the directory is excluded). A
                # directory without any is still a change (verify_uptodate, below).
                # Below a symlink the path is absent for it (check_leading_path);
                # verify_uptodate then looks through the link.
                st = wt.peek(path)
                if (st is not None and stat_mod.S_ISDIR(st.st_mode) and not self.ignored(path)
                        and wt.leading_file(path) is None
                        and wt.untracked_below(path, self.tracked, self.ignored_in_subdir)):
                    self.lose_dirs.append(path)
                    continue
            if cur is not None and cur.mode != S_IFGITLINK and self.modified(cur):
                # (A path outside a sparse checkout's patterns is not written but
                # removed: whatever the file holds, that is git's refusal.)
                if not (te is not None and (self.outside is None or not self.outside(path))
                        and _file_is(te, top + path, wt.lstat(path), self.hash_name, self.to_worktree, self.core)):
                    self.not_uptodate.append(path)
                    continue
                self.same_nu.append(path)
            if te is None:
                plan.remove.append(path)
                continue
            plan.entries[path] = te
            plan.write.append(te)
        return differing

    def _looked_at(self, differing: list[bytes], tf: dict) -> list[bytes]:
        """The paths of ``differing`` that :meth:`merge` and the
        ``verify_absent`` checks may lstat: the leaving ones
        (``verify_absent_if_directory``), the coming ones, the staged
        deletions, and the entries both sides hold that ``refresh_index``
        did not find up to date (``verify_uptodate``). A path the merge
        then keeps or refuses without a look costs one request more, in
        the pool."""
        old, refreshed, outside = self.old, self.refreshed, self.outside
        return [path for path in differing
                if path not in tf or (cur := old.get(path)) is None or not (refreshed and cur.uptodate)
                or (vouched_for(cur) and not _stays_outside(cur, outside))]

    def verify_absent(self) -> None:
        """``verify_absent``: the new paths must not land on untracked files
        (those :attr:`outside` a sparse checkout's patterns are not written)."""
        wt, ignored, outside = self.wt, self.ignored, self.outside
        for e in self.plan.write:
            path = e.name
            if path in self.old or (outside is not None and outside(path)):
                continue
            # check_leading_path first (verify_absent_1): below a symlink or a
            # file the path is absent, whatever an lstat through it would find
            # (outside the work tree, maybe); only that leading path is in the way.
            lead = wt.leading_file(path)
            if lead is not None:
                if lead not in self.tracked and not ignored(lead):
                    self.untracked.append(lead)
                    self.leads.add(lead)
                    self.lead_entries.add(path)
                continue
            st = wt.lstat(path)
            if st is None:
                self.plan.absent.add(path)
                continue
            if stat_mod.S_ISDIR(st.st_mode) and not stat_mod.S_ISLNK(st.st_mode):
                if e.mode == S_IFGITLINK:
                    continue
                if ignored(path):
                    continue  # check_ok_to_remove: an excluded directory goes, contents and all
                if outside is not None and not outside(path):
                    self._record_resolve_undo(path)
                # verify_clean_subdirectory checks the tracked files below
                # first: one with local changes is the error, not the dir.
                if not self._consume_subdirectory(path):
                    continue
                lost = wt.untracked_below(path, self.tracked, self.ignored_in_subdir)
                if lost:
                    self.lose_dirs.append(path)
            elif not ignored(path):
                same = _file_is(e, self.top + path, st, self.hash_name, self.to_worktree, self.core)
                (self.same_un if same else self.untracked).append(path)
        self._drop_replaced()

    def _record_resolve_undo(self, path: bytes) -> None:
        """A sparse checkout's quirk, kept as git has it. Its merge does not
        check a new path for what is in its way (``CE_NEW_SKIP_WORKTREE``
        is set on every new entry first), so the index's entries below a
        directory that a new file ``path`` replaces are merged one by one:
        each one the target drops becomes HEAD's entry, at stage 3, to be
        removed (``deleted_entry``). The check then made for a ``path``
        inside the patterns (the second ``verify_absent``) adds the
        index's entry over it, and ``add_index_entry`` records the stage-3
        entry it replaces as resolve-undo data: a ``REUC`` extension.
        (The merge removes an index entry only where the index is HEAD's,
        so the entry stands for HEAD's.)"""
        if self._removing is None:
            self._removing = set(self.plan.remove)
        self.plan.resolve_undo += [(name, self.old[name].mode, self.old[name].oid) for name in self._index_below(path)
                                   if name in self._removing]

    def _drop_replaced(self) -> None:
        """A new file below which the merge keeps an index entry (one only
        the index has: its directory gone from the work tree, or ignored
        there, so not consumed) leaves the new index: the deeper entry, added
        to git's result after it, takes its place (``add_index_entry``'s
        rule for a file and a directory of one name), and it is not written.
        Only an index that is not HEAD's can hold such an entry."""
        plan = self.plan
        if not self.old or self.index_is_head:
            return
        replaced = {e.name for e in plan.write if e.name not in self.old
                    and any(name in plan.entries for name in self._index_below(e.name))}
        if replaced:
            plan.write = [e for e in plan.write if e.name not in replaced]
            for path in replaced:
                del plan.entries[path]
                plan.absent.discard(path)

    def _index_below(self, path: bytes) -> Iterator[bytes]:
        """The index's paths below directory ``path``, in index order."""
        if self._names is None:
            self._names = sorted(self.old)
        names, prefix = self._names, path + b"/"
        for i in range(bisect_left(names, prefix), len(names)):
            if not names[i].startswith(prefix):
                return
            yield names[i]

    def _consume_subdirectory(self, path: bytes) -> bool:
        """``verify_clean_subdirectory``'s tracked half, for a directory that
        the new file ``path`` replaces. git decides the directory there,
        before it merges anything below it (and merges nothing below it if
        the directory is refused), so what the merge said of the paths below
        is dropped first. Then the index's entries below, in index order,
        are each checked against the work tree (``verify_uptodate``) and
        consumed (``mark_ce_used``): removed with the directory, never
        merged. So a staged change below goes without a word, as in git (its
        content stays in the object database), and so does a file added to
        the index only. The first entry whose file has changed is refused
        instead, and False returned."""
        prefix, plan = path + b"/", self.plan
        for refused in (self.overwrite, self.not_uptodate, self.same_nu, self.lose_dirs, self.staged_gone):
            refused[:] = [p for p in refused if not p.startswith(prefix)]
        for name in self._index_below(path):
            cur = self.old[name]
            if cur.mode != S_IFGITLINK and self.modified(cur):
                self.not_uptodate.append(name)
                return False
            plan.entries.pop(name, None)
            if self._removing is None:
                self._removing = set(plan.remove)
            if name not in self._removing:
                self._removing.add(name)
                plan.remove.append(name)
        return True

    def verify_absent_removed(self) -> None:
        """``verify_absent`` for the staged deletions the target keeps deleted."""
        wt = self.wt
        for path in self.staged_gone:
            lead = wt.leading_file(path)
            if lead is not None:
                if lead not in self.tracked and not self.ignored(lead):
                    self.untracked_removed.append(lead)
                    self.leads_removed.add(lead)
                    self.lead_entries.add(path)
                continue
            st = wt.lstat(path)
            if st is None or self.ignored(path):
                continue
            if stat_mod.S_ISDIR(st.st_mode):
                if wt.untracked_below(path, self.tracked, self.ignored_in_subdir):
                    self.lose_dirs.append(path)
            else:
                self.untracked_removed.append(path)

    def refuse(self) -> None:
        """``display_error_msgs``: raise PlanError with every refusal, grouped by kind."""
        overwrite, not_uptodate, lose_dirs = self.overwrite, self.not_uptodate, self.lose_dirs
        untracked, untracked_removed = self.untracked, self.untracked_removed
        if not (overwrite or not_uptodate or lose_dirs or untracked or untracked_removed):
            return
        # Refused anyway: the files that already hold the target's bytes are
        # listed too, as git lists them (the leniency is for a switch that
        # would otherwise go ahead).
        not_uptodate += self.same_nu
        untracked += self.same_un
        # git stops at the first error of a directory/file pair and never
        # looks below it: no errors for paths under a refused path. (A
        # leading file in the way of a deeper path is no entry of its own:
        # unpack_trees still descends there, but not below that deeper path.)
        refused = (set(overwrite) | set(not_uptodate) | set(lose_dirs) | (set(untracked) - self.leads)
                   | (set(untracked_removed) - self.leads_removed) | self.lead_entries)
        # A leading file refused as an entry of its own (its deletion) is
        # not refused again for the deeper path git then never visits.
        untracked = [p for p in untracked if p not in self.leads or p not in refused]

        def first(paths: list[bytes]) -> list[bytes]:
            out = []
            for p in sorted(set(paths)):
                i = p.find(b"/")
                while i != -1 and p[:i] not in refused:
                    i = p.find(b"/", i + 1)
                if i == -1:
                    out.append(p)
            return out

        groups = [("overwrite", ERROR_WOULD_OVERWRITE, first(overwrite)),
                  ("not_uptodate", ERROR_WOULD_OVERWRITE, first(not_uptodate)),
                  ("not_uptodate_dir", ERROR_NOT_UPTODATE_DIR, first(lose_dirs)),
                  ("untracked_overwritten", ERROR_WOULD_LOSE_UNTRACKED, first(untracked)),
                  ("untracked_removed", ERROR_WOULD_LOSE_UNTRACKED_REMOVED, first(untracked_removed))]
        groups = [g for g in groups if g[2]]
        raise PlanError([(h, p) for _, h, p in groups], [k for k, _, _ in groups])


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
