"""Switching branches and the clone checkout, and their messages (``builtin/checkout.c``:
``switch_branches``, ``merge_working_tree``, ``update_refs_for_switch``,
``show_local_changes``)."""

from __future__ import annotations

import os
import stat as stat_mod
import sys
from binascii import unhexlify
from functools import partial

from ..cachetree import CacheTree
from ..index import S_IFGITLINK, Entry, IndexLock
from ..index_file import CE_INTENT_TO_ADD_IN_CORE, CE_SKIP_WORKTREE_IN_CORE
from ..objects import Commit, CorruptObject
from ..oneway import plan_reset
from ..plan import Plan, PlanError, _mode_of, worktree_matches
from ..preload import Preload, workers_for
from ..refresh import refresh_entries
from ..repository import Repository, RevisionError
from ..revwalk import RevWalkError
from ..sparse import clear_skip_worktree_from_present_files
from ..submodule import should_update_submodules
from ..tree import EMPTY, TreeFiles, value_mode
from ..treeahead import tree_ahead
from ..twoway import plan_switch
from .options import CheckoutError, CheckoutOptions, CheckoutReport
from .unpack import apply_sparse, ignore_matcher, index_order, let_go_source, write_index
from .updates import Checkout, _execute, _lstat_or_none, _refuse_hostile_tree, hostile_paths

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO


def run_checkout(
    repo: Repository,
    rev: str | None,
    opts: CheckoutOptions,
    err: TextIO = sys.stderr,
    trace=None,
    *,
    clone: str | None = None,
    out: TextIO = sys.stdout,
    target=None,
    branch_opts=None,
) -> CheckoutReport:
    """Switch the work tree, index and HEAD to ``rev`` (HEAD when None).

    ``target`` and ``branch_opts`` (:mod:`revision`: a parsed command line
    and ``-b``/``-B``/``--orphan``/``--detach``/``-t``) replace ``rev``; the
    refs are then updated by :func:`update_refs_for_switch`.

    ``clone`` is the source of a clone being checked out for the first time
    (oneway merge, the collision report, "clone: from <source>" in the
    reflog, the advice first for a detached HEAD)."""
    if repo.worktree is None:
        raise CheckoutError("fatal: this operation must be run in a work tree", 128)
    lock = IndexLock(repo.dirs.index_path)
    preload = ahead = co = None
    try:
        co = Checkout(repo, opts, err, trace)
        # The commit first, as git parses its argument before it reads the index; its tree is
        # then read (and its paths checked) by a child meanwhile when the index is big (treeahead.py).
        head_commit = repo.head_commit()
        old_branch = repo.head_ref()
        if target is not None:
            commit, branch, remote_ref = target.commit or head_commit, target.path, None
            if commit is None:
                raise CheckoutError("fatal: You are on a branch yet to be born", 128)
            switch = target
        else:
            switch = None
            commit, branch, remote_ref = repo.resolve(rev or "HEAD")
            if clone is not None and branch is None:  # clone's checkout(): the advice first, even with -q
                detach_advice(repo, rev, err)
        if clone is None:
            ahead = tree_ahead(repo, commit, lambda tree: hostile_paths(co, tree), opts.online_cpus)
        old = repo.read_index(err.write)
        clear_skip_worktree_from_present_files(old.entries, repo.config, co.top)
        if old.unmerged and not opts.force:
            _refuse_unmerged(old.unmerged, out)
        reset = opts.force or clone is not None
        # Preloaded while the target is read (when a child reads it, with a share here).
        preload = _start_preload(co, old, reset, here=ahead is not None)
        # init_checkout_metadata: what a process filter (or a helper's) is told of the checkout.
        co.filters.ref, co.filters.treeish = branch, commit
        co.start_helpers_ahead(len(old.entries))
        index_is_head = _index_is_head(repo, old, head_commit) if ahead is not None and not reset else None  # (meanwhile)
        got = ahead.result(old.entries) if ahead is not None else None
        target, hostile, found = got if got is not None else (repo.tree_of(commit), None, None)
        # checkout_branch: not to a branch another worktree has out (unless detaching or creating: -B checks).
        creating = branch_opts is not None and (branch_opts.new_branch or branch_opts.detach)
        if (branch is not None and remote_ref is None and clone is None and (rev is not None or switch is not None)
                and not opts.ignore_other_worktrees and branch != old_branch and not creating):
            _die_if_checked_out(repo, branch)
        _refuse_hostile_tree(co, target, 128 if opts.force or clone is not None else 1, hostile)
        co.setup_attributes(target, old.entries)
        recurse = clone is None and should_update_submodules(repo.config, opts.recurse_submodules)
        let_go = not recurse and let_go_source(old)  # (submodule moves read the index's entries as they write)
        try:
            plan = _merge_trees(co, reset, old, head_commit, target, preload, index_is_head, keep_head=recurse,
                                sparse=(sparse := repo.sparse_checkout()), let_go=let_go, found=found)
        except PlanError as e:
            if not recurse:
                raise
            _plan_submodules(co, reset, old, head_commit, target, e)  # raises, with both refusals
        if recurse:
            co.submodules = _plan_submodules(co, reset, old, head_commit, target, None)
        sparse_warnings = apply_sparse(co, plan, old.entries, sparse, reset=reset)
        differing = _write_files(co, plan, target, opts, err)
        if sparse_warnings:
            err.write(sparse_warnings)
        if co.errors:
            raise CheckoutError("", 1)
        entries, differing = write_index(co, lock, plan, target, old, clone, differing)
    except BaseException:
        if co is not None:
            co.close_helpers()  # (started ahead of a merge that failed)
        for child in (ahead, preload):
            if child is not None:
                child.close()
        lock.rollback()
        raise
    if _shows_local_changes(opts, clone):
        out.writelines(_local_changes(co, entries, differing, old.mtime_ns))
    if switch is not None:
        update_refs_for_switch(repo, switch, branch_opts, opts.quiet, old_branch, head_commit, commit,
                               getattr(branch_opts, "exists", False), out, err)
    else:
        _update_head(repo, opts, rev, clone, old_branch, head_commit, branch, commit, remote_ref, out, err)
    return co.report


def _shows_local_changes(opts: CheckoutOptions, clone: str | None) -> bool:
    """Whether the switch ends with ``show_local_changes``."""
    return not opts.force and not opts.quiet and clone is None


def _write_files(co: Checkout, plan, target: TreeFiles, opts: CheckoutOptions, err: TextIO
                 ) -> dict[bytes, bytes | None] | None:
    """``check_updates``: the plan carried out. Unless submodules move
    (which may change the plan after the files are written), the new
    index's order is made while the helpers write (:func:`_order_index`)
    and the target's files are let go then; after a oneway merge (``-f``,
    a clone), whose new index is the target's at every path (an empty
    :attr:`plan.Plan.merged`), already once its paths are checked, before
    any file is written. Returns where the new index and the target
    differ when that is known already (:func:`unpack.target_differences`)."""
    if co.submodules is not None:
        co.submodules.apply_sparse(plan)
        _execute(co, plan, opts, err, checked=target.files)
        return None
    # (Found before the writing, the differences of a twoway merge were 20-40 ms more
    # of a 100,000-file switch's critical path: they are found while the helpers write.)
    differing = {} if plan.merged == [] else None
    co.meanwhile = partial(_order_index, co, plan, target, differing)
    # The paths _refuse_hostile_tree checked: the target's, which are a oneway
    # plan's, and which a twoway plan holds when it took the target's files
    # over (every path it writes is one).
    took_over = differing is not None or plan.merged_values is not None
    _execute(co, plan, opts, err, checked=plan.entries if took_over else target.files,
             then=None if differing is None else partial(_checked_oneway, co, plan, target))
    return differing


def _checked_oneway(co: Checkout, plan, target: TreeFiles) -> None:
    """What a oneway merge needs no more once its paths are checked: the
    target's files, and, when every entry is written (a clone), the plan's
    dictionary of entries too, whose entries :attr:`plan.Plan.write` holds
    in index order (:func:`unpack.index_order`): 5 MiB of a 100,000-file
    clone's peak, held until the new index's order was made."""
    co.repo.release_tree(target)
    if len(plan.write) == len(plan.entries):
        plan.entries = None


def _order_index(co: Checkout, plan, target: TreeFiles, differing: dict[bytes, bytes | None] | None) -> None:
    """``co.meanwhile`` of a switch: the new index's differences from the
    target (``differing`` when known already), order and cache tree
    (:func:`unpack.index_order`), made while the helpers write. What the
    differences alone read goes once they are found, before the order is
    made (:func:`_differences_found`: the sort's peak held it, 5 MiB and
    more at 100,000 files), then the plan's dictionary of entries (the
    order holds them; held until the helpers' results came in), and the
    target's trees (:meth:`Repository.release_tree`): nothing reads them
    after this (attributes read ``target.attributes``; the local changes
    shown after a switch, the differences)."""
    co.index_order = index_order(co, plan, target, differing, found=partial(_differences_found, co, plan, target))
    plan.entries = None
    co.repo.release_tree(target, trees=True)


def _differences_found(co: Checkout, plan, target: TreeFiles) -> None:
    """What only the differences from the target read: its files, or the
    values at the merged paths of a plan that took them over."""
    co.repo.release_tree(target)
    plan.merged_values = None


def _refuse_unmerged(unmerged, out: TextIO) -> None:
    """refresh_index lists the unmerged paths on stdout, then merge_working_tree fails."""
    for name in unmerged:
        out.write(f"{name.decode('utf-8', 'replace')}: needs merge\n")
    out.flush()
    raise CheckoutError("error: you need to resolve your current index first", 1)


def _start_preload(co: Checkout, old, reset: bool, here: bool = False) -> Preload | None:
    """``preload_index`` for the refresh before a two-way merge (a oneway
    merge does not refresh), unless ``core.preloadIndex`` is false or the
    index is too small for it (:func:`preload.workers_for`); ``here``: see
    :class:`preload.Preload`."""
    if reset or not co.core.preload_index:
        return None
    io = co.io()
    n = co.report.preload_workers = workers_for(len(old.entries), co.opts.online_cpus, io)
    return Preload(list(old.entries.values()), co.top, old.mtime_ns, co.core, n, here, io) if n else None


def _merge_trees(co: Checkout, reset: bool, old, head_commit: bytes | None, target: TreeFiles,
                 preload: Preload | None = None, index_is_head: bool | None = None, keep_head: bool = False,
                 sparse=None, let_go: bool = False, found: list[bytes] | None = None) -> Plan:
    """``merge_working_tree``'s ``unpack_trees``: a oneway merge (``-f``, a
    clone) or, after ``refresh_index`` (``preload``: its preload, running),
    a twoway merge from HEAD (``index_is_head``: :func:`_index_is_head`,
    when already asked). HEAD's files, read for this merge alone, are let
    go after it (:meth:`Repository.release_tree`) unless ``keep_head``
    (submodule moves are planned from them next). ``sparse``: the sparse
    checkout's patterns (paths outside them are not written, so nothing
    in their way is checked: ``CE_NEW_SKIP_WORKTREE``). ``let_go``: no
    replaced entry of the index is read after the plan but by the sparse
    patterns (:func:`unpack.let_go_source`); without them, a twoway merge
    lets each go as it replaces it. ``found``: where the target and the
    index differ, found as the target was read (:mod:`treeahead`)."""
    repo, top = co.repo, co.top
    outside = None if sparse is None else sparse.excludes
    if reset:
        try:
            # (The plan takes the target's files over unless submodule moves are planned from them.)
            return plan_reset(target, old.entries, top, repo.hash_name, co.to_worktree, old.mtime_ns,
                              core=co.core, to_git=co.to_git, outside=outside, consume=not keep_head)
        except PlanError as e:  # reset_tree: unpack_trees' one error, then 128
            raise CheckoutError(e.first_plumbing_error(), 128) from None
        finally:
            if not keep_head:
                repo.release_tree(target)
    # No index file yet (``clone -n``, unborn branch): git's
    # initial_checkout, every entry new, untracked files protected.
    unborn = not old.entries and not old.mtime_ns
    if preload is not None:
        co.report.preloaded = preload.finish()
    refresh_entries(old.entries, top, repo.hash_name, co.to_worktree, old.mtime_ns, co.to_git, co.core)
    if index_is_head is None:
        index_is_head = not unborn and _index_is_head(repo, old, head_commit)
    head = None if index_is_head else EMPTY if unborn else repo.tree_of(head_commit)
    # The plan takes the target's files over when the index is HEAD's, unless submodule moves are planned.
    consume = head is None and not keep_head
    try:
        plan = plan_switch(head, target, old.entries, top,
                           repo.hash_name, co.to_worktree, old.mtime_ns, ignore_matcher(repo, old.entries),
                           core=co.core, to_git=co.to_git,
                           ignored_in_subdir=ignore_matcher(repo, old.entries, per_directory_only=True),
                           refreshed=True, io=co.io(), outside=outside, consume=consume,
                           let_go=let_go and sparse is None, found=found)
    finally:
        if consume:
            repo.release_tree(target)  # (its files the plan's now: forgotten, read again if asked for)
    if head is not None and head.tree_id not in (None, target.tree_id) and not keep_head:
        repo.release_tree(head)
    return plan


def _index_is_head(repo: Repository, old, head_commit: bytes | None) -> bool:
    """Whether the index holds exactly HEAD's files, so that the two-way
    merge takes them from it (:func:`twoway.plan_switch` with no ``head``)
    and HEAD's trees are not read. An index whose ``TREE``
    extension is valid at its root for HEAD's tree and covers every entry,
    none of them intent-to-add or unmerged, does (the tree is the hash of
    those entries), as ``unpack_trees`` trusts a valid cache tree
    (``traverse_by_cache_tree``). Not a sparse index (its ``TREE``
    describes the collapsed entries) nor anything else. Only the root node
    is read (:meth:`CacheTree.root_of`): it alone says what is asked, and
    the index is not changed by the answer (a damaged subtree after it
    costs git its cache tree, not a different merge)."""
    src = old.source
    data = None
    if head_commit is not None and src is not None and src.file is not None and not src.sparse and not old.unmerged:
        data = src.file.extension(b"TREE")
    if data:
        try:
            root = CacheTree.root_of(data, repo.odb.git_hash_algo.oid_length)
        except ValueError:
            root = None
        commit = repo.object(head_commit) if root is not None and root.count == len(old.entries) else None
        # (A version 2 file, not split, holds no extended flags, so no
        # intent-to-add entry: the 100,000 entries are not asked, 8 ms.)
        return (isinstance(commit, Commit) and root.oid == unhexlify(commit.tree)
                and (src.file.version == 2 and src.split is None
                     or not any(e.ce_flags & CE_INTENT_TO_ADD_IN_CORE for e in old.entries.values())))
    return False


def _update_head(repo: Repository, opts: CheckoutOptions, rev: str | None, clone: str | None,
                 old_branch: bytes | None, head_commit: bytes | None, branch: bytes | None, commit: bytes,
                 remote_ref, out: TextIO, err: TextIO) -> None:
    """HEAD, its reflog and the messages after the work tree, for a ``rev``
    (or a clone) rather than a parsed command line (:func:`update_refs_for_switch`)."""
    message = _reflog_message(repo, old_branch, head_commit, branch, commit, rev, clone)
    if remote_ref is not None:
        msg = repo.set_upstream(branch, remote_ref)
        if not opts.quiet:
            out.write(msg + "\n")
    # "git checkout HEAD": update_refs_for_switch has nothing to do.
    head_itself = rev == "HEAD"
    if clone is not None:
        repo.update_head(commit, branch or old_branch, message, clone=True)
    elif rev is not None and not head_itself:
        repo.update_head(commit, branch, message)
    if not opts.quiet and clone is None and rev is not None:
        if not head_itself:
            if old_branch is None and head_commit is not None and head_commit != commit:
                _orphaned_commit_warning(err, repo, head_commit, commit)
            _say_switched(err, old_branch, branch, commit, rev, repo, created=remote_ref is not None)
        tracked = old_branch if head_itself else branch
        if tracked is not None and remote_ref is None:
            # (git says nothing for a branch it has just created: its
            # config cache predates the new upstream.)
            _report_tracking(repo, tracked, out)


def _report_tracking(repo: Repository, branch: bytes, out: TextIO) -> None:
    """``report_tracking``: how far ``branch`` is from its upstream
    (:meth:`Repository.tracking_info`); a commit its walk cannot read is
    git's death ("revision walk setup failed"), after HEAD moved."""
    try:
        out.write(repo.tracking_info(branch) or "")
    except RevWalkError as e:
        raise CheckoutError(f"error: {e}\nfatal: revision walk setup failed", 128) from None


def _die_if_checked_out(repo: Repository, branch: bytes) -> None:
    """checkout_branch's ``die_if_checked_out`` (see :mod:`worktree`)."""
    from ..discovery import NotAGitRepository
    from ..worktree import die_if_checked_out

    try:
        die_if_checked_out(repo.dirs, branch)
    except NotAGitRepository as e:
        raise CheckoutError(f"fatal: {e}", 128) from None


def _oneline(repo: Repository, commit: bytes) -> str:
    """``<abbrev> <subject>`` (CMIT_FMT_ONELINE: the message's first paragraph)."""
    try:
        para = repo.object(commit).message.split(b"\n\n", 1)[0]
        subject = b" ".join(para.split(b"\n")).strip().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the message is cosmetic
        subject = ""
    from ..revision import find_unique_abbrev

    return f"{find_unique_abbrev(repo, commit)} {subject}"


def _abbrev(repo: Repository, oid: bytes) -> str:
    """``find_unique_abbrev`` with core.abbrev / the object count (revision.py)."""
    from ..revision import find_unique_abbrev

    return find_unique_abbrev(repo, oid)


def _orphaned_commit_warning(err: TextIO, repo: Repository, old: bytes, new: bytes) -> None:
    """Leaving a detached HEAD: "Previous HEAD position was ...", or the
    commits no ref (nor the new HEAD) reaches, as git lists them."""
    refs = repo.refs
    packed, peeled = refs.get_packed_refs(), refs.packed_peeled()
    tips = []
    for name, sha in refs.for_each_ref().items():  # (add_pending_uninteresting_ref)
        if name in peeled and packed[name] == sha:  # (packed-refs says where its tags end: none read)
            tips.append(peeled[name] or sha)
            continue
        try:
            tips.append(repo._peel_to_commit(sha))
        except (KeyError, RevisionError, CorruptObject):  # a ref to a non-commit reaches none
            pass
    try:
        lost = repo.commit_walk().limited([old], [*tips, new])
    except RevWalkError as e:  # (the work tree and index are switched, HEAD is not: as git leaves them)
        raise CheckoutError(f"error: {e}\nfatal: internal error in revision walk", 128) from None
    if not lost:
        err.write(f"Previous HEAD position was {_oneline(repo, old)}\n")
        return
    n = len(lost)
    listed = "".join(f"  {_oneline(repo, c)}\n" for c in lost[:4])
    if n == 5:
        listed += f"  {_oneline(repo, lost[-1])}\n"
    elif n > 5:
        listed += f" ... and {n - 4} more.\n"
    s = "s" if n != 1 else ""
    err.write(f"Warning: you are leaving {n} commit{s} behind, not connected to\n"
              f"any of your branches:\n\n{listed}\n")
    if _advice_enabled(repo, b"detachedhead"):
        err.write(f"If you want to keep {'them' if n != 1 else 'it'} by creating a new branch, this may be a good time\n"
                  f"to do so with:\n\n git branch <new-branch-name> {_abbrev(repo, old)}\n\n")


#: :func:`_local_changes`'s word for a path the target holds as the new index does.
_ALIKE = object()


def _local_changes(co: Checkout, entries: list[Entry], differing: dict[bytes, bytes | None],
                   racy_ns: int) -> list[str]:
    """``show_local_changes``: what differs between the new HEAD and the work
    tree (through the new index, ``entries``), as ``diff-index
    --name-status`` lines in path order.

    As diff-lib.c's ``get_stat_data``, an entry up to date (written by this
    checkout, or found unchanged by the preload or the refresh) is taken as
    its file, without an lstat: at 100,000 entries an lstat of each (what
    this did before) took 0.68 s of CPU of a switch that is not
    ``--quiet``, where git spends next to nothing. The others are looked at
    (``check_removed``, then ``ie_match_stat``: stat data, then content).
    A submodule counts as
    changed when its HEAD is not the recorded commit (dirty submodule
    contents are not looked at).

    ``differing``: where the new index and the target differ, with the
    target's value there (:func:`unpack.target_differences`); elsewhere
    the target holds each entry alike. The target's files themselves are
    let go by then (:func:`_order_index`).
    """
    rest = dict(differing)
    found: list[tuple[bytes, str]] = []
    for e in entries:
        path = e.name
        t = rest.pop(path, _ALIKE)
        changed, mode = False, e.mode
        if not e.uptodate and not e.ce_flags & CE_SKIP_WORKTREE_IN_CORE:  # (the entry stands for the file)
            full = co.top + path
            st = _lstat_or_none(full)
            if st is None:
                if t is not None:
                    found.append((path, "D"))
                continue
            if mode == S_IFGITLINK:
                changed = stat_mod.S_ISDIR(st.st_mode) and _submodule_head(full) not in (None, e.oid)
            elif not worktree_matches(e, full, st, co.repo.hash_name, co.to_worktree, racy_ns, co.core, co.to_git,
                                      stat_only=True):
                changed, mode = True, _mode_of(st)  # diff-index's ie_match_stat: a stat change, unread
        if t is None:
            found.append((path, "A"))
        elif changed or t is not _ALIKE:
            head_mode = e.mode if t is _ALIKE else value_mode(t)
            found.append((path, "T" if (mode ^ head_mode) & 0o170000 else "M"))
    found += [(p, "D") for p, t in rest.items() if t is not None]  # the target's paths the index lacks
    found.sort()  # (a few lines, as a rule)
    return [f"{letter}\t{path.decode('utf-8', 'surrogateescape')}\n" for path, letter in found]


def _submodule_head(path: bytes) -> bytes | None:
    """The commit a populated submodule's HEAD names (raw), or None."""
    if not os.path.lexists(os.path.join(path, b".git")):
        return None
    try:
        from dulwich.repo import Repo

        with Repo(os.fsdecode(path)) as r:
            return bytes.fromhex(r.head().decode())
    except Exception:  # noqa: BLE001 - not a repository, or no HEAD: nothing to say
        return None


def _plan_submodules(co: Checkout, reset: bool, old, head_commit: bytes | None, target: TreeFiles,
                     plan_error: PlanError | None):
    """``--recurse-submodules`` / ``submodule.recurse``: the checks
    ``unpack_trees`` makes of each gitlink, then every move planned in its
    submodule (:mod:`submodule`). Refusals join the superproject's own
    (``plan_error``) in one PlanError, as ``display_error_msgs`` groups them."""
    from .submodules import SubmoduleMoves

    moves = SubmoduleMoves(co, reset)
    head = co.repo.tree_of(head_commit).files if head_commit is not None and (old.entries or old.mtime_ns) else {}
    if reset:
        moves.plan_reset(target.files, old.entries, head)
    else:
        moves.plan_switch(head, target.files, old.entries)
    return moves.planned(plan_error)


def _describe(branch: bytes | None, commit: bytes | None) -> bytes:
    if branch is not None:
        return branch[len(b"refs/heads/"):] if branch.startswith(b"refs/heads/") else branch
    return commit or b"(null)"


def _reflog_message(repo, old_branch, old_commit, branch, commit, rev, clone) -> bytes:
    if clone is not None:
        return b"clone: from " + clone.encode()
    return b"checkout: moving from " + _describe(old_branch, old_commit) + b" to " + (
        branch[len(b"refs/heads/"):] if branch else (rev or "HEAD").encode()
    )


def detach_advice(repo: Repository, rev: str, err: TextIO) -> None:
    """``detach_advice``, unless ``advice.detachedHead`` is false: a clone
    whose checkout leaves HEAD detached says so first (builtin/clone.c)."""
    if _advice_enabled(repo, b"detachedhead"):
        err.write(DETACHED_HEAD_ADVICE.format(rev=rev))


DETACHED_HEAD_ADVICE = """\
Note: switching to '{rev}'.

You are in 'detached HEAD' state. You can look around, make experimental
changes and commit them, and you can discard any commits you make in this
state without impacting any branches by switching back to a branch.

If you want to create a new branch to retain commits you create, you may
do so (now or later) by using -c with the switch command. Example:

  git switch -c <new-branch-name>

Or undo this operation with:

  git switch -

Turn off this advice by setting config variable advice.detachedHead to false

"""


def _say_switched(err: TextIO, old_branch, branch, commit, rev, repo=None, created=False) -> None:
    """``update_refs_for_switch``'s messages (builtin/checkout.c)."""
    if branch is not None:
        name = branch[len(b"refs/heads/"):].decode()
        if branch == old_branch:
            err.write(f"Already on '{name}'\n")
        elif created:
            err.write(f"Switched to a new branch '{name}'\n")
        else:
            err.write(f"Switched to branch '{name}'\n")
        return
    if repo is None:
        err.write(f"HEAD is now at {commit[:7].decode()}\n")
        return
    if old_branch is not None:
        detach_advice(repo, rev, err)
    err.write(f"HEAD is now at {_oneline(repo, commit)}\n")


def _advice_enabled(repo: Repository, key: bytes) -> bool:
    try:
        return repo.config.get_boolean((b"advice",), key, True)
    except (KeyError, ValueError):
        return True


def update_refs_for_switch(repo: Repository, t, bo, quiet: bool,
                           old_branch: bytes | None, old_commit: bytes | None, new_commit: bytes,
                           exists: bool, out, err) -> None:
    """``switch_branches`` after the work tree (``t`` and ``bo``: revision's
    ``Target`` and ``BranchOptions``): the orphaned-commit warning,
    ``update_refs_for_switch`` (new branch, HEAD and its reflog, messages)
    and ``report_tracking``."""
    from ..revision import _write_head_symref, create_branch, setup_tracking, start_ref_of, tracking_upstream

    if not quiet and old_branch is None and old_commit is not None and new_commit != old_commit:
        _orphaned_commit_warning(err, repo, old_commit, new_commit)
    name, path = t.name or "HEAD", t.path
    created = False
    if bo.new_branch is not None:
        if not bo.orphan:
            start = t.name or "HEAD"
            upstream = tracking_upstream(repo, start, t.dwim_from or start_ref_of(repo, start), bo.track)
            create_branch(repo, bo.new_branch, start, new_commit, bo.force, exists)
            setup_tracking(repo, bo.new_branch, upstream, quiet, out)
        created = not exists
        name, path = bo.new_branch, b"refs/heads/" + bo.new_branch.encode()
    if old_branch is not None:
        old_desc = old_branch[len(b"refs/heads/"):].decode() if old_branch.startswith(b"refs/heads/") \
            else old_branch.decode()
    elif old_commit is not None:
        old_desc = old_commit.decode()
    else:
        old_desc = "(invalid)"
    msg = repo.environ.get("GIT_REFLOG_ACTION") or f"checkout: moving from {old_desc} to {name}"
    if name == "HEAD" and path is None and not bo.detach:
        pass  # nothing to do
    elif bo.detach or path is None:
        if not (old_branch is None and old_commit == new_commit):  # an unchanged ref is not logged
            repo.update_head(new_commit, None, msg.encode())
        if not quiet:
            if old_branch is not None and not bo.detach:
                detach_advice(repo, name, err)
            err.write(f"HEAD is now at {_oneline(repo, new_commit)}\n")
    else:
        if bo.orphan:
            _write_head_symref(repo, path)  # an unborn branch: no reflog line (no value to log)
        else:
            repo.update_head(new_commit, path, msg.encode())
        if not quiet:
            if old_branch is not None and path == old_branch:
                err.write(f"Reset branch '{name}'\n" if bo.force else f"Already on '{name}'\n")
            elif bo.new_branch is not None:
                err.write(f"Switched to and reset branch '{name}'\n" if exists
                          else f"Switched to a new branch '{name}'\n")
            else:
                err.write(f"Switched to branch '{name}'\n")
    if not quiet and (path is not None or (not bo.detach and name == "HEAD")) and not created:
        tracked = path if path is not None else old_branch
        if tracked is not None:
            _report_tracking(repo, tracked, out)
