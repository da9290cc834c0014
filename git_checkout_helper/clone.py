"""``git parallel-clone``: make the repository, then check out with helpers.

A local source is cloned like ``git clone --local`` (``builtin/clone.c``:
``clone_local``): object files are hard-linked (copied across filesystems),
the source's branches become ``refs/remotes/origin/*`` in ``packed-refs``,
tags are kept, peeled as git records them, and the branch HEAD names is
created with its upstream. That path is ours from end to end (the
repository made by :mod:`init_db`, refs read by :mod:`refs`): dulwich's
repository and config modules cost 45 ms of imports and its refs container
70 ms on git.git's thousand refs, together a fifth of such a clone. A
``file://`` URL or a shallow source fetches through dulwich's object
stores (:mod:`transport`); any other URL goes through dulwich's clone
without checkout. A partial clone (``--filter``) of a URL fetches into one
promisor pack (:mod:`fetch_pack`), and its refs, HEAD and config are
chosen and written from what the remote listed by the same code as a local
clone's. Either way the checkout itself is ours.
"""

from __future__ import annotations

import os

from .configfile import read_config_file
from .configset import append_section
from .errors import CloneError
from .hash_algo import is_hex_oid
from .init_db import init_db
from .odb import ObjectDatabase, object_format_name
from .packed_refs import peel_refs, write_packed_refs
from .refs import Refs
from .wrapper import write_locked

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["CloneError", "prepare_clone"]


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
                import shutil

                shutil.copyfile(s, d)
                continue
            try:
                os.link(s, d)
            except OSError:
                import shutil

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
                  announce=None, *, filter_spec: str | None = None, err=None, progress: bool = False,
                  environ=None, depth: int | None = None, single_branch: bool | None = None,
                  origin: str = "origin", warn=None, done=None,
                  no_checkout: bool = False) -> tuple[str, str | None]:
    """Create the clone without a checkout; returns (work tree, ref to check out).

    ``announce(directory)`` is called once the source and the destination
    have been checked (git's "Cloning into ..." comes after those errors);
    ``warn(message)`` says what git warns of. As ``cmd_clone``: a plain path
    is cloned ``--local`` (hard links), unless its repository is shallow;
    a ``file://`` URL goes through the transport (:mod:`transport`) and is
    recorded as given. ``single_branch`` None: implied by ``depth``.
    ``done()`` is called after a ``--local`` clone has its objects (git's
    "done." of ``clone_local``). No ref to check out (None): an empty source
    (warned of before its objects are copied, as ``cmd_clone`` does), or one
    whose HEAD names no branch it has, warned of after them unless
    ``no_checkout`` (clone's ``checkout``). ``filter_spec``: a partial clone (:mod:`promisor`), its fetch's progress
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
    if single_branch is None:
        single_branch = depth is not None
    local = src_git is not None and not source.startswith("file://")
    if local:
        if depth is not None and warn is not None:
            warn("--depth is ignored in local clones; use file:// instead.")
        if os.path.exists(os.path.join(src_git, "shallow")):
            local = False  # (git warns only when --local was asked for)
        else:
            depth = None
    if announce is not None:
        announce(directory)
    created = not os.path.exists(directory)
    try:
        if filter_spec is not None:
            from . import promisor

            if src_git is None or source.startswith("file://"):
                os.makedirs(directory, exist_ok=True)
                ref, empty = _clone_partial(source, directory, branch, filter_spec,
                                            err if progress else None, environ, warn)
                if empty and warn is not None:
                    warn(EMPTY_WARNING)
                _say_no_ref(ref, empty, no_checkout, warn)
                return os.path.abspath(directory), ref
            if err is not None:
                err.write("warning: --filter is ignored in local clones; use file:// instead.\n")
            ref, empty = _clone_local(src_git, os.path.abspath(source), directory, branch, local=local,
                                      depth=depth, single_branch=single_branch, origin=origin, environ=environ,
                                      warn=warn)
            if local and done is not None:
                done()
            _say_no_ref(ref, empty, no_checkout, warn)
            promisor.register_partial_clone(os.path.join(directory, ".git"), origin, filter_spec)
            return os.path.abspath(directory), ref
        if src_git is None:
            import io

            from dulwich import porcelain

            r = porcelain.clone(source, directory, checkout=False, branch=branch, errstream=io.BytesIO(),
                                depth=depth, origin=origin)
            head = r.refs.read_ref(b"HEAD") or b""
            ref = head[5:].strip().decode() if head.startswith(b"ref: ") else None
            r.close()
            if ref is None and warn is not None:
                warn(EMPTY_WARNING)
            return os.path.abspath(directory), ref
        url = source if source.startswith("file://") else os.path.abspath(source)
        ref, empty = _clone_local(src_git, url, directory, branch, local=local, depth=depth,
                                  single_branch=single_branch, origin=origin, environ=environ, warn=warn)
        if local and done is not None:
            done()
        _say_no_ref(ref, empty, no_checkout, warn)
        return os.path.abspath(directory), ref
    except BaseException:
        # remove_junk: what the clone made goes; a directory that was there
        # (empty, as checked above) stays, emptied (REMOVE_DIR_KEEP_TOPLEVEL).
        import shutil

        if created:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            for name in os.listdir(directory):
                path = os.path.join(directory, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        raise


#: cmd_clone's warning for a source with no ref to take.
EMPTY_WARNING = "You appear to have cloned an empty repository."


def _say_no_ref(ref: str | None, empty: bool, no_checkout: bool, warn) -> None:
    """What git says after the objects of a clone with nothing to check out:
    a HEAD naming no branch the source has (clone's ``checkout``, unless
    ``--no-checkout``). An ``empty`` source was warned of before them."""
    if ref is None and not empty and not no_checkout and warn is not None:
        warn("remote HEAD refers to nonexistent ref, unable to checkout")


def _guess_remote_head(head: bytes, heads: dict[bytes, bytes | None], default: bytes) -> bytes | None:
    """``guess_remote_head`` for a detached HEAD: the branch of ``heads`` at
    its commit, ``default``'s (``init.defaultBranch``) first, then
    ``master``, then the first by name; None when no branch is there."""
    for name in (b"refs/heads/" + default, b"refs/heads/master"):
        if heads.get(name) == head:
            return name
    return next((name for name in sorted(heads) if heads[name] == head), None)


class _Taken:
    """What ``cmd_clone`` takes of the source's refs (:func:`_refs_taken`)."""

    __slots__ = ("refs", "head_ref", "detached", "heads", "tags", "want", "want_tag", "points_at", "empty")


def _refs_taken(src_refs: Refs, branch: str | None, single_branch: bool, origin: str, prefix: bytes,
                environ) -> _Taken:
    """``wanted_peer_refs`` and the choices after it: the source's refs (its
    HEAD's id with them when it has one), the branch its HEAD names or, on a
    detached HEAD, the branch at its commit (:func:`_guess_remote_head`); the
    heads and tags taken (with --single-branch the one branch: none for a -b
    <tag>, a detached HEAD at no branch, or an unborn one); the branch to
    check out (``want``) or the tag (``want_tag``); the remote HEAD as the
    clone records it (``points_at``: the branch it names, or is guessed at,
    among those taken); ``empty``: nothing taken at all. A -b naming
    neither a branch nor a tag, or a ref with no id, is refused (CloneError)."""
    t = _Taken()
    t.refs = refs = src_refs.all_refs()
    head_chain, head_sha = src_refs.follow(b"HEAD")
    if head_sha is not None and is_hex_oid(head_sha):
        refs[b"HEAD"] = head_sha
    t.head_ref = head_chain[1] if len(head_chain) > 1 else None
    t.heads = {n: v for n, v in refs.items() if n.startswith(b"refs/heads/")}
    t.tags = {n: v for n, v in refs.items() if n.startswith(b"refs/tags/")}
    t.detached = t.head_ref is None and b"HEAD" in refs
    default = _default_branch_name(environ) if t.detached else b""
    if t.detached:
        t.head_ref = _guess_remote_head(refs[b"HEAD"], t.heads, default)
    t.want = (b"refs/heads/" + branch.encode()) if branch else t.head_ref
    t.want_tag = None
    if branch and t.want not in refs:
        if b"refs/tags/" + branch.encode() not in refs:
            raise CloneError(f"Remote branch {branch} not found in upstream {origin}")
        t.want_tag, t.want = b"refs/tags/" + branch.encode(), None  # -b <tag>: a detached HEAD there
    # Nothing taken: no HEAD, no -b (which found its ref, or failed above),
    # and, but with --single-branch (which takes HEAD's branch alone), no ref.
    t.empty = b"HEAD" not in refs and not branch and (single_branch or not (t.heads or t.tags))
    if single_branch:
        t.heads = {t.want: refs[t.want]} if t.want is not None and t.want in refs else {}
        t.tags = {n: v for n, v in t.tags.items() if v is not None}  # (followed: those whose objects are there)
    # (Guessed again among the heads taken, as cmd_clone guesses among mapped_refs.)
    points_at = _guess_remote_head(refs[b"HEAD"], t.heads, default) if t.detached else t.head_ref
    t.points_at = points_at if points_at in t.heads else None
    # A broken ref (no id in its file) to be written (under ``prefix``, the
    # remote's): git's transaction refuses its null id; refused here before
    # anything is made.
    broken = [prefix + n[len(b"refs/heads/"):] for n, v in t.heads.items() if v is None]
    broken += [n for n, v in t.tags.items() if v is None]
    if broken:
        raise CloneError(f"'{min(broken).decode('utf-8', 'replace')}' has a null OID")
    return t


def _fetch_refspec(t: _Taken, branch: str | None, single_branch: bool, prefix: bytes) -> bytes | None:
    """``write_refspec_config``: every branch; with --single-branch the branch
    or tag asked for, else the remote HEAD's branch, else none (a fetch then
    takes HEAD and updates no remote-tracking branch)."""
    if not single_branch:
        return b"+refs/heads/*:" + prefix + b"*"
    if t.want_tag is not None:
        return b"+" + t.want_tag + b":" + t.want_tag
    if branch or t.points_at is not None:
        short = (t.want if branch else t.points_at)[len(b"refs/heads/"):]
        return b"+refs/heads/" + short + b":" + prefix + short
    return None


def _clone_local(src_git: str, url: str, directory: str, branch: str | None, *, local: bool = True,
                 depth: int | None = None, single_branch: bool = False, origin: str = "origin",
                 environ=None, warn=None) -> tuple[str | None, bool]:
    """``cmd_clone`` after its checks: the refs taken (:func:`_refs_taken`),
    the repository made (:func:`init_db.init_db`), the objects hard-linked
    (``local``) or fetched, the refs and the config written as git writes
    them; returns the ref (or, detached, the id) to check out, and whether
    no ref was taken at all (an empty source, which ``warn`` is told of
    before the objects are copied, as ``cmd_clone`` does). A local clone
    reads and writes everything itself; only a fetch (a ``file://`` URL, a
    shallow source) goes through dulwich."""
    src_refs = Refs(src_git, src_git)
    fmt = _object_format(src_git)
    prefix = b"refs/remotes/" + origin.encode() + b"/"
    t = _refs_taken(src_refs, branch, single_branch, origin, prefix, environ)
    refs, heads, tags, want, want_tag = t.refs, t.heads, t.tags, t.want, t.want_tag
    if t.empty and warn is not None:
        warn(EMPTY_WARNING)
    os.makedirs(directory, exist_ok=True)
    gitdir = os.path.join(directory, ".git")
    start = _start_branch(t, environ)
    init_db(gitdir, fmt, start)
    if local:
        _link_objects(os.path.join(src_git, "objects"), os.path.join(gitdir, "objects"))
    else:
        tips = list(heads.values())
        if want_tag is not None:
            tips.append(refs[want_tag])
        elif want is None and t.detached:
            tips.append(refs[b"HEAD"])  # a detached HEAD
        tags = _fetch(src_git, fmt, directory, tips, tags, depth, single_branch)
    odb = ObjectDatabase(os.path.join(gitdir, "objects"), fmt)
    try:
        peeled = peel_refs(odb, {**heads, **tags}, src_refs.packed_peeled())
    finally:
        odb.close()
    t.tags = tags  # (with --single-branch, those that follow the history fetched)
    target = _write_clone_refs(gitdir, t, peeled, url, branch=branch, single_branch=single_branch, origin=origin,
                              fmt=fmt, start=start)
    return target, t.empty


def _start_branch(t: _Taken, environ) -> bytes:
    """The branch a new clone's HEAD names: the one the source's HEAD names
    when it is a branch, born or not (``update_head``'s ``unborn``), else
    git's default branch (``init.defaultBranch``), until the checkout
    moves HEAD."""
    if t.head_ref is not None and t.head_ref.startswith(b"refs/heads/"):
        return t.head_ref
    return b"refs/heads/" + _default_branch_name(environ)


class _ListedRefs:
    """The refs a remote listed (``ls-refs``: branches, tags, HEAD and the
    branch HEAD names, born or not), read as :func:`_refs_taken` reads a
    source's :class:`refs.Refs`."""

    def __init__(self, listed: dict[bytes, bytes], head_target: bytes | None) -> None:
        self._listed = listed
        self._head_target = head_target

    def all_refs(self) -> dict[bytes, bytes | None]:
        return {n: v for n, v in self._listed.items() if n.startswith(b"refs/")}

    def follow(self, name: bytes) -> tuple[list[bytes], bytes | None]:
        names = [name] + ([self._head_target] if name == b"HEAD" and self._head_target else [])
        return names, self._listed.get(names[-1])


def _write_fetched_clone(gitdir: str, listed: dict[bytes, bytes], head_target: bytes | None, url: str,
                        branch: str | None, environ) -> tuple[str | None, bool]:
    """A clone whose objects a transport has fetched (a partial clone: every
    branch and tag, remote ``origin``), made as :func:`_clone_local` makes
    a local one from the refs the remote listed: the refs taken
    (:func:`_refs_taken`: a detached HEAD's branch guessed, -b <tag>),
    HEAD naming the branch to start on (:func:`_start_branch`: an unborn
    remote HEAD's own), then :func:`_write_clone_refs`. Returns the ref (or
    the id) to check out, and whether nothing was taken (an empty
    repository)."""
    prefix = b"refs/remotes/origin/"
    t = _refs_taken(_ListedRefs(listed, head_target), branch, False, "origin", prefix, environ)
    start = _start_branch(t, environ)
    write_locked(os.path.join(gitdir, "HEAD"), b"ref: " + start + b"\n")
    odb = ObjectDatabase(os.path.join(gitdir, "objects"))
    try:
        peeled = peel_refs(odb, {**t.heads, **t.tags})
    finally:
        odb.close()
    target = _write_clone_refs(gitdir, t, peeled, url, branch=branch, single_branch=False, origin="origin",
                              fmt="sha1", start=start)
    return target, t.empty


def _write_clone_refs(gitdir: str, t: _Taken, peeled: dict[bytes, bytes | None], url: str, *,
                     branch: str | None, single_branch: bool, origin: str, fmt: str, start: bytes) -> str | None:
    """What ``cmd_clone`` writes once the objects are there, for the refs
    taken (:func:`_refs_taken`; ``peeled``: the peeled id of each of its
    heads and tags, or None): the remote-tracking branches and the tags in
    ``packed-refs`` (``write_remote_refs``; with --single-branch the tags
    that follow are loose, ``write_followtags``), the remote HEAD, the
    remote's section (``write_refspec_config``), the branch to check out
    with its upstream (``install_branch_config``), or HEAD detached at a
    -b <tag> or at a detached source HEAD's commit, or the upstream of the
    unborn branch ``start`` (:func:`_start_branch`) that HEAD names.
    Returns the ref (or, detached, the id) to check out, None for none."""
    refs, heads, tags, want, want_tag = t.refs, t.heads, t.tags, t.want, t.want_tag
    prefix = b"refs/remotes/" + origin.encode() + b"/"
    packed = {prefix + name[len(b"refs/heads/"):]: (sha, peeled[name]) for name, sha in heads.items()}
    if single_branch:
        # write_followtags: tags that follow the one branch are loose refs;
        # a -b <tag> is itself a ref taken, written packed with the branches.
        for name, sha in tags.items():
            if name == want_tag:
                packed[name] = (sha, peeled[name])
            else:
                _write_ref(gitdir, name, sha)
    else:
        packed.update((name, (sha, peeled[name])) for name, sha in tags.items())
    write_packed_refs(os.path.join(gitdir, "packed-refs"), packed, empty_too=bool(refs))
    if t.points_at is not None:
        _write_ref(gitdir, prefix + b"HEAD", b"ref: " + prefix + t.points_at[len(b"refs/heads/"):])
    config = os.path.join(gitdir, "config")
    spec = _fetch_refspec(t, branch, single_branch, prefix)
    append_section(config, b"remote", origin.encode(),
                   [(b"url", os.fsencode(url))] + ([(b"fetch", spec)] if spec is not None else []))
    if fmt != "sha1":
        append_section(config, b"extensions", None, [(b"objectformat", fmt.encode())])
    target = None
    if want is not None and want in refs:
        short = want[len(b"refs/heads/"):]
        _write_ref(gitdir, want, refs[want])
        append_section(config, b"branch", short, [(b"remote", origin.encode()), (b"merge", want)])
        target = want.decode()
    elif want_tag is not None or t.detached:
        # -b <tag>, or a detached HEAD at no branch: detached there, no branch made.
        target = (peeled[want_tag] or refs[want_tag]).decode() if want_tag is not None else refs[b"HEAD"].decode()
        write_locked(os.path.join(gitdir, "HEAD"), target.encode() + b"\n")
    elif b"HEAD" not in refs:
        # Unborn: the branch HEAD names gets its upstream all the same
        # (install_branch_config).
        append_section(config, b"branch", start[len(b"refs/heads/"):],
                       [(b"remote", origin.encode()), (b"merge", start)])
    return target


def _clone_refs(listed: dict) -> dict[bytes, bytes]:
    """The refs a clone takes of a remote's listing: HEAD, the branches and
    the tags with their ids (no peeled lines, nothing unborn)."""
    from .fetch_pack import CLONE_REF_PREFIXES

    return {k: v for k, v in listed.items() if v is not None and not k.endswith(b"^{}")
            and (k == b"HEAD" or k.startswith(CLONE_REF_PREFIXES[1:]))}


def _clone_partial(url: str, directory: str, branch: str | None, filter_spec: str,
                  err: TextIO | None = None, environ=None, warn=None) -> tuple[str | None, bool]:
    """``git clone --filter=<spec> <url> <directory>`` up to the checkout:
    the repository made (:func:`init_db.init_db`), every ref's history
    fetched under the filter into one promisor pack (its ``.promisor``
    file lists the refs, as git's; a ``file://`` source that does not allow
    filters sends everything, with git's warning to ``warn``), the refs,
    HEAD and the config as a clone of ours writes them from what the remote
    listed (:func:`_write_fetched_clone`), then
    ``partial_clone_register``'s settings (:func:`promisor.register_partial_clone`).
    ``directory`` exists and is empty. Returns the ref to check out (or the
    commit id, detached; None for none) and whether the repository was
    empty. Raises :class:`promisor.PromisorError` or :class:`CloneError`."""
    from dulwich.repo import Repo

    from .config import read_config
    from .fetch_pack import _Failed, fetch_objects, ssh_command
    from .odb import discover
    from .promisor import PromisorError, expand_filter, register_partial_clone

    spec = expand_filter(filter_spec)
    gitdir = os.path.join(directory, ".git")
    init_db(gitdir, "sha1", b"refs/heads/" + _default_branch_name(environ))  # (HEAD named again below)
    repo = Repo(directory)
    store = repo.object_store
    promised: dict[bytes, bytes] = {}
    try:
        config = read_config(discover(directory), environ or {})
        refs: dict = {}

        def wants(remote_refs: dict) -> list[bytes]:
            if any(v is not None and len(v) == 64 for v in remote_refs.values()):
                raise _Failed("the remote uses SHA-256, which a partial clone of ours does not support")
            refs.update(_clone_refs(remote_refs))
            if b"HEAD" in refs:
                promised[b"HEAD"] = refs[b"HEAD"]
            promised.update(sorted((k, v) for k, v in refs.items() if k != b"HEAD"))
            return list(dict.fromkeys(refs.values()))  # (wanted_peer_refs: each id once)

        try:
            _pack, (listed, symrefs) = fetch_objects(store, url, wants, filter_spec=spec.encode(),
                                                     config=config, err=err, refs=promised,
                                                     ssh_command=ssh_command(environ or {}, config),
                                                     warn=warn, environ=environ)
        except _Failed as e:
            raise PromisorError(f"could not fetch from '{url}': {e}") from None
    finally:
        repo.close()
    refs = refs or _clone_refs(listed)
    taken = _write_fetched_clone(gitdir, refs, symrefs.get(b"HEAD"), url, branch, environ)
    register_partial_clone(gitdir, "origin", filter_spec)
    return taken

def _default_branch_name(environ) -> bytes:
    """``git_default_branch_name``: ``init.defaultBranch``, else ``master``."""
    from .config import read_config

    try:
        return read_config(None, environ or {}).get((b"init",), b"defaultbranch")
    except KeyError:
        return b"master"


def _write_ref(gitdir: str, name: bytes, value: bytes) -> None:
    """A loose ref (``refs/...``) holding ``value`` (an id, or ``ref: <name>``),
    its directories made."""
    path = os.path.join(gitdir, os.fsdecode(name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_locked(path, value + b"\n")


def _object_format(gitdir: str) -> str:
    """``extensions.objectFormat`` of the repository at ``gitdir``."""
    try:
        config = read_config_file(os.path.join(gitdir, "config"))
    except OSError:
        return "sha1"
    return object_format_name(config)


def _fetch(src_git: str, fmt: str, directory: str, tips: list[bytes], tags: dict[bytes, bytes],
           depth: int | None, single_branch: bool) -> dict[bytes, bytes]:
    """The objects of a clone that is not ``--local`` (a ``file://`` URL, a
    shallow source) fetched into the new repository, with its shallow
    points; returns the tags that follow (:mod:`transport`)."""
    from dulwich.repo import Repo

    from .shallow import read_shallow, write_shallow
    from .transport import fetch_into, shallow_boundary

    src = Repo(src_git)
    try:
        source_shallow = read_shallow(src_git)
        if single_branch:
            # Tags follow the history fetched (include-tag), nothing else.
            shallow, reached = shallow_boundary(src.object_store, tips, depth, source_shallow)
            odb = ObjectDatabase(os.path.join(src_git, "objects"), fmt)
            try:
                peeled = peel_refs(odb, tags)
            finally:
                odb.close()
            tags = {n: v for n, v in tags.items() if (peeled[n] or v) in reached}
        else:
            tips += list(tags.values())
            shallow, _ = shallow_boundary(src.object_store, tips, depth, source_shallow)
        dst = Repo(directory)
        try:
            fetch_into(src.object_store, dst.object_store, tips + list(tags.values()), shallow)
        finally:
            dst.close()
        write_shallow(os.path.join(directory, ".git"), shallow)
    finally:
        src.close()
    return tags
