"""Submodules as ``checkout --recurse-submodules`` moves them.

Mirrors ``submodule.c`` (``submodule_move_head``, ``is_tree_submodule_active``,
``is_submodule_populated_gently``, ``submodule_has_dirty_index``,
``submodule_unset_core_worktree``), ``submodule-config.c``'s reading of
``.gitmodules``, ``dir.c``'s ``connect_work_tree_and_git_dir``, and the
``unpack-trees.c`` checks that call them (``verify_uptodate_1``,
``verify_absent_1``, ``merged_entry``, ``deleted_entry``, ``oneway_merge``).

What is read and written of a submodule lives here; the checks and moves a
checkout makes are :mod:`checkout.submodules`. git runs ``read-tree`` and
``update-ref`` in each submodule. We run our own checkout there instead: the
submodule's config, attributes, filters and helpers, its nested submodules
moved the same way, its HEAD detached at the gitlink's commit with git's
empty reflog message.

Everything is planned before the superproject is touched: git's dry runs,
with its messages, and then the move itself. Deliberate differences, each
where git loses a user's work without ``-f``:

* git's dry run (``read-tree -n -m``) looks at tracked files only, and the
  real move is ``read-tree -u --reset``. An untracked file that the new commit
  brings is overwritten, and a local change to a file both commits share is
  thrown away. Here the move is the two-way merge the dry run checked, with
  its untracked-file checks: such a file refuses the checkout (git's one-line
  message, then "Cannot update submodule"), and the local change is kept.
* Where git finds that conflict only after the superproject was updated (a
  submodule coming back into a directory holding untracked files), it leaves
  an emptied submodule index and exits 0. Here it is refused beforehand.
* A submodule the sparse-checkout patterns leave out is removed by git's
  forced ``unlink_entry``, local changes and all; here its removal is checked
  as any leaving submodule's, and a local change refuses the checkout.

* A submodule that a file replaces: git's write of the file removes the
  directory with every untracked file in it; here an untracked file (not an
  ignored one) refuses the checkout.

Refused (128, nothing touched), where git does something we do not: an
active submodule with no git dir.

With ``-f`` the submodules are reset, as git resets them.
"""

from __future__ import annotations

import os

from .configfile import ConfigFile, ConfigParseError, parse_config
from .index import Entry
from .repository import Repository
from .tree import entry_differs, value_oid
from .wrapper import write_in_full

__all__ = ["GITMODULES_FILE", "connect_work_tree_and_git_dir", "has_dirty_index", "is_submodule_active",
           "parse_gitmodules", "populated_gitdir", "set_core_worktree", "should_update_submodules",
           "submodule_env", "submodule_names"]

GITMODULES_FILE = b".gitmodules"

#: ``local_repo_env`` but the config parameters: what ``prepare_other_repo_env``
#: removes before it runs a command in a submodule.
LOCAL_REPO_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_OBJECT_DIRECTORY", "GIT_DIR",
                  "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE",
                  "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_SHALLOW_FILE",
                  "GIT_COMMON_DIR")


def should_update_submodules(config, flag: bool | None) -> bool:
    """``--[no-]recurse-submodules``, else ``submodule.recurse``."""
    if flag is not None:
        return flag
    from .config import _get, git_config_bool

    raw = _get(config, b"submodule", b"recurse")
    return raw is not None and git_config_bool("submodule.recurse", raw)


def submodule_names(repo: Repository, index: dict[bytes, Entry], head: dict) -> dict[bytes, bytes]:
    """``submodule_from_path(null_oid)``: path -> name from ``.gitmodules`` in
    the work tree, else the index's, else HEAD's (``config_from_gitmodules``)."""
    full = os.path.join(os.fsencode(repo.worktree), GITMODULES_FILE)
    if os.path.isfile(full):
        with open(full, "rb") as f:
            return parse_gitmodules(f.read())
    e = index.get(GITMODULES_FILE)
    oid = e.oid if e is not None else value_oid(head[GITMODULES_FILE]) if GITMODULES_FILE in head else None
    return parse_gitmodules(repo.odb.read_blob(oid)) if oid is not None else {}


def parse_gitmodules(data: bytes) -> dict[bytes, bytes]:
    """path -> name of a ``.gitmodules`` text. Names ``check_submodule_name``
    refuses are ignored, as git ignores them; ``include`` is a variable like
    any other there, as in git (which reads ``.gitmodules`` without includes)."""
    try:
        cf = ConfigFile.from_entries(parse_config(data, "file .gitmodules"))
    except ConfigParseError:  # a broken .gitmodules names no submodule
        return {}
    names: dict[bytes, bytes] = {}
    for section in cf.sections():
        if len(section) != 2 or section[0].lower() != b"submodule":
            continue
        name = section[1]
        if not name or b".." in name.replace(b"\\", b"/").split(b"/"):
            continue
        try:
            path = cf.get(section, b"path")
        except KeyError:
            continue
        names.setdefault(path, name)
    return names


def is_submodule_active(config, name: bytes, path: bytes) -> bool:
    """``is_tree_submodule_active``: ``submodule.<name>.active``, else the
    ``submodule.active`` pathspecs, else whether ``submodule.<name>.url`` is set."""
    from .config import get_exact, git_config_bool
    from .coresettings import _values_in_git_order

    raw = get_exact(config, (b"submodule", name), b"active")
    if raw is not None:
        return git_config_bool(f"submodule.{name.decode('utf-8', 'replace')}.active", raw)
    specs = _values_in_git_order(config, b"submodule", b"active")
    if specs:
        from .pathspec import parse_pathspec

        return parse_pathspec([s.decode("utf-8", "surrogateescape") for s in specs]).match(path)
    return get_exact(config, (b"submodule", name), b"url") is not None


def populated_gitdir(full: bytes) -> str | None:
    """``is_submodule_populated_gently``: the git dir ``<path>/.git`` leads to."""
    from .discovery import is_git_directory, read_gitfile

    dotgit = os.fsdecode(os.path.join(full, b".git"))
    target, _ = read_gitfile(dotgit)
    if target is not None:
        return target
    return dotgit if os.path.isdir(dotgit) and is_git_directory(dotgit) else None


def submodule_env(environ) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k not in LOCAL_REPO_ENV}


def has_dirty_index(sub: Repository, index) -> bool:
    """``submodule_has_dirty_index`` (``diff-index --cached --quiet HEAD``):
    whether the submodule's ``index`` (as read) differs from its HEAD's tree."""
    if index.unmerged:
        return True
    head = sub.tree_of(sub.head_commit()).files
    if len(head) != len(index.entries):
        return True
    return any(entry_differs(e, head.get(p)) for p, e in index.entries.items())


def connect_work_tree_and_git_dir(work_tree: bytes, git_dir: str) -> None:
    """``connect_work_tree_and_git_dir``: ``<work tree>/.git`` names the git
    dir and the git dir's ``core.worktree`` names the work tree, each
    relative to the other's real path."""
    wt, gd = os.path.realpath(os.fsdecode(work_tree)), os.path.realpath(git_dir)
    fd = os.open(os.path.join(wt, ".git"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        write_in_full(fd, b"gitdir: " + os.fsencode(os.path.relpath(gd, wt)) + b"\n")
    finally:
        os.close(fd)
    set_core_worktree(os.path.join(gd, "config"), os.fsencode(os.path.relpath(wt, gd)))


def set_core_worktree(path: str, value: bytes | None) -> None:
    """``git_config_set_in_file(<git dir>/config, "core.worktree", value)``:
    the key replaced where it is (or added to ``[core]``), or removed when
    ``value`` is None; every other byte kept."""
    from .configset import _read, _replace, quote_value

    if value is None and not os.path.exists(path):
        return  # a git dir elsewhere: nothing of ours to unset
    lines = _read(path).splitlines(keepends=True)
    out, in_core, done, core_end = [], False, False, None
    for line in lines:
        s = line.strip()
        if s.startswith(b"["):
            if in_core:
                core_end = len(out)
            in_core = s.lower() == b"[core]"
        elif in_core and s.split(b"=", 1)[0].strip().lower() == b"worktree":
            if value is not None and not done:
                out.append(b"\tworktree = " + quote_value(value) + b"\n")
                done = True
            continue
        out.append(line)
    if in_core:
        core_end = len(out)
    if value is not None and not done:
        line = b"\tworktree = " + quote_value(value) + b"\n"
        if core_end is None:
            out.append(b"[core]\n" + line)
        else:
            out.insert(core_end, line)
    if out != lines:
        _replace(path, b"".join(out))
