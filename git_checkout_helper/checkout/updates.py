"""The coordinator: one checkout from plan to index, as git's ``check_updates``
(unpack-trees.c) and ``run_parallel_checkout`` (parallel-checkout.c) do it.

Order of work, and why:

1. take ``index.lock`` first, so a concurrent git fails before anything moves;
2. plan (:mod:`plan`): refuse, before touching the work tree, anything that
   would lose local changes or untracked files;
3. remove the files that leave, then their emptied directories;
4. in index order, make leading directories and clear what is in the way;
   write symlinks, gitlinks and filtered files here (git's coordinator does:
   a symlink written by a helper could race other helpers' leading
   directories) and queue regular files; a filtered file is queued too
   when its driver says ``filter.<driver>.parallel`` and the helpers are
   ours (``--filters``, see :mod:`filters`); a required filter that fails
   ends the checkout with 128, as git's ``die`` in convert.c;
5. write the queue with N helpers, or in process below the threshold, with
   the very same :func:`entry.write_pc_item`;
6. COLLIDED items are rewritten one by one afterwards (git does the same),
   FAILED or unanswered ones fail the checkout;
7. write the index (atomic rename), then move HEAD: a checkout that failed
   leaves the old index and HEAD, and a re-run can finish it.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable, Container, Iterable
from functools import partial
from itertools import chain, repeat

from ..attr import attributes_path, is_attributes_file
from ..attributes import AttrFile, AttributeStack, ConvAttrs, convert_attrs, read_convert_drivers
from ..autoworkers import AutoWorkers
from ..cleancheck import CheckinAttributes
from ..collisions import Collisions
from ..config import coordinator_threads_setting, eol_config
from ..convert import convert_blob_to_worktree, convert_to_working_tree, needs_conversion
from ..coresettings import core_settings
from ..filters import FilterRunner, SmudgeFailed, smudge_to_worktree
from ..index import S_IFGITLINK, S_IFLNK, Entry
from ..iopool import (
    UNSEEN,
    IoPool,
    io_pool,
    is_dir,
    look_ahead_dirs,
    remove_emptied_dirs,
    rmdir_ok,
)
from ..plan import Plan, worktree_matches
from ..progress import Progress
from ..refresh import any_racy, smudge_racily_clean
from ..repository import Repository
from ..tree import TreeFiles, value_mode
from ..verify_path import get_path_element_validator, invalid_paths
from ..wrapper import list_dir, show_path, write_in_full
from .options import CheckoutError, CheckoutOptions, CheckoutReport
from .parallel import STREAM_STEP, ParallelCheckout, _lstat_or_none, _Queue

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing at run time)
if TYPE_CHECKING:
    from typing import TextIO


class Checkout(ParallelCheckout):
    """One checkout in one repository."""

    def __init__(self, repo: Repository, opts: CheckoutOptions, err: TextIO, trace=None,
                 base_dir: bytes = b"") -> None:
        self.repo = repo
        self.opts = opts
        self.err = err
        self.trace = trace
        repo.fetch_warning = self._fetch_warning
        self.top = os.fsencode(repo.worktree) + b"/"
        # Where files are written: the work tree, or checkout-index's --prefix.
        self.out_top = self.top + base_dir if base_dir and not base_dir.startswith(b"/") else (base_dir or self.top)
        self.eol = eol_config(repo.config)
        self.core = core_settings(repo.config)  # core.symlinks, fileMode, checkStat, trustctime
        self.drivers = read_convert_drivers(repo.config)
        # Smudge filters run here (one process filter instance per command,
        # as git's subprocess_map); a failing optional one says so on stderr
        # without failing the checkout, as git's error() in convert.c.
        self.filters = FilterRunner(repo.worktree, say=lambda m: err.write(f"error: {m}\n"))
        # Drivers marked filter.<name>.parallel go to our own helpers
        # (--filters); with --helper-cmd (maybe git's worker, which has no
        # such extension) every filtered file stays here, as in git.
        self.helper_filters = not opts.helper_cmd and any(d.parallel for d in self.drivers.values())
        self.report = CheckoutReport()
        self.errors: list[str] = []
        self.algo = repo.odb.hash_algo
        self._attrs: AttributeStack | None = None
        self._attrs_trivial = True  # no attribute source anywhere: skip matching
        self._attr_cache: dict[int, tuple[dict, ConvAttrs]] = {}  # see conv_attrs
        self._no_attrs: ConvAttrs | None = None
        self._rooms: dict[ConvAttrs, tuple[int, bytes | None]] = {}  # see item_room
        self.progress: Progress | None = None
        self.pool = None  # helpers started ahead of the queue
        self._stream = None  # the helpers' run while items still stream to them (write_entries)
        # Directories this checkout created: nothing can stand in the way of
        # an entry in them until the queue runs (a collision is found then).
        self._fresh_dirs: set[bytes] = set()
        self._warned_clamp = False
        self._auto: AutoWorkers | None = None
        #: No index and nothing in the work tree but ``.git`` when the checkout
        #: began (a clone): set by :meth:`setup_attributes`; see ``choose_auto``.
        self.empty_start = False
        self._fsinfo = None  # fsinfo.FsInfo of out_top, probed once (auto)
        self._io: IoPool | None | bool = False  # see io(); False: not decided yet
        self.absent: Container[bytes] = ()  # Plan.absent of the plan carried out
        self._made_dirs: set[bytes] = set()
        # What _look_ahead found before the writing, taken once each by
        # _make_leading_dirs (an lstat of a leading directory) and by the
        # attributes (whether a directory has an untracked .gitattributes).
        self._dirs_ahead: dict[bytes, os.stat_result | None] = {}
        self._attr_files_ahead: dict[bytes, bool] = {}
        self._attr_worktree_only: Callable[[bytes], bool] | None = None  # see setup_attributes
        self.collisions = Collisions(self.core)  # paths found sharing one file (a clone's warning)
        self._dynamic: bool | None = None  # checkout.distribution, read once
        #: Submodules this checkout moves (--recurse-submodules): submodule.SubmoduleMoves.
        self.submodules = None
        #: Work that needs the plan but not the written files' stat data (the
        #: new index's order, its TREE extension): done while the helpers
        #: write the last items, instead of after them (see run_queue).
        self.meanwhile: Callable[[], None] | None = None
        self.index_order = None  # unpack.index_order's result, made as meanwhile

    # --- messages --------------------------------------------------------------

    def error(self, msg: str) -> None:
        self.errors.append(msg)
        self.err.write(f"error: {msg}\n")

    def warning(self, msg: str) -> None:
        if not self.opts.quiet:
            self.err.write(f"warning: {msg}\n")

    def _fetch_warning(self, msg: str) -> None:
        """A partial clone's lazy fetch warns even with ``-q``, as git's (a
        ``git fetch`` that ``-q`` does not quiet) does (:attr:`Repository.fetch_warning`)."""
        self.err.write(f"warning: {msg}\n")

    # --- attributes ------------------------------------------------------------

    def setup_attributes(self, tree: TreeFiles | None, index: dict[bytes, Entry],
                         worktree_first: bool = False, rewritten: frozenset[bytes] = frozenset()) -> None:
        """Attribute sources as git's attr.c reads them while writing files.

        A switch or ``-f`` (``tree``: the target; ``GIT_ATTR_CHECKOUT`` over
        the index being built): the target's ``.gitattributes``, else a work
        tree file the index does not track (a tracked one the target drops
        is removed before any file is written, so it does not count). Paths
        and ``--all`` (``worktree_first``; git sets no direction there, so
        ``GIT_ATTR_CHECKIN``): the work tree's file first, then ``index``,
        except in the directories of ``rewritten`` (``attr_dirs_rewritten``),
        whose tracked file git unlinks before it first reads them.
        In a cone-mode sparse checkout a ``.gitattributes`` outside the cone is
        read from the work tree only (``read_attr_from_index`` skips it).
        """
        name = attributes_path
        sparse = self.repo.sparse_checkout()
        outside = sparse.excludes if sparse is not None and sparse.recursive is not None else None

        def lookup(d: bytes):
            p = name(d)
            if outside is not None and outside(p):
                return None
            if tree is not None:
                return tree.attributes.get(p)
            e = index.get(p)
            return e.oid if e is not None else None

        def worktree_counts(d: bytes) -> bool:
            return tree is None or name(d) not in index

        def worktree_only(d: bytes) -> bool:
            """Whether only the work tree can say if ``d`` has a file: the
            source looked up first has none there, and the work tree counts."""
            return lookup(d) is None and worktree_counts(d)

        ahead = self._attr_files_ahead

        def has(d: bytes) -> bool:
            if lookup(d) is not None:
                return True
            if not worktree_counts(d):
                return False
            known = ahead.pop(d, None)  # (looked at together beforehand: _look_ahead)
            return known if known is not None else _is_file(self.top + name(d))

        self._attr_worktree_only = worktree_only

        def read_worktree(d: bytes) -> bytes | None:
            if not worktree_counts(d):
                return None
            try:
                fd = os.open(self.top + name(d), os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as f:
                    return AttrFile(f.read())  # read as a file, not a blob (attributes.AttrFile)
            except OSError:
                return None

        def read(d: bytes) -> bytes | None:
            if worktree_first and d not in rewritten:
                data = read_worktree(d)
                if data is not None:
                    return data
            oid = lookup(d)
            if oid is not None:
                try:
                    return self.repo.odb.read_blob(oid)
                except Exception:  # noqa: BLE001 - an unreadable attributes blob counts as absent
                    return None
            return None if worktree_first else read_worktree(d)

        from ..promisor import prefetch_attributes  # a partial clone's missing .gitattributes

        prefetch_attributes(self, tree, index)
        info = _read_file(os.path.join(self.repo.dirs.commondir, "info", "attributes"))
        global_file = None
        try:
            global_file = self.repo.config.get((b"core",), b"attributesfile")
        except KeyError:
            home = self.repo.environ.get("HOME")
            xdg = self.repo.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
            if xdg:
                global_file = os.path.join(xdg, "git", "attributes").encode()
        glob_data = None
        if global_file:
            path = os.path.expanduser(os.fsdecode(global_file))
            glob_data = _read_file(path)
        self._attr_files = (info, glob_data)
        self._attrs = AttributeStack(read, has, info, glob_data, None, self.core.ignore_case)
        self._checkin = self._checkin_attributes(index)
        # Each file is asked about twice only when a filter driver is
        # configured (helpers are counted before the writes; git-lfs installs
        # one system-wide): only then are the answers kept by path.
        self._path_attrs: dict[bytes, ConvAttrs] | None = {} if self.drivers else None
        # No source anywhere: nothing tracked or in the target, and a work
        # tree that holds nothing yet (a clone), so no untracked
        # .gitattributes in a subdirectory can count either.
        self.empty_start = not index and not any(n != b".git" for n in list_dir(self.top))
        self._attrs_trivial = self._attrs.empty and self.empty_start and (tree is None or not tree.attributes)

    def conv_attrs(self, path: bytes) -> ConvAttrs:
        stack = self._attrs
        if stack is None or self._attrs_trivial:
            ca = self._no_attrs
            if ca is None:
                ca = self._no_attrs = convert_attrs({}, self.eol, self.drivers)
            return ca
        by_path = self._path_attrs
        if by_path is not None:
            ca = by_path.get(path)
            if ca is not None:
                return ca
        attrs = stack.check(path)
        # The stack hands out one result dict per distinct outcome and keeps
        # it (attributes._DirIndex), so its identity is the key; the dict is
        # held beside the result so that the identity stays its own.
        got = self._attr_cache.get(id(attrs))
        if got is None:
            got = self._attr_cache[id(attrs)] = (attrs, convert_attrs(attrs, self.eol, self.drivers))
        ca = got[1]
        if by_path is not None:
            by_path[path] = ca
        return ca

    def uptodate(self, e: Entry, st: os.stat_result, timestamp_ns: int) -> bool:
        """``ie_match_stat`` found nothing changed: stat data, type, x bit, and
        for a racily clean entry its content (``checkout_entry`` skips it)."""
        return worktree_matches(e, self.top + e.name, st, self.repo.hash_name, self.to_worktree, timestamp_ns,
                                self.core, self.to_git, stat_only=True)

    def smudge_racily_clean(self, entries: list[Entry], timestamp_ns: int) -> None:
        """Before the index is written (refresh.py's ``smudge_racily_clean``):
        the content is judged with the check-in attributes of the work tree
        as this checkout left it, then of the index being written."""
        if not any_racy(entries, timestamp_ns):
            return
        checkin = self._checkin_attributes({e.name: e for e in entries})
        smudge_racily_clean(entries, self.top, self.repo.hash_name, self.to_worktree, timestamp_ns, checkin.to_git,
                            self.core)

    def _checkin_attributes(self, index: dict[bytes, Entry]) -> CheckinAttributes:
        """Check-in attributes over the work tree, then ``index`` (cleancheck.py); git's
        messages for a file it cannot read back go to stderr."""
        info, glob_data = getattr(self, "_attr_files", (None, None))
        return CheckinAttributes(self.top, index, self.repo.odb.read_blob, info, glob_data, self.eol, self.drivers,
                                 lambda line: self.err.write(line + "\n"), self.core.ignore_case)

    def to_git(self, e: Entry, data: bytes) -> bytes | None:
        """``data``, the file of ``e``, as the index would store it (cleancheck.py), or None."""
        checkin = getattr(self, "_checkin", None)
        return checkin.to_git(e, data) if checkin is not None else None

    def to_worktree(self, e: Entry) -> bytes | None:
        """The bytes checkout would write for ``e`` (for modification checks)."""
        if e.mode & 0o170000 != 0o100000:
            return None
        ca = self.conv_attrs(e.name)
        if not needs_conversion(ca.crlf_action, ca.ident, ca.working_tree_encoding, self.eol) and ca.drv is None:
            return None
        try:
            data = self.repo.odb.read_blob(e.oid)
        except Exception:  # noqa: BLE001
            return None
        if ca.drv is None:  # what write_pc_item writes: stream filters or in core, as git
            return convert_blob_to_worktree(ca, data, e.oid, e.name, self.eol)
        return convert_to_working_tree(ca, data, e.oid.hex().encode(), e.name, self.eol)

    # --- the work tree ---------------------------------------------------------

    def io(self) -> IoPool | None:
        """The pool for this checkout's own lstats and unlinks (:mod:`iopool`;
        ``checkout.coordinatorThreads``, else from the filesystem), decided
        on the first question. None on a work tree that may not be
        case-sensitive (:meth:`case_sensitive`): there two paths may name
        one file, and the order of their requests could matter."""
        if self._io is False:
            from ..fsinfo import mount_kind

            setting = coordinator_threads_setting(self.repo.config)
            self._io = io_pool(setting, lambda: mount_kind(self.written_into()),
                               self.opts.online_cpus) if self.case_sensitive() else None
            self.report.coordinator_threads = self._io.threads if self._io is not None else 0
        return self._io

    def remove_files(self, paths: list[bytes]) -> None:
        """``unlink_entry``: delete files that leave, then their empty directories."""
        dirs: set[bytes] = set()
        real_dirs: set[bytes] = set()
        top = self.out_top
        # check_leading_path: never remove through a symlink or a file that
        # took a leading directory's place. (No path is a leading directory
        # of another: their unlinks may be sent together, :mod:`iopool`.)
        io = self.io()
        ahead: dict[bytes, object] = {}
        if io is not None:
            look_ahead_dirs(paths, real_dirs, set(), top, io, ahead)
        reals = [self._dirs_only(path, real_dirs, ahead) for path in paths]
        fulls = [top + path for path, real in zip(paths, reals, strict=True) if real]
        lefts = iter(io.map(_unlink_unlooked, fulls) if io is not None else map(_unlink_unlooked, fulls))
        for path, real in zip(paths, reals, strict=True):
            left = next(lefts) if real else None
            if left is not None and stat_mod.S_ISDIR(left[0].st_mode):
                # A submodule that leaves: git removes it only if empty,
                # and says so otherwise (remove_or_warn).
                try:
                    os.rmdir(top + path)
                except OSError as ex:
                    self.err.write(f"warning: unable to rmdir '{path.decode('utf-8', 'replace')}': {ex.strerror}\n")
            elif left is not None:  # e.g. a read-only directory: named, and the checkout fails
                self.error(f"unable to unlink '{show_path(path)}': {left[1].strerror}")
            self.report.removed += 1
            if self.progress:
                self.progress.add()
            slash = path.rfind(b"/")
            if slash != -1 and real:  # (an rmdir through a symlink would reach outside)
                dirs.add(path[:slash])
        if io is not None:
            remove_emptied_dirs(dirs, top, io)
            return
        for d in sorted(dirs, key=len, reverse=True):
            while d:
                if not rmdir_ok(top + d):
                    break
                slash = d.rfind(b"/")
                d = d[:slash] if slash != -1 else b""

    def _dirs_only(self, path: bytes, known: set[bytes], ahead: dict[bytes, object] | None = None) -> bool:
        """Whether every leading component of ``path`` is a real directory
        (``ahead``: :func:`iopool.look_ahead_dirs`'s answers)."""
        i = path.find(b"/")
        while i != -1:
            d = path[:i]
            if d not in known:
                st = ahead.get(d, UNSEEN) if ahead else UNSEEN
                if st is UNSEEN:
                    st = _lstat_or_none(self.out_top + d)
                if st is None or not stat_mod.S_ISDIR(st.st_mode):
                    return False
                known.add(d)
            i = path.find(b"/", i + 1)
        return True

    def prepare_path(self, path: bytes, keep_dir: bool = False) -> None:
        """``create_directories`` and the removal of what is in the way.

        Planning has already refused anything that would lose data, so a
        file where a directory must be, or a directory (or file) where the
        entry goes, belongs to the old checkout and is removed. A directory
        where a gitlink goes is a submodule's work tree: ``keep_dir`` leaves
        it alone, as ``checkout_entry`` does.
        """
        if self._make_leading_dirs(path):
            self._clear(path, _unlink_unlooked(self.out_top + path), keep_dir)

    def _make_leading_dirs(self, path: bytes) -> bool:
        """``create_directories`` for ``path`` (files in the way removed);
        whether something may stand at ``path`` itself (False: its
        directory was made by this checkout a moment ago)."""
        top = self.out_top
        slash = path.rfind(b"/")
        if slash != -1:
            d = path[:slash]
            if d not in self._made_dirs:
                i = 0
                while True:
                    i = path.find(b"/", i + 1)
                    if i == -1 or i > slash:
                        break
                    part = path[:i]
                    if part in self._made_dirs:
                        continue
                    full = top + part
                    st = self._dirs_ahead.pop(part, UNSEEN)
                    if st is UNSEEN:
                        try:
                            st = os.lstat(full)
                        except FileNotFoundError:
                            st = None
                    if st is not None and not stat_mod.S_ISDIR(st.st_mode):
                        os.unlink(full)  # a file or symlink in the way
                        st = None
                    if st is None:
                        os.mkdir(full)
                        self._fresh_dirs.add(part)
                    self._made_dirs.add(part)
            if d in self._fresh_dirs:
                return False  # made by this checkout a moment ago: nothing of the user's is in it
        return True

    def _clear(self, path: bytes, left: tuple[os.stat_result, OSError] | None, keep_dir: bool) -> None:
        """The rest of the removal of what stood at ``path`` after
        :func:`_unlink_unlooked` (``left``: what it left there, and why)."""
        if left is None:
            return
        st, why = left
        if not stat_mod.S_ISDIR(st.st_mode):
            raise why
        if keep_dir:
            return
        import shutil  # (a directory in a file's way is rare: shutil is 5 ms of start-up)

        shutil.rmtree(self.out_top + path)

    def _cleared(self, entries: Iterable[Entry]) -> Iterable[tuple[Entry, Callable[[], None] | None]]:
        """``(entry, prepare)`` for each of ``entries`` in order: ``prepare()``
        does :meth:`prepare_path` for it (raising its OSError); None: call it.

        With an I/O pool (:mod:`iopool`: a latency-bound work tree) the
        leading directories are still made here in order, but each entry's
        unlink is sent a few entries ahead of its turn, and ``prepare()``
        acts on its answer; a path the plan found nothing at
        (``Plan.absent``) is not asked again. Sending ahead must not change
        what the checkout does or leaves:

        * the pool is only for a case-sensitive work tree: no two entries'
          paths name one file, so one's unlink cannot undo another's write;
        * a ``.gitattributes`` is still removed at its turn: the entries
          before it read their attributes from it (git unlinks it first
          when it comes to it, and the entries after it then read the
          index's);
        * nothing is sent ahead when a filter driver is configured: a
          required one failing ends the checkout at that entry (git's die),
          with the files after it untouched.
        """
        io = self.io()
        if io is None or self.drivers:
            return zip(entries, repeat(None))
        entries = list(entries)
        self._look_ahead(entries, io)
        top, absent = self.out_top, self.absent

        def ahead(e: Entry):
            if self._make_leading_dirs(e.name) and e.name not in absent and not is_attributes_file(e.name):
                return partial(_unlink_unlooked, top + e.name)
            return None

        return ((e, partial(self._clear_at_turn if is_attributes_file(e.name) else self._clear_when,
                            e.name, left, e.mode == S_IFGITLINK))
                for e, left in io.pipeline(entries, ahead))

    def _look_ahead(self, entries: list[Entry], io: IoPool) -> None:
        """The lookups the writing of ``entries`` makes one directory at a
        time, made together first (:mod:`iopool`; what git lacks): the
        ``lstat`` of each leading directory (:meth:`_make_leading_dirs`,
        see :func:`iopool.look_ahead_dirs` for which answers are kept) and
        whether each directory holds an untracked ``.gitattributes`` (the
        attributes' ``has``). On a latency-bound work tree each is a round
        trip, and in a switch of the 5,000-file sample they were two fifths
        of the coordinator's time while it wrote. The checkout writes no
        ``.gitattributes`` that only the work tree knows; one below a
        directory it replaces or makes is not there when asked.
        """
        got, top = self._dirs_ahead, self.out_top
        answered = look_ahead_dirs([e.name for e in entries], self._made_dirs, self._fresh_dirs, top, io, got)
        worktree_only = self._attr_worktree_only
        if worktree_only is None or self._attrs_trivial or self.top != self.out_top:
            return
        known = self._attr_files_ahead
        dirs = []
        for d in answered:  # (not again those of an earlier call: a switch's symlinks come first)
            if worktree_only(d):
                if is_dir(got[d]):
                    dirs.append(d)
                else:
                    known[d] = False  # new and empty when its attributes are asked
        name = attributes_path
        known.update(zip(dirs, io.map(os.path.isfile, [top + name(d) for d in dirs]), strict=True))

    def _clear_when(self, path: bytes, left: Callable, keep_dir: bool) -> None:
        self._clear(path, left(), keep_dir)

    def _clear_at_turn(self, path: bytes, left: Callable, keep_dir: bool) -> None:
        left()  # (its leading directories' errors)
        self._clear(path, _unlink_unlooked(self.out_top + path), keep_dir)

    def write_special(self, e: Entry, ca: ConvAttrs | None) -> os.stat_result | None:
        """What the coordinator writes itself: symlinks, gitlinks, filtered files."""
        full = self.out_top + e.name
        try:
            if e.mode == S_IFLNK and self.core.symlinks:
                os.symlink(self.repo.odb.read_blob(e.oid), full)
            elif e.mode == S_IFLNK:
                # core.symlinks=false: write_entry's write_file_entry, the
                # target as the file's content, unconverted, mode 0666.
                data = self.repo.odb.read_blob(e.oid)
                fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                try:
                    write_in_full(fd, data)
                finally:
                    os.close(fd)
            elif e.mode == S_IFGITLINK:
                # An empty directory, as git leaves an unpopulated submodule;
                # a submodule's existing directory stays as it is.
                try:
                    os.mkdir(full)
                except FileExistsError:
                    pass
            else:
                data = self.repo.odb.read_blob(e.oid)
                try:
                    data = smudge_to_worktree(self.filters, ca.drv, ca, data, e.oid.hex().encode(), e.name,
                                              self.eol, self.error)
                except SmudgeFailed as ex:  # convert.c dies: so does the checkout
                    raise CheckoutError(f"fatal: {ex}", 128) from None
                fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                             0o777 if e.mode & 0o100 else 0o666)
                try:
                    write_in_full(fd, data)
                except OSError:
                    os.close(fd)
                    os.unlink(full)
                    raise
                os.close(fd)
            return os.lstat(full)
        except OSError as ex:
            self.error(f"unable to create file '{e.name.decode('utf-8', 'replace')}': {ex.strerror}")
        except CheckoutError:
            raise
        except Exception as ex:  # noqa: BLE001 - e.g. a missing object
            self.error(f"unable to read object {e.oid.hex()} '{e.name.decode('utf-8', 'replace')}': {ex}")
        return None

    # --- writing ---------------------------------------------------------------

    def write_entries(self, entries: list[Entry]) -> None:
        """Steps 4-6: write ``entries`` (index order), filling their stat data.

        When :meth:`streams` allows it, the entries written here come first
        (as in git, which writes them while it queues the others), then the
        regular files' items go to the helpers as they are made, so that the
        helpers write while this process still removes, makes directories
        and reads attributes for the rest."""
        queue = _Queue(self.algo, self._rooms)
        stream = None
        if self.streams():
            # (The regular files are taken in a second pass, not listed: a
            # list of 100,000 entries is 0.8 MiB of the coordinator's peak.)
            special = [e for e in entries if e.mode & 0o170000 != 0o100000]
            for e, prepare in self._cleared(special):
                self._queue_or_write(e, prepare, queue)
            if len(special) < len(entries):
                stream = self._start_stream(queue, len(entries) - len(special))
            regular = (e for e in entries if e.mode & 0o170000 == 0o100000)
            for k, (e, prepare) in enumerate(self._cleared(regular), 1):
                self._queue_or_write(e, prepare, queue)
                if not k % STREAM_STEP:
                    stream.pump()
        else:
            for e, prepare in self._cleared(entries):
                self._queue_or_write(e, prepare, queue)
        if self.submodules is not None:
            self.submodules.start()  # their directories exist now
        # What the entries written here (symlinks, filtered files) mapped of
        # the pack and its index is let go before the helpers' results come
        # in: 4 MiB of a 100,000-file clone's peak, for 24 symlinks.
        self.repo.odb.release_pages(finished=True)
        if len(queue) or stream is not None:
            self.run_queue(queue, stream)

    def _queue_or_write(self, e: Entry, prepare: Callable[[], None] | None, queue: _Queue) -> None:
        """``checkout_entry``: the path made ready (``prepare``, from
        :meth:`_cleared`), then the entry queued for the helpers, or written
        here."""
        try:
            if prepare is None:
                self.prepare_path(e.name, keep_dir=e.mode == S_IFGITLINK)
            else:
                prepare()
        except OSError as ex:
            self.error(f"unable to prepare '{e.name.decode('utf-8', 'replace')}': {ex.strerror}")
            return
        ca = self.conv_attrs(e.name) if e.mode & 0o170000 == 0o100000 else None
        if ca is not None:
            if len(e.name) <= self.item_room(ca)[0]:
                queue.append(e, ca)
                return
        st = self.write_special(e, ca)
        if st is not None:
            e.fill_stat(st)
            self.report.written += 1
            self.report.sequential_items += 1
        if self.progress:
            self.progress.add()

def _unlink_unlooked(full: bytes) -> tuple[os.stat_result, OSError] | None:
    """Remove the file at ``full`` without an lstat first (git's
    checkout_entry and unlink_entry look before they remove): one system
    call, not two, for each file a checkout replaces or deletes. Only when
    the unlink fails does it look: None when nothing is there (whatever the
    error said: a read-only file system says EROFS first), else what is there
    (a directory: EISDIR, or EPERM on macOS) and why the unlink failed."""
    try:
        os.unlink(full)
        return None
    except FileNotFoundError:
        return None
    except OSError as e:
        st = _lstat_or_none(full)
        return None if st is None else (st, e)


def _is_file(path: bytes) -> bool:
    """``os.path.isfile``, asked with ``access`` first: most directories
    have no ``.gitattributes``, and a missing file costs ``access`` no
    exception (a third of isfile's 3 us on tmpfs, for each directory a
    checkout writes into)."""
    return os.access(path, os.F_OK) and os.path.isfile(path)


def _read_file(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _refuse_invalid_paths(co: Checkout, paths: Iterable[bytes], mode_of: Callable[[bytes], int], code: int = 1) -> None:
    """``verify_path`` for every path a checkout touches, before any is
    touched: a tree or index naming ``../x`` or ``.git/x`` is refused whole,
    as git does (the helpers check again what they are sent)."""
    _refuse(_invalid_paths(co, paths, mode_of), [], code)


def _invalid_paths(co: Checkout, paths: Iterable[bytes], mode_of: Callable[[bytes], int]) -> list[bytes]:
    return invalid_paths(paths, get_path_element_validator(co.repo.config), mode_of)


def hostile_paths(co: Checkout, target: TreeFiles) -> tuple[list[bytes], list[bytes]]:
    """What :func:`_refuse_hostile_tree` refuses in ``target``: its invalid
    paths, and the names that are both a file and a directory (a tree git
    fsck rejects: a symlink ``d`` and a file ``d/f`` would have the symlink
    followed, or the index hold both). Both empty for a sound tree."""
    files = target.files
    return _invalid_paths(co, files, lambda p: value_mode(files[p])), sorted(files.keys() & target.trees.keys())


def _refuse_hostile_tree(co: Checkout, target: TreeFiles, code: int,
                         found: tuple[list[bytes], list[bytes]] | None = None) -> None:
    """Refuse ``target`` when :func:`hostile_paths` (or ``found``, what it
    said already in a :mod:`treeahead` child) finds anything. ``code``: git
    exits 1 for a refused switch, 128 for a refused ``-f`` or clone
    (reset_tree)."""
    _refuse(*(found if found is not None else hostile_paths(co, target)), code)


def _refuse(bad: list[bytes], both: list[bytes], code: int) -> None:
    if bad:
        raise CheckoutError("\n".join(f"error: invalid path '{show_path(p)}'" for p in bad), code)
    if both:
        raise CheckoutError("\n".join(f"error: invalid tree: '{show_path(p)}' is both a file and a directory"
                                      for p in both), code)


def _execute(co: Checkout, plan: Plan, opts: CheckoutOptions, err: TextIO,
             checked: Container[bytes] = (), then: Callable[[], None] | None = None) -> None:
    """Carry out ``plan``; ``checked``: paths :func:`_refuse_hostile_tree`
    has already proven valid with the same modes (the target tree's), not
    checked again (0.9 s a million paths); ``then``: called once the paths
    are checked (what only that needed may go)."""
    modes: dict[bytes, int] = {}

    def mode_of(path: bytes) -> int:  # asked for the few suspect paths only
        if not modes:
            modes.update((e.name, e.mode) for e in plan.write)
        return modes.get(path, 0)

    _refuse_invalid_paths(co, chain((e.name for e in plan.write if e.name not in checked), plan.remove), mode_of)
    checked = ()
    if then is not None:
        then()
    total = len(plan.write) + len(plan.remove)
    # builtin/checkout.c: an explicit --progress shows it even with -q;
    # otherwise -q hides it and a terminal shows it.
    show = opts.progress if opts.progress is not None else (not opts.quiet and err.isatty())
    from ..promisor import prefetch_plan  # a partial clone: what is missing, fetched before any change

    prefetch_plan(co, plan.write, err if show else None)
    co.absent = plan.absent
    if show and total:
        co.progress = Progress("Updating files", total, err, delay=opts.progress_delay, columns=opts.columns)
    try:
        # As many helpers as git would start: files with a filter driver
        # are not theirs (only looked up when some driver is configured),
        # unless the driver is marked parallel and the helpers are ours.
        co.start_helpers(sum(1 for e in plan.write if e.mode & 0o170000 == 0o100000
                             and (not co.drivers or co.eligible(co.conv_attrs(e.name), e.name))))
        if co.submodules is not None:
            co.submodules.remove()
        co.remove_files(plan.remove)
        co.write_entries(plan.write)
        if co.submodules is not None:
            co.submodules.update()
    except BaseException:
        co.filters.close(terminate=True)  # interrupted: a filter may be stuck
        raise
    finally:
        if co.submodules is not None:
            co.submodules.finish()
        co.close_helpers()
        co.filters.close()  # process filters: end of input, then reaped (idempotent)
    if co.progress:
        co.progress.stop()
