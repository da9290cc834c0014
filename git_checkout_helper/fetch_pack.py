"""Fetching the objects a partial clone lacks: ``fetch-pack.c`` as
``promisor_remote_get_direct`` drives it, and ``index-pack --promisor``.

The fetch goes through dulwich's client (``git://``, ``ssh://``,
``http(s)://``), protocol v2 with a ``filter`` line and ``want`` lines of
object ids that no ref names (v2's upload-pack serves any object it has; a
v0 server needs ``uploadpack.allowAnySHA1InWant``). dulwich's
``fetch_pack`` lists refs first, which git skips when it fetches bare
object ids, so a lazy fetch sends its v2 ``fetch`` command itself over
dulwich's connection (:func:`_fetch_v2_by_id`): the same round trips as
git's. A fetched pack is indexed as ``index-pack`` does it
(:func:`_new_pack`) and kept with a ``.promisor`` file next to it
(:func:`write_promisor_pack`). dulwich's local client ignores filters, so a
``file://`` remote (or a path) is read here directly through dulwich's
object store, with the same object selection as upload-pack
(:func:`list_objects_filter.select_objects`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from .list_objects_filter import select_objects

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["CLONE_REF_PREFIXES", "PREFETCH_FILTER", "fetch_objects", "write_promisor_pack"]

#: The filter of every lazy fetch (promisor-remote.c: fetch_objects).
PREFETCH_FILTER = b"blob:none"
#: What a clone lists and fetches (``ref-prefix`` lines, as git's clone sends).
CLONE_REF_PREFIXES = (b"HEAD", b"refs/heads/", b"refs/tags/")


class _Failed(Exception):
    """A fetch that failed; the reason, for :class:`promisor.PromisorError`'s line."""



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
    ssh_command: str | None = None,
    warn: Callable[[str], None] | None = None,
    environ=None,
) -> tuple[object, dict]:
    """Fetch ``wants`` (hex ids) from ``url`` into ``store`` as one promisor
    pack. ``wants`` may be a function of the remote's refs (a clone: all of
    them are listed then, and ``refs`` is filled with what the ``.promisor``
    file lists, as ``index-pack --promisor`` does for a clone); a lazy fetch
    leaves that file empty. ``err``: progress is written there ("remote:
    ..." lines and "Receiving objects"), None for quiet. ``warn``: what git
    warns of, quiet or not (a ``file://`` source that does not allow
    filters: :func:`_fetch_local`); ``environ``: the environment that
    source's config is read with.

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
            listed = _fetch_local(local, wants, filter_spec, received, warn, environ)
        else:
            listed = _fetch_remote(url, wants, filter_spec, config, received, err, ssh_command)
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


def _fetch_local(path: str, wants, filter_spec: bytes | None, out, warn=None, environ=None) -> tuple[dict, dict]:
    """What ``upload-pack`` in the repository at ``path`` would send: the
    filter only where its config allows filters (``uploadpack.allowFilter``,
    false unless set); else everything the wants reach, and git's warning."""
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
        if not wants:
            return refs, symrefs  # (an empty repository: no pack, as upload-pack sends none)
        if filter_spec and not _allows_filter(src, environ):
            filter_spec = None
            if warn is not None:
                warn("filtering not recognized by server, ignoring")
        try:
            ids = select_objects(store, wants, set(), filter_spec.decode() if filter_spec else None)
        except KeyError as e:
            raise _Failed(f"upload-pack: not our ref {_hexof(e)}") from None
        write_pack_from_container(out.write, store, [(o, None) for o in ids], store.object_format)
    finally:
        src.close()
    return refs, symrefs


def _allows_filter(src, environ) -> bool:
    """``uploadpack.allowFilter`` as ``upload-pack`` reads it in ``src``
    (its config, then global and system, and ``git -c`` settings)."""
    from .config import read_config
    from .discovery import GitDirs

    config = read_config(GitDirs(src.controldir(), src.commondir(), None), environ or {})
    try:
        return config.get_boolean((b"uploadpack",), b"allowfilter", False)
    except (KeyError, ValueError):
        return False


def _hexof(e: KeyError) -> str:
    arg = e.args[0] if e.args else b""
    if isinstance(arg, bytes):
        return (arg if len(arg) in (40, 64) else arg.hex().encode()).decode()
    return str(arg)


def ssh_command(environ, config) -> str | None:
    """``connect.c``'s choice of ssh: ``GIT_SSH_COMMAND`` (a shell command),
    else ``core.sshCommand``, else ``GIT_SSH`` (a program), else None (ssh).
    dulwich reads none of the environment itself."""
    cmd = environ.get("GIT_SSH_COMMAND")
    if cmd:
        return cmd
    try:
        value = config.get((b"core",), b"sshcommand") if config is not None else None
    except KeyError:
        value = None
    if value:
        return value.decode()
    program = environ.get("GIT_SSH")
    if program:
        import shlex

        return shlex.quote(program)
    return None


def _fetch_remote(url: str, wants: list[bytes], filter_spec: bytes | None, config, out,
                  err: TextIO | None, ssh_command: str | None = None) -> dict:
    from dulwich.client import SSHGitClient, get_transport_and_path

    client, path = get_transport_and_path(url, config=config, thin_packs=False, quiet=err is None)
    if ssh_command and isinstance(client, SSHGitClient):
        client.ssh_command = ssh_command
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


