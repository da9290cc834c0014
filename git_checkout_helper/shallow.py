"""A repository's rewritten parents: ``shallow.c``'s ``shallow`` file and
``commit.c``'s graft file, read and written as git reads and writes them.

Kept apart from :mod:`transport` (which fetches through dulwich's object
store) so that a commit walk can read them without importing dulwich.
"""

from __future__ import annotations

import os

__all__ = ["commit_grafts", "read_shallow", "write_shallow"]


def read_shallow(gitdir: str) -> set[bytes]:
    """``is_repository_shallow``: the hex ids listed in ``<gitdir>/shallow``."""
    try:
        with open(os.path.join(gitdir, "shallow"), "rb") as f:
            return {line.strip() for line in f if line.strip()}
    except FileNotFoundError:
        return set()


def write_shallow(gitdir: str, shallow: set[bytes]) -> None:
    """``commit_shallow_file``: one hex id a line (nothing when not shallow)."""
    if not shallow:
        return
    path = os.path.join(gitdir, "shallow")
    lock = path + ".lock"
    with open(lock, "wb") as f:
        f.write(b"".join(s + b"\n" for s in sorted(shallow)))
    os.rename(lock, path)


def commit_grafts(commondir: str, graft_file: str | None, hexsz: int) -> dict[bytes, tuple[bytes, ...]]:
    """``prepare_commit_graft``: each commit's parents as the graft file
    (``graft_file``, else ``info/grafts``: ``<id> <parent>...`` a line, ``#``
    comments) gives them, then the shallow commits' (none), which replace
    a graft of the same commit; lines of ids of another length are skipped."""
    grafts: dict[bytes, tuple[bytes, ...]] = {}
    try:
        with open(graft_file or os.path.join(commondir, "info", "grafts"), "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        ids = line.split()
        if ids and not line.startswith(b"#") and all(len(i) == hexsz for i in ids):
            grafts[ids[0]] = tuple(ids[1:])
    grafts.update((oid, ()) for oid in read_shallow(commondir) if len(oid) == hexsz)
    return grafts
