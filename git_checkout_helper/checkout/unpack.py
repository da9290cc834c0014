"""The pieces of ``unpack_trees`` a switch and a submodule's move share: the
ignore rules its checks use, the sparse patterns over its result, and the
index it leaves (with its TREE extension)."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..index import Entry, IndexLock, build_cache_tree
from ..index_state import index_chunks, resolve_undo_data
from ..plan import Plan, worktree_matches
from ..repository import Repository
from ..tree import REGULAR_FILE, TreeFiles, entry_differs
from .updates import Checkout, _read_file


def ignore_matcher(repo: Repository, index, per_directory_only: bool = False) -> Callable[[bytes], bool]:
    """``is_excluded`` with the standard excludes (ignore.py): core.excludesFile,
    info/exclude and each directory's .gitignore; ``per_directory_only``: the
    .gitignore files alone (git 2.39's verify_clean_subdirectory)."""
    from ..coresettings import ignore_case
    from ..ignore import IgnoreRules

    env = repo.environ
    try:
        name = os.fsdecode(repo.config.get((b"core",), b"excludesfile"))
    except KeyError:
        home = env.get("HOME")
        xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
        name = os.path.join(xdg, "git", "ignore") if xdg else None
    if name and name.startswith("~") and env.get("HOME"):
        name = env["HOME"] + name[1:] if name.startswith("~/") else os.path.expanduser(name)
    excludes = _read_file(name) if name and not per_directory_only else None
    info = None if per_directory_only else _read_file(os.path.join(repo.dirs.commondir, "info", "exclude"))
    return IgnoreRules(os.fsencode(repo.worktree) + b"/", index, info, excludes, per_directory_only,
                       ignore_case(repo.config))


def write_index(co: Checkout, lock: IndexLock, plan: Plan, target: TreeFiles, old, clone: str | None = None,
                differing: dict[bytes, bytes | None] | None = None) -> tuple[list[Entry], dict[bytes, bytes | None]]:
    """The index a switch (or a clone, or a submodule's move) leaves:
    ``unpack_trees``'s result with its TREE extension, racily clean entries
    smudged, written under ``lock``. Returns its entries and where they
    differ from the target (:func:`index_order`; ``differing``: found
    already, the target's files maybe let go)."""
    repo = co.repo
    entries, tree_ext, differing = co.index_order or index_order(co, plan, target, differing)
    if clone is not None:
        co.collisions.report(entries, co.err)
    co.smudge_racily_clean(entries, old.mtime_ns)
    lock.commit(index_chunks(entries, repo.hash_name, tree_ext, old, repo.config,
                            worktree=co.top[:-1], switch=True, err=co.err,
                            unread=clone is not None, ensure_tree=repo.ensure_tree,
                            # clone's own checkout writes a full index, whatever index.sparse says
                            sparse=repo.sparse_checkout() if clone is None else None,
                            resolve_undo=resolve_undo_data(plan.resolve_undo),
                            changed=_changed(plan, entries, old.entries),
                            # Every entry written (a clone, -f into an empty work tree), the
                            # coordinator is at its peak as it writes the index (each entry with
                            # its stat data, nothing else let go yet), and OpenSSL's library, 4 MiB
                            # resident once loaded, took it above git's main process (52 -> 55 MiB
                            # at 100,000 files, git's 54); a switch's peak is its merge's, and its
                            # index is written 35 ms sooner so.
                            openssl=len(plan.write) < len(entries)))
    return entries, differing


def _changed(plan: Plan, entries: list[Entry], old: dict[bytes, Entry]) -> bool:
    """Whether the new index (``entries``) adds, removes or rewrites an
    entry of the ``old`` one, without the plan's dictionary (which the
    switch may have let go: :func:`switch._order_index`)."""
    return bool(plan.write or plan.remove) or len(entries) != len(old) or any(e.name not in old for e in entries)


def let_go_source(old) -> bool:
    """Whether the index read (``old``) may be let go as far as a merge
    replaces its entries (``twoway.plan_switch``'s ``let_go``: each made
    the new one in place): what is written after the merge reads of it
    its version, extensions and names
    (:func:`index_state.index_chunks`), not the entries replaced, unless it
    was split (an entry's place in the shared index) or sparse (its
    directories). Then the entries as read go at once
    (``old.source.entries``: only such an index reads them after a
    switch's merge); the caller's own readers of replaced entries (the
    sparse patterns, submodule moves) are its to rule out."""
    state = old.source
    if state is None or state.file is None or state.split is not None or state.sparse:
        return False
    state.let_entries_go()
    return True


def index_order(co: Checkout, plan: Plan, target: TreeFiles, differing: dict[bytes, bytes | None] | None = None,
                found: Callable[[], None] | None = None) -> tuple[list[Entry], bytes | None, dict[bytes, bytes | None]]:
    """The new index's entries in order, its TREE extension, and where it
    differs from the target (``differing``, unless found already:
    :func:`target_differences`): what :func:`write_index` and
    ``show_local_changes`` need of the plan and the target alone (names,
    modes, ids; not the stat data the writing fills in), so that a switch
    can have them made while its helpers write (``co.meanwhile``, kept in
    ``co.index_order``). ``found``: called once the differences are
    found, before the order is made (what lets the target's files go: the
    sort's peak held them). A plan whose dictionary is let go already
    writes every entry (:func:`switch._checked_oneway`): its
    :attr:`plan.Plan.write` is the new index, in index order."""
    if differing is None:
        differing = target_differences(target, plan)
    if found is not None:
        found()
    entries = plan.write if plan.entries is None else [plan.entries[p] for p in sorted(plan.entries)]
    return entries, cache_tree(target, differing, co.repo, entries), differing


def apply_sparse(co: Checkout, plan: Plan, old: dict[bytes, Entry], sparse, reset: bool = False) -> str:
    """Sparse checkout over the plan (see :mod:`sparse`; ``sparse``: the
    patterns, or None); git's warnings (``reset``: a ``-f`` checkout, see
    :func:`sparse.apply_sparse_checkout`). A file is up to date by
    ``ie_match_stat`` alone (``verify_uptodate_sparse``): stat data that
    differ mean changed, its content looked at only when racy; so an
    assume-unchanged file whose stat data refresh left as they were is
    kept, as git keeps it."""
    from ..sparse import apply_sparse_checkout

    if sparse is None:
        return ""
    return apply_sparse_checkout(plan, old, sparse, co.top, lambda e, st: worktree_matches(
        e, co.top + e.name, st, co.repo.hash_name, co.to_worktree, 0, co.core, co.to_git, stat_only=True),
        reset)


def target_differences(target: TreeFiles, plan: Plan) -> dict[bytes, bytes | None]:
    """The paths at which the new index (the plan's entries) and the
    target differ, each with the target's value there (None: the target
    lacks it). Everywhere else the new index holds the target's entry."""
    tf, pe = target.files, plan.entries
    if plan.merged is not None:
        # Only the merged paths can differ (Plan.merged): a third of a
        # 100,000-file index in a big switch, a handful in a small one; the
        # target's values there are the plan's when it took the files over.
        values = map(tf.get, plan.merged) if plan.merged_values is None else plan.merged_values
        get = pe.get
        return {p: t for p, t in zip(plan.merged, values, strict=True)  # (entry_differs, inline for 100644)
                if (t != e.oid if (e := get(p)) is not None and t is not None and e.mode == REGULAR_FILE
                    else entry_differs(e, t))}
    differing = [p for p, e in pe.items()  # (entry_differs, inline for 100644: every entry)
                 if (t := tf.get(p)) is None or (t != e.oid if e.mode == REGULAR_FILE else entry_differs(e, t))]
    # The target's paths the index lacks: none when all the target's paths
    # were among those compared (the usual case, found without a second pass).
    if len(tf) != len(pe) - sum(1 for p in differing if p not in tf):
        differing += [p for p in tf if p not in pe]
    return {p: tf.get(p) for p in differing}


def cache_tree(target: TreeFiles, differing: dict[bytes, bytes | None], repo: Repository,
               entries: list[Entry]) -> bytes | None:
    """A TREE extension from the target's trees, invalid where the index
    differs (``differing``: :func:`target_differences`), then repaired
    where a tree of the index's content exists (``entries``: the plan's,
    in index order)."""
    if target.tree_id is None:
        return None
    invalid: set[bytes] = set()
    for p in differing:
        d = p
        while True:
            slash = d.rfind(b"/")
            d = d[:slash] if slash != -1 else b""
            invalid.add(d)
            if not d:
                break
    trees = target.trees
    if invalid:
        from ..cachetree import repair

        trees = dict(trees)
        invalid = repair(trees, invalid, entries, repo.hash_name, repo.odb.has_object)
    return build_cache_tree(trees, invalid)
