"""Sparse checkout as ``unpack-trees.c`` applies it.

``core.sparseCheckout`` with the per-worktree ``$GIT_DIR/info/sparse-checkout``
patterns (``dir.c`` ``get_sparse_checkout_patterns``), cone or not
(``core.sparseCheckoutCone``; a cone file git would not accept as cone
falls back to full patterns, as ``add_pattern_to_hashsets`` does).

:func:`apply_sparse_checkout` mirrors unpack-trees' two sparse loops
(``mark_new_skip_worktree`` and ``apply_sparse_checkout``) over a plan:
entries outside the patterns get skip-worktree and are not written; a
clean file leaving the patterns is removed, a dirty one is kept (entry
not skip-worktree) with git's warning; an entry coming back into the
patterns is written unless a file is already there (kept, with git's
warning); entries staying outside are neither written nor removed.

The sparse index (``sdir`` directory entries) is :mod:`sparse_index`'s.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

from .index import S_IFGITLINK, Entry
from .index_file import CE_SKIP_WORKTREE, CE_SKIP_WORKTREE_IN_CORE
from .wildmatch import casefold

__all__ = ["SparseCheckout", "apply_sparse_checkout", "init_clone_sparse_checkout", "load_sparse_checkout",
           "skip_worktree"]

#: What ``git sparse-checkout set`` without directories writes in cone mode:
#: the files at the top only.
CONE_TOP_ONLY = b"/*\n!/*/\n"


def skip_worktree(e: Entry) -> bool:
    """``ce_skip_worktree``."""
    return bool(e.ce_flags & CE_SKIP_WORKTREE_IN_CORE)


class SparseCheckout:
    """The patterns of ``info/sparse-checkout``, matched as ``dir.c``
    ``path_matches_pattern_list`` does (cone: the recursive and parent
    directory sets; otherwise gitignore-style patterns, last match wins,
    a directory's result the default for what is below it). ``ignore_case``
    (``core.ignoreCase``): both match case-insensitively (the sets' own
    comparison, ``pl_hashmap_cmp``, and ``fnmatch_icase``): their paths are
    kept case-folded, and so is each path asked about."""

    def __init__(self, lines: list[bytes], cone: bool, ignore_case: bool = False) -> None:
        self.recursive: set[bytes] | None = None
        self.parents: set[bytes] = set()
        self.full_cone = False
        self.fold = ignore_case
        if cone:
            self._parse_cone([casefold(line) for line in lines] if ignore_case else lines)
        if self.recursive is None:
            from .ignore import IgnoreRules, parse_patterns  # (only here: a cone needs neither)

            self.patterns = parse_patterns(b"\n".join(lines), b"", ignore_case)
            self._last_match = IgnoreRules.last_match

    def _parse_cone(self, lines: list[bytes]) -> None:
        """``add_pattern_to_hashsets``: ``/*``, ``!/*/``, ``/d/``, ``!/d/*/``
        only; anything else leaves cone matching off."""
        recursive: set[bytes] = set()
        parents: set[bytes] = set()
        full_cone = False
        for line in lines:
            if line in (b"/*", b"!/*/"):
                full_cone = line == b"/*"  # "/*" alone: everything (pl->full_cone)
                continue
            if line.startswith(b"!/") and line.endswith(b"/*/") and len(line) > 5:
                d = line[2:-3]
                if d not in recursive:
                    return
                recursive.discard(d)
                parents.add(d)
                continue
            if line.startswith(b"/") and line.endswith(b"/") and len(line) > 2 and b"*" not in line:
                recursive.add(line[1:-1])
                continue
            return
        self.recursive, self.parents, self.full_cone = recursive, parents, full_cone

    def dir_included(self, d: bytes) -> bool:
        """Cone mode: is directory ``d`` inside the patterns
        (``path_in_sparse_checkout`` of ``d/``): a parent of a cone, or in one."""
        if self.fold:
            d = casefold(d)
        if self.full_cone or d in self.parents:
            return True
        while d:
            if d in self.recursive:
                return True
            d = d[:d.rfind(b"/")] if b"/" in d else b""
        return False

    def excludes(self, path: bytes) -> bool:
        """Is ``path`` (a file) outside the patterns (``CE_NEW_SKIP_WORKTREE``)?"""
        return not self.included(path)

    def included(self, path: bytes) -> bool:
        """Is ``path`` (a file) inside the patterns?"""
        if self.fold:
            path = casefold(path)
        if self.recursive is not None:
            if self.full_cone or path in self.recursive:
                return True
            slash = path.rfind(b"/")
            if slash < 0:
                return True  # every file at the top
            if path[:slash] in self.parents:
                return True
            d = path
            while slash >= 0:
                d = d[:slash]
                if d in self.recursive:
                    return True
                slash = d.rfind(b"/")
            return False
        # clear_ce_flags_dir / clear_ce_flags_1: each leading directory's
        # decision is the default for what it holds; a pattern ending in "/"
        # matches a directory only, never the file below it.
        result, last_match = False, self._last_match
        parts = path.split(b"/")
        for i in range(1, len(parts) + 1):
            hit = last_match(self.patterns, b"/".join(parts[:i]), parts[i - 1], i < len(parts))
            if hit is not None:
                result = hit
        return result


def load_sparse_checkout(config, gitdir: str) -> SparseCheckout | None:
    """``core.sparseCheckout`` and its patterns; None when it is off or the
    pattern file is missing (unpack-trees then skips sparse checkout)."""
    from .config import _get, git_config_bool
    from .coresettings import ignore_case

    raw = _get(config, b"core", b"sparseCheckout")
    if raw is None or not git_config_bool("core.sparseCheckout", raw):
        return None
    try:
        with open(os.path.join(gitdir, "info", "sparse-checkout"), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    lines = [ln.rstrip(b"\r").strip() for ln in data.split(b"\n")]
    lines = [ln for ln in lines if ln and not ln.startswith(b"#")]
    cone_raw = _get(config, b"core", b"sparseCheckoutCone")
    cone = cone_raw is not None and git_config_bool("core.sparseCheckoutCone", cone_raw)
    return SparseCheckout(lines, cone, ignore_case(config))


NOT_UPTODATE = "The following paths are not up to date and were left despite sparse patterns:"
ALREADY_PRESENT = "The following paths were already present and thus not updated despite sparse patterns:"
#: :data:`NOT_UPTODATE` as a merge without porcelain messages (``checkout -f``'s
#: ``reset_tree``) says it: an error line a path, as it is met.
PLUMBING_NOT_UPTODATE = "Path '%s' not uptodate; will not remove from working tree."


def apply_sparse_checkout(
    plan,
    old: dict[bytes, Entry],
    sparse: SparseCheckout,
    top: bytes,
    clean: Callable[[Entry, os.stat_result], bool],
    reset: bool = False,
) -> str:
    """Apply the patterns to ``plan`` (entries, write, remove) in place;
    returns git's warnings (``display_warning_msgs``), or "";
    ``reset``: a ``-f`` checkout (``reset_tree``), which says "not uptodate"
    on :data:`PLUMBING_NOT_UPTODATE` lines instead, and overwrites what is
    already present where a path comes into the patterns
    (``UNPACK_RESET_OVERWRITE_UNTRACKED``: ``verify_absent`` lets it be).

    ``clean(entry, st)``: the file matches the entry (``verify_uptodate``).
    """
    writing = {e.name: e for e in plan.write}
    remove = [p for p in plan.remove if not (p in old and skip_worktree(old[p]))]
    extra_remove: list[bytes] = []
    unremovable: list[bytes] = []
    not_uptodate: list[bytes] = []
    present: list[bytes] = []
    for path in sorted(plan.entries):  # (index order; the plan's is not)
        e = plan.entries[path]
        o = old.get(path)
        if o is not None:
            was = skip_worktree(o)  # merged_entry migrates CE_SKIP_WORKTREE
        else:
            was = not sparse.included(path)  # CE_ADDED outside: already skip
        new = not sparse.included(path)
        want = (e.extended_flags & ~CE_SKIP_WORKTREE) | (CE_SKIP_WORKTREE if new else 0)
        if want != e.extended_flags:
            if e is o:  # the old index's entry stays as read
                e = plan.entries[path] = o.copy()
                if path in writing:
                    writing[path] = e
            e.extended_flags = want
        if was and new:
            writing.pop(path, None)
        elif not was and new:
            if path in writing:  # (CE_UPDATE: no check) CE_WT_REMOVE, its emptied directories with it
                del writing[path]
                if e.mode == S_IFGITLINK and _not_a_dir(top + path):
                    # remove_or_warn goes by the new entry's mode: a gitlink's
                    # rmdir, which the file (or symlink) there fails, and stays.
                    unremovable.append(path)
                    continue
                extra_remove.append(path)
                continue
            try:
                st = os.lstat(top + path)
            except FileNotFoundError:
                extra_remove.append(path)  # (nothing to unlink; its emptied directories go)
                continue
            except NotADirectoryError:
                st = None  # verify_uptodate_1: only ENOENT is no change
            if o is not None and (st is None or not clean(o, st)):
                e.extended_flags &= ~CE_SKIP_WORKTREE
                not_uptodate.append(path)
            else:
                extra_remove.append(path)
        elif was and not new:
            if not reset and os.path.lexists(top + path):
                writing.pop(path, None)
                present.append(path)
            else:
                writing[path] = e
    for path in remove:
        # A leaving entry outside the patterns is "not uptodate" whenever its
        # file is there (ce_match_stat_basic: a CE_REMOVE entry never
        # matches), and removed all the same (its CE_WT_REMOVE stays).
        if path in old and sparse.excludes(path):
            try:
                os.lstat(top + path)
            except FileNotFoundError:
                continue
            except OSError:
                pass
            not_uptodate.append(path)
    plan.write = [writing[p] for p in sorted(writing)]
    plan.remove = sorted(set(remove) | set(extra_remove))
    kept = "".join(f"warning: unable to rmdir '{p.decode('utf-8', 'replace')}': {os.strerror(errno.ENOTDIR)}\n"
                   for p in unremovable)
    if reset:
        return "".join(f"error: {PLUMBING_NOT_UPTODATE % p.decode('utf-8', 'surrogateescape')}\n"
                       for p in sorted(not_uptodate)) + kept
    out = []
    for msg, paths in ((NOT_UPTODATE, not_uptodate), (ALREADY_PRESENT, present)):
        if paths:
            listed = "".join(f"\t{p.decode('utf-8', 'surrogateescape')}\n" for p in sorted(paths))
            out.append(f"warning: {msg}\n{listed}\n")
    if out:
        out.append("After fixing the above paths, you may want to run `git sparse-checkout reapply`.\n")
    return "".join(out) + kept


def _not_a_dir(full: bytes) -> bool:
    """Something that is not a directory (a symlink to one included) is at ``full``."""
    try:
        return not stat.S_ISDIR(os.lstat(full).st_mode)
    except OSError:
        return False


def clear_skip_worktree_from_present_files(entries, config, top: bytes) -> None:
    """``sparse-index.c`` ``clear_skip_worktree_from_present_files``, run as
    the index is read: with ``core.sparseCheckout`` (and unless
    ``sparse.expectFilesOutsideOfPatterns``), a skip-worktree entry whose
    file is present is no longer skip-worktree."""
    from .config import _get, git_config_bool

    raw = _get(config, b"core", b"sparseCheckout")
    if raw is None or not git_config_bool("core.sparseCheckout", raw):
        return
    raw = _get(config, b"sparse", b"expectFilesOutsideOfPatterns")
    if raw is not None and git_config_bool("sparse.expectFilesOutsideOfPatterns", raw):
        return
    for e in entries.values() if isinstance(entries, dict) else entries:
        if e.ce_flags & CE_SKIP_WORKTREE_IN_CORE and os.path.lexists(top + e.name):
            e.extended_flags &= ~CE_SKIP_WORKTREE


def init_clone_sparse_checkout(gitdir: str) -> None:
    """``git clone --sparse`` (``git_sparse_checkout_init``, which runs
    ``git sparse-checkout set``): cone mode with the top-level files only.
    ``extensions.worktreeConfig`` in the config, ``core.sparseCheckout`` and
    ``core.sparseCheckoutCone`` in ``config.worktree``, the patterns in
    ``info/sparse-checkout``; done before the checkout reads its settings."""
    from .configset import append_section, enable_worktree_config

    enable_worktree_config(os.path.join(gitdir, "config"))
    append_section(os.path.join(gitdir, "config.worktree"), b"core", None,
                   [(b"sparseCheckout", b"true"), (b"sparseCheckoutCone", b"true")])
    os.makedirs(os.path.join(gitdir, "info"), exist_ok=True)
    with open(os.path.join(gitdir, "info", "sparse-checkout"), "wb") as f:
        f.write(CONE_TOP_ONLY)
