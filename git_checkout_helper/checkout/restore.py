"""Writing index entries back: ``git checkout-index -a [--prefix]`` and
``git checkout [<tree-ish>] -- <pathspec>`` (``builtin/checkout-index.c``,
``checkout_paths`` in ``builtin/checkout.c``)."""

from __future__ import annotations

import os
import stat
import sys

from ..attr import attributes_path
from ..checkoutindex import select_entries
from ..index import S_IFGITLINK, Entry, IndexLock
from ..index_state import index_chunks
from ..pathspec import PathspecError, parse_pathspec
from ..plan import Plan
from ..repository import Repository
from ..sparse import clear_skip_worktree_from_present_files
from ..submodule import should_update_submodules
from ..tree import value_entry
from .options import CheckoutError, CheckoutOptions, CheckoutReport
from .updates import Checkout, _execute

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO


def run_checkout_all(repo: Repository, opts: CheckoutOptions, prefix: str | None = None,
                     err: TextIO = sys.stderr, trace=None, update_index: bool = False) -> CheckoutReport:
    """``git checkout-index -a [-f] [-u] [--prefix=<p>]``: write every index entry.

    With ``update_index`` (``-u``) and no prefix the index takes the new stat
    data, under ``index.lock``; otherwise it is neither locked nor touched, as
    in git. Without ``-f`` a file that exists and differs is left alone and
    reported ("already exists").
    """
    lock = IndexLock(repo.dirs.index_path) if update_index and not prefix else None
    try:
        co = Checkout(repo, opts, err, trace, base_dir=os.fsencode(prefix or ""))
        idx = repo.read_index(err.write)
        clear_skip_worktree_from_present_files(idx.entries, repo.config, co.top)
        entries = [idx.entries[p] for p in sorted(idx.entries)]
        # skip-worktree entries are not checked out (checkout_all)
        wanted = [e for e in entries if not e.extended_flags & 0x4000]
        co.setup_attributes(None, idx.entries, worktree_first=True)  # for the checks (ie_match_stat)
        todo, exists, fatal = select_entries(co.out_top, os.fsencode(prefix or ""), wanted, opts.force,
                                             lambda e, st: co.uptodate(e, st, idx.mtime_ns))
        # with a prefix the files unlinked are <prefix>/<path>: the work
        # tree's .gitattributes stay as they are
        rewritten = attr_dirs_rewritten(todo) if not prefix else frozenset()
        if rewritten:
            co.setup_attributes(None, idx.entries, worktree_first=True, rewritten=rewritten)
        if not opts.quiet:
            err.writelines(line + "\n" for line in exists)
        if fatal:
            raise CheckoutError(fatal, 128)
        if prefix and todo:
            # create_directories makes the prefix's own directories too
            # (``--prefix=out/``); a symlink to a directory may stand for one.
            os.makedirs(os.path.dirname(co.out_top), exist_ok=True)
        _execute(co, _plan_of(todo), opts, err)
        if lock is not None and not co.errors and not exists:
            co.smudge_racily_clean(entries, idx.mtime_ns)
            lock.commit(index_chunks(entries, repo.hash_name, None, idx, repo.config, worktree=co.top[:-1],
                                    switch=False, changed=bool(todo), err=err,
                                    sparse=repo.sparse_checkout(), ensure_tree=repo.ensure_tree))
        if co.errors or exists:
            raise CheckoutError("", 1)
    except BaseException:
        if lock is not None:
            lock.rollback()
        raise
    return co.report


def attr_dirs_rewritten(todo: list[Entry]) -> frozenset[bytes]:
    """The directories whose ``.gitattributes`` git reads from the index.

    ``checkout_entry`` unlinks a file it rewrites before ``convert_attrs``
    asks for the attributes of that file, and attr.c reads a directory's
    ``.gitattributes`` once, for the first regular file under it (the root's
    for the first of all), then keeps it. So where the tracked
    ``.gitattributes`` being rewritten comes no later than that first file
    in index order, git finds it gone (or, sequentially, already rewritten)
    and reads the index's version; elsewhere it reads the work tree's file
    as it stands. ``todo`` is in index order.
    """
    regular = {e.name for e in todo if stat.S_ISREG(e.mode)}
    seen: set[bytes] = set()
    dirs = set()
    for name in sorted(regular):
        i = -1
        while True:
            d = name[:i] if i >= 0 else b""
            if d not in seen:
                seen.add(d)
                attr = attributes_path(d)
                if attr in regular and attr <= name:
                    dirs.add(d)
            i = name.find(b"/", i + 1)
            if i < 0:
                break
    return frozenset(dirs)


def _plan_of(entries: list[Entry]) -> Plan:
    plan = Plan()
    plan.write = entries
    return plan


def _submodule_moves(co: Checkout, todo: list[Entry], index: dict[bytes, Entry]):
    """``--recurse-submodules`` in a path restore: ``checkout_entry`` of each
    gitlink named resets its submodule to the gitlink's commit
    (``submodule_move_head`` with SUBMODULE_MOVE_HEAD_FORCE, as
    ``checkout_worktree``'s state is forced), planned before anything is
    touched (see :mod:`checkout.submodules`)."""
    from .submodules import SubmoduleMoves

    if not should_update_submodules(co.repo.config, co.opts.recurse_submodules):
        return None
    links = [e for e in todo if e.mode == S_IFGITLINK]
    if not links:
        return None
    moves = SubmoduleMoves(co, True)
    moves.plan_paths(links, index)
    return moves.planned()


def run_checkout_paths(repo: Repository, treeish: str | None, pathspecs: list[str], cwd_prefix: str,
                       opts: CheckoutOptions, err: TextIO = sys.stderr, trace=None) -> CheckoutReport:
    """``git checkout [<tree-ish>] -- <pathspec>...``: restore paths.

    From the index, or from ``<tree-ish>`` into the index and the work tree
    (overlay: index entries the tree lacks stay). Local changes to the named
    paths are overwritten, as git does; a pathspec matching nothing is an
    error before anything is touched.
    """
    lock = IndexLock(repo.dirs.index_path)
    try:
        co = Checkout(repo, opts, err, trace)
        idx = repo.read_index(err.write)
        clear_skip_worktree_from_present_files(idx.entries, repo.config, co.top)
        try:
            pathspec = parse_pathspec(pathspecs, cwd_prefix)
        except PathspecError as e:
            raise CheckoutError(f"fatal: {e}", 128) from None
        entries = dict(idx.entries)
        co.setup_attributes(None, idx.entries, worktree_first=True)  # for the checks (ie_match_stat)
        todo: list[Entry] = []
        added: set[bytes] = set()
        if isinstance(treeish, bytes):  # a tree already resolved (revision.py)
            tree = repo.read_tree(treeish)
            source = {p: value_entry(p, v) for p, v in tree.files.items()}
        elif treeish is not None:
            commit, _b, _r = repo.resolve(treeish)
            tree = repo.tree_of(commit)
            source = {p: value_entry(p, v) for p, v in tree.files.items()}
        else:
            tree = None
            source = idx.entries
        recurse = should_update_submodules(repo.config, opts.recurse_submodules)
        for path in sorted(source):
            e = source[path]
            cur = idx.entries.get(path)
            if cur is not None and cur.extended_flags & 0x4000 and (treeish is None or cur.same_object(e)):
                continue  # skip-worktree: neither matched nor written (mark_ce_for_checkout_overlay)
            is_dir = e.mode == S_IFGITLINK
            if tree is not None and not pathspec.selects(path, is_dir):
                continue  # not read from the tree, so never matched (mark_ce_for_checkout_overlay)
            if not pathspec.match(path, is_dir):
                continue
            if treeish is None or (cur is not None and cur.same_object(e)):
                e = cur
                try:
                    st = os.lstat(co.top + path)
                    if e.mode != S_IFGITLINK and co.uptodate(e, st, idx.mtime_ns):
                        continue
                    if e.mode == S_IFGITLINK and stat.S_ISDIR(st.st_mode) and not recurse:
                        continue  # checkout_entry leaves a gitlink's directory alone, and its entry
                except (FileNotFoundError, NotADirectoryError):
                    pass
                e = Entry(e.name, e.mode, e.oid, flags=e.flags, extended_flags=e.extended_flags)
            if path not in entries:
                added.add(path)
            entries[path] = e
            todo.append(e)
        if added:
            # add_index_entry(ADD_CACHE_OK_TO_REPLACE): a new entry replaces
            # the entries it conflicts with (a file where its directory goes,
            # or entries below a path that is now a file).
            for name in [n for n in entries if n not in added and b"/" in n]:
                i = name.find(b"/")
                while i != -1 and name[:i] not in added:
                    i = name.find(b"/", i + 1)
                if i != -1:
                    del entries[name]
            for name in added:
                i = name.find(b"/")
                while i != -1:
                    entries.pop(name[:i], None)
                    i = name.find(b"/", i + 1)
        # checkout_paths sets no attribute direction: the work tree's
        # .gitattributes first, then the index as updated from the tree.
        co.setup_attributes(None, entries, worktree_first=True, rewritten=attr_dirs_rewritten(todo))
        unmatched = pathspec.unmatched()
        if unmatched:
            raise CheckoutError("\n".join(f"error: pathspec '{p}' did not match any file(s) known to git"
                                          for p in unmatched), 1)
        co.submodules = _submodule_moves(co, todo, idx.entries)
        _execute(co, _plan_of(todo), opts, err)
        if co.errors:
            raise CheckoutError("", 1)
        # add_index_entry: cache_tree_invalidate_path for each entry added or
        # replaced, and for those the replacement removed.
        co.smudge_racily_clean(list(entries.values()), idx.mtime_ns)
        lock.commit(index_chunks([entries[p] for p in sorted(entries)], repo.hash_name, None, idx, repo.config,
                                worktree=co.top[:-1], switch=False, err=err,
                                sparse=repo.sparse_checkout(), ensure_tree=repo.ensure_tree,
                                changed=bool(todo) or entries.keys() != idx.entries.keys(),
                                changed_paths=sorted({e.name for e in todo if not e.same_object(idx.entries.get(e.name))}
                                                     | (idx.entries.keys() - entries.keys()))))
    except BaseException:
        lock.rollback()
        raise
    # git prints "Updated N paths from ..." only without "--", which our
    # command line always has: nothing to say.
    return co.report
