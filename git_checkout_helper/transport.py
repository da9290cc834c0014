"""Fetching from a repository on this machine as git's transport does.

``git clone file:///path`` (and a plain path whose repository is shallow)
is not ``--local``: objects come through upload-pack, not hard links. This
module is that exchange done in-process through dulwich's object store:

* :func:`shallow_boundary` is ``shallow.c``'s ``get_shallow_commits``: a
  breadth-first walk from the wanted tips, commits at ``depth`` becoming
  shallow, and the source's own shallow commits ending the walk (they have
  no parents there);
* :func:`fetch_into` is what upload-pack sends and fetch-pack stores: every
  object reachable from the wants but not behind a shallow commit
  (dulwich's ``MissingObjectFinder``), written into the destination as one
  pack; the caller writes ``shallow`` (:func:`shallow.write_shallow`) as
  fetch-pack's ``update_shallow`` does for a clone (the shallow points the
  pack holds, sorted).
"""

from __future__ import annotations

from collections.abc import Iterable

from dulwich.objects import Commit, Tag

__all__ = ["fetch_into", "shallow_boundary"]


def _peel(store, sha: bytes) -> bytes | None:
    obj = store[sha]
    while isinstance(obj, Tag):
        obj = store[obj.object[1]]
    return obj.id if isinstance(obj, Commit) else None


def shallow_boundary(store, heads: Iterable[bytes], depth: int | None,
                     source_shallow: set[bytes]) -> tuple[set[bytes], set[bytes]]:
    """(the commits the new repository's ``shallow`` lists, every commit it gets), hex ids.

    ``depth`` None: only the source's shallow commits reachable from
    ``heads``. Otherwise commits ``depth`` steps from a tip (a tip is one)
    and the source's shallow commits nearer than that.
    """
    level: list[bytes] = []
    for h in heads:
        c = _peel(store, h)
        if c is not None:
            level.append(c)
    dist: dict[bytes, int] = {}
    shallow: set[bytes] = set()
    d = 1
    while level:
        nxt: list[bytes] = []
        for sha in level:
            if sha in dist:
                continue
            dist[sha] = d
            if sha in source_shallow or (depth is not None and d >= depth):
                shallow.add(sha)
                continue
            commit = store[sha]
            nxt.extend(p for p in commit.parents if p not in dist)
        level = nxt
        d += 1
    return shallow, set(dist)


def fetch_into(src_store, dst_store, wants: Iterable[bytes], shallow: set[bytes]) -> int:
    """Copy everything reachable from ``wants`` (not past ``shallow``) into
    ``dst_store`` as one pack; the number of objects."""
    from dulwich.object_store import MissingObjectFinder

    wants = list(dict.fromkeys(wants))
    if not wants:
        return 0
    finder = MissingObjectFinder(src_store, haves=[], wants=wants, shallow=frozenset(shallow))
    shas = [sha for sha, _hint in finder]
    if not shas:
        return 0
    dst_store.add_objects([(src_store[sha], None) for sha in shas])
    return len(shas)


