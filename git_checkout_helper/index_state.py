"""What an index holds beyond its entries, read completely or refused.

Mirrors ``read-cache.c`` ``read_index_from`` (the index file, then for a
split index its shared index, ``split-index.c`` ``merge_base_index``) and
keeps what ``do_write_index`` needs to write the index back as git would
after the same operation (:func:`index_chunks`).

Fail closed: an index we cannot read completely and write back faithfully
is refused with git's words (exit 128) before anything is touched: a bad
signature or version, a trailing hash that does not match, an unknown
required extension, a corrupt ``link`` extension or shared index. A sparse
index (``sdir``) is expanded when read and collapsed again when written as
git would (:mod:`sparse_index`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from .hash_algo import oid_length
from .index import Entry, ReadIndex
from .index_file import CE_STAGEMASK, IndexFile, IndexFormatError, index_order_key, parse_index

__all__ = ["IndexState", "read_index_state", "resolve_undo_data"]


class IndexState:
    """The parts of ``struct index_state`` a rewrite needs.

    ``file``: the index file as read (its version and extensions);
    ``split``: a :class:`split_index.SplitIndex` when the file had a
    ``link`` extension, else None; ``path``: where it was read from.
    """

    __slots__ = ("file", "split", "path", "entries", "sparse")

    def __init__(self, file: IndexFile | None, split, path: str, entries: list | None = None,
                 sparse: bool = False) -> None:
        self.file = file
        self.split = split
        self.path = path
        self.entries = entries or []  # every entry, all stages, a split index merged, a sparse one expanded
        self.sparse = sparse  # read as a sparse index (its TREE describes the collapsed entries)

    def let_entries_go(self) -> None:
        """Drop the entries as read, and the file's list of them (None
        since): for a switch whose merge lets the index go
        (:func:`checkout.unpack.let_go_source`), after which only a split
        or sparse index reads them (:func:`index_chunks`)."""
        self.entries = None
        if self.file is not None:
            self.file.entries = None


def _refuse(msg: str) -> IndexFormatError:
    return IndexFormatError(msg)


def read_index_state(path: str, object_format, warn=None, tree_files=None) -> ReadIndex:
    """``read_index_from``: a missing index is an empty one (``is_index_unborn``).
    ``tree_files(raw tree id)``: a tree's files, to expand a sparse index
    (without it such an index is refused)."""
    rawsz = getattr(object_format, "oid_length", 20)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except FileNotFoundError:
        return ReadIndex({}, 2, 0, [], IndexState(None, None, path))
    except OSError as e:
        raise IndexFormatError(f"fatal: {path}: index file open failed: {e.strerror}") from None
    idx = parse_index(data, rawsz, path)
    del data  # (the file's bytes beside the dictionary made below: 10 MiB more at 100,000 entries)
    for w in idx.warnings:
        (warn or sys.stderr.write)(w + "\n")
    entries = idx.entries
    sparse = idx.extension(b"sdir") is not None
    if sparse:
        if tree_files is None:
            raise _refuse("fatal: this index is a sparse index (sdir extension), which this command "
                          "cannot expand")
        from .sparse_index import expand

        entries = expand(entries, tree_files)
    split = None
    link = idx.extension(b"link")
    if link is not None:
        from .split_index import read_split_index

        split, entries = read_split_index(idx, link, os.path.dirname(path) or ".", rawsz)
    out: dict[bytes, Entry] = {}
    unmerged: list[bytes] = []
    for e in entries:
        if e.ce_flags & CE_STAGEMASK:
            if not unmerged or unmerged[-1] != e.name:
                unmerged.append(e.name)
            continue
        out[e.name] = e
    # An unmerged path has no stage-0 entry (git refuses one that has both).
    return ReadIndex(out, idx.version, st.st_mtime_ns, unmerged, IndexState(idx, split, path, entries, sparse))


# -- writing ---------------------------------------------------------------


def _cfg(config, section: bytes, name: bytes) -> bytes | None:
    from .config import _get

    return _get(config, section, name) if config is not None else None


def _cfg_bool(config, key: str) -> bool | None:
    from .config import git_config_bool

    section, _, name = key.rpartition(".")
    raw = _cfg(config, section.encode(), name.encode())
    if raw is None:
        return None
    return git_config_bool(key, raw)


def _cfg_int(config, key: str) -> int | None:
    from .config import git_config_int

    section, _, name = key.rpartition(".")
    raw = _cfg(config, section.encode(), name.encode())
    return None if raw is None else git_config_int(key, raw)


def default_index_version(config, err=None) -> int:
    """``get_index_format_default`` (a new index): ``index.version``, else
    4 with ``feature.manyFiles``, else 2."""
    v = _cfg_int(config, "index.version")
    if v is not None:
        if 2 <= v <= 4:
            return v
        (err or sys.stderr.write)(
            "warning: index.version set, but the value is invalid.\n"
            f"Using version {2}\n")
        return 2
    if _cfg_bool(config, "feature.manyFiles"):
        return 4
    return 2


def _threads_settings(config, nr_entries: int) -> tuple[int, bool]:
    """``record_ieot``/``record_eoie`` and the IEOT block count do_write_index uses."""
    threads = None
    raw = _cfg(config, b"index", b"threads")
    if raw is not None:
        from .config import git_config_bool

        try:
            threads = int(raw)
        except ValueError:
            threads = 0 if git_config_bool("index.threads", raw) else 1
    eoie = _cfg_bool(config, "index.recordEndOfIndexEntries")
    if eoie is None:
        eoie = threads is not None and threads != 1
    ieot = _cfg_bool(config, "index.recordOffsetTable")
    if ieot is None:
        ieot = threads is not None and threads != 1
    blocks = 0
    if ieot and threads is not None and threads != 1:
        if threads == 0:
            from .config import online_cpus

            blocks = min(nr_entries // 10000, online_cpus() - 1)
        else:
            blocks = min(threads, nr_entries)
    return blocks, eoie


def _untracked(old: bytes | None, changed: bool, config, worktree: bytes | None, rawsz: int) -> bytes | None:
    """The ``UNTR`` extension after an operation (``tweak_untracked_cache``,
    ``untracked_cache_invalidate_path``). Unchanged when the work tree and
    the entries are; otherwise the cache keeps its header (ident, flags,
    exclude files' stat data) and loses every directory (as if it had just
    been added), which the next ``git status`` fills again: never stale.
    ``core.untrackedCache=false`` removes it, ``true`` adds an empty one;
    ``feature.manyFiles`` makes ``true`` the default, which ``keep`` (or
    any value not a boolean) leaves in place (``prepare_repo_settings``)."""
    from .index_file import decode_varint, encode_varint
    from .parse import git_parse_maybe_bool

    mode = True if _cfg_bool(config, "feature.manyFiles") else None
    setting = _cfg(config, b"core", b"untrackedCache")
    if setting is not None and git_parse_maybe_bool(setting) is not None:
        mode = git_parse_maybe_bool(setting)
    if mode is False:
        return None
    ident = None
    if worktree is not None:
        ident = b"Location " + worktree.rstrip(b"/") + b", system " + os.uname().sysname.encode() + b"\0"
    header = None
    if old is not None:
        try:
            n, p = decode_varint(old, 0)
            old_ident = old[p:p + n]
            p += n + 2 * 36 + 4 + 2 * rawsz
            nul = old.index(b"\0", p)
            header = old[:nul + 1]
        except (IndexError, ValueError):
            return None  # unreadable: git would drop it too (read_untracked_extension)
        if mode is True and ident is not None and old_ident != ident:
            header = None  # ident_in_untracked failed: a new cache
        elif not changed:
            return old
    if header is None:
        if mode is not True or ident is None:
            return None
        show_all = (_cfg(config, b"status", b"showUntrackedFiles") or b"").strip().lower() == b"all"
        flags = 0 if show_all else (1 << 1) | (1 << 2)  # DIR_SHOW_OTHER_DIRECTORIES | DIR_HIDE_EMPTY_DIRECTORIES
        header = (encode_varint(len(ident)) + ident + b"\0" * (2 * 36) + flags.to_bytes(4, "big")
                  + b"\0" * (2 * rawsz) + b".gitignore\0")
    return header + encode_varint(0)


def _fsmonitor(old: bytes | None, changed: bool, config, nr: int) -> bytes | None:
    """``FSMN``: dropped unless ``core.fsmonitor`` is set (``tweak_fsmonitor``);
    unchanged when nothing changed; otherwise every entry marked not valid
    (``mark_fsmonitor_invalid``), so the next query looks at each again."""
    if old is None:
        return None
    raw = _cfg(config, b"core", b"fsmonitor")
    if raw is None:
        return None
    try:
        if not _cfg_bool(config, "core.fsmonitor"):
            return None
    except Exception:  # noqa: BLE001 - a hook path, not a boolean: enabled
        pass
    if not changed:
        return old
    version = int.from_bytes(old[:4], "big")
    if version == 1:
        head = old[:12]
    elif version == 2:
        head = old[:old.index(b"\0", 4) + 1]
    else:
        return None
    from .ewah import ewah_serialize

    bitmap = ewah_serialize(range(nr))
    return head + len(bitmap).to_bytes(4, "big") + bitmap


def invalidate_cache_tree(data: bytes, paths, rawsz: int) -> bytes:
    """``cache_tree_invalidate_path`` for each of ``paths`` over a ``TREE``
    extension's bytes (``cache_tree_read``/``cache_tree_write``, :mod:`cachetree`)."""
    from .cachetree import CacheTree

    tree = CacheTree.parse(data, rawsz)
    for path in paths:
        tree.invalidate(path)
    return tree.serialize()


def resolve_undo_data(records: Iterable[tuple[bytes, int, bytes]]) -> bytes:
    """``resolve_undo_write``: the ``REUC`` extension's data for
    (path, mode, raw id) entries recorded at stage 3, by path ("" for none)."""
    return b"".join(name + b"\0" + b"0\0" b"0\0" + b"%o\0" % mode + oid for name, mode, oid in sorted(records))


def index_chunks(
    entries: list[Entry],
    hash_name: str,
    cache_tree: bytes | None,
    old: ReadIndex,
    config,
    *,
    worktree: bytes | None,
    switch: bool,
    changed: bool,
    changed_paths=(),
    unread: bool = False,
    err=None,
    sparse=None,
    ensure_tree=None,
    resolve_undo: bytes = b"",
    openssl: bool = True,
) -> Iterable[bytes]:
    """``write_locked_index`` after a checkout: the bytes for ``index.lock``,
    in chunks (:func:`index_file.index_file_chunks`).

    ``switch``: the index was rebuilt by unpack-trees (a switch, ``-f``, a
    clone): an entry keeps its place in a shared index only if its mode and
    object are unchanged, the resolve-undo data goes
    (``resolve_undo_clear_index``) and ``cache_tree`` is the new ``TREE``.
    Otherwise (paths restored, ``--all``) entries are updated in place, the
    ``REUC`` data stays, and the old ``TREE`` is kept with
    ``changed_paths`` invalidated; ``resolve_undo``: the ``REUC`` data a
    switch made (:func:`resolve_undo_data`). ``changed``: the work tree or some entry
    changed (the untracked cache and fsmonitor data cannot be kept as read).
    ``sparse``: the sparse-checkout patterns, and ``ensure_tree(raw id,
    content)`` to store a tree: the index is written sparse when git would
    (``convert_to_sparse``, :mod:`sparse_index`). ``openssl``: see
    :func:`index_file.index_file_chunks` (an index that is not split).
    """
    rawsz = oid_length(hash_name)
    state: IndexState | None = old.source if isinstance(old.source, IndexState) else None
    file = state.file if state is not None else None
    version = file.version if file is not None else default_index_version(config, err)
    # Unmerged entries nobody replaced stay when entries are updated in place
    # (an index never holds less); unpack-trees (switch, -f) drops them.
    if file is not None and old.unmerged and not switch:
        names = {e.name for e in entries}
        keep = [e for e in state.entries if e.ce_flags & CE_STAGEMASK and e.name not in names]
        if keep:
            entries = sorted(entries + keep, key=index_order_key)
    # ce->index: which entries are still the shared index's (a split index's).
    if state is not None and state.split is not None:
        prev = old.entries
        shared = []
        for e in entries:
            o = None if e.base else prev.get(e.name)
            if o is not None and o.base and (not switch or (o.mode == e.mode and o.oid == e.oid)):
                e = e.copy(o.base)  # (an entry of no split index has no slot for it: index.SharedEntry)
            shared.append(e)
        entries = shared
    exts: list[tuple[bytes, bytes]] = []
    if switch:
        if cache_tree is not None:
            exts.append((b"TREE", cache_tree))
        if resolve_undo:
            exts.append((b"REUC", resolve_undo))
    elif file is not None:
        tree = file.extension(b"TREE")
        if tree is not None:
            if changed_paths:
                try:
                    tree = invalidate_cache_tree(tree, changed_paths, rawsz)
                except (ValueError, IndexError):
                    tree = None  # unreadable: git drops it (cache_tree_read fails)
            if tree is not None:
                exts.append((b"TREE", tree))
        reuc = file.extension(b"REUC")
        if reuc is not None:
            exts.append((b"REUC", reuc))
    untr = _untracked(file.extension(b"UNTR") if file is not None else None, changed,
                      None if unread else config, worktree, rawsz)
    if untr is not None:
        exts.append((b"UNTR", untr))
    fsmn = _fsmonitor(file.extension(b"FSMN") if file is not None else None, changed, config, len(entries))
    if fsmn is not None:
        exts.append((b"FSMN", fsmn))
    split = state.split if state is not None else None
    want = None if unread else _cfg_bool(config, "core.splitIndex")
    if want is False:
        split = None
    if sparse is not None or (state is not None and state.sparse):
        entries, exts = _sparse_index(entries, exts, hash_name, config, sparse, ensure_tree,
                                      split is not None or bool(want), state, switch)
    blocks, eoie = _threads_settings(config, len(entries))
    if split is not None or want:
        return _split_index_chunks(entries, split, version, exts, rawsz, state, old, config, err, blocks, eoie)
    from .index_file import index_file_chunks

    return index_file_chunks(version, entries, exts, rawsz, blocks, eoie,
                             skip_hash=bool(_cfg_bool(config, "index.skipHash")), openssl=openssl)


def _split_index_chunks(entries: list[Entry], split, version: int, exts: list[tuple[bytes, bytes]], rawsz: int,
                        state: IndexState | None, old: ReadIndex, config, err, blocks: int, eoie: bool
                        ) -> Iterable[bytes]:
    """:func:`index_chunks` of an index that is (or becomes) split, with
    ``splitIndex.*``'s settings as git reads them."""
    from .split_index import write_split_index

    max_split = _cfg_int(config, "splitIndex.maxPercentChange")
    if max_split is None or not 0 <= max_split <= 100:
        if max_split is not None:
            (err or sys.stderr.write)(
                f"error: splitIndex.maxPercentChange value '{max_split}' should be between 0 and 100\n")
        max_split = -1
    expire = _cfg(config, b"splitIndex", b"sharedIndexExpire")
    return write_split_index(
        entries, split, version=version, extensions=exts, rawsz=rawsz,
        gitdir=os.path.dirname(state.path) if state is not None else ".",
        timestamp_ns=old.mtime_ns, max_split=max_split,
        expire=expire.decode("utf-8", "replace") if expire is not None else None,
        new_shared=split is None, ieot_blocks=blocks, eoie=eoie)


def _sparse_index(entries: list[Entry], exts: list[tuple[bytes, bytes]], hash_name: str, config, sparse,
                  ensure_tree, split: bool, state: IndexState | None, switch: bool):
    """The entries and extensions to write for a sparse checkout. Read
    sparse and not expanded by git (a restore or ``--all`` that changed
    nothing below a sparse directory): the form read, its ``TREE`` as the
    caller kept it, ``sdir``. Else ``do_write_locked_index``'s
    ``convert_to_sparse``. Collapsed: its own ``TREE``, ``sdir``, and no
    ``FSMN`` (``remove_fsmonitor``). Left full after a sparse read: the
    ``TREE`` read described the collapsed index, so unless a switch made
    a new one it goes (git recomputes it; dropping it is never stale)."""
    from .sparse_index import (
        collapse_cache_tree,
        convert_to_sparse,
        sparse_index_allowed,
        switch_keeps_expanded,
        unexpanded,
    )

    was_sparse = state is not None and state.sparse
    if was_sparse and not switch:
        kept = unexpanded(entries, state.file.entries, state.entries)
        if kept is not None:
            return kept, exts + [(b"sdir", b"")]
    collapsed = None
    if ensure_tree is not None and sparse_index_allowed(config, sparse, split):
        keep = switch_keeps_expanded(state.file.entries, sparse) if was_sparse and switch else None
        collapsed = convert_to_sparse(entries, sparse, hash_name, ensure_tree, keep or frozenset())
    if collapsed is not None:
        entries, tree = collapsed
        if keep is not None:  # never expanded: the switch's own TREE, its sparse directories leaves
            old_tree = next((d for s, d in exts if s == b"TREE"), None)
            tree = collapse_cache_tree(old_tree, entries, oid_length(hash_name)) if old_tree else None
        exts = [(s, d) for s, d in exts if s not in (b"TREE", b"FSMN")] + [(b"TREE", tree)] * (tree is not None) + [
            (b"sdir", b"")]
    elif was_sparse and not switch:
        exts = [(s, d) for s, d in exts if s != b"TREE"]
    return entries, exts
