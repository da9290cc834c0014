"""``git parallel-clone``: make the repository, then check out with helpers.

A local source is cloned like ``git clone --local`` (``builtin/clone.c``:
``clone_local``): object files are hard-linked (copied across filesystems),
the source's branches become ``refs/remotes/origin/*`` in ``packed-refs``,
tags are kept, and the branch HEAD names is created with its upstream. Any
other URL goes through dulwich's clone without checkout. Either way the
checkout itself is ours.
"""

from __future__ import annotations

import io
import os
import shutil

from dulwich.config import ConfigFile
from dulwich.repo import Repo

__all__ = ["CloneError", "prepare_clone"]


class CloneError(Exception):
    def __init__(self, message: str, code: int = 128) -> None:
        super().__init__(message)
        self.code = code


def default_directory(source: str) -> str:
    """``git_url_basename``: the last path component without ``.git``/``/.git``."""
    s = source.rstrip("/")
    if s.endswith("/.git"):
        s = s[:-5]
    base = s.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    if base.endswith(".git"):
        base = base[:-4]
    return base or "repo"


def _source_gitdir(source: str) -> str | None:
    if "://" in source and not source.startswith("file://"):
        return None
    path = source[len("file://") :] if source.startswith("file://") else source
    if not os.path.exists(path):
        return None
    for cand in (os.path.join(path, ".git"), path):
        if os.path.isfile(cand) and cand.endswith(".git"):
            with open(cand, "rb") as f:
                data = f.read().strip()
            if data.startswith(b"gitdir: "):
                cand = os.path.normpath(os.path.join(os.path.dirname(cand), os.fsdecode(data[8:])))
        if os.path.isdir(os.path.join(cand, "objects")) and os.path.exists(os.path.join(cand, "HEAD")):
            return os.path.abspath(cand)
    return None


def _link_objects(src: str, dst: str) -> None:
    """Hard-link every object file (``copy_or_link_directory``), copy on failure."""
    for root, _dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        out = os.path.join(dst, rel) if rel != "." else dst
        os.makedirs(out, exist_ok=True)
        for name in files:
            s, d = os.path.join(root, name), os.path.join(out, name)
            if rel == "info" and name == "alternates":
                shutil.copyfile(s, d)
                continue
            try:
                os.link(s, d)
            except OSError:
                shutil.copy2(s, d)


def _is_local(source: str) -> bool:
    """A path (or file:// URL), not a URL or an scp-like ``host:path``."""
    if source.startswith("file://"):
        return True
    if "://" in source:
        return False
    colon, slash = source.find(":"), source.find("/")
    return colon == -1 or (slash != -1 and slash < colon)


def prepare_clone(source: str, directory: str | None, branch: str | None = None,
                  announce=None, filter_spec: str | None = None, err=None,
                  progress: bool = False, environ=None) -> tuple[str, str | None]:
    """Create the clone without a checkout; returns (work tree, ref to check out).

    ``announce(directory)`` is called once the source and the destination
    have been checked (git's "Cloning into ..." comes after those errors).
    ``filter_spec``: a partial clone (:mod:`promisor`), its fetch's progress
    on ``err`` when ``progress``; a local path ignores it as git does (with
    git's warning on ``err``) but records it.
    """
    src_git = _source_gitdir(source)
    if src_git is None and _is_local(source):
        # cmd_clone: a local path that is no repository, before anything else.
        raise CloneError(f"repository '{source}' does not exist")
    directory = directory or default_directory(source)
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise CloneError(f"destination path '{directory}' already exists and is not an empty directory.")
    if announce is not None:
        announce(directory)
    created = not os.path.exists(directory)
    try:
        if filter_spec is not None:
            from . import promisor

            if src_git is None or source.startswith("file://"):
                os.makedirs(directory, exist_ok=True)
                ref = promisor.clone_partial(source, directory, branch, filter_spec,
                                             err if progress else None, environ)
                return os.path.abspath(directory), ref
            if err is not None:
                err.write("warning: --filter is ignored in local clones; use file:// instead.\n")
            ref = _clone_local(src_git, os.path.abspath(source), directory, branch)
            promisor.register_partial_clone(os.path.join(directory, ".git"), "origin", filter_spec)
            return os.path.abspath(directory), ref
        if src_git is None:
            from dulwich import porcelain

            r = porcelain.clone(source, directory, checkout=False, branch=branch, errstream=io.BytesIO())
            head = r.refs.read_ref(b"HEAD") or b""
            ref = head[5:].strip().decode() if head.startswith(b"ref: ") else None
            r.close()
            return os.path.abspath(directory), ref
        return os.path.abspath(directory), _clone_local(src_git, os.path.abspath(source), directory, branch)
    except BaseException:
        if created:
            shutil.rmtree(directory, ignore_errors=True)
        raise


def _clone_local(src_git: str, url: str, directory: str, branch: str | None) -> str | None:
    os.makedirs(directory, exist_ok=True)
    src = Repo(src_git)
    try:
        src_cfg = src.get_config()
        try:
            fmt = src_cfg.get((b"extensions",), b"objectformat").decode().lower()
        except KeyError:
            fmt = "sha1"
        dst = Repo.init(directory, mkdir=False, object_format=fmt if fmt != "sha1" else None)
        gitdir = dst.controldir()
        dst.close()
        shutil.rmtree(os.path.join(gitdir, "objects"))
        _link_objects(os.path.join(src_git, "objects"), os.path.join(gitdir, "objects"))
        refs = src.get_refs()
        head_chain, _ = src.refs.follow(b"HEAD")
        src_head_ref = head_chain[1] if len(head_chain) > 1 else None
    finally:
        src.close()
    packed: dict[bytes, bytes] = {}
    for name, sha in refs.items():
        if name.startswith(b"refs/heads/"):
            packed[b"refs/remotes/origin/" + name[len(b"refs/heads/") :]] = sha
        elif name.startswith(b"refs/tags/"):
            packed[name] = sha
    want = (b"refs/heads/" + branch.encode()) if branch else src_head_ref
    if branch and want not in refs:
        raise CloneError(f"Remote branch {branch} not found in upstream origin")
    r = Repo(directory)
    try:
        r.refs.add_packed_refs(packed)
        if src_head_ref is not None and src_head_ref in refs:
            os.makedirs(os.path.join(r.controldir(), "refs", "remotes", "origin"), exist_ok=True)
            r.refs.set_symbolic_ref(
                b"refs/remotes/origin/HEAD", b"refs/remotes/origin/" + src_head_ref[len(b"refs/heads/") :]
            )
        cfg_path = os.path.join(r.controldir(), "config")
        cfg = ConfigFile.from_path(cfg_path)
        cfg.set((b"remote", b"origin"), b"url", url.encode())
        cfg.set((b"remote", b"origin"), b"fetch", b"+refs/heads/*:refs/remotes/origin/*")
        target = None
        if want is not None and want in refs:
            short = want[len(b"refs/heads/") :]
            r.refs.set_if_equals(want, None, refs[want])
            cfg.set((b"branch", short), b"remote", b"origin")
            cfg.set((b"branch", short), b"merge", want)
            target = want.decode()
        elif b"HEAD" in refs and src_head_ref is None:
            target = refs[b"HEAD"].decode()  # the source is on a detached HEAD
        cfg.write_to_path(cfg_path)
    finally:
        r.close()
    return target
