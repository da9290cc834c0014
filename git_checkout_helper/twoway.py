"""``twoway_merge`` (unpack-trees.c): a branch switch's plan.

A path HEAD and the target hold alike keeps whatever the index has; the
others (the merged paths) are merged one by one, in index order, and then
checked against the work tree (``verify_absent`` for the paths a switch
adds and removes); what would lose a user's change or untracked file is
refused as git refuses it (:class:`plan.PlanError`, git's groups). The
shared pieces (the :class:`plan.Plan`, the looks at the work tree) are
:mod:`plan`'s.
"""

from __future__ import annotations

import stat as stat_mod
from bisect import bisect_left
from collections.abc import Callable, Iterator

from .coresettings import DEFAULT_CORE, CoreSettings
from .index import S_IFGITLINK, Entry
from .index_file import CE_SKIP_WORKTREE, CE_SKIP_WORKTREE_IN_CORE
from .iopool import IoPool
from .plan import (
    ERROR_NOT_UPTODATE_DIR,
    ERROR_WOULD_LOSE_UNTRACKED,
    ERROR_WOULD_LOSE_UNTRACKED_REMOVED,
    ERROR_WOULD_OVERWRITE,
    Plan,
    PlanError,
    _changed_file,
    _file_is,
    _stays_outside,
    _Worktree,
    vouched_for,
    worktree_matches,
)
from .tree import REGULAR_FILE, TreeFiles, become_value, entry_differs, value_entry

__all__ = ["plan_switch"]


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
    consume: bool = False,
    let_go: bool = False,
    found: list[bytes] | None = None,
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

    ``consume`` (``head`` None only: the index is HEAD's): the caller reads
    the target's files no more. The plan's entries are then made in the
    target's own dictionary, as a oneway merge's are
    (:func:`oneway.plan_reset`), the target's values at the merged paths
    kept apart (:attr:`Plan.merged_values`), and the tree is left with no
    files (the caller forgets it: :meth:`repository.Repository.release_tree`).
    Three dictionaries of 100,000 paths (the index's, the target's, the
    plan's) were 15 MiB of a switch's peak.

    ``found`` (``head`` None): the paths at which the target and ``old``
    differ, found already (:meth:`treeahead.TreeAhead.result`, read beside
    this index), the target's first, in its order.

    ``let_go``: the caller reads no entry of ``old`` that the plan replaces
    (:func:`checkout.unpack.let_go_source`); each is made the new entry in
    place as the merge replaces it (:meth:`_TwowayMerge.merge`).
    """
    m = _TwowayMerge(old, top, hash_name, to_worktree, racy_timestamp_ns, ignored,
                     ignored if ignored_in_subdir is None else ignored_in_subdir, core, to_git, refreshed)
    m.outside, m.let_go = outside, let_go
    tf = target.files
    if consume and head is not None:
        raise ValueError("a plan takes the target's files over only from HEAD's own index")
    if consume:
        target.files = {}  # (a failure below leaves the tree empty, not half made of entries)
    differing = m.merge(None if head is None else head.files, tf, io, consume, found if head is None else None)
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
        self.let_go = False  # plan_switch's let_go: a replaced entry made the new one in place (merge)
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

    def merge(self, hf: dict | None, tf: dict, io: IoPool | None = None, consume: bool = False,
              found: list[bytes] | None = None) -> list[bytes]:
        """``twoway_merge`` of each path of HEAD, the target and the index;
        returns the paths HEAD and the target hold otherwise (the ones merged).

        A path the two commits hold alike (or neither holds) keeps whatever
        the index has; those are most paths, so they are found all at once:
        the paths whose (mode, id) differ: the target's paths HEAD holds
        otherwise or not at all, and HEAD's the target lacks (one lookup a
        path: a third of the time of the symmetric difference of the two
        item views, which hashes every (path, (mode, id)) pair; 120 ms at
        100,000 files). Only they are merged one by one, in index order
        (:meth:`_merge_one`), the list returned in that order. (``plan.entries``
        is then in no order: its readers sort it or look paths up.)

        ``hf`` None: HEAD's files are the index's entries; they are compared
        with the target's as they stand, not copied into a dictionary of
        their own first (90 ms of a 100,000-file switch), and the index
        is HEAD at every path.

        ``io`` (a latency-bound work tree): the lstats that the merge and
        the checks after it are about to make one by one are made together
        first (:meth:`_looked_at`, :meth:`_Worktree.prefetch`): on a
        1 ms-a-request filesystem a near switch of 5,000 files had its 100
        leaving files looked at one at a time, 180 ms.

        ``found`` (``hf`` None): the paths at which ``tf`` and the index
        differ, found as the target was read (:meth:`treeahead.TreeAhead.result`).

        ``consume`` (``hf`` None): ``tf`` becomes :attr:`Plan.entries`; the
        index's entries replace its values (every path it holds alike is
        one of the index's, and each other path is merged), its values at
        the merged paths kept in :attr:`Plan.merged_values` first, a list
        beside the paths (a dictionary of them was 1.3 MiB of a 100,000-file
        switch's peak, a list 0.3).

        :attr:`let_go`: an index entry the merge replaces is made the new one in
        place (:meth:`index.Entry.become`), its id and stat data let go at
        once. What reads the index after the merge here asks only whether a
        path is tracked, and reads the entries it kept or removed (an entry
        below a new file is never replaced: the target has no such path); a
        switch between nearby releases of 100,000 files replaces a third of
        them, 7 MiB with their ids and stat data, which were held to its
        end. Letting the old entries go and keeping the new ones made the
        switch 1-2.5% slower; made in place, 0.5% (paired rounds). Letting
        them go after the plan instead, the removed ones with them, left the
        merge's peak as it was; the removed ones stay."""
        plan, wt, old = self.plan, self.wt, self.old
        # Each list in its dictionary's order, which is index order (a tree's
        # flattened walk, or an index): sorting the two runs costs a merge.
        self.index_is_head = hf is None
        if hf is None and found is not None:
            differing = found
        elif hf is None:
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
        differing.sort()
        values = [tf.get(path) for path in differing]
        if consume:
            plan.entries, plan.merged_values = tf, values
        # Each merged path's entry set in place, or dropped (a dictionary
        # emptied of the merged paths first and filled again outgrew its
        # table when they were many: 10 MiB at 100,000 files).
        entries = plan.entries
        entries.update(old)
        for path, t in zip(differing, values, strict=True):
            cur = old.get(path)
            e = self._merge_one(path, t, cur, hf)
            if e is None:
                entries.pop(path, None)
                continue
            entries[path] = e
        return differing

    def _merge_one(self, path: bytes, t: bytes | None, cur: Entry | None, hf: dict | None) -> Entry | None:
        """``twoway_merge`` at a merged ``path`` (the target's value ``t``,
        the index's entry ``cur``): the new index's entry there, or None
        (removed, or refused: the refusal recorded)."""
        plan, wt, top = self.plan, self.wt, self.top
        # (HEAD's files read from the index, a merged path is one where the
        # index and the target differ: nothing to ask.)
        if hf is not None and t is not None and not entry_differs(cur, t):
            return cur  # index already has the new version
        # The new entry, made when it is needed: with let_go, the index's
        # entry is most often made into it in place (below), no new one made.
        te = None
        if t is not None and cur is not None and cur.ce_flags & CE_SKIP_WORKTREE_IN_CORE:
            te = value_entry(path, t)
            te.extended_flags = CE_SKIP_WORKTREE  # merged_entry: "migrate old flags over"
        if hf is not None and entry_differs(cur, hf.get(path)):  # the index is not HEAD here
            if cur is not None or t is not None:
                self.overwrite.append(path)
            else:
                # Staged deletion of a path the target drops too (deleted_entry
                # without an index entry): an untracked file there would be
                # removed, so verify_absent.
                self.staged_gone.append(path)
            return None
        if t is None and cur is not None and cur.mode != S_IFGITLINK:
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
                return None
        if cur is not None and cur.mode != S_IFGITLINK and self.modified(cur):
            # (A path outside a sparse checkout's patterns is not written but
            # removed: whatever the file holds, that is git's refusal.)
            if te is None and t is not None:
                te = value_entry(path, t)
            if not (te is not None and (self.outside is None or not self.outside(path))
                    and _file_is(te, top + path, wt.lstat(path), self.hash_name, self.to_worktree, self.core)):
                self.not_uptodate.append(path)
                return None
            self.same_nu.append(path)
        if t is None:
            plan.remove.append(path)
            return None
        if self.let_go and cur is not None:
            if te is None:
                become_value(cur, t)
            else:
                cur.become(te)
            te = cur
        elif te is None:
            te = value_entry(path, t)
        plan.write.append(te)
        return te

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
