"""Writing one regular-file item into the work tree.

Mirrors git's ``write_pc_item`` (parallel-checkout.c), which both a helper
process and the coordinator's sequential mode use, so the two modes cannot
drift apart:

1. the leading directories must already be real directories (the coordinator
   made them); a symlink or a file there means another item of this checkout
   took the place: COLLIDED (``has_dirs_only_path``);
2. ``open(O_WRONLY|O_CREAT|O_EXCL)`` with 0777 for executables, 0666
   otherwise (the umask applies); EEXIST or EISDIR: COLLIDED;
3. read the blob, convert it, write it; a failed write unlinks the file: FAILED;
4. ``fstat`` the open file (``lstat`` after closing when a prefix is used,
   as ``fstat_checkout_output`` does), and report WRITTEN.

Beyond git, an item may name a ``filter.<driver>`` (our helpers'
``--filters`` extension, :mod:`filters`): it is converted in core and run
through the driver after the file is opened, the whole output kept before
the first byte is written; a failing required driver is FAILED and its file
removed, a failing optional one writes the unfiltered content, as git does.

Beyond git, a run of items is written in two passes (:func:`write_pc_items`):
the blobs of up to ``READ_AHEAD_ITEMS`` items are read from the mapped packs
first, then the items are written in order, each exactly as
``write_pc_item`` writes it. Reading packs is all the first pass does: it
opens no file, writes nothing, reports nothing; a blob it did not get (a
loose object, one to stream, a read that fails) is read at its item's turn,
after the file is created, as git reads it, and a failure is reported
there. It pays because inflating and creating files take turns less often:
on these machines a git.git checkout's item cost 86 us written one at a
time and 68-72 us with runs of 16 to 256 (the same reads and system calls,
measured in one process), and both the user and the system time of a
sequential clone went down (0.548 s to 0.518 s, 0.136 s to 0.116 s). No
hardware counter was available here to say which caches it spares. A
helper's I/O threads (``--threads``, for latency-bound work trees) still
write item by item: reading ahead was not measured there.

Beyond git, a helper validates the path first (``..``, ``.git`` in its
NTFS/HFS spellings, absolute paths, NUL) with dulwich's validators, because it
must not trust what arrives on its stdin. The coordinator's sequential mode
does not: its items are the paths it verified itself, with the repository's
``core.protectNTFS``/``core.protectHFS``, before touching anything
(``validate_element=None``). Nor do the helpers it forks
(``helper.main(paths_verified=True)``): they get the same items, on a pipe
only the coordinator writes, from the same code. Checking them again cost
about a tenth of such a helper's time (8 µs an item of git.git's 90).
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Callable, Iterator, Sequence

from .convert import (
    NULL_FILTER,
    PLAIN_ACTIONS,
    EolConfig,
    apply_filter,
    convert_to_working_tree,
    get_stream_filter,
)
from .filters import SmudgeFailed, smudge_to_worktree
from .odb import BlobStream, MissingObject, ObjectDatabase
from .verify_path import validate_path, validate_path_element_ntfs
from .wire import PcItem, PcItemStatus
from .wrapper import show_path, write_in_full

__all__ = ["CheckoutState", "write_pc_item", "write_pc_items"]

WRITTEN = PcItemStatus.PC_ITEM_WRITTEN
COLLIDED = PcItemStatus.PC_ITEM_COLLIDED
FAILED = PcItemStatus.PC_ITEM_FAILED

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
#: A streamable blob larger than this is inflated and written piece by piece
#: (git streams every streamable blob; below this one read is as good).
STREAM_THRESHOLD = 1 << 21
#: Items whose blobs :func:`write_pc_items` reads before it writes the first
#: of them (16 to 256 measured alike on git.git), and the most bytes of blobs
#: it holds read ahead: a run stops reading early at a large blob.
READ_AHEAD_ITEMS = 32
READ_AHEAD_BYTES = 1 << 20


def _default_error(msg: str) -> None:
    if not msg.isprintable():  # one line, whatever a path or an encoding name holds
        msg = "".join(c if c.isprintable() else repr(c)[1:-1] for c in msg)
    os.write(2, f"error: {msg}\n".encode("utf-8", "surrogateescape"))


class CheckoutState:
    """``struct checkout``, as far as writing a regular file needs it.

    ``base_dir`` is the ``--prefix`` (bytes, with its trailing slash), or
    empty. ``eol`` may be a callable that loads the config on first use: most
    checkouts never need ``core.autocrlf``. ``trace`` receives
    ``(category, key, value)`` for collision records. ``validate_element``:
    the path element validator items are checked with, or None for items
    whose paths the caller has verified already (see the module's text).
    ``fstat_output``: the file's stat data is read from its descriptor
    before it is closed (``fstat_checkout_output``); git does so only when
    the path written is the entry's own, so by default only without a
    ``base_dir``; the coordinator's own writes (``base_dir`` its work
    tree's top, not a ``--prefix``) say True.
    """

    def __init__(
        self,
        odb: ObjectDatabase,
        base_dir: bytes = b"",
        eol: EolConfig | Callable[[], EolConfig] | None = None,
        trace: Callable[[str, str, str], None] | None = None,
        error: Callable[[str], None] = _default_error,
        validate_element: Callable[[bytes], bool] | None = validate_path_element_ntfs,
        filters=None,
        drivers=None,
        fstat_output: bool | None = None,
    ) -> None:
        self.odb = odb
        self.base_dir = base_dir
        self.base_dir_len = len(base_dir)
        self.fstat_output = not base_dir if fstat_output is None else fstat_output
        self._eol = eol if eol is not None else EolConfig()
        self.trace = trace
        self.error = error
        # Conversion messages (an encoding that fails: git says so and writes
        # the content unconverted, no failure); the helpers print them, so
        # sequential mode must not count them as errors either.
        self.say = error
        self.validate_element = validate_element
        # Filtered items (``--filters``): a filters.FilterRunner of this
        # process and the filter.<driver> sections by name.
        self.filters = filters
        self.drivers = drivers or {}
        # has_dirs_only_path cache: the last directory proven to be made of
        # real directories only (git's lstat_cache keeps the same).
        self._good_dir: bytes | None = None
        # Directories whose components passed verify_path (see verify_item_path).
        self.valid_dirs: set[bytes] = set()
        # Blobs read ahead by write_pc_items, by object id (bytes only: a
        # blob that would be streamed is read at its turn).
        self.ahead: dict[bytes, bytes] = {}

    @property
    def eol(self) -> EolConfig:
        if callable(self._eol):
            self._eol = self._eol()
        return self._eol

    def forget_dirs(self) -> None:
        """Drop the directory cache (call after changing the tree)."""
        self._good_dir = None

    def for_thread(self) -> CheckoutState:
        """A view of this state for one I/O thread (``checkout--helper
        --threads``): the same settings, object database and callbacks, its
        own directory caches (``has_dirs_only_path``'s last good directory,
        ``verify_item_path``'s valid directories), so threads never share a
        cache that one of them is updating."""
        view = object.__new__(type(self))  # (copy.copy's result, without its 1.6 ms of import)
        view.__dict__.update(self.__dict__)
        view._good_dir = None
        view.valid_dirs = set()
        view.ahead = {}
        return view

    def has_dirs_only_path(self, dirpath: bytes) -> bool:
        """``has_dirs_only_path``: every component of ``dirpath`` is a directory.

        As git's ``lstat_cache_matchlen``: components that end within the
        prefix are ``stat()``ed (a symlinked ``--prefix`` is followed, a
        missing one is a collision), those below it ``lstat()``ed (a symlink
        there is not a directory)."""
        good = self._good_dir
        if good is not None and (dirpath == good or good.startswith(dirpath + b"/")):
            return True
        base = self.base_dir_len
        i = dirpath.find(b"/", 1)
        while True:
            part = dirpath if i == -1 else dirpath[:i]
            if good is None or not (good == part or good.startswith(part + b"/")):
                try:
                    st = os.stat(part) if len(part) <= base else os.lstat(part)
                except OSError:
                    return False
                if not stat_mod.S_ISDIR(st.st_mode):
                    return False
            if i == -1:
                break
            i = dirpath.find(b"/", i + 1)
        self._good_dir = dirpath
        return True


def verify_item_path(
    name: bytes, validate_element: Callable[[bytes], bool], valid_dirs: set[bytes] | None = None
) -> str | None:
    """Why ``name`` may not be checked out, or None when it is safe (verify_path).

    ``valid_dirs`` remembers directories whose every component has passed,
    so the items of one directory (contiguous in a batch) validate only
    their last component: the same verdicts at a third of the cost.
    """
    if not name:
        return "empty path"
    if b"\0" in name:
        return "path contains NUL"
    slash = name.rfind(b"/")
    if valid_dirs is not None and slash > 0 and name[:slash] in valid_dirs:
        if not validate_element(name[slash + 1 :]):
            return "invalid path"
        return None
    if not validate_path(name, validate_element):
        return "invalid path"
    if valid_dirs is not None and slash > 0:
        valid_dirs.add(name[:slash])
    return None


def write_pc_items(items: Sequence[PcItem], state: CheckoutState) -> Iterator[tuple[int, os.stat_result | None]]:
    """:func:`write_pc_item` for each of ``items`` in order, the blobs of each
    run of ``READ_AHEAD_ITEMS`` read before the run is written (see the
    module's text); yields what each call returned."""
    ahead = state.ahead
    for start in range(0, len(items), READ_AHEAD_ITEMS):
        run = items[start:start + READ_AHEAD_ITEMS]
        _read_ahead(run, state)
        try:
            for item in run:
                yield write_pc_item(item, state)
        finally:
            ahead.clear()


def _read_ahead(run: Sequence[PcItem], state: CheckoutState) -> None:
    """Read the packed blobs of ``run`` into ``state.ahead`` as far as
    ``READ_AHEAD_BYTES`` allows; nothing else. Items with a filter driver
    are left to their turn, and so is any blob
    :meth:`odb.ObjectDatabase.packed_blob` does not give (a loose object, one
    that would stream, a read that fails)."""
    ahead, packed_blob = state.ahead, state.odb.packed_blob
    held = 0
    for item in run:
        if item.filter is not None or item.oid in ahead:
            continue
        blob = packed_blob(item.oid, STREAM_THRESHOLD)
        if blob is None:
            continue
        ahead[item.oid] = blob
        held += len(blob)
        if held >= READ_AHEAD_BYTES:
            return


def write_pc_item(item: PcItem, state: CheckoutState) -> tuple[int, os.stat_result | None]:
    """Write ``item``; returns its status and, when WRITTEN, its stat data."""
    name = item.name
    path = state.base_dir + name if state.base_dir_len else name
    if state.validate_element is not None:
        why = verify_item_path(name, state.validate_element, state.valid_dirs)
        if why is not None:
            state.error(f"{why} '{show_path(path)}'")
            return FAILED, None
    if item.ce_mode & 0o170000 != 0o100000:
        # Only regular files are eligible for parallel checkout; git's worker
        # asserts this after it has created the file. Refuse before touching it.
        state.error(f"cannot check out '{show_path(path)}': mode {item.ce_mode:o} is not a regular file")
        return FAILED, None

    slash = path.rfind(b"/")
    if slash > 0 and not state.has_dirs_only_path(path[:slash]):
        if state.trace:
            state.trace("pcheckout", "collision/dirname", path.decode("utf-8", "surrogateescape"))
        return COLLIDED, None

    drv = None
    if item.filter is not None:
        drv = state.drivers.get(item.filter)
        if drv is None or not drv.parallel or state.filters is None:
            state.error(f"'{show_path(path)}': filter driver '{show_path(item.filter)}' is not "
                        f"configured with filter.<driver>.parallel here")
            return FAILED, None

    mode = 0o777 if item.ce_mode & 0o100 else 0o666
    try:
        fd = os.open(path, _OPEN_FLAGS, mode)
    except OSError as e:
        if e.errno in (errno.EEXIST, errno.EISDIR, errno.ELOOP):
            if state.trace:
                state.trace("pcheckout", "collision/basename", path.decode("utf-8", "surrogateescape"))
            return COLLIDED, None
        state.error(f"failed to open file '{path.decode('utf-8', 'replace')}': {e.strerror}")
        return FAILED, None

    st = None
    try:
        if drv is None:
            _write_blob(fd, item, name, path, state)
        else:
            _write_filtered(fd, item, drv, name, path, state)
        if state.fstat_output:
            st = os.fstat(fd)
    except (OSError, MissingObject, SmudgeFailed):
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        return FAILED, None
    except BaseException:
        # Interrupted (SIGTERM, ^C): leave no half-written file behind.
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    try:
        os.close(fd)
    except OSError as e:
        state.error(f"unable to close file '{path.decode('utf-8', 'replace')}': {e.strerror}")
        return FAILED, None
    if st is None:
        try:
            st = os.lstat(path)
        except OSError as e:
            state.error(f"unable to stat just-written file '{path.decode('utf-8', 'replace')}': {e.strerror}")
            return FAILED, None
    return WRITTEN, st


def _write_blob(fd: int, item: PcItem, name: bytes, path: bytes, state: CheckoutState) -> None:
    """Read, convert and write the blob: ``write_pc_item_to_fd``.

    As git: an item ``get_stream_filter_ca`` has a filter for is streamed
    through it (a blob above ``STREAM_THRESHOLD`` never sits in memory
    whole; below it the one read is filtered at once, with the same result);
    any other item (working-tree-encoding, AUTO / AUTO_CRLF) is converted in
    core. An item that asks for nothing is written as it is read. Raises
    OSError / MissingObject after reporting them.
    """
    if item.crlf_action in PLAIN_ACTIONS and not item.ident and not item.working_tree_encoding:
        filt = NULL_FILTER
    else:
        filt = get_stream_filter(
            item.crlf_action, item.ident, item.working_tree_encoding, item.oid, state.eol
        )
    blob = state.ahead.get(item.oid)
    try:
        if blob is not None:
            pass  # read ahead (write_pc_items)
        elif filt is None:
            blob = state.odb.read_blob(item.oid)
        else:
            blob = state.odb.read_blob_or_stream(item.oid, STREAM_THRESHOLD)
    except MissingObject:
        state.error(f"cannot read object {item.oid.hex()} '{name.decode('utf-8', 'replace')}'")
        raise
    try:
        if filt is None:
            write_in_full(fd, convert_to_working_tree(item, blob, item.oid.hex().encode(), name, state.eol,
                                                      state.say))
        elif type(blob) is not BlobStream:
            write_in_full(fd, blob if filt is NULL_FILTER else apply_filter(filt, blob))
        else:
            try:
                for piece in blob:
                    write_in_full(fd, filt.feed(piece))
                write_in_full(fd, filt.finish())
            except MissingObject:
                state.error(f"cannot read object {item.oid.hex()} '{name.decode('utf-8', 'replace')}'")
                raise
    except OSError as e:
        state.error(f"unable to write file '{path.decode('utf-8', 'replace')}': {e.strerror}")
        raise


def _write_filtered(fd: int, item: PcItem, drv, name: bytes, path: bytes, state: CheckoutState) -> None:
    """An item through its ``filter.<driver>``: ``convert_to_working_tree_ca``
    in core, then the driver (:func:`filters.smudge_to_worktree`), written
    only once the filter's whole output is in hand. Raises SmudgeFailed
    (reported) for a required driver that failed."""
    try:
        blob = state.odb.read_blob(item.oid)
    except MissingObject:
        state.error(f"cannot read object {item.oid.hex()} '{name.decode('utf-8', 'replace')}'")
        raise
    try:
        data = smudge_to_worktree(state.filters, drv, item, blob, item.oid.hex().encode(), name, state.eol,
                                  state.error)
    except SmudgeFailed as e:
        state.error(str(e))
        raise
    try:
        write_in_full(fd, data)
    except OSError as e:
        state.error(f"unable to write file '{path.decode('utf-8', 'replace')}': {e.strerror}")
        raise
