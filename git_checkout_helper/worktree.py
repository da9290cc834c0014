"""A repository's worktrees, as git's ``worktree.c`` lists them: ``get_worktrees``
(the main worktree, then ``worktrees/<id>``), ``find_shared_symref`` and
``die_if_checked_out`` (a branch that another worktree has checked out, or is
rebasing or bisecting).
"""

from __future__ import annotations

import os

from .discovery import GitDirs, NotAGitRepository, read_repository_format

__all__ = ["Worktree", "die_if_checked_out", "find_shared_symref", "list_worktrees"]


class Worktree:
    """``struct worktree``: one entry of ``get_worktrees``."""

    __slots__ = ("path", "gitdir", "id", "is_bare", "is_current")

    def __init__(self, path: str, gitdir: str, id: str | None, is_bare: bool, is_current: bool) -> None:
        self.path = path
        self.gitdir = gitdir
        self.id = id
        self.is_bare = is_bare
        self.is_current = is_current


def list_worktrees(dirs: GitDirs) -> list[Worktree]:
    """``get_worktrees``: the main worktree first, then ``worktrees/<id>``."""
    current = os.path.realpath(dirs.gitdir)
    common = os.path.realpath(dirs.commondir)
    main_path = common[:-5] if common.endswith("/.git") else common
    main_bare = dirs.bare and not dirs.is_linked_worktree
    if not main_bare and dirs.is_linked_worktree:
        fmt = read_repository_format(os.path.join(common, "config"))
        main_bare = bool(fmt.is_bare)
    out = [Worktree(main_path, common, None, main_bare, current == common)]
    base = os.path.join(common, "worktrees")
    try:
        ids = sorted(os.listdir(base))
    except OSError:
        ids = []
    for wid in ids:
        wdir = os.path.join(base, wid)
        try:
            with open(os.path.join(wdir, "gitdir"), "rb") as f:
                path = os.fsdecode(f.read().rstrip())
        except OSError:
            continue
        if not path:
            continue
        if path.endswith("/.git"):
            path = path[:-5]
        out.append(Worktree(path, wdir, wid, False, os.path.realpath(wdir) == current))
    return out


def _read_text(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read().strip()
    except OSError:
        return None


def _head_symref(gitdir: str) -> bytes | None:
    head = _read_text(os.path.join(gitdir, "HEAD"))
    if head is not None and head.startswith(b"ref:"):
        return head[4:].strip()
    return None


def find_shared_symref(dirs: GitDirs, target: bytes) -> Worktree | None:
    """``find_shared_symref(worktrees, "HEAD", target)``: the worktree whose
    HEAD names ``target`` (or that is rebasing or bisecting it)."""
    for wt in list_worktrees(dirs):
        if wt.is_bare:
            continue
        ref = _head_symref(wt.gitdir)
        if ref is None:
            for state in ("rebase-merge", "rebase-apply"):
                if _read_text(os.path.join(wt.gitdir, state, "head-name")) == target:
                    return wt
            start = _read_text(os.path.join(wt.gitdir, "BISECT_START"))
            if start is not None and target.startswith(b"refs/heads/") and start == target[11:]:
                return wt
            continue
        if ref == target:
            return wt
    return None


def die_if_checked_out(dirs: GitDirs, branch: bytes, ignore_current_worktree: bool = True) -> None:
    """``die_if_checked_out``: a branch another worktree has checked out."""
    wt = find_shared_symref(dirs, branch)
    if wt is not None and (not ignore_current_worktree or not wt.is_current):
        short = branch[11:] if branch.startswith(b"refs/heads/") else branch
        raise NotAGitRepository(f"'{os.fsdecode(short)}' is already checked out at '{wt.path}'")
