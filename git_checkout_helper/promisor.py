"""Partial clones: promisor remotes, and the objects a checkout lacks.

Mirrors ``promisor-remote.c`` (which remotes promise objects:
``remote.<name>.promisor``, ``remote.<name>.partialCloneFilter``, and
``extensions.partialClone`` moved to the end of the list, in config order),
``promisor_remote_get_direct`` (one fetch of every missing object, with
``--filter=blob:none`` and no negotiation, each remote in turn until all are
had) and ``index-pack --promisor`` (the fetched pack kept with a
``.promisor`` file next to it, so that git counts its objects, and what they
reference, as promised).

Where git differs, and why we do not:

* git's ``check_updates`` removes the files that leave *before* it
  prefetches, so a fetch that fails leaves a half-switched work tree.
  :func:`prefetch` is called once the plan is known and before the first
  change, and anything that cannot be had fails the whole operation with
  one line (work tree, index and HEAD as they were); a re-run completes.
* Without a promisor remote git writes what it can and reports each
  unreadable blob; we refuse before anything is touched, naming the first
  object (exit 128, as git's ``die``).

The fetch itself is :mod:`fetch_pack` (protocol v2 over dulwich's client,
``index-pack --promisor``), and the objects a filter leaves out of a local
source are chosen by :mod:`list_objects_filter`, as upload-pack does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from .errors import CheckoutError
from .parse import git_parse_maybe_bool

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO

# (fetch_pack and list_objects_filter are imported where objects are fetched:
# every checkout asks whether the repository is a partial clone, few are.)

__all__ = [
    "PromisorError",
    "PromisorRemote",
    "expand_filter",
    "has_promisor_remote",
    "is_partial",
    "missing_objects",
    "prefetch",
    "prefetch_attributes",
    "prefetch_blobs",
    "prefetch_entries",
    "prefetch_trees",
    "promisor_remotes",
    "register_partial_clone",
]

S_IFGITLINK = 0o160000
S_IFDIR = 0o040000


class PromisorError(CheckoutError):
    """Objects that could not be had: one ``fatal:`` line, exit 128 (git's
    ``die``), raised before anything is touched."""

    def __init__(self, message: str, code: int = 128) -> None:
        super().__init__(f"fatal: {message}", code)
        self.reason = message


class PromisorRemote:
    __slots__ = ("name", "partial_clone_filter", "url")

    def __init__(self, name: str, url: str | None = None, partial_clone_filter: str | None = None) -> None:
        self.name = name
        self.url = url
        self.partial_clone_filter = partial_clone_filter

    def __repr__(self) -> str:
        return f"PromisorRemote({self.name!r}, {self.url!r}, {self.partial_clone_filter!r})"


def _bool(value: bytes | None) -> bool:
    """A promisor flag as a boolean (a value that is none counts as false)."""
    return bool(git_parse_maybe_bool(value))


def _backends_in_order(config) -> list:
    """The config files as git reads them: system first, ``-c`` last."""
    backends = getattr(config, "backends", None)
    return list(reversed(backends)) if backends is not None else [config]


def promisor_remotes(config) -> list[PromisorRemote]:
    """``promisor_remote_init``: the promisor remotes in config order, the
    one ``extensions.partialClone`` names (added if need be) last."""
    order: list[PromisorRemote] = []
    by_name: dict[str, PromisorRemote] = {}
    urls: dict[str, str] = {}
    for cfg in _backends_in_order(config):
        for section in cfg.sections():
            if len(section) != 2 or section[0].lower() != b"remote":
                continue
            name = section[1].decode("utf-8", "surrogateescape")
            for key, value in cfg.items(section):
                k = key.lower()
                if k == b"url" and value is not None:
                    urls[name] = value.decode("utf-8", "surrogateescape")
                    continue
                if k == b"promisor":
                    if not _bool(value):
                        continue
                elif k != b"partialclonefilter":
                    continue
                if name.startswith("/"):
                    continue  # git warns and ignores it
                r = by_name.get(name)
                if r is None:
                    r = by_name[name] = PromisorRemote(name)
                    order.append(r)
                if k == b"partialclonefilter" and value is not None:
                    r.partial_clone_filter = value.decode("utf-8", "surrogateescape")
    try:
        ext = config.get((b"extensions",), b"partialclone")
    except KeyError:
        ext = None
    if ext:
        name = ext.decode("utf-8", "surrogateescape")
        r = by_name.pop(name, None)
        if r is not None:
            order.remove(r)
        else:
            r = PromisorRemote(name)
        order.append(r)
    for r in order:
        r.url = urls.get(r.name, r.name)  # a remote without a url: its name is the url
    return order


def has_promisor_remote(config) -> bool:
    return bool(promisor_remotes(config))


def is_partial(config, objects_dir: str) -> bool:
    """Whether objects may be missing by design: a promisor remote is
    configured, or a pack is a promisor pack (a partial clone whose remote
    settings were lost). Only then is every object a checkout reads looked
    up before it starts; in a full repository a missing object is
    corruption, reported file by file as before, and the look-ups (about
    20 µs each) are not paid."""
    if has_promisor_remote(config):
        return True
    try:
        return any(n.endswith(".promisor") for n in os.listdir(os.path.join(objects_dir, "pack")))
    except OSError:
        return False


def missing_objects(store, oids: Iterable[bytes], has: Callable[[bytes], bool] | None = None) -> list[bytes]:
    """The raw ids among ``oids`` that ``store`` has neither packed nor loose
    (``OBJECT_INFO_FOR_PREFETCH``: nothing fetched to find out), each once,
    in the order given. ``has(oid)``: a faster look-up of the same answer
    (``odb.ObjectDatabase.has_object``); ``store`` is not read when it is given."""
    if has is None:
        has = lambda oid: oid.hex().encode() in store  # noqa: E731
    out: list[bytes] = []
    seen: set[bytes] = set()
    for oid in oids:
        if oid in seen:
            continue
        seen.add(oid)
        if not has(oid):
            out.append(oid)
    return out


# --- the checkout's side ------------------------------------------------------------


def prefetch(config, store, wanted: list[tuple[bytes, bytes]], *, err: TextIO | None = None,
             what: str = "sha1 file", has: Callable[[bytes], bool] | None = None, environ=None,
             warn: Callable[[str], None] | None = None) -> int:
    """``prefetch_cache_entries`` + ``promisor_remote_get_direct``, failing
    closed: ``wanted`` is (path, raw oid) of everything the operation will
    read; whatever ``store`` lacks is fetched from the promisor remotes in
    one batch (the next remote gets what the previous one did not give).
    With ``has`` given, ``store`` may be a function that opens it, called
    only when something is missing: a partial clone that lacks nothing
    never opens dulwich's object store. ``warn``: what git's fetch warns
    of, quiet or not (:func:`fetch_pack.fetch_objects`). Returns how many
    objects were fetched. Raises :class:`PromisorError` (one line, nothing
    touched) when something stays missing.
    """
    paths: dict[bytes, bytes] = {}
    for path, oid in wanted:
        paths.setdefault(oid, path)
    missing = missing_objects(store, paths, has)
    if not missing:
        return 0
    if callable(store):
        store = store()
    remotes = promisor_remotes(config)
    if not remotes:
        first = missing[0]
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise PromisorError(f"unable to read {what} of {_show(paths[first])} ({first.hex()}){more}; "
                            "no promisor remote to fetch from")
    from .fetch_pack import _Failed, fetch_objects, ssh_command

    last_error = None
    remaining = missing
    for remote in remotes:
        try:
            fetch_objects(store, remote.url, [o.hex().encode() for o in remaining], config=config, err=err,
                          ssh_command=ssh_command(environ or {}, config), warn=warn, environ=environ)
        except _Failed as e:
            last_error = (remote, e)
        remaining = missing_objects(store, remaining)
        if not remaining:
            return len(missing)
    first = remaining[0]
    more = f" (and {len(remaining) - 1} more objects)" if len(remaining) > 1 else ""
    if last_error is not None:
        remote, e = last_error
        raise PromisorError(f"could not fetch {first.hex()}{more} from promisor remote "
                            f"'{remote.name}' ({remote.url}): {e}")
    raise PromisorError(f"could not fetch {first.hex()}{more} from promisor remote "
                        f"'{remotes[-1].name}' ({remotes[-1].url}): not sent by the server")


def _show(path: bytes) -> str:
    return path.decode("utf-8", "replace")


def missing_trees(store, root: bytes) -> list[bytes]:
    """The raw ids of the trees below (and including) tree ``root`` (raw)
    that ``store`` lacks: the frontier a lazy tree fetch must fill."""
    from dulwich.objects import parse_tree

    rawsz = store.object_format.oid_length
    out: list[bytes] = []
    stack = [root]
    seen: set[bytes] = set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        try:
            _type, raw = store.get_raw(t.hex().encode())
        except KeyError:
            out.append(t)
            continue
        for _name, mode, sha in parse_tree(raw, rawsz):
            if mode & 0o170000 == S_IFDIR:
                stack.append(bytes.fromhex(sha.decode()))
    return out


def prefetch_trees(config, store, root: bytes, *, err: TextIO | None = None, environ=None,
                   warn: Callable[[str], None] | None = None) -> int:
    """Every tree below ``root`` (raw id) present, fetched if need be: one
    fetch (with ``blob:none`` a wanted tree brings its subtrees) per round
    until the walk finds nothing missing. Returns objects fetched."""
    fetched = 0
    while True:
        missing = missing_trees(store, root)
        if not missing:
            return fetched
        if not promisor_remotes(config):
            raise PromisorError(f"unable to read tree {missing[0].hex()}")
        fetched += prefetch(config, store, [(b"", t) for t in missing], err=err, what="tree", environ=environ,
                            warn=warn)


def prefetch_entries(repo, entries, err: TextIO | None = None) -> int:
    """The checkout's prefetch: every blob of ``entries`` (index entries;
    gitlinks name no object here) that the repository lacks, fetched in one
    batch before the work tree is touched. Fast when nothing is missing:
    one presence check per entry."""
    return prefetch_blobs(repo, [(e.name, e.oid) for e in entries if e.mode != S_IFGITLINK], err)


def _partial(repo) -> bool:
    """:func:`is_partial` for a repository, decided once."""
    partial = getattr(repo, "_partial_clone", None)
    if partial is None:
        partial = repo._partial_clone = is_partial(repo.config, repo.dirs.objects)
    return partial


def prefetch_blobs(repo, wanted: list[tuple[bytes, bytes]], err: TextIO | None = None) -> int:
    """:func:`prefetch` for a :class:`repository.Repository` that
    :func:`is_partial` (decided once), whose pack list is then read again;
    its warnings to ``repo.fetch_warning``."""
    if not wanted or not _partial(repo):
        return 0
    # What an earlier call of this checkout found (or fetched) is not looked up again.
    present = getattr(repo, "_promisor_present", None)
    if present is None:
        present = repo._promisor_present = set()
    wanted = [(p, o) for p, o in wanted if o not in present]
    if not wanted:
        return 0
    n = prefetch(repo.config, lambda: repo.store, wanted, err=err, has=repo.odb.has_object, environ=repo.environ,
                 warn=repo.fetch_warning)
    if n:
        repo.odb.rescan_packs()
    present.update(o for _p, o in wanted)
    return n


# --- git clone --filter --------------------------------------------------------------


def expand_filter(spec: str) -> str:
    """``expand_list_objects_filter_spec``: the form git records and sends
    (``blob:limit=1k`` is ``blob:limit=1024``). :class:`ValueError` for a
    spec ours does not support."""
    from .list_objects_filter import parse_filter

    kind, n = parse_filter(spec)
    if kind == "tree":
        return f"tree:{n}"
    if spec.strip() == "blob:none":
        return "blob:none"
    return f"blob:limit={n}"


def _format_version_first(cfg):
    """The config with ``core.repositoryformatversion`` as its first key,
    where ``git init`` writes it (dulwich writes none for version 0)."""
    from dulwich.config import ConfigFile

    out = ConfigFile()
    version = cfg.get((b"core",), b"repositoryformatversion")
    out.set((b"core",), b"repositoryformatversion", version)
    for section in cfg.sections():
        for key, value in cfg.items(section):
            if section == (b"core",) and key.lower() == b"repositoryformatversion":
                continue
            out.set(section, key, value)
    return out


def register_partial_clone(gitdir: str, remote: str, filter_spec: str) -> None:
    """``partial_clone_register`` on an existing repository: what git records
    even when a local clone ignores ``--filter``."""
    from dulwich.config import ConfigFile

    cfg_path = os.path.join(gitdir, "config")
    cfg = ConfigFile.from_path(cfg_path)
    cfg.set((b"core",), b"repositoryformatversion", b"1")
    cfg.set((b"remote", remote.encode()), b"promisor", b"true")
    cfg.set((b"remote", remote.encode()), b"partialclonefilter", expand_filter(filter_spec).encode())
    _format_version_first(cfg).write_to_path(cfg_path)


def prefetch_attributes(co, tree, index: dict) -> None:
    """At ``Checkout.setup_attributes`` (ahead of planning), for a partial
    clone. A first checkout (no index: a clone) fetches every blob of the
    target tree in the sparse-checkout patterns now, in one batch: that is what it will write, and the
    ``.gitattributes`` among them are then there when attributes are read.
    Otherwise the missing ``.gitattributes`` blobs are only noted: they go
    into the checkout's one batch (:func:`prefetch_plan`), after which the
    attributes are read again, as git reads ``.gitattributes`` only once
    its prefetch is done. Until then a missing one counts as absent, which
    can only make a file look modified to the planner (a refusal), never
    unmodified."""
    co._promisor_attr_args = (tree, index)
    co._promisor_attrs = []
    if not _partial(co.repo):
        return  # (before a list of every path is made for nothing: 30 ms at 100,000 files)
    from .attr import is_attributes_file
    from .tree import value_mode, value_oid

    files = tree.files if tree is not None else {}
    if files and not index:
        from .sparse import load_sparse_checkout

        o = co.opts
        show = o.progress if o.progress is not None else not o.quiet and co.err.isatty()
        sparse = load_sparse_checkout(co.repo.config, co.repo.dirs.gitdir)  # clone --sparse: the cone only
        prefetch_blobs(co.repo, [(p, value_oid(v)) for p, v in files.items()
                                 if value_mode(v) != S_IFGITLINK and (sparse is None or sparse.included(p))],
                       co.err if show else None)
        return
    # (the tree's are kept apart as it is read: TreeFiles.attributes)
    wanted = list(tree.attributes.items()) if tree is not None else []
    wanted += [(n, e.oid) for n, e in index.items() if is_attributes_file(n)]
    if wanted:
        missing = set(missing_objects(None, [o for _p, o in wanted], co.repo.odb.has_object))
        co._promisor_attrs = [(p, o) for p, o in wanted if o in missing]


def prefetch_plan(co, entries, err: TextIO | None = None) -> int:
    """The checkout's prefetch, once the plan is known and before the first
    change: every blob of ``entries`` and the ``.gitattributes`` noted by
    :func:`prefetch_attributes`, in one batch; the attributes are read
    again if any of those came."""
    pending = getattr(co, "_promisor_attrs", None) or []
    if not pending and not _partial(co.repo):
        return 0  # (before a list of every entry is made for nothing)
    wanted = [(e.name, e.oid) for e in entries if e.mode != S_IFGITLINK] + pending
    n = prefetch_blobs(co.repo, wanted, err)
    if pending:
        co._promisor_attrs = []
        co.setup_attributes(*co._promisor_attr_args)
    return n
