"""The sparse index (``sparse-index.c``): directory entries standing for whole trees.

In a cone-mode sparse checkout with ``index.sparse``, git writes a directory
outside the cone whose entries are all skip-worktree as one entry: mode
040000, the tree's id, the name with a trailing slash, skip-worktree, and
an empty ``sdir`` extension marks the index as sparse.

Reading, :func:`expand` is ``ensure_full_index``: every such entry becomes
the blobs of its tree, skip-worktree, no stat data; the checkout then works
on the full index as git's does after expanding. Writing after a path
restore or ``--all`` that changed nothing below a sparse directory (git never
expanded), :func:`unexpanded` puts the directory entries back and the index
keeps its form and its ``TREE``. Otherwise
:func:`convert_to_sparse` is what ``do_write_locked_index`` does before it
writes: when :func:`sparse_index_allowed`, the cache tree is computed from
the entries (``cache_tree_update``; a tree that is not in the object store
yet is written there, as git's ``WRITE_TREE_MISSING_OK`` update writes it)
and every directory outside the cone holding only merged, skip-worktree,
non-gitlink entries is collapsed (``convert_to_sparse_rec``); the ``TREE``
extension is then that of the collapsed index, a collapsed directory a leaf
of one entry. An index with unmerged or intent-to-add entries stays full.
"""

from __future__ import annotations

from collections.abc import Callable

from .cachetree import tree_object
from .index import S_IFGITLINK, Entry, build_cache_tree
from .index_file import (
    CE_INTENT_TO_ADD_IN_CORE,
    CE_SKIP_WORKTREE,
    CE_SKIP_WORKTREE_IN_CORE,
    CE_STAGEMASK,
    index_order_key,
)
from .sparse import SparseCheckout
from .tree import value_mode, value_oid

__all__ = ["S_IFSPARSEDIR", "collapse_cache_tree", "convert_to_sparse", "expand", "sparse_index_allowed", "switch_keeps_expanded",
           "unexpanded"]

#: ``S_ISSPARSEDIR``: the mode of a sparse directory entry.
S_IFSPARSEDIR = 0o040000

_TreeFiles = Callable[[bytes], dict[bytes, bytes]]  # (values: tree.tree_value's)


def expand(entries: list[Entry], tree_files: _TreeFiles) -> list[Entry]:
    """``ensure_full_index``: each sparse directory entry replaced by the
    files of its tree (``tree_files(raw tree id)``: relative path -> value,
    :func:`tree.tree_value`), skip-worktree and extended, as
    ``add_path_to_index`` makes them."""
    out: list[Entry] = []
    for e in entries:
        if e.mode != S_IFSPARSEDIR:
            out.append(e)
            continue
        files = tree_files(e.oid)
        out.extend(Entry(e.name + rel, value_mode(v), value_oid(v), extended_flags=CE_SKIP_WORKTREE)
                   for rel, v in sorted(files.items()))
    out.sort(key=index_order_key)
    return out


def unexpanded(entries: list[Entry], read: list[Entry], expanded: list[Entry]) -> list[Entry] | None:
    """The entries as git writes them after an operation that never expanded
    the index: every sparse directory entry of the index ``read`` in place of
    its files, when nothing below it changed (``expanded``: the same index
    after :func:`expand`); None when something did (git must have expanded,
    and then it collapses afresh)."""
    dirs = [e for e in read if e.mode == S_IFSPARSEDIR]
    if not dirs:
        return None
    prefixes = tuple(d.name for d in dirs)

    def below(es):
        return {e.name: (e.mode, e.oid, e.flags, e.extended_flags) for e in es if e.name.startswith(prefixes)}

    if below(entries) != below(e for e in expanded if e.mode != S_IFSPARSEDIR):
        return None
    out = [e for e in entries if not e.name.startswith(prefixes)] + dirs
    out.sort(key=index_order_key)
    return out


def sparse_index_allowed(config, sparse: SparseCheckout | None, split: bool) -> bool:
    """``is_sparse_index_allowed``: cone patterns git accepts as cone,
    ``index.sparse``, and no split index."""
    from .config import _get, git_config_bool

    if sparse is None or split or sparse.recursive is None:
        return False
    raw = _get(config, b"index", b"sparse")
    return raw is not None and git_config_bool("index.sparse", raw)


def switch_keeps_expanded(read: list[Entry], sparse: SparseCheckout) -> frozenset[bytes] | None:
    """After a switch from the sparse index ``read``: the directories that
    stay expanded, or None when git expands the whole index.

    git's two-way merge works on the sparse index itself: a sparse
    directory entry, or a tree outside the cone that the index has nothing
    of, becomes a directory entry for the new tree, and the files of a
    directory the index held expanded are merged one by one and stay files
    (its write does not collapse an index it never expanded). A sparse
    directory now inside the cone makes it expand everything, and the
    write collapses afresh."""
    dirs = [e.name[:-1] for e in read if e.mode == S_IFSPARSEDIR]
    if any(sparse.dir_included(d) for d in dirs):
        return None
    keep: set[bytes] = set()
    for e in read:
        if e.mode != S_IFSPARSEDIR:
            d = e.name
            while b"/" in d:
                d = d[:d.rfind(b"/")]
                if d in keep:
                    break
                keep.add(d)
    return frozenset(keep)


def collapse_cache_tree(data: bytes, entries: list[Entry], rawsz: int) -> bytes:
    """A switch's ``TREE`` (valid where the index matches the target) for
    the collapsed ``entries``, as git's two-way merge builds it on a sparse
    index: each sparse directory a leaf of one entry with its tree's id, the
    counts above it lowered to match, invalid nodes left invalid."""
    from .cachetree import CacheTree

    root = CacheTree.parse(data, rawsz)
    leaves = {e.name[:-1]: e.oid for e in entries if e.mode == S_IFSPARSEDIR}
    _collapse_node(root, b"", leaves)
    return root.serialize()


def _collapse_node(node, path: bytes, leaves: dict[bytes, bytes]) -> int:
    """:func:`collapse_cache_tree` below ``node`` (at ``path``): how many
    entries it lost (not a closure: :func:`cli.start_program`)."""
    removed = 0
    for sub in node.subs:
        p = path + b"/" + sub.name if path else sub.name
        if p in leaves:
            removed += sub.count - 1 if sub.count >= 0 else 0
            sub.count, sub.oid, sub.subs = 1, leaves[p], []
        else:
            removed += _collapse_node(sub, p, leaves)
    if node.count >= 0:
        node.count -= removed
    return removed


def convert_to_sparse(entries: list[Entry], sparse: SparseCheckout, hash_name: str,
                      ensure_tree: Callable[[bytes, bytes], None],
                      keep: frozenset[bytes] = frozenset()) -> tuple[list[Entry], bytes] | None:
    """``convert_to_sparse``: the collapsed entries and their ``TREE``
    extension, or None when the index stays full (empty, unmerged entries,
    intent-to-add entries). ``ensure_tree(raw id, tree content)`` stores a
    tree the object store lacks; the directories in ``keep`` are not
    collapsed (:func:`switch_keeps_expanded`)."""
    if not entries or any(e.ce_flags & (CE_STAGEMASK | CE_INTENT_TO_ADD_IN_CORE) for e in entries):
        return None
    trees = _cache_tree_update(entries, hash_name, ensure_tree)
    out: list[Entry] = []
    _collapse(entries, 0, len(entries), b"", trees, sparse, keep, out)
    return out, build_cache_tree(_cache_tree_update(out, hash_name, None), set())


def _collapse(entries: list[Entry], lo: int, hi: int, d: bytes, trees, sparse: SparseCheckout,
              keep: frozenset[bytes], out: list[Entry]) -> None:
    """``convert_to_sparse_rec`` over ``entries[lo:hi]``, the entries below directory ``d``."""
    if d and d not in keep and not sparse.dir_included(d) and all(
            e.ce_flags & CE_SKIP_WORKTREE_IN_CORE and e.mode != S_IFGITLINK for e in entries[lo:hi]):
        out.append(Entry(d + b"/", S_IFSPARSEDIR, trees[d][0], extended_flags=CE_SKIP_WORKTREE))
        return
    base = len(d) + 1 if d else 0
    i = lo
    while i < hi:
        e = entries[i]
        slash = e.name.find(b"/", base)
        if slash < 0 or e.mode == S_IFSPARSEDIR and slash == len(e.name) - 1:
            out.append(e)
            i += 1
            continue
        sub = e.name[:slash]
        span = trees[sub][2]
        _collapse(entries, i, i + span, sub, trees, sparse, keep, out)
        i += span


def _cache_tree_update(entries: list[Entry], hash_name: str, ensure_tree) -> dict:
    """``cache_tree_update`` of a fully merged index: directory -> (raw tree
    id, subtree names, entries below it), a sparse directory entry a leaf
    counted as one. ``ensure_tree`` None: the ids only."""
    trees: dict[bytes, tuple[bytes, list[bytes], int]] = {}
    _update_one(entries, 0, len(entries), b"", trees, hash_name, ensure_tree)
    return trees


def _update_one(entries: list[Entry], lo: int, hi: int, d: bytes, trees: dict, hash_name: str,
                ensure_tree) -> None:
    """:func:`_cache_tree_update` for directory ``d`` (``entries[lo:hi]``;
    not a closure: :func:`cli.start_program`)."""
    base = len(d) + 1 if d else 0
    files: list[tuple[bytes, int, bytes]] = []
    subs: list[bytes] = []
    i = lo
    while i < hi:
        e = entries[i]
        slash = e.name.find(b"/", base)
        if slash < 0:
            files.append((e.name[base:], e.mode, e.oid))
            i += 1
            continue
        sub = e.name[:slash]
        j = i + 1
        prefix = sub + b"/"
        while j < hi and entries[j].name.startswith(prefix):
            j += 1
        if e.mode == S_IFSPARSEDIR and e.name == prefix:
            trees[sub] = (e.oid, [], 1)
        else:
            _update_one(entries, i, j, sub, trees, hash_name, ensure_tree)
        subs.append(sub[base:])
        i = j
    full = [d + b"/" + s if d else s for s in subs]
    oid, content = tree_object(files, [(s, trees[f][0]) for s, f in zip(subs, full, strict=True)], hash_name)
    if ensure_tree is not None:
        ensure_tree(oid, content)
    trees[d] = (oid, subs, sum(trees[f][2] for f in full) + len(files))
