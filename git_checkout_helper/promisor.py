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

The fetch goes through dulwich's client (``git://``, ``ssh://``,
``http(s)://``), protocol v2 with a ``filter`` line and ``want`` lines of
object ids that no ref names (v2's upload-pack serves any object it has; a
v0 server needs ``uploadpack.allowAnySHA1InWant``). dulwich's
``fetch_pack`` lists refs first, which git skips when it fetches bare
object ids, so a lazy fetch sends its v2 ``fetch`` command itself over
dulwich's connection (:func:`_fetch_v2_by_id`): the same round trips as
git's. A fetched pack is indexed as ``index-pack`` does it
(:func:`_new_pack`). dulwich's local client ignores filters, so a
``file://`` remote (or a path) is read here directly through dulwich's
object store, with the same object selection as upload-pack
(:func:`select_objects`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import TextIO

from .errors import CheckoutError, CloneError
from .parse import git_parse_maybe_bool

__all__ = [
    "PromisorError",
    "PromisorRemote",
    "clone_partial",
    "expand_filter",
    "fetch_objects",
    "has_promisor_remote",
    "is_partial",
    "missing_objects",
    "parse_filter",
    "prefetch",
    "prefetch_attributes",
    "prefetch_blobs",
    "prefetch_entries",
    "prefetch_trees",
    "promisor_remotes",
    "register_partial_clone",
    "select_objects",
    "write_promisor_pack",
]

OBJ_COMMIT, OBJ_TREE, OBJ_BLOB, OBJ_TAG = 1, 2, 3, 4
S_IFGITLINK = 0o160000
S_IFDIR = 0o040000
#: The filter of every lazy fetch (promisor-remote.c: fetch_objects).
PREFETCH_FILTER = b"blob:none"
#: What a clone lists and fetches (``ref-prefix`` lines, as git's clone sends).
CLONE_REF_PREFIXES = (b"HEAD", b"refs/heads/", b"refs/tags/")


class PromisorError(CheckoutError):
    """Objects that could not be had: one ``fatal:`` line, exit 128 (git's
    ``die``), raised before anything is touched."""

    def __init__(self, message: str, code: int = 128) -> None:
        super().__init__(f"fatal: {message}", code)
        self.reason = message


class _Failed(Exception):
    """A fetch that failed; the reason, for :class:`PromisorError`'s line."""


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
    (``odb.ObjectDatabase.has_object``)."""
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


# --- choosing objects, as upload-pack does for a filter ------------------------


def parse_filter(spec: str) -> tuple[str, int]:
    """``list-objects-filter-options.c``: ("blob:none"|"blob:limit"|"tree", n).

    Only the forms a partial clone of ours supports; anything else raises
    :class:`ValueError` with git's wording."""
    s = spec.strip()
    if s == "blob:none":
        return "blob:limit", 0
    if s.startswith("blob:limit="):
        n = _size(s[len("blob:limit="):])
        if n is None:
            raise ValueError(f"invalid filter-spec '{spec}'")
        return "blob:limit", n
    if s.startswith("tree:"):
        try:
            depth = int(s[len("tree:"):])
        except ValueError:
            raise ValueError("expected 'tree:<depth>'") from None
        if depth < 0:
            raise ValueError("expected 'tree:<depth>'")
        return "tree", depth
    raise ValueError(f"invalid filter-spec '{spec}'")


def _size(text: str) -> int | None:
    """``git_parse_ulong``: a number with an optional k, m or g."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    mult = units.get(t[-1:], 1)
    if t[-1:] in units:
        t = t[:-1]
    return int(t) * mult if t.isdigit() else None


def select_objects(store, wants: list[bytes], haves: set[bytes], filter_spec: str | None) -> list[bytes]:
    """What ``upload-pack`` sends for ``wants`` (hex ids) under a filter
    (``list-objects.c`` with ``list-objects-filter.c``): commits and tags
    reachable from the wants, their trees unless ``tree:0``, blobs under
    ``blob:limit`` (``blob:none`` is a limit of 0: blobs smaller than the
    limit are sent). Objects named in a want are always sent. ``haves``:
    objects not to send (and not to walk below). Hex ids, in walk order."""
    kind, n = parse_filter(filter_spec) if filter_spec else ("", 0)
    out: list[bytes] = []
    seen: set[bytes] = set(haves)
    commits: list[bytes] = []
    explicit = set(wants)

    def blob_ok(oid: bytes) -> bool:
        if oid in explicit or kind == "":
            return True
        if kind == "tree":
            return False
        _t, raw = store.get_raw(oid)
        return len(raw) < n

    def add_tree(tree: bytes, depth: int) -> None:
        from dulwich.objects import parse_tree

        stack = [(tree, depth)]
        while stack:
            t, d = stack.pop()
            if t in seen:
                continue
            if kind == "tree" and d >= n and t not in explicit:
                continue
            seen.add(t)
            out.append(t)
            _type, raw = store.get_raw(t)
            for _name, mode, sha in parse_tree(raw, store.object_format.oid_length):
                if mode & 0o170000 == S_IFDIR:
                    stack.append((sha, d + 1))
                elif mode & 0o170000 != S_IFGITLINK and sha not in seen and blob_ok(sha):
                    seen.add(sha)
                    out.append(sha)

    for w in wants:
        if w in seen:
            continue
        obj_type, _raw = store.get_raw(w)
        obj = w
        while obj_type == OBJ_TAG:
            seen.add(obj)
            out.append(obj)
            obj = store[obj].object[1]
            obj_type, _raw = store.get_raw(obj)
        if obj_type == OBJ_COMMIT:
            commits.append(obj)
        elif obj_type == OBJ_TREE:
            add_tree(obj, 0)
        elif obj not in seen:
            seen.add(obj)
            out.append(obj)
    trees: list[bytes] = []
    while commits:
        c = commits.pop()
        if c in seen:
            continue
        seen.add(c)
        out.append(c)
        commit = store[c]
        trees.append(commit.tree)
        commits.extend(p for p in commit.parents if p not in seen)
    for t in trees:
        add_tree(t, 0)
    return out


# --- fetching -------------------------------------------------------------------


def _local_path(url: str) -> str | None:
    """The repository a ``file://`` URL or a path names, else None."""
    if url.startswith("file://"):
        return url[len("file://"):]
    if "://" in url:
        return None
    colon, slash = url.find(":"), url.find("/")
    if colon != -1 and (slash == -1 or colon < slash):
        return None  # scp-like host:path
    return url


class _NoHaves:
    """A graph walker that offers nothing (``fetch.negotiationAlgorithm=noop``)."""

    shallow: set[bytes] = set()

    def __next__(self):
        return None

    next = __next__

    def ack(self, sha) -> None:
        pass


class _Received:
    """Counts what arrives, for the progress line (redrawn at most every
    half second, as ``progress.c`` throttles)."""

    def __init__(self, f, show: Callable[[int], None] | None) -> None:
        self.f = f
        self.bytes = 0
        self.show = show
        self._last = 0.0

    def write(self, data: bytes) -> int:
        self.f.write(data)
        self.bytes += len(data)
        if self.show is not None:
            now = time.monotonic()
            if now - self._last >= 0.5:
                self._last = now
                self.show(self.bytes)
        return len(data)


def _human(n: int) -> str:
    """``strbuf_humanise_bytes``."""
    if n > 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    if n > 1 << 20:
        return f"{n / (1 << 20):.2f} MiB"
    if n > 1 << 10:
        return f"{n / (1 << 10):.2f} KiB"
    return f"{n} bytes"


def fetch_objects(
    store,
    url: str,
    wants: list[bytes] | Callable[[dict], list[bytes]],
    *,
    filter_spec: bytes | None = PREFETCH_FILTER,
    config=None,
    err: TextIO | None = None,
    refs: dict[bytes, bytes] | None = None,
) -> tuple[object, dict]:
    """Fetch ``wants`` (hex ids) from ``url`` into ``store`` as one promisor
    pack. ``wants`` may be a function of the remote's refs (a clone: all of
    them are listed then, and ``refs`` is filled with what the ``.promisor``
    file lists, as ``index-pack --promisor`` does for a clone); a lazy fetch
    leaves that file empty. ``err``: progress is written there ("remote:
    ..." lines and "Receiving objects"), None for quiet.

    Returns (the pack or None when nothing came, (refs, symrefs) the remote
    listed).
    Raises :class:`_Failed` (its reason) on any failure; nothing is left
    in the object store then.
    """
    f, commit, abort = _new_pack(store)
    received = _Received(f, None)
    if err is not None:
        received.show = lambda n: err.write(f"Receiving objects: {_human(n)}\r")
    listed: tuple[dict, dict] = ({}, {})
    try:
        local = _local_path(url)
        if local is not None:
            listed = _fetch_local(local, wants, filter_spec, received)
        else:
            listed = _fetch_remote(url, wants, filter_spec, config, received, err)
    except BaseException as e:
        abort()
        if isinstance(e, Exception) and not isinstance(e, _Failed):
            raise _Failed(_reason(e)) from e
        raise
    try:
        pack = commit()
    except Exception as e:  # a pack that does not index (truncated, corrupt)
        abort()
        if isinstance(e, _Failed):
            raise
        raise _Failed(f"the pack received is not valid: {_reason(e)}") from e
    if err is not None and received.bytes:
        n = len(pack) if pack is not None else 0
        err.write(f"Receiving objects: 100% ({n}/{n}), {_human(received.bytes)}, done.\n")
    if pack is not None:
        if refs is None and not callable(wants) and len(pack) >= _unpack_limit(config):
            # fetch-pack keeps a pack of at least fetch.unpackLimit objects
            # itself, and its .promisor lists what was sought (ids as names).
            refs = {w: w for w in sorted(wants)}
        write_promisor_pack(pack, refs)
    return pack, listed


def _new_pack(store):
    """dulwich's ``add_pack`` (a temporary file in ``objects/pack``; commit
    indexes it and moves it in; abort removes it), landed as ``index-pack``
    does: every object inflated and hashed once for the index, the pack's
    checksum verified. dulwich's own commit then inflates and parses every
    object a second time, which doubles the cost of a large clone; a thin
    pack (which we never ask for) still goes through dulwich's path, which
    completes it."""
    import tempfile

    from dulwich.object_store import PACK_MODE
    from dulwich.pack import PackData, PackIndexer

    fd, path = tempfile.mkstemp(dir=store.pack_dir, prefix="tmp_pack_", suffix=".pack")
    f = os.fdopen(fd, "w+b")
    os.chmod(path, PACK_MODE)

    def commit():
        if f.tell() == 0:
            abort()
            return None
        f.flush()
        f.seek(0)
        with PackData(path, file=f, object_format=store.object_format) as pd:
            indexer = PackIndexer.for_pack_data(pd, resolve_ext_ref=store.get_raw)
            entries, ext_refs = store._index_pack(indexer, len(pd))
        if ext_refs:
            return store._complete_pack(f, path, entries, ext_refs)
        return _move_in(store, f, path, entries)

    def abort():
        f.close()
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    return f, commit, abort


def _move_in(store, f, path: str, entries: list):
    """The end of ``_complete_pack`` without its second pass: checksum
    checked, pack renamed to ``pack-<hash>.pack``, index written, pack
    added to the store's list."""
    from dulwich.file import GitFile
    from dulwich.object_store import PACK_MODE
    from dulwich.pack import Pack, compute_file_sha, write_pack_index

    fmt = store.object_format
    f.seek(-fmt.oid_length, os.SEEK_END)
    trailer = f.read(fmt.oid_length)
    if compute_file_sha(f, hash_func=fmt.hash_func, end_ofs=-fmt.oid_length).digest() != trailer:
        f.close()
        os.remove(path)
        raise _Failed("the pack received is corrupt (bad checksum)")
    f.close()
    entries.sort()
    base = store._get_pack_basepath(entries)
    for pack in store.packs:
        if pack.name() == os.path.basename(base)[len("pack-"):].encode("ascii"):
            os.remove(path)  # the same objects are packed already
            return pack
    os.rename(path, base + ".pack")
    with GitFile(base + ".idx", "wb", mask=PACK_MODE) as idx:
        write_pack_index(idx, entries, trailer, version=store.pack_index_version)
    pack = Pack(base, object_format=fmt)
    store._add_cached_pack(os.path.basename(base), pack)
    return pack


def _unpack_limit(config) -> int:
    """``fetch.unpackLimit``, else ``transfer.unpackLimit``, else 100."""
    for section in (b"fetch", b"transfer"):
        try:
            value = config.get((section,), b"unpacklimit") if config is not None else None
        except KeyError:
            continue
        try:
            n = int(value)
        except (TypeError, ValueError):
            continue
        if n >= 0:
            return n
    return 100


def _reason(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text


def _fetch_local(path: str, wants, filter_spec: bytes | None, out) -> tuple[dict, dict]:
    from dulwich.pack import write_pack_from_container
    from dulwich.repo import Repo

    try:
        src = Repo(path)
    except Exception as e:  # noqa: BLE001 - not a repository, gone
        raise _Failed(f"'{path}' does not appear to be a git repository") from e
    try:
        store = src.object_store
        refs: dict = {}
        symrefs: dict = {}
        if callable(wants):
            refs = {k: v for k, v in src.get_refs().items()
                    if k == b"HEAD" or k.startswith((b"refs/heads/", b"refs/tags/"))}
            chain, _ = src.refs.follow(b"HEAD")
            if len(chain) > 1:
                symrefs[b"HEAD"] = chain[1]
            wants = wants(refs)
        try:
            ids = select_objects(store, wants, set(), filter_spec.decode() if filter_spec else None)
        except KeyError as e:
            raise _Failed(f"upload-pack: not our ref {_hexof(e)}") from None
        write_pack_from_container(out.write, store, [(o, None) for o in ids], store.object_format)
    finally:
        src.close()
    return refs, symrefs


def _hexof(e: KeyError) -> str:
    arg = e.args[0] if e.args else b""
    if isinstance(arg, bytes):
        return (arg if len(arg) in (40, 64) else arg.hex().encode()).decode()
    return str(arg)


def _fetch_remote(url: str, wants: list[bytes], filter_spec: bytes | None, config, out,
                  err: TextIO | None) -> dict:
    from dulwich.client import get_transport_and_path

    client, path = get_transport_and_path(url, config=config, thin_packs=False, quiet=err is None)
    listed: dict = {}

    def determine_wants(refs, depth=None):
        listed.update(refs)
        if callable(wants):
            return wants(refs)
        return list(wants)

    def progress(data: bytes) -> None:
        if err is not None:
            for piece in data.replace(b"\r", b"\r\0").split(b"\0"):
                if piece:
                    err.write("remote: " + piece.decode("utf-8", "replace"))

    # A server without filter support gets the wants alone (objects named
    # are sent whole anyway); dulwich's warning would make a second line.
    log = logging.getLogger("dulwich.client")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        if not callable(wants) and _fetch_v2_by_id(client, path, list(wants), filter_spec, out.write,
                                                   progress if err is not None else None):
            return listed, {}
        result = client.fetch_pack(path, determine_wants, _NoHaves(), out.write,
                                   progress=progress if err is not None else None, filter_spec=filter_spec,
                                   ref_prefix=list(CLONE_REF_PREFIXES) if callable(wants) else [b"HEAD"])
    finally:
        log.setLevel(level)
    return listed, dict(result.symrefs or {})


def _fetch_v2_by_id(client, path, wants: list[bytes], filter_spec: bytes | None, pack_data, progress) -> bool:
    """A protocol v2 ``fetch`` of object ids without listing refs first, as
    git's lazy fetch goes (one round trip where dulwich's ``fetch_pack``
    makes two), over a connection dulwich opens (``git://``, ``ssh://``,
    or a local ``git-upload-pack``): ``command=fetch``, ``ofs-delta``,
    ``filter``, the ``want`` lines and ``done``, then dulwich reads the
    packfile section; over smart HTTP see :func:`_fetch_v2_by_id_http`.
    False when the client is another kind or the server does not answer
    in v2; the caller then uses ``fetch_pack`` (a v0 server then needs
    ``uploadpack.allowAnySHA1InWant``, and ignores the filter)."""
    from dulwich import client as dc

    if isinstance(client, dc.AbstractHttpGitClient) and wants:
        return _fetch_v2_by_id_http(client, path, wants, filter_spec, pack_data, progress)
    if not isinstance(client, dc.TraditionalGitClient) or not wants:
        return False
    proto, can_read, stderr = client._connect(b"upload-pack", path, 2)
    with proto:
        try:
            version = dc.negotiate_protocol_version(proto)
        except dc.HangupException as e:
            raise dc._remote_error_from_stderr(stderr) from e
        if version != 2:
            return False  # (the connection is closed) a v0 server: dulwich's fetch_pack
        caps = dc.read_server_capabilities(proto.read_pkt_seq())
        client.protocol_version = 2
        negotiated, _symrefs, _agent = client._negotiate_upload_pack_capabilities(caps)
        for pkt in dc.build_fetch_request_v2(dc.extract_object_format_from_capabilities(caps)):
            proto.write_pkt_line(pkt)
        proto.write(b"0001")
        proto.write(_fetch_request_args(dc, negotiated, filter_spec, progress))
        walker = _NoHaves()
        dc._handle_upload_pack_head(proto, list(negotiated), walker, wants, can_read, depth=None,
                                    protocol_version=2)
        proto.shutdown_write()
        dc._handle_upload_pack_tail(proto, negotiated, walker, pack_data, progress, protocol_version=2)
    return True


def _fetch_request_args(dc, negotiated, filter_spec, progress) -> bytes:
    """The arguments of a v2 ``fetch`` before the wants (fetch-pack.c's order)."""
    from dulwich.protocol import pkt_line

    out = pkt_line(b"ofs-delta\n")
    if progress is None:
        out += pkt_line(b"no-progress\n")
    if filter_spec and dc.find_capability(list(negotiated), dc.CAPABILITY_FETCH, dc.CAPABILITY_FILTER):
        out += pkt_line(b"filter %s\n" % filter_spec)
    return out


def _fetch_v2_by_id_http(client, path, wants: list[bytes], filter_spec, pack_data, progress) -> bool:
    """:func:`_fetch_v2_by_id` over smart HTTP: the capability advertisement
    (``GET info/refs``) and one ``POST`` of the fetch command, as git's
    lazy fetch makes (dulwich's ``fetch_pack`` adds a ``POST`` of
    ``ls-refs``). False, after the ``GET`` only, when the server does not
    answer in v2."""
    from io import BytesIO
    from urllib.parse import urljoin

    from dulwich import client as dc
    from dulwich.protocol import Protocol

    url = client._get_url(path)
    resp, read = client._http_request(urljoin(url, "info/refs?service=git-upload-pack"),
                                      {"Accept": "*/*", "Git-Protocol": "version=2"})
    try:
        if resp.content_type is None or not resp.content_type.startswith("application/x-git-"):
            return False  # a dumb server: dulwich's own path
        proto = Protocol(read, lambda data: None)
        if dc.negotiate_protocol_version(proto) != 2:
            return False
        caps = dc.read_server_capabilities(proto.read_pkt_seq())
    finally:
        resp.close()
    client.protocol_version = 2
    negotiated, _symrefs, _agent = client._negotiate_upload_pack_capabilities(caps)
    body = b"".join(dc.pkt_line(p) for p in dc.build_fetch_request_v2(dc.extract_object_format_from_capabilities(caps)))
    body += b"0001" + _fetch_request_args(dc, negotiated, filter_spec, progress)
    req = BytesIO()
    walker = _NoHaves()
    dc._handle_upload_pack_head(Protocol(None, req.write), list(negotiated), walker, wants, can_read=None,
                                depth=None, protocol_version=2)
    resp, read = client._smart_request("git-upload-pack", url, body + req.getvalue())
    try:
        resp_proto = Protocol(read, None)
        dc._read_shallow_updates_v2(resp_proto)
        dc._handle_upload_pack_tail(resp_proto, negotiated, walker, pack_data, progress, protocol_version=2,
                                    http_request=client._http_request)
    finally:
        resp.close()
    return True


def write_promisor_pack(pack, refs: dict[bytes, bytes] | None) -> str:
    """``write_promisor_file``: ``<pack>.promisor`` beside the pack, empty
    for a lazy fetch, ``<oid> <ref>`` lines for a clone; mode 0600 as git's."""
    base = pack._basename if hasattr(pack, "_basename") else pack._data_path[: -len(".pack")]
    path = base + ".promisor"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        for name, oid in (refs or {}).items():
            f.write(oid + b" " + name + b"\n")
    return path


# --- the checkout's side ------------------------------------------------------------


def prefetch(config, store, wanted: list[tuple[bytes, bytes]], *, err: TextIO | None = None,
             what: str = "sha1 file", has: Callable[[bytes], bool] | None = None) -> int:
    """``prefetch_cache_entries`` + ``promisor_remote_get_direct``, failing
    closed: ``wanted`` is (path, raw oid) of everything the operation will
    read; whatever ``store`` lacks is fetched from the promisor remotes in
    one batch (the next remote gets what the previous one did not give).
    Returns how many objects were fetched. Raises :class:`PromisorError`
    (one line, nothing touched) when something stays missing.
    """
    paths: dict[bytes, bytes] = {}
    for path, oid in wanted:
        paths.setdefault(oid, path)
    missing = missing_objects(store, paths, has)
    if not missing:
        return 0
    remotes = promisor_remotes(config)
    if not remotes:
        first = missing[0]
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise PromisorError(f"unable to read {what} of {_show(paths[first])} ({first.hex()}){more}; "
                            "no promisor remote to fetch from")
    last_error = None
    remaining = missing
    for remote in remotes:
        try:
            fetch_objects(store, remote.url, [o.hex().encode() for o in remaining], config=config, err=err)
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


def prefetch_trees(config, store, root: bytes, *, err: TextIO | None = None) -> int:
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
        fetched += prefetch(config, store, [(b"", t) for t in missing], err=err, what="tree")


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
    :func:`is_partial` (decided once), whose pack list is then read again."""
    if not wanted or not _partial(repo):
        return 0
    # What an earlier call of this checkout found (or fetched) is not looked up again.
    present = getattr(repo, "_promisor_present", None)
    if present is None:
        present = repo._promisor_present = set()
    wanted = [(p, o) for p, o in wanted if o not in present]
    if not wanted:
        return 0
    n = prefetch(repo.config, repo.store, wanted, err=err, has=repo.odb.has_object)
    if n:
        repo.odb.rescan_packs()
    present.update(o for _p, o in wanted)
    return n


# --- git clone --filter --------------------------------------------------------------


def expand_filter(spec: str) -> str:
    """``expand_list_objects_filter_spec``: the form git records and sends
    (``blob:limit=1k`` is ``blob:limit=1024``). :class:`ValueError` for a
    spec ours does not support."""
    kind, n = parse_filter(spec)
    if kind == "tree":
        return f"tree:{n}"
    if spec.strip() == "blob:none":
        return "blob:none"
    return f"blob:limit={n}"


def _clone_wants(refs: dict) -> list[bytes]:
    """``wanted_peer_refs`` for a clone: the branches, the tags and HEAD."""
    out: list[bytes] = []
    for name, oid in refs.items():
        if name.endswith(b"^{}") or oid is None:
            continue
        if (name == b"HEAD" or name.startswith((b"refs/heads/", b"refs/tags/"))) and oid not in out:
            out.append(oid)
    return out


def clone_partial(url: str, directory: str, branch: str | None, filter_spec: str,
                  err: TextIO | None = None, environ=None) -> str | None:
    """``git clone --filter=<spec> <url> <directory>`` up to the checkout:
    the repository made, every ref's history fetched under the filter into
    one promisor pack (its ``.promisor`` file lists the refs, as git's),
    the remote-tracking refs, tags, ``origin/HEAD`` and the branch made as
    ``builtin/clone.c`` does, and ``partial_clone_register``'s settings
    (``core.repositoryformatversion=1``, ``remote.origin.promisor``,
    ``remote.origin.partialclonefilter``). ``directory`` exists and is
    empty. Returns the ref to check out (None for an empty repository, a
    commit id for a detached HEAD). Raises :class:`PromisorError` or
    :class:`clone.CloneError`."""
    from dulwich.config import ConfigFile
    from dulwich.repo import Repo

    from .config import read_config
    from .odb import discover

    spec = expand_filter(filter_spec)
    repo = Repo.init(directory, mkdir=False)
    gitdir = repo.controldir()
    store = repo.object_store
    promised: dict[bytes, bytes] = {}
    try:
        config = read_config(discover(directory), environ or {})
        refs: dict = {}

        def wants(remote_refs: dict) -> list[bytes]:
            if any(v is not None and len(v) == 64 for v in remote_refs.values()):
                raise _Failed("the remote uses SHA-256, which a partial clone of ours does not support")
            refs.update({k: v for k, v in remote_refs.items() if v is not None and not k.endswith(b"^{}")
                         and (k == b"HEAD" or k.startswith(CLONE_REF_PREFIXES[1:]))})
            if b"HEAD" in refs:
                promised[b"HEAD"] = refs[b"HEAD"]
            promised.update(sorted((k, v) for k, v in refs.items() if k != b"HEAD"))
            return _clone_wants(refs)

        try:
            _pack, (listed, symrefs) = fetch_objects(store, url, wants, filter_spec=spec.encode(),
                                                     config=config, err=err, refs=promised)
        except _Failed as e:
            raise PromisorError(f"could not fetch from '{url}': {e}") from None
        refs = refs or {k: v for k, v in listed.items() if not k.endswith(b"^{}")
                        and (k == b"HEAD" or k.startswith(CLONE_REF_PREFIXES[1:]))}
        head_ref = symrefs.get(b"HEAD")
        packed: dict[bytes, bytes] = {}
        for name, sha in refs.items():
            if name.startswith(b"refs/heads/"):
                packed[b"refs/remotes/origin/" + name[len(b"refs/heads/"):]] = sha
            elif name.startswith(b"refs/tags/"):
                packed[name] = sha
        want = (b"refs/heads/" + branch.encode()) if branch else head_ref
        if branch and want not in refs:
            raise CloneError(f"Remote branch {branch} not found in upstream origin")
        repo.refs.add_packed_refs(packed)
        if head_ref is not None and head_ref in refs:
            os.makedirs(os.path.join(gitdir, "refs", "remotes", "origin"), exist_ok=True)
            repo.refs.set_symbolic_ref(b"refs/remotes/origin/HEAD",
                                       b"refs/remotes/origin/" + head_ref[len(b"refs/heads/"):])
        cfg_path = os.path.join(gitdir, "config")
        cfg = ConfigFile.from_path(cfg_path)
        cfg.set((b"core",), b"repositoryformatversion", b"1")
        cfg.set((b"remote", b"origin"), b"url", url.encode())
        cfg.set((b"remote", b"origin"), b"fetch", b"+refs/heads/*:refs/remotes/origin/*")
        cfg.set((b"remote", b"origin"), b"promisor", b"true")
        cfg.set((b"remote", b"origin"), b"partialclonefilter", spec.encode())
        target = None
        if want is not None and want in refs:
            short = want[len(b"refs/heads/"):]
            repo.refs.set_if_equals(want, None, refs[want])
            cfg.set((b"branch", short), b"remote", b"origin")
            cfg.set((b"branch", short), b"merge", want)
            target = want.decode()
        elif b"HEAD" in refs and head_ref is None:
            target = refs[b"HEAD"].decode()  # the remote's HEAD is detached
        _format_version_first(cfg).write_to_path(cfg_path)
        return target
    finally:
        repo.close()


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
    target tree now, in one batch: that is what it will write, and the
    ``.gitattributes`` among them are then there when attributes are read.
    Otherwise the missing ``.gitattributes`` blobs are only noted: they go
    into the checkout's one batch (:func:`prefetch_plan`), after which the
    attributes are read again, as git reads ``.gitattributes`` only once
    its prefetch is done. Until then a missing one counts as absent, which
    can only make a file look modified to the planner (a refusal), never
    unmodified."""
    files = tree.files if tree is not None else {}
    co._promisor_attr_args = (tree, index)
    co._promisor_attrs = []
    if files and not index:
        o = co.opts
        show = o.progress if o.progress is not None else not o.quiet and co.err.isatty()
        prefetch_blobs(co.repo, [(p, mo[1]) for p, mo in files.items() if mo[0] != S_IFGITLINK],
                       co.err if show else None)
        return
    wanted = [(p, mo[1]) for p, mo in files.items() if p.endswith(b".gitattributes")]
    wanted += [(n, e.oid) for n, e in index.items() if n.endswith(b".gitattributes")]
    if wanted and _partial(co.repo):
        missing = set(missing_objects(co.repo.store, [o for _p, o in wanted], co.repo.odb.has_object))
        co._promisor_attrs = [(p, o) for p, o in wanted if o in missing]


def prefetch_plan(co, entries, err: TextIO | None = None) -> int:
    """The checkout's prefetch, once the plan is known and before the first
    change: every blob of ``entries`` and the ``.gitattributes`` noted by
    :func:`prefetch_attributes`, in one batch; the attributes are read
    again if any of those came."""
    pending = getattr(co, "_promisor_attrs", None) or []
    wanted = [(e.name, e.oid) for e in entries if e.mode != S_IFGITLINK] + pending
    n = prefetch_blobs(co.repo, wanted, err)
    if pending:
        co._promisor_attrs = []
        co.setup_attributes(*co._promisor_attr_args)
    return n
