"""A new repository's git directory, as ``builtin/init-db.c`` makes it for a
clone (``init_db``: ``create_default_files``).

What git makes itself, before the templates (:mod:`templates`) are copied
over it: ``refs/heads`` and ``refs/tags``, ``objects/info`` and
``objects/pack``, ``HEAD`` naming the branch to start on, and ``config``
with the ``[core]`` settings git writes for a non-bare repository
(``repositoryformatversion``, ``filemode`` as the filesystem allows it,
``bare``, ``logallrefupdates``; ``precomposeunicode`` on macOS, which git
probes and finds true on its filesystems); for sha256 objects, format
version 1, whose ``extensions.objectFormat`` the clone writes after the
remote's settings, where ``cmd_clone`` puts it once it knows the remote's
format (``initialize_repository_version``). ``description``,
``info/exclude``, ``hooks/`` and ``branches/`` come from the templates only,
as in git.

Why not dulwich's ``Repo.init``: importing ``dulwich.repo`` and
``dulwich.config`` costs a clone about 45 ms (``typing``, ``logging``,
``pathlib``, ``dataclasses`` and ``inspect``), a tenth of a clone of git.git
here, for a dozen ``mkdir`` and two small files.
"""

from __future__ import annotations

import os
import stat
import sys

from .configset import format_section
from .wrapper import write_locked

__all__ = ["init_db"]

#: ``GIT_REPO_VERSION`` and ``GIT_REPO_VERSION_READ``'s one step: what a
#: sha1 repository is made with, and what an extension needs.
GIT_REPO_VERSION = 0
GIT_REPO_VERSION_EXTENSIONS = 1


def init_db(gitdir: str, object_format: str, head: bytes) -> None:
    """Make ``gitdir`` (it must not exist) for a work tree beside it, with
    ``HEAD`` a symbolic ref to ``head`` (``refs/heads/<name>``)."""
    os.mkdir(gitdir)
    for d in (("refs",), ("refs", "heads"), ("refs", "tags"), ("objects",), ("objects", "info"),
              ("objects", "pack")):
        os.mkdir(os.path.join(gitdir, *d))
    write_locked(os.path.join(gitdir, "HEAD"), b"ref: " + head + b"\n")
    core = [(b"repositoryformatversion", b"%d" % (GIT_REPO_VERSION if object_format == "sha1"
                                                  else GIT_REPO_VERSION_EXTENSIONS)),
            (b"filemode", _bool(_trust_executable_bit(os.path.join(gitdir, "HEAD")))),
            (b"bare", b"false"),
            (b"logallrefupdates", b"true")]
    if sys.platform == "darwin":
        core.append((b"precomposeunicode", b"true"))
    write_locked(os.path.join(gitdir, "config"), format_section(b"core", None, core))


def _bool(value: bool) -> bytes:
    return b"true" if value else b"false"


def _trust_executable_bit(path: str) -> bool:
    """``create_default_files``' probe for ``core.filemode``: the executable
    bit of a file in the repository flipped, seen flipped, and put back."""
    st1 = os.lstat(path)
    try:
        os.chmod(path, st1.st_mode ^ stat.S_IXUSR)
        st2 = os.lstat(path)
        os.chmod(path, st1.st_mode)
    except OSError:
        return False
    return st1.st_mode != st2.st_mode
